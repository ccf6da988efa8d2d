#!/bin/bash
# Intent: lost events invent no findings. Two processes of the sample service, traced together
# (--binary, per-event capture, one 64 KiB ring): B runs a spawn storm (bursts of thousands of
# tiny tasks), A a planted stall (stalled_task: a task waiting on a channel whose sender never
# sends), started half a second apart (behind gates the test opens once the tracer has attached)
# so that A's stalls are not spawned in B's bursts. The ring
# is forced to drop. The report counts the drops, sets aside the findings lost events could
# explain (findings_set_aside > 0: BPF names the task and event type of every failed
# reservation), lists no stalled / never_yields / lost_waker finding but at the planted stall's
# spawn site — and still finds A's planted stall. The same run with a 256 MiB ring drops
# nothing and sets nothing aside. The advice says what would lose less.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
need_sample 1.53 usdt; bin=$SAMPLE
stall_loc=$(loc_of stalled_task)
# --binary traces every process of a path: a private copy, so that nothing else is traced
mkdir -p "$TMPD/bin"
cp "$bin" "$TMPD/bin/sample-service"
own="$TMPD/bin/sample-service"

run() {  # run LABEL RING
    # Both services wait at a gate until the tracer has attached: A spawns its stalls (one a
    # second, five at most) from its start, and a tracer attaching late on a loaded machine saw
    # none of their spawns. A's gate opens first, B's half a second after A listens.
    rm -f "$TMPD/go.a.$1" "$TMPD/go.b.$1"
    start_bg "a.$1" "$own" serve --workers 2 --pathology stalled_task --duration 30s --wait-start "$TMPD/go.a.$1"
    local pa=$BG_PID
    start_bg "b.$1" "$own" serve --workers 2 --pathology spawn_storm --duration 30s --wait-start "$TMPD/go.b.$1"
    local pb=$BG_PID
    wait_exec "$pa" "$own" || not_ok "$1: service A started"
    wait_exec "$pb" "$own" || not_ok "$1: service B started"
    M0=$(mono_ns)
    start_bg "tr.$1" "$TRACER" --binary "$own" -d 6s --capture per-event --probes all --ringbuf-size "$2" \
        -o "$TMPD/$1.json"
    local tp=$BG_PID
    wait_for_line "$TMPD/tr.$1.err" 'attached' 60 || not_ok "$1: tracer attached"
    M1=$(mono_ns)
    touch "$TMPD/go.a.$1"
    wait_for_line "$TMPD/a.$1.out" "listening on" 20 || not_ok "$1: service A started"
    sleep 0.5
    touch "$TMPD/go.b.$1"
    wait_for_line "$TMPD/b.$1.out" "listening on" 20 || not_ok "$1: service B started"
    wait_exit "$tp" 120
    check_eq "$1: tracer exit 0" 0 "$RC"
    # the capture starts once attached: on CLOCK_MONOTONIC (read by python), between the
    # tracer's start and its "attached" line
    local ms; ms=$(jqr "$TMPD/$1.json" .capture.monotonic_start_ns)
    check "$1: capture.monotonic_start_ns between the tracer's start and 'attached' ($M0 ≤ $ms ≤ $M1)" \
        test "$M0" -le "${ms:-0}" -a "${ms:-0}" -le "$M1"
    cp "$TMPD/tr.$1.out" "$TMPD/$1.out"
    PA=$pa
    stop_pid "$pa"; stop_pid "$pb"
}
planted() {  # planted FILE: A's stall findings at the planted site
    jq --arg l "$stall_loc" --arg a "$PA" '[.findings[] | select((.kind == "stalled" or .kind == "lost_waker") and .pid == ($a | tonumber) and (.location // "" | endswith($l)))] | length' "$1"
}
run small 64K
R="$TMPD/small.json"
check "small ring: events were dropped ($(jqr "$R" .totals.drops))" test "$(jqr "$R" .totals.drops)" -gt 1000
check "small ring: findings set aside ($(jqr "$R" .totals.findings_set_aside))" test "$(jqr "$R" .totals.findings_set_aside)" -gt 0
check_eq "small ring: every stalled / never_yields / lost_waker finding listed is at the planted stall's site" "" \
    "$(jq -r --arg l "$stall_loc" '[.findings[] | select(.kind == "stalled" or .kind == "never_yields" or .kind == "lost_waker") | select(.location // "" | endswith($l) | not) | "\(.kind)@\(.location)"] | unique | join(" ")' "$R")"
check "small ring: A's planted stall is still found ($(planted "$R"))" test "$(planted "$R")" -gt 0
check "small ring: the advice names a larger ring" bash -c "jq -r .data_loss.advice '$R' | grep -q -- '--ringbuf-size'"
check "small ring: the summary says findings were set aside" grep -q "set aside: events of" "$TMPD/small.out"
read -r lo ls <<< "$(jqr "$R" '"\(.why.offcpu_periods_lost) \(.why.cpu_samples_lost)"')"
echo "# small ring: off-CPU periods lost $lo, CPU samples lost $ls"
# the sched programs' records meet the same full ring (668 off-CPU periods lost in one run here)
check "small ring: off-CPU periods lost too, counted ($lo)" test "${lo:-0}" -gt 0
check "small ring: the summary names the $lo off-CPU periods and $ls samples the ring had no room for" \
    grep -q "the ring had no room for $lo off-CPU periods\? and $ls CPU samples\?:" "$TMPD/small.out"
run big 256M
R="$TMPD/big.json"
check_eq "big ring: nothing dropped, nothing set aside, no advice, no off-CPU period or sample lost" "0 0 null 0 0" \
    "$(jqr "$R" '"\(.totals.drops) \(.totals.findings_set_aside) \(.data_loss.advice) \(.why.offcpu_periods_lost) \(.why.cpu_samples_lost)"')"
check "big ring: A's planted stall found" test "$(planted "$R")" -gt 0
finish
