#!/bin/bash
# Intent: on a program nobody here wrote — tokio-console's own demo app (the `app` example of
# Debian's console-subscriber crate, built with the kit and tokio_unstable by mk/console-app.mk)
# with every misbehaving option on (blocks coma burn noyield blocking large), traced 25 s from
# its start — every planted fault is found and nothing else is called wrong:
#  - coma → lost_waker; blocks and greedy (noyield's child) → long_poll; burn → self_wake;
#    huge and pretty-big → large_future (the app's own help text names each misbehaviour);
#  - `stalled` only at noyield, on the JoinHandle of greedy, a task inside a long poll
#    (join_long_poll: a true wait on a true fault);
#  - no wait finding (stalled, lost_waker) at a task that is idle by design: the timer sleepers
#    (wait, task1, task2, pretty-big, huge, blocks, burn between their bursts), spawns_blocking
#    (waits on a running blocking task) and console-subscriber's own aggregator and server
#    (select! over mpsc, Notify, I/O); their only allowed finding is large_future (a size fact:
#    console::aggregate's and console::serve's futures are over 1 KiB);
#  - blocks and greedy hold both workers at once (greedy sleeps 20 s, blocks 1 s, 2 s, 3 s in
#    its polls): `starvation` findings, each held by blocks' and greedy's polls only, over the
#    runtime's 2 worker threads, with the sleepers' late timers as victims (one as late as a
#    blocking of 1 s or more, less 10%) — the victims are not `stalled`;
#  - the terminal names the episode and the idle-by-design waits.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
need_console_app

start_bg tr "$TRACER" --binary "$APP" --duration 25s -o "$TMPD/r.json" -o "$TMPD/r.html"
tp=$BG_PID
wait_for_line "$TMPD/tr.err" attached 30 || die_test "tracer attached"
start_bg app "$APP" blocks coma burn noyield blocking large
ap=$BG_PID
wait_exit "$tp" 120
check_eq "tracer exit 0" 0 "$RC"
check "the app still ran at the end (nothing of it crashed)" kill -0 "$ap"
stop_pid "$ap"
R="$TMPD/r.json" S="$TMPD/tr.out"
[ -s "$R" ] || die_test "no report"
echo "# findings:"; jq -r '.findings[] | "#   \(.kind) \(.name // "-") task \(.task_id) \(.stall_reason // "")"' "$R"

# kinds of the findings at tasks named NAME, sorted and unique
kinds_of() { jqr "$R" "[.findings[] | select(.name == \"$1\") | .kind] | unique | join(\",\")"; }
for want in coma=lost_waker blocks=long_poll greedy=long_poll burn=self_wake huge=large_future \
            pretty-big=large_future; do
    n=${want%%=*} k=${want#*=}
    check "planted: $n → $k (its findings: $(kinds_of "$n"))" grep -qw -- "$k" <<< "$(kinds_of "$n" | tr , ' ')"
done
check_eq "stalled: only noyield, on the JoinHandle of a task in a long poll" "noyield join_long_poll" \
    "$(jqr "$R" '[.findings[] | select(.kind == "stalled") | "\(.name // .task_id) \(.stall_reason)"] | unique | join(", ")')"
for n in wait task1 task2 pretty-big huge blocks burn spawns_blocking console::aggregate console::serve; do
    check "idle by design: a task named $n ran" test "$(jqr "$R" "[.tasks[] | select(.name == \"$n\")] | length")" -ge 1
    check_eq "idle by design: $n has no stalled or lost_waker finding" "" \
        "$(jqr "$R" "[.findings[] | select(.name == \"$n\" and (.kind == \"stalled\" or .kind == \"lost_waker\")) | .kind] | join(\",\")")"
done
for n in wait task1 task2 spawns_blocking console::aggregate console::serve; do
    check_eq "idle by design: $n has no finding but large_future" "" \
        "$(jqr "$R" "[.findings[] | select(.name == \"$n\" and .kind != \"large_future\") | .kind] | unique | join(\",\")")"
done

STARVE='.findings[] | select(.kind == "starvation")'
NAMES='(reduce .tasks[] as $t ({}; .[$t.task_id | tostring] = ($t.name // "?")))'
check "starvation: one finding or more ($(jqr "$R" "[$STARVE] | length"))" \
    test "$(jqr "$R" "[$STARVE] | length")" -ge 1
check_eq "starvation: every episode over the 2 worker threads, held by blocks and greedy" "2 blocks,greedy" \
    "$(jqr "$R" "$NAMES as \$n | [$STARVE | \"\(.worker_threads) \([.held_by[].task_id | tostring | \$n[.]] | sort | join(\",\"))\"] | unique | join(\"; \")")"
check "starvation: its victims are the sleepers' late timers ($(jqr "$R" "[$STARVE | .victims.timers_late] | add"))" \
    test "$(jqr "$R" "[$STARVE | .victims.timers_late] | add")" -ge 1
check "starvation: one timer as late as a blocking of 1 s or more, less 10% ($(jqr "$R" "[$STARVE | .victims.timer_late_max_ns] | max") ns)" \
    test "$(jqr "$R" "[$STARVE | .victims.timer_late_max_ns] | max")" -ge 900000000
check "starvation: each episode lasts 900 ms or more (blocks' shortest blocking is 1 s)" \
    test "$(jqr "$R" "[$STARVE | .value_ns] | min")" -ge 900000000
check_eq "the timer sleepers wait as asleep, console's server on I/O as idle (tasks[].wait.class)" "asleep idle" \
    "$(jqr "$R" '"\([.tasks[] | select(.name == "wait" or .name == "task1" or .name == "task2" or .name == "huge") | select(.state == "pending") | .wait.class] | unique | join(",")) \([.tasks[] | select(.name == "console::serve") | .wait.class] | first)"')"
check "terminal: the episode in words" \
    grep -q 'runtime starvation: all 2 worker threads of pid [0-9]* held at once for .* by long polls (task' "$S"
check "terminal: the idle-by-design waits" grep -q '^Idle by design: [0-9]* of them pending' "$S"
check "report.html lists the episode" grep -q 'class="k-starvation' "$TMPD/r.html"
finish
