# Shared helpers for tests/t_*.sh. Source it: . tests/lib.sh
# Each test states its intent at its top; sub-tests print "ok - what" / "not ok - what";
# the test exits non-zero when any sub-test failed (finish). Processes a test starts are
# registered with track_pid and stopped by PID at exit — never by name.
set -u
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BUILD="$ROOT/build"
TRACER="$BUILD/bin/tokio-ebpf-trace"
TESTS_FAILED=0
TESTS_RUN=0
_TRACKED_PIDS=()
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/tet-test.XXXXXX")
# python3 as the interpreter itself: where it is a pyenv shim (a bash script running `pyenv exec`,
# ~0.3 s a call against ~0.05 s, 1-2 s on a loaded machine; the tests make hundreds of calls), the
# interpreter the shim picks here is put first on PATH, alone, as $TMPD/.python/python3.
# tests/run.sh does that once for the whole run and says so in TET_PYTHON3 (the python3 it put on
# PATH): then nothing is asked here (the question itself, through the shim, cost each test 1-2 s).
if [ -z "${TET_PYTHON3:-}" ] || [ "$(command -v python3)" != "$TET_PYTHON3" ]; then
    _py=$(python3 -c 'import sys; print(sys.executable)' 2> /dev/null)
    if [ -x "$_py" ] && [ "$(command -v python3)" != "$_py" ]; then
        mkdir -p "$TMPD/.python" && ln -s "$_py" "$TMPD/.python/python3" && PATH="$TMPD/.python:$PATH"
    fi
    unset _py
fi

ok()     { TESTS_RUN=$((TESTS_RUN+1)); echo "ok - $*"; }
not_ok() { TESTS_RUN=$((TESTS_RUN+1)); TESTS_FAILED=$((TESTS_FAILED+1)); echo "not ok - $*"; }
# check DESCRIPTION COMMAND...: runs the command, ok when it exits 0
check()  { local d=$1; shift; if "$@"; then ok "$d"; else not_ok "$d"; fi; }
# check_eq DESCRIPTION EXPECTED ACTUAL
check_eq() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1 (expected '$2', got '$3')"; fi; }
skip_test() { echo "SKIP: $*"; exit 77; }
# skip_check REASON: a sub-check that cannot run here says so loudly; under CI=true it fails
skip_check() { if [ "${CI:-}" = true ]; then not_ok "cannot run under CI: $*"; else echo "# SKIP (sub-check): $*"; fi; }
die_test()  { echo "not ok - $*"; exit 1; }

track_pid() { _TRACKED_PIDS+=("$1"); }
stop_pid() {  # stop_pid PID [SIGNAL]: signal, wait up to 5 s, then SIGKILL
    local p=$1 sig=${2:-TERM} i
    kill -"$sig" "$p" 2>/dev/null || return 0
    for i in $(seq 50); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null || true
}
_cleanup() {
    local p
    for p in "${_TRACKED_PIDS[@]:-}"; do [ -n "$p" ] && stop_pid "$p"; done
    if [ -n "${KEEP_TMPD:-}" ]; then echo "# KEEP_TMPD: kept $TMPD" >&2; else rm -rf "$TMPD"; fi
}
trap _cleanup EXIT

finish() {
    echo "# $TESTS_RUN checks, $TESTS_FAILED failed"
    [ "$TESTS_RUN" -gt 0 ] || { echo "not ok - no checks ran"; exit 1; }
    [ "$TESTS_FAILED" = 0 ]
    exit $?
}

# fuzz_crashers FUZZER DIR: every kept crasher in DIR (README.md aside) runs clean, each alone.
fuzz_crashers() {
    local f rc
    for f in "$2"/*; do
        [ "$(basename "$f")" = README.md ] && continue
        "$1" "$f" > "$TMPD/crasher.log" 2>&1
        rc=$?
        check_eq "kept crasher $(basename "$f") runs clean" 0 "$rc"
        [ $rc = 0 ] || tail -5 "$TMPD/crasher.log"
    done
}

# fuzz_bounded FUZZER SECONDS CORPUS_DIR…: a bounded libFuzzer run (ASan + UBSan builds in
# build/fuzz; a crash's input goes to build/fuzz/artifacts/); prints its stats and checks it
# exits 0 and ran at least 10000 inputs. A run that the machine's load kept under 10000 in its
# SECONDS (a CI run beside other work: 9615 at 739 a second, 6937 a second unloaded) goes on
# for the inputs missing, on the corpus it grew, within 10 × SECONDS more.
fuzz_bounded() {
    local fz=$1 secs=$2 rc n more; shift 2
    mkdir -p "$BUILD/fuzz/artifacts"
    "$fz" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$BUILD/fuzz/artifacts/" -print_final_stats=1 "$@" > "$TMPD/fuzz.log" 2>&1
    rc=$?
    n=$(awk '/^stat::number_of_executed_units/{print $NF}' "$TMPD/fuzz.log")
    if [ $rc = 0 ] && [ "${n:-0}" -lt 10000 ]; then
        echo "# $n inputs in ${secs} s: $((10000 - ${n:-0})) more"
        "$fz" -runs=$((10000 - ${n:-0})) -max_total_time=$((10 * secs)) -max_len=65536 -timeout=10 \
            -rss_limit_mb=2048 -artifact_prefix="$BUILD/fuzz/artifacts/" -print_final_stats=1 "$@" \
            > "$TMPD/fuzz2.log" 2>&1
        rc=$?
        more=$(awk '/^stat::number_of_executed_units/{print $NF}' "$TMPD/fuzz2.log")
        n=$(( ${n:-0} + ${more:-0} ))
        cat "$TMPD/fuzz2.log" >> "$TMPD/fuzz.log"
    fi
    grep -E '^#[0-9]+ +(INITED|DONE)' "$TMPD/fuzz.log" | tail -2
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' "$TMPD/fuzz.log"
    check_eq "fuzzer exits 0 (no crash, leak, UB or timeout)" 0 "$rc"
    [ $rc = 0 ] || tail -60 "$TMPD/fuzz.log"
    check "fuzzer ran at least 10000 inputs ($n)" test "${n:-0}" -ge 10000
}

need_root() {
    if [ "$(id -u)" != 0 ]; then
        skip_test "needs root for BPF/uprobes (running as uid $(id -u))"
    fi
}

# ---- Tokio lines and sample-service builds ------------------------------------------------------
LINES=(1.24 1.43 1.53)
declare -A SUITE_OF=([1.24]=bookworm [1.43]=trixie [1.53]=sid)
sample_bin() { echo "$BUILD/sample-service/tokio-$1/$2/sample-service"; }   # LINE usdt|stock
need_file() {  # need_file PATH WHAT: a missing build product fails the test (make builds it)
    [ -e "$1" ] || die_test "$2 missing: $1 (run 'make')"
}
# unit_test NAME [valgrind]: runs the unit test binary $BUILD/tests/NAME (tests/unit/NAME.c,
# "ok"/"not ok" lines and "# N checks, F failed"): it passes all its checks; with `valgrind`,
# the same binary under valgrind has no memory error or leak and passes them too.
unit_test() {
    local name=$1 bin="$BUILD/tests/$1" vrc
    need_file "$bin" "unit test binary"
    "$bin" > "$TMPD/$name.out" 2>&1
    local rc=$?
    grep -E '^(not ok|#)' "$TMPD/$name.out"
    check_eq "$name: all checks pass ($(grep -c '^ok' "$TMPD/$name.out") ok)" 0 "$rc"
    check "$name: ran its checks" grep -q '^# [0-9]* checks, 0 failed' "$TMPD/$name.out"
    [ "${2:-}" = valgrind ] || return 0
    if ! command -v valgrind > /dev/null; then
        skip_check "valgrind not installed (make deps): $name not run under it"
        return 0
    fi
    valgrind -q --error-exitcode=3 --leak-check=full --errors-for-leak-kinds=all \
        --show-leak-kinds=all "$bin" > "$TMPD/$name.vg.out" 2> "$TMPD/$name.vg.err"
    vrc=$?
    head -n 40 "$TMPD/$name.vg.err"
    check_eq "$name under valgrind: no memory error or leak" 0 "$vrc"
    check "$name under valgrind: its checks pass too" grep -q '^# [0-9]* checks, 0 failed' "$TMPD/$name.vg.out"
}
# tokio_notes BINARY: "name argcount" per tokio note, as readelf -n prints them
tokio_notes() {
    readelf -n --wide "$1" | awk '
        /Provider: tokio$/ { p=1; next }
        /Provider:/        { p=0; next }
        p && /^ *Name:/    { name=$2 }
        p && /^ *Arguments:/ { sub(/^ *Arguments: */,""); n=split($0,a," "); print name, n; p=0 }'
}
# Argument counts of the tokio probes and sites per kit build of the batched-capture sites:
# the vocabulary's one table (bpf/probes.def; per-event probes have one site each)
# PROBES_REQUIRED: the per-event probes every kit build has; PROBES_EVENT: all per-event probes
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/tet-vocab.sh"
declare -A PROBE_ARGC=() PROBE_SITES=()
for name in "${!TET_VOCAB_ARGC[@]}"; do PROBE_ARGC[$name]=${TET_VOCAB_ARGC[$name]}; done
for name in "${!TET_VOCAB_NSITES[@]}"; do PROBE_SITES[$name]=${TET_VOCAB_NSITES[$name]}; done
PROBES_REQUIRED=("${TET_VOCAB_REQUIRED[@]}") PROBES_EVENT=("${TET_VOCAB_PROBES[@]}")
# wait_for_line FILE REGEX TIMEOUT_S: waits until FILE has a line matching REGEX
wait_for_line() {
    local i
    for i in $(seq $(( $3 * 10 ))); do grep -qE "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
    return 1
}
