#!/bin/bash
# bench-probes: ns per poll of a yield-heavy workload (sample-service yield-workload), per Tokio
# line: stock vs patched-but-untraced vs patched-and-traced (bpftrace counting every probe).
# Runs are interleaved (stock, untraced, traced, stock, …) and each figure is the median of
# ROUNDS runs, so the ratios come from one run on one (noisy, shared) machine.
# Writes the table to stdout and build/bench/probes.txt. Needs root for bpftrace.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-5}
TASKS=${TASKS:-50}
YIELDS=${YIELDS:-4000}
WORKERS=${WORKERS:-2}
OUT="$ROOT/build/bench"
mkdir -p "$OUT"
[ "$(id -u)" = 0 ] || { echo "bench-probes: needs root (bpftrace)" >&2; exit 1; }

run() {  # run BIN [traced] → ns_per_poll
    local bin=$1 mode=${2:-}
    local args=(yield-workload --tasks "$TASKS" --yields "$YIELDS" --workers "$WORKERS")
    if [ "$mode" = traced ]; then
        local P="usdt:$bin:tokio" probes="" p
        for p in task_spawn task_poll_begin task_poll_end task_yielded waker_wake waker_clone waker_drop task_terminate worker_park worker_unpark; do
            probes+="${probes:+,}$P:$p"
        done
        bpftrace -q -e "$probes { @[probe] = count(); }" -c "$bin ${args[*]}" 2>&1 | grep -o 'ns_per_poll=[0-9.]*' | cut -d= -f2
    else
        "$bin" "${args[@]}" | grep -o 'ns_per_poll=[0-9.]*' | cut -d= -f2
    fi
}
median() { sort -g | awk '{a[NR]=$1} END{ if (NR==0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }

{
echo "# bench-probes: ns per poll, yield-workload --tasks $TASKS --yields $YIELDS --workers $WORKERS, median of $ROUNDS interleaved runs"
echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) cpus"
printf '%-10s %12s %14s %12s %16s %16s\n' line stock_ns untraced_ns traced_ns untraced/stock traced/stock
for line in 1.24 1.43 1.53; do
    stock="$ROOT/build/sample-service/tokio-$line/stock/sample-service"
    usdt="$ROOT/build/sample-service/tokio-$line/usdt/sample-service"
    [ -x "$stock" ] && [ -x "$usdt" ] || { echo "bench-probes: build tokio $line first (make)" >&2; exit 1; }
    s=(); u=(); t=()
    for r in $(seq "$ROUNDS"); do
        s+=("$(run "$stock")"); u+=("$(run "$usdt")"); t+=("$(run "$usdt" traced)")
    done
    ms=$(printf '%s\n' "${s[@]}" | median); mu=$(printf '%s\n' "${u[@]}" | median); mt=$(printf '%s\n' "${t[@]}" | median)
    printf '%-10s %12.1f %14.1f %12.1f %16.3f %16.3f\n' "$line" "$ms" "$mu" "$mt" \
        "$(echo "$mu / $ms" | bc -l)" "$(echo "$mt / $ms" | bc -l)"
done
} | tee "$OUT/probes.txt"
