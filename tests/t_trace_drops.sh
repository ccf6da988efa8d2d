#!/bin/bash
# Intent: a full ring buffer never loses events silently. With a 64 KiB ring drained only once a
# second, a flood of poll_begin/poll_end pairs overflows it: the drops are counted per probe in
# BPF, shown in the terminal summary ("DROPPED EVENTS", with the figures they affect) and in the
# JSON (totals.drops, data_loss.drops_by_probe, data_loss.affected), and for every probe
# events analyzed + drops = probe hits = what the process emitted. A second run with the default
# ring and drain keeps up with the same flood: 0 drops, every event analyzed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer

FLOOD=300000
run_flood() {  # run_flood LABEL TRACER-OPTIONS…
    local label=$1; shift
    rm -f "$TMPD/go.$label"
    start_bg "f.$label" "$FAKE" --go "$TMPD/go.$label" --flood $FLOOD
    local fp=$BG_PID
    wait_for_line "$TMPD/f.$label.out" '^pid ' 10
    start_bg "t.$label" "$TRACER" --pid "$fp" -o "$TMPD/$label.json" "$@"
    local tp=$BG_PID
    wait_for_line "$TMPD/t.$label.err" attached 20 || not_ok "$label: attached"
    touch "$TMPD/go.$label"
    wait_exit "$tp" 60
    check_eq "$label: tracer exit 0 (the process exited)" 0 "$RC"
    cat "$TMPD/f.$label.out"
}

run_flood small --ringbuf-size 64K --drain-interval 1s
R="$TMPD/small.json"
drops=$(jqr "$R" .totals.drops)
echo "small ring: drops=$drops events=$(jqr "$R" .totals.events)"
check "small ring: drops counted ($drops)" test "${drops:-0}" -gt 0
check_eq "small ring: totals.drops = Σ drops_by_probe" "$drops" "$(jqr "$R" '[.data_loss.drops_by_probe[]] | add')"
for p in task_poll_begin task_poll_end; do
    check_eq "small ring: $p probe hits = emitted ($FLOOD)" $FLOOD "$(jqr "$R" ".data_loss.probe_hits.$p")"
done
check_eq "small ring: poll_begin events analyzed + dropped = hits" $FLOOD \
    "$(jqr "$R" '.totals.polls + .data_loss.drops_by_probe.task_poll_begin')"
check_eq "small ring: every event analyzed or counted as dropped" \
    "$(jqr "$R" '[.data_loss.probe_hits[]] | add')" "$(jqr "$R" '.totals.events + .totals.drops')"
check "small ring: JSON names the affected figures" \
    test "$(jqr "$R" '[.data_loss.affected[] | select(.probe == "task_poll_begin") | .figures | contains("polls")] | any')" = true
check "small ring: summary shows the drops" grep -q '^DROPPED EVENTS: [1-9]' "$TMPD/t.small.out"
check "small ring: summary says what task_poll_begin drops affect" grep -qE '^  task_poll_begin +[0-9]+ lost: polls, busy time' "$TMPD/t.small.out"
check "small ring: header line shows the drop count" grep -qE "^events [0-9]+ \\($drops dropped\\)" "$TMPD/t.small.out"

run_flood default
R="$TMPD/default.json"
check_eq "default ring: no drops" 0 "$(jqr "$R" .totals.drops)"
check_eq "default ring: every poll analyzed" $FLOOD "$(jqr "$R" .totals.polls)"
check_eq "default ring: flood site has every poll" $FLOOD \
    "$(jqr "$R" ".spawn_sites[] | select(.location == \"$(site_of flood)\") | .polls")"
finish
