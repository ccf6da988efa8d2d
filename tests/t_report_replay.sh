#!/bin/bash
# Intent: the reports of a recorded capture do not change unless a change means them to: two
# recorded captures (tests/fixtures/replay: a batched one before the decode stage, a per-event
# one as the analyzer got it) replayed through decode, analysis and the report writers with
# fixed metadata (build/tests/report_replay) give the JSON, the Perfetto trace and the terminal
# summary byte for byte as the tracer before issue 26's restructuring wrote them (SHA256SUMS).
# Also: the outputs are valid JSON with polls and findings (the sums are not of empty reports),
# the per-event replay counts the polls its live capture reported (4088), a replay is
# deterministic (twice the same bytes), and a truncated or missing dump is one error line and
# exit 1, no report written.
. "$(dirname "$0")/lib.sh"
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
finish
