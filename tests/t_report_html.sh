#!/bin/bash
# Intent: report.html is a page a person can use, shown by a real browser. The usdt sample service
# (tokio 1.53, every pathology, 200 req/s of load, 2 workers) is traced for 5 s with -o report.json
# -o report.html --trace trace.json (one capture, three files) and a Prometheus scrape is taken
# during the capture. Headless Chromium (tests/browser.py: the DevTools protocol over a pipe)
# opens report.html and must see
#   - zero console errors, uncaught exceptions, failed loads or CSP violations, and no network
#     request at all (self-contained: the CSP allows only the inline script and style);
#   - every section, drawn: the findings in plain language first (one entry per kind and site,
#     as many findings as the JSON has, the lost_waker and stalled_task sites named), the
#     distributions (SVG bars, overall and for a chosen site), the task timeline (a canvas with
#     rows, zooming changes its range), the worker heat map (one row per worker, painted), the
#     stalled/lost-waker table (the JSON's stalled + lost_waker findings), and the sortable site
#     and task tables (a header click re-sorts; the sites' findings named by kind, the names
#     coming from the tracer's table in the page's data);
#   - a screenshot, kept in build/test-logs/screenshots/report-sample*.png;
# the HTML is under 2 MB and has no external reference; the trace is valid trace-event JSON;
# promtool accepts the scrape.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
. "$(dirname "$0")/report_lib.sh"
need_root
need_tracer
need_chromium
command -v promtool > /dev/null || die_test "promtool missing (Debian package prometheus: make deps)"
need_sample 1.53 usdt; BIN=$SAMPLE

R="$TMPD/report"
start_bg svc "$BIN" serve --pathology all --load 200 --workers 2 --duration 30s --wait-start "$TMPD/start"
SVC=$BG_PID
wait_exec "$SVC" "$BIN" || not_ok "the service started"
start_bg tr "$TRACER" --pid "$SVC" --duration 5s -o "$R.json" -o "$R.html" --trace "$TMPD/trace.json" \
    --metrics-addr 127.0.0.1:0 -q
TR=$BG_PID
wait_for_line "$TMPD/tr.err" 'attached' 20 || { cat "$TMPD/tr.err"; die_test "tracer attached"; }
touch "$TMPD/start"
sleep 3
url=$(sed -n 's/.*Prometheus metrics at \(http[^ ]*\).*/\1/p' "$TMPD/tr.err")
check "a scrape during the capture" curl -sf -o "$TMPD/scrape.txt" "$url"
check "promtool check metrics accepts it" bash -c "promtool check metrics < '$TMPD/scrape.txt'"
wait_exit "$TR" 60
check_eq "tracer exit status" 0 "$RC"
stop_pid "$SVC"
cat "$TMPD/tr.err"
[ -s "$R.html" ] && [ -s "$R.json" ] || die_test "report.json and report.html written"
ok "report.json and report.html from one capture"
size=$(stat -c %s "$R.html")
echo "report.html: $((size / 1024)) KB, report.json: $(( $(stat -c %s "$R.json") / 1024 )) KB"
check "report.html is under 2 MB" test "$size" -lt $((2 * 1024 * 1024))
check "no external src/href in report.html" bash -c "! grep -Eiq '(src|href)=\"(https?:)?//' '$R.html'"
check "a Content-Security-Policy forbids anything but its own script and style" \
    grep -q "default-src 'none'; script-src 'sha256-" "$R.html"
check "the trace of the same capture is valid trace-event JSON" python3 tests/check_trace.py "$TMPD/trace.json"

# what the page shows
EXPR=$(cat <<'JS'
(() => {
  const q = (s) => [...document.querySelectorAll(s)];
  const D = JSON.parse(document.getElementById('report-data').textContent);
  const painted = (id) => {
    const c = document.getElementById(id);
    if (!c) return 0;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i + 3] && (d[i] < 240 || d[i + 1] < 240 || d[i + 2] < 240)) n++;
    return n;
  };
  const r = {
    rendered: document.body.dataset.rendered,
    sections: q('main section').map(s => s.id),
    first_section: document.querySelector('main section').id,
    finding_items: q('#findings ol.findings li').length,
    verdict: (document.querySelector('#findings .verdict') || {}).textContent || '',
    findings_text: document.getElementById('findings').textContent,
    dist_bars: q('#distributions figure').map(f => f.querySelectorAll('rect').length),
    site_options: q('#dist-site option').length,
    timeline_rows: (D.timeline.tasks || []).length,
    timeline_painted: painted('tl-canvas'),
    heat_rows: D.heat.rows.length,
    heat_painted: painted('hm-canvas'),
    workers: D.workers.length,
    stalled_rows: q('#stalled tbody tr').length,
    stalled_text: document.getElementById('stalled').textContent,
    site_rows: q('#sites tbody tr').length,
    sites_text: document.getElementById('sites').textContent,
    task_rows: q('#tasks tbody tr').length,
  };
  return r;
})()
JS
)
# interactions, after the screenshot (which shows the page as it opens)
AFTER=$(cat <<'JS'
(() => {
  const q = (s) => [...document.querySelectorAll(s)];
  const r = {};
  const sel = document.getElementById('dist-site');
  sel.selectedIndex = 1;
  sel.dispatchEvent(new Event('change'));
  r.site_dist_bars = q('#distributions figure').map(f => f.querySelectorAll('rect').length);
  const before = document.getElementById('tl-range').textContent;
  document.getElementById('tl-in').click();
  r.zoomed = document.getElementById('tl-range').textContent !== before;
  const th = q('#sites th').find(t => t.textContent === 'Polls');
  th.click();
  const polls = () => q('#sites tbody tr').map(tr => Number(tr.children[5].textContent.replace(/,/g, '')));
  r.polls_desc = polls();
  th.click();
  r.polls_asc = polls();
  return r;
})()
JS
)
check "chromium opened the page" browse report-sample "$R.html" "$EXPR" "$AFTER"
B="$TMPD/report-sample.browser.json"
cat "$B" | head -c 3000; echo
no_page_errors report-sample
check_eq "no network request" "[]" "$(jq -c .requests "$B")"
check_eq "the script ran to the end" yes "$(jq -r .eval.rendered "$B")"
check_eq "sections" "findings why distributions timeline heatmap stalled sites tasks" "$(jq -r '.eval.sections | join(" ")' "$B")"
check_eq "the findings come first" findings "$(jq -r .eval.first_section "$B")"
nf=$(jq '.findings | length' "$R.json")
check "the sample's pathologies gave findings" test "$nf" -gt 0
check "the verdict counts the JSON's $nf findings" bash -c "jq -r .eval.verdict '$B' | grep -q '^$nf finding'"
check_eq "one entry per finding kind and spawn site" \
    "$(jq '[.findings[] | "\(.kind) \(.location) \(.type_name)"] | unique | length' "$R.json")" \
    "$(jq .eval.finding_items "$B")"
for site in lost_waker stalled_task; do
    line=$(grep -n "// SPAWN-SITE: $site\$" sample-service/src/pathology.rs | cut -d: -f1)
    check "findings name the $site site (pathology.rs:$line)" \
        bash -c "jq -r .eval.findings_text '$B' | grep -q 'pathology.rs:$line:'"
    check "the stalled/lost-waker table lists the $site site" \
        bash -c "jq -r .eval.stalled_text '$B' | grep -q 'pathology.rs:$line:'"
done
check_eq "stalled/lost-waker rows = the JSON's stalled + lost_waker findings" \
    "$(jq '[.findings[] | select(.kind == "stalled" or .kind == "lost_waker")] | length' "$R.json")" \
    "$(jq .eval.stalled_rows "$B")"
# the site table names its findings by kind, with the tracer's names (the page's data: kinds)
for kind in long_poll lost_waker; do
    check "the site table counts the $kind findings by name" \
        bash -c "jq -r .eval.sites_text '$B' | grep -qE '$kind [0-9]'"
done
check "three distributions drawn with bars" test "$(jq '[.eval.dist_bars[] | select(. > 0)] | length' "$B")" = 3
check "per-site distributions offered" test "$(jq .eval.site_options "$B")" -gt 2
check "a chosen site's distributions drawn" test "$(jq '.eval_after.site_dist_bars | add' "$B")" -gt 0
check "the timeline has rows and is painted" test "$(jq '.eval.timeline_rows' "$B")" -gt 5 -a "$(jq .eval.timeline_painted "$B")" -gt 1000
check_eq "zooming the timeline changes its range" true "$(jq .eval_after.zoomed "$B")"
check_eq "a heat map row per worker" "$(jq '.workers | length' "$R.json")" "$(jq .eval.heat_rows "$B")"
check "the heat map is painted" test "$(jq .eval.heat_painted "$B")" -gt 1000
check_eq "a site table row per spawn site" "$(jq '.spawn_sites | length' "$R.json")" "$(jq .eval.site_rows "$B")"
check "task table rows" test "$(jq .eval.task_rows "$B")" -gt 10
check_eq "clicking Polls sorts the sites by polls, descending" "$(jq -c '.eval_after.polls_desc | sort | reverse' "$B")" "$(jq -c .eval_after.polls_desc "$B")"
check_eq "clicking again sorts ascending" "$(jq -c '.eval_after.polls_asc | sort' "$B")" "$(jq -c .eval_after.polls_asc "$B")"

shot="$SHOTS/report-sample.png"
check "screenshot saved: $shot" test -s "$shot"
dims=$(python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(24); print(*struct.unpack(">II", d[16:24]))' "$shot")
echo "screenshot $shot: $dims (tiles: $(ls "$SHOTS"/report-sample-*.png | wc -l))"
check "the screenshot is the whole page (1400 wide, over 2500 tall)" test "${dims% *}" = 1400 -a "${dims#* }" -gt 2500
check "the screenshot is not blank (over 100 KB of PNG)" test "$(stat -c %s "$shot")" -gt 100000
finish
