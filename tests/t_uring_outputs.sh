#!/bin/bash
# Intent: io_uring reaches the three other outputs — the Perfetto trace, report.html and the
# Prometheus metrics — faithful to the JSON report of the same capture, and nothing of it
# shows for a target without io_uring. The sample service's uring-workload (tokio-uring: file
# WRITE/READ/FSYNC tasks on 256 KiB files — fewer requests than the default 64 KiB, a trace of
# ~30 MB instead of ~120 MB — and a READ on a pipe nobody writes, never completed) is traced by
# PID for 4 s of its 8 s — the capture ends by its duration while the process still runs, so
# the stuck READ is in flight at the end — with --trace, -o report.json, -o report.html and
# --metrics-addr; its files go to a $TMPDIR whose name holds HTML metacharacters and a byte
# that is not UTF-8.
#   - trace (tests/check_trace.py: flows start in a wake or io_uring slice and end in a poll
#     slice of the same task, slices nest per thread — so a ring's overlapping requests are on
#     several tracks — every thread named): one io_uring slice
#     per finished request of the report (Σ by_opcode[].completed, per opcode too, the trace not
#     cut), named by opcode, on tracks "io_uring ring N" of the target's PID; a flow arrow
#     for every request a poll consumed, ending in the poll that begins exactly
#     complete_to_poll_ns after the request's end, of the request's task; the stuck READ as a
#     slice "READ (in flight)" on the stuck fd, its task, a pipe, to the end of the capture;
#   - report.html, in headless Chromium: an io_uring section (after the stalled tasks, with
#     its nav link) whose opcode table has the report's opcodes and counts, whose site table
#     names the stuck read's site, whose in-flight table lists the stuck READ with its fd and
#     "pipe:[…]"; the fd target of an in-flight file request shown as text, not markup, its
#     non-UTF-8 byte as \xff, and the raw page holding none of it unescaped (whether a file
#     request is in flight at the end is chance, ~3 captures in 4: when this one has none,
#     short 1 s captures until one has, at most 8); no console error;
#   - metrics: two scrapes during the capture, both accepted by promtool; per opcode the
#     duration histogram's buckets are cumulative, +Inf = _count = the completed counter of the
#     same scrape, the second scrape >= the first, > 0 for READ and WRITE, and <= the report's
#     final figures; the in-flight gauge counts the stuck READ;
# and a target without io_uring (the 1.53 sample service, serve with load) gets
# "io_uring": null in the JSON and in report.html's data, no io_uring section or nav link,
# no io_uring slice, track or otherData key in the trace, and no tokio_io_uring series.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
. "$(dirname "$0")/report_lib.sh"
need_root
need_file "$TRACER" "tracer binary"
need_chromium
command -v promtool > /dev/null || die_test "promtool missing (Debian package prometheus: make deps)"
need_sample 1.53-uring usdt; UBIN=$SAMPLE
need_sample 1.53 usdt; PBIN=$SAMPLE
CHECK_TRACE="$ROOT/tests/check_trace.py"
jqe() { jq -e "$@" > /dev/null; }   # for check: a jq test, quietly

# The service's files go here: < > & " ' and a byte that is not UTF-8 in the name.
NASTY="$TMPD/dir<b>&\"x'$(printf '\xff')"
mkdir -p "$NASTY" || die_test "made a TMPDIR with metacharacters"
NASTY_SHOWN="dir<b>&\"x'\\xff"   # as report.html shows it (report_sanitize)

# uring_capture NAME "SERVICE ARGS" TRACER ARGS…: runs the uring workload (files under
# $NASTY), traces it by PID for $CAP_DUR (3s) with NAME.json/.html/.trace.json and the tracer args;
# scrapes the metrics twice, a render apart, when --metrics-addr is given. Sets STUCK_FD, CAP_RC.
uring_capture() {
    local name=$1 svcargs=$2 svc tr url t0
    shift 2
    # shellcheck disable=SC2086
    TMPDIR="$NASTY" start_bg "$name.svc" "$UBIN" uring-workload --duration 8s --stuck-pipe $svcargs \
        --wait-start "$TMPD/$name.go"
    svc=$BG_PID
    wait_exec "$svc" "$UBIN" || { not_ok "$name: the service started"; return 1; }
    start_bg "$name.tr" "$TRACER" --pid "$svc" --duration "${CAP_DUR:-3s}" -o "$TMPD/$name.json" \
        -o "$TMPD/$name.html" --trace "$TMPD/$name.trace.json" -q "$@"
    tr=$BG_PID
    if ! wait_for_line "$TMPD/$name.tr.err" 'attached' 20; then
        not_ok "$name: tracer attached"; cat "$TMPD/$name.tr.err"; stop_pid "$svc"; CAP_RC=attach; return 1
    fi
    touch "$TMPD/$name.go"
    t0=$SECONDS
    wait_for_line "$TMPD/$name.svc.out" '^uring pid=' 10 || not_ok "$name: the service says its stuck fd"
    STUCK_FD=$(sed -n 's/^uring pid=[0-9]* stuck_fd=\([0-9-]*\)$/\1/p' "$TMPD/$name.svc.out")
    url=$(sed -n 's/.*Prometheus metrics at \(http[^ ]*\).*/\1/p' "$TMPD/$name.tr.err")
    if [ -n "$url" ]; then
        # the endpoint renders once a second: the first scrape is the first render with READ
        # and WRITE requests counted (polled, not timed: a late scrape would miss the capture),
        # the second a render later
        for _ in $(seq 30); do
            sleep 0.1
            curl -sf --max-time 2 -o "$TMPD/$name.scrape1.txt" "$url" || continue
            grep -q '^tokio_io_uring_request_duration_seconds_count{op="READ"} [1-9]' "$TMPD/$name.scrape1.txt" &&
                grep -q '^tokio_io_uring_request_duration_seconds_count{op="WRITE"} [1-9]' "$TMPD/$name.scrape1.txt" &&
                break
        done
        sleep 1.2
        curl -sf --max-time 2 -o "$TMPD/$name.scrape2.txt" "$url"
    fi
    wait_exit "$tr" 60
    CAP_RC=$RC
    echo "# $name: tracer done after $((SECONDS - t0)) s"
    stop_pid "$svc"
}

# ---- the io_uring capture ----------------------------------------------------------------------
CAP_DUR=4s uring_capture u "--file-size 262144" --metrics-addr 127.0.0.1:0
R="$TMPD/u.json" H="$TMPD/u.html" T="$TMPD/u.trace.json"
check_eq "tracer exit status" 0 "$CAP_RC"
[ -s "$R" ] && [ -s "$H" ] && [ -s "$T" ] || die_test "report.json, report.html and the trace written"
check_eq "the capture ended by its duration, before the service exited" duration "$(jq -r .capture.ended_by "$R")"
check "the service printed its stuck fd ($STUCK_FD)" test "${STUCK_FD:--1}" -ge 0
check "the JSON report has io_uring (a ring, READ and WRITE requests)" \
    jqe '.io_uring.rings >= 1 and ([.io_uring.by_opcode[].op] | index("READ") != null and index("WRITE") != null)' "$R"
check "… and the stuck READ in flight at the end, on a pipe" \
    jqe --argjson fd "$STUCK_FD" '[.io_uring.in_flight_requests[] | select(.op == "READ" and .fd == $fd and (.fd_target | startswith("pipe:[")) and .task_id != null)] | length == 1' "$R"
echo "# $(jq -c '.io_uring | {rings, submitted, completed, in_flight, consumed, unconsumed, unattributed, ops: [.by_opcode[] | "\(.op) \(.completed)"]}' "$R")"

# trace
python3 "$CHECK_TRACE" "$T" > "$TMPD/u.check"
check "the trace is valid (tests/check_trace.py)" test $? = 0
S="$TMPD/u.check"
cut -c1-600 "$S"
check_eq "the trace's io_uring requests are not cut" false "$(jq -r '.other.io_uring_cut' "$S")"
check_eq "… nor its timeline" false "$(jq -r '.other.cut' "$S")"
check_eq "… and none lacked a track" 0 "$(jq -r '.other.io_uring_requests_not_drawn' "$S")"
# the trace (~30 MB: seconds of jq or python to read it) is read once: one python3 gives the
# flows' and the tracks' verdicts below (a line each) and keeps its io_uring slices (ph X, cat
# io_uring: all the jq filters below select from) in $TI
TI="$TMPD/u.trace.io_uring.json"
TV=$(python3 - "$T" "$TI" <<'PY'
import bisect, json, re, sys
d = json.load(open(sys.argv[1]))["traceEvents"]
with open(sys.argv[2], "w") as out:
    json.dump({"traceEvents": [e for e in d if e.get("ph") == "X" and e.get("cat") == "io_uring"]}, out)

def flows(d):
    slices = {}
    for e in d:
        if e["ph"] == "X":
            slices.setdefault((e["pid"], e["tid"]), []).append(e)
    for v in slices.values():
        v.sort(key=lambda e: e["ts"])
    begins = {k: [e["ts"] for e in v] for k, v in slices.items()}
    def at(pid, tid, ts, cat):
        v = slices.get((pid, tid), [])
        i = bisect.bisect_right(begins.get((pid, tid), []), ts + 1e-6)
        for e in reversed(v[max(0, i - 64):i]):
            if e["cat"] == cat and e["ts"] - 1e-6 <= ts <= e["ts"] + e["dur"] + 1e-6:
                return e
    s = {e["id"]: e for e in d if e["ph"] == "s" and e["cat"] == "io_uring"}
    f = {e["id"]: e for e in d if e["ph"] == "f" and e["cat"] == "io_uring"}
    bad, n = [], 0
    for i in s:
        q = at(s[i]["pid"], s[i]["tid"], s[i]["ts"], "io_uring")
        p = at(f[i]["pid"], f[i]["tid"], f[i]["ts"], "poll") if i in f else None
        n += 1
        if not q or not p:
            bad.append(f"flow {i}: no request or no poll slice")
            continue
        want = q["ts"] + q["dur"] + q["args"]["complete_to_poll_ns"] / 1000
        if q["args"]["task"] != p["args"]["task"] or abs(p["ts"] - want) > 0.002 or q["args"]["in_flight"]:
            bad.append(f"flow {i}: request of task {q['args']['task']} ending {q['ts'] + q['dur']}, "
                       f"+{q['args']['complete_to_poll_ns']}ns → poll of task {p['args']['task']} at {p['ts']}")
    return "ok" if n and not bad else (bad[:3] or "no io_uring flows")

def tracks(d):
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in d if e["ph"] == "M" and e["name"] == "thread_name"}
    tracks = {k for k, v in names.items() if re.fullmatch(r"io_uring ring [1-9][0-9]*( \(\d+\))?", v)}
    on = {(e["pid"], e["tid"]) for e in d if e["ph"] == "X" and e["cat"] == "io_uring"}
    other = {(e["pid"], e["tid"]) for e in d if e["ph"] == "X" and e["cat"] != "io_uring"}
    pids = {e["pid"] for e in d if e["ph"] == "X" and e["cat"] == "poll"}
    ok = tracks and on == tracks and not (tracks & other) and {p for p, _ in tracks} <= pids
    return "ok" if ok else f"tracks {sorted(names[t] for t in tracks)[:3]}, slices on {sorted(on)[:3]}, pids {pids}"

print(flows(d))
print(tracks(d))
PY
)
check_eq "an io_uring slice per finished request (Σ by_opcode completed)" \
    "$(jq '[.io_uring.by_opcode[].completed] | add' "$R")" "$(jq .io_uring "$S")"
check_eq "… per opcode" \
    "$(jq -cS '[.io_uring.by_opcode[] | select(.completed > 0) | {(.op): .completed}] | add' "$R")" \
    "$(jq -cS '[.traceEvents[] | select(.ph == "X" and .cat == "io_uring" and (.args.in_flight | not))] | group_by(.name) | map({(.[0].name): length}) | add' "$TI")"
check_eq "an io_uring slice per request in flight at the end" "$(jq .io_uring.in_flight "$R")" \
    "$(jq .io_uring_in_flight "$S")"
consumed=$(jq .io_uring.consumed "$R"); uflows=$(jq .io_uring_flows "$S")
check "a flow arrow for each request a poll consumed ($uflows of $consumed; a poll running at the end is not in the trace)" \
    test "$uflows" -le "$consumed" -a "$uflows" -ge $((consumed - 2)) -a "$uflows" -gt 1000
check_eq "io_uring flows end in the poll that consumed the request: of its task, beginning complete_to_poll_ns after the completion" ok "$(sed -n 1p <<< "$TV")"
check_eq "io_uring tracks are named 'io_uring ring N' in the target's process, and carry every io_uring slice" ok "$(sed -n 2p <<< "$TV")"
end_us=$(jq '.other.capture_duration_ns / 1000 + .other.capture_start_offset_us' "$S")
check_eq "the stuck READ: a slice 'READ (in flight)' on the stuck fd, a pipe, of its task, to the end of the capture" 1 \
    "$(jq --argjson fd "$STUCK_FD" --argjson tend "$end_us" --argjson task "$(jq "[.io_uring.in_flight_requests[] | select(.fd == $STUCK_FD)][0].task_id" "$R")" \
        '[.traceEvents[] | select(.ph == "X" and .cat == "io_uring" and .name == "READ (in flight)" and .args.in_flight
          and .args.fd == $fd and .args.task == $task and (.args.fd_target | startswith("pipe:["))
          and ((.ts + .dur - $tend) | fabs) < 2)] | length' "$TI")"

# report.html
check "no raw metacharacters of the fd targets in the page" bash -c "! grep -qF 'dir<b>&' '$H'"
HEXPR=$(cat <<'JS'
(() => {
  const q = (s) => [...document.querySelectorAll(s)];
  const D = JSON.parse(document.getElementById('report-data').textContent);
  const rows = (id) => q('#' + id + ' tbody tr').map(tr => [...tr.children].map(td => td.textContent));
  const s = document.getElementById('io_uring');
  return {
    data_null: D.io_uring === null,
    sections: q('main section').map(s => s.id),
    nav: q('nav a').map(a => a.getAttribute('href')),
    visible: !!s && !s.hidden && s.offsetHeight > 0,
    ops: rows('uring-ops'),
    sites: rows('uring-sites'),
    inflight: rows('uring-inflight'),
    markup: s ? s.querySelectorAll('td b, td i, td script').length : null,
  };
})()
JS
)
browse uring-report "$H" "$HEXPR"
B="$TMPD/uring-report.browser.json"
no_page_errors uring-report
check "an io_uring section after the stalled tasks, shown, with its nav link" \
    jqe '(.eval.sections | index("io_uring")) == (.eval.sections | index("stalled")) + 1 and .eval.visible and (.eval.nav | index("#io_uring") != null)' "$B"
check_eq "its opcode table: the report's opcodes, submitted and completed" \
    "$(jq -c '[.io_uring.by_opcode[] | [.op, .submitted, .completed]] | sort' "$R")" \
    "$(jq -c '[.eval.ops[] | [.[0], (.[1] | gsub(",";"") | tonumber), (.[2] | gsub(",";"") | tonumber)]] | sort' "$B")"
SL=$(grep -n '// SPAWN-SITE: uring_stuck_read$' "$ROOT/sample-service/src/uring.rs" | cut -d: -f1)
check "its site table names the stuck read's site (src/uring.rs:${SL:-?}), READ, 1 in flight" \
    jqe --arg l "src/uring.rs:${SL:-?}:" '[.eval.sites[] | select((.[0] | contains($l)) and .[3] == "READ" and .[7] == "1")] | length == 1' "$B"
check "its in-flight table lists the stuck READ, fd $STUCK_FD, a pipe" \
    jqe --arg fd "$STUCK_FD" '[.eval.inflight[] | select(.[0] == "READ" and .[1] == $fd and (.[2] | startswith("pipe:[")))] | length == 1' "$B"
check_eq "no markup inside the section's cells" 0 "$(jq .eval.markup "$B")"

# an in-flight request on a file under $NASTY, shown as text. Whether a file request is in
# flight at the end is chance (~3 captures in 4 have one): when the main capture has none,
# short captures until one has
esc_page=$H esc_b=$B
for try in $(seq 9); do
    jq -e '[.io_uring.in_flight_requests[] | select(.fd_target != null and (.fd_target | contains("dir<b>&")))] | length > 0' \
        "${esc_page%.html}.json" > /dev/null && break
    esc_page=
    [ "$try" = 9 ] && break
    CAP_DUR=1s uring_capture "e$try" "--file-size 262144"
    esc_page="$TMPD/e$try.html"
done
if [ -n "$esc_page" ] && [ "$esc_page" != "$H" ]; then
    browse "uring-escape" "$esc_page" "$HEXPR"
    esc_b="$TMPD/uring-escape.browser.json"
fi
if [ -n "$esc_page" ]; then
    echo "# fd targets in flight: $(jq -c '[.eval.inflight[] | .[2]]' "$esc_b" | cut -c1-400)"
    check "a file in flight at the end: its fd target shown as text, \\xff for the byte that is not UTF-8" \
        jqe --arg p "$NASTY_SHOWN/sample-service-uring-" '[.eval.inflight[] | select(.[2] | contains($p))] | length > 0' "$esc_b"
    check "… no markup made of it" jqe '.eval.markup == 0' "$esc_b"
    check "… and the raw page holds it escaped only" bash -c "! grep -qF 'dir<b>&' '$esc_page'"
else
    not_ok "no capture had a file request in flight at its end (9 tries): the fd-target escaping went unchecked"
fi

# metrics
S1="$TMPD/u.scrape1.txt" S2="$TMPD/u.scrape2.txt"
[ -s "$S1" ] && [ -s "$S2" ] || die_test "two scrapes taken during the capture"
check "promtool check metrics accepts both scrapes" bash -c "promtool check metrics < '$S1' && promtool check metrics < '$S2'"
for fam in "tokio_io_uring_request_duration_seconds histogram" "tokio_io_uring_complete_to_poll_seconds histogram" \
           "tokio_io_uring_requests_submitted_total counter" "tokio_io_uring_requests_completed_total counter" \
           "tokio_io_uring_request_errors_total counter" "tokio_io_uring_requests_in_flight gauge"; do
    check "family: $fam" grep -q "^# TYPE $fam\$" "$S2"
done
check_eq "the metrics agree with themselves and with the report" ok "$(python3 - "$S1" "$S2" "$R" <<'PY'
import json, re, sys
def parse(path):
    v = {}
    for line in open(path):
        m = re.match(r'^(tokio_io_uring_\w+)\{op="([^"]+)"(?:,le="([^"]+)")?\} (\S+)$', line)
        if m:
            v.setdefault(m[2], {}).setdefault(m[1], {})[m[3]] = float(m[4])
    return v
s1, s2 = parse(sys.argv[1]), parse(sys.argv[2])
rep = {o["op"]: o for o in json.load(open(sys.argv[3]))["io_uring"]["by_opcode"]}
H = "tokio_io_uring_request_duration_seconds"
bad = []
for name, s in (("scrape 1", s1), ("scrape 2", s2)):
    for op, m in s.items():
        b = [v for k, v in m[H + "_bucket"].items() if k != "+Inf"]
        inf, count = m[H + "_bucket"]["+Inf"], m[H + "_count"][None]
        if b != sorted(b) or b[-1] > inf:
            bad.append(f"{name} {op}: buckets not cumulative {b}")
        if not (inf == count == m["tokio_io_uring_requests_completed_total"][None]):
            bad.append(f"{name} {op}: +Inf {inf}, _count {count}, completed {m['tokio_io_uring_requests_completed_total'][None]}")
for op in ("READ", "WRITE"):
    if not s1.get(op) or s1[op][H + "_count"][None] <= 0:
        bad.append(f"scrape 1: no {op} count")
for op, m in s2.items():
    c2, c1 = m[H + "_count"][None], s1.get(op, {}).get(H + "_count", {}).get(None, 0)
    sub = m["tokio_io_uring_requests_submitted_total"][None]
    if c2 < c1 or sub < s1.get(op, {}).get("tokio_io_uring_requests_submitted_total", {}).get(None, 0):
        bad.append(f"{op}: went back between the scrapes ({c1} → {c2})")
    if op not in rep or c2 > rep[op]["completed"] or sub > rep[op]["submitted"]:
        bad.append(f"{op}: scrape 2 ({c2} completed, {sub} submitted) beyond the final report {rep.get(op)}")
if s2.get("READ", {}).get("tokio_io_uring_requests_in_flight", {}).get(None, 0) < 1:
    bad.append("no READ in flight (the stuck one)")
print("ok" if not bad else bad[:3])
PY
)"

# ---- a target without io_uring -------------------------------------------------------------------
start_bg plain "$PBIN" serve --load 50 --pathology none --duration 20s --wait-start "$TMPD/plain.go"
PSVC=$BG_PID
wait_exec "$PSVC" "$PBIN" || not_ok "the plain service started"
start_bg plain.tr "$TRACER" --pid "$PSVC" --duration 4s -o "$TMPD/p.json" -o "$TMPD/p.html" \
    --trace "$TMPD/p.trace.json" --metrics-addr 127.0.0.1:0 -q
PTR=$BG_PID
wait_for_line "$TMPD/plain.tr.err" 'attached' 20 || { cat "$TMPD/plain.tr.err"; die_test "tracer attached to the plain service"; }
touch "$TMPD/plain.go"
sleep 1.5
url=$(sed -n 's/.*Prometheus metrics at \(http[^ ]*\).*/\1/p' "$TMPD/plain.tr.err")
curl -sf --max-time 2 -o "$TMPD/p.scrape.txt" "$url"
wait_exit "$PTR" 60
check_eq "plain: tracer exit status" 0 "$RC"
stop_pid "$PSVC"
check "plain: polls were traced" jqe '.totals.polls > 100' "$TMPD/p.json"
check_eq "plain: the JSON report's io_uring is null" null "$(jq -c .io_uring "$TMPD/p.json")"
python3 "$CHECK_TRACE" "$TMPD/p.trace.json" > "$TMPD/p.check"
check "plain: the trace is valid" test $? = 0
check_eq "plain: no io_uring slice, flow, track or otherData key in the trace" "0 0 0 0 []" \
    "$(jq -r '"\(.io_uring) \(.io_uring_in_flight) \(.io_uring_flows) \([.thread_names[] | select(test("io_uring"))] | length) \([.other | keys[] | select(test("io_uring"))])"' "$TMPD/p.check")"
browse uring-plain "$TMPD/p.html" "$HEXPR"
no_page_errors uring-plain
check "plain: report.html's data has io_uring null, the page no io_uring section or nav link" \
    jqe '.eval.data_null and (.eval.sections | index("io_uring") == null) and (.eval.sections | index("stalled") != null) and (.eval.nav | index("#io_uring") == null)' "$TMPD/uring-plain.browser.json"
[ -s "$TMPD/p.scrape.txt" ] || not_ok "plain: a scrape during the capture"
check "plain: the scrape has the usual series and no tokio_io_uring one" \
    bash -c "grep -q '^tokio_trace_polls_total' '$TMPD/p.scrape.txt' && ! grep -q 'io_uring' '$TMPD/p.scrape.txt'"
finish
