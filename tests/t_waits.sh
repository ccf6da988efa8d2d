#!/bin/bash
# Intent: for every pending task the report says what it waits for, and only tasks truly stuck
# are `stalled` — checked against what the program itself says each task waits for. The subject
# is `sample-service waits` (usdt builds of the three Tokio lines, and of the 1.53-named line
# that has tokio::task::Builder), started behind --wait-start with the tracer attached, so every
# task is seen from its spawn; each task stays in one state for the whole run and the program
# prints, per role, the task's id and what it knows of its wait (fd, addresses, the Notify's
# address, the awaited task, the future's size, the name):
#   timer, idle_client, large     a 10-minute sleep: wait `timer` due in ~600 s, no finding
#   accept                        wait `io` readable on the fd the program printed, a "TCP listener
#                                 ADDR", no finding
#   idle_conn                     `io` readable on its fd, "TCP connection ADDR <-> PEER", no finding
#   notify, leaked_rx             idle by design (docs/wait-reasons.md: a subscription): wait
#                                 `notify` at the Notify's address / `mpsc_recv`, class idle, no
#                                 finding, counted in the terminal's "Idle by design" line
#   oneshot_rx                    stalled, reason sync, on `oneshot_recv` (a request nobody answers)
#   blocked                       never_yields (inside one poll), not stalled
#   joiner                        stalled, reason join_long_poll, awaiting the blocked task's id
#   large                         large_future, its size as the program measured it, boxed by
#                                 Tokio on 1.43 and 1.53 (never on 1.24)
#   selfwake                      self_wake (⅔ of its wakes are its own, ~30 polls/s)
#   named (1.53-named only)       its name in the JSON task and finding, the terminal, report.html
#                                 (Chromium: findings and tasks table) and the Perfetto trace
# Every pending task has a wait reason (none unknown: every wait here is a Tokio resource), no
# finding falls on any other task, and the per-site pending time is labelled by reason. Batched
# capture on every line, per-event capture on 1.53. Stock Tokio (the uprobe fallback, no
# task_wait) keeps the time-only rule and says so (capture.wait_reasons false): there the timer
# task is stalled like the stuck ones.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
. "$(dirname "$0")/report_lib.sh"
need_root
need_tracer
SRC="$ROOT/sample-service/src/waits.rs"
site() { echo "waits.rs:$(grep -n "// SPAWN-SITE: waits_$1\$" "$SRC" | cut -d: -f1):"; }

# run LABEL BIN CAPTURE: the program behind its gate, the tracer on its PID for 4 s after it is
# ready; sets R (JSON), W (program output), S (terminal)
run() {
    local label=$1 bin=$2 cap=$3 wp tp
    rm -f "$TMPD/gate.$label"
    start_bg "w.$label" "$bin" waits --duration 15s --wait-start "$TMPD/gate.$label"
    wp=$BG_PID
    wait_exec "$wp" "$bin" || not_ok "$label: program started"
    start_bg "tr.$label" "$TRACER" --pid "$wp" --capture "$cap" --duration 5s \
        -o "$TMPD/$label.json" -o "$TMPD/$label.html" --trace "$TMPD/$label.trace.json"
    tp=$BG_PID
    wait_for_line "$TMPD/tr.$label.err" attached 30 || not_ok "$label: tracer attached"
    touch "$TMPD/gate.$label"
    wait_for_line "$TMPD/w.$label.out" '^waits pid=[0-9]+ ready$' 20 || not_ok "$label: program ready"
    wait_exit "$tp" 120
    check_eq "$label: tracer exit 0" 0 "$RC"
    stop_pid "$wp"
    R="$TMPD/$label.json" W="$TMPD/w.$label.out" S="$TMPD/tr.$label.out"
}
fact() { sed -n "s/^waits task=$1 .*\b$2=\([^ ]*\).*/\1/p" "$W"; }
idof() { sed -n "s/^waits task=$1 id=\([0-9]*\).*/\1/p" "$W"; }
task() { jqr "$R" ".tasks[] | select(.task_id == $(idof "$1")) | $2"; }
findings_of() { jqr "$R" "[.findings[] | select(.task_id == $(idof "$1")) | .kind] | sort | join(\",\")"; }

check_line() {
    local line=$1 label=$2
    check_eq "$label: capture.wait_reasons" true "$(jqr "$R" .capture.wait_reasons)"
    for role in timer idle_client large; do
        check_eq "$label: $role waits on a timer" timer "$(task "$role" .wait.kind)"
        due=$(task "$role" '.wait.waits[0].due_in_ns')
        check "$label: $role's timer is due in 580-600 s (${due} ns)" \
            test "${due:-0}" -gt 580000000000 -a "${due:-0}" -le 600000000000
    done
    check_eq "$label: timer, idle_client: no finding" "," "$(findings_of timer),$(findings_of idle_client)"
    check_eq "$label: accept waits on I/O: readable, the fd it printed, a TCP listener on its address" \
        "io true $(fact accept fd) listener TCP listener $(fact accept addr)" \
        "$(task accept '"\(.wait.kind) \(.wait.waits[0].readable) \(.wait.waits[0].fd) \(.wait.waits[0].fd_kind) \(.wait.waits[0].fd_what)"')"
    check_eq "$label: idle_conn waits on I/O: readable, its fd, the connection to its peer" \
        "io true $(fact idle_conn fd) connection TCP connection $(fact idle_conn addr) <-> $(fact idle_conn peer) (ESTABLISHED)" \
        "$(task idle_conn '"\(.wait.kind) \(.wait.waits[0].readable) \(.wait.waits[0].fd) \(.wait.waits[0].fd_kind) \(.wait.waits[0].fd_what)"')"
    check_eq "$label: accept, idle_conn: no finding" "," "$(findings_of accept),$(findings_of idle_conn)"
    check_eq "$label: notify: idle on the Notify at the address the program printed, no finding" \
        "notify idle $(fact notify object) " \
        "$(task notify '"\(.wait.kind) \(.wait.class) \(.wait.waits[0].address)"') $(findings_of notify)"
    check_eq "$label: leaked_rx: idle on its mpsc receive, no finding" "mpsc_recv idle " \
        "$(task leaked_rx '"\(.wait.kind) \(.wait.class)"') $(findings_of leaked_rx)"
    check_eq "$label: oneshot_rx: stalled (sync) on oneshot_recv" "stalled sync oneshot_recv request" \
        "$(jqr "$R" ".findings[] | select(.task_id == $(idof oneshot_rx)) | \"\(.kind) \(.stall_reason) \(.waiting_for[0].kind)\"") $(task oneshot_rx .wait.class)"
    check "$label: the stalled sentence names what it waits on" \
        grep -q 'waiting on a oneshot channel (receive) 0x' "$S"
    check "$label: terminal: notify and leaked_rx counted idle by design" \
        grep -q '^Idle by design: [0-9]* of them pending for 1s or more on a subscription (.*notify 1.*): waiting for work is not a finding' "$S"
    check_eq "$label: blocked: never_yields, not stalled" never_yields "$(findings_of blocked)"
    check_eq "$label: joiner: stalled on the JoinHandle of the task it joins, which is in a long poll" \
        "stalled join_long_poll $(fact joiner joins) in_long_poll" \
        "$(jqr "$R" ".findings[] | select(.task_id == $(idof joiner)) | \"\(.kind) \(.stall_reason) \(.awaited_task.task_id) \(.awaited_task.state)\"")"
    check "$label: the joiner's sentence says its task is inside a long poll" \
        grep -q "waiting on the JoinHandle of task $(fact joiner joins), which is inside a" "$S"
    boxed=true; [ "$line" = 1.24 ] && boxed=false
    check_eq "$label: large: large_future of the size the program measured (boxed by Tokio: $boxed)" \
        "large_future $(fact large size) $boxed $(fact large size) $boxed" \
        "$(jqr "$R" ".findings[] | select(.task_id == $(idof large)) | \"\(.kind) \(.future_size) \(.future_boxed)\"") $(task large '"\(.future_size) \(.future_boxed)"')"
    check_eq "$label: selfwake: self_wake" self_wake "$(findings_of selfwake)"
    check "$label: selfwake's ratio is about its 2 self-wakes in 3 (0.55-0.7)" \
        python3 -c "import sys; r = float(sys.argv[1]); sys.exit(not 0.55 <= r <= 0.7)" \
        "$(jqr "$R" ".findings[] | select(.task_id == $(idof selfwake)) | .ratio")"
    check_eq "$label: every pending task has a wait reason, none unknown" "0 0" \
        "$(jqr "$R" '[.tasks[] | select(.state == "pending") | select(.wait == null)] | length') $(jqr "$R" '[.tasks[] | select(.state == "pending" and .wait.kind == "unknown")] | length')"
    ids=$(sed -n 's/^waits task=[a-z_]* id=\([0-9]*\).*/\1/p' "$W" | sort -n | tr '\n' ',' | sed 's/,$//')
    check_eq "$label: no finding on a task the program did not spawn" "" \
        "$(jqr "$R" "[.findings[] | select(.task_id as \$t | [$ids] | index(\$t) | not) | \"\(.kind)@\(.location)\"] | join(\" \")")"
    check "$label: the accept site's pending time is labelled io" \
        test "$(jqr "$R" ".spawn_sites[] | select(.location // \"\" | contains(\"$(site accept)\")) | .pending_by_wait.io.periods")" -ge 1
    check_eq "$label: terminal: pending tasks by what they wait on" 1 \
        "$(grep -c '^Pending at the end: .* waiting on .*timer [0-9]*, io 2, notify' "$S")"
}

for line in ${WAITS_LINES:-1.24 1.43 1.53 1.53-named}; do
    bin=$(sample_bin "$line" usdt)
    need_file "$bin" "usdt sample service ($line)"
    caps=batched; [ "$line" = 1.53 ] && caps="batched per-event"
    for cap in $caps; do
        run "$line.$cap" "$bin" "$cap"
        check_line "$line" "tokio $line $cap"
        L="tokio $line $cap"
        if [ "$line" = 1.53-named ]; then
            check_eq "$L: the named task's name in tasks[] and its finding" "waits-named waits-named" \
                "$(task named .name) $(jqr "$R" ".findings[] | select(.task_id == $(idof named)) | .name")"
            check "$L: terminal: the named task's finding names it" \
                grep -q "task $(idof named) 'waits-named' spawned at" "$S"
            check_eq "$L: Perfetto: the named task's polls carry its name" "waits-named" \
                "$(jq -r "[.traceEvents[] | select(.cat == \"poll\" and .args.task == $(idof named)) | .args.task_name] | unique | join(\",\")" "$TMPD/$L.trace.json" 2>/dev/null || jq -r "[.traceEvents[] | select(.cat == \"poll\" and .args.task == $(idof named)) | .args.task_name] | unique | join(\",\")" "$TMPD/$line.$cap.trace.json")"
            need_chromium
            B=$(python3 "$ROOT/tests/browser.py" --page "$TMPD/$line.$cap.html" --eval \
                "({ findings: document.getElementById('findings').textContent.includes(\"'waits-named'\"),
                    tasks: [...document.querySelectorAll('#tasks-table tr')].some(r => r.textContent.includes('waits-named')) })" 2>/dev/null)
            check_eq "report.html: the name in the findings and the tasks table, no console error" \
                "true true []" "$(echo "$B" | jq -r '"\(.eval.findings) \(.eval.tasks) \(.errors | tojson)"')"
        else
            check_eq "$L: no name where Tokio has no Builder (null everywhere)" 0 \
                "$(jqr "$R" '[.tasks[] | select(.name != null)] | length')"
        fi
    done
done

# stock Tokio (the uprobe fallback: no task_wait): the time-only rule, and the report says so —
# the timer task is then stalled like the stuck ones (what the wait reasons spare)
need_sample 1.53 stock; stock=$SAMPLE
run stock.fallback "$stock" per-event
check_eq "stock 1.53 (uprobe fallback): capture.wait_reasons false" false "$(jqr "$R" .capture.wait_reasons)"
check_eq "stock 1.53: no task has a wait" 0 "$(jqr "$R" '[.tasks[] | select(.wait != null)] | length')"
check_eq "stock 1.53: without wait reasons the timer task is stalled by time alone" stalled \
    "$(jqr "$R" '[.findings[] | select(.type_name // "" | contains("waits_timer")) | .kind] | unique | join(",")')"
finish
