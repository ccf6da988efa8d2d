#!/bin/bash
# Intent: the JSON writer (tracer/lib/json.c) produces exact, valid JSON: structure, pretty
# printing, every escape (JSON, HTML-safe <>&, U+2028/2029), invalid UTF-8 replaced by one
# U+FFFD per maximal subpart, numbers, and misuse / write errors reported by jw_finish();
# and on 20000 random byte strings a strict decoder (Python's json) reads back exactly the
# input decoded as UTF-8 with replacement, with no raw '<' '>' '&' U+2028/2029 left.
. "$(dirname "$0")/lib.sh"
T="$BUILD/tests/json_test"
[ -x "$T" ] || die_test "$T missing: run 'make'"

out=$("$T"); rc=$?
echo "$out"
check_eq "json_test unit cases all pass" 0 "$rc"
check "json_test ran at least 30 cases" test "$(grep -c '^ok - ' <<<"$out")" -ge 30

"$T" random 20000 1234 > "$TMPD/random.txt"
res=$(python3 - "$TMPD/random.txt" <<'PY'
import json, sys
bad = n = 0
for line in open(sys.argv[1], encoding="utf-8", errors="strict"):
    h, js = line.rstrip("\n").split("\t", 1)
    n += 1
    want = bytes.fromhex(h).decode("utf-8", "replace")
    try:
        got = json.loads(js)
    except ValueError as e:
        got = e
    if got != want or any(c in js for c in "<>&\u2028\u2029"):
        bad += 1
        if bad <= 3:
            print("mismatch:", h, js, file=sys.stderr)
print(n, bad)
PY
)
check_eq "20000 random strings decode back exactly (count, mismatches)" "20000 0" "$res"
finish
