#!/bin/bash
# Intent: the reports of a recorded capture do not change unless a change means them to: two
# recorded captures (tests/fixtures/replay: a batched one before the decode stage, a per-event
# one as the analyzer got it) replayed through decode, analysis and the report writers with
# fixed metadata (build/tests/report_replay) give the JSON, the Perfetto trace and the terminal
# summary byte for byte as the tracer before issue 26's restructuring wrote them (SHA256SUMS).
# Also: the outputs are valid JSON with polls and findings (the sums are not of empty reports),
# the per-event replay counts the polls its live capture reported (4088), a replay is
# deterministic (twice the same bytes), and a truncated or missing dump is one error line and
# exit 1, no report written. The record hook itself (TET_RECORD_DUMP, run.c) on a live capture
# of fake_tokio: its recording replays to the live report's polls; a path it cannot write is
# one line and the capture goes on, its report written.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
REPLAY="$BUILD/tests/report_replay"
FX="$ROOT/tests/fixtures/replay"
need_file "$REPLAY" "report_replay"
for k in batched records; do
    "$REPLAY" $k "$FX/$k.dump.gz" "$TMPD/$k" 2> "$TMPD/$k.err"
    rc=$?
    check_eq "$k: exit 0" 0 "$rc"
    check "$k: no message" test ! -s "$TMPD/$k.err"
    check "$k: JSON valid, polls and findings" \
        bash -c "jq -e '.totals.polls > 1000 and (.findings | length) > 5' '$TMPD/$k.json' > /dev/null"
    check "$k: Perfetto trace valid JSON with events" \
        bash -c "jq -e '.traceEvents | length > 1000' '$TMPD/$k.trace.json' > /dev/null"
done
check_eq "records: the polls its live capture reported" 4088 "$(jq .totals.polls "$TMPD/records.json")"
(cd "$TMPD" && sha256sum -c "$FX/SHA256SUMS") > "$TMPD/sums.out" 2>&1
rc=$?
sed 's/^/# /' "$TMPD/sums.out"
check_eq "the six reports byte for byte as before (SHA256SUMS)" 0 "$rc"
"$REPLAY" batched "$FX/batched.dump.gz" "$TMPD/again" 2> /dev/null
check "a replay is deterministic" cmp -s "$TMPD/again.json" "$TMPD/batched.json"

# bad dumps: one error line, exit 1, nothing written
gzip -dc "$FX/records.dump.gz" | head -c 100001 > "$TMPD/trunc.dump"
for bad in "$TMPD/trunc.dump" "$TMPD/missing.dump"; do
    "$REPLAY" records "$bad" "$TMPD/bad" 2> "$TMPD/bad.err"
    rc=$?
    check_eq "$(basename "$bad"): exit 1" 1 "$rc"
    check_eq "$(basename "$bad"): one error line" 1 "$(wc -l < "$TMPD/bad.err")"
    check "$(basename "$bad"): no report" test ! -e "$TMPD/bad.json"
done
# the record hook on a live capture
need_root
need_tracer
for how in ok nodir; do
    start_bg "fx.$how" "$FAKE" --wait-attach
    fx=$BG_PID
    wait_for_line "$TMPD/fx.$how.out" '^pid ' 10 || die_test "fake_tokio started"
    dump="$TMPD/live.dump"; [ $how = nodir ] && dump="$TMPD/nodir/live.dump"
    TET_RECORD_DUMP=$dump "$TRACER" --pid "$fx" --duration 4s -q -o "$TMPD/live.$how.json" 2> "$TMPD/live.$how.err"
    rc=$?
    stop_pid "$fx"
    check_eq "record hook ($how): the capture exits 0" 0 "$rc"
    check "record hook ($how): its report written" test -s "$TMPD/live.$how.json"
done
"$REPLAY" records "$TMPD/live.dump" "$TMPD/live.replay" 2> "$TMPD/live.replay.err"
check_eq "a live recording replays to the live report's polls" \
    "$(jq .totals.polls "$TMPD/live.ok.json")" "$(jq .totals.polls "$TMPD/live.replay.json" 2>/dev/null)"
check "… and they are not none" test "$(jq .totals.polls "$TMPD/live.ok.json")" -gt 0
check_eq "an unwritable TET_RECORD_DUMP: one line naming it" \
    "tokio-ebpf-trace: TET_RECORD_DUMP $TMPD/nodir/live.dump: No such file or directory" \
    "$(grep TET_RECORD_DUMP "$TMPD/live.nodir.err")"
finish
