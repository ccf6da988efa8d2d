#!/bin/bash
# Intent: every input that once crashed the fuzz target (tests/fixtures/notes/crashers/)
# stays fixed: the ASan+UBSan fuzz binary runs it cleanly, and `list` / `check` on it exit
# normally (0/2 or 4 with one error line) instead of crashing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/notes_lib.sh"
need_fixtures
FUZZ="$BUILD/fuzz/fuzz_notes"
[ -x "$FUZZ" ] || die_test "$FUZZ missing: run 'make'"
n=0
for c in "$ROOT"/tests/fixtures/notes/crashers/*; do
    [ "$(basename "$c")" = README.md ] && continue
    n=$((n+1))
    check "$(basename "$c"): fuzz binary (ASan+UBSan) runs it cleanly" "$FUZZ" "$c"
    for cmd in list check; do
        rc=$(run_tet "$TMPD/o" "$TMPD/e" $cmd "$c")
        check "$(basename "$c"): $cmd exits normally (rc $rc)" test "$rc" -lt 5
    done
done
check "at least one crasher kept" test $n -ge 1
finish
