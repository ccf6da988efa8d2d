#!/bin/bash
# Intent: the tracer sees exactly what another USDT client sees. bpftrace (counting each of the ten
# tokio probes) and the tracer (--binary) both attach by path before the traced process starts its
# runtime (bpftrace's BEGIN runs once all its probes are attached; every probe semaphore of the
# waiting process is raised — the kernel counts uprobes per site, not consumers, so 1); with 0 drops the tracer's
# totals equal bpftrace's counts probe by probe — polls and wakes included — for the C fixture
# (nop5 sites) and, per supported Tokio line, for the usdt sample service running every pathology
# under load. Also: `yield-workload --tasks N --yields M` gives exactly N×(M+1) polls and N tasks
# at its spawn site (workload.rs, the SPAWN-SITE: yield_workload line).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
need_file "$FIX/fake_tokio_nop5" "fixture fake_tokio_nop5"
command -v bpftrace > /dev/null || die_test "bpftrace missing (make deps)"

PROBES=("${PROBES_REQUIRED[@]}")
declare -A TOTAL_KEY=([task_spawn]=spawns [task_poll_begin]=polls [task_poll_end]=polls
    [task_yielded]=yields [waker_wake]=wakes [waker_clone]=waker_clones [waker_drop]=waker_drops
    [task_terminate]=terminations [worker_park]=parks [worker_unpark]=unparks)

# compare LABEL BINARY GATE-FLAG CMD…: attaches both by path, starts CMD (which waits for the gate
# file given after GATE-FLAG), checks both are attached, opens the gate, compares the counts.
compare() {
    local label=$1 bin=$2 gate=$3; shift 3
    local bt="" p
    for p in "${PROBES[@]}"; do bt+="usdt:$bin:tokio:$p { @c[\"$p\"] = count(); } "; done
    bt+='BEGIN { printf("ready\n"); }'
    start_bg "bt.$label" bpftrace -e "$bt"
    local btp=$BG_PID
    start_bg "tr.$label" "$TRACER" --binary "$bin" -q --ringbuf-size 128M -o "$TMPD/$label.json"
    local trp=$BG_PID
    wait_for_line "$TMPD/tr.$label.err" attached 20 || not_ok "$label: tracer attached"
    wait_for_line "$TMPD/bt.$label.out" '^ready' 60 || not_ok "$label: bpftrace attached (BEGIN ran)"
    rm -f "$TMPD/gate.$label"
    start_bg "run.$label" "$@" "$gate" "$TMPD/gate.$label"
    local rp=$BG_PID
    local raised i
    for i in $(seq 100); do
        raised=$(sem_values "$rp" | grep -vE '^(event_batch|sample_rate)=' | grep -c '=[1-9]')
        [ "$raised" = ${#PROBES[@]} ] && break
        sleep 0.1
    done
    check_eq "$label: attached before the workload starts: every probe semaphore raised" ${#PROBES[@]} "$raised"
    touch "$TMPD/gate.$label"
    wait_exit "$rp" 120
    check_eq "$label: workload exit 0" 0 "$RC"
    sleep 0.5
    kill -INT "$trp"; wait_exit "$trp" 120
    check_eq "$label: tracer exit 0" 0 "$RC"
    bt_stop "$btp" "$label"
    local R="$TMPD/$label.json"
    # the report's figures in one read (a loaded machine took seconds of jq a read): drops, then
    # the probes' in PROBES' order, one line each ("" for a probe with no total)
    local exprs=(.totals.drops) vals=() i=0
    for p in "${PROBES[@]}"; do
        if [ "$p" = task_poll_end ]; then exprs+=(".data_loss.probe_hits.$p")
        elif [ -n "${TOTAL_KEY[$p]:-}" ]; then exprs+=(".totals.${TOTAL_KEY[$p]}")
        else exprs+=('""'); fi
    done
    mapfile -t vals < <(jq -r "$(IFS=,; echo "${exprs[*]}")" "$R")
    check_eq "$label: tracer dropped nothing" 0 "${vals[0]:-}"
    for p in "${PROBES[@]}"; do
        local want got
        i=$((i + 1)) got=${vals[$i]:-}
        # a count bpftrace did not print is a failure, never a 0 that matches a 0
        want=$(sed -n "s/^@c\[$p\]: //p" "$TMPD/bt.$label.out")
        check "$label: $p: bpftrace counted it (${want:-no count})" test "${want:-0}" -gt 0
        check_eq "$label: $p: tracer = bpftrace ($got)" "${want:-no count}" "$got"
    done
}

# ---- the C fixture (5-byte nop sites, like the Rust patch) ----
compare fixture "$FIX/fake_tokio_nop5" --go "$FIX/fake_tokio_nop5" --tasks 6 --yields 50 --linger-ms 50

# ---- the usdt sample service, per Tokio line ----
missing=()
for line in "${LINES[@]}"; do
    bin=$(sample_bin "$line" usdt)
    if [ ! -x "$bin" ]; then missing+=("tokio-$line/usdt"); continue; fi
    compare "tokio-$line" "$bin" --wait-start "$bin" serve --workers 2 --pathology all --load 50 --duration 3s

    # yield-workload: N×(M+1) polls at its spawn site
    N=6 M=25
    site_line=$(grep -n '// SPAWN-SITE: yield_workload$' "$ROOT/sample-service/src/workload.rs" | cut -d: -f1)
    start_bg "ytr.$line" "$TRACER" --binary "$bin" -q --ringbuf-size 128M -o "$TMPD/y.$line.json"
    ytp=$BG_PID
    wait_for_line "$TMPD/ytr.$line.err" attached 20 || not_ok "tokio $line: tracer attached"
    "$bin" yield-workload --tasks $N --yields $M --workers 2 > "$TMPD/y.$line.out"
    kill -INT "$ytp"; wait_exit "$ytp" 120
    R="$TMPD/y.$line.json"
    check_eq "tokio $line: yield-workload printed polls_expected=$((N*(M+1)))" "$((N*(M+1)))" \
        "$(sed -n 's/.*polls_expected=\([0-9]*\).*/\1/p' "$TMPD/y.$line.out")"
    check_eq "tokio $line: yield_workload site (workload.rs:$site_line) has N×(M+1) polls and N tasks" \
        "$((N*(M+1))) $N" \
        "$(jqr "$R" "[.spawn_sites[] | select(.location // \"\" | test(\"src/workload.rs:$site_line:[0-9]+\$\"))] | \"\(map(.polls) | add) \(map(.tasks) | add)\"")"
    check_eq "tokio $line: yield_workload: $((N*M)) yield_now" "$((N*M))" \
        "$(jqr "$R" "[.spawn_sites[] | select(.location // \"\" | test(\"src/workload.rs:$site_line:\"))] | map(.yields.yield_now) | add")"
done
[ ${#missing[@]} = 0 ] || { echo "# $TESTS_RUN checks, $TESTS_FAILED failed so far"; [ "$TESTS_FAILED" = 0 ] || finish;
    skip_test "usdt sample-service builds missing: ${missing[*]} (make builds them)"; }
finish
