#!/bin/bash
# soak-flight.sh — `make soak-flight`: the flight recorder left running (not a test; long).
# The usdt sample service (Tokio LINE) serves its own load (--load RPS, every pathology) for
# SOAK_SECS; the recorder (--flight-recorder WINDOW, --trigger long_poll --trigger stalled, a
# 2-minute cooldown, SIGUSR1 every 2 minutes) traces it. Every 10 s: the tracer's RSS and
# RssAnon and its CPU time. At the end: events through the window, the tracer's CPU per event,
# RSS (start, max, end), dumps written/failed/suppressed, the dump directory's size.
# Environment: SOAK_SECS (600) SOAK_LINE (1.53) SOAK_RPS (1000) SOAK_WINDOW (60s)
# Output: stdout and build/bench/soak-flight-TIMESTAMP.txt.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD="$ROOT/build"
TRACER="$BUILD/bin/tokio-ebpf-trace"
SECS=${SOAK_SECS:-600}
LINE=${SOAK_LINE:-1.53}
RPS=${SOAK_RPS:-1000}
WINDOW=${SOAK_WINDOW:-60s}
BIN="$BUILD/sample-service/tokio-$LINE/usdt/sample-service"
die() { echo "soak-flight: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (BPF)"
for f in "$TRACER" "$BIN"; do [ -x "$f" ] || die "missing $f (run 'make')"; done
mkdir -p "$BUILD/bench"
TMP=$(mktemp -d)
SVC="" TR=""
cleanup() { [ -n "$TR" ] && kill -INT "$TR" 2>/dev/null; [ -n "$SVC" ] && kill -TERM "$SVC" 2>/dev/null; sleep 1; rm -rf "$TMP"; }
trap cleanup EXIT
OUT="$BUILD/bench/soak-flight-$(date -u +%Y%m%dT%H%M%SZ).txt"
CLK_TCK=$(getconf CLK_TCK)
cpu_ns() { awk -v t="$CLK_TCK" '{ sub(/.*\) /, ""); print ($12 + $13) * 1000000000 / t }' "/proc/$1/stat"; }
kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

"$BIN" serve --workers 2 --pathology all --load "$RPS" --duration "$((SECS + 30))s" > "$TMP/svc.out" 2> "$TMP/svc.err" &
SVC=$!
for _ in $(seq 100); do grep -q '^listening on' "$TMP/svc.out" && break; sleep 0.1; done
grep -q '^listening on' "$TMP/svc.out" || die "the service did not start: $(cat "$TMP/svc.err")"
mkdir -p "$TMP/dumps"
"$TRACER" --pid "$SVC" --flight-recorder "$WINDOW" --trigger long_poll --trigger stalled \
    --trigger-cooldown 2m --dump-dir "$TMP/dumps" -q > /dev/null 2> "$TMP/tr.err" &
TR=$!
for _ in $(seq 200); do grep -q 'flight recorder: keeping' "$TMP/tr.err" && break; sleep 0.05; done
grep -q 'flight recorder: keeping' "$TMP/tr.err" || die "the recorder did not start: $(cat "$TMP/tr.err")"
{
    echo "soak-flight: tokio $LINE sample service, every pathology, $RPS requests/s, ${SECS}s; $(nproc) CPUs, kernel $(uname -r)"
    echo "recorder: --flight-recorder $WINDOW --trigger long_poll --trigger stalled --trigger-cooldown 2m, SIGUSR1 every 120 s"
    printf '%6s %10s %10s %12s\n' "t (s)" "RSS MiB" "anon MiB" "CPU s"
} | tee "$OUT"
rss0=$(kb "$TR" VmRSS); anon0=$(kb "$TR" RssAnon); rmax=$rss0; amax=$anon0
for t in $(seq 10 10 "$SECS"); do
    sleep 10
    kill -0 "$TR" 2>/dev/null || die "the recorder died: $(tail -5 "$TMP/tr.err")"
    r=$(kb "$TR" VmRSS); a=$(kb "$TR" RssAnon); c=$(cpu_ns "$TR")
    [ "$r" -gt "$rmax" ] && rmax=$r; [ "$a" -gt "$amax" ] && amax=$a
    awk -v t="$t" -v r="$r" -v a="$a" -v c="$c" \
        'BEGIN { printf "%6d %10.1f %10.1f %12.2f\n", t, r / 1024, a / 1024, c / 1e9 }' | tee -a "$OUT"
    [ $((t % 120)) = 0 ] && kill -USR1 "$TR"
done
cpu=$(cpu_ns "$TR"); rss1=$(kb "$TR" VmRSS); anon1=$(kb "$TR" RssAnon)
kill -INT "$TR"; wait "$TR"; rc=$?; TR=""
ev=$(sed -n 's/.*; \([0-9]*\) records held in .* \([0-9]*\) evicted$/\1 \2/p' "$TMP/tr.err" | awk '{ print $1 + $2 }')
{
    echo "recorder exit $rc; $(grep 'flight recorder: [0-9]* dump' "$TMP/tr.err" | sed 's/^tokio-ebpf-trace: //')"
    echo "events through the window: ${ev:-?} ($(( ${ev:-0} / SECS )) /s)"
    [ -n "$ev" ] && [ "$ev" -gt 0 ] && awk -v c="$cpu" -v e="$ev" -v s="$SECS" \
        'BEGIN { printf "tracer CPU per event: %.0f ns (%.1f s CPU in %d s: %.2f %% of one CPU)\n", c / e, c / 1e9, s, 100 * c / (s * 1e9) }'
    echo "tracer RSS: start $((rss0 / 1024)) MiB, max $((rmax / 1024)) MiB, end $((rss1 / 1024)) MiB; anonymous: start $((anon0 / 1024)), max $((amax / 1024)), end $((anon1 / 1024)) MiB"
    echo "dump directory: $(ls "$TMP/dumps" | wc -l) files, $(du -sh "$TMP/dumps" | cut -f1)"
} | tee -a "$OUT"
echo "soak-flight: written to $OUT" >&2
