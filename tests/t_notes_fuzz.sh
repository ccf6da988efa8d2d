#!/bin/bash
# Intent: the note parser survives a bounded libFuzzer run (ASan + UBSan, default 60 s,
# NOTES_FUZZ_TIME to change) seeded with the fixture binaries and argument strings; a crash
# fails the test and leaves the input in build/fuzz/artifacts/ (keep it under
# tests/fixtures/notes/crashers/). Prints execs/s, total execs and coverage.
. "$(dirname "$0")/lib.sh"
FUZZ="$BUILD/fuzz/fuzz_notes"; SEEDS="$BUILD/fuzz/seeds"
[ -x "$FUZZ" ] && [ -e "$SEEDS/.done" ] || die_test "$FUZZ or its seeds missing: run 'make'"
mkdir -p "$TMPD/corpus" "$BUILD/fuzz/artifacts"
"$FUZZ" -max_total_time="${NOTES_FUZZ_TIME:-60}" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$BUILD/fuzz/artifacts/" -print_final_stats=1 "$TMPD/corpus" "$SEEDS" \
    > "$TMPD/log" 2>&1
rc=$?
grep -E '^#[0-9]+ +(INITED|DONE)' "$TMPD/log" | tail -2
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' "$TMPD/log"
check_eq "fuzzer exits 0 (no crash, leak, UB or timeout)" 0 "$rc"
[ $rc = 0 ] || tail -60 "$TMPD/log"
check "fuzzer ran at least 10000 inputs" \
    test "$(awk '/^stat::number_of_executed_units/{print $NF}' "$TMPD/log")" -ge 10000
finish
