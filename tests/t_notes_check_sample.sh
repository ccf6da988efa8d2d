#!/bin/bash
# Intent: `check` on the real sample-service builds (build/sample-service/tokio-1.*/…):
# the usdt build is ready (exit 0, this project's dialect, no probe missing, semaphores),
# the stock build is fallback-only (exit 1, raw::poll symbols), the stock build stripped is
# cannot-trace (exit 2, "stripped"). Missing builds fail under CI=true (they are part of
# `make`); elsewhere the test skips loudly.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/notes_lib.sh"
need_fixtures
lines=(1.24 1.43 1.53)
missing=()
for l in "${lines[@]}"; do for k in usdt stock; do
    f="$BUILD/sample-service/tokio-$l/$k/sample-service"
    [ -x "$f" ] || missing+=("$f")
done; done
if [ ${#missing[@]} -gt 0 ]; then
    msg="sample-service builds missing (${missing[*]#$ROOT/}): run 'make'"
    [ "${CI:-}" = true ] && die_test "$msg"
    skip_test "$msg"
fi
for l in "${lines[@]}"; do
    d="$BUILD/sample-service/tokio-$l"
    rc=$(run_tet "$TMPD/j" "$TMPD/e" check --json "$d/usdt/sample-service")
    check_eq "tokio-$l usdt: ready (exit 0)" 0 "$rc"
    check_eq "tokio-$l usdt: dialect, mode, nothing missing" "tokio-ebpf-trace usdt []" \
        "$(jq -r '"\(.tokio.dialect) \(.mode) \(.tokio.missing)"' "$TMPD/j" | tr -d '\n')"
    check "tokio-$l usdt: every probe has a semaphore" jq -e '[.tokio.probes[].sites_with_semaphore > 0] | all' "$TMPD/j"
    rc=$(run_tet "$TMPD/j" "$TMPD/e" check --json "$d/stock/sample-service")
    check_eq "tokio-$l stock: fallback only (exit 1)" 1 "$rc"
    check "tokio-$l stock: raw::poll symbols found" jq -e '.symbols.raw_poll > 0' "$TMPD/j"
    strip -o "$TMPD/stripped-$l" "$d/stock/sample-service"
    rc=$(run_tet "$TMPD/j" "$TMPD/e" check --json "$TMPD/stripped-$l")
    check_eq "tokio-$l stock stripped: cannot trace (exit 2)" 2 "$rc"
    check "tokio-$l stock stripped: says stripped" jq -e '.reasons | any(test("stripped"))' "$TMPD/j"
done
finish
