#!/bin/bash
# Intent: lock holders are named and deadlocks are one finding each, naming every task and
# primitive, in every output. The subject is `sample-service locks` (usdt builds of the three
# Tokio lines, batched capture; 1.53 also per-event), which prints its tasks' ids and its locks'
# own addresses and sizes, started behind --wait-start with the tracer attached:
#   deadlock_a/deadlock_b     two tasks over two Mutexes m1/m2 taken in opposite orders
#   deadlock_join_a/b/c       a holds Mutex m and awaits b's JoinHandle, b awaits c's, c waits
#                             for m
#   lock_holder               holds Mutex mx, RwLock rw (write) and Semaphore sem's only permit
#                             for 2.5 s; mutex_waiter, rwlock_waiter, semaphore_waiter wait on
#                             one each from 100 ms on
#   lock_ordered ×3           two Mutexes in one order under contention (each holds both 1 s
#                             asleep: the last waits ~2 s, past the stall threshold)
# Checked against what the program printed (ids, addresses), not against the tracer:
#  - exactly two `deadlock` findings: one whose cycle is {deadlock_a, deadlock_b}, each waiting
#    on a tokio::sync::Mutex held by the other, the addresses inside m1 and m2 as the program
#    printed them (the semaphore lies inside the Mutex); one whose cycle is the three join
#    tasks: two JoinHandle waits (on the next member) and one Mutex wait inside m, held by
#    deadlock_join_a; every member at its SPAWN-SITE line; no member also `stalled`;
#  - each waiter of lock_holder is `stalled`, stall_reason `lock_held`, held_by lock_holder's id
#    and site, primitive Mutex / RwLock (mode write) / Semaphore, its wait's address inside the
#    lock the program printed;
#  - no deadlock naming the lock_ordered tasks or lock_holder, no finding at lock_holder; the
#    lock_ordered tasks' only findings are `stalled` (`lock_held`) by another of them, at least
#    one (the contention went past the threshold, so the deadlock detector looked at them);
#  - bpftrace (an observer we did not write), attached to the same process's task_lock probe on
#    the 1.53 batched run, counts the acquires (ops 0-3), releases (4) and forgets (5): the
#    report's totals.lock_events say the same (those a poll took and gave back, which batched
#    capture folds, included);
#  - the terminal, report.html, the Perfetto trace (an instant per deadlock naming its tasks)
#    and the metrics (promtool-checked scrape: tokio_trace_findings_total{kind="deadlock"} 2)
#    say the same; a flight recorder with --trigger deadlock dumps once, on a deadlock.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
command -v promtool > /dev/null || die_test "promtool missing (Debian package prometheus: make deps)"

# run LABEL BIN CAPTURE: sets R (JSON), W (program output), S (terminal), H (html), T (trace),
# M (a metrics scrape taken once both deadlocks were found)
run() {
    local label=$1 bin=$2 cap=$3 wp tp port i
    rm -f "$TMPD/gate.$label"
    start_bg "w.$label" "$bin" locks --duration 9s --wait-start "$TMPD/gate.$label"
    wp=$BG_PID
    wait_exec "$wp" "$bin" || not_ok "$label: program started"
    # bpftrace (the independent count) attaches first: no lock event can happen before the
    # gate, and the gate opens as soon as the tracer is attached, so that the workload's lock
    # events all fall inside the tracer's 6 s (bpftrace's attach, a few seconds on a busy
    # machine, used to eat into them and leave the last releases after the capture's end)
    BT=""
    if [ "$label" = 1.53.batched ]; then
        bpftrace -p "$wp" -e "usdt:$bin:tokio:task_lock { @ops[arg1 <= 3 ? 0 : arg1] = count(); }
            BEGIN { printf(\"ready\\n\"); }" > "$TMPD/bt.$label" 2>&1 &
        BT=$!; track_pid "$BT"
        wait_for_line "$TMPD/bt.$label" '^ready' 30 || not_ok "$label: bpftrace attached"
    fi
    port=$(free_port)
    start_bg "tr.$label" "$TRACER" --pid "$wp" --capture "$cap" --duration 6s \
        --metrics-addr "127.0.0.1:$port" --trace "$TMPD/$label.trace.json" \
        -o "$TMPD/$label.json" -o "$TMPD/$label.html"
    tp=$BG_PID
    wait_for_line "$TMPD/tr.$label.err" attached 30 || not_ok "$label: tracer attached"
    touch "$TMPD/gate.$label"
    wait_for_line "$TMPD/w.$label.out" '^locks pid=[0-9]+ ready$' 20 || not_ok "$label: program ready"
    M="$TMPD/$label.prom"
    : > "$M"
    for i in $(seq 50); do
        curl -sf --max-time 3 -o "$M" "http://127.0.0.1:$port/metrics" &&
            grep -q '^tokio_trace_findings_total{kind="deadlock"} 2$' "$M" && break
        sleep 0.1
    done
    wait_exit "$tp" 120
    check_eq "$label: tracer exit 0" 0 "$RC"
    if [ -n "$BT" ]; then # before the program's shutdown drops the deadlocked tasks' guards
        bt_stop "$BT" "$label"
        check_eq "$label: lock events as bpftrace counted them (acquires releases forgets)" \
            "$(for k in 0 4 5; do sed -n "s/^@ops\[$k\]: \([0-9]*\)$/\1/p" "$TMPD/bt.$label" | grep . || echo 0; done | tr '\n' ' ')" \
            "$(jq -r '.totals.lock_events | "\(.acquires) \(.releases) \(.forgets) "' "$TMPD/$label.json")"
    fi
    stop_pid "$wp"
    R="$TMPD/$label.json" W="$TMPD/w.$label.out" S="$TMPD/tr.$label.out" H="$TMPD/$label.html"
    T="$TMPD/$label.trace.json"
}
idof() { sed -n "s/^locks task=$1 id=\([0-9]*\)$/\1/p" "$W" | head -1; }
ids_of() { sed -n "s/^locks task=$1 id=\([0-9]*\)$/\1/p" "$W" | sort -n | tr '\n' ' ' | sed 's/ $//'; }
# lock NAME: "ADDR SIZE" (decimal) of a lock the program printed
lock() { sed -n "s/^locks lock=$1 addr=0x\([0-9a-f]*\) size=\([0-9]*\)$/\1 \2/p" "$W" | { read -r a s; echo "$((16#$a)) $s"; }; }
# inside NAME HEXADDR: the address lies in the lock NAME's bytes
inside() { local a s x; read -r a s <<< "$(lock "$1")"; x=$((16#${2#0x})); [ "$x" -ge "$a" ] && [ "$x" -lt $((a + s)) ]; }
DL='.findings[] | select(.kind == "deadlock")'

check_run() {
    local L=$1 pair trio a b j r m members
    check_eq "$L: two deadlock findings" 2 "$(jqr "$R" "[$DL] | length")"
    a=$(idof deadlock_a); b=$(idof deadlock_b)
    pair="$DL | select([.cycle[].task_id] | sort == ([$a, $b] | sort))"
    check_eq "$L: one deadlock is deadlock_a ($a) and deadlock_b ($b), each on a Mutex the other holds" \
        "$a:tokio::sync::Mutex:$b $b:tokio::sync::Mutex:$a" \
        "$(jqr "$R" "[$pair | .cycle[] | \"\(.task_id):\(.waits_on.primitive):\(.waits_on.held_by)\"] | sort | join(\" \")")"
    check_eq "$L: … at their spawn sites" "$(loc_of deadlock_a) $(loc_of deadlock_b)" \
        "$(jqr "$R" "[$pair | .cycle[] | {i: .task_id, l: .location}] | sort_by(.i) | map(.l) | join(\" \")" |
           sed 's|[^ ]*/src/|src/|g')"
    m=$(jqr "$R" "[$pair | .cycle[] | select(.task_id == $a) | .waits_on.address] | first")
    check "$L: … deadlock_a waits inside m2 ($m)" inside m2 "$m"
    m=$(jqr "$R" "[$pair | .cycle[] | select(.task_id == $b) | .waits_on.address] | first")
    check "$L: … deadlock_b waits inside m1 ($m)" inside m1 "$m"
    j="$(idof deadlock_join_a) $(idof deadlock_join_b) $(idof deadlock_join_c)"
    trio="$DL | select([.cycle[].task_id] | sort == ([${j// /,}] | sort))"
    check_eq "$L: the other is the three join tasks ($j): two JoinHandles and one Mutex held by deadlock_join_a" \
        "$(printf '%s\n' "join:$(idof deadlock_join_b)" "join:$(idof deadlock_join_c)" "semaphore:tokio::sync::Mutex:$(idof deadlock_join_a)" | sort | tr '\n' ' ' | sed 's/ $//')" \
        "$(jqr "$R" "[$trio | .cycle[] | .waits_on | if .kind == \"join\" then \"join:\(.task_id)\" else \"\(.kind):\(.primitive):\(.held_by)\" end] | sort | join(\" \")")"
    m=$(jqr "$R" "[$trio | .cycle[] | select(.waits_on.kind == \"semaphore\") | .waits_on.address] | first")
    check "$L: … its Mutex wait inside m ($m)" inside m "$m"
    check_eq "$L: … at their spawn sites" "$(loc_of deadlock_join_a) $(loc_of deadlock_join_b) $(loc_of deadlock_join_c)" \
        "$(for r in deadlock_join_a deadlock_join_b deadlock_join_c; do jqr "$R" "[$trio | .cycle[] | select(.task_id == $(idof $r)) | .location] | first"; done | sed 's|.*/src/|src/|' | tr '\n' ' ' | sed 's/ $//')"
    members="$a $b $j"
    check_eq "$L: no deadlock member is also stalled" "" \
        "$(jqr "$R" "[.findings[] | select(.kind == \"stalled\" and ([.task_id] | inside([${members// /,}]))) | .task_id] | join(\" \")")"
    for r in mutex_waiter:mx:tokio::sync::Mutex:null rwlock_waiter:rw:tokio::sync::RwLock:write semaphore_waiter:sem:tokio::sync::Semaphore:null; do
        IFS=: read -r role lk prim mode <<< "${r//::/#}"
        prim=${prim//#/::}
        check_eq "$L: $role: stalled on the $prim lock_holder holds" \
            "stalled lock_held $(idof lock_holder) $(loc_of lock_holder) $prim $mode" \
            "$(jqr "$R" ".findings[] | select(.task_id == $(idof "$role") and .kind == \"stalled\") | \"\(.kind) \(.stall_reason) \(.held_by.task_id) \(.held_by.location // \"-\" | sub(\".*/src/\"; \"src/\")) \(.held_by.primitive) \(.held_by.mode)\"")"
        m=$(jqr "$R" "[.findings[] | select(.task_id == $(idof "$role")) | .waiting_for[] | select(.kind == \"semaphore\") | .address] | first")
        check "$L: … its wait inside $lk ($m)" inside "$lk" "$m"
    done
    local ord; ord=$(ids_of lock_ordered | tr ' ' ,)
    check_eq "$L: the holder: no finding" "" \
        "$(jqr "$R" "[.findings[] | select(.task_id == $(idof lock_holder)) | .kind] | join(\" \")")"
    check_eq "$L: the ordered tasks: only stalled lock_held by another of them, at least one" "ok" \
        "$(jqr "$R" "[.findings[] | select([.task_id] | inside([$ord]))] | if length > 0 and all(.kind == \"stalled\" and .stall_reason == \"lock_held\" and ([.held_by.task_id] | inside([$ord])) and .held_by.task_id != .task_id) then \"ok\" else map(\"\(.task_id):\(.kind):\(.stall_reason):\(.held_by.task_id)\") | join(\" \") end")"
    check_eq "$L: no deadlock names them" "" \
        "$(jqr "$R" "[$DL | .cycle[].task_id | select([.] | inside([$(ids_of lock_ordered | tr ' ' ,),$(idof lock_holder)]))] | join(\" \")")"
    check "$L: terminal: the two-Mutex deadlock in words" \
        grep -qE "deadlock of 2 tasks of pid [0-9]+ for .*task ($a|$b) spawned at .* waits on tokio::sync::Mutex 0x[0-9a-f]+ held by task ($a|$b)" "$S"
    check "$L: terminal: a waiter names its holder" \
        grep -qE "waiting on tokio::sync::RwLock 0x[0-9a-f]+ \(write\) held by task $(idof lock_holder), spawned at .*$(loc_of lock_holder | sed 's/[.]/[.]/g')" "$S"
    check "$L: report.html lists both deadlocks" \
        test "$(grep -o 'class="k-deadlock' "$H" | wc -l)" -ge 1 -a "$(grep -c 'deadlock of [23] tasks' "$H")" -ge 1
    check_eq "$L: Perfetto: one instant per deadlock, naming its tasks" \
        "$(printf '%s\n' "$a $b" "$j" | while read -r x; do echo "$x" | tr ' ' '\n' | sort -n | tr '\n' ' '; echo; done | sort | tr '\n' '|')" \
        "$(jq -r '.traceEvents[] | select(.ph == "i" and .cat == "finding" and .args.kind == "deadlock") | .args.tasks | sort | map(tostring) | join(" ")' "$T" | sed 's/$/ /' | sort | tr '\n' '|')"
    check "$L: metrics: promtool accepts the scrape" bash -c "promtool check metrics < '$M'"
    check "$L: metrics: findings_total{kind=deadlock} 2" grep -q '^tokio_trace_findings_total{kind="deadlock"} 2$' "$M"
}

over_lines "${DEADLOCK_LINES:-1.24 1.43 1.53}" run check_run

# the flight recorder dumps on a deadlock: one dump, its trigger the deadlock
bin=$(sample_bin 1.53 usdt)
rm -f "$TMPD/gate.fr"; mkdir -p "$TMPD/dumps"
start_bg w.fr "$bin" locks --duration 9s --wait-start "$TMPD/gate.fr"
wp=$BG_PID
wait_exec "$wp" "$bin" || not_ok "flight: program started"
start_bg tr.fr "$TRACER" --pid "$wp" --flight-recorder 30s --trigger deadlock --post-trigger 200ms \
    --dump-dir "$TMPD/dumps"
tp=$BG_PID
wait_for_line "$TMPD/tr.fr.err" attached 30 || not_ok "flight: tracer attached"
touch "$TMPD/gate.fr"
W="$TMPD/w.fr.out"
wait_for_line "$W" '^locks pid=[0-9]+ ready$' 20 || not_ok "flight: program ready"
for i in $(seq 100); do ls "$TMPD"/dumps/*.json > /dev/null 2>&1 && break; sleep 0.1; done
sleep 1
stop_pid "$tp" INT
stop_pid "$wp"
D=$(ls "$TMPD"/dumps/*-deadlock.json 2>/dev/null | head -1)
check "flight: a dump named by its trigger (deadlock)" test -n "$D"
if [ -n "$D" ]; then
    check_eq "flight: its trigger is a deadlock of a cycle's first member" "deadlock true" \
        "$(jq -r '"\(.flight_recorder.trigger.kind) \([.findings[] | select(.kind == "deadlock") | .trigger] | any)"' "$D")"
    check "flight: the dump's deadlock names deadlock_a or a join task" \
        test -n "$(jq -r --argjson ids "[$(idof deadlock_a),$(idof deadlock_b),$(idof deadlock_join_a),$(idof deadlock_join_b),$(idof deadlock_join_c)]" \
            '[.findings[] | select(.kind == "deadlock") | .cycle[].task_id | select(. as $x | $ids | index($x))] | first // empty' "$D")"
fi
finish
