#!/bin/bash
# Intent: --probes and --detect choose what is attached. `--probes poll` attaches exactly
# task_poll_begin/end (only their semaphores are raised in the traced process; the report lists
# them; polls are exact, tasks fall under "spawned before the trace"). Without lost_waker in
# --detect, waker_clone/drop are not attached (their semaphores stay 0) and the task whose waker
# was lost is reported as stalled with an unknown waker count instead. `--detect none` reports no
# findings while the figures stay exact.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer

run() {  # run LABEL TRACER-OPTIONS…: traces a fixture run; leaves semaphores in $TMPD/LABEL.sem
    local label=$1; shift
    rm -f "$TMPD/go.$label"
    start_bg "f.$label" "$FAKE" --go "$TMPD/go.$label" --hold --linger-ms 400
    local fp=$BG_PID
    wait_for_line "$TMPD/f.$label.out" '^pid ' 10
    start_bg "t.$label" "$TRACER" --pid "$fp" -o "$TMPD/$label.json" --stall-threshold 200ms "$@"
    local tp=$BG_PID
    wait_for_line "$TMPD/t.$label.err" attached 20 || not_ok "$label: attached"
    sem_values "$fp" > "$TMPD/$label.sem"
    touch "$TMPD/go.$label"
    wait_for_line "$TMPD/f.$label.out" '^done$' 20
    sleep 0.3
    kill -INT "$tp"; wait_exit "$tp" 120
    check_eq "$label: exit 0" 0 "$RC"
    E="$TMPD/f.$label.out" R="$TMPD/$label.json"
    stop_pid "$fp"
}
sem_of() { sed -n "s/^$2=//p" "$TMPD/$1.sem"; }

run poll --probes poll
check_eq "--probes poll: attached exactly the poll probes" "task_poll_begin task_poll_end" \
    "$(jqr "$R" '.capture.probes_attached | join(" ")')"
check_eq "--probes poll: only their semaphores raised" \
    "$(for p in "${PROBES_REQUIRED[@]}"; do [[ $p == task_poll_* ]] && echo "$p=1" || echo "$p=0"; done | sort | tr '\n' ' ' | sed 's/ $//')" \
    "$(tr '\n' ' ' < "$TMPD/poll.sem" | sed 's/ $//')"
check_eq "--probes poll: polls exact" "$(expect_of "$E" polls)" "$(jqr "$R" .totals.polls)"
check_eq "--probes poll: no wake/spawn events" "0 0" "$(jqr "$R" '"\(.totals.wakes) \(.totals.spawns)"')"
check_eq "--probes poll: tasks under the 'spawned before the trace' site" true \
    "$(jqr "$R" '.spawn_sites | length == 1 and .[0].spawned_before_trace and .[0].location == null')"
# without task_spawn the spawn_blocking task's kind is unknown, so its 30ms poll counts too
check_eq "--probes poll: long_poll still found (3: kind unknown without spawns)" 3 \
    "$(jqr "$R" '[.findings[] | select(.kind == "long_poll")] | length')"

run nolost --detect long_poll,stalled,never_yields,self_wake
check_eq "no lost_waker: waker_clone/drop not attached" "" \
    "$(jqr "$R" '.capture.probes_attached[] | select(startswith("waker_c") or startswith("waker_d"))')"
check_eq "no lost_waker: their semaphores stay 0" "0 0 1" \
    "$(sem_of nolost waker_clone) $(sem_of nolost waker_drop) $(sem_of nolost waker_wake)"
check_eq "no lost_waker: the lost-waker task is reported stalled, waker count unknown" "stalled null" \
    "$(jqr "$R" ".findings[] | select(.location == \"$(site_of lost_waker)\") | \"\(.kind) \(.live_wakers)\"")"
check_eq "no lost_waker: no lost_waker finding" 0 "$(jqr "$R" '[.findings[] | select(.kind == "lost_waker")] | length')"

run none --detect none
check_eq "--detect none: no findings" 0 "$(jqr "$R" '.findings | length')"
check_eq "--detect none: all probes but waker clone/drop attached" 8 "$(jqr "$R" '.capture.probes_attached | length')"
check_eq "--detect none: polls exact" "$(expect_of "$E" polls)" "$(jqr "$R" .totals.polls)"
finish
