#!/bin/bash
# Intent: the flight recorder (--flight-recorder WINDOW) keeps the last WINDOW and dumps it when
# a trigger fires, as the usual reports, marked — on the usdt sample service (Tokio 1.53,
# batched capture):
#  - SIGUSR1 → a dump (within 5 s, idle) holding the last WINDOW and nothing older: process A
#    runs a yield workload and exits, the window passes, process B runs another and C one
#    60 ms poll (--binary follows them all); the dump holds B's and C's events only, and its
#    tasks, polls and findings equal those of a normal capture (a second tracer, attached the
#    same way, run side by side) restricted to B and C; every format says which trigger made it;
#  - a live analysis on a quiet service (one poll blocked for 6 s, nothing else runs): never_yields
#    fires while the poll still runs (the analysis's clock goes on without batches);
#  - --trigger long_poll with --trigger-cooldown C on the blocking-call pathology: one dump per
#    cooldown (consecutive triggers at least C apart), each holding its triggering poll,
#    marked (JSON finding trigger=true, Perfetto instant event, HTML marker and banner), the
#    other triggers counted as suppressed; a second recorder on the same process at once, with
#    --trigger 'poll>40ms' --trigger exit and a 60 s cooldown: one poll dump, then one when the
#    process exits (ended_by process_exit, status 0);
#  - raw batches at full speed (200 × 30 000 yields, ~24 M events, a 256M ring): nothing lost, the
#    quiet main thread swept, and the dump puts all 6 000 200 polls under the yield tasks' spawn
#    site, none without a site, its probe hits counting them — also with a live analysis
#    (--trigger long_poll), which reads the window behind the ring's copy and then all of it
#    (said when it stops);
#  - a recorder with only SIGUSR1 and crash/exit triggers keeps the batches raw at nice 0 (said
#    when it stops), one with a live analysis keeps them raw too, also at nice 0
#    (docs/flight-recorder.md);
#  - a process killed by SIGSEGV and one aborting on a panic (panic = "abort" behaviour) each
#    produce a dump saying so (ended_by process_crash, the signal), the tracer exits 0; on a
#    kernel without sched_process_exit (TET_TEST_NO_EXIT_TP=1) a warning says so at start and a
#    crash dumps nothing and claims no signal;
#  - --binary follows the service across a restart: a crash of the first process dumps under
#    its PID, a trigger in the second under the second's, each holding its own events only.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
need_sample 1.53 usdt; bin=$SAMPLE

# dumps DIR [SUFFIX]: the dump files of DIR (default: JSON reports), oldest first
dumps() { ls -1tr "$1" 2>/dev/null | grep -E "\\.${2:-json}\$" | grep -v '\.trace\.json$' | sed "s|^|$1/|"; }
# base_of FILE: the dump's base name
base_of() { basename "$1" | sed -E 's/\.(json|html|trace\.json)$//'; }

# --binary follows every process of a path: a private copy, so that no other process of the
# machine (another run of the sample service) is traced too
mkdir -p "$TMPD/bin"
cp "$bin" "$TMPD/bin/sample-service"
own="$TMPD/bin/sample-service"

# ---- SIGUSR1: the last WINDOW, nothing older, the same as a normal capture ----
D="$TMPD/usr1"; mkdir -p "$D"
# --nice 0: the second is the recorder's, not the scheduler's on a loaded machine (nice 10, the
# default, waits behind any busy process)
start_bg fr.usr1 "$TRACER" --binary "$own" --flight-recorder 3s --post-trigger 100ms --nice 0 --dump-dir "$D" -q
FRP=$BG_PID
start_bg normal.usr1 "$TRACER" --binary "$own" -q -o "$TMPD/normal.json"
NP=$BG_PID
wait_for_line "$TMPD/fr.usr1.err" "flight recorder: keeping" 30 || not_ok "recorder attached: $(cat "$TMPD/fr.usr1.err")"
wait_for_line "$TMPD/normal.usr1.err" "attached" 30 || not_ok "normal capture attached"
"$own" yield-workload --tasks 3 --yields 20 --workers 2 > /dev/null &
PA=$!; wait $PA
sleep 4   # A's events leave the 3 s window
"$own" yield-workload --tasks 5 --yields 30 --workers 2 > /dev/null &
PB=$!; wait $PB
"$own" long-poll --ms 60 --workers 2 > /dev/null &
PC=$!; wait $PC
sleep 0.5
t0=$(date +%s%N)
kill -USR1 "$FRP"
for _ in $(seq 200); do [ -n "$(dumps "$D")" ] && break; sleep 0.05; done
t1=$(date +%s%N)
J=$(dumps "$D" | head -1)
# the dump comes on its own, with nothing more to trace (a recorder that dumped only at the next
# event or at its stop would miss this); its speed is not a test's business on a shared machine
# (it took ~200 ms here): 5 s tell a dump that came from one that waited
check "SIGUSR1: a dump while the services are idle, within 5 s ($(( (t1 - t0) / 1000000 )) ms)" test -n "$J" -a $(( (t1 - t0) / 1000000 )) -lt 5000
kill -INT "$NP"; wait_exit "$NP" 120
kill -INT "$FRP"; wait_exit "$FRP" 120
check_eq "SIGUSR1: recorder exit 0" 0 "$RC"
if [ -n "$J" ]; then
    B=$(base_of "$J")
    check "SIGUSR1: named <executable>-<pid>-<UTC time>-sigusr1" \
        bash -c "echo '$B' | grep -qE '^sample-service-$PC-[0-9]{8}T[0-9]{6}\\.[0-9]{3}Z-sigusr1\$'"
    check "SIGUSR1: the HTML report and the Perfetto trace next to it" test -s "$D/$B.html" -a -s "$D/$B.trace.json"
    check_eq "SIGUSR1: trigger in the JSON" sigusr1 "$(jqr "$J" .flight_recorder.trigger.kind)"
    check_eq "SIGUSR1: nothing of process A (it ran before the window)" "" \
        "$(jq -r --arg a "$PA" '[.. | objects | select(.pid? == ($a | tonumber))] | length | select(. > 0)' "$J")"
    check_eq "SIGUSR1: the window is 3 s long (plus 100 ms after)" 3100 \
        "$(jqr "$J" '(.flight_recorder.window_end_at_ns - .flight_recorder.window_start_at_ns) / 1000000 | round')"
    # the normal capture, restricted to B
    nsite() { jq -r --arg p "$PB" "$2" "$1"; }
    want=$(jq -r '[.spawn_sites[] | select(.type_name // "" | contains("workload::yield_task"))] | "\(map(.polls) | add) \(map(.tasks) | add) \(map(.tasks_terminated) | add)"' "$J")
    check_eq "SIGUSR1: B's yield tasks in the dump: N×(M+1) polls, N tasks, N ended" "155 5 5" "$want"
    sel='[.tasks[] | select(.pid == ($b | tonumber) or .pid == ($c | tonumber)) | [.pid, .task_id, .polls, .state, .location]] | sort'
    check_eq "SIGUSR1: tasks of B and C: dump = normal capture (pid, id, polls, state, spawn site)" \
        "$(jq -c --arg b "$PB" --arg c "$PC" "$sel" "$TMPD/normal.json")" "$(jq -c --arg b "$PB" --arg c "$PC" "$sel" "$J")"
    sel='[.findings[] | select(.pid == ($b | tonumber) or .pid == ($c | tonumber)) | [.pid, .kind, .task_id]] | sort'
    check_eq "SIGUSR1: findings of B and C: dump = normal capture (pid, kind, task)" \
        "$(jq -c --arg b "$PB" --arg c "$PC" "$sel" "$TMPD/normal.json")" "$(jq -c --arg b "$PB" --arg c "$PC" "$sel" "$J")"
    check_eq "SIGUSR1: C's 60 ms poll is a long_poll finding in the dump" 1 \
        "$(jq --arg c "$PC" '[.findings[] | select(.pid == ($c | tonumber) and .kind == "long_poll" and .value_ns > 50000000)] | length' "$J")"
    check "SIGUSR1: the Perfetto trace marks the trigger" \
        bash -c "jq -e '[.traceEvents[] | select(.ph == \"i\" and (.name | startswith(\"trigger\")))] | length == 1' '$D/$B.trace.json' > /dev/null"
    check "SIGUSR1: the HTML report says it is a dump and why" grep -q 'id="flight"><b>Flight-recorder</b> .*sigusr1' "$D/$B.html"
fi

# ---- raw batches at full speed: a quiet spawner's spawns come before its tasks' polls ----
# 200 tasks spawned by the main thread, which then waits in block_on (its batch comes when the
# run ends), ~24 M events in ~1 s: the recorder's sweeps of the main thread, and a dump's decoder
# that waits for them, put every poll under its spawn site; the ring (256M) loses nothing here.
# live: a detector trigger's analysis reads the window, behind the copy: the window still
# loses nothing (with the analysis on the ring's path, ~half of the events were lost here)
for how in full live; do
    D="$TMPD/$how"; mkdir -p "$D"
    trig=(); [ "$how" = live ] && trig=(--trigger long_poll)
    start_bg fr.$how "$TRACER" --binary "$own" --flight-recorder 60s --flight-memory 2G --sample-rate 1 \
        --ringbuf-size 256M "${trig[@]}" --dump-dir "$D" -q
    FRP=$BG_PID
    wait_for_line "$TMPD/fr.$how.err" "flight recorder: keeping" 30 || not_ok "$how: recorder attached: $(cat "$TMPD/fr.$how.err")"
    "$own" yield-workload --tasks 200 --yields 30000 --workers 2 > /dev/null
    sleep 1
    kill -USR1 "$FRP"
    for _ in $(seq 600); do [ -n "$(dumps "$D")" ] && grep -q "trace written" "$TMPD/fr.$how.err" && break; sleep 0.1; done
    kill -INT "$FRP"; wait_exit "$FRP" 120
    J=$(dumps "$D" | head -1)
    lost=$(sed -n 's/.* lost to a full ring$/&/; s/.*, \([0-9]*\) lost to a full ring$/\1/p' "$TMPD/fr.$how.err" | head -1)
    check_eq "$how: nothing lost to a full ring" 0 "${lost:-none}"
    check "$how: the recorder swept the quiet main thread" grep -qE "[1-9][0-9]* sweeps of quiet threads kept" "$TMPD/fr.$how.err"
    if [ -n "$J" ]; then
        check_eq "$how: every yield task's polls under its spawn site, none without a site" "200 6000000 0" \
            "$(jq -r '[.spawn_sites[] | select(.location // "" | contains("workload.rs"))] as $w | [.spawn_sites[] | select(.location == null) | .polls] as $n | "\($w | map(.tasks) | add) \(($w | map(.polls) | add) - 200) \($n | add // 0)"' "$J")"
    else
        not_ok "$how: a dump"
    fi
    if [ -n "$J" ]; then  # the capture decoded nothing: the window's decoding counts the hits
        check_eq "$how: the dump's probe hits of task_poll_begin are its polls and their drops" \
            "$(jq '.totals.polls + .data_loss.drops_by_probe.task_poll_begin' "$J")" \
            "$(jq .data_loss.probe_hits.task_poll_begin "$J")"
    fi
    if [ "$how" = live ]; then
        check "live: its analysis read the whole window by the end" \
            grep -q "flight recorder: the live analysis read the whole window ([1-9][0-9]* entries)" "$TMPD/fr.$how.err"
    else
        check "full: no live analysis, none said" bash -c "! grep -q 'live analysis' '$TMPD/fr.$how.err'"
    fi
done

# ---- a live analysis on a quiet service: a poll blocked for 6 s, nothing else running ----
# no batch comes while the worker is blocked and the other one parked: the analysis's clock goes
# on with the ring's drains (as the capture's decoder's did), so never_yields fires while the
# poll still runs, not when it ends
D="$TMPD/quiet"; mkdir -p "$D"
start_bg fr.quiet "$TRACER" --binary "$own" --flight-recorder 20s --trigger never_yields --post-trigger 100ms \
    --dump-dir "$D" -q
FRP=$BG_PID
wait_for_line "$TMPD/fr.quiet.err" "flight recorder: keeping" 30 || not_ok "quiet: recorder attached"
start_bg svc.quiet "$own" long-poll --ms 6000 --workers 2
SP=$BG_PID
wait_for_line "$TMPD/fr.quiet.err" "trigger never_yields" 10
alive=$(kill -0 "$SP" 2>/dev/null && echo running || echo ended)
check_eq "quiet: never_yields fires while the blocked poll still runs" "running" "$alive"
wait_exit "$SP" 20
kill -INT "$FRP"; wait_exit "$FRP" 60
check_eq "quiet: recorder exit 0" 0 "$RC"
check_eq "quiet: one dump, of the blocked task's never_yields" "1 1" \
    "$(dumps "$D" | wc -l) $(dumps "$D" | head -1 | xargs -r jq '[.findings[] | select(.kind == "never_yields")] | length')"

# ---- --trigger long_poll, one dump per cooldown ----
D="$TMPD/lp"; mkdir -p "$D"
D2="$TMPD/thr"; mkdir -p "$D2"
# the service waits at a gate until both recorders keep its events: its 13 s run from then on
# covers the 10 s the test gives the first recorder, however long attaching took
start_bg svc.lp "$bin" serve --workers 2 --pathology blocking_call --load 30 --duration 13s --wait-start "$TMPD/go.lp"
SP=$BG_PID
wait_exec "$SP" "$bin" || not_ok "service started"
start_bg fr.lp "$TRACER" --pid "$SP" --flight-recorder 5s --trigger long_poll --trigger-cooldown 3s \
    --post-trigger 300ms --dump-dir "$D" -q
FRP=$BG_PID
# a second recorder at once: a threshold trigger and the process's exit
start_bg fr.thr "$TRACER" --pid "$SP" --flight-recorder 5s --trigger 'poll>40ms' --trigger exit \
    --trigger-cooldown 60s --dump-dir "$D2" -q
FR2=$BG_PID
wait_for_line "$TMPD/fr.lp.err" "flight recorder: keeping" 30 || not_ok "recorder attached: $(cat "$TMPD/fr.lp.err")"
wait_for_line "$TMPD/fr.thr.err" "flight recorder: keeping" 30 || not_ok "second recorder attached: $(cat "$TMPD/fr.thr.err")"
# a live analysis (detector, threshold triggers) reads the window behind the copy: nice 0 too
check_eq "long_poll: a recorder with a live analysis runs at nice 0" 0 "$(ps -o ni= -p "$FRP" | tr -d ' ')"
touch "$TMPD/go.lp"
wait_for_line "$TMPD/svc.lp.out" "listening on" 20 || not_ok "service listening"
sleep 10
kill -INT "$FRP"; wait_exit "$FRP" 120
check_eq "long_poll: recorder exit 0" 0 "$RC"
check "long_poll: batches kept raw with a live analysis too" grep -q "flight recorder: batches kept raw (.* bytes an event held); 0 refused" "$TMPD/fr.lp.err"
check "long_poll: the live analysis kept up with the window" \
    grep -q "flight recorder: the live analysis read the whole window" "$TMPD/fr.lp.err"
mapfile -t LP < <(dumps "$D")
n=${#LP[@]}
check "long_poll: 3 or 4 dumps in 10 s with a 3 s cooldown (got $n)" test "$n" -ge 3 -a "$n" -le 4
check "long_poll: other triggers counted as suppressed" \
    grep -qE "flight recorder: $n dumps written, 0 failed, [1-9][0-9]* triggers suppressed" "$TMPD/fr.lp.err"
prev=
for J in "${LP[@]}"; do
    B=$(base_of "$J")
    tid=$(jqr "$J" .flight_recorder.trigger.task_id)
    at=$(jqr "$J" .flight_recorder.trigger.detected_at_ns)
    check_eq "long_poll $B: trigger kind" long_poll "$(jqr "$J" .flight_recorder.trigger.kind)"
    check_eq "long_poll $B: exactly one finding marked as the trigger, the triggering task's long_poll" \
        "long_poll $tid" "$(jqr "$J" '[.findings[] | select(.trigger == true)] | map("\(.kind) \(.task_id)") | join(",")')"
    check "long_poll $B: the triggering poll is in the dump (its finding over 10 ms, blocking_call)" \
        bash -c "jq -e '[.findings[] | select(.trigger == true and .value_ns > 10000000 and (.location // \"\" | contains(\"pathology.rs\")))] | length == 1' '$J' > /dev/null"
    check "long_poll $B: the Perfetto trace marks it" \
        bash -c "jq -e '[.traceEvents[] | select(.ph == \"i\" and .name == \"trigger: long_poll\")] | length == 1' '$D/$B.trace.json' > /dev/null"
    check "long_poll $B: the HTML report marks it" grep -q 'class="[^"]*trigger' "$D/$B.html"
    # consecutive triggers: wall times from the names (the triggering events' times, which the
    # cooldown is measured between), at least the cooldown apart (less 10 ms: names are cut to
    # the ms, and each dump reads the wall clock's offset anew)
    ms=$(echo "$B" | sed -E 's/.*-([0-9]{8})T([0-9]{2})([0-9]{2})([0-9]{2})\.([0-9]{3})Z-.*/\2 \3 \4 \5/' | awk '{ print (($1 * 60 + $2) * 60 + $3) * 1000 + $4 }')
    if [ -n "$prev" ]; then
        check "long_poll $B: at least the cooldown after the previous dump's trigger ($(( ms - prev )) ms)" test $(( ms - prev )) -ge 2990
    fi
    prev=$ms
done
wait_exit "$FR2" 120
check_eq "poll>40ms + exit: the recorder ends with the process, exit 0" 0 "$RC"
J=$(dumps "$D2" | grep -- '-poll+40ms\.json$' | head -1)
check_eq "poll>40ms: one dump (a 60 s cooldown)" 1 "$(dumps "$D2" | grep -c -- '-poll+40ms\.json$')"
[ -n "$J" ] && check_eq "poll>40ms: its trigger: a poll over 40 ms of the service, no finding marked" "poll poll>40ms true 0" \
    "$(jqr "$J" '"\(.flight_recorder.trigger.kind) \(.flight_recorder.trigger.spec) \(.flight_recorder.trigger.value_ns > 40000000) \([.findings[] | select(.trigger == true)] | length)"')"
J=$(dumps "$D2" | grep -- '-exit\.json$' | head -1)
check "exit: a dump when the process exits" test -n "$J"
[ -n "$J" ] && check_eq "exit: ended_by process_exit, status 0, no signal" "process_exit 0 null" \
    "$(jqr "$J" '"\(.capture.ended_by // .ended_by) \(.exit.status) \(.exit.signal)"')"
stop_pid "$SP"

# ---- crashes: SIGSEGV, and a panic with panic = "abort" ----
for how in segv panic-abort; do
    D="$TMPD/crash-$how"; mkdir -p "$D"
    # the crash timer starts with the runtime, behind a gate opened once the recorder keeps
    # events: the dump must hold the process's last seconds, however long attaching took
    start_bg svc.$how "$bin" serve --workers 2 --pathology blocking_call --load 20 --crash "$how" --crash-after 3s \
        --wait-start "$TMPD/go.$how"
    SP=$BG_PID
    wait_exec "$SP" "$bin" || not_ok "$how: service started"
    start_bg fr.$how "$TRACER" --pid "$SP" --flight-recorder 10s --dump-dir "$D" -q
    FRP=$BG_PID
    wait_for_line "$TMPD/fr.$how.err" "flight recorder: keeping" 30 || not_ok "$how: recorder attached: $(cat "$TMPD/fr.$how.err")"
    touch "$TMPD/go.$how"
    # SIGUSR1 and crash only: batches kept raw, decoded by the dump; the copy keeps up at nice 0
    check_eq "$how: a recorder keeping batches raw runs at nice 0" 0 "$(ps -o ni= -p "$FRP" | tr -d ' ')"
    wait_exit "$FRP" 120
    check_eq "$how: the recorder ends with the process, exit 0" 0 "$RC"
    check "$how: it kept the batches raw" grep -q "flight recorder: batches kept raw (.* bytes an event held); 0 refused" "$TMPD/fr.$how.err"
    sig=$([ "$how" = segv ] && echo SIGSEGV || echo SIGABRT)
    J=$(dumps "$D" | head -1)
    check_eq "$how: one dump" 1 "$(dumps "$D" | wc -l)"
    if [ -n "$J" ]; then
        check_eq "$how: ended_by process_crash, the signal" "process_crash $sig" \
            "$(jqr "$J" '"\(.capture.ended_by // .ended_by) \(.exit.signal)"')"
        check_eq "$how: the trigger is the crash" "process_crash $sig" \
            "$(jqr "$J" '"\(.flight_recorder.trigger.kind) \(.flight_recorder.trigger.signal)"')"
        check "$how: the dump holds the process's last seconds (polls, the long polls)" \
            test "$(jqr "$J" .totals.polls)" -gt 50 -a "$(jqr "$J" '[.findings[] | select(.kind == "long_poll")] | length')" -gt 0
        check "$how: the terminal says it" grep -q "process $SP was killed by $sig" "$TMPD/fr.$how.err"
        check "$how: named ...-crash" bash -c "basename '$J' | grep -q -- '-$SP-.*-crash\\.json\$'"
    fi
    wait "$SP" 2>/dev/null
done

# ---- a kernel without sched_process_exit (TET_TEST_NO_EXIT_TP=1): said at start, no crash dump ----
D="$TMPD/noexit"; mkdir -p "$D"
start_bg svc.noexit "$bin" serve --workers 2 --load 20 --crash segv --crash-after 2s --wait-start "$TMPD/go.noexit"
SP=$BG_PID
wait_exec "$SP" "$bin" || not_ok "noexit: service started"
TET_TEST_NO_EXIT_TP=1 start_bg fr.noexit "$TRACER" --pid "$SP" --flight-recorder 10s --dump-dir "$D" -q
FRP=$BG_PID
wait_for_line "$TMPD/fr.noexit.err" "flight recorder: keeping" 30 || not_ok "noexit: recorder attached: $(cat "$TMPD/fr.noexit.err")"
touch "$TMPD/go.noexit"
wait_exit "$FRP" 60
check_eq "noexit: the recorder ends with the process, exit 0" 0 "$RC"
check "noexit: one warning says crashes will not dump" \
    grep -q "^tokio-ebpf-trace: warning: the kernel has no sched_process_exit BTF tracepoint.*a crash will not dump" "$TMPD/fr.noexit.err"
check_eq "noexit: no dump, no signal claimed" "0 0" \
    "$(ls "$D" | wc -l) $(grep -c 'killed by' "$TMPD/fr.noexit.err")"
wait "$SP" 2>/dev/null

# ---- --binary: across a restart ----
D="$TMPD/follow"; mkdir -p "$D"
# no cooldown: with the default (60 s, across processes) one long poll of the first process's
# healthy serve (a stalled machine) would suppress the second process's
start_bg fr.follow "$TRACER" --binary "$own" --flight-recorder 20s --trigger long_poll --trigger-cooldown 0s --dump-dir "$D" -q
FRP=$BG_PID
wait_for_line "$TMPD/fr.follow.err" "flight recorder: keeping" 30 || not_ok "follow: recorder attached"
start_bg svc.f1 "$own" serve --workers 2 --load 20 --crash segv --crash-after 2s
P1=$BG_PID
wait_exit "$P1" 20
start_bg svc.f2 "$own" long-poll --ms 200 --workers 2
P2=$BG_PID
wait_exit "$P2" 20
for _ in $(seq 300); do
    dumps "$D" | grep -q -- "-$P1-.*-crash.json" && dumps "$D" | grep -q -- "-$P2-.*-long_poll.json" && break
    sleep 0.1
done
sleep 1
kill -INT "$FRP"; wait_exit "$FRP" 120
check_eq "follow: recorder exit 0" 0 "$RC"
J1=$(dumps "$D" | grep -- "-$P1-.*-crash.json" | head -1)
J2=$(dumps "$D" | grep -- "-$P2-.*-long_poll.json" | head -1)
check "follow: the first process's crash dumped under its PID" test -n "$J1"
check "follow: the restarted process's long poll dumped under its PID" test -n "$J2"
if [ -n "$J1" ] && [ -n "$J2" ]; then
    check_eq "follow: each dump holds its own process only" "$P1 $P2" \
        "$(jq -r '[.tasks[].pid] | unique | join(",")' "$J1") $(jq -r '[.tasks[].pid] | unique | join(",")' "$J2")"
fi
finish
