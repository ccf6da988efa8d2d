#!/bin/bash
# Intent: text read from the traced process can never become markup or break a format.
# report_tokio --hostile spawns every task at a file name holding < > & quotes, a backslash, a
# newline, "</script><script>window.__pwned=2</script>" and an <img onerror>, with a type name
# of the same kind (HOSTILE_FILE / HOSTILE_TYPE in tests/fixtures/trace/report_tokio.c), and
# --sites 60 spawns 60 more distinct sites. One capture writes JSON, HTML and a trace and serves
# metrics (--metrics-sites 20). Then:
#   - report.html: the hostile bytes never appear raw in the file (two <script> elements, the
#     page's own); in Chromium no console error, no <img>, no extra <script>, no <b> from the
#     type name, window.__pwned never set, and the exact location (as the JSON has it) shows as
#     text in the site table, the findings name it as text;
#   - report.json: valid, no raw '<';
#   - the trace: valid trace-event JSON whose poll slices are named by the exact location;
#   - the scrape: promtool accepts it; each site label unescapes to a location of the JSON
#     (newline as \n, quotes and backslashes escaped); at most 20 distinct site labels plus
#     "(other)", which counts the rest: the polls of every site add up to the total.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
. "$(dirname "$0")/report_lib.sh"
need_root
need_report_fixture
need_chromium
command -v promtool > /dev/null || die_test "promtool missing (Debian package prometheus: make deps)"

scrape() {  # DURING hook: a scrape while the workload runs
    local url
    wait_for_line "$1" 'Prometheus metrics at' 5
    url=$(sed -n 's/.*Prometheus metrics at \(http[^ ]*\).*/\1/p' "$1")
    # the endpoint renders once a second: scrape until a render has more than 20 sites (an
    # "(other)" label), up to 10 s (the fixture holds its process and the tracer until this returns)
    for _ in $(seq 50); do
        sleep 0.2
        curl -sf --max-time 2 -o "$TMPD/scrape.txt" "$url" || continue
        grep -q '^tokio_trace_polls_total{site="(other)"}' "$TMPD/scrape.txt" && break
    done
}
R="$TMPD/r"
DURING=scrape capture_fixture hostile "--duration-ms 1500 --hostile --sites 60" -o "$R.json" -o "$R.html" \
    --trace "$TMPD/t.json" --metrics-addr 127.0.0.1:0 --metrics-sites 20 --stall-threshold 300ms -q
check_eq "tracer exit status" 0 "$CAP_RC"
[ -s "$R.html" ] && [ -s "$R.json" ] && [ -s "$TMPD/t.json" ] || { cat "$CAP_ERR"; die_test "reports written"; }

# --- HTML, as bytes
for raw in '<script>window.__pwned' '<img src=x' '<b>bold</b>' 'onerror="window'; do
    check "report.html never holds '$raw' raw" bash -c "! grep -qF '$raw' '$R.html'"
done
check_eq "two <script> elements in the file, the page's own" "2 2" \
    "$(grep -o '<script' "$R.html" | wc -l) $(grep -o '</script' "$R.html" | wc -l)"

# --- HTML, in a browser
EXPR=$(cat <<'JS'
(() => ({
  rendered: document.body.dataset.rendered,
  pwned: typeof window.__pwned,
  imgs: document.querySelectorAll('img').length,
  scripts: document.scripts.length,
  injected_b: document.querySelectorAll('main b:not(.verdict b), td b, li b, code b, .detail b').length,
  locs: [...document.querySelectorAll('#sites td.loc')].map(td => td.textContent),
  stalled_locs: [...document.querySelectorAll('#stalled td.loc')].map(td => td.textContent),
  findings: document.querySelector('#findings ol.findings').textContent,
  options: [...document.querySelectorAll('#dist-site option')].map(o => o.textContent),
}))()
JS
)
check "chromium opened the page" browse report-hostile "$R.html" "$EXPR"
B="$TMPD/report-hostile.browser.json"
no_page_errors report-hostile
check_eq "the script ran to the end" yes "$(jq -r .eval.rendered "$B")"
check_eq "window.__pwned never set" undefined "$(jq -r .eval.pwned "$B")"
check_eq "no <img> element" 0 "$(jq .eval.imgs "$B")"
check_eq "no extra <script> element" 2 "$(jq .eval.scripts "$B")"
check_eq "no <b> element from a type name" 0 "$(jq .eval.injected_b "$B")"
check_eq "every location round-trips: bytes → JSON → text in the site table" same "$(python3 - "$R.json" "$B" <<'PY'
import json, sys
rep, page = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))["eval"]
want = {s["location"] for s in rep["spawn_sites"] if s["location"]}
hostile = 'src/<img src=x onerror="window.__pwned=1">&amp;\'q\'\\"</script><script>window.__pwned=2</script>\n.rs:'
bad = [w for w in want if not w.startswith(hostile)]
missing = want - set(page["locs"])
print("same" if not bad and not missing and len(want) > 60 else f"bad={bad[:2]} missing={list(missing)[:2]}")
PY
)"
check "the stalled table shows the hostile location as text" \
    bash -c "jq -r '.eval.stalled_locs[0]' '$B' | grep -qF '</script><script>window.__pwned=2</script>'"
check "the findings show it as text" bash -c "jq -r .eval.findings '$B' | grep -qF 'src/<img src=x onerror=\"window.__pwned=1\">&amp;'"
check "the findings show the type name as text" bash -c "jq -r .eval.findings '$B' | grep -qF 'Evil<\"</script><b>bold</b>&'"
check "the site menu shows it as text" bash -c "jq -r '.eval.options[1]' '$B' | grep -qF '<img src=x'"

# --- JSON report
check "report.json is valid JSON" jq -e . "$R.json" > /dev/null
check "report.json has no raw '<'" bash -c "! grep -q '<' '$R.json'"

# --- trace
check "the trace is valid trace-event JSON" python3 tests/check_trace.py "$TMPD/t.json"
check_eq "poll slices are named by the exact hostile locations" same "$(python3 - "$R.json" "$TMPD/t.json" <<'PY'
import json, sys
locs = {s["location"] for s in json.load(open(sys.argv[1]))["spawn_sites"] if s["location"]}
names = {e["name"] for e in json.load(open(sys.argv[2]))["traceEvents"] if e.get("cat") == "poll"}
print("same" if names and names <= locs else sorted(names - locs)[:3])
PY
)"

# --- metrics
[ -s "$TMPD/scrape.txt" ] || die_test "scrape taken"
check "promtool check metrics accepts the hostile scrape" bash -c "promtool check metrics < '$TMPD/scrape.txt'"
check_eq "site labels unescape to the JSON's locations; 20 of them plus (other)" ok "$(python3 - "$R.json" "$TMPD/scrape.txt" <<'PY'
import json, re, sys
locs = {s["location"] for s in json.load(open(sys.argv[1]))["spawn_sites"] if s["location"]}
labels, polls = set(), 0
for line in open(sys.argv[2], encoding="utf-8"):
    m = re.match(r'tokio_trace_polls_total\{site="((?:[^"\\]|\\.)*)"\} (\d+)$', line)
    if not m:
        continue
    v = re.sub(r'\\(.)', lambda x: {"n": "\n", "\\": "\\", '"': '"'}[x.group(1)], m.group(1))
    labels.add(v)
    polls += int(m.group(2))
pseudo = {"(other)", "(spawned before the trace)"}
real = labels - pseudo
errs = []
if not real <= locs:
    errs.append(f"not locations: {sorted(real - locs)[:2]}")
if len(real) != 20:
    errs.append(f"{len(real)} site labels, want 20")
if "(other)" not in labels:
    errs.append("no (other)")
print("ok" if not errs else "; ".join(errs))
PY
)"
check_eq "the polls of every label add up to the scrape's total" ok "$(python3 - "$TMPD/scrape.txt" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
by_site = sum(int(x) for x in re.findall(r'^tokio_trace_polls_total\{.*\} (\d+)$', text, re.M))
hits = int(re.search(r'^tokio_trace_probe_hits_total\{probe="task_poll_begin"\} (\d+)$', text, re.M).group(1))
# the snapshot is taken between drains: polls analyzed <= BPF hits counted just before
print("ok" if 0 < by_site <= hits else f"sites {by_site} hits {hits}")
PY
)"
finish
