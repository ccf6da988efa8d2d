#!/bin/bash
# Intent: --on-dump CMD hands each complete flight-recorder dump to a command (docs/flight-recorder.md)
# — on the usdt sample service (Tokio 1.53, idle), three dumps by SIGUSR1:
#  - the command gets the dump's three files as "$@" (name.json, name.html, name.trace.json in
#    --dump-dir) and TET_DUMP_DIR / _NAME / _INDEX / _TRIGGER, and when it runs each file is
#    there and complete (the JSON and the trace parse, the page ends with </html>);
#  - a failing command (exit 3, dump 1) is one warning line naming the dump and the status, is
#    counted (the next dump's flight_recorder.on_dump.failed, the recorder's last line), and the
#    recorder goes on: dump 2 is written and handed over;
#  - one at a time: dump 3, complete while dump 2's command still runs, is not handed over,
#    counted as skipped (a warning line, on_dump.skipped);
#  - the command's stdout goes to stderr (the tracer's stdout stays empty); at the end the
#    recorder waits for the running command; --on-dump without --flight-recorder is refused.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
need_sample 1.53 usdt; bin=$SAMPLE

expect_fail "--on-dump without --flight-recorder" 3 "--on-dump needs --flight-recorder WINDOW" \
    "$TRACER" --pid 1 --on-dump true
expect_fail "--on-dump ''" 3 "--on-dump: empty command" \
    "$TRACER" --pid 1 --flight-recorder 2s --on-dump ''

H="$TMPD/hook.sh" LOG="$TMPD/hook.log"
cat > "$H" <<'EOF'
# call 1 fails (exit 3); call 2 sleeps 3 s (dump 3 comes meanwhile); each logs what it got
n=$(( $(cat "$HOOK_LOG.n" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$HOOK_LOG.n"
c=complete
[ $# = 3 ] || c="argc $#"
jq -e .flight_recorder "$1" > /dev/null 2>&1 || c="json incomplete"
[ "$(tail -c 8 "$2")" = "</html>" ] || [ "$(tail -c 9 "$2")" = "</html>
" ] || c="html incomplete"
jq -e .traceEvents "$3" > /dev/null 2>&1 || c="trace incomplete"
echo "call $n|$TET_DUMP_DIR|$TET_DUMP_NAME|$TET_DUMP_INDEX|$TET_DUMP_TRIGGER|$1|$2|$3|$c" >> "$HOOK_LOG"
echo "hook stdout $n"
[ "$n" = 1 ] && exit 3
[ "$n" = 2 ] && sleep 3 && echo "done $n" > "$HOOK_LOG.done"
exit 0
EOF
start_bg svc "$bin" serve --workers 2 --duration 60s
SP=$BG_PID
wait_for_line "$TMPD/svc.out" '^listening on ' 30 || die_test "service listening: $(cat "$TMPD/svc.err")"
D="$TMPD/dumps"; mkdir -p "$D"
export HOOK_LOG="$LOG"
start_bg fr "$TRACER" --pid "$SP" --flight-recorder 2s --post-trigger 100ms --nice 0 \
    --dump-dir "$D" --on-dump "bash '$H' \"\$@\"" -q
FRP=$BG_PID
wait_for_line "$TMPD/fr.err" "flight recorder: keeping" 30 || die_test "recorder attached: $(cat "$TMPD/fr.err")"
kill -USR1 "$FRP"
wait_for_line "$TMPD/fr.err" "on-dump for dump 1 exited with status 3" 20
kill -USR1 "$FRP"
wait_for_line "$LOG" "^call 2|" 20 || not_ok "dump 2 handed over"
kill -USR1 "$FRP"
wait_for_line "$TMPD/fr.err" "on-dump not run for dump 3" 20
kill -INT "$FRP"
wait_exit "$FRP" 30
check_eq "recorder exit 0" 0 "$RC"
DONE=$(cat "$LOG.done" 2>/dev/null)
sed 's/^/# /' "$LOG"

check_eq "two calls (dump 3 skipped)" 2 "$(wc -l < "$LOG")"
for n in 1 2; do
    IFS='|' read -r _ dir name idx trig a1 a2 a3 c < <(grep "^call $n|" "$LOG")
    check_eq "call $n: the files complete when it ran" complete "$c"
    check_eq "call $n: TET_DUMP_DIR, _INDEX, _TRIGGER" "$D $n sigusr1" "$dir $idx $trig"
    check_eq "call $n: \"\$@\" = the dump's files" "$D/$name.json $D/$name.html $D/$name.trace.json" "$a1 $a2 $a3"
    check_eq "call $n: TET_DUMP_NAME is dump $n's flight_recorder.name" "$name" \
        "$(jq -r "select(.flight_recorder.dump_index == $n) | .flight_recorder.name" "$D"/*[0-9]Z-*.json 2>/dev/null | grep -v '^$')"
done
check_eq "the failure: one warning line" 1 \
    "$(grep -c '^tokio-ebpf-trace: warning: flight recorder: --on-dump for dump 1 exited with status 3 (1 failed so far): the recorder keeps running$' "$TMPD/fr.err")"
check_eq "the skip: one warning line" 1 \
    "$(grep -c '^tokio-ebpf-trace: warning: flight recorder: --on-dump not run for dump 3: the one for dump 2 still runs (1 skipped so far)$' "$TMPD/fr.err")"
on_dump() { jq -c "select(.flight_recorder.dump_index == $1) | .flight_recorder.on_dump" "$D"/*[0-9]Z-*.json 2>/dev/null | grep -v '^$'; }
check_eq "dump 1's JSON: on_dump before it" '{"run":0,"failed":0,"skipped":0}' "$(on_dump 1)"
check_eq "dump 2's JSON: dump 1's command counted failed" '{"run":1,"failed":1,"skipped":0}' "$(on_dump 2)"
check_eq "dump 3's JSON: dump 2's command running, not yet counted failed" '{"run":2,"failed":1,"skipped":0}' "$(on_dump 3)"
check_eq "three dumps written" 3 "$(ls "$D" | grep -c '\.trace\.json$')"
check "the recorder's last lines: 3 dumps, --on-dump 2 run, 1 failed, 1 skipped" \
    bash -c "grep -q 'flight recorder: 3 dumps written, 0 failed' '$TMPD/fr.err' && grep -q 'flight recorder: --on-dump: 2 run, 1 failed, 1 skipped' '$TMPD/fr.err'"
check_eq "the command's stdout went to stderr" "2 0" \
    "$(grep -c '^hook stdout' "$TMPD/fr.err") $(wc -c < "$TMPD/fr.out")"
check_eq "the recorder waited for the last command (its line after its 3 s sleep)" "done 2" \
    "$DONE"
stop_pid "$SP"
finish
