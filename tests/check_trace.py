#!/usr/bin/env python3
"""check_trace.py TRACE.json — is this a valid Chrome trace-event file as --trace writes it?

Checks (each failure is one line on stdout, exit 1; on success prints one JSON summary line):
  - JSON object format: {"traceEvents": [...], ...}; every event has ph, ts, pid, tid
    (numbers; ts >= 0); "X" slices have a numeric dur >= 0;
  - every flow start ("s") has exactly one end ("f") with the same id, and the other way round;
    a flow's start lies inside a "wake" or an "io_uring" slice of its thread and its end inside
    a "poll" slice of its thread (bp "e": bound to the enclosing slice), both of the same task
    (an io_uring request's args.task); start and end have the same name and cat (Perfetto
    pairs them by id, cat and name);
  - slices of one thread nest: none begins inside another and ends after it;
  - every thread with events has a thread_name, every process a process_name.
"""
import bisect
import json
import sys
from collections import defaultdict

EPS = 1e-6  # µs; ts values are ns/1000 written exactly


def main():
    errors = []
    try:
        doc = json.load(open(sys.argv[1]))
    except (OSError, ValueError) as e:
        print(f"not JSON: {e}")
        return 1
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        print("not the JSON object format: no traceEvents array")
        return 1
    evs = doc["traceEvents"]
    slices = defaultdict(list)  # (pid, tid) -> [(ts, end, ev)]
    starts, ends = {}, {}
    tnames, pnames, threads = set(), set(), set()
    thread_names = []
    counts = defaultdict(int)
    for i, e in enumerate(evs):
        for k in ("ph", "ts", "pid", "tid"):
            if k not in e:
                errors.append(f"event {i} has no {k}: {json.dumps(e)[:200]}")
        if errors and len(errors) > 20:
            break
        ph = e.get("ph")
        counts[ph] += 1
        if not isinstance(e.get("ts"), (int, float)) or e["ts"] < 0:
            errors.append(f"event {i}: bad ts {e.get('ts')!r}")
        key = (e.get("pid"), e.get("tid"))
        if ph == "M":
            if e.get("name") == "thread_name":
                tnames.add(key)
                thread_names.append(e.get("args", {}).get("name", ""))
            elif e.get("name") == "process_name":
                pnames.add(e.get("pid"))
            continue
        threads.add(key)
        if ph == "X":
            if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
                errors.append(f"event {i}: slice without a valid dur: {json.dumps(e)[:200]}")
                continue
            slices[key].append((e["ts"], e["ts"] + e["dur"], e))
        elif ph == "s":
            if e.get("id") in starts:
                errors.append(f"flow id {e.get('id')} started twice")
            starts[e.get("id")] = e
        elif ph == "f":
            if e.get("id") in ends:
                errors.append(f"flow id {e.get('id')} ended twice")
            if e.get("bp") != "e":
                errors.append(f"flow end {e.get('id')} not bound to its enclosing slice (bp)")
            ends[e.get("id")] = e
    for fid in starts.keys() - ends.keys():
        errors.append(f"flow {fid} starts but never ends")
    for fid in ends.keys() - starts.keys():
        errors.append(f"flow {fid} ends but never starts")

    for key, v in slices.items():
        v.sort(key=lambda x: (x[0], -x[1]))
        stack = []
        for b, e, ev in v:
            while stack and stack[-1][1] <= b + EPS:
                stack.pop()
            if stack and e > stack[-1][1] + EPS:
                errors.append(f"thread {key}: slice {ev.get('name')!r} at {b} ends at {e}, after "
                              f"the slice it begins in ({stack[-1][2].get('name')!r}, ends {stack[-1][1]})")
                if len(errors) > 40:
                    break
            stack.append((b, e, ev))

    begins = {k: [x[0] for x in v] for k, v in slices.items()}

    def enclosing(key, ts, cat):
        """the slice of category cat on thread key that contains ts (slices nest, so the
        candidates are the few last ones beginning at or before ts)"""
        v = slices.get(key, [])
        i = bisect.bisect_right(begins.get(key, []), ts + EPS)
        for j in range(i - 1, max(-1, i - 64), -1):
            b, e, ev = v[j]
            if b - EPS <= ts <= e + EPS and ev.get("cat") == cat:
                return ev
        return None

    bad_bind = 0
    flows_from = defaultdict(int)  # cat of the slice a flow starts in -> flows
    for fid in starts.keys() & ends.keys():
        s, f = starts[fid], ends[fid]
        if (s.get("name"), s.get("cat")) != (f.get("name"), f.get("cat")):
            errors.append(f"flow {fid}: start {s.get('name')!r}/{s.get('cat')!r}, end {f.get('name')!r}/{f.get('cat')!r}")
        w = (enclosing((s["pid"], s["tid"]), s["ts"], "wake")
             or enclosing((s["pid"], s["tid"]), s["ts"], "io_uring"))
        p = enclosing((f["pid"], f["tid"]), f["ts"], "poll")
        if not w or not p:
            bad_bind += 1
            if bad_bind <= 5:
                errors.append(f"flow {fid}: start not inside a wake or io_uring slice or end not inside a poll slice")
        elif w["args"]["task"] != p["args"]["task"]:
            errors.append(f"flow {fid}: {w['cat']} of task {w['args']['task']} → poll of task {p['args']['task']}")
        else:
            flows_from[w["cat"]] += 1
    for key in threads - tnames:
        errors.append(f"thread {key} has events but no thread_name")
    for pid in {k[0] for k in threads} - pnames:
        errors.append(f"process {pid} has events but no process_name")

    for e in errors[:40]:
        print(e)
    if errors:
        return 1
    polls = sum(1 for v in slices.values() for x in v if x[2].get("cat") == "poll")
    wakes = sum(1 for v in slices.values() for x in v if x[2].get("cat") == "wake")
    parks = sum(1 for v in slices.values() for x in v if x[2].get("cat") == "park")
    uring = [x[2] for v in slices.values() for x in v if x[2].get("cat") == "io_uring"]
    uring_in_flight = sum(1 for e in uring if e.get("args", {}).get("in_flight"))
    print(json.dumps({"events": len(evs), "polls": polls, "wakes": wakes, "parks": parks,
                      "flows": len(starts), "wake_flows": flows_from["wake"],
                      "io_uring": len(uring) - uring_in_flight, "io_uring_in_flight": uring_in_flight,
                      "io_uring_flows": flows_from["io_uring"],
                      "threads": len(threads), "phases": counts,
                      "other": doc.get("otherData", {}), "thread_names": thread_names}))
    return 0


sys.exit(main())
