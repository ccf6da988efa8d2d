#!/bin/bash
# Intent: --metrics-addr serves Prometheus metrics while tracing, and an existing Prometheus can
# scrape them. During a capture of report_tokio with --metrics-addr 127.0.0.1:0:
#   - a scrape is valid text exposition format (promtool check metrics) with the documented
#     families: poll-duration / scheduling-delay / pending histograms and polls / wakes / spawns
#     counters by site, findings by kind, drops by probe; GET / and HEAD /metrics answer, an
#     unknown path is 404;
#   - a real Prometheus server (Debian's prometheus, on 127.0.0.1, a temporary config and data
#     dir, scraping every 1 s) reports up == 1 for the endpoint and our polls counter > 0
#     through its HTTP API;
#   - clients that connect and never send a request (20 of them, more than the server's 16
#     slots) stall neither the server nor the
#     ring-buffer drain: two scrapes 1.5 s apart while it is connected are both answered,
#     the first within 1 s (not after the silent client's 2 s timeout), and the polls counter
#     moved between them; the JSON report has every poll, no drops;
# and a bad --metrics-addr is one line on stderr, a non-zero exit, nothing attached (the
# target's probe semaphores stay 0) and no report file: unparseable (exit 3), a port in use, an
# address that is not local, a name that does not resolve (exit 2; resolved with
# "hosts: files" in a private mount namespace, so no DNS query leaves the machine).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
. "$(dirname "$0")/report_lib.sh"
need_root
need_report_fixture
command -v promtool > /dev/null || die_test "promtool missing (Debian package prometheus: make deps)"
command -v prometheus > /dev/null || die_test "prometheus missing (Debian package prometheus: make deps)"

prom_session() {  # DURING hook
    local url hostport pport i up polls
    wait_for_line "$1" 'Prometheus metrics at' 5 || return
    url=$(sed -n 's/.*Prometheus metrics at \(http[^ ]*\).*/\1/p' "$1")
    hostport=${url#http://}; hostport=${hostport%%/*}
    echo "$url" > "$TMPD/url"
    # a client that connects and sends nothing, for 4 s; two scrapes 1.5 s apart while it
    # is connected: the live counters must move between them (the drain goes on), and both
    # are answered at once (clients are served side by side: the silent one holds only its
    # own slot, for 2 s)
    # the counters are rendered once a second: first wait for polls in a scrape
    for i in $(seq 50); do
        curl -sf --max-time 3 "$url" | grep -q '^tokio_trace_polls_total{.*} [1-9]' && break
        sleep 0.1
    done
    # 20 silent connections: more than the server's 16 slots, so the scrapes also need the
    # oldest silent one dropped to be served
    python3 -c 'import socket,sys,time; s=[socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(20)]; print("connected", flush=True); time.sleep(4)' \
        "${hostport#*:}" > "$TMPD/silent.out" &
    SILENT=$!
    track_pid $SILENT
    wait_for_line "$TMPD/silent.out" '^connected$' 5
    curl -sf --max-time 3 -o "$TMPD/scrape0.txt" -w '%{time_total}\n' "$url" > "$TMPD/scrape0.time"; echo "scrape 0 rc=$?"
    sleep 1.5
    curl -sf --max-time 3 -o "$TMPD/scrape.txt" "$url"; echo "scrape 1 rc=$?"
    kill -0 "$SILENT" 2>/dev/null && echo yes > "$TMPD/silent.alive"
    curl -s -o /dev/null -w '%{http_code}' "${url%/metrics}/nope" > "$TMPD/code404"
    curl -s -o "$TMPD/root.txt" -w '%{http_code}' "${url%/metrics}/" > "$TMPD/code200"
    curl -sI "$url" > "$TMPD/head.txt"
    pport=$(free_port)
    mkdir -p "$TMPD/prom-data"
    cat > "$TMPD/prom.yml" <<EOF
global: { scrape_interval: 1s, evaluation_interval: 1s }
scrape_configs:
  - job_name: tokio
    static_configs: [ { targets: ['$hostport'] } ]
EOF
    prometheus --config.file="$TMPD/prom.yml" --storage.tsdb.path="$TMPD/prom-data" \
        --web.listen-address="127.0.0.1:$pport" > "$TMPD/prom.log" 2>&1 &
    PROM=$!
    track_pid "$PROM"
    for i in $(seq 150); do
        up=$(curl -sf "http://127.0.0.1:$pport/api/v1/query?query=up" | jq -r '.data.result[0].value[1] // empty' 2>/dev/null)
        polls=$(curl -sf "http://127.0.0.1:$pport/api/v1/query?query=sum(tokio_trace_polls_total)" | jq -r '.data.result[0].value[1] // empty' 2>/dev/null)
        [ "$up" = 1 ] && [ -n "$polls" ] && [ "$polls" != 0 ] && break
        sleep 0.2
    done
    echo "$up $polls" > "$TMPD/prom.result"
    curl -sf "http://127.0.0.1:$pport/api/v1/query?query=tokio_trace_poll_duration_seconds_count" > "$TMPD/prom.hist"
    stop_pid "$PROM"
}

R="$TMPD/r.json"
DURING=prom_session capture_fixture m "--duration-ms 3000" -o "$R" --metrics-addr 127.0.0.1:0 -q
check_eq "tracer exit status" 0 "$CAP_RC"
check "says where the metrics are" grep -q 'serving Prometheus metrics at http://127.0.0.1:' "$CAP_ERR"
[ -s "$TMPD/scrape.txt" ] || die_test "scrape taken during the capture"
check "promtool check metrics accepts the scrape" bash -c "promtool check metrics < '$TMPD/scrape.txt'"
for fam in "tokio_trace_poll_duration_seconds histogram" "tokio_trace_scheduling_delay_seconds histogram" \
           "tokio_trace_pending_seconds histogram" "tokio_trace_polls_total counter" \
           "tokio_trace_wakes_total counter" "tokio_trace_spawns_total counter" \
           "tokio_trace_findings_total counter" "tokio_trace_events_dropped_total counter"; do
    check "family: $fam" grep -q "^# TYPE $fam\$" "$TMPD/scrape.txt"
done
check "poll histograms by site" grep -q '^tokio_trace_poll_duration_seconds_bucket{site="tests/fixtures/trace/report_tokio.c:[0-9]*:5",le="+Inf"} [1-9]' "$TMPD/scrape.txt"
check "findings by kind" grep -q '^tokio_trace_findings_total{kind="stalled"} ' "$TMPD/scrape.txt"
check "drops by probe" grep -q '^tokio_trace_events_dropped_total{probe="task_poll_begin"} 0$' "$TMPD/scrape.txt"
check_eq "an unknown path is 404" 404 "$(cat "$TMPD/code404")"
check_eq "GET / answers" 200 "$(cat "$TMPD/code200")"
check "HEAD /metrics: 200, the exposition content type" bash -c "grep -q '^HTTP/1.1 200' '$TMPD/head.txt' && grep -qi '^Content-Type: text/plain; version=0.0.4' '$TMPD/head.txt'"
read -r up polls < "$TMPD/prom.result"
check_eq "prometheus scraped the endpoint: up" 1 "$up"
check "prometheus has our polls counter > 0 ($polls)" test -n "$polls" -a "$polls" != 0
check "prometheus has the poll-duration histogram" bash -c "jq -e '.data.result | length > 0' '$TMPD/prom.hist' > /dev/null"
[ -s "$R" ] || die_test "report written"
polls_in() { awk '/^tokio_trace_polls_total[{ ]/ { s += $NF } END { print s + 0 }' "$1" 2>/dev/null; }
p0=$(polls_in "$TMPD/scrape0.txt"); p1=$(polls_in "$TMPD/scrape.txt")
t0=$(cat "$TMPD/scrape0.time" 2>/dev/null)
check "a silent client connected: both scrapes 1.5 s apart answered, polls moved ($p0 -> $p1)" \
    bash -c "[ -s '$TMPD/silent.alive' ] && [ '$p0' -gt 0 ] && [ '$p1' -gt '$p0' ]"
check "… the first one at once, not after the silent client's 2 s (${t0:-no answer} s)" \
    awk -v t="${t0:-9}" 'BEGIN { exit !(t < 1.0) }'
check_eq "every poll analyzed" "$(expect_of "$TMPD/m.fx.out" polls)" "$(jqr "$R" .totals.polls)"
check_eq "… and no drops" 0 "$(jqr "$R" .totals.drops)"

# bad addresses: one line, non-zero, nothing attached, no report
start_bg target "$BUILD/fixtures/fake_tokio" --hold
TGT=$BG_PID
wait_for_line "$TMPD/target.out" '^pid ' 10 || die_test "fake_tokio started"
python3 -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(60)' > "$TMPD/busy.port" &
BUSY=$!
track_pid "$BUSY"
wait_for_line "$TMPD/busy.port" '^[0-9]+$' 10
busy=$(cat "$TMPD/busy.port")
printf 'hosts: files\n' > "$TMPD/nsswitch.conf"
bad_addr() {  # bad_addr LABEL EXIT ADDR [WRAPPER…]
    local label=$1 want=$2 addr=$3 rc
    shift 3
    rm -f "$TMPD/bad.json"
    "$@" "$TRACER" --pid "$TGT" --metrics-addr "$addr" -o "$TMPD/bad.json" > "$TMPD/bad.out" 2> "$TMPD/bad.err"
    rc=$?
    check_eq "$label ($addr): exit $want" "$want" "$rc"
    check_eq "$label: one line on stderr" 1 "$(wc -l < "$TMPD/bad.err")"
    check "$label: it names --metrics-addr" grep -q -- '--metrics-addr' "$TMPD/bad.err"
    check "$label: nothing attached" bash -c "! grep -q attached '$TMPD/bad.err'"
    check_eq "$label: the target's probe semaphores are 0" 0 "$(sem_total "$TGT")"
    check "$label: no report file" test ! -e "$TMPD/bad.json"
    cat "$TMPD/bad.err"
}
bad_addr "no port" 3 "127.0.0.1"
bad_addr "port out of range" 3 "127.0.0.1:99999"
bad_addr "empty port" 3 "127.0.0.1:"
bad_addr "unclosed IPv6 bracket" 3 "[::1:9464"
bad_addr "port in use" 2 "127.0.0.1:$busy"
bad_addr "not a local address" 2 "192.0.2.1:9464"
bad_addr "a name that does not resolve" 2 "no-such-host.invalid:9464" \
    unshare --mount sh -c 'mount --bind "$0" /etc/nsswitch.conf && exec "$@"' "$TMPD/nsswitch.conf"
check "the port-in-use message says so" bash -c "'$TRACER' --pid $TGT --metrics-addr 127.0.0.1:$busy 2>&1 | grep -q 'Address already in use'"
finish
