#!/usr/bin/env python3
"""stall_excuse.py [--except-type SUBSTR] REPORT STALLS SITE…: the findings of REPORT at the
healthy sites SITE (location suffixes, "file:line:col"; "" for every finding), each judged against
the machine stalls that stallmon (tests/fixtures/trace/stallmon.c) recorded in STALLS during the
capture. --except-type leaves out findings whose type name holds SUBSTR (a planted pathology, in
captures without spawn locations).

A healthy site's finding is excused only when it is a single long poll (occurrences 1) that a
recorded stall explains (a starvation episode is judged by its polls at healthy sites, each as
such a long poll; one with none there is not a healthy site's): the stall overlaps the poll's wall time on one CPU by so much that the
poll, less that overlap, stays under the long_poll threshold. A stall is a stretch in which a
SCHED_FIFO thread pinned to that CPU could not run, so nothing of the traced program ran there
either; the tracer, which reads the hypervisor's steal clock but cannot see host work it does
not count or the guest kernel keeping a CPU, takes such time as the poll's own.

Prints one line per finding at a healthy site ("excused: …" or "NOT EXCUSED: …") and, last, "ok"
when every one is excused, else "unexcused N". Exit 0 either way; 2 on bad input.

stall_excuse.py --sleeps [--type] REPORT STALLS SITE: the long polls at SITE (a location suffix;
with --type, a substring of the type name) that are planted sleeps — the poll does nothing but
sleep in clock_nanosleep. One that is not plainly that sleep (the why split blocked in
clock_nanosleep or nanosleep for at least 95 % of its time not preempted) is excused when a
recorded stall on one CPU overlaps its wall time by at least its on-CPU time less 5 % of its
time not preempted and 1 ms (stallmon's period; a stall there must be), and its longest block,
if any, is the sleep: a vCPU the host did not run looks on CPU to the
guest, and one stalled past the sleep's deadline wakes with the timer already fired, so the
thread never sleeps at all. One the report itself doubts (why.split_doubtful: on CPU for 10
profile periods or more without one sample, a sleep whose record the BPF side did not send) is
excused as well. Prints one line per such poll ("excused: …" or "NOT EXCUSED: …") and,
last, the JSON list of the excused polls' first_at_ns."""
import json
import sys


SLEEP_CALLS = ("clock_nanosleep", "nanosleep")


def plain_sleep(w):
    """The why split of a poll that slept for (nearly) all its time not preempted."""
    bi = w.get("blocked_in") or {}
    on, blk = w.get("on_cpu_ns") or 0, w.get("blocked_ns") or 0
    return bi.get("syscall") in SLEEP_CALLS and blk * 100 >= 95 * (on + blk)


def sleeps(args):
    by_type = False
    if args and args[0] == "--type":
        by_type, args = True, args[1:]
    if len(args) != 3:
        print("usage: stall_excuse.py --sleeps [--type] REPORT STALLS SITE", file=sys.stderr)
        return 2
    try:
        rep = json.load(open(args[0]))
        stalls = read_stalls(open(args[1]).read().splitlines())
    except (OSError, ValueError, KeyError) as e:
        print(f"stall_excuse.py: {e}", file=sys.stderr)
        return 2
    site, start = args[2], rep["capture"].get("monotonic_start_ns")
    excused = []
    for x in rep["findings"]:
        at = (x.get("type_name") or "") if by_type else (x.get("location") or "")
        if x["kind"] != "long_poll" or not (site in at if by_type else at.endswith(site)):
            continue
        w = x.get("why") or {}
        if plain_sleep(w):
            continue
        on, blk = w.get("on_cpu_ns") or 0, w.get("blocked_ns") or 0
        what = (f"long poll at {at} at {x['first_at_ns'] / 1e6:.1f} ms: {x['value_ns'] / 1e6:.2f} ms"
                f" (+{(x.get('preempted_ns') or 0) / 1e6:.2f} ms preempted), on CPU {on / 1e6:.2f} ms,"
                f" blocked {blk / 1e6:.2f} ms in {(w.get('blocked_in') or {}).get('syscall')}")
        if w.get("split_doubtful") is True:
            print(f"excused: {what}: the report doubts its split (why.split_doubtful)")
            excused.append(x["first_at_ns"])
            continue
        if start is None or not w:
            print(f"NOT EXCUSED: {what}: " + ("no capture.monotonic_start_ns" if start is None else "no why split"))
            continue
        sc = (w.get("blocked_in") or {}).get("syscall")
        if sc is not None and sc not in SLEEP_CALLS:
            print(f"NOT EXCUSED: {what}: a stall does not make a sleep block in {sc}")
            continue
        p0 = start + x["first_at_ns"]
        ov = overlap_one_cpu(stalls, p0, p0 + x["value_ns"] + (x.get("preempted_ns") or 0))
        if ov > 0 and on - ov <= (on + blk) * 5 // 100 + 1000000:
            print(f"excused: {what}: stalls overlapping it on one CPU {ov / 1e6:.2f} ms")
            excused.append(x["first_at_ns"])
        else:
            print(f"NOT EXCUSED: {what}: stalls overlapping it on one CPU only {ov / 1e6:.2f} ms")
    print(json.dumps(excused))
    return 0


def read_stalls(lines):
    """(cpu, from, to) of stallmon's lines, CLOCK_MONOTONIC ns."""
    out = []
    for ln in lines:
        if ln.startswith("stall "):
            f = dict(kv.split("=", 1) for kv in ln.split()[1:])
            out.append((int(f["cpu"]), int(f["from"]), int(f["to"])))
    return out


def overlap_one_cpu(stalls, p0, p1):
    """The most of [p0, p1] that stalls on one CPU cover."""
    by_cpu = {}
    for cpu, a, b in stalls:
        ov = min(b, p1) - max(a, p0)
        if ov > 0:
            by_cpu[cpu] = by_cpu.get(cpu, 0) + ov
    return max(by_cpu.values(), default=0)


def main():
    args = sys.argv[1:]
    if args and args[0] == "--sleeps":
        return sleeps(args[1:])
    skip_type = None
    if len(args) >= 2 and args[0] == "--except-type":
        skip_type, args = args[1], args[2:]
    if len(args) < 3:
        print("usage: stall_excuse.py [--except-type SUBSTR] REPORT STALLS SITE…", file=sys.stderr)
        return 2
    try:
        rep = json.load(open(args[0]))
        lines = open(args[1]).read().splitlines()
    except (OSError, ValueError) as e:
        print(f"stall_excuse.py: {e}", file=sys.stderr)
        return 2
    sites = args[2:]
    start = rep["capture"].get("monotonic_start_ns")
    stalls = read_stalls(lines)
    def stall_overlap(p0, p1):
        return overlap_one_cpu(stalls, p0, p1)

    unexcused = 0
    for x in rep["findings"]:
        loc = x.get("location") or ""
        if x["kind"] == "starvation":
            # judged by its holders: one at a healthy site is excused as a lone long poll is
            held = [h for h in x.get("held_by") or []
                    if any((h.get("location") or "").endswith(s) for s in sites)
                    and not (skip_type is not None and skip_type in (h.get("type_name") or ""))]
            if not held:
                continue
            what = f"starvation at {loc or x.get('type_name')} ({len(held)} of its polls at healthy sites)"
            bad = []
            for h in held:
                if start is None:
                    bad.append("the report has no capture.monotonic_start_ns")
                    continue
                p0 = start + h["poll_began_at_ns"]
                ov = stall_overlap(p0, p0 + h["poll_ns"])
                left = h["poll_ns"] - ov
                d = (f"task {h['task_id']} at {h.get('location')}: poll {h['poll_ns'] / 1e6:.2f} ms,"
                     f" stalls overlapping it on one CPU {ov / 1e6:.2f} ms")
                if left >= x["threshold_ns"]:
                    bad.append(f"{d}: still {left / 1e6:.2f} ms without it")
            if not bad:
                print(f"excused: {what}: each such poll is under the threshold without a recorded stall")
                continue
            unexcused += 1
            print(f"NOT EXCUSED: {what}: {'; '.join(bad)}")
            continue
        if not any(loc.endswith(s) for s in sites):
            continue
        if skip_type is not None and skip_type in (x.get("type_name") or ""):
            continue
        what = f"{x['kind']} at {loc or x.get('type_name')} task {x['task_id']}"
        why = None
        if x["kind"] != "long_poll":
            why = "not a long poll"
        elif x.get("occurrences") != 1:
            why = f"{x.get('occurrences')} long polls, not one"
        elif start is None:
            why = "the report has no capture.monotonic_start_ns"
        if why is None:
            p0 = start + x["first_at_ns"]
            ov = stall_overlap(p0, p0 + x["value_ns"] + (x.get("preempted_ns") or 0))
            left = x["value_ns"] - ov
            detail = (f"poll {x['value_ns'] / 1e6:.2f} ms (+{(x.get('preempted_ns') or 0) / 1e6:.2f} ms preempted)"
                      f" at {x['first_at_ns'] / 1e6:.1f} ms; stalls overlapping it on one CPU: {ov / 1e6:.2f} ms;"
                      f" split: {(x.get('why') or {}).get('summary')}")
            if left < x["threshold_ns"]:
                print(f"excused: {what}: {detail}: {left / 1e6:.2f} ms without the stall, under the threshold")
                continue
            why = f"{detail}: still {left / 1e6:.2f} ms without it"
        unexcused += 1
        print(f"NOT EXCUSED: {what}: {why}")
    print("ok" if not unexcused else f"unexcused {unexcused}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
