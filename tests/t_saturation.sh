#!/bin/bash
# Intent: at saturation nothing is lost at random (docs/sampling.md). The yield workload (1000
# tasks × 20 000 yield_now on 2 workers: ~20 M polls, ~100 M events in a few seconds, far more
# than the tracer at nice 10 reads) under the default options (batched capture, adaptive
# sampling), the tracer attached by path before the workload starts:
#  - the rate rose at run time (a change caused by the ring, lost batches or the CPU budget) and
#    the report says so: capture.batch.sampling (mode, rule, changes), the terminal's `sampling:`
#    line and report.html;
#  - the totals are exact: polls = the workload's own count (tasks × (yields + 1), printed by the
#    program) + the 2 worker launchers' polls, whatever was lost;
#  - every task the report lists is whole: its polls = its yields + 1, spawn seen, completed, a
#    wake and a waker clone per yield (the records the hooks' inlined batched-only path writes:
#    yield_now wakes its task through a cloned waker); each is one every rate in force during its
#    life picks (the process's hash, recomputed in Python); the totals count every wake;
#  - every task followed is listed or counted as set aside (by rate or by gap), none half; none
#    listed was met in the middle of its life (a task set aside does not come back).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
LINE=1.53
bin=$(sample_bin "$LINE" usdt)
need_file "$bin" "tokio-$LINE usdt sample-service"
WL_LINE=$(grep -n '// SPAWN-SITE: yield_workload$' "$ROOT/sample-service/src/workload.rs" | cut -d: -f1)
YSITE="select(.location // \"\" | test(\"src/workload.rs:$WL_LINE:[0-9]+\$\"))"
N=1000 M=20000

start_bg tr "$TRACER" --binary "$bin" -o "$TMPD/r.json" -o "$TMPD/r.html"
trp=$BG_PID
wait_for_line "$TMPD/tr.err" attached 30 || not_ok "tracer attached"
check "the tracer says it samples adaptively" grep -q 'adaptive sampling' "$TMPD/tr.err"
start_bg wl "$bin" yield-workload --tasks $N --yields $M --workers 2 --wait-start "$TMPD/gate"
wp=$BG_PID
wait_exec "$wp" "$bin" || not_ok "the workload started"
check "started after attach: the 4 event_batch semaphores raised" wait_sem "$wp" 4 10
touch "$TMPD/gate"
wait_exit "$wp" 180
check_eq "workload exit 0" 0 "$RC"
expected=$(sed -n 's/.*polls_expected=\([0-9]*\).*/\1/p' "$TMPD/wl.out")
check "the workload printed its count of polls" test -n "$expected"
kill -INT "$trp"; wait_exit "$trp" 120
check_eq "tracer exit 0" 0 "$RC"
R="$TMPD/r.json"
S=.capture.batch.sampling
echo "# sampling: $(jq -c "$S | del(.rule)" "$R")"
echo "# totals: $(jq -c '.totals | {events, drops, polls, spawns, tasks_seen}' "$R")"

check_eq "sampling: adaptive" adaptive "$(jqr "$R" "$S.mode")"
check "sampling: the rule is stated" test "$(jqr "$R" "$S.rule | length")" -gt 40
check "sampling: the rate rose at run time (rate_max $(jqr "$R" "$S.rate_max"))" \
    test "$(jqr "$R" "$S.rate_max")" -ge 2
check "sampling: a raise caused by the ring, lost batches or the CPU, after the start" \
    test "$(jqr "$R" "[$S.changes[] | select((.why == \"ring\" or .why == \"loss\" or .why == \"cpu\") and .rate > 1 and .at_ns > 0)] | length")" -ge 1
check_eq "sampling: capture.sample_rate is the highest rate" "$(jqr "$R" "$S.rate_max")" \
    "$(jqr "$R" .capture.sample_rate)"

# exact totals, against the program's own count (+ the 2 worker launchers' one poll each)
check_eq "totals.polls = the workload's polls ($expected) + 2 worker launchers" \
    "$((expected + 2))" "$(jqr "$R" .totals.polls)"

# whole tasks only
listed=$(jqr "$R" "[.tasks[] | $YSITE] | length")
echo "# yield tasks listed: $listed of $N"
check "at least one yield task followed whole" test "$listed" -ge 1
check_eq "every yield task listed is whole: polls = yields + 1 = $((M + 1)), spawn seen, completed" 0 \
    "$(jqr "$R" "[.tasks[] | $YSITE | select(.polls != .yields.yield_now + 1 or .polls != $((M + 1)) or .spawn_seen != true or .termination != \"completed\")] | length")"
check_eq "every yield task listed has a wake and a waker clone per yield ($M)" 0 \
    "$(jqr "$R" "[.tasks[] | $YSITE | select(.wakes != $M or .waker_clones != $M)] | length")"
check "totals.wakes counts every yield's wake: $(jqr "$R" .totals.wakes) >= $((N * M))" \
    test "$(jqr "$R" .totals.wakes)" -ge $((N * M))
# each listed task is one every rate in force during its life picks (a task that ended before a
# later raise stays): the process's hash, recomputed here
check_eq "every yield task listed is one each rate of its life picks (the process's hash)" "" \
    "$(jq -c "{changes: $S.changes, tasks: [.tasks[] | $YSITE | {task_id, end: (.first_seen_at_ns + .lifetime_ns)}]}" "$R" |
       python3 -c '
import json, sys
d = json.load(sys.stdin)
bad = []
for t in d["tasks"]:
    rate = max(c["rate"] for c in d["changes"] if c["at_ns"] <= t["end"])
    thr = (1 << 64) - 1 if rate == 1 else ((1 << 64) - 1) // rate
    if (t["task_id"] * 0x9e3779b97f4a7c15) % (1 << 64) > thr:
        bad.append("%d(1/%d)" % (t["task_id"], rate))
print(" ".join(bad[:10]) + (" … %d in all" % len(bad) if len(bad) > 10 else ""))
')"
check_eq "no task listed was met mid-life (the process started after attach: a task set aside comes back in no list)" 0 \
    "$(jqr "$R" '[.tasks[] | select(.spawn_seen != true)] | length')"
check_eq "nothing omitted from the task list" "0 0" \
    "$(jqr "$R" '"\(.totals.task_records_omitted) \(.totals.live_tasks_omitted)"')"
check_eq "every task followed is listed or set aside whole" "$(jqr "$R" .totals.tasks_seen)" \
    "$(jqr "$R" "(.tasks | length) + $S.tasks_set_aside_by_rate + $S.tasks_set_aside_by_gap")"
if [ "$(jqr "$R" "$S.gaps")" -gt 0 ]; then
    check "gaps ($(jqr "$R" "$S.gaps")): tasks alive then set aside" \
        test "$(jqr "$R" "$S.tasks_set_aside_by_gap")" -ge 1
fi

# the other outputs say it too
check "terminal: the sampling line" grep -qE '^sampling: adaptive, 1 task in [0-9]+ at the end \(highest [0-9]+' "$TMPD/tr.out"
check "report.html: the sampling sentence" grep -qE '<p class="sampling">sampling: adaptive, 1 task in [0-9]+' "$TMPD/r.html"
finish
