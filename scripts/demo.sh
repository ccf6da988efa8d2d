#!/bin/bash
# demo.sh — `make demo`: runs the usdt sample service under load with every pathology on, traces it
# for a few seconds, prints the findings and writes the reports: build/demo/report.json and
# build/demo/report.html (self-contained: open it in any browser), build/demo/trace.json
# (Perfetto UI / chrome://tracing).
# Environment: DEMO_LINE (1.53) DEMO_SECONDS (6) DEMO_RPS (200) DEMO_OUT (build/demo: where the
# reports go; `make demo DEMO_OUT=DIR` too — tests/t_demo.sh leaves build/demo alone this way)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD="$ROOT/build"
LINE=${DEMO_LINE:-1.53}
SECS=${DEMO_SECONDS:-6}
RPS=${DEMO_RPS:-200}
BIN="$BUILD/sample-service/tokio-$LINE/usdt/sample-service"
TRACER="$BUILD/bin/tokio-ebpf-trace"
OUT=${DEMO_OUT:-$BUILD/demo}
die() { echo "demo: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (BPF): run 'sudo make demo'"
[ -x "$BIN" ] || die "missing $BIN (run 'make')"
[ -x "$TRACER" ] || die "missing $TRACER (run 'make')"
mkdir -p "$OUT"
TMP=$(mktemp -d)
SVC="" TR=""
cleanup() {
    [ -n "$TR" ] && kill -INT "$TR" 2>/dev/null
    [ -n "$SVC" ] && kill -TERM "$SVC" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

echo "demo: starting the sample service (tokio $LINE, usdt probes) with every pathology and $RPS req/s of load" >&2
"$BIN" serve --pathology all --pathology starvation --pathology deadlock --load "$RPS" --workers 2 --duration $((SECS + 10))s \
    --wait-start "$TMP/start" > "$TMP/svc.out" 2> "$TMP/svc.err" &
SVC=$!
# the background job is a shell for a moment before its exec: trace the service, not the shell
want=$(readlink -f "$BIN")
for _ in $(seq 200); do [ "$(readlink "/proc/$SVC/exe" 2>/dev/null)" = "$want" ] && break; sleep 0.05; done
[ "$(readlink "/proc/$SVC/exe" 2>/dev/null)" = "$want" ] || die "the sample service did not start ($BIN)"
"$TRACER" --pid "$SVC" --duration "${SECS}s" --output "$OUT/report.json" --output "$OUT/report.html" \
    --trace "$OUT/trace.json" 2> >(tee "$TMP/tr.err" >&2) &
TR=$!
for _ in $(seq 600); do grep -q attached "$TMP/tr.err" 2>/dev/null && break; kill -0 "$TR" 2>/dev/null || break; sleep 0.05; done
grep -q attached "$TMP/tr.err" || die "the tracer did not attach"
touch "$TMP/start"
wait "$TR"; rc=$?
TR=""
[ $rc = 0 ] || die "the tracer failed (exit $rc)"
kill -TERM "$SVC" 2>/dev/null; wait "$SVC" 2>/dev/null; SVC=""
echo
echo "demo: findings by spawn site:"
jq -r '.findings | group_by(.kind + " " + (.location // "?"))[] |
       "  \(.[0].kind)  \(.[0].location // "(spawned before the trace)")  ×\(length)  \(.[0].type_name // "")"' "$OUT/report.json"
echo "demo: report written to ${OUT#$ROOT/}/report.json (schema: docs/report-schema.md)"
[ -s "$OUT/report.html" ] || die "no report.html"
echo "demo: HTML report: $OUT/report.html ($(( $(stat -c %s "$OUT/report.html") / 1024 )) KB, self-contained: open it in a browser)"
echo "demo: trace: $OUT/trace.json (open it in the Perfetto UI or chrome://tracing; docs/reports.md)"
