#!/bin/bash
# bench-trace.sh — `make bench`: what tracing costs the traced process, as ratios measured side by
# side in one run (not a test; the machine is shared and noisy, so rounds are interleaved; a
# ratio is the median of the round-by-round ratios to stock, printed with their range).
#
# 1. Yield workload, `sample-service yield-workload --tasks 1000 --yields 1000 --workers 2` on
#    Tokio LINE (every poll a yield_now: the most event-dense workload there is; it prints
#    ns_per_poll). Configurations:
#      stock              stock Tokio
#      tokio-console      the same workload built with console-subscriber (--cfg tokio_unstable,
#                         console_subscriber::init(), no client attached)
#      usdt, untraced     the probe-patched build, no tracer
#      per-event          traced with --capture per-event --probes all (one probe hit per event)
#      batched, all       traced with batched capture, every task (--sample-rate 1); the kernel
#                         side on (sched_switch/sched_wakeup, CPU profile at 99 Hz: the defaults)
#      batched, auto      the default options: adaptive sampling (docs/sampling.md)
#      batched, no sched  batched, all, with --no-sched (what the kernel side costs)
#      batched 1/100      batched, --sample-rate 100
#      fallback           the stock build through uprobes (--mode uprobe)
#      sampling-HZ        the stock build, --mode sampling --profile-hz HZ (99: the default rate;
#                         499, 997; 9973, near the maximum: the sampler's cost amplified ~100
#                         times over the default's, to be measured above the machine's noise and
#                         scaled down): no uprobe, a cpu-clock sampler and the sched tracepoints,
#                         attached to the workload's PID (this mode's only way) while it is held
#                         (below); its tracer CPU and peak RSS are over the timed run alone
#                         (its start-up, symbols and DWARF, ~1.5 s, left out, as in part 2),
#                         its events the samples + sleep records
#      per-event/batched --no-io-uring  the same without io_uring tracing: this workload uses no
#                         io_uring, so the pair says what following io_uring costs a target
#                         that does not use it (nothing, by design: a global load per poll in
#                         per-event capture, no hooks in batched capture)
#    Every run is held at its start (--wait-start FILE: it waits before building its runtime)
#    until any tracer is attached and the workload asleep in that wait, then let go (FILE
#    created): a tracer's start-up never overlaps the timed run. Traced runs attach by path
#    before the process starts (--binary; sampling: by PID, above), with the tracer's defaults
#    (nice 10, 64M ring for batched). Besides ns_per_poll (wall time, the workload's own
#    figure), the workload's CPU time per poll: all its threads, user + system, from the go to
#    its exit (wait4's, less what its only thread had used before the go). On this machine's
#    kernel (no IRQ_TIME_ACCOUNTING) that includes the interrupts taken while it ran, a
#    sampler's BPF programs among them, and it moves much less than wall time with what else
#    the machine runs. Also per traced run: events, drops, the tracer's CPU per event and
#    its peak memory (VmHWM).
# 2. HTTP at saturation: `sample-service serve --workers 1`, wrk (2 threads, 16 connections, 5 s)
#    on GET /, requests/s for stock, untraced, batched, batched --no-sched, batched with the CPU
#    profile at 999 Hz, per-event, batched 1/100, the flight recorder (--flight-recorder 60s
#    --trigger long_poll: batched capture into the window, with the live analysis a detector
#    trigger needs; events = what went through the window), and on the stock build the uprobe
#    fallback (--mode uprobe) and --mode sampling at 99, 499 and 997 Hz (events: samples + sleep
#    records), each tracer attached to the running service's PID before the warm-up. Besides
#    requests/s, the service's CPU time per request during the measured run (its threads'
#    schedstat; the interrupts taken while they ran included): it moves less than requests/s
#    with what else the machine runs. And the tracer's CPU per request over the same run.
#    Then the kernel side by the kernel's own account: for each traced configuration among
#    batched, batched 1/100, the fallback and sampling, one more run with
#    kernel.bpf_stats_enabled (kept out of the rounds: its clock reads cost), the run_time_ns
#    bpftool shows for the tracer's programs over the requests served, per program.
# 3. The consumer on one core: a batched capture of the yield workload dumped (TET_BATCH_DUMP),
#    replayed through the decode stage and the analyzer (build/tests/batch_replay); then the same
#    with 200 live tasks instead of 1000 (200 × 5000 yields).
# 4. The clock: ns per rdtsc and per clock_gettime on this machine (batched capture stamps each
#    poll's begin and end).
# 6. Saturation: `yield-workload --tasks 200 --yields 100000` (~100 M events, far more than the
#    tracer reads) for stock, the default options (adaptive sampling) and --sample-rate 1: the
#    cost, the rate reached, the tasks followed whole, what was set aside, exact totals.
# 7. The flight recorder at full speed: `yield-workload --tasks 200 --yields 30000` (6 000 200
#    polls) under --flight-recorder 60s --sample-rate 1 (SIGUSR1, crash and exit triggers only:
#    no live analysis) with --flight-memory 4G, a SIGUSR1 dump after the run: the polls it holds,
#    the events the ring lost during the run, the tracer's CPU per event taken, its memory per
#    event held (the recorder's own count of the window's bytes, and VmHWM), the dump's time, at
#    this mode's default nice (0), with --ringbuf-size 256M, with a 256M ring and a live analysis
#    (--trigger long_poll: the second stage that reads the window) and at --nice 10; then the steady state: a 32M window the first
#    run fills, the second run's tracer CPU per event the recorder took (window memory reused, as
#    in a recorder running for days; the first fill pays the kernel's page clearing). Issue 25's
#    targets: every poll, 0 lost,
#    ≤ 16 B and ≤ 20 ns of tracer CPU per event. BENCH_FLIGHT_REPS (1) rounds.
# 5. Locks: `sample-service lock-workload --tasks 8 --locks 50000 --workers 2` (each task takes a
#    tokio::sync::Mutex of its own 50000 times, a Semaphore permit and an RwLock read guard of
#    its own every 4th time, and yields every 16th: the task_lock acquire and release hooks on
#    a lock-heavy, uncontended path), ns per Mutex lock for stock, usdt untraced, batched and
#    per-event (--probes all).
#
# Environment: BENCH_LINE (1.53) BENCH_TASKS (1000) BENCH_YIELDS (1000) BENCH_WORKERS (2)
#              BENCH_REPS (9) BENCH_HTTP_REPS (5) BENCH_HTTP_SECS (5) BENCH_SAT_REPS (3)
#              BENCH_FLIGHT_REPS (1)
#              BENCH_SKIP (space-separated parts to skip: yield http replay locks saturation flight)
#              BENCH_HTTP_CONFIGS (part 2's configurations, space-separated; default: all but
#              flight-nice10, the flight recorder at --nice 10)
#              BENCH_YIELD_CONFIGS (part 1's, space-separated; default: all. Ratios need stock:
#              e.g. "stock sampling-99 sampling-499 sampling-997 fallback")
# Output: the tables on stdout and in build/bench/trace-tokio-LINE-TIMESTAMP.txt (+ .tsv raw runs).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD="$ROOT/build"
TRACER="$BUILD/bin/tokio-ebpf-trace"
LINE=${BENCH_LINE:-1.53}
TASKS=${BENCH_TASKS:-1000}
YIELDS=${BENCH_YIELDS:-1000}
WORKERS=${BENCH_WORKERS:-2}
REPS=${BENCH_REPS:-9}
HTTP_REPS=${BENCH_HTTP_REPS:-5}
HTTP_SECS=${BENCH_HTTP_SECS:-5}
SAT_REPS=${BENCH_SAT_REPS:-3}
FLIGHT_REPS=${BENCH_FLIGHT_REPS:-1}
SKIP=" ${BENCH_SKIP:-} "
STOCK="$BUILD/sample-service/tokio-$LINE/stock/sample-service"
USDT="$BUILD/sample-service/tokio-$LINE/usdt/sample-service"
CONSOLE="$BUILD/cargo/tokio-$LINE-console/release/sample-service"
REPLAY="$BUILD/tests/batch_replay"
OUT="$BUILD/bench"
die() { echo "bench-trace: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (BPF)"
for f in "$TRACER" "$STOCK" "$USDT" "$REPLAY"; do [ -x "$f" ] || die "missing $f (run 'make')"; done
command -v wrk > /dev/null || die "wrk missing (make deps installs it)"
mkdir -p "$OUT"
TMP=$(mktemp -d)
TRACER_PID="" SVC_PID="" FLIGHT="" SAMPLING=""
cleanup() {
    [ -n "$TRACER_PID" ] && kill -INT "$TRACER_PID" 2>/dev/null
    [ -n "$SVC_PID" ] && kill -TERM "$SVC_PID" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
stamp=$(date -u +%Y%m%dT%H%M%SZ)
RAW="$OUT/trace-tokio-$LINE-$stamp.tsv"
TXT="$OUT/trace-tokio-$LINE-$stamp.txt"
# elapsed_ns|window_cpu_ns: yield rows the workload's elapsed ns; http rows the tracer's CPU ns
# during the measured wrk run alone (its set-up and the warm-up left out). workload_cpu_ns: yield
# rows the workload's CPU from the go to its exit; http rows the service's during the measured run
printf 'part\trep\tconfig\tvalue\tevents\tdrops\ttracer_cpu_ns\ttracer_hwm_kb\telapsed_ns|window_cpu_ns\tworkload_cpu_ns\n' > "$RAW"
CLK_TCK=$(getconf CLK_TCK)
WL=(yield-workload --tasks "$TASKS" --yields "$YIELDS" --workers "$WORKERS")

# the tokio-console build: its crates (Debian sid's console-subscriber closure) are vendored here,
# not by make deps
if [[ "$SKIP" != *" yield "* && " ${BENCH_YIELD_CONFIGS:-tokio-console} " == *" tokio-console "* ]]; then
    "$ROOT/scripts/vendor-crates.sh" sid-console || die "cannot vendor the console-subscriber crates"
    (cd "$ROOT/sample-service/lines/tokio-$LINE-console" &&
        cargo build --release --locked --quiet --target-dir "$BUILD/cargo/tokio-$LINE-console") ||
        die "build of the tokio-console configuration failed"
fi

cpu_ns() {  # user+system CPU time of PID so far, ns
    awk -v t="$CLK_TCK" '{ sub(/.*\) /, ""); print ($12 + $13) * 1000000000 / t }' "/proc/$1/stat"
}
hwm_kb() { awk '/^VmHWM:/{print $2}' "/proc/$1/status" 2> /dev/null; }
run_ns() {  # on-CPU ns of PID's live threads (schedstat: finer than cpu_ns's clock ticks, for the
            # sampling rows, whose tracer runs less than a tick in a round; a thread gone is not counted)
    cat /proc/"$1"/task/*/schedstat 2> /dev/null | awk '{ s += $1 } END { if (NR) printf "%.0f", s }'
}

tracer_start() {  # tracer_start ARGS…: starts the tracer, waits until it is attached
    local out=(-o "$TMP/r.json")
    FLIGHT="" SAMPLING=""
    [[ " $* " == *" --mode sampling "* ]] && SAMPLING=1
    if [[ " $* " == *" --flight-recorder "* ]]; then  # the recorder writes only dumps
        FLIGHT=1; rm -rf "$TMP/dumps"; mkdir -p "$TMP/dumps"; out=(--dump-dir "$TMP/dumps")
    fi
    "$TRACER" "$@" -q "${out[@]}" > /dev/null 2> "$TMP/t.err" &
    TRACER_PID=$!
    # up to 60 s: with other jobs on the machine, reading the symbols can take a while
    for _ in $(seq 1200); do grep -q attached "$TMP/t.err" && break; sleep 0.05; done
    grep -q attached "$TMP/t.err" || die "tracer did not attach ($*): $(cat "$TMP/t.err")"
}
tracer_stop() {  # sets ev dr cpu hwm: events, drops, CPU ns, peak RSS KiB
    cpu=$(cpu_ns "$TRACER_PID" 2> /dev/null); hwm=$(hwm_kb "$TRACER_PID")
    # --mode sampling ends by itself when its process has exited (part 1): then no SIGINT
    kill -INT "$TRACER_PID" 2> /dev/null; wait "$TRACER_PID" || die "tracer failed: $(cat "$TMP/t.err")"
    TRACER_PID=""
    if [ -n "$SAMPLING" ]; then  # no events: the samples and the sleep records, and their drops
        read -r ev dr < <(jq -r '.capture | "\(.samples + .sleeps) \(.sample_drops + .sleep_drops)"' "$TMP/r.json")
        return
    fi
    if [ -n "$FLIGHT" ]; then  # "… N records held in M MiB at the end, K evicted"
        ev=$(sed -n 's/.*; \([0-9]*\) records held in .* \([0-9]*\) evicted$/\1 \2/p' "$TMP/t.err" | awk '{ print $1 + $2 }')
        dr=-
        return
    fi
    ev=$(jq .totals.events "$TMP/r.json"); dr=$(jq .totals.drops "$TMP/r.json")
}

# ---- 1. the yield workload ----
# cpurun.py PIDFILE CMD…: runs CMD (its output passed through), writes its PID to PIDFILE, then
# prints cpu_ns=N: the CPU time of all its threads, user + system, from wait4 (the scheduler's
# ns, which on this kernel include the interrupts taken while it ran: a sampler's too). When
# PIDFILE.tracer names a tracer, also tracer_ns=N tracer_hwm_kb=K: its CPU ns so far (live
# threads' schedstat) and peak RSS, read once CMD has exited but before it is reaped: a tracer
# by PID sees its process gone only then, so its analysis at the end is not in the figure
cat > "$TMP/cpurun.py" <<'EOF'
import glob, os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
with open(sys.argv[1] + '.tmp', 'w') as f:
    f.write(str(pid))
os.rename(sys.argv[1] + '.tmp', sys.argv[1])
os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
try:
    tp = open(sys.argv[1] + '.tracer').read().strip()
    ns = sum(int(open(t).read().split()[0]) for t in glob.glob(f'/proc/{tp}/task/*/schedstat'))
    hwm = [l.split()[1] for l in open(f'/proc/{tp}/status') if l.startswith('VmHWM:')][0]
    print(f"tracer_ns={ns} tracer_hwm_kb={hwm}", flush=True)
except (OSError, IndexError, ValueError):
    pass
_, st, ru = os.wait4(pid, 0)
print(f"cpu_ns={round((ru.ru_utime + ru.ru_stime) * 1e9)}", flush=True)
sys.exit(os.waitstatus_to_exitcode(st))
EOF
yield_held() {  # yield_held BIN [TRACER ARGS…]: the yield workload of BIN, held at its start
    # (--wait-start) while a tracer given ARGS attaches to its PID, then let go. Sets line (its
    # output), wcpu (its CPU ns from the go to its exit: its own start-up left out), tcpu and
    # thwm (the tracer's CPU ns over the same span and its peak RSS KiB, when one runs)
    local bin=$1 c0 t0 t1 wrap; shift
    rm -f "$TMP/go" "$TMP/wl.pid" "$TMP/wl.pid.tracer"
    python3 "$TMP/cpurun.py" "$TMP/wl.pid" "$bin" "${WL[@]}" --wait-start "$TMP/go" > "$TMP/wl.out" 2> "$TMP/wl.err" &
    wrap=$!
    for _ in $(seq 1200); do [ -s "$TMP/wl.pid" ] && break; sleep 0.05; done
    SVC_PID=$(cat "$TMP/wl.pid" 2> /dev/null)
    [ -n "$SVC_PID" ] || die "the workload did not start ($bin): $(cat "$TMP/wl.err")"
    [ $# -gt 0 ] && { tracer_start --pid "$SVC_PID" "$@"; echo "$TRACER_PID" > "$TMP/wl.pid.tracer"; }
    # asleep in its wait for the go: then its only thread's CPU so far is its start-up
    for _ in $(seq 1000); do
        [ "$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$SVC_PID/stat" 2> /dev/null)" = S ] && break
        sleep 0.01
    done
    c0=$(awk '{ print $1 }' "/proc/$SVC_PID/schedstat")
    [ -n "$TRACER_PID" ] && t0=$(run_ns "$TRACER_PID")
    touch "$TMP/go"
    wait "$wrap" || die "workload failed ($bin $*): $(cat "$TMP/wl.err")"
    SVC_PID=""
    tcpu=- thwm=-
    t1=$(sed -n 's/^tracer_ns=\([0-9]*\) .*/\1/p' "$TMP/wl.out")
    [ -n "$t1" ] && tcpu=$(( t1 - t0 )) thwm=$(sed -n 's/.* tracer_hwm_kb=//p' "$TMP/wl.out")
    line=$(grep -v '^cpu_ns=\|^tracer_ns=' "$TMP/wl.out")
    wcpu=$(sed -n 's/^cpu_ns=//p' "$TMP/wl.out" | awk -v a="$c0" '{ printf "%.0f", $1 - a }')
}
yield_one() {  # yield_one REP CONFIG
    local rep=$1 cfg=$2 bin=$USDT line ns el ev=- dr=- cpu=- hwm=- wcpu tcpu thwm
    case "$cfg" in
    stock|fallback|sampling-*) bin=$STOCK ;;
    tokio-console) bin=$CONSOLE ;;
    esac
    case "$cfg" in
    per-event) tracer_start --binary "$USDT" --capture per-event --probes all ;;
    batched) tracer_start --binary "$USDT" --sample-rate 1 ;;
    batched-auto) tracer_start --binary "$USDT" ;;
    batched-nosched) tracer_start --binary "$USDT" --sample-rate 1 --no-sched ;;
    batched-1/100) tracer_start --binary "$USDT" --sample-rate 100 ;;
    fallback) tracer_start --binary "$STOCK" --mode uprobe ;;
    per-event-nouring) tracer_start --binary "$USDT" --capture per-event --probes all --no-io-uring ;;
    batched-nouring) tracer_start --binary "$USDT" --sample-rate 1 --no-io-uring ;;
    esac
    if [[ "$cfg" == sampling-* ]]; then  # by PID, the workload held until the tracer is attached
        yield_held "$bin" --mode sampling --profile-hz "${cfg#sampling-}"
    else
        yield_held "$bin"
    fi
    ns=$(sed -n 's/.*ns_per_poll=\([0-9.]*\).*/\1/p' <<< "$line")
    el=$(sed -n 's/.*elapsed_ns=\([0-9]*\).*/\1/p' <<< "$line")
    if [[ "$cfg" == sampling-* ]]; then
        tracer_stop   # it has ended, or ends, with its process
        cpu=$tcpu hwm=$thwm
    elif [ -n "$TRACER_PID" ]; then
        sleep 0.5   # let the tracer catch up with what the ring holds
        tracer_stop
    fi
    printf 'yield\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$cfg" "$ns" "$ev" "$dr" "$cpu" "$hwm" "$el" "$wcpu" >> "$RAW"
}
if [[ "$SKIP" != *" yield "* ]]; then
    YCONF=(stock tokio-console usdt per-event batched batched-auto batched-nosched batched-1/100 fallback
           sampling-99 sampling-499 sampling-997 sampling-9973 per-event-nouring batched-nouring)
    [ -n "${BENCH_YIELD_CONFIGS:-}" ] && read -r -a YCONF <<< "$BENCH_YIELD_CONFIGS"
    echo "bench-trace: yield workload, tokio $LINE, ${WL[*]}, $REPS rounds of ${#YCONF[@]} configurations…" >&2
    "$USDT" "${WL[@]}" > /dev/null; "$STOCK" "${WL[@]}" > /dev/null   # warm-up
    [[ " ${YCONF[*]} " == *" tokio-console "* ]] && [ ! -x "$CONSOLE" ] && die "missing $CONSOLE"
    for rep in $(seq "$REPS"); do
        for cfg in "${YCONF[@]}"; do yield_one "$rep" "$cfg"; done
        echo "bench-trace: yield round $rep/$REPS done" >&2
    done
fi

# ---- 2. HTTP at saturation ----
svc_start() {  # svc_start BIN CONFIG: serve --workers 1 started; sets SVC_PID and the caller's addr
    "$1" serve --workers 1 > "$TMP/svc.out" 2> "$TMP/svc.err" &
    SVC_PID=$!
    for _ in $(seq 100); do grep -q '^listening on' "$TMP/svc.out" && break; sleep 0.05; done
    addr=$(sed -n 's/^listening on //p' "$TMP/svc.out")
    [ -n "$addr" ] || die "the service did not start ($2): $(cat "$TMP/svc.err")"
}
http_one() {  # http_one REP CONFIG
    local rep=$1 cfg=$2 bin=$USDT addr rps ev=- dr=- cpu=- hwm=- wcpu=- cpufn scpu
    case "$cfg" in stock|fallback|sampling-*) bin=$STOCK ;; esac
    svc_start "$bin" "$cfg"
    case "$cfg" in
    per-event) tracer_start --pid "$SVC_PID" --capture per-event --probes all ;;
    batched) tracer_start --pid "$SVC_PID" --sample-rate 1 ;;
    batched-auto) tracer_start --pid "$SVC_PID" ;;
    batched-nosched) tracer_start --pid "$SVC_PID" --sample-rate 1 --no-sched ;;
    batched-999hz) tracer_start --pid "$SVC_PID" --sample-rate 1 --profile-hz 999 ;;
    batched-1/100) tracer_start --pid "$SVC_PID" --sample-rate 100 ;;
    flight) tracer_start --pid "$SVC_PID" --flight-recorder 60s --trigger long_poll ;;
    flight-nice10) tracer_start --pid "$SVC_PID" --flight-recorder 60s --trigger long_poll --nice 10 ;;
    fallback) tracer_start --pid "$SVC_PID" --mode uprobe ;;
    sampling-*) tracer_start --pid "$SVC_PID" --mode sampling --profile-hz "${cfg#sampling-}" ;;
    esac
    wrk -t2 -c16 -d1s "http://$addr/" > /dev/null 2>&1   # warm-up
    cpufn=cpu_ns
    [ -n "$SAMPLING" ] && cpufn=run_ns
    [ -n "$TRACER_PID" ] && wcpu=$($cpufn "$TRACER_PID")
    scpu=$(run_ns "$SVC_PID")
    rps=$(wrk -t2 -c16 -d"${HTTP_SECS}s" "http://$addr/" 2>&1 | awk '/^Requests\/sec:/{print $2}')
    [ -n "$rps" ] || die "wrk measured nothing ($cfg)"
    scpu=$(awk -v a="$scpu" -v b="$(run_ns "$SVC_PID")" 'BEGIN { printf "%.0f", b - a }')
    [ -n "$TRACER_PID" ] && wcpu=$(awk -v a="$wcpu" -v b="$($cpufn "$TRACER_PID")" 'BEGIN { printf "%.0f", b - a }')
    [ -n "$TRACER_PID" ] && tracer_stop
    kill -TERM "$SVC_PID"; wait "$SVC_PID" 2>/dev/null; SVC_PID=""
    printf 'http\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$cfg" "$rps" "$ev" "$dr" "$cpu" "$hwm" "$wcpu" "$scpu" >> "$RAW"
}
# The kernel side of a traced configuration, by the kernel's own account: one more measured run
# with kernel.bpf_stats_enabled (its two clock reads per program run would tilt the rounds above,
# so it is kept out of them), the run_time_ns and run_cnt that bpftool shows for the tracer's
# programs (the prog_ids of its fds) summed over the measured run. Row: httpbpf, -, CONFIG,
# requests/s, BPF ns, program runs, the programs' names:runs:ns.
bpf_progs() {  # the tracer's "name run_time_ns run_cnt" lines
    local id
    for id in $(sed -n 's/^prog_id:[[:space:]]*//p' /proc/"$TRACER_PID"/fdinfo/* 2> /dev/null | sort -u); do
        bpftool -j prog show id "$id" 2> /dev/null | jq -r '"\(.name) \(.run_time_ns // 0) \(.run_cnt // 0)"'
    done
}
http_bpf() {  # http_bpf CONFIG
    local cfg=$1 addr rps old b0 b1
    local bin=$USDT
    case "$cfg" in stock) return ;; fallback|sampling-*) bin=$STOCK ;; esac
    svc_start "$bin" "$cfg"
    case "$cfg" in
    usdt) ;;
    batched) tracer_start --pid "$SVC_PID" --sample-rate 1 ;;
    batched-1/100) tracer_start --pid "$SVC_PID" --sample-rate 100 ;;
    fallback) tracer_start --pid "$SVC_PID" --mode uprobe ;;
    sampling-*) tracer_start --pid "$SVC_PID" --mode sampling --profile-hz "${cfg#sampling-}" ;;
    *) kill -TERM "$SVC_PID"; wait "$SVC_PID" 2> /dev/null; SVC_PID=""; return ;;
    esac
    if [ -n "$TRACER_PID" ]; then
        wrk -t2 -c16 -d1s "http://$addr/" > /dev/null 2>&1   # warm-up
        old=$(sysctl -n kernel.bpf_stats_enabled)
        sysctl -qw kernel.bpf_stats_enabled=1
        b0=$(bpf_progs)
        rps=$(wrk -t2 -c16 -d"${HTTP_SECS}s" "http://$addr/" 2>&1 | awk '/^Requests\/sec:/{print $2}')
        b1=$(bpf_progs)
        sysctl -qw kernel.bpf_stats_enabled="$old"
        tracer_stop
        printf 'httpbpf\t-\t%s\t%s\t%s\n' "$cfg" "${rps:-0}" "$(paste <(echo "$b0") <(echo "$b1") |
            awk '{ ns += $5 - $2; n += $6 - $3; l = l sprintf("%s%s:%d:%d", l ? "," : "", $1, $6 - $3, $5 - $2) }
                 END { printf "%d\t%d\t%s", ns, n, l }')" >> "$RAW"
    fi
    kill -TERM "$SVC_PID"; wait "$SVC_PID" 2>/dev/null; SVC_PID=""
}
if [[ "$SKIP" != *" http "* ]]; then
    HCONF=(stock usdt batched batched-auto batched-nosched batched-999hz per-event batched-1/100 flight
           fallback sampling-99 sampling-499 sampling-997)
    [ -n "${BENCH_HTTP_CONFIGS:-}" ] && read -r -a HCONF <<< "$BENCH_HTTP_CONFIGS"
    echo "bench-trace: HTTP at saturation (wrk -t2 -c16 -d${HTTP_SECS}s, serve --workers 1), $HTTP_REPS rounds…" >&2
    for rep in $(seq "$HTTP_REPS"); do
        for cfg in "${HCONF[@]}"; do http_one "$rep" "$cfg"; done
        echo "bench-trace: HTTP round $rep/$HTTP_REPS done" >&2
    done
    for cfg in "${HCONF[@]}"; do http_bpf "$cfg"; done
    echo "bench-trace: HTTP: the BPF programs' own account (bpf_stats) done" >&2
fi

# ---- 3. the consumer on one core ----
REPLAY_LINE=""
if [[ "$SKIP" != *" replay "* ]]; then
    echo "bench-trace: consumer: dumping a batched capture of the yield workload, replaying it…" >&2
    TET_BATCH_DUMP="$TMP/yield.dump" "$TRACER" --binary "$USDT" --ringbuf-size 256M --sample-rate 1 -q \
        -o "$TMP/d.json" > /dev/null 2> "$TMP/d.err" &
    TRACER_PID=$!
    for _ in $(seq 200); do grep -q attached "$TMP/d.err" && break; sleep 0.05; done
    "$USDT" "${WL[@]}" > /dev/null
    sleep 1; kill -INT "$TRACER_PID"; wait "$TRACER_PID"; TRACER_PID=""
    REPLAY_LINE=$("$REPLAY" "$TMP/yield.dump" 3)
    REPLAY_LINE="$REPLAY_LINE $(jq -c '{live_drops: .totals.drops}' "$TMP/d.json")"
    rm -f "$TMP/yield.dump"
    # the same with 200 live tasks (the saturation anchor's count): the analyzer's per-task
    # memory (task records, their three histograms) is 5× smaller
    TET_BATCH_DUMP="$TMP/yield200.dump" "$TRACER" --binary "$USDT" --ringbuf-size 256M --sample-rate 1 -q \
        -o "$TMP/d200.json" > /dev/null 2> "$TMP/d200.err" &
    TRACER_PID=$!
    for _ in $(seq 200); do grep -q attached "$TMP/d200.err" && break; sleep 0.05; done
    "$USDT" yield-workload --tasks 200 --yields 5000 --workers "$WORKERS" > /dev/null
    sleep 1; kill -INT "$TRACER_PID"; wait "$TRACER_PID"; TRACER_PID=""
    REPLAY_LINE="$REPLAY_LINE $("$REPLAY" "$TMP/yield200.dump" 3 | jq -c '. + {tasks: 200}')"
    REPLAY_LINE="$REPLAY_LINE $(jq -c '{live_drops: .totals.drops}' "$TMP/d200.json")"
    rm -f "$TMP/yield200.dump"
fi

# ---- 5. locks ----
LW=(lock-workload --tasks 8 --locks 50000 --workers 2)
lock_one() {  # lock_one REP CONFIG
    local rep=$1 cfg=$2 bin=$USDT out ns el ev=- dr=- cpu=- hwm=-
    case "$cfg" in
    stock) bin=$STOCK ;;
    per-event) tracer_start --binary "$USDT" --capture per-event --probes all ;;
    batched) tracer_start --binary "$USDT" --sample-rate 1 ;;
    esac
    out=$("$bin" "${LW[@]}") || die "lock workload failed ($cfg)"
    ns=$(sed -n 's/.*ns_per_lock=\([0-9.]*\).*/\1/p' <<< "$out")
    el=$(sed -n 's/.*elapsed_ns=\([0-9]*\).*/\1/p' <<< "$out")
    if [ -n "$TRACER_PID" ]; then sleep 0.5; tracer_stop; fi
    printf 'locks\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$cfg" "$ns" "$ev" "$dr" "$cpu" "$hwm" "$el" >> "$RAW"
}
if [[ "$SKIP" != *" locks "* ]]; then
    echo "bench-trace: locks, ${LW[*]}, $REPS rounds…" >&2
    "$USDT" "${LW[@]}" > /dev/null; "$STOCK" "${LW[@]}" > /dev/null   # warm-up
    for rep in $(seq "$REPS"); do
        for cfg in stock usdt batched per-event; do lock_one "$rep" "$cfg"; done
    done
fi

# ---- 6. saturation ----
SAT_JSON="$TMP/sat.jsonl"
: > "$SAT_JSON"
sat_one() {  # sat_one REP CONFIG: the saturated yield workload, stock / default options / every task
    local rep=$1 cfg=$2 bin=$USDT line ns el ev=- dr=- cpu=- hwm=- exp
    case "$cfg" in
    stock) bin=$STOCK ;;
    auto) tracer_start --binary "$USDT" ;;
    all) tracer_start --binary "$USDT" --sample-rate 1 ;;
    esac
    line=$("$bin" "${SW[@]}") || die "saturated workload failed ($cfg)"
    ns=$(sed -n 's/.*ns_per_poll=\([0-9.]*\).*/\1/p' <<< "$line")
    el=$(sed -n 's/.*elapsed_ns=\([0-9]*\).*/\1/p' <<< "$line")
    exp=$(sed -n 's/.*polls_expected=\([0-9]*\).*/\1/p' <<< "$line")
    if [ -n "$TRACER_PID" ]; then
        sleep 1
        tracer_stop
        jq -c --arg cfg "$cfg" --argjson exp "$exp" --arg site "$(grep -n '// SPAWN-SITE: yield_workload$' "$ROOT/sample-service/src/workload.rs" | cut -d: -f1)" \
            '{cfg: $cfg, expected: ($exp + 2), polls: .totals.polls, s: .capture.batch.sampling | del(.rule),
              whole: [.tasks[] | select((.location // "") | test("workload.rs:" + $site + ":")) | select(.polls == .yields.yield_now + 1)] | length,
              listed: [.tasks[] | select((.location // "") | test("workload.rs:" + $site + ":"))] | length}' \
            "$TMP/r.json" >> "$SAT_JSON"
    fi
    printf 'sat\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$cfg" "$ns" "$ev" "$dr" "$cpu" "$hwm" "$el" >> "$RAW"
}
SW=(yield-workload --tasks 200 --yields 100000 --workers "$WORKERS")
if [[ "$SKIP" != *" saturation "* ]]; then
    echo "bench-trace: saturation, ${SW[*]}, $SAT_REPS rounds of stock / default options / --sample-rate 1…" >&2
    for rep in $(seq "$SAT_REPS"); do
        for cfg in stock auto all; do sat_one "$rep" "$cfg"; done
    done
fi

# ---- 7. the flight recorder at full speed ----
FL_JSON="$TMP/flight.jsonl"
: > "$FL_JSON"
FW=(yield-workload --tasks 200 --yields 30000 --workers "$WORKERS")
usr1_dump() {  # usr1_dump N: SIGUSR1, waits for the Nth dump; sets dump (its JSON), added, lost
    local n=$1 got
    kill -USR1 "$TRACER_PID"
    for _ in $(seq 1200); do
        got=$(grep -c ": trace written to" "$TMP/t.err")  # the last of a dump's three files
        [ "$got" -ge "$n" ] && break
        sleep 0.1
    done
    [ "$got" -ge "$n" ] || die "flight recorder: no dump $n within 120 s: $(tail -3 "$TMP/t.err")"
    dump=$(ls -t "$TMP/dumps"/*.json | grep -v '\.trace\.json$' | head -1)
    added=$(sed -n 's/.*; since the start: \([0-9]*\) recorded, [0-9]* lost to a full ring$/\1/p' "$TMP/t.err" | tail -1)
    lost=$(sed -n 's/.*; since the start: [0-9]* recorded, \([0-9]*\) lost to a full ring$/\1/p' "$TMP/t.err" | tail -1)
}
flight_one() {  # flight_one REP MODE: one recorder (MODE fill, fill-ring256, live-ring256, fill-nice10 or steady), one SIGUSR1 dump
    local rep=$1 mode=$2 line t0 t1 cpu0 cpu rcpu hwm held mib evicted a0=0 l0=0 args
    args=(--flight-recorder 60s --flight-memory 4G)
    [ "$mode" = fill-nice10 ] && args+=(--nice 10)
    [ "$mode" = fill-ring256 ] && args+=(--ringbuf-size 256M)
    # a live analysis (a detector trigger): the second stage reads the window, the copy goes first
    [ "$mode" = live-ring256 ] && args+=(--ringbuf-size 256M --trigger long_poll)
    [ "$mode" = steady ] && args=(--flight-recorder 32M)
    tracer_start --binary "$USDT" "${args[@]}" --sample-rate 1
    if [ "$mode" = steady ]; then  # the first run fills the window
        "$USDT" "${FW[@]}" > /dev/null || die "flight workload failed"
        sleep 1
        usr1_dump 1; a0=$added; l0=$lost
    fi
    cpu0=$(cpu_ns "$TRACER_PID")   # attached (steady: full): what follows is the recording's
    line=$("$USDT" "${FW[@]}") || die "flight workload failed"
    sleep 1
    cpu=$(cpu_ns "$TRACER_PID"); hwm=$(hwm_kb "$TRACER_PID")
    # rcpu, not cpu: tracer_stop sets cpu (the tracer's whole CPU, attach included: ~0.4 s)
    rcpu=$(awk -v a="$cpu" -v b="$cpu0" 'BEGIN { printf "%.0f", a - b }')
    t0=$(date +%s%N)
    usr1_dump $([ "$mode" = steady ] && echo 2 || echo 1)
    t1=$(date +%s%N)
    tracer_stop
    # "… N records held in M MiB at the end, K evicted"
    read -r held mib evicted < <(sed -n 's/.*; \([0-9]*\) records held in \([0-9]*\) MiB at the end, \([0-9]*\) evicted$/\1 \2 \3/p' "$TMP/t.err")
    jq -c --arg rep "$rep" --arg mode "$mode" --argjson cpu "${rcpu%.*}" --argjson hwm "$hwm" --argjson held "${held:-0}" \
        --argjson mib "${mib:-0}" --argjson evicted "${evicted:-0}" --argjson dump_ms $(( (t1 - t0) / 1000000 )) \
        --argjson taken "$(( ${added:-0} - a0 ))" --argjson lost "$(( ${lost:-0} - l0 ))" \
        --argjson expected "$(sed -n 's/.*polls_expected=\([0-9]*\).*/\1/p' <<< "$line")" \
        '{rep: $rep, mode: $mode, polls: .totals.polls, drops: .totals.drops, events: .totals.events, lost_batches:
          .data_loss.batches.lost_ring_full, expected: ($expected + 2), cpu_ns: $cpu, hwm_kb: $hwm,
          held: $held, mib: $mib, evicted: $evicted, taken: $taken, lost: $lost, dump_ms: $dump_ms}' "$dump" >> "$FL_JSON"
}
if [[ "$SKIP" != *" flight "* ]]; then
    echo "bench-trace: flight recorder, ${FW[*]}, --flight-recorder 60s / 32M --sample-rate 1, $FLIGHT_REPS round(s)…" >&2
    for rep in $(seq "$FLIGHT_REPS"); do
        for mode in fill fill-ring256 live-ring256 fill-nice10 steady; do flight_one "$rep" "$mode"; done
    done
fi

# ---- 4. the clock ----
cat > "$TMP/clk.c" <<'EOF'
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>
static unsigned long long ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }
int main(void) {
	const int n = 10000000; volatile unsigned long long s = 0; unsigned long long t0 = ns();
	for (int i = 0; i < n; i++) s += __rdtsc();
	unsigned long long t1 = ns();
	for (int i = 0; i < n; i++) s += ns();
	printf("%.1f %.1f\n", (t1 - t0) / (double)n, (ns() - t1) / (double)n);
	return 0;
}
EOF
CLOCK=$(cc -O2 -o "$TMP/clk" "$TMP/clk.c" && "$TMP/clk")

HTTP_SECS=$HTTP_SECS python3 - "$RAW" "$LINE" "$TASKS" "$YIELDS" "$WORKERS" "$REPS" "$HTTP_REPS" "$(nproc)" "$(uname -r)" \
    "$REPLAY_LINE" "$CLOCK" "$SAT_JSON" "$FL_JSON" > "$TXT" <<'PY'
import json, os, statistics, sys
raw, line, tasks, yields, workers, reps, hreps, ncpu, kernel, replay, clock, satj, flj = sys.argv[1:]
HTTP_SECS = float(os.environ['HTTP_SECS'])
rows = [l.rstrip('\n').split('\t') for l in open(raw)][1:]
med = statistics.median
def runs(part, cfg): return [r for r in rows if r[0] == part and r[2] == cfg]
def mv(part, cfg):
    v = [float(r[3]) for r in runs(part, cfg)]
    return med(v) if v else None
def verdict(ok): return "met" if ok else "NOT met"
def paired(part, cfg, col=3):  # this configuration over stock, round by round: (median, min, max)
    def val(r): return float(r[col]) if len(r) > col and r[col] not in ('-', '') else None
    st = {r[1]: val(r) for r in runs(part, 'stock')}
    q = [val(r) / st[r[1]] for r in runs(part, cfg) if st.get(r[1]) and val(r) is not None]
    return (med(q), min(q), max(q)) if q else None
def paired_cpu_req(cfg):  # the service's CPU per request over stock's, round by round
    def per(r): return float(r[9]) / float(r[3]) if len(r) > 9 and r[9] not in ('-', '') and float(r[3]) > 0 else None
    st = {r[1]: per(r) for r in runs('http', 'stock')}
    q = [per(r) / st[r[1]] for r in runs('http', cfg) if st.get(r[1]) and per(r) is not None]
    return (med(q), min(q), max(q)) if q else None
def cpu_per_poll(cfg):  # the workload's CPU ns per poll (yield rows' last column), median
    v = [float(r[9]) / polls for r in runs('yield', cfg) if len(r) > 9 and r[9] not in ('-', '')]
    return med(v) if v else None
def spread(p): return f"(rounds {p[1]:.2f}–{p[2]:.2f})"
# --mode sampling's rates in the runs (99 is the default), lowest first
SAMPLING_HZ = sorted({r[2].split('-', 1)[1] for r in rows if r[2].startswith('sampling-')}, key=int)
def sampling_rates(part):  # issue 27's lines: the default rate against the target, the others given
    out = []
    for hz in SAMPLING_HZ:
        p = paired(part, f'sampling-{hz}')
        if p: out.append((hz, p))
    return out
polls = int(tasks) * (int(yields) + 1)
print(f"tokio-ebpf-trace bench: tokio {line}; {ncpu} CPUs, kernel {kernel}")
stock = mv('yield', 'stock')
if stock:
    untraced = mv('yield', 'usdt')
    print(f"\n1. yield workload: yield-workload --tasks {tasks} --yields {yields} --workers {workers} "
          f"({polls} polls/run), median of {reps} interleaved rounds; × stock is the median of the "
          f"round-by-round ratios")
    print(f"(CPU: the workload's CPU time, all threads, from the go to its exit, per poll: what the "
          f"tracing took from the process whatever else the machine runs; × stock CPU: round by round)")
    print(f"{'configuration':<16} {'ns/poll':>9} {'× stock':>8} {'CPU ns/poll':>12} {'× stock CPU':>12} "
          f"{'events/run':>11} {'drops':>7} {'tracer ns/event':>16} {'tracer peak RSS':>16}")
    names = {'usdt': 'usdt, untraced', 'batched-nosched': 'batched no-sched', 'batched-auto': 'batched, auto',
             'batched': 'batched, all',
             'per-event-nouring': 'per-ev no-uring', 'batched-nouring': 'batched no-uring',
             **{f'sampling-{hz}': f'sampling {hz} Hz' for hz in SAMPLING_HZ}}
    for cfg in ['stock', 'tokio-console', 'usdt', 'per-event', 'batched', 'batched-auto', 'batched-nosched', 'batched-1/100', 'fallback',
                *[f'sampling-{hz}' for hz in SAMPLING_HZ], 'per-event-nouring', 'batched-nouring']:
        v = runs('yield', cfg)
        if not v: continue
        ns = mv('yield', cfg)
        ev = [int(r[4]) for r in v if r[4] != '-']
        dr = [int(r[5]) for r in v if r[5] != '-']
        cpu = [float(r[6]) / int(r[4]) for r in v if r[6] != '-' and r[4] != '-' and int(r[4])]
        hwm = [int(r[7]) for r in v if r[7] != '-']
        cp, cq = cpu_per_poll(cfg), paired('yield', cfg, 9)
        print(f"{names.get(cfg, cfg):<16} {ns:>9.1f} {paired('yield', cfg)[0]:>8.2f} "
              f"{(f'{cp:.1f}' if cp else '-'):>12} {(f'{cq[0]:.3f}' if cq else '-'):>12} "
              f"{(str(int(med(ev))) if ev else '-'):>11} {(str(sum(dr)) if dr else '-'):>7} "
              f"{(f'{med(cpu):.0f}' if cpu else '-'):>16} {(f'{max(hwm) / 1024:.0f} MiB' if hwm else '-'):>16}")
    b, s, u = paired('yield', 'batched'), paired('yield', 'batched-1/100'), paired('yield', 'usdt')
    print("targets (yield workload):")
    if b: print(f"  batched ≤ 1.5× stock: {b[0]:.3f}× {spread(b)} — {verdict(b[0] <= 1.5)}; must not exceed 2×: {verdict(b[0] <= 2)}")
    if s: print(f"  --sample-rate 100 ≤ 1.05×: {s[0]:.3f}× {spread(s)} — {verdict(s[0] <= 1.05)}")
    if u: print(f"  untraced ≤ 1.02×: {u[0]:.3f}× {spread(u)} — {verdict(u[0] <= 1.02)}")
    for hz, p in sampling_rates('yield'):
        c = paired('yield', f'sampling-{hz}', 9)
        print(f"  --mode sampling at {hz} Hz" + (" (the default) ≤ 1.02× stock (issue 27)" if hz == '99' else "")
              + f": ns/poll {p[0]:.3f}× {spread(p)}"
              + (f", CPU per poll {c[0]:.3f}× {spread(c)}" if c else "")
              + (f" — {verdict(p[0] <= 1.02)} (ns/poll), {verdict(c[0] <= 1.02) if c else '?'} (CPU)" if hz == '99' else ""))
    hi = SAMPLING_HZ[-1] if SAMPLING_HZ else None
    c = paired('yield', f'sampling-{hi}', 9) if hi and int(hi) > 99 else None
    if c:  # the sampler's cost grows with the rate: amplified, it stands out of the noise
        print(f"  the sampler's cost, linear in the rate, from the {hi} Hz rows' CPU ({c[0]:.3f}×): "
              f"{100 * (c[0] - 1) / int(hi):.5f} % of the workload's CPU per Hz, at 99 Hz "
              f"{1 + (c[0] - 1) * 99 / int(hi):.4f}× (the sched tracepoints' part, not in proportion, "
              f"is in the 99 Hz rows)")
    pe, b = mv('yield', 'per-event'), mv('yield', 'batched')
    if pe and b: print(f"  batched vs per-event: {pe / b:.1f}× cheaper per poll")
    n = paired('yield', 'batched-nosched')
    if b and n: print(f"  the kernel side (sched + 99 Hz profile): batched {paired('yield', 'batched')[0]:.3f}× vs no-sched {n[0]:.3f}× {spread(n)}")
    for cap in ['per-event', 'batched']:
        on, off = {r[1]: float(r[3]) for r in runs('yield', cap)}, {r[1]: float(r[3]) for r in runs('yield', cap + '-nouring')}
        q = [on[k] / off[k] for k in on if off.get(k)]
        if q: print(f"  io_uring tracing on a target without io_uring, {cap}: {med(q):.3f}× its --no-io-uring run "
                    f"(rounds {min(q):.2f}–{max(q):.2f}) — no measurable cost: {verdict(med(q) <= 1.03)}")
hs = mv('http', 'stock')
if hs:
    print(f"\n2. HTTP at saturation: wrk -t2 -c16 on GET /, serve --workers 1, median of {hreps} interleaved rounds; "
          f"of stock is the median of the round-by-round ratios")
    print(f"(service CPU: the service's threads' CPU time during the measured run per request, interrupts "
          f"taken while they ran included; × stock: round by round)")
    print(f"{'configuration':<16} {'requests/s':>11} {'of stock':>9} {'service µs/req':>15} {'× stock':>8} "
          f"{'events':>10} {'drops':>7} {'tracer µs/request':>18}")
    for cfg in ['stock', 'usdt', 'batched', 'batched-auto', 'batched-nosched', 'batched-999hz', 'per-event', 'batched-1/100', 'flight', 'flight-nice10',
                'fallback', *[f'sampling-{hz}' for hz in SAMPLING_HZ]]:
        v = runs('http', cfg)
        if not v: continue
        rps = mv('http', cfg)
        ev = [int(r[4]) for r in v if r[4] != '-']
        dr = [int(r[5]) for r in v if r[5] != '-']
        # the tracer's CPU during the measured run over the requests it served (rps × seconds)
        tq = [float(r[8]) / 1e3 / (float(r[3]) * HTTP_SECS) for r in v if r[8] != '-' and float(r[3]) > 0]
        sq = [float(r[9]) / 1e3 / (float(r[3]) * HTTP_SECS) for r in v if len(r) > 9 and r[9] != '-' and float(r[3]) > 0]
        sp = paired_cpu_req(cfg)
        print(f"{({'usdt': 'usdt, untraced', 'batched': 'batched, all', 'batched-auto': 'batched, auto', 'batched-nosched': 'batched no-sched', 'batched-999hz': 'batched 999 Hz', 'flight': 'flight recorder', 'flight-nice10': 'flight nice 10', 'fallback': 'fallback (stock)', **{f'sampling-{hz}': f'sampling {hz} Hz' for hz in SAMPLING_HZ}}).get(cfg, cfg):<16} {rps:>11.0f} {paired('http', cfg)[0]:>9.3f} "
              f"{(f'{med(sq):.2f}' if sq else '-'):>15} {(f'{sp[0]:.3f}' if sp else '-'):>8} "
              f"{(str(int(med(ev))) if ev else '-'):>10} {(str(sum(dr)) if dr else '-'):>7} "
              f"{(f'{med(tq):.3f}' if tq else '-'):>18}")
    bp = [r for r in rows if r[0] == 'httpbpf' and float(r[3]) > 0]
    if bp:
        print(f"the kernel side by the kernel's own account (kernel.bpf_stats_enabled, one more {HTTP_SECS:.0f} s run "
              f"per configuration, out of the rounds; every program of the tracer, each run on any thread of the "
              f"machine counted), over stock's service CPU per request:")
        sq = [float(r[9]) / (float(r[3]) * HTTP_SECS) for r in runs('http', 'stock') if len(r) > 9 and r[9] not in ('-', '') and float(r[3]) > 0]
        for r in bp:
            us = float(r[4]) / 1e3 / (float(r[3]) * HTTP_SECS)
            progs = ', '.join(f"{n} {int(c) / HTTP_SECS:.0f}/s × {int(t) / max(int(c), 1):.0f} ns"
                              for n, c, t in (x.split(':') for x in r[6].split(',') if x) if int(c))
            print(f"  {r[2]:<16} {us:.3f} µs a request"
                  + (f" = {100 * us * 1e3 / med(sq):.2f} % of stock's {med(sq) / 1e3:.2f} µs" if sq else "")
                  + f" ({progs})")
    b, s = paired('http', 'batched'), paired('http', 'batched-1/100')
    print("targets (HTTP):")
    if b: print(f"  batched ≥ 97 % of stock (issue 25): {100 * b[0]:.1f} % {spread(b)} — {verdict(b[0] >= 0.97)}")
    if s: print(f"  sampled 1/100 ≥ 99.5 % of stock (issue 25): {100 * s[0]:.1f} % {spread(s)} — {verdict(s[0] >= 0.995)}")
    n, h = paired('http', 'batched-nosched'), paired('http', 'batched-999hz')
    if b and n: print(f"  the kernel side (defaults: sched + 99 Hz) costs {100 * (n[0] - b[0]):.1f} points of stock "
                      f"(batched {100 * b[0]:.1f} % vs no-sched {100 * n[0]:.1f} %); at 999 Hz: "
                      f"{100 * h[0]:.1f} % {spread(h) if h else ''}")
    for hz, p in sampling_rates('http'):
        c = paired_cpu_req(f'sampling-{hz}')
        print(f"  --mode sampling at {hz} Hz" + (" (the default) ≥ 99 % of stock (issue 27)" if hz == '99' else "")
              + f": {100 * p[0]:.1f} % {spread(p)}" + (f", service CPU per request {c[0]:.3f}× {spread(c)}" if c else "")
              + (f" — {verdict(p[0] >= 0.99)}" if hz == '99' else ""))
    fb, c = paired('http', 'fallback'), paired_cpu_req('fallback')
    if fb: print(f"  the uprobe fallback on the same stock build: {100 * fb[0]:.1f} % {spread(fb)}"
                 + (f", service CPU per request {c[0]:.3f}× {spread(c)}" if c else ""))
    f = paired('http', 'flight')
    if f and b: print(f"  the flight recorder (60 s window, live long_poll detection): {100 * f[0]:.1f} % {spread(f)} "
                      f"vs batched capture with reports {100 * b[0]:.1f} %")
if replay:
    parts = replay.split(' ')
    r = json.loads(parts[0]); live = json.loads(parts[1]) if len(parts) > 1 else {}
    r2 = json.loads(parts[2]) if len(parts) > 2 else None
    live2 = json.loads(parts[3]) if len(parts) > 3 else {}
    print(f"\n3. consumer on one core (a dumped batched capture of the yield workload, replayed through "
          f"the decode stage and the analyzer, fastest of 3, memory reused as a running tracer reuses it): "
          f"{r['events']} events in {r['batches']} batches, "
          f"{r['ns_per_event']:.0f} ns/event = {r['events_per_s'] / 1e6:.1f} M events/s "
          f"(first round, memory touched for the first time: {r.get('first_round_ns_per_event', 0):.0f} ns/event); "
          f"drops in the live capture: {live.get('live_drops', '?')}")
    if r2:
        print(f"  the same with 200 live tasks (yield-workload --tasks 200 --yields 5000): {r2['events']} events, "
              f"{r2['ns_per_event']:.0f} ns/event = {r2['events_per_s'] / 1e6:.1f} M events/s "
              f"(first round {r2.get('first_round_ns_per_event', 0):.0f} ns/event); drops in the live capture: {live2.get('live_drops', '?')}")
    print(f"  target ≥ 25 M events/s on one core (issue 25), 0 drops: 1000 live tasks "
          f"{verdict(r['events_per_s'] >= 25e6 and live.get('live_drops', 1) == 0)}"
          + (f", 200 live tasks {verdict(r2['events_per_s'] >= 25e6 and live2.get('live_drops', 1) == 0)}" if r2 else ''))
if mv('sat', 'stock'):
    sat = [json.loads(l) for l in open(satj) if l.strip()]
    print(f"\n6. saturation: yield-workload --tasks 200 --yields 100000 --workers {workers} (20 000 200 polls, "
          f"~100 M events: far more than the tracer at nice 10 reads), median of the rounds; auto = the default "
          f"options (adaptive sampling), all = --sample-rate 1 (every task, what the ring cannot hold is lost)")
    print(f"{'configuration':<16} {'ns/poll':>9} {'× stock':>8} {'drops':>11} {'tracer ns/event':>16} "
          f"{'rate max':>9} {'whole/listed':>13} {'set aside':>10} {'totals exact':>13}")
    for cfg in ['stock', 'auto', 'all']:
        v = runs('sat', cfg)
        if not v: continue
        dr = [int(r[5]) for r in v if r[5] != '-']
        cpu = [float(r[6]) / int(r[4]) for r in v if r[6] != '-' and r[4] != '-' and int(r[4])]
        js = [j for j in sat if j['cfg'] == cfg]
        rm = max((j['s']['rate_max'] for j in js), default=None)
        whole = f"{min(j['whole'] for j in js)}–{max(j['whole'] for j in js)}/{max(j['listed'] for j in js)}" if js else '-'
        aside = str(max(j['s']['tasks_set_aside_by_rate'] + j['s']['tasks_set_aside_by_gap'] for j in js)) if js else '-'
        exact = (f"{sum(j['polls'] == j['expected'] for j in js)} of {len(js)}") if js else '-'
        print(f"{cfg:<16} {mv('sat', cfg):>9.1f} {paired('sat', cfg)[0]:>8.2f} "
              f"{(str(max(dr)) if dr else '-'):>11} {(f'{med(cpu):.0f}' if cpu else '-'):>16} "
              f"{(str(rm) if rm else '-'):>9} {whole:>13} {aside:>10} {exact:>13}")
    for j in sat:
        if j['cfg'] == 'auto':
            steps = ' → '.join('%d (%s, %.0f ms)' % (c['rate'], c['why'], c['at_ns'] / 1e6)
                               for c in j['s']['changes'])
            print(f"  auto: rates {steps}; gaps {j['s']['gaps']}, events set aside {j['s']['events_set_aside']}")
            break
fl = [json.loads(l) for l in open(flj) if l.strip()]
if fl:
    print(f"\n7. flight recorder at full speed: yield-workload --tasks 200 --yields 30000 --workers {workers}, "
          f"--sample-rate 1, SIGUSR1, crash and exit triggers (no live analysis: batches kept raw); fill: "
          f"--flight-recorder 60s --flight-memory 4G, one run, a SIGUSR1 dump (nice 0, the default for this mode; with a 256M ring; at --nice 10); "
          f"live-ring256: the same with a 256M ring and --trigger long_poll (a live analysis, reading the window behind the copy); "
          f"steady: --flight-recorder 32M filled by a first run, the second run measured and dumped; "
          f"lost: events the ring could not take during the run")
    print(f"{'round':<6} {'mode':<11} {'dump polls':>11} {'expected':>9} {'lost':>9} {'events taken':>13} {'B/event':>8} "
          f"{'RSS B/event':>12} {'tracer CPU s':>13} {'tracer ns/event':>16} {'dump s':>7}")
    for j in fl:
        kept = j['taken']
        print(f"{j['rep']:<6} {j['mode']:<11} {j['polls']:>11} {j['expected']:>9} {j['lost']:>9} {kept:>13} "
              f"{(j['mib'] * 1048576 / j['held'] if j['held'] else 0):>8.1f} "
              f"{(j['hwm_kb'] * 1024 / j['held'] if j['held'] else 0):>12.0f} "
              f"{j['cpu_ns'] / 1e9:>13.2f} {(j['cpu_ns'] / kept if kept else 0):>16.0f} {j['dump_ms'] / 1000:>7.1f}")
    def last(mode):
        v = [j for j in fl if j['mode'] == mode]
        return v[-1] if v else None
    f, f256, st, lv = last('fill'), last('fill-ring256'), last('steady'), last('live-ring256')
    def ns(j): return j['cpu_ns'] / j['taken'] if j and j['taken'] else float('inf')
    print(f"  targets (issue 25): every poll and 0 lost (fill / fill, 256M ring / steady): {verdict(f and f['polls'] == f['expected'] and f['lost'] == 0)} / "
          f"{verdict(f256 and f256['polls'] == f256['expected'] and f256['lost'] == 0)} / "
          f"{verdict(st and st['lost'] == 0)}; "
          f"with a live analysis (256M ring): {verdict(lv and lv['polls'] == lv['expected'] and lv['lost'] == 0)}; "
          f"≤ 16 B/event held: {verdict(f and f['held'] and f['mib'] * 1048576 / f['held'] <= 16)}; "
          f"≤ 20 ns of tracer CPU per event (fill / steady): {verdict(ns(f) <= 20)} / {verdict(ns(st) <= 20)} "
          f"(B/event: the recorder's count of its window's bytes, whole MiB; tracer CPU: from attached (steady: from full) "
          f"to the end of the run + 1 s, per event the recorder took)")
if mv('locks', 'stock'):
    print(f"\n5. locks: lock-workload --tasks 8 --locks 50000 --workers 2 (a Mutex of each task's own, a "
          f"Semaphore permit and an RwLock read every 4th lock: per Mutex lock 1.5 acquires and 1.5 releases, "
          f"each a task_lock hook), median of {reps} interleaved rounds")
    print(f"{'configuration':<16} {'ns/lock':>9} {'× stock':>8} {'events/run':>11} {'drops':>7}")
    for cfg in ['stock', 'usdt', 'batched', 'per-event']:
        v = runs('locks', cfg)
        if not v: continue
        ev = [int(r[4]) for r in v if r[4] != '-']
        dr = [int(r[5]) for r in v if r[5] != '-']
        print(f"{({'usdt': 'usdt, untraced'}).get(cfg, cfg):<16} {mv('locks', cfg):>9.1f} {paired('locks', cfg)[0]:>8.2f} "
              f"{(str(int(med(ev))) if ev else '-'):>11} {(str(sum(dr)) if dr else '-'):>7}")
    st, u, b = mv('locks', 'stock'), mv('locks', 'usdt'), mv('locks', 'batched')
    print(f"  the hooks untraced: {u - st:+.1f} ns per lock; batched: {b - st:+.1f} ns per lock "
          f"({(b - st) / 3:.1f} ns per task_lock event, 3 per lock, polls and wakes included)")
if clock:
    rdtsc, cg = clock.split()
    print(f"\n4. clock on this machine: rdtsc {rdtsc} ns, clock_gettime {cg} ns. Batched capture stamps "
          f"each poll's begin and end: 2 × {rdtsc} ns = {2 * float(rdtsc):.0f} ns per poll"
          + (f" ({2 * float(rdtsc) / stock:.2f}× of a stock poll of the yield workload)" if stock else ""))
PY
cat "$TXT"
echo "bench-trace: written to ${TXT#$ROOT/} (raw runs: ${RAW#$ROOT/})" >&2
