#!/bin/bash
# Intent: --trace writes a Chrome trace-event file that the Perfetto UI and chrome://tracing can
# load, faithful to the capture and bounded. A capture of report_tokio (two workers, a timer
# thread outside the runtime, cross-thread wakes, parks) with --trace and -o report.json:
#   - tests/check_trace.py accepts it: every event has ph, ts, pid, tid; slices have dur and nest
#     per thread; every flow start has exactly one end, from a "wake" slice to a "poll" slice of
#     the same task; every thread and process is named;
#   - it is faithful: one poll slice per poll and one wake slice per wake of the JSON report, a
#     flow arrow for most wakes, park slices, one spawn instant per spawn, poll slices named by
#     the spawn sites of the report, threads named "worker 0" / "worker 1" and the timer thread
#     "outside the runtime";
#   - it is bounded: with --timeline-events 2000 the trace keeps the last 2000 timeline events,
#     says so (otherData.cut, a "trace cut" instant, a line on stderr), and is still valid;
#     report.html of the same capture says its timeline is cut too.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
. "$(dirname "$0")/report_lib.sh"
need_root
need_report_fixture

T="$TMPD/t.json" R="$TMPD/r.json"
capture_fixture full "--duration-ms 1500" --trace "$T" -o "$R" -q
check_eq "tracer exit status" 0 "$CAP_RC"
check "says where the trace is" grep -q "trace written to $T" "$CAP_ERR"
python3 tests/check_trace.py "$T" > "$TMPD/check.out"
check "valid trace-event JSON (tests/check_trace.py)" test $? = 0
cat "$TMPD/check.out" | cut -c1-1500
S="$TMPD/check.out"
[ -s "$R" ] || die_test "report written"
check_eq "drops (the comparison below needs none)" 0 "$(jqr "$R" .totals.drops)"
check_eq "not cut" false "$(jq -r .other.cut "$S")"
check_eq "a poll slice per poll of the report" "$(jqr "$R" .totals.polls)" "$(jq .polls "$S")"
check_eq "a wake slice per wake of the report" "$(jqr "$R" .totals.wakes)" "$(jq .wakes "$S")"
check "flow arrows for most wakes (≥ 90%)" test "$(jq '.flows * 10 >= .wakes * 9 and .flows > 100' "$S")" = true
check "park slices" test "$(jq .parks "$S")" -gt 10
check_eq "a spawn instant per spawn" "$(jqr "$R" .totals.spawns)" \
    "$(jq '[.traceEvents[] | select(.ph == "i" and (.name | startswith("spawn task")))] | length' "$T")"
check_eq "poll slices are named by the report's spawn sites" ok "$(python3 - "$R" "$T" <<'PY'
import json, sys
locs = {s["location"] for s in json.load(open(sys.argv[1]))["spawn_sites"] if s["location"]}
names = {e["name"] for e in json.load(open(sys.argv[2]))["traceEvents"] if e.get("cat") == "poll"}
print("ok" if names and names <= locs and len(names) >= 4 else sorted(names - locs)[:3])
PY
)"
check "threads named worker 0 and worker 1" \
    bash -c "jq -r '.thread_names[]' '$S' | grep -q '^worker 0 ' && jq -r '.thread_names[]' '$S' | grep -q '^worker 1 '"
check "the timer thread is named as outside the runtime" \
    bash -c "jq -r '.thread_names[]' '$S' | grep -q 'outside the runtime'"
check_eq "wakes from the timer thread (outside the runtime) have flows to worker polls" ok "$(python3 - "$T" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["traceEvents"]
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in d if e["ph"] == "M" and e["name"] == "thread_name"}
s = {e["id"]: e for e in d if e["ph"] == "s"}
f = {e["id"]: e for e in d if e["ph"] == "f"}
n = sum(1 for i in s if "outside" in names[(s[i]["pid"], s[i]["tid"])] and names[(f[i]["pid"], f[i]["tid"])].startswith("worker"))
print("ok" if n > 10 else n)
PY
)"

# bounded
T2="$TMPD/t2.json"
capture_fixture cut "--duration-ms 1000" --trace "$T2" -o "$TMPD/r2.html" --timeline-events 2000 -q
check_eq "tracer exit status (cut)" 0 "$CAP_RC"
check "stderr says the trace was cut" grep -q "the trace was cut: it keeps the last 2000 of" "$CAP_ERR"
python3 tests/check_trace.py "$T2" > "$TMPD/check2.out"
check "the cut trace is valid too" test $? = 0
check_eq "otherData: cut, 2000 kept of more" "true 2000 true" \
    "$(jq -r '"\(.other.cut) \(.other.timeline_events_kept) \(.other.timeline_events_total > 2000)"' "$TMPD/check2.out")"
check_eq "a 'trace cut' instant marks where it starts" 1 \
    "$(jq '[.traceEvents[] | select(.ph == "i" and (.name | startswith("trace cut:")))] | length' "$T2")"
check "report.html of the same capture says its timeline is cut" grep -q 'cover the end of the capture only' "$TMPD/r2.html"
check "--timeline-events below 1000 is a usage error" bash -c "'$TRACER' --pid 1 --trace '$TMPD/x.json' --timeline-events 10 2>/dev/null; test \$? = 3"
finish
