#!/bin/bash
# Intent: --remote-write pushes the figures /metrics serves to a real Prometheus (Debian's, with
# --web.enable-remote-write-receiver, on 127.0.0.1, a free port, a temporary data dir), which
# decodes our protobuf + snappy and stores it; read back through its HTTP API. On the sample
# service (tokio 1.53, usdt build, 200 req/s):
#   up       a 3 s capture pushing every 1 s: Prometheus' tokio_trace_tasks_polls_total is the
#            report's exact polls total (the last push holds the final figures), the series carry
#            host, pid, executable, tokio_release, mode and capture; the sender's own counters
#            are series too; no failure counted;
#   outage   an 8 s capture; Prometheus is killed (SIGKILL, by its PID) 2 s in and started again
#            on the same port and data 3 s later: the tracer survives, exits 0 in its normal time
#            (nothing waits for the dead receiver), counts connection failures and retries, drops
#            nothing, and the pushes after the return arrive (the query gives the final total);
#   refused  a URL Prometheus answers 404: counted as a client failure, the samples as rejected,
#            one warning; the --remote-write-header value is printed nowhere;
#   silent   a receiver that accepts connections and never answers: the run still ends after
#            the final push's bounded wait (5 s), what was never answered counted as dropped at
#            exit; the request's line and headers it logs are checked (Prometheus ignores them):
#            Content-Encoding snappy, Content-Type application/x-protobuf, the remote write
#            version 0.1.0, a User-Agent, a --remote-write-header Authorization value as sent
#            (and printed nowhere);
# and bad URLs or headers are one line on stderr before anything is attached: exit 3 for a
# scheme that is not http(s), no host, a malformed header, options without --remote-write; exit
# 2 for a host that does not resolve ("hosts: files" in a private mount namespace: no DNS query
# leaves the machine).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
need_sample 1.53 usdt
prom_receiver_init
q() { prom_q "$@"; }

start_bg svc "$SAMPLE" serve --addr 127.0.0.1:0 --load 200 --duration 90s
SVC=$BG_PID
wait_for_line "$TMPD/svc.out" '^listening on ' 30 || die_test "sample service listening: $(cat "$TMPD/svc.err")"
SEL="{pid=\"$SVC\"}"
prom_up first

# ---- up: every push arrives ----
t0=$SECONDS
"$TRACER" --pid "$SVC" -d 3s -q -o "$TMPD/up.json" --remote-write "$API/api/v1/write" \
    --remote-write-interval 1s 2> "$TMPD/up.err"
check_eq "up: tracer exit 0" 0 $?
echo "# up: ran $((SECONDS - t0)) s"
R="$TMPD/up.json"
check "up: says where it pushes" grep -q "pushing the metrics to $API/api/v1/write every 1s" "$TMPD/up.err"
polls=$(jqr "$R" .totals.polls)
check "up: the report has polls ($polls)" test "${polls:-0}" -gt 0
check_eq "up: Prometheus' tokio_trace_tasks_polls_total = the report's exact total" "$polls" \
    "$(q "tokio_trace_tasks_polls_total$SEL")"
curl -sf --get "$API/api/v1/query" --data-urlencode "query=tokio_trace_tasks_polls_total$SEL" > "$TMPD/up.series"
lab() { jq -r ".data.result[0].metric.$1 // empty" "$TMPD/up.series"; }
check_eq "up: label host" "$(uname -n)" "$(lab host)"
check_eq "up: label pid" "$SVC" "$(lab pid)"
check_eq "up: label executable" "$(readlink -f "$SAMPLE")" "$(lab executable)"
check "up: label tokio_release, the release the binary was built from ($(lab tokio_release))" \
    grep -qE '^1\.53\.[0-9]+$' <<< "$(lab tokio_release)"
check_eq "up: labels mode, capture" "usdt batched" "$(lab mode) $(lab capture)"
check_eq "up: a histogram's _count by site (poll durations) sums to the report's" \
    "$(jqr "$R" '[.spawn_sites[].poll_ns.count] | add')" \
    "$(q "sum(tokio_trace_poll_duration_seconds_count$SEL)")"
pushes=$(jqr "$R" .remote_write.pushes)
check "up: pushes delivered: one at the start, every second, one at the end ($pushes)" test "${pushes:-0}" -ge 4
check "up: samples counted ($(jqr "$R" .remote_write.samples))" test "$(jqr "$R" .remote_write.samples)" -gt 0
check_eq "up: no failure, nothing dropped" "0 0 0 0 0 0" \
    "$(jqr "$R" '[.remote_write.failures[], .remote_write.dropped_samples[]] | map(tostring) | join(" ")')"
check "up: the sender's own counters are series too (pushes before the last: $(q "tokio_trace_remote_write_pushes_total$SEL"))" \
    test "$(q "tokio_trace_remote_write_pushes_total$SEL")" -ge 3

# ---- outage: the receiver goes away and comes back ----
now_ms() { date +%s%3N; }
t0=$SECONDS
start_bg out "$TRACER" --pid "$SVC" -d 8s -o "$TMPD/out.json" --remote-write "$API/api/v1/write" \
    --remote-write-interval 1s
TR=$BG_PID
wait_for_line "$TMPD/out.err" 'pushing the metrics' 30 || not_ok "outage: tracer attached and pushing"
ta=$(now_ms)
sleep 2
kill -KILL "$PROM"; wait "$PROM" 2> /dev/null
echo "# outage: Prometheus killed at +$((SECONDS - t0)) s"
sleep 3
prom_up second
echo "# outage: Prometheus back at +$((SECONDS - t0)) s"
wait_exit "$TR" 40
check_eq "outage: the tracer survives, exit 0" 0 "$RC"
took=$(( $(now_ms) - ta ))
# from the attach: 8 s of capture, the detach (~1 s), the final push (at most 5 s): ~8.3 s
# measured, 15 s at the outside; the bound leaves 7 s more for a loaded 2-CPU CI. A sender that
# held the end would take the 40 s of wait_exit (its retries never stop)
check "outage: the run ends in its normal time (${took} ms from the attach for -d 8s)" test "$took" -le 22000
R="$TMPD/out.json"
check "outage: connection failures counted ($(jqr "$R" .remote_write.failures.connection))" \
    test "$(jqr "$R" .remote_write.failures.connection)" -gt 0
check "outage: retried ($(jqr "$R" .remote_write.retries))" test "$(jqr "$R" .remote_write.retries)" -gt 0
check_eq "outage: nothing dropped (queued meanwhile, sent after the return)" "0 0 0" \
    "$(jqr "$R" '[.remote_write.dropped_samples[]] | map(tostring) | join(" ")')"
check_eq "outage: the drain was not held: no event dropped" 0 "$(jqr "$R" .totals.drops)"
check_eq "outage: pushes after the return arrived: the final total" "$(jqr "$R" .totals.polls)" \
    "$(q "tokio_trace_tasks_polls_total$SEL")"
check_eq "outage: one warning for the failures" 1 "$(grep -c 'warning: remote write to' "$TMPD/out.err")"
check "outage: it says when it delivers again" grep -q 'remote write to .*: delivered again, after [0-9]* failed attempt' "$TMPD/out.err"
check "outage: the terminal summary gives the failures" \
    grep -qE '^remote write to .*: [0-9]+ pushes delivered .*failed requests: [1-9][0-9]* connection' "$TMPD/out.out"
cat "$TMPD/out.err"

# ---- refused: a path Prometheus answers 404 ----
SECRET="Bearer s3cr3t-$$"
"$TRACER" --pid "$SVC" -d 2s -q -o "$TMPD/no.json" --remote-write "$API/api/v1/nope" \
    --remote-write-interval 1s --remote-write-header "Authorization: $SECRET" 2> "$TMPD/no.err"
check_eq "refused: tracer exit 0" 0 $?
R="$TMPD/no.json"
check "refused: client failures counted ($(jqr "$R" .remote_write.failures.client))" \
    test "$(jqr "$R" .remote_write.failures.client)" -gt 0
check_eq "refused: no push delivered, none retried" "0 0" "$(jqr "$R" '"\(.remote_write.pushes) \(.remote_write.retries)"')"
check "refused: their samples counted as rejected ($(jqr "$R" .remote_write.dropped_samples.rejected))" \
    test "$(jqr "$R" .remote_write.dropped_samples.rejected)" -gt 0
check_eq "refused: last status 404" 404 "$(jqr "$R" .remote_write.last_status)"
check_eq "refused: one warning, naming the status" 1 "$(grep -c 'warning: remote write to .*HTTP 404' "$TMPD/no.err")"
check "refused: the header's value is printed nowhere" bash -c "! grep -rqF 's3cr3t-$$' '$TMPD/no.err' '$TMPD/no.json'"
cat "$TMPD/no.err"

# ---- silent: a receiver that takes connections and never answers ----
# It logs each request's line and headers (hole.req): what Prometheus ignores is checked there.
start_bg hole python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64); s.settimeout(120)
print(s.getsockname()[1], flush=True)
log, keep = open(sys.argv[1], "ab"), []
while True:
    c = s.accept()[0]; keep.append(c); c.settimeout(5); buf = b""
    try:
        while b"\r\n\r\n" not in buf and len(buf) < 65536:
            d = c.recv(4096)
            if not d: break
            buf += d
    except OSError: pass
    log.write(buf.split(b"\r\n\r\n")[0] + b"\r\n\r\n"); log.flush()
' "$TMPD/hole.req"
wait_for_line "$TMPD/hole.out" '^[0-9]+$' 10 || die_test "silent receiver listening"
SECRET="Bearer s3cret-$$"
start_bg silent "$TRACER" --pid "$SVC" -d 1s -q -o "$TMPD/hole.json" \
    --remote-write "http://127.0.0.1:$(cat "$TMPD/hole.out")/api/v1/write" --remote-write-interval 1s \
    --remote-write-header "Authorization: $SECRET"
TR=$BG_PID
wait_for_line "$TMPD/silent.err" 'pushing the metrics' 30 || not_ok "silent: tracer attached and pushing"
ta=$(now_ms)
wait_exit "$TR" 40
check_eq "silent: tracer exit 0" 0 "$RC"
took=$(( $(now_ms) - ta ))
# from the attach: 1 s of capture, the detach (~1 s), the final push's wait (5 s): 7.0-7.1 s
# measured; the bound leaves 8 s more for a loaded 2-CPU CI. Without the wait's abort the run
# would not end (nothing ever answers: retried until wait_exit's 40 s)
check "silent: the run ends after the final push's bounded wait (${took} ms from the attach for -d 1s)" \
    test "$took" -le 15000
R="$TMPD/hole.json"
check "silent: what was never answered is dropped at exit, counted ($(jqr "$R" .remote_write.dropped_samples.at_exit))" \
    test "$(jqr "$R" .remote_write.dropped_samples.at_exit)" -gt 0
check_eq "silent: nothing delivered" 0 "$(jqr "$R" .remote_write.pushes)"
# the first request's head, as the receiver got it (Prometheus 2.42 ignores these headers)
tr -d '\r' < "$TMPD/hole.req" | awk 'NF == 0 { exit } { print }' > "$TMPD/hole.head"
hdr() { grep -i "^$1: " "$TMPD/hole.head" | head -1 | cut -d' ' -f2-; }
check_eq "silent: request line" "POST /api/v1/write HTTP/1.1" "$(head -1 "$TMPD/hole.head")"
check_eq "silent: Content-Encoding" snappy "$(hdr Content-Encoding)"
check_eq "silent: Content-Type" application/x-protobuf "$(hdr Content-Type)"
check_eq "silent: X-Prometheus-Remote-Write-Version" 0.1.0 "$(hdr X-Prometheus-Remote-Write-Version)"
check "silent: a User-Agent ($(hdr User-Agent))" test -n "$(hdr User-Agent)"
check_eq "silent: the --remote-write-header value arrives as sent" "$SECRET" "$(hdr Authorization)"
check "silent: ... and is printed nowhere" bash -c "! grep -rqF 's3cret-$$' '$TMPD/silent.err' '$TMPD/silent.out' '$TMPD/hole.json'"
cat "$TMPD/silent.err"

# ---- bad URLs and headers: one line, nothing attached ----
printf 'hosts: files\n' > "$TMPD/nsswitch.conf"
bad() {  # bad LABEL EXIT [WRAPPER…] -- TRACER ARGS…
    local label=$1 want=$2 rc w=()
    shift 2
    while [ "$1" != -- ]; do w+=("$1"); shift; done
    shift
    rm -f "$TMPD/bad.json"
    "${w[@]}" "$TRACER" --pid "$SVC" -d 2s -o "$TMPD/bad.json" "$@" > "$TMPD/bad.out" 2> "$TMPD/bad.err"
    rc=$?
    check_eq "$label: exit $want" "$want" "$rc"
    check_eq "$label: one line on stderr" 1 "$(wc -l < "$TMPD/bad.err")"
    check "$label: nothing attached" bash -c "! grep -q attached '$TMPD/bad.err'"
    check "$label: no report file" test ! -e "$TMPD/bad.json"
    check "$label: no secret printed" bash -c "! grep -qF 's3cr3t' '$TMPD/bad.err'"
    cat "$TMPD/bad.err"
}
bad "scheme ftp" 3 -- --remote-write "ftp://127.0.0.1/x"
bad "no host" 3 -- --remote-write "http:///api/v1/write"
bad "not a URL" 3 -- --remote-write "127.0.0.1:$PP/api/v1/write"
bad "header without a colon" 3 -- --remote-write "$API/api/v1/write" --remote-write-header "Authorization s3cr3t"
bad "header with a line break" 3 -- --remote-write "$API/api/v1/write" --remote-write-header "$(printf 'Authorization: s3cr3t\r\nX: y')"
bad "a header the tracer sets" 3 -- --remote-write "$API/api/v1/write" --remote-write-header "Content-Type: s3cr3t"
bad "--remote-write-interval without --remote-write" 3 -- --remote-write-interval 1s
bad "interval too short" 3 -- --remote-write "$API/api/v1/write" --remote-write-interval 1ms
bad "a host that does not resolve" 2 unshare --mount sh -c 'mount --bind "$0" /etc/nsswitch.conf && exec "$@"' "$TMPD/nsswitch.conf" \
    -- --remote-write "http://no-such-host.invalid:9090/api/v1/write"
check "… the message names the host" grep -q "cannot resolve 'no-such-host.invalid'" "$TMPD/bad.err"
stop_pid "$PROM"
finish
