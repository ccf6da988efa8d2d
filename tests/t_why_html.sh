#!/bin/bash
# Intent: report.html's "Where the time went" (tracer/report/html.c, tracer/report/html/report.js) on a synthetic
# capture, in headless Chromium (tests/unit/html_why_test.c says what it checks): flame graphs
# with one block per distinct stack prefix, zoom, hover, blocked-stack tables, the findings' why
# lines, hostile frame names kept as text, no console error, CSP violation or request; no section
# without data; bounds on a big profile.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/report_lib.sh"
need_chromium
need_file "$BUILD/tests/html_why_test" "unit test binary"
mkdir -p "$SHOTS"
(cd "$ROOT" && "$BUILD/tests/html_why_test" "$TMPD") > "$TMPD/unit.out" 2>&1
rc=$?
grep -E '^(not ok|#)' "$TMPD/unit.out"
cp -f "$TMPD/why.png" "$SHOTS/why-synthetic.png" 2>/dev/null
check_eq "html_why_test: all checks pass ($(grep -c '^ok' "$TMPD/unit.out") ok)" 0 "$rc"
check "html_why_test: ran its checks" test "$(grep -c '^ok' "$TMPD/unit.out")" -gt 20
finish
