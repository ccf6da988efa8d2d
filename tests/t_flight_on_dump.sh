#!/bin/bash
# Intent: --on-dump CMD hands each complete flight-recorder dump to a command (docs/flight-recorder.md)
# — on the usdt sample service (Tokio 1.53, 100 requests/s: dumps of ~1.5 MB), four dumps by SIGUSR1, the recorder started
# with SIGCHLD ignored (inherited over exec: it resets it, or it could reap none of its children):
#  - the command gets the dump's three files as "$@" (name.json, name.html, name.trace.json in
#    --dump-dir) and TET_DUMP_DIR / _NAME / _INDEX / _TRIGGER, and when it runs each file is
#    there and complete (the JSON and the trace parse, the page ends with </html>);
#  - a failing command (exit 3, dump 1) is one warning line naming the dump and the status, is
#    counted (the next dump's flight_recorder.on_dump.failed, the recorder's last line), and the
#    recorder goes on: dump 2 is written and handed over;
#  - one at a time: dump 3, complete while dump 2's command still runs (it waits for a file the
#    test makes once the recorder is ending), is not handed over, counted as skipped;
#  - --dump-max-bytes 1M (every older dump goes) does not remove the dump whose command still
#    runs: dump 2's files are there when its command ends, after dumps 3 and 4 were written;
#  - at the end (SIGINT with dump 4 queued) the last dump waits for dump 2's command, then is
#    handed over, and the recorder waits for that command too;
#  - the command's stdout goes to stderr (the tracer's stdout stays empty); --on-dump without
#    --flight-recorder is refused.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
need_sample 1.53 usdt; bin=$SAMPLE

expect_fail "--on-dump without --flight-recorder" 3 "--on-dump needs --flight-recorder WINDOW" \
    "$TRACER" --pid 1 --on-dump true
expect_fail "--on-dump ''" 3 "--on-dump: empty command" \
    "$TRACER" --pid 1 --flight-recorder 2s --on-dump ''

H="$TMPD/hook.sh" LOG="$TMPD/hook.log" C="$TMPD/copies"
mkdir -p "$C"
cat > "$H" <<'EOF'
# dump 1's fails (exit 3); dump 2's runs until the test makes $HOOK_LOG.go (at most 30 s), then
# says whether its files are still there; dump 4's sleeps 1 s; each logs what it got and copies
# the JSON (the budget removes older dumps)
n=$(( $(cat "$HOOK_LOG.n" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$HOOK_LOG.n"
c=complete
[ $# = 3 ] || c="argc $#"
jq -e .flight_recorder "$1" > /dev/null 2>&1 || c="json incomplete"
[ "$(tail -c 8 "$2")" = "</html>" ] || [ "$(tail -c 9 "$2")" = "</html>
" ] || c="html incomplete"
jq -e .traceEvents "$3" > /dev/null 2>&1 || c="trace incomplete"
cp "$1" "$HOOK_COPIES/$TET_DUMP_INDEX.json"
echo "call $n|$TET_DUMP_DIR|$TET_DUMP_NAME|$TET_DUMP_INDEX|$TET_DUMP_TRIGGER|$1|$2|$3|$c" >> "$HOOK_LOG"
echo "hook stdout $n"
case $TET_DUMP_INDEX in
1)  exit 3 ;;
2)  for i in $(seq 300); do [ -e "$HOOK_LOG.go" ] && break; sleep 0.1; done
    e=present; for f in "$@"; do [ -s "$f" ] || e="missing $f"; done
    echo "$e" > "$HOOK_LOG.end" ;;
4)  sleep 1; echo "done 4" > "$HOOK_LOG.done" ;;
esac
exit 0
EOF
# wait_count FILE REGEX N SECONDS: FILE has N lines matching
wait_count() {
    local i
    for i in $(seq $(( $4 * 10 ))); do
        [ "$(grep -cE "$2" "$1" 2>/dev/null)" -ge "$3" ] && return 0; sleep 0.1
    done
    return 1
}
start_bg svc "$bin" serve --workers 2 --pathology blocking_call --load 100 --duration 60s
SP=$BG_PID
wait_for_line "$TMPD/svc.out" '^listening on ' 30 || die_test "service listening: $(cat "$TMPD/svc.err")"
D="$TMPD/dumps"; mkdir -p "$D"
export HOOK_LOG="$LOG" HOOK_COPIES="$C"
# started with SIGCHLD ignored (python3 execs the tracer: BG_PID is the tracer's);
# --post-trigger 1s: the SIGINT after dump 4's trigger comes before that dump is due
start_bg fr python3 -c 'import signal, os, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); os.execvp(sys.argv[1], sys.argv[1:])' \
    "$TRACER" --pid "$SP" --flight-recorder 2s --post-trigger 1s --nice 0 \
    --dump-dir "$D" --dump-max-bytes 1M --on-dump "bash '$H' \"\$@\"" -q
FRP=$BG_PID
wait_for_line "$TMPD/fr.err" "flight recorder: keeping" 30 || die_test "recorder attached: $(cat "$TMPD/fr.err")"
kill -USR1 "$FRP"
wait_for_line "$TMPD/fr.err" "on-dump for dump 1 exited with status 3" 20 || not_ok "dump 1's command reaped"
kill -USR1 "$FRP"
wait_for_line "$LOG" "^call 2\|" 20 || not_ok "dump 2 handed over"
kill -USR1 "$FRP"
wait_for_line "$TMPD/fr.err" "on-dump not run for dump 3" 20 || not_ok "dump 3 skipped"
cp "$D"/*[0-9]Z-sigusr1.json "$C/" 2>/dev/null # dump 3's JSON: dump 4 removes it
kill -USR1 "$FRP"
wait_count "$TMPD/fr.err" "flight recorder: trigger sigusr1: " 4 10 || not_ok "dump 4 triggered"
kill -INT "$FRP"
wait_for_line "$TMPD/fr.err" "ending: the last dump \(4\) goes to --on-dump once the one for dump 2 ended" 20 ||
    not_ok "dump 4 waits for dump 2's command"
: > "$LOG.go"
wait_exit "$FRP" 30
check_eq "recorder exit 0" 0 "$RC"
DONE=$(cat "$LOG.done" 2>/dev/null)
sed 's/^/# /' "$LOG"

check_eq "three calls (dump 3 skipped)" 3 "$(wc -l < "$LOG")"
for n in 1 2 3; do
    IFS='|' read -r _ dir name idx trig a1 a2 a3 c < <(grep "^call $n|" "$LOG")
    i=$n; [ "$n" = 3 ] && i=4
    check_eq "call $n: the files complete when it ran" complete "$c"
    check_eq "call $n: TET_DUMP_DIR, _INDEX, _TRIGGER" "$D $i sigusr1" "$dir $idx $trig"
    check_eq "call $n: \"\$@\" = the dump's files" "$D/$name.json $D/$name.html $D/$name.trace.json" "$a1 $a2 $a3"
    check_eq "call $n: TET_DUMP_NAME is dump $i's flight_recorder.name" "$name" \
        "$(jq -r "select(.flight_recorder.dump_index == $i) | .flight_recorder.name" "$C"/*.json 2>/dev/null | sort -u | grep -v '^$')"
done
check_eq "dump 2's files still there when its command ended (after dumps 3 and 4, --dump-max-bytes 1M)" \
    present "$(cat "$LOG.end" 2>/dev/null)"
check_eq "at the end, the dump directory: dump 2 (its command ran meanwhile) and dump 4" "2 4" \
    "$(jq -r .flight_recorder.dump_index "$D"/*[0-9]Z-sigusr1.json 2>/dev/null | sort -n | tr '\n' ' ' | sed 's/ $//')"
check_eq "the failure: one warning line" 1 \
    "$(grep -c '^tokio-ebpf-trace: warning: flight recorder: --on-dump for dump 1 exited with status 3 (1 failed so far): the recorder keeps running$' "$TMPD/fr.err")"
check_eq "the skip: one warning line" 1 \
    "$(grep -c '^tokio-ebpf-trace: warning: flight recorder: --on-dump not run for dump 3: the one for dump 2 still runs (1 skipped so far)$' "$TMPD/fr.err")"
on_dump() { jq -c "select(.flight_recorder.dump_index == $1) | .flight_recorder.on_dump" "$C"/*.json 2>/dev/null | sort -u | grep -v '^$'; }
check_eq "dump 1's JSON: on_dump before it" '{"run":0,"failed":0,"skipped":0}' "$(on_dump 1)"
check_eq "dump 2's JSON: dump 1's command counted failed" '{"run":1,"failed":1,"skipped":0}' "$(on_dump 2)"
check_eq "dump 3's JSON: dump 2's command running, not yet counted failed" '{"run":2,"failed":1,"skipped":0}' "$(on_dump 3)"
check_eq "dump 4's JSON: dump 3 counted skipped" '{"run":2,"failed":1,"skipped":1}' "$(on_dump 4)"
check "the recorder's last lines: 4 dumps, --on-dump 3 run, 1 failed, 1 skipped" \
    bash -c "grep -q 'flight recorder: 4 dumps written, 0 failed' '$TMPD/fr.err' && grep -q 'flight recorder: --on-dump: 3 run, 1 failed, 1 skipped' '$TMPD/fr.err'"
check_eq "no child's exit status lost (SIGCHLD, ignored when started, reset)" 0 \
    "$(grep -c 'exit status is lost' "$TMPD/fr.err")"
check_eq "the command's stdout went to stderr" "3 0" \
    "$(grep -c '^hook stdout' "$TMPD/fr.err") $(wc -c < "$TMPD/fr.out")"
check_eq "the recorder waited for the last command (its line after its 1 s sleep)" "done 4" \
    "$DONE"
stop_pid "$SP"
finish
