#!/bin/bash
# Intent: the analyzer survives a bounded libFuzzer run (ASan + UBSan, default 12 s,
# ANALYZER_FUZZ_TIME to change) fed records as per-event capture and the uprobe fallback hand
# them over — every record type, with whatever the traced process and the kernel side put in
# them: reused ids, impossible orders, extreme values (tests/fuzz/fuzz_analyzer.c), with the
# kernel side, the fallback's header keys, no wake events and a small live-task bound turned on
# by the input. The kept crashers (tests/fixtures/analyzer/crashers) run first. A crash fails
# the test and leaves the input in build/fuzz/artifacts/.
. "$(dirname "$0")/lib.sh"
FUZZ="$BUILD/fuzz/fuzz_analyzer"; CRASHERS="$ROOT/tests/fixtures/analyzer/crashers"
[ -x "$FUZZ" ] || die_test "$FUZZ missing: run 'make'"
fuzz_crashers "$FUZZ" "$CRASHERS"
mkdir -p "$TMPD/corpus"
fuzz_bounded "$FUZZ" "${ANALYZER_FUZZ_TIME:-12}" "$TMPD/corpus" "$CRASHERS"
finish
