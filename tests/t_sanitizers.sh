#!/bin/bash
# Intent: the tracer has no memory error, leak or undefined behaviour that its unit tests, the
# replay tool or real captures reach: each runs built with ASan + UBSan (mk/tracer-sanitize.mk,
# build/asan: any report aborts with exit 66) —
#  - the analyzer/report unit tests (unit_trace), the batch decoder's (batch_test) and the flight
#    recorder's (flight_test: raw batches of random records kept, walked and decoded);
#  - a batched capture of the yield workload (JSON, HTML, Perfetto trace, the ring records
#    dumped), every poll counted; that dump through the decode stage and the analyzer
#    (batch_replay);
#  - a per-event capture of the lock pathologies and a CPU-bound workload, with CPU profiling,
#    folded stacks, the pprof profile, the metrics endpoint scraped and --remote-write to a
#    loopback receiver (the sender thread: libcurl, snappy, the encoder) (two deadlocks found, as
#    t_deadlock checks on the plain build; the workload's stacks folded), --live-tasks 4 (the live tasks listed: those
#    with a finding, then the oldest up to 4; the others counted).
# No sanitizer report in any output, exit 0 everywhere.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
SAN="$BUILD/asan"
for f in tokio-ebpf-trace unit_trace batch_test batch_replay flight_test; do need_file "$SAN/$f" "sanitized $f"; done
export ASAN_OPTIONS="exitcode=66:detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="exitcode=66:print_stacktrace=1:halt_on_error=1"
REPORTS='AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer'
# clean LABEL RC FILE…: exit 0 and no sanitizer report in FILEs (the first lines of one shown)
clean() {
    local label=$1 rc=$2; shift 2
    if grep -hE -A12 "$REPORTS" "$@" 2>/dev/null | head -n 30 | sed 's/^/#   /' | grep .; then
        not_ok "$label: a sanitizer report (above)"
    else
        ok "$label: no sanitizer report"
    fi
    check_eq "$label: exit 0" 0 "$rc"
}

# ---- unit tests ----
"$SAN/unit_trace" "$TMPD/unit.json" > "$TMPD/unit_trace.out" 2>&1
clean "unit_trace" $? "$TMPD/unit_trace.out"
check "unit_trace: ran its checks" grep -q '^# [0-9]* checks, 0 failed' "$TMPD/unit_trace.out"
"$SAN/batch_test" > "$TMPD/batch_test.out" 2>&1
clean "batch_test" $? "$TMPD/batch_test.out"
check "batch_test: ran its checks" grep -q '^# [0-9]* checks, 0 failed' "$TMPD/batch_test.out"
"$SAN/flight_test" > "$TMPD/flight_test.out" 2>&1
clean "flight_test" $? "$TMPD/flight_test.out"
check "flight_test: ran its checks" grep -q '^# [0-9]* checks, 0 failed' "$TMPD/flight_test.out"

# ---- a batched capture, dumped, then replayed ----
bin=$(sample_bin 1.53 usdt)
need_file "$bin" "sample-service (tokio 1.53, usdt)"
N=100 M=100
TET_BATCH_DUMP="$TMPD/y.dump" start_bg tr.y "$SAN/tokio-ebpf-trace" --binary "$bin" -q \
    -o "$TMPD/y.json" -o "$TMPD/y.html" --trace "$TMPD/y.trace.json"
trp=$BG_PID
wait_for_line "$TMPD/tr.y.err" attached 60 || not_ok "batched: the sanitized tracer attached"
start_bg wl.y "$bin" yield-workload --tasks $N --yields $M --workers 2
wp=$BG_PID
wait_exit "$wp" 120
check_eq "batched: workload exit 0" 0 "$RC"
kill -INT "$trp"; wait_exit "$trp" 180
clean "batched capture" "$RC" "$TMPD/tr.y.err" "$TMPD/tr.y.out"
check_eq "batched: capture is batched" batched "$(jqr "$TMPD/y.json" .capture.capture)"
check_eq "batched: every poll of the workload's tasks ($((N * (M + 1))))" $((N * (M + 1))) \
    "$(jqr "$TMPD/y.json" '[.tasks[] | select(.location // "" | test("src/workload.rs:")) | .polls] | add')"
check "batched: the HTML report written" grep -q '</html>' "$TMPD/y.html"
check "batched: the Perfetto trace is JSON with events" \
    test "$(jq '.traceEvents | length' "$TMPD/y.trace.json" 2>/dev/null || echo 0)" -gt 0
check "batched: the ring records dumped" test -s "$TMPD/y.dump"
"$SAN/batch_replay" "$TMPD/y.dump" 2 > "$TMPD/replay.out" 2> "$TMPD/replay.err"
clean "batch_replay of the dump" $? "$TMPD/replay.err"
check "batch_replay: decoded the capture's events" \
    test "$(jq -r '.events // 0' "$TMPD/replay.out" 2>/dev/null | head -1)" -gt $((N * M))

# ---- per-event capture of the lock pathologies and a CPU-bound workload, profiled, metrics ----
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# a loopback remote-write receiver: every POST read whole and answered 204 (the sender thread,
# libcurl, snappy and the encoder run under the sanitizers)
start_bg rwr python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(204); self.end_headers()
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H); print(s.server_port, flush=True); s.serve_forever()'
wait_for_line "$TMPD/rwr.out" '^[0-9]+$' 10 || not_ok "per-event: the remote-write receiver listening"
start_bg tr.l "$SAN/tokio-ebpf-trace" --binary "$bin" --capture per-event --ringbuf-size 64M --profile-hz 199 \
    --stacks "$TMPD/l.folded" --pprof "$TMPD/l.pb.gz" --duration 8s --metrics-addr "127.0.0.1:$port" --live-tasks 4 \
    --remote-write "http://127.0.0.1:$(cat "$TMPD/rwr.out")/api/v1/write" --remote-write-interval 1s \
    -o "$TMPD/l.json" -o "$TMPD/l.html" --trace "$TMPD/l.trace.json"
trp=$BG_PID
wait_for_line "$TMPD/tr.l.err" attached 60 || not_ok "per-event: the sanitized tracer attached"
start_bg wl.l "$bin" locks --duration 12s
lp=$BG_PID
start_bg wl.c "$bin" yield-workload --tasks 20 --yields 3000 --workers 2
cp=$BG_PID
scraped=0
for i in $(seq 40); do
    sleep 0.1
    curl -sf --max-time 3 -o "$TMPD/l.prom" "http://127.0.0.1:$port/metrics" && scraped=$((scraped + 1))
done
wait_exit "$cp" 120
check_eq "per-event: the CPU-bound workload exit 0" 0 "$RC"
wait_exit "$trp" 180
clean "per-event capture" "$RC" "$TMPD/tr.l.err" "$TMPD/tr.l.out"
stop_pid "$lp"
check "per-event: the metrics endpoint answered ($scraped of 40 scrapes)" test "$scraped" -ge 20
check "per-event: the pprof profile written (gzip)" gzip -t "$TMPD/l.pb.gz"
check "per-event: remote write pushes delivered ($(jqr "$TMPD/l.json" .remote_write.pushes))" \
    test "$(jqr "$TMPD/l.json" .remote_write.pushes)" -ge 2
check_eq "per-event: remote write: no failure" "0 0 0" "$(jqr "$TMPD/l.json" '[.remote_write.failures[]] | map(tostring) | join(" ")')"
check_eq "per-event: capture is per-event" per-event "$(jqr "$TMPD/l.json" .capture.capture)"
check_eq "per-event: nothing lost (a lost wait or lock event turns deadlock detection off)" 0 "$(jqr "$TMPD/l.json" .totals.drops)"
check_eq "per-event: both deadlocks found" 2 "$(jqr "$TMPD/l.json" '[.findings[] | select(.kind == "deadlock")] | length')"
# --live-tasks 4: every live task with a finding listed, the oldest others up to 4, the rest counted
live=$(jqr "$TMPD/l.json" .totals.tasks_live)
fin=$(jqr "$TMPD/l.json" '[.findings[] | .task_id, (.cycle[]?.task_id)] as $f | [.tasks[] | select(.state != "terminated" and (.task_id as $i | $f | index($i)))] | length')
listed=$(jqr "$TMPD/l.json" '[.tasks[] | select(.state != "terminated")] | length')
want=$(( live < 4 ? live : 4 )); [ "$fin" -gt "$want" ] && want=$fin
check_eq "per-event: --live-tasks 4: listed live tasks ($live live, $fin with a finding)" "$want" "$listed"
check_eq "per-event: --live-tasks 4: the others counted" "$((live - listed))" "$(jqr "$TMPD/l.json" .totals.live_tasks_omitted)"
check "per-event: --live-tasks 4: some left out" test "$((live - listed))" -gt 0
check "per-event: folded stacks of the CPU-bound workload written" grep -q 'workload.rs' "$TMPD/l.folded"
check "per-event: the HTML report written" grep -q '</html>' "$TMPD/l.html"
finish
