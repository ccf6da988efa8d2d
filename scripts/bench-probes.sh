#!/bin/bash
# bench-probes: ns per poll of a yield-heavy workload (sample-service yield-workload), per Tokio
# line: stock vs patched-but-untraced vs patched-and-traced (bpftrace counting every probe).
# A fourth build, "stock+flags" (stock Tokio built with the kit's frame pointers and linker flag
# but no probes), separates what the probes' gates cost from what frame pointers cost.
# Runs are interleaved (stock, untraced, traced, stock, …) and each figure is the median of
# ROUNDS runs, so the ratios come from one run on one (noisy, shared) machine.
# A second table counts instructions per poll with valgrind (callgrind), which does not depend on
# the machine's load: the difference between a run with 2000 and one with 1000 yields per task,
# on the current-thread runtime, divided by the extra polls.
# Writes the tables to stdout and build/bench/probes.txt. Needs root for bpftrace.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/tet-vocab.sh"   # the probe vocabulary (bpf/probes.def)
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
        for p in "${TET_VOCAB_PROBES[@]}"; do
            probes+="${probes:+,}$P:$p"
        done
        bpftrace -q -e "$probes { @[probe] = count(); }" -c "$bin ${args[*]}" 2>&1 | grep -o 'ns_per_poll=[0-9.]*' | cut -d= -f2
    else
        "$bin" "${args[@]}" | grep -o 'ns_per_poll=[0-9.]*' | cut -d= -f2
    fi
}
build_flags() {  # stock Tokio with the kit's RUSTFLAGS minus the cfg → path of the binary
    local line=$1 dir="$ROOT/sample-service/lines/tokio-$1" td="$ROOT/build/cargo/tokio-$1/flags"
    (cd "$dir" && RUSTFLAGS="-C force-frame-pointers=yes -C link-arg=-Wl,-z,separate-loadable-segments" \
        cargo build --release --locked --quiet --manifest-path Cargo.toml --target-dir "$td") >&2 \
        || { echo "bench-probes: build of tokio $line stock+flags failed" >&2; return 1; }
    echo "$td/release/sample-service"
}
median() { sort -g | awk '{a[NR]=$1} END{ if (NR==0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }

{
echo "# bench-probes: ns per poll, yield-workload --tasks $TASKS --yields $YIELDS --workers $WORKERS, median of $ROUNDS interleaved runs"
echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) cpus"
printf '%-6s %10s %12s %12s %12s %14s %16s %14s\n' line stock_ns flags_ns untraced_ns traced_ns flags/stock untraced/flags traced/stock
for line in 1.24 1.43 1.53; do
    stock="$ROOT/build/sample-service/tokio-$line/stock/sample-service"
    usdt="$ROOT/build/sample-service/tokio-$line/usdt/sample-service"
    [ -x "$stock" ] && [ -x "$usdt" ] || { echo "bench-probes: build tokio $line first (make)" >&2; exit 1; }
    flags=$(build_flags "$line") || exit 1
    s=(); f=(); u=(); t=()
    for r in $(seq "$ROUNDS"); do
        s+=("$(run "$stock")"); f+=("$(run "$flags")"); u+=("$(run "$usdt")"); t+=("$(run "$usdt" traced)")
    done
    ms=$(printf '%s\n' "${s[@]}" | median); mf=$(printf '%s\n' "${f[@]}" | median)
    mu=$(printf '%s\n' "${u[@]}" | median); mt=$(printf '%s\n' "${t[@]}" | median)
    printf '%-6s %10.1f %12.1f %12.1f %12.1f %14.3f %16.3f %14.3f\n' "$line" "$ms" "$mf" "$mu" "$mt" \
        "$(echo "$mf / $ms" | bc -l)" "$(echo "$mu / $mf" | bc -l)" "$(echo "$mt / $ms" | bc -l)"
done
echo
echo "# instructions per poll (valgrind --tool=callgrind; yield-workload --tasks 50 --current-thread, 2000 vs 1000 yields)"
printf '%-6s %12s %12s %12s %14s %16s\n' line stock flags untraced flags/stock untraced/flags
instr() {  # BIN YIELDS → instructions executed
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" yield-workload --tasks 50 --yields "$2" --current-thread 2>&1 \
        | awk '/Collected :/{print $NF}'
}
per_poll() { local a b; a=$(instr "$1" 1000); b=$(instr "$1" 2000); echo "($b - $a) / 50000" | bc -l; }
if command -v valgrind > /dev/null; then
    for line in 1.24 1.43 1.53; do
        is=$(per_poll "$ROOT/build/sample-service/tokio-$line/stock/sample-service")
        if_=$(per_poll "$ROOT/build/cargo/tokio-$line/flags/release/sample-service")
        iu=$(per_poll "$ROOT/build/sample-service/tokio-$line/usdt/sample-service")
        printf '%-6s %12.1f %12.1f %12.1f %14.3f %16.3f\n' "$line" "$is" "$if_" "$iu" \
            "$(echo "$if_ / $is" | bc -l)" "$(echo "$iu / $if_" | bc -l)"
    done
else
    echo "valgrind not installed: no instruction counts"
fi
} | tee "$OUT/probes.txt"
