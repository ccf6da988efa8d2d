# Helpers of the report tests (tests/t_report_*.sh). Source after lib.sh and trace_lib.sh.
REPORT_FX="$BUILD/fixtures/report_tokio"
BROWSER_PY="$ROOT/tests/browser.py"
# Screenshots the browser tests take are kept here for a person to look at.
SHOTS="$BUILD/test-logs/screenshots"

need_report_fixture() {
    need_tracer
    need_file "$REPORT_FX" "fixture report_tokio"
}

need_chromium() {
    command -v chromium > /dev/null || die_test "chromium missing (scripts/packages.txt: make deps installs it)"
}

# capture_fixture NAME "FIXTURE ARGS" TRACER ARGS…: runs report_tokio with FIXTURE ARGS, traces
# it with the tracer (its args after the fixture's) until the workload is done, stops the
# tracer with SIGINT. Sets CAP_RC (the tracer's exit status) and CAP_ERR (its stderr file);
# the fixture's output is $TMPD/NAME.fx.out. While the capture runs, calls the function named
# by $DURING (if set) with the tracer's stderr file.
capture_fixture() {
    local name=$1 fxargs=$2 fpid tpid
    shift 2
    rm -f "$TMPD/$name.go"
    # shellcheck disable=SC2086
    start_bg "$name.fx" "$REPORT_FX" $fxargs --go "$TMPD/$name.go" --hold
    fpid=$BG_PID
    wait_for_line "$TMPD/$name.fx.out" '^pid ' 10 || { not_ok "$name: fixture started"; return 1; }
    start_bg "$name.tr" "$TRACER" --pid "$fpid" "$@"
    tpid=$BG_PID
    CAP_ERR="$TMPD/$name.tr.err"
    if ! wait_for_line "$CAP_ERR" 'attached' 20; then
        not_ok "$name: tracer attached"; cat "$CAP_ERR"; stop_pid "$fpid"; CAP_RC=attach; return 1
    fi
    touch "$TMPD/$name.go"
    if [ -n "${DURING:-}" ]; then "$DURING" "$CAP_ERR"; fi
    wait_for_line "$TMPD/$name.fx.out" '^done$' 30 || not_ok "$name: fixture finished"
    sleep 0.2
    kill -INT "$tpid"
    wait_exit "$tpid" 60
    CAP_RC=$RC
    stop_pid "$fpid"
}

# browse NAME PAGE [JS EXPRESSION [JS AFTER]]: opens PAGE in headless Chromium (tests/browser.py),
# evaluates EXPRESSION, takes the screenshot $SHOTS/NAME.png (and NAME-1.png… tiles), then
# evaluates AFTER (interactions); the result JSON is $TMPD/NAME.browser.json
browse() {
    local name=$1 page=$2 expr=${3:-null} after=${4:-null}
    mkdir -p "$SHOTS"
    python3 "$BROWSER_PY" --page "$page" --screenshot "$SHOTS/$name.png" --tile-height 1100 \
        --eval "$expr" --eval-after "$after" > "$TMPD/$name.browser.json"
}

# no_page_errors NAME: ok when the browser saw no console error, exception, failed load or CSP
# violation (the first three are shown otherwise)
no_page_errors() {
    local b="$TMPD/$1.browser.json" n
    n=$(jq '.errors | length' "$b" 2>/dev/null)
    if [ "$n" = 0 ]; then ok "$1: no console errors, exceptions, failed loads or CSP violations"
    else not_ok "$1: $n console errors etc., first: $(jq -c '.errors[:3]' "$b" 2>/dev/null | cut -c1-600)"; fi
}
