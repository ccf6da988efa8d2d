#!/bin/bash
# Intent: the uprobe fallback refuses what it cannot trace with one clear line and exit 2, and
# nothing attached: a stripped stock Tokio build (no symbols: rebuild with the kit or keep the
# symbol table), a program that is not Tokio, a Tokio build whose raw::poll was inlined
# everywhere; `--mode usdt` on a stock build points at the fallback. A Tokio build in which some
# task functions are missing (the C stand-in has no Harness::complete) is traced anyway, with a
# warning naming what was not found. Also: `--mode uprobe` on a build that does carry the USDT
# probes uses the fallback, and a bad --mode is a usage error (exit 3).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_file "$TRACER" "tracer binary"
NFX="$BUILD/fixtures/notes"
need_file "$NFX/tokio_stock" "fixture tokio_stock"
need_file "$NFX/tokio_stock_noraw" "fixture tokio_stock_noraw"
need_file "$NFX/plain" "fixture plain"

# refuse NAME FILE REGEX [ARGS…]: exit 2, one line matching REGEX, nothing attached
refuse() {
    local name=$1 file=$2 re=$3; shift 3
    "$TRACER" --binary "$file" --duration 1s "$@" > "$TMPD/$name.out" 2> "$TMPD/$name.err"
    check_eq "$name: exit 2" 2 "$?"
    check_eq "$name: one line on stderr" 1 "$(wc -l < "$TMPD/$name.err")"
    check "$name: says why ($re)" grep -qE "$re" "$TMPD/$name.err"
    check "$name: nothing attached" bash -c "! grep -q attached '$TMPD/$name.err'"
    sed 's/^/# /' "$TMPD/$name.err"
}

missing=()
for line in "${LINES[@]}"; do
    bin=$(sample_bin "$line" stock)
    if [ ! -x "$bin" ]; then missing+=("tokio-$line/stock"); continue; fi
    strip -o "$TMPD/stripped-$line" "$bin"
    refuse "stripped stock tokio $line" "$TMPD/stripped-$line" \
        'is stripped: no symbol table.*it is a Tokio program: Tokio.s strings are in it.*rebuild it with scripts/tokio-usdt-build.*keep its symbol table'
    refuse "--mode usdt on stock tokio $line" "$bin" 'carries no tokio USDT probes.*--mode' --mode usdt
done
refuse "stripped C stand-in" "$NFX/tokio_stock_stripped" 'is stripped.*tokio-usdt-build'
refuse "not Tokio" "$NFX/plain" 'is not a Tokio program'
refuse "not Tokio, bin-true" /bin/true 'is not a Tokio program'
refuse "raw::poll inlined" "$NFX/tokio_stock_noraw" 'raw::poll is not among them.*tokio-usdt-build'

# partial: the stand-in has raw::poll and the waker functions but no Harness::complete
"$TRACER" --binary "$NFX/tokio_stock" --duration 300ms -q -o "$TMPD/partial.json" 2> "$TMPD/partial.err"
check_eq "partial: traced anyway (exit 0)" 0 "$?"
check "partial: warns that Harness::complete was not found" grep -q 'Harness::complete not found' "$TMPD/partial.err"
check_eq "partial: report lists it missing" '["Harness::complete","raw::dealloc","raw::shutdown"]' \
    "$(jq -c .fallback.functions_missing "$TMPD/partial.json")"
check_eq "partial: mode uprobe-fallback" uprobe-fallback "$(jq -r .mode "$TMPD/partial.json")"

# --mode uprobe on a build with USDT probes
usdt=$(sample_bin 1.53 usdt)
[ -x "$usdt" ] || not_ok "--mode uprobe on a usdt build: $usdt missing (run 'make')"
if [ -x "$usdt" ]; then
    "$TRACER" --binary "$usdt" --mode uprobe --duration 300ms -q -o "$TMPD/forced.json" 2> "$TMPD/forced.err"
    check_eq "--mode uprobe on a usdt build: exit 0" 0 "$?"
    check_eq "--mode uprobe on a usdt build: mode uprobe-fallback" uprobe-fallback "$(jq -r .mode "$TMPD/forced.json")"
fi
"$TRACER" --binary "$NFX/tokio_stock" --mode bogus > /dev/null 2> "$TMPD/mode.err"
check_eq "--mode bogus: usage error (exit 3)" 3 "$?"
check "--mode bogus: says what is expected" grep -q 'expected auto, usdt, uprobe or sampling' "$TMPD/mode.err"
[ ${#missing[@]} = 0 ] || { [ "$TESTS_FAILED" = 0 ] || finish;
    skip_test "stock sample-service builds missing: ${missing[*]} (make builds them)"; }
finish
