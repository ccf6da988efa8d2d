#!/bin/bash
# Intent: lost events invent no findings. The sample service runs a spawn storm (bursts of
# thousands of tiny tasks) and a planted stall (stalled_task: a task waiting on a channel whose
# sender never sends); a per-event capture with a 64 KiB ring is forced to drop. The report
# counts the drops, sets aside the findings lost events could explain (findings_set_aside > 0:
# BPF names the task of every failed reservation), keeps every stalled/never_yields/lost_waker
# finding it still lists at the planted stall's spawn site — and still finds the planted stall.
# The same run with a 256 MiB ring drops nothing and sets nothing aside. The advice says what
# would lose less.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
bin=$(sample_bin 1.53 usdt)
need_file "$bin" "usdt sample service (1.53)"
stall_loc=$(loc_of stalled_task)

run() {  # run LABEL RING
    start_bg "svc.$1" "$bin" serve --workers 2 --pathology spawn_storm,stalled_task --duration 30s
    local sp=$BG_PID
    wait_for_line "$TMPD/svc.$1.out" "listening on" 20 || not_ok "$1: service started"
    "$TRACER" --pid "$sp" -d 6s --capture per-event --probes all --ringbuf-size "$2" -o "$TMPD/$1.json" \
        > "$TMPD/$1.out" 2> "$TMPD/$1.err"
    check_eq "$1: tracer exit 0" 0 "$?"
    stop_pid "$sp"
}
run small 64K
R="$TMPD/small.json"
check "small ring: events were dropped ($(jqr "$R" .totals.drops))" test "$(jqr "$R" .totals.drops)" -gt 1000
check "small ring: findings set aside ($(jqr "$R" .totals.findings_set_aside))" test "$(jqr "$R" .totals.findings_set_aside)" -gt 0
check_eq "small ring: every stalled / never_yields / lost_waker finding listed is at the planted stall's site" "" \
    "$(jq -r --arg l "$stall_loc" '[.findings[] | select(.kind == "stalled" or .kind == "never_yields" or .kind == "lost_waker") | select(.location // "" | endswith($l) | not) | "\(.kind)@\(.location)"] | unique | join(" ")' "$R")"
check "small ring: the planted stall is still found" \
    test "$(jq --arg l "$stall_loc" '[.findings[] | select((.kind == "stalled" or .kind == "lost_waker") and (.location // "" | endswith($l)))] | length' "$R")" -gt 0
check "small ring: the advice names a larger ring" bash -c "jq -r .data_loss.advice '$R' | grep -q -- '--ringbuf-size'"
check "small ring: the summary says findings were set aside" grep -q "set aside: events of" "$TMPD/small.out"
run big 256M
R="$TMPD/big.json"
check_eq "big ring: nothing dropped, nothing set aside, no advice" "0 0 null" \
    "$(jqr "$R" '"\(.totals.drops) \(.totals.findings_set_aside) \(.data_loss.advice)"')"
check "big ring: the planted stall found" \
    test "$(jq --arg l "$stall_loc" '[.findings[] | select((.kind == "stalled" or .kind == "lost_waker") and (.location // "" | endswith($l)))] | length' "$R")" -gt 0
finish
