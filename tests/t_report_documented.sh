#!/bin/bash
# Intent: report behaviours docs/report-schema.md and docs/cli.md document hold on a scripted
# workload, checked against what the workload itself emitted and measured, not against the tracer.
# doc_tokio (tests/fixtures/trace/doc_tokio.c: the tokio:* probes of fake_rt.c) plants 12 polls
# and 12 scheduling delays of known, different lengths and prints, for each, bounds read on
# CLOCK_MONOTONIC just inside and just outside the probe calls (the tracer's figure must lie
# between them); it counts per site the poll results and terminations it emitted. Five captures:
#   defaults  `slowest_polls` / `worst_sched_delays`: --top's default 10 entries, worst first,
#             each a planted one with its duration within the fixture's bounds, none longer left
#             out; the terminal's two lists the same length; poll results (pending … cancelled,
#             panicked) and terminations (completed, cancelled, panicked) per site = emitted, and
#             tasks[].termination; spawn_local sites and tasks (and long_poll still applies to
#             them: only spawn_blocking is exempt); `lost_waker_contradicted` = 1: the lost
#             waker woken later says `contradicted`, the one never woken does not; no
#             task_records_omitted; a self_wake for the self-waker (36 of its 59 wakes are
#             its own: more than half, tokio-console's rule, with no minimum of polls);
#   tuned     --top 3 (3 entries in both JSON lists and terminal lists, 3 sites shown),
#             --long-poll-threshold 45ms (long_poll for exactly the planted polls above it),
#             --self-wake-min 50 (36 self-wakes: no self_wake); --task-records 4: listed +
#             omitted = terminated;
#   ratio     --self-wake-ratio 0.7 (no finding at 0.61), --detect self_wake, --task-records 4:
#             exactly 4 terminated tasks listed, the rest counted in task_records_omitted;
#   nowaker   --probes spawn,poll,wake,terminate: yield, waker and worker events not captured
#             (counts 0, live_wakers null, no lost_waker, parks 0), and the yielder's self-wakes
#             are then unexplained (self_wake_polls);
#   nowake    --probes spawn,poll,yield,terminate,worker: no wakes, no pending times.
# In the defaults capture bpftrace counts task_poll_end results and task_terminate reasons on
# the same probes: the report's per-site sums must equal its counts.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
DOC_FX="$BUILD/fixtures/doc_tokio"
DOC_SRC="tests/fixtures/trace/doc_tokio.c"
need_file "$DOC_FX" "fixture doc_tokio"
command -v python3 > /dev/null || die_test "python3 needed"

# doc_site NAME: "file:line:col" of doc_tokio's "SPAWN-SITE: NAME" marker
doc_site() {
    echo "$DOC_SRC:$(grep -n "// SPAWN-SITE: $1\$" "$ROOT/$DOC_SRC" | cut -d: -f1):5"
}
# doc_ids FILE SITE: the task ids the fixture spawned at SITE, space-separated, ascending
doc_ids() { awk -v s="$2" '$1 == "task" && $2 == s { print $3 }' "$1" | sort -n | tr '\n' ' ' | sed 's/ $//'; }
# doc_count FILE SITE KEY: a value of the fixture's "count SITE …" line
doc_count() { sed -n "s/^count $2 .*\b$3=\([0-9]*\).*/\1/p" "$1"; }
# term_lines FILE TITLE: rows of the terminal summary's section TITLE (up to its blank line)
term_lines() { awk -v t="$2" 'index($0, t) == 1 { on = 1; next } on && /^$/ { exit } on' "$1"; }

# capture_doc NAME "FIXTURE ARGS" TRACER ARGS…: as report_lib's capture_fixture, for doc_tokio.
# Sets CAP_RC, R (report), E (fixture output), S (terminal summary), FPID (the fixture, stopped).
# With BT_SCRIPT set, bpftrace runs that script on the fixture too (output in $TMPD/NAME.bt.out).
capture_doc() {
    local name=$1 fxargs=$2 tpid bpid=
    shift 2
    R="$TMPD/$name.json" E="$TMPD/$name.fx.out" S="$TMPD/$name.tr.out"
    rm -f "$TMPD/$name.go"
    # shellcheck disable=SC2086
    start_bg "$name.fx" "$DOC_FX" $fxargs --go "$TMPD/$name.go" --hold
    FPID=$BG_PID
    wait_for_line "$E" '^pid ' 10 || { not_ok "$name: fixture started"; CAP_RC=start; return 1; }
    start_bg "$name.tr" "$TRACER" --pid "$FPID" -o "$R" "$@"
    tpid=$BG_PID
    if ! wait_for_line "$TMPD/$name.tr.err" 'attached' 30; then
        not_ok "$name: tracer attached"; cat "$TMPD/$name.tr.err"; stop_pid "$FPID"; CAP_RC=attach; return 1
    fi
    if [ -n "${BT_SCRIPT:-}" ]; then
        start_bg "$name.bt" bpftrace -p "$FPID" -e "$BT_SCRIPT"
        bpid=$BG_PID
        wait_for_line "$TMPD/$name.bt.out" '^ready$' 60 || not_ok "$name: bpftrace attached"
    fi
    touch "$TMPD/$name.go"
    wait_for_line "$E" '^done$' 60 || not_ok "$name: fixture finished"
    [ -n "$bpid" ] && bt_stop "$bpid" "$name"
    sleep 0.2
    kill -INT "$tpid"
    wait_exit "$tpid" 60
    CAP_RC=$RC
    stop_pid "$FPID"
    check_eq "$name: tracer exit 0" 0 "$CAP_RC"
    check_eq "$name: no events dropped (the figures below are exact)" 0 "$(jqr "$R" .totals.drops)"
    check_eq "$name: totals.polls = emitted" "$(expect_of "$E" polls)" "$(jqr "$R" .totals.polls)"
}

# tops.py REPORT FIXTURE-OUT KEY VALUE-KEY KIND(poll|sched) N: the JSON list KEY has N entries,
# worst first, each a duration the fixture measured (task, worker, site) within its bounds, and
# no measured one surely longer than the list's last entry is missing. Prints what is wrong.
cat > "$TMPD/tops.py" <<'PY'
import json, sys
rep, fx, key, vkey, kind, n = sys.argv[1:7]
n = int(n)
d = json.load(open(rep))
meas, sites, pid = {}, {}, None
for line in open(fx):
    f = line.split()
    if f and f[0] == "pid":
        pid = int(f[1])
    if f and f[0] == "site":
        sites[f[1]] = f[2]
    if f and f[0] == "task":
        sites.setdefault("task:" + f[2], f[1])
    if f and f[0] == kind:
        kv = dict(x.split("=") for x in f[1:])
        meas[int(kv["id"])] = (int(kv["lo"]), int(kv["hi"]), int(kv["worker"]))
lst = d[key]
errs = []
if len(lst) != n:
    errs.append(f"{len(lst)} entries, want {n}")
vals = [e[vkey] for e in lst]
if vals != sorted(vals, reverse=True):
    errs.append(f"not worst first: {vals}")
for e in lst:
    m = meas.get(e["task_id"])
    if not m:
        errs.append(f"task {e['task_id']} ({e[vkey]} ns) is not a planted one")
        continue
    lo, hi, w = m
    if not lo <= e[vkey] <= hi:
        errs.append(f"task {e['task_id']}: {e[vkey]} ns outside the fixture's [{lo}, {hi}]")
    if e["worker"] != w or e["pid"] != pid:
        errs.append(f"task {e['task_id']}: worker/pid {e['worker']}/{e['pid']}, want {w}/{pid}")
    want_loc = sites.get(sites.get("task:" + str(e["task_id"]), "?"))
    if e["location"] != want_loc:
        errs.append(f"task {e['task_id']}: location {e['location']}, want {want_loc}")
if vals:
    listed = {e["task_id"] for e in lst}
    for tid, (lo, hi, w) in meas.items():
        if tid not in listed and lo > vals[-1]:
            errs.append(f"task {tid} ({lo}..{hi} ns) left out, longer than the last listed {vals[-1]}")
print("; ".join(errs) if errs else f"{n} entries: " + " ".join(f"{e['task_id']}:{e[vkey]//1000}us" for e in lst))
sys.exit(1 if errs else 0)
PY
# tops_check LABEL KEY VALUE-KEY KIND N
tops_check() {
    local out
    if out=$(python3 "$TMPD/tops.py" "$R" "$E" "$2" "$3" "$4" "$5" 2>&1); then ok "$1: $out"
    else not_ok "$1 ($out)"; fi
}

LOCAL=$(doc_site local) CANCEL=$(doc_site cancel) PANIC=$(doc_site panic)
YIELDER=$(doc_site yielder) SELFW=$(doc_site self_waker) LWOKEN=$(doc_site lost_woken) LLOST=$(doc_site lost_waker)
site_q() { echo ".spawn_sites[] | select(.location == \"$1\")"; }

# ==== defaults (and bpftrace counting poll results and terminate reasons)
BT_SCRIPT="BEGIN { printf(\"ready\\n\"); }
usdt:$DOC_FX:tokio:task_poll_end { @r[arg2] = count(); }
usdt:$DOC_FX:tokio:task_terminate { @t[arg2] = count(); }" capture_doc def ""
tops_check "defaults: slowest_polls: --top's default 10, worst first, the planted polls with their durations" \
    slowest_polls duration_ns poll 10
tops_check "defaults: worst_sched_delays: 10, worst first, the planted delays with their durations" \
    worst_sched_delays delay_ns sched 10
check_eq "defaults: terminal 'Slowest polls' lists 10" 10 "$(term_lines "$S" 'Slowest polls' | wc -l)"
check_eq "defaults: terminal 'Worst scheduling delays' lists 10" 10 "$(term_lines "$S" 'Worst scheduling delays' | wc -l)"
check_eq "defaults: the terminal's slowest poll is the JSON's" "$(jqr "$R" .slowest_polls[0].task_id)" \
    "$(term_lines "$S" 'Slowest polls' | head -1 | sed -n 's/.* task \([0-9]*\) .*/\1/p')"
check_eq "defaults: all 8 sites shown in the terminal (fewer than --top), no '… more sites'" "8 0" \
    "$(term_lines "$S" 'Spawn sites by busy time' | grep -c doc_tokio:: ) $(grep -c 'more site' "$S")"

# poll results and terminations, per site, as emitted
for site in planted local cancel panic yielder self_waker lost_woken lost_waker; do
    want=$(sed -n "s/^count $site polls=[0-9]* pending=\([0-9]*\) ready=\([0-9]*\) notified=\([0-9]*\) cancelled=\([0-9]*\) panicked=\([0-9]*\) completed=\([0-9]*\) t_cancelled=\([0-9]*\) t_panicked=\([0-9]*\) .*/\1 \2 \3 \4 \5 | \6 \7 \8/p" "$E")
    check_eq "defaults: $site: poll_results (pending ready notified cancelled panicked) | terminations (completed cancelled panicked) = emitted" \
        "$want" "$(jqr "$R" "$(site_q "$(doc_site $site)") | \"\(.poll_results | \"\(.pending) \(.ready) \(.notified) \(.cancelled) \(.panicked)\") | \(.terminations | \"\(.completed) \(.cancelled) \(.panicked)\")\"")"
done
check_eq "defaults: cancel site: 3 polls cancelled, 5 tasks cancelled (2 aborted while Pending)" "3 5" \
    "$(jqr "$R" "$(site_q "$CANCEL") | \"\(.poll_results.cancelled) \(.terminations.cancelled)\"")"
check_eq "defaults: panic site: 2 polls panicked, 2 tasks panicked" "2 2" \
    "$(jqr "$R" "$(site_q "$PANIC") | \"\(.poll_results.panicked) \(.terminations.panicked)\"")"
check_eq "defaults: tasks[] of the cancel site: termination cancelled ×5, completed ×1, all terminated" \
    "cancelled/terminated cancelled/terminated cancelled/terminated cancelled/terminated cancelled/terminated completed/terminated" \
    "$(jqr "$R" "[.tasks[] | select(.location == \"$CANCEL\") | \"\(.termination)/\(.state)\"] | sort | join(\" \")")"
check_eq "defaults: tasks[] of the panic site: termination panicked ×2" "panicked panicked" \
    "$(jqr "$R" "[.tasks[] | select(.location == \"$PANIC\") | .termination] | join(\" \")")"
check_eq "defaults: totals.terminations = emitted" "$(expect_of "$E" terminates)" "$(jqr "$R" .totals.terminations)"
# bpftrace's own counts of the same probes
bt_of() { sed -n "s/^@$1\[$2\]: //p" "$TMPD/def.bt.out"; }
check_eq "defaults: poll results summed over sites = bpftrace's task_poll_end counts by result (0..4)" \
    "$(for r in 0 1 2 3 4; do echo -n "${r}:$(bt_of r $r | grep . || echo 0) "; done)" \
    "$(jqr "$R" '[.spawn_sites[].poll_results] | "0:\(map(.pending)|add) 1:\(map(.ready)|add) 2:\(map(.notified)|add) 3:\(map(.cancelled)|add) 4:\(map(.panicked)|add) "')"
check_eq "defaults: terminations summed over sites = bpftrace's task_terminate counts by reason (0..2)" \
    "$(for r in 0 1 2; do echo -n "${r}:$(bt_of t $r | grep . || echo 0) "; done)" \
    "$(jqr "$R" '[.spawn_sites[].terminations] | "0:\(map(.completed)|add) 1:\(map(.cancelled)|add) 2:\(map(.panicked)|add) "')"

# spawn_local
check_eq "defaults: the spawn_local site has kind spawn_local, the others spawn" \
    "spawn_local|spawn spawn spawn spawn spawn spawn spawn" \
    "$(jqr "$R" "\"\($(site_q "$LOCAL") | .kind)|\([.spawn_sites[] | select(.location != \"$LOCAL\") | .kind] | join(\" \"))\"")"
check_eq "defaults: its task has kind spawn_local" "$(doc_ids "$E" local) spawn_local" \
    "$(jqr "$R" ".tasks[] | select(.location == \"$LOCAL\") | \"\(.task_id) \(.kind)\"")"
check_eq "defaults: its 30ms poll is a long_poll (only spawn_blocking is exempt)" "long_poll" \
    "$(jqr "$R" "[.findings[] | select(.location == \"$LOCAL\") | .kind] | join(\" \")")"

# lost_waker_contradicted
check_eq "defaults: totals.lost_waker_contradicted = 1 (one lost waker woken later)" 1 \
    "$(jqr "$R" .totals.lost_waker_contradicted)"
check_eq "defaults: the lost waker woken later: contradicted, no longer ongoing, 0 live wakers" \
    "lost_waker true false 0" \
    "$(jqr "$R" ".findings[] | select(.location == \"$LWOKEN\") | \"\(.kind) \(.contradicted) \(.ongoing) \(.live_wakers)\"")"
check_eq "defaults: the lost waker never woken: not contradicted, still ongoing" "lost_waker false true" \
    "$(jqr "$R" ".findings[] | select(.location == \"$LLOST\") | \"\(.kind) \(.contradicted) \(.ongoing)\"")"
check_eq "defaults: the contradicted finding's value is the whole wait (= the site's longest pending time)" \
    "$(jqr "$R" ".spawn_sites[] | select(.location == \"$LWOKEN\") | .pending_ns.max")" \
    "$(jqr "$R" ".findings[] | select(.location == \"$LWOKEN\") | .value_ns")"
check "defaults: the contradicted finding's detail says a wake came after all" \
    bash -c "jq -r '.findings[] | select(.location == \"$LWOKEN\") | .detail' '$R' | grep -q 'a wake came later after all'"

# the default thresholds at work
check_eq "defaults: long_poll for every planted poll (all > 10ms) and the spawn_local one" \
    "$(doc_ids "$E" planted) $(doc_ids "$E" local)" \
    "$(jqr "$R" '[.findings[] | select(.kind == "long_poll") | .task_id] | sort | map(tostring) | join(" ")')"
# its wakes: its own (self_wakes) and one from the main thread per Pending poll
SW=$(doc_count "$E" self_waker self_wakes) SWW=$(( $(doc_count "$E" self_waker self_wakes) + $(doc_count "$E" self_waker pending) ))
check_eq "defaults: self_wake for the self-waker: $SW of its $SWW wakes its own (ratio ×1000 rounded), over 60 polls, threshold 0.5" \
    "$(doc_ids "$E" self_waker) $SW 60 0.5 $(( (SW * 2000 + SWW) / (2 * SWW) ))" \
    "$(jqr "$R" '.findings[] | select(.kind == "self_wake") | "\(.task_id) \(.occurrences) \(.polls) \(.threshold_ratio) \(.ratio * 1000 | round)"')"
check_eq "defaults: no other self_wake finding (the yielder's self-wakes are explained)" 1 \
    "$(jqr "$R" '[.findings[] | select(.kind == "self_wake")] | length')"
check_eq "defaults: self_waker site: self_wakes and self_wake_polls = emitted (36 36)" \
    "$(doc_count "$E" self_waker self_wakes) $(doc_count "$E" self_waker self_wake_polls)" \
    "$(jqr "$R" "$(site_q "$SELFW") | \"\(.self_wakes) \(.self_wake_polls)\"")"
check_eq "defaults: yielder: 5 yield_now, its 5 self-wakes all explained" "5 5 0" \
    "$(jqr "$R" "$(site_q "$YIELDER") | \"\(.yields.yield_now) \(.self_wakes) \(.self_wake_polls)\"")"
check_eq "defaults: pending periods: self_waker 23, panic 2, lost_woken 1" "23 2 1" \
    "$(jqr "$R" "\"\($(site_q "$SELFW") | .pending_ns.count) \($(site_q "$PANIC") | .pending_ns.count) \($(site_q "$LWOKEN") | .pending_ns.count)\"")"
check_eq "defaults: every task listed, task_records_omitted 0" "$(expect_of "$E" spawns) 0" \
    "$(jqr "$R" '"\(.tasks | length) \(.totals.task_records_omitted)"')"
check_eq "defaults: totals.yields/waker_clones/waker_drops/parks = emitted" \
    "$(expect_of "$E" yields) $(expect_of "$E" clones) $(expect_of "$E" drops) $(expect_of "$E" parks)" \
    "$(jqr "$R" '.totals | "\(.yields) \(.waker_clones) \(.waker_drops) \(.parks)"')"
BT_SCRIPT=

# ==== tuned: --top 3, --long-poll-threshold 45ms, --self-wake-min 50, --task-records 4
capture_doc tuned "" --top 3 --long-poll-threshold 45ms --self-wake-min 50 --task-records 4
tops_check "--top 3: slowest_polls has the 3 longest planted polls" slowest_polls duration_ns poll 3
tops_check "--top 3: worst_sched_delays has the 3 longest planted delays" worst_sched_delays delay_ns sched 3
check_eq "--top 3: terminal 'Slowest polls' lists 3" 3 "$(term_lines "$S" 'Slowest polls' | wc -l)"
check_eq "--top 3: terminal 'Worst scheduling delays' lists 3" 3 "$(term_lines "$S" 'Worst scheduling delays' | wc -l)"
check_eq "--top 3: terminal shows 3 spawn sites and says 5 more are in the JSON" "3 1" \
    "$(term_lines "$S" 'Spawn sites by busy time' | grep -c doc_tokio::) $(grep -c '^  … 5 more sites in the JSON report$' "$S")"
check_eq "--top 3: the JSON still has all 8 sites" 8 "$(jqr "$R" '.spawn_sites | length')"
want=$(grep '^poll ' "$E" | awk '{ split($3, lo, "="); split($2, id, "="); if (lo[2] > 45000000) print id[2] }' | sort -n | tr '\n' ' ' | sed 's/ $//')
check_eq "--long-poll-threshold 45ms: long_poll for exactly the planted polls above 45ms ($want)" "$want" \
    "$(jqr "$R" '[.findings[] | select(.kind == "long_poll") | .task_id] | sort | map(tostring) | join(" ")')"
check_eq "--long-poll-threshold 45ms: 6 of the 12 planted polls are above it (the fixture's plan)" 6 "$(wc -w <<< "$want")"
check_eq "--long-poll-threshold 45ms: in capture.thresholds and in each finding" "45000000 45000000" \
    "$(jqr "$R" '"\(.capture.thresholds.long_poll_ns) \([.findings[] | select(.kind == "long_poll") | .threshold_ns] | unique | join(","))"')"
check_eq "--self-wake-min 50: no self_wake finding (36 self-wakes)" 0 \
    "$(jqr "$R" '[.findings[] | select(.kind == "self_wake")] | length')"
check_eq "--self-wake-min 50: in capture.thresholds" 50 "$(jqr "$R" .capture.thresholds.self_wake_min)"
check_eq "--task-records 4: terminated tasks listed + task_records_omitted = terminations" \
    "$(expect_of "$E" terminates)" "$(jqr "$R" '([.tasks[] | select(.state == "terminated")] | length) + .totals.task_records_omitted')"
check "--task-records 4: some terminated tasks omitted" test "$(jqr "$R" .totals.task_records_omitted)" -gt 0

# ==== ratio: --self-wake-ratio 0.7 over the same 0.6, --detect self_wake, --task-records 4
capture_doc ratio "" --self-wake-ratio 0.7 --detect self_wake --task-records 4
check_eq "--self-wake-ratio 0.7: no self_wake finding for a ratio of 0.61 (no finding at all)" 0 "$(jqr "$R" '.findings | length')"
check_eq "--self-wake-ratio 0.7: the self-waking polls are still counted (36)" 36 \
    "$(jqr "$R" "$(site_q "$SELFW") | .self_wake_polls")"
check_eq "--self-wake-ratio 0.7: in capture.thresholds" 0.7 "$(jqr "$R" .capture.thresholds.self_wake_ratio)"
check_eq "--task-records 4 (no findings): exactly 4 terminated tasks listed" 4 \
    "$(jqr "$R" '[.tasks[] | select(.state == "terminated")] | length')"
check_eq "--task-records 4: task_records_omitted = terminations − 4" "$(( $(expect_of "$E" terminates) - 4 ))" \
    "$(jqr "$R" .totals.task_records_omitted)"
check_eq "--task-records 4: the live task is still listed" "$(doc_ids "$E" lost_waker)" \
    "$(jqr "$R" '[.tasks[] | select(.state != "terminated") | .task_id] | map(tostring) | join(" ")')"

# ==== nowaker: --probes spawn,poll,wake,terminate
capture_doc nowaker "" --probes spawn,poll,wake,terminate
check_eq "--probes spawn,poll,wake,terminate: exactly those probes attached" \
    "task_poll_begin task_poll_end task_spawn task_terminate waker_wake" \
    "$(jqr "$R" '.capture.probes_attached | sort | join(" ")')"
check_eq "… spawns, wakes, terminations exact" \
    "$(expect_of "$E" spawns) $(expect_of "$E" wakes) $(expect_of "$E" terminates)" \
    "$(jqr "$R" '.totals | "\(.spawns) \(.wakes) \(.terminations)"')"
check_eq "… yields, waker clones/drops, parks/unparks not captured: 0" "0 0 0 0 0" \
    "$(jqr "$R" '.totals | "\(.yields) \(.waker_clones) \(.waker_drops) \(.parks) \(.unparks)"')"
check_eq "… no probe hits counted for them" 0 \
    "$(jqr "$R" '[.data_loss.probe_hits | to_entries[] | select(.key | test("yield|clone|drop|park")) | .value] | add // 0')"
check_eq "… live_wakers unknown (null) for every task" "null" "$(jqr "$R" '[.tasks[].live_wakers] | unique | map(tostring) | join(" ")')"
check_eq "… no lost_waker finding, nothing contradicted" "0 0" \
    "$(jqr "$R" '"\([.findings[] | select(.kind == "lost_waker")] | length) \(.totals.lost_waker_contradicted)"')"
check_eq "… every worker: 0 parks" "0" "$(jqr "$R" '[.workers[].parks] | unique | map(tostring) | join(" ")')"
check_eq "… the yielder's self-wakes are unexplained without task_yielded (5 of 5), yield_now 0" "5 5 0" \
    "$(jqr "$R" "$(site_q "$YIELDER") | \"\(.self_wakes) \(.self_wake_polls) \(.yields.yield_now)\"")"

# ==== nowake: --probes spawn,poll,yield,terminate,worker
capture_doc nowake "" --probes spawn,poll,yield,terminate,worker
check_eq "--probes without wake: waker_wake not attached" "" \
    "$(jqr "$R" '.capture.probes_attached[] | select(startswith("waker"))')"
check_eq "… wakes, self-wakes, outside-runtime wakes: 0" "0 0 0" \
    "$(jqr "$R" '.totals | "\(.wakes) \(.self_wakes) \(.outside_runtime_wakes)"')"
check_eq "… no pending time measured at any site" 0 "$(jqr "$R" '[.spawn_sites[].pending_ns.count] | add')"
check_eq "… no self-waking polls at the self-waker" "0 0" "$(jqr "$R" "$(site_q "$SELFW") | \"\(.self_wakes) \(.self_wake_polls)\"")"
check_eq "… yields and parks still captured" "$(expect_of "$E" yields) $(expect_of "$E" parks)" \
    "$(jqr "$R" '.totals | "\(.yields) \(.parks)"')"
finish
