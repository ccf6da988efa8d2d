#!/bin/bash
# Intent: report files are chosen and written the way docs/reports.md says, and fail cleanly.
#   - the suffix chooses the format (.html/.htm → HTML, else JSON); -o repeats; JSON and HTML
#     of one capture agree (the same number of findings); "-o - -o FILE.html": JSON on stdout,
#     HTML in the file, the summary on stderr;
#   - an unwritable path (missing directory, a directory) for -o or --trace: one line naming the
#     file, exit 4, before anything is attached, no file and no temporary file left — also for
#     the other, writable outputs of the same command;
#   - usage errors (exit 3): the same path twice, "--trace -", "-o -" for HTML;
#   - a write that fails at the end (a 64 KB tmpfs fills up): exit 2, one line per file that
#     failed, that file absent and no temporary left, the other outputs written.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
. "$(dirname "$0")/report_lib.sh"
need_root
need_report_fixture

# --- formats, several outputs, stdout
capture_fixture fmt "--duration-ms 600" -o "$TMPD/a.json" -o "$TMPD/b.HTM" -o "$TMPD/c.report" \
    --stall-threshold 300ms -q
check_eq "tracer exit status" 0 "$CAP_RC"
check "a.json is JSON" jq -e .schema_version "$TMPD/a.json"
check "c.report (no known suffix) is JSON" jq -e .schema_version "$TMPD/c.report"
check "b.HTM is HTML" grep -q '^<!DOCTYPE html>' "$TMPD/b.HTM"
check "says where each file is" bash -c "grep -q 'report written to $TMPD/a.json' '$CAP_ERR' && grep -q 'HTML report written to $TMPD/b.HTM' '$CAP_ERR'"
nf=$(jq '.findings | length' "$TMPD/a.json")
check "JSON and HTML agree: $nf findings" grep -q "<b>$nf finding" "$TMPD/b.HTM"
check "no temporary file left" bash -c "! ls '$TMPD' | grep -q '\.tmp\.'"

capture_fixture stdout "--duration-ms 300" -o - -o "$TMPD/s.html"
check_eq "-o - -o s.html: exit status" 0 "$CAP_RC"
check "stdout is exactly the JSON report" jq -e .schema_version "$TMPD/stdout.tr.out"
check "s.html written" grep -q '^<!DOCTYPE html>' "$TMPD/s.html"
check "the summary went to stderr" grep -q '^Spawn sites by busy time' "$CAP_ERR"

# --- unwritable paths: before anything is attached
start_bg target "$BUILD/fixtures/fake_tokio" --hold
TGT=$BG_PID
wait_for_line "$TMPD/target.out" '^pid ' 10 || die_test "fake_tokio started"
mkdir -p "$TMPD/w" "$TMPD/w/adir.html"
fails_early() {  # fails_early LABEL WANT_EXIT ARGS…
    local label=$1 want=$2 rc
    shift 2
    rm -f "$TMPD/w/ok.json"
    "$TRACER" --pid "$TGT" "$@" > "$TMPD/fe.out" 2> "$TMPD/fe.err"
    rc=$?
    check_eq "$label: exit $want" "$want" "$rc"
    check_eq "$label: one line on stderr" 1 "$(wc -l < "$TMPD/fe.err")"
    check "$label: nothing attached" bash -c "! grep -q attached '$TMPD/fe.err'"
    check_eq "$label: the target's probe semaphores are 0" 0 "$(sem_total "$TGT")"
    check "$label: no file, no temporary file" bash -c "[ ! -e '$TMPD/w/ok.json' ] && ! ls -R '$TMPD/w' | grep -q '\.tmp\.'"
    cat "$TMPD/fe.err"
}
fails_early "-o into a missing directory" 4 -o "$TMPD/w/ok.json" -o "$TMPD/missing/r.html"
check "… the message names the file and the reason" grep -q "cannot write the HTML report $TMPD/missing/r.html: its directory does not exist" "$TMPD/fe.err"
fails_early "--trace into a missing directory" 4 -o "$TMPD/w/ok.json" --trace "$TMPD/missing/t.json"
check "… names the trace" grep -q "cannot write the trace $TMPD/missing/t.json" "$TMPD/fe.err"
fails_early "-o onto a directory" 4 -o "$TMPD/w/ok.json" -o "$TMPD/w/adir.html"
check "… says it is a directory" grep -q "Is a directory" "$TMPD/fe.err"
fails_early "the same path twice" 3 -o "$TMPD/w/ok.json" -o "$TMPD/w/ok.json"
fails_early "--trace -" 3 -o "$TMPD/w/ok.json" --trace -
fails_early "--trace onto an -o file" 3 -o "$TMPD/w/ok.json" --trace "$TMPD/w/ok.json"
stop_pid "$TGT"

# --- a write that fails at the end
mkdir -p "$TMPD/small"
if mount -t tmpfs -o size=64k tetsmall "$TMPD/small"; then
    trap 'umount "$TMPD/small" 2>/dev/null; _cleanup' EXIT
    capture_fixture full "--duration-ms 600" -o "$TMPD/small/r.html" --trace "$TMPD/small/t.json" \
        -o "$TMPD/big.json" -q
    check_eq "full disk: exit 2" 2 "$CAP_RC"
    check "full disk: the HTML report's error" grep -q "cannot write the HTML report $TMPD/small/r.html: No space left on device" "$CAP_ERR"
    check "full disk: the trace's error" grep -q "cannot write the trace $TMPD/small/t.json: No space left on device" "$CAP_ERR"
    check_eq "full disk: nothing left in the small file system" "" "$(ls -A "$TMPD/small")"
    check "full disk: the other output is written" jq -e .schema_version "$TMPD/big.json"
    umount "$TMPD/small"
else
    not_ok "mount a 64 KB tmpfs (root is needed)"
fi
finish
