#!/bin/bash
# bench-trace.sh — `make bench`: what tracing costs the traced process, as ratios measured side by
# side in one run (not a test).
#
# Workload: `sample-service yield-workload --tasks T --yields Y --workers W` (T×(Y+1) polls, every
# poll a yield_now: the most probe-dense workload there is); it prints ns_per_poll. Configurations,
# interleaved round-robin over BENCH_REPS repetitions (median reported, so drift hits all alike):
#   stock              stock Tokio
#   usdt, untraced     the probe-patched build, no tracer (semaphores 0: one load+branch a site)
#   traced: CLASS      the patched build traced with --probes CLASS (spawn, poll, yield, wake,
#                      waker, terminate, worker), attached by path before the process starts
#   traced: all        every probe
#   traced: poll,wake,terminate   the patched build, the probe classes the uprobe fallback has
#   fallback           the stock build traced through uprobes on Tokio's task functions
#                      (--mode uprobe: raw::poll entry+return, wakes, Harness::complete)
# Per-event overhead, fallback vs USDT: (ns/poll traced − ns/poll of the same build untraced) ×
# polls / events, for "fallback" (vs stock) and "traced: poll,wake,terminate" (vs usdt untraced).
# Also: events per run, drops, the tracer's CPU time per event (the consumer's cost, hence the
# event rate one core sustains) and the event rate the traced runs reached with 0 drops.
#
# Environment: BENCH_LINE (1.53) BENCH_TASKS (32) BENCH_YIELDS (5000) BENCH_WORKERS (2)
#              BENCH_REPS (5) BENCH_CLASSES ("spawn poll yield wake waker terminate worker all")
# Output: the table on stdout and in build/bench/trace-tokio-LINE-TIMESTAMP.txt (+ .tsv raw runs).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD="$ROOT/build"
TRACER="$BUILD/bin/tokio-ebpf-trace"
LINE=${BENCH_LINE:-1.53}
TASKS=${BENCH_TASKS:-32}
YIELDS=${BENCH_YIELDS:-5000}
WORKERS=${BENCH_WORKERS:-2}
REPS=${BENCH_REPS:-5}
CLASSES=(${BENCH_CLASSES:-spawn poll yield wake waker terminate worker all poll,wake,terminate})
STOCK="$BUILD/sample-service/tokio-$LINE/stock/sample-service"
USDT="$BUILD/sample-service/tokio-$LINE/usdt/sample-service"
OUT="$BUILD/bench"
die() { echo "bench-trace: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (BPF)"
for f in "$TRACER" "$STOCK" "$USDT"; do [ -x "$f" ] || die "missing $f (run 'make')"; done
mkdir -p "$OUT"
TMP=$(mktemp -d)
TRACER_PID=""
cleanup() { [ -n "$TRACER_PID" ] && kill -INT "$TRACER_PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
stamp=$(date -u +%Y%m%dT%H%M%SZ)
RAW="$OUT/trace-tokio-$LINE-$stamp.tsv"
TXT="$OUT/trace-tokio-$LINE-$stamp.txt"
printf 'rep\tconfig\tns_per_poll\tevents\tdrops\ttracer_cpu_ns\telapsed_ns\n' > "$RAW"
CLK_TCK=$(getconf CLK_TCK)
WL=(yield-workload --tasks "$TASKS" --yields "$YIELDS" --workers "$WORKERS")

cpu_ns() {  # cpu_ns PID: user+system CPU time of PID so far, ns
    awk -v t="$CLK_TCK" '{ sub(/.*\) /, ""); print ($12 + $13) * 1000000000 / t }' "/proc/$1/stat"
}

run_one() {  # run_one REP CONFIG: appends a line to $RAW
    local rep=$1 cfg=$2 bin=$USDT line ns events=- drops=- cpu=- el
    case "$cfg" in
    stock) bin=$STOCK ;;
    usdt) ;;
    traced-*|fallback)
        if [ "$cfg" = fallback ]; then
            bin=$STOCK
            "$TRACER" --binary "$STOCK" --mode uprobe -q -o "$TMP/r.json" > /dev/null 2> "$TMP/t.err" &
        else
            "$TRACER" --binary "$USDT" --probes "${cfg#traced-}" -q -o "$TMP/r.json" \
                > /dev/null 2> "$TMP/t.err" &
        fi
        TRACER_PID=$!
        for _ in $(seq 200); do grep -q attached "$TMP/t.err" && break; sleep 0.05; done
        grep -q attached "$TMP/t.err" || die "tracer did not attach: $(cat "$TMP/t.err")"
        ;;
    esac
    line=$("$bin" "${WL[@]}") || die "workload failed ($cfg)"
    ns=$(sed -n 's/.*ns_per_poll=\([0-9.]*\).*/\1/p' <<< "$line")
    el=$(sed -n 's/.*elapsed_ns=\([0-9]*\).*/\1/p' <<< "$line")
    if [ -n "$TRACER_PID" ]; then
        cpu=$(cpu_ns "$TRACER_PID")
        kill -INT "$TRACER_PID"; wait "$TRACER_PID" || die "tracer failed ($cfg): $(cat "$TMP/t.err")"
        TRACER_PID=""
        events=$(jq .totals.events "$TMP/r.json"); drops=$(jq .totals.drops "$TMP/r.json")
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$cfg" "$ns" "$events" "$drops" "$cpu" "$el" >> "$RAW"
}

CONFIGS=(stock usdt)
for c in "${CLASSES[@]}"; do CONFIGS+=("traced-$c"); done
CONFIGS+=(fallback)
echo "bench-trace: tokio $LINE, ${WL[*]}, $REPS rounds of ${#CONFIGS[@]} configurations…" >&2
"$USDT" "${WL[@]}" > /dev/null   # warm-up (page cache, CPU frequency)
"$STOCK" "${WL[@]}" > /dev/null
for rep in $(seq "$REPS"); do
    for cfg in "${CONFIGS[@]}"; do run_one "$rep" "$cfg"; done
    echo "bench-trace: round $rep/$REPS done" >&2
done

python3 - "$RAW" "$LINE" "$TASKS" "$YIELDS" "$WORKERS" "$REPS" "$(nproc)" "$(uname -r)" > "$TXT" <<'PY'
import statistics, sys
raw, line, tasks, yields, workers, reps, ncpu, kernel = sys.argv[1:]
rows = [l.rstrip('\n').split('\t') for l in open(raw)][1:]
by = {}
for rep, cfg, ns, ev, dr, cpu, el in rows:
    by.setdefault(cfg, []).append((float(ns), ev, dr, cpu, el))
med = lambda v: statistics.median(v)
stock = med([r[0] for r in by['stock']])
untraced = med([r[0] for r in by['usdt']])
polls = int(tasks) * (int(yields) + 1)
print(f"tokio-ebpf-trace bench: tokio {line}, yield-workload --tasks {tasks} --yields {yields} "
      f"--workers {workers} ({polls} polls/run), median of {reps} interleaved runs; "
      f"{ncpu} CPUs, kernel {kernel}")
print(f"{'configuration':<20} {'ns/poll':>9} {'× stock':>8} {'× untraced':>11} {'events/run':>11} "
      f"{'drops':>6} {'tracer ns/event':>16} {'events/s':>11}")
best_rate, costs = 0.0, []
for cfg in by:
    v = by[cfg]
    ns = med([r[0] for r in v])
    name = {'stock': 'stock', 'usdt': 'usdt, untraced', 'fallback': 'fallback (stock)'}.get(cfg, cfg.replace('traced-', 'traced: '))
    ev = [int(r[1]) for r in v if r[1] != '-']
    dr = [int(r[2]) for r in v if r[2] != '-']
    cpu = [float(r[3]) / int(r[1]) for r in v if r[3] != '-' and r[1] != '-' and int(r[1])]
    rate = [int(r[1]) / (int(r[4]) / 1e9) for r in v if r[1] != '-' and r[4] and int(r[2]) == 0]
    if rate: best_rate = max(best_rate, max(rate))
    if cpu and cfg == 'traced-all': costs = cpu
    print(f"{name:<20} {ns:>9.1f} {ns / stock:>8.2f} {ns / untraced:>11.2f} "
          f"{(str(int(med(ev))) if ev else '-'):>11} {(str(sum(dr)) if dr else '-'):>6} "
          f"{(f'{med(cpu):.0f}' if cpu else '-'):>16} {(f'{med(rate):.0f}' if rate else '-'):>11}")
print()
print("ns/poll: the workload's own wall-clock time per poll (it prints ns_per_poll). × stock and "
      "× untraced are ratios of medians from this run.")
print("tracer ns/event: CPU time (user+system) of the tracer process per event it analyzed during "
      "the workload — the consumer's cost; events/s: events the traced run produced per second "
      "of workload, drops summed over all runs.")
def per_event(cfg, base):
    v = by.get(cfg)
    ev = [int(r[1]) for r in (v or []) if r[1] != '-' and int(r[1])]
    if not v or not ev:
        return None
    return (med([r[0] for r in v]) - base) * polls / med(ev)
fb = per_event('fallback', stock)
us = per_event('traced-poll,wake,terminate', untraced)
if fb is not None and us is not None:
    print(f"per-event overhead on the traced process (same probe classes: poll, wake, terminate): "
          f"uprobe fallback {fb:.0f} ns, USDT {us:.0f} ns → fallback/USDT = {fb / us:.2f}")
if costs:
    c = med(costs)
    print(f"consumer: {c:.0f} ns of CPU per event → one core sustains ~{1e9 / c / 1e6:.1f} M events/s; "
          f"highest rate reached with 0 drops in these runs: {best_rate / 1e6:.2f} M events/s")
PY
cat "$TXT"
echo "bench-trace: written to ${TXT#$ROOT/} (raw runs: ${RAW#$ROOT/})" >&2
