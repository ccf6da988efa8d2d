#!/bin/bash
# Intent: the tracer's analysis is exact on a scripted workload. fake_tokio (a C program with the
# ten tokio:* USDT probes, argument layouts of probes-patch/PROBES.md, semaphores) plays a scenario
# with known counts; traced by --pid, the JSON report must have
#   - totals equal to what the fixture emitted (polls, wakes, spawns, terminations, yields, waker
#     clones/drops, parks/unparks), 0 drops, events = their sum;
#   - N×(M+1) polls at the yield_loop spawn site (N tasks × M yield_now);
#   - exactly the expected findings, each at the right file:line:col (SPAWN-SITE markers):
#     long_poll, stalled (1 live waker, not lost_waker), lost_waker (0 live wakers, not stalled),
#     never_yields, self_wake — and none at the healthy sites (yield_loop whose self-wakes are
#     yield_now, blocking_io (spawn_blocking may block), remote_wake, weird_names, long_path);
#   - spawn strings on a page the process never touched (cold_strings) decoded — by user space
#     (process_vm_readv) after bpf_probe_read_user() failed (string_read_errors counts those
#     failures; no program sleeps on the process's memory), every such read answered in time;
#   - wakes from a non-runtime thread counted, pending/scheduling figures plausible, per-worker
#     parks; untrusted strings escaped (JSON valid, "<" never raw, invalid UTF-8 → U+FFFD,
#     terminal without control bytes), a 300-byte file name cut to 256 and flagged;
# for probes in the executable and in a shared library (fake_tokio_so + libfake_rt.so).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer

N=5 M=7
run_case() {  # run_case LABEL BINARY
    local label=$1 bin=$2 fpid tpid r="$TMPD/$1.json" s
    rm -f "$TMPD/go.$label"
    start_bg "fix.$label" "$bin" --tasks $N --yields $M --go "$TMPD/go.$label" --hold
    fpid=$BG_PID
    wait_for_line "$TMPD/fix.$label.out" '^pid ' 10 || not_ok "$label: fixture started"
    # --top 20: the terminal lists every one of the 13 sites (by default the 10 busiest, and
    # weird_names, one tiny poll, ranked 10th or 11th by chance)
    start_bg "tr.$label" env ${RUN_ENV:-} "$TRACER" --pid "$fpid" -o "$r" --stall-threshold 300ms \
        --never-yields-threshold 200ms --lost-waker-threshold 100ms --top 20
    tpid=$BG_PID
    if ! wait_for_line "$TMPD/tr.$label.err" 'attached' 20; then
        not_ok "$label: tracer attached"; cat "$TMPD/tr.$label.err"; return
    fi
    touch "$TMPD/go.$label"
    wait_for_line "$TMPD/fix.$label.out" '^done$' 20 || not_ok "$label: fixture finished"
    sleep 0.3
    kill -INT "$tpid"
    wait_exit "$tpid" 120
    check_eq "$label: tracer ends on SIGINT with exit 0" 0 "$RC"
    check "$label: says it was stopped" grep -q 'stopped by' "$TMPD/tr.$label.err"
    check "$label: report is valid JSON" jq -e . "$r" > /dev/null
    [ -s "$r" ] || { not_ok "$label: no report"; cat "$TMPD/tr.$label.err"; return; }
    local e="$TMPD/fix.$label.out"

    check_eq "$label: mode" usdt "$(jqr "$r" .mode)"
    check_eq "$label: schema_version" 1 "$(jqr "$r" .schema_version)"
    check_eq "$label: ended_by" signal "$(jqr "$r" .capture.ended_by)"
    check_eq "$label: drops" 0 "$(jqr "$r" .totals.drops)"
    for k in polls wakes spawns terminations:terminates yields waker_clones:clones \
             waker_drops:drops parks unparks outside_runtime_wakes:outside_wakes self_wakes; do
        check_eq "$label: totals.${k%%:*} = emitted" "$(expect_of "$e" "${k##*:}")" "$(jqr "$r" ".totals.${k%%:*}")"
    done
    s=$(jqr "$r" '.totals | .polls*2 + .wakes + .spawns + .terminations + .yields + .waker_clones + .waker_drops + .parks + .unparks')
    check_eq "$label: totals.events = every probe hit" "$s" "$(jqr "$r" .totals.events)"
    check_eq "$label: probe_hits.task_poll_begin (BPF counter) = events" "$(jqr "$r" .totals.polls)" \
        "$(jqr "$r" .data_loss.probe_hits.task_poll_begin)"

    local yl; yl=$(site_of yield_loop)
    check_eq "$label: yield_loop site has N×(M+1) = $((N*(M+1))) polls" "$((N*(M+1)))" \
        "$(jqr "$r" ".spawn_sites[] | select(.location == \"$yl\") | .polls")"
    check_eq "$label: yield_loop site: $N tasks, all terminated" "$N $N" \
        "$(jqr "$r" ".spawn_sites[] | select(.location == \"$yl\") | \"\(.tasks) \(.tasks_terminated)\"")"
    check_eq "$label: yield_loop site: $((N*M)) yield_now" "$((N*M))" \
        "$(jqr "$r" ".spawn_sites[] | select(.location == \"$yl\") | .yields.yield_now")"
    check_eq "$label: yield_loop type name" "fake_tokio::yield_loop::{{closure}}" \
        "$(jqr "$r" ".spawn_sites[] | select(.location == \"$yl\") | .type_name")"

    # findings: exactly these (kind@site)
    local want got
    want=$(printf '%s\n' "long_poll@$(site_of long_poll)" "long_poll@$(site_of never_yields)" \
        "never_yields@$(site_of never_yields)" "stalled@$(site_of stalled)" \
        "lost_waker@$(site_of lost_waker)" "self_wake@$(site_of self_waker)" | sort)
    got=$(jqr "$r" '.findings[] | "\(.kind)@\(.location)"' | sort)
    check_eq "$label: findings are exactly the pathologies, at their spawn sites" "$want" "$got"
    for healthy in yield_loop blocking_io remote_wake weird_names; do
        check_eq "$label: no finding at healthy site $healthy" 0 \
            "$(jqr "$r" "[.findings[] | select(.location == \"$(site_of $healthy)\")] | length")"
    done
    check_eq "$label: stalled task has 1 live waker, still pending" "1 true" \
        "$(jqr "$r" '.findings[] | select(.kind == "stalled") | "\(.live_wakers) \(.ongoing)"')"
    check_eq "$label: lost_waker task has 0 live wakers" "0" \
        "$(jqr "$r" '.findings[] | select(.kind == "lost_waker") | .live_wakers')"
    check "$label: long_poll value ≥ 30ms" test "$(jqr "$r" ".findings[] | select(.kind == \"long_poll\" and .location == \"$(site_of long_poll)\") | .value_ns")" -ge 30000000
    check "$label: every finding has a detail naming its site" \
        test "$(jqr "$r" '[.findings[] | select(. as $f | $f.detail | contains($f.location) | not)] | length')" = 0
    check_eq "$label: blocking_io is kind blocking, one 30ms poll, no finding" "blocking 1" \
        "$(jqr "$r" ".spawn_sites[] | select(.location == \"$(site_of blocking_io)\") | \"\(.kind) \(.polls)\"")"

    # wakes from outside the runtime, pending and scheduling figures
    local rw; rw=$(site_of remote_wake)
    check_eq "$label: remote_wake: 3 wakes from a non-runtime thread" 3 \
        "$(jqr "$r" ".spawn_sites[] | select(.location == \"$rw\") | .outside_runtime_wakes")"
    check "$label: remote_wake: pending p50 ≥ 5ms (the waker sleeps 5ms)" \
        test "$(jqr "$r" ".spawn_sites[] | select(.location == \"$rw\") | .pending_ns.p50")" -ge 5000000
    check_eq "$label: remote_wake: 6 scheduling delays (3 spawns + 3 wakes)" 6 \
        "$(jqr "$r" ".spawn_sites[] | select(.location == \"$rw\") | .sched_ns.count")"
    check_eq "$label: yield_loop self-wakes all explained by yield_now" "$((N*M)) 0" \
        "$(jqr "$r" ".spawn_sites[] | select(.location == \"$yl\") | \"\(.self_wakes) \(.self_wake_polls)\"")"
    check_eq "$label: two workers, 2 parks each" "0:2 1:2" \
        "$(jqr "$r" '[.workers[] | "\(.worker):\(.parks)"] | join(" ")')"
    check_eq "$label: live tasks at the end: stalled + lost_waker, pending" "pending pending" \
        "$(jqr "$r" '[.tasks[] | select(.state != "terminated") | .state] | join(" ")')"
    check_eq "$label: tasks listed = spawned" "$(expect_of "$e" spawns)" "$(jqr "$r" '.tasks | length')"

    # untrusted strings
    local wn; wn=$(site_of weird_names)
    check_eq "$label: weird type name round-trips (control bytes kept, invalid UTF-8 → U+FFFD)" same \
        "$(python3 - "$r" "$wn" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = [x for x in d["spawn_sites"] if x["location"] == sys.argv[2]][0]["type_name"]
want = "fake_tokio::Weird<\"q\" & '<script>'>\n\x01tail\x00nul\ufffd\ufffd end"
print("same" if s == want else repr(s))
PY
)"
    check "$label: no raw '<' in the JSON (HTML-safe)" bash -c "! grep -q '<script>' '$r'"
    check "$label: terminal summary has no control bytes" bash -c "! LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f\x7f]' '$TMPD/tr.$label.out'"
    check "$label: terminal shows the weird name escaped" grep -qF 'Weird<"q" & '"'"'<script>'"'"'>\x0a\x01tail\x00nul\xff\xfe end' "$TMPD/tr.$label.out"
    check_eq "$label: 300-byte file name kept to 256 bytes, flagged truncated" "256 true" \
        "$(jqr "$r" '.spawn_sites[] | select(.type_name == "fake_tokio::long_path") | "\(.file | length) \(.file_truncated)"')"
    check "$label: summary lists findings" grep -q '^Findings (6)' "$TMPD/tr.$label.out"
    check "$label: summary lists spawn sites by busy time" grep -q '^Spawn sites by busy time' "$TMPD/tr.$label.out"
    check_eq "$label: strings on a never-touched page decoded" \
        "tests/fixtures/trace/cold.rs:88:5 fake_tokio::cold_strings" \
        "$(jqr "$r" '.spawn_sites[] | select(.type_name == "fake_tokio::cold_strings") | "\(.location) \(.type_name)"')"
    echo "$label: files $(jqr "$r" '[.capture.files[].path] | join(",")'); string read errors in BPF: $(jqr "$r" .data_loss.string_read_errors)"
    stop_pid "$fpid"
}

python3 -c 'import json' || die_test "python3 needed"
run_case exe "$FAKE"
run_case so "$FAKE_SO"
check "exe: bpf_probe_read_user failed on the cold page (then user space read it)" \
    test "$(jqr "$TMPD/exe.json" .data_loss.string_read_errors)" -ge 1
check_eq "exe: the reads of the process's memory: made, none timed out, refused or failed" "true 0 0 0" \
    "$(jqr "$TMPD/exe.json" '.data_loss.process_memory | "\(.reads >= 1) \(.timed_out) \(.refused) \(.failed)"')"
check "so: probes found in the shared library" bash -c "jq -r '.capture.files[].path' '$TMPD/so.json' | grep -q 'libfake_rt.so\$'"
finish
