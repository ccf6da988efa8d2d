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

ok()     { TESTS_RUN=$((TESTS_RUN+1)); echo "ok - $*"; }
not_ok() { TESTS_RUN=$((TESTS_RUN+1)); TESTS_FAILED=$((TESTS_FAILED+1)); echo "not ok - $*"; }
# check DESCRIPTION COMMAND...: runs the command, ok when it exits 0
check()  { local d=$1; shift; if "$@"; then ok "$d"; else not_ok "$d"; fi; }
# check_eq DESCRIPTION EXPECTED ACTUAL
check_eq() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1 (expected '$2', got '$3')"; fi; }
skip_test() { echo "SKIP: $*"; exit 77; }
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
    rm -rf "$TMPD"
}
trap _cleanup EXIT

finish() {
    echo "# $TESTS_RUN checks, $TESTS_FAILED failed"
    [ "$TESTS_RUN" -gt 0 ] || { echo "not ok - no checks ran"; exit 1; }
    [ "$TESTS_FAILED" = 0 ]
    exit $?
}

need_root() {
    if [ "$(id -u)" != 0 ]; then
        skip_test "needs root for BPF/uprobes (running as uid $(id -u))"
    fi
}
