#!/bin/bash
# Intent: batched capture (tokio:event_batch) on the real thing, per supported Tokio line.
#  1. Exactness, against an observer we did not write: bpftrace counts the per-event probes
#     task_spawn, task_poll_begin, waker_wake, task_terminate while the tracer (batched, the
#     default) is attached by path; the yield workload, started after both attached, gives the same
#     counts in the tracer's report, nothing lost, and every task's polls = its yields + 1.
#  2. A poll blocked for 6 s shows as never_yields in the `-i 1s` summary while it is still
#     running (the tracer reads the thread's buffer in place), and as a long_poll at its spawn site
#     once it ended; after the tracer exits, every probe semaphore of the live process is 0.
#  3. Sampling: --sample-rate 10 on 1000 tasks traces a number of tasks within binomial bounds,
#     each with its complete history (spawn seen, polls = yields + 1, completed), and the report's
#     totals stay exact (equal to bpftrace's counts of every task).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
command -v bpftrace > /dev/null || die_test "bpftrace missing (make deps)"
WL_LINE=$(grep -n '// SPAWN-SITE: yield_workload$' "$ROOT/sample-service/src/workload.rs" | cut -d: -f1)
LP_LINE=$(grep -n '// SPAWN-SITE: long_poll$' "$ROOT/sample-service/src/workload.rs" | cut -d: -f1)
YSITE="select(.location // \"\" | test(\"src/workload.rs:$WL_LINE:[0-9]+\$\"))"

# counted LABEL BIN TRACER-ARGS… -- WORKLOAD-ARGS…: bpftrace and the tracer attached by path, the
# workload started after both (gated), compared. Leaves $TMPD/LABEL.json and bpftrace's counts.
counted() {
    local label=$1 bin=$2; shift 2
    local targs=() p bt="" i
    while [ "$1" != -- ]; do targs+=("$1"); shift; done; shift
    for p in task_spawn task_poll_begin waker_wake task_terminate; do
        bt+="usdt:$bin:tokio:$p { @c[\"$p\"] = count(); } "
    done
    bt+='BEGIN { printf("ready\n"); }'
    start_bg "bt.$label" bpftrace -e "$bt"
    local btp=$BG_PID
    start_bg "tr.$label" "$TRACER" --binary "$bin" -q -o "$TMPD/$label.json" "${targs[@]}"
    local trp=$BG_PID
    wait_for_line "$TMPD/tr.$label.err" attached 30 || not_ok "$label: tracer attached"
    wait_for_line "$TMPD/bt.$label.out" '^ready' 60 || not_ok "$label: bpftrace attached"
    rm -f "$TMPD/gate.$label"
    start_bg "wl.$label" "$bin" "$@" --wait-start "$TMPD/gate.$label"
    local wp=$BG_PID ev="" sems
    for i in $(seq 100); do   # the process maps the binary: batch and per-event gates raised
        sems=$(sem_values "$wp")   # one read of both (~0.4 s each: the tracer's list, python)
        ev=$(sed -n 's/^event_batch=//p' <<< "$sems")
        [ "${ev:-0}" -ge 4 ] && [ "$(sed -n 's/^task_poll_begin=//p' <<< "$sems")" = 1 ] && break
        sleep 0.1
    done
    check "$label: started after attach: the 4 event_batch semaphores raised" test "${ev:-0}" -ge 4
    stallmon_start "$label"
    touch "$TMPD/gate.$label"
    wait_exit "$wp" 120
    stallmon_stop
    check_eq "$label: workload exit 0" 0 "$RC"
    kill -INT "$trp"; wait_exit "$trp" 120
    check_eq "$label: tracer exit 0" 0 "$RC"
    bt_stop "$btp" "$label"
}
bt_count() { local v; v=$(sed -n "s/^@c\[$2\]: //p" "$TMPD/bt.$1.out"); echo "${v:-missing}"; }

missing=()
for line in "${LINES[@]}"; do
    bin=$(sample_bin "$line" usdt)
    if [ ! -x "$bin" ]; then missing+=("tokio-$line/usdt"); continue; fi
    L="tokio $line"

    # ---- 1. exact counts ----
    N=200 M=100
    counted "y$line" "$bin" -- yield-workload --tasks $N --yields $M --workers 2
    R="$TMPD/y$line.json"
    check_eq "$L: capture is batched" batched "$(jqr "$R" .capture.capture)"
    check_eq "$L: nothing lost (drops, batches lost, threads without their last batch)" "0 0 0 0" \
        "$(jqr "$R" '"\(.totals.drops) \(.data_loss.batches.lost_ring_full) \(.data_loss.batches.lost_otherwise) \(.data_loss.batches.threads_vanished)"')"
    for pk in task_spawn:spawns task_poll_begin:polls waker_wake:wakes task_terminate:terminations; do
        p=${pk%%:*} k=${pk#*:}
        want=$(bt_count "y$line" "$p")
        check "$L: bpftrace counted $p" test "$want" != missing -a "$want" != 0
        check_eq "$L: $p: tracer (batched) = bpftrace" "$want" "$(jqr "$R" ".totals.$k")"
    done
    check_eq "$L: the yield site has its $N tasks" "$N" "$(jqr "$R" "[.tasks[] | $YSITE] | length")"
    check_eq "$L: every task's polls = its yields + 1 ($((M + 1)))" 0 \
        "$(jqr "$R" "[.tasks[] | $YSITE | select(.polls != .yields.yield_now + 1 or .polls != $((M + 1)))] | length")"
    # none, but for a lone long poll that a machine stall recorded by stallmon explains
    check_healthy "$L: the healthy workload" "$R" ""

    # ---- 2. a poll blocked for 6 s, seen while it runs ----
    rm -f "$TMPD/lgate.$line"
    start_bg "lp.$line" "$bin" long-poll --ms 6000 --workers 2 --wait-start "$TMPD/lgate.$line"
    lp=$BG_PID
    wait_exec "$lp" "$bin" || not_ok "$L: the long-poll process started"
    start_bg "ltr.$line" "$TRACER" --pid "$lp" -i 1s -o "$TMPD/lp$line.json"
    ltr=$BG_PID
    wait_for_line "$TMPD/ltr.$line.err" attached 30 || not_ok "$L: tracer attached to the long-poll process"
    touch "$TMPD/lgate.$line"
    wait_for_line "$TMPD/lp.$line.out" '^blocking' 30 || not_ok "$L: the task began blocking"
    # the -i summary's never_yields, as soon as it shows, at most 3.5 s into the 6 s poll (it was
    # a fixed 3.5 s sleep); the poll must still run then
    ny="never_yields.*workload.rs:$LP_LINE:" deadline=$(( ${EPOCHREALTIME//[!0-9]/} + 3500000 ))
    until grep -qE "$ny" "$TMPD/ltr.$line.out" || [ "${EPOCHREALTIME//[!0-9]/}" -ge "$deadline" ]; do sleep 0.1; done
    still=$(grep -c long_poll_ms= "$TMPD/lp.$line.out")
    check_eq "$L: when the summary shows it (at most 3.5 s into the 6 s poll), the poll is still running" 0 "$still"
    check "$L: the -i summary shows never_yields at the long_poll site while the poll runs" \
        grep -qE "$ny" "$TMPD/ltr.$line.out"

    # semaphores back to 0 on a live process, after the tracer exits — meanwhile the 6 s poll
    # above ends (its processes are not this one's; its report is read below)
    rm -f "$TMPD/sgate.$line"
    start_bg "sv.$line" "$bin" serve --workers 2 --load 20 --duration 30s --wait-start "$TMPD/sgate.$line"
    sv=$BG_PID
    # the tracer looks at /proc/PID/exe: only once the service runs (not the shell's fork)
    wait_exec "$sv" "$bin" || not_ok "$L: the service started"
    start_bg "str.$line" "$TRACER" --pid "$sv" -d 2s -q -o "$TMPD/sv$line.json"
    st=$BG_PID
    wait_for_line "$TMPD/str.$line.err" attached 30 ||
        { not_ok "$L: tracer attached to the service"; head -5 "$TMPD/str.$line.err"; }
    touch "$TMPD/sgate.$line"
    check "$L: while attached, the service's event_batch semaphores are raised" wait_sem "$sv" 4 10
    wait_exit "$st" 120
    check "$L: the service was traced (polls > 0)" test "$(jqr "$TMPD/sv$line.json" .totals.polls)" -gt 0
    check "$L: the service still runs" kill -0 "$sv"
    check_eq "$L: after the tracer exits, every tokio semaphore of the live service is 0" 0 "$(sem_total "$sv")"
    stop_pid "$sv"

    wait_exit "$lp" 30
    check_eq "$L: long-poll process exit 0" 0 "$RC"
    wait_exit "$ltr" 120
    R="$TMPD/lp$line.json"
    check "$L: the report has the 6 s poll as a long_poll at its site" \
        test "$(jqr "$R" "[.findings[] | select(.kind == \"long_poll\" and (.location // \"\" | test(\"workload.rs:$LP_LINE:\")) and .value_ns >= 5900000000)] | length")" = 1
    check "$L: and saw it in progress before it ended" test "$(jqr "$R" .capture.batch.polls_seen_in_progress)" -ge 1

    # ---- 3. sampling ----
    N=1000 M=4
    counted "s$line" "$bin" --sample-rate 10 -- yield-workload --tasks $N --yields $M --workers 2
    R="$TMPD/s$line.json"
    check_eq "$L: sampled: capture.sample_rate 10" 10 "$(jqr "$R" .capture.sample_rate)"
    traced=$(jqr "$R" "[.tasks[] | $YSITE] | length")
    # binomial(1000, 1/10): mean 100, sd 9.5; ±4 sd
    check "$L: sampled: tasks traced at the yield site ($traced) within 100 ± 38" \
        test "$traced" -ge 62 -a "$traced" -le 138
    check_eq "$L: sampled: every traced task has its whole life (spawn seen, $((M + 1)) polls = yields + 1, completed)" 0 \
        "$(jqr "$R" "[.tasks[] | $YSITE | select((.spawn_seen | not) or .polls != $((M + 1)) or .yields.yield_now != $M or .termination != \"completed\")] | length")"
    for pk in task_spawn:spawns task_poll_begin:polls waker_wake:wakes task_terminate:terminations; do
        p=${pk%%:*} k=${pk#*:}
        check_eq "$L: sampled: totals.$k exact (= bpftrace's $p)" "$(bt_count "s$line" "$p")" "$(jqr "$R" ".totals.$k")"
    done
    check "$L: sampled: analyzed polls are fewer than the total" \
        test "$(jqr "$R" .totals.analyzed.polls)" -lt "$(jqr "$R" .totals.polls)"
    check_eq "$L: sampled: sites say so" 10 "$(jqr "$R" "[.spawn_sites[] | $YSITE | .sample_rate] | first")"
done
[ ${#missing[@]} = 0 ] || { [ "$TESTS_FAILED" = 0 ] || finish;
    skip_test "usdt sample-service builds missing: ${missing[*]} (make builds them)"; }
finish
