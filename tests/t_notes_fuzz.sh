#!/bin/bash
# Intent: the note parser survives a bounded libFuzzer run (ASan + UBSan, default 12 s,
# NOTES_FUZZ_TIME to change) seeded with the fixture binaries and argument strings; a crash
# fails the test and leaves the input in build/fuzz/artifacts/ (keep it under
# tests/fixtures/notes/crashers/). Prints execs/s, total execs and coverage.
. "$(dirname "$0")/lib.sh"
FUZZ="$BUILD/fuzz/fuzz_notes"; SEEDS="$BUILD/fuzz/seeds"
[ -x "$FUZZ" ] && [ -e "$SEEDS/.done" ] || die_test "$FUZZ or its seeds missing: run 'make'"
mkdir -p "$TMPD/corpus"
fuzz_bounded "$FUZZ" "${NOTES_FUZZ_TIME:-12}" "$TMPD/corpus" "$SEEDS"
finish
