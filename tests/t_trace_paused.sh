#!/bin/bash
# Intent: a tracer that is not scheduled for a while invents no finding. Batched capture holds a
# thread's records until the thread flushes or is swept and orders them before delivery, so the
# tracer's clock runs ahead of what the analyzer has seen; after a pause (the tracer stopped,
# the traced process not) it runs ahead by the pause. A verdict on what did *not* happen — no
# wake (stalled, lost_waker), no poll end (never_yields) — made on the tracer's clock then takes
# a wake or a poll end still in a buffer for one that did not happen: a timer sleeper, woken on
# time, was called stalled with its timer "late" (seen on the tokio-console demo app in a CI
# run; reproduced by pausing the tracer). The detectors judge up to the time every event has
# been delivered.
# tokio-console's demo app (as t_console_app builds it) with burn (self-wakes between sleeps of
# 0–8 s) and large (two timer sleepers) on: nothing in it waits past due or blocks a worker. It is
# traced batched for 8 s with a stall threshold of 200 ms and a never-yields threshold of 100 ms,
# the tracer stopped (SIGSTOP) for 600 ms of every second: no stalled, lost_waker or never_yields
# finding, the pauses cost no event, and the capture still saw the app (polls, wakes). Judged
# on the tracer's clock, two runs in two called both timer sleepers stalled (timer_late).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
need_console_app

start_bg tr "$TRACER" --binary "$APP" --duration 8s --stall-threshold 200ms --never-yields-threshold 100ms \
    -o "$TMPD/r.json"
tp=$BG_PID
wait_for_line "$TMPD/tr.err" attached 30 || die_test "tracer attached: $(cat "$TMPD/tr.err")"
start_bg app "$APP" burn large
sp=$BG_PID
sleep 1
pauses=0
while kill -0 "$tp" 2> /dev/null; do
    kill -STOP "$tp" 2> /dev/null || break
    sleep 0.6
    kill -CONT "$tp"
    pauses=$((pauses + 1))
    sleep 0.4
done
wait_exit "$tp" 60
check_eq "tracer exit 0" 0 "$RC"
check "the tracer was paused ($pauses times, 600 ms each)" test "$pauses" -ge 4
check "the app still ran" kill -0 "$sp"
stop_pid "$sp"
R="$TMPD/r.json"
[ -s "$R" ] || die_test "no report"
check_eq "batched capture" batched "$(jqr "$R" .capture.capture)"
check_eq "no event lost" 0 "$(jqr "$R" .totals.drops)"
check "the load was seen: polls and wakes ($(jqr "$R" '"\(.totals.polls) polls, \(.totals.wakes) wakes"'))" \
    test "$(jqr "$R" '[.totals.polls, .totals.wakes] | min')" -ge 100
echo "# findings:"; jq -r '.findings[] | "#   \(.kind) task \(.task_id) \(.type_name // "") \(.stall_reason // "") \(.value_ns / 1e6) ms"' "$R"
check_eq "no stalled, lost_waker or never_yields finding" "" \
    "$(jqr "$R" '[.findings[] | select(.kind | IN("stalled", "lost_waker", "never_yields")) | .kind] | unique | join(",")')"
finish
