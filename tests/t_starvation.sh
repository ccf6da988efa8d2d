#!/bin/bash
# Intent: runtime starvation is one finding named by its cause, its victims are not `stalled`,
# and tasks that wait for work by design are no finding. The subject is `sample-service starve`
# (usdt builds of the three Tokio lines; 1.53 also in per-event capture), started behind
# --wait-start with the tracer attached: a small service of the usual shapes — a shutdown waiter
# on a Notify, an mpsc job worker, a broadcast and a watch subscriber (their senders alive), a
# 100 ms ticker and a 300 ms sleeper — whose two workers are then blocked at once for 2.5 s by
# two tasks (block_a, block_b). Checked against what the program measured itself (its own
# CLOCK_MONOTONIC readings of the blocking, its timers' worst lateness), not against the tracer:
#  - exactly one `starvation` finding: 2 worker threads, held by block_a's and block_b's polls,
#    starting when the later of the two blockings began (±100 ms) and lasting the overlap the
#    program measured (−20 ms … +200 ms: the polls began a little before the sleeps);
#  - its victims: at least the ticker's and the sleeper's timers, the worst as late as the
#    program measured (±150 ms);
#  - no `stalled` finding anywhere, and no finding at all at the six service tasks; the four
#    subscribers' waits are class `idle` (tasks[].wait.class), counted in the terminal's
#    "Idle by design" line; the terminal and report.html name the episode.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
. "$(dirname "$0")/report_lib.sh"
need_root
need_tracer

# run LABEL BIN CAPTURE: sets R (JSON), W (program output), S (terminal), H (html)
run() {
    local label=$1 bin=$2 cap=$3 wp tp
    rm -f "$TMPD/gate.$label"
    start_bg "w.$label" "$bin" starve --duration 9s --wait-start "$TMPD/gate.$label"
    wp=$BG_PID
    wait_exec "$wp" "$bin" || not_ok "$label: program started"
    start_bg "tr.$label" "$TRACER" --pid "$wp" --capture "$cap" --duration 6s \
        -o "$TMPD/$label.json" -o "$TMPD/$label.html"
    tp=$BG_PID
    wait_for_line "$TMPD/tr.$label.err" attached 30 || not_ok "$label: tracer attached"
    touch "$TMPD/gate.$label"
    wait_for_line "$TMPD/w.$label.out" '^starve pid=[0-9]+ ready$' 20 || not_ok "$label: program ready"
    wait_exit "$tp" 120
    check_eq "$label: tracer exit 0" 0 "$RC"
    wait_for_line "$TMPD/w.$label.out" '^starve overlap_ms=' 20 || not_ok "$label: the blocking ended"
    stop_pid "$wp"
    R="$TMPD/$label.json" W="$TMPD/w.$label.out" S="$TMPD/tr.$label.out" H="$TMPD/$label.html"
}
idof() { sed -n "s/^starve task=$1 id=\([0-9]*\)$/\1/p" "$W"; }
prog() { sed -n "s/^starve .*\b$1=\([0-9]*\).*/\1/p" "$W" | head -1; }
findings_of() { jqr "$R" "[.findings[] | select(.task_id == $(idof "$1")) | .kind] | sort | join(\",\")"; }
STARVE='.findings[] | select(.kind == "starvation")'

check_run() {
    local L=$1 ov a0 b0 s0 ts ref late prog_late
    ov=$(prog overlap_ms)
    check "$L: the program's blockers held both workers at once for 2 s or more (${ov} ms)" \
        test "${ov:-0}" -ge 2000
    echo "# $L: drops $(jqr "$R" '.totals.drops'), findings set aside $(jqr "$R" '.totals.findings_set_aside') ($(jqr "$R" '[.data_loss.findings_set_aside[]? | .kind] | join(",")'))"
    check_eq "$L: one starvation finding" 1 "$(jqr "$R" "[$STARVE] | length")"
    check_eq "$L: … over the runtime's 2 worker threads, held by block_a and block_b" \
        "2 $(printf '%s\n' "$(idof block_a)" "$(idof block_b)" | sort -n | tr '\n' ' ')" \
        "$(jqr "$R" "$STARVE | \"\(.worker_threads) \([.held_by[].task_id] | sort | map(tostring) | join(\" \")) \"")"
    a0=$(sed -n 's/^starve blocked role=block_a start_ns=\([0-9]*\).*/\1/p' "$W")
    b0=$(sed -n 's/^starve blocked role=block_b start_ns=\([0-9]*\).*/\1/p' "$W")
    s0=$(( a0 > b0 ? a0 : b0 ))
    ts=$(jqr "$R" "[.capture.monotonic_start_ns + ($STARVE | .first_at_ns)] | first")
    check "$L: … from when the later blocking began, by the program's clock (±100 ms: $(( (${ts:-0} - s0) / 1000000 )) ms)" \
        test "${ts:-0}" -gt $(( s0 - 100000000 )) -a "${ts:-0}" -lt $(( s0 + 100000000 ))
    ref=$(jqr "$R" "$STARVE | .value_ns / 1000000 | floor")
    check "$L: … lasting the overlap the program measured ($ref ms vs ${ov} ms, −20 … +200)" \
        test "${ref:-0}" -ge $(( ${ov:-0} - 20 )) -a "${ref:-0}" -le $(( ${ov:-0} + 200 ))
    check "$L: … its victims: the ticker's and the sleeper's timers at least ($(jqr "$R" "$STARVE | .victims.timers_late"))" \
        test "$(jqr "$R" "$STARVE | .victims.timers_late")" -ge 2
    late=$(jqr "$R" "$STARVE | .victims.timer_late_max_ns / 1000000 | floor")
    prog_late=$(( $(prog ticker) > $(prog sleeper) ? $(prog ticker) : $(prog sleeper) ))
    check "$L: … the worst as late as the program measured (${late} ms vs ${prog_late} ms, ±150)" \
        test "${late:-0}" -ge $(( prog_late - 150 )) -a "${late:-0}" -le $(( prog_late + 150 ))
    check_eq "$L: no stalled finding anywhere" "" \
        "$(jqr "$R" '[.findings[] | select(.kind == "stalled") | "\(.task_id)@\(.location) \(.stall_reason)"] | join(" ")')"
    for role in shutdown jobs news config ticker sleeper; do
        check_eq "$L: $role: no finding" "" "$(findings_of "$role")"
    done
    check_eq "$L: the four subscribers wait idle by design" \
        "shutdown=notify/idle jobs=mpsc_recv/idle news=broadcast_recv/idle config=notify/idle" \
        "$(for role in shutdown jobs news config; do printf '%s=%s ' "$role" "$(jqr "$R" ".tasks[] | select(.task_id == $(idof "$role")) | \"\(.wait.kind)/\(.wait.class)\"")"; done | sed 's/ $//')"
    check "$L: terminal: the episode in words" \
        grep -q 'runtime starvation: all 2 worker threads of pid [0-9]* held at once for .* by long polls (task' "$S"
    check "$L: terminal: the subscribers idle by design" \
        grep -q '^Idle by design: [0-9]* of them pending for 1s or more on a subscription' "$S"
    check "$L: report.html lists the episode" grep -q 'class="k-starvation' "$H"
}

over_lines "${STARVE_LINES:-1.24 1.43 1.53}" run check_run
finish
