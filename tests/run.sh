#!/bin/bash
# Runs every tests/t_*.sh (in name order), or those whose name contains $1.
# A test exits 0 (pass), 77 (skip: it must print why; under CI=true a skip counts as a failure)
# or anything else (fail). Each test's output goes to build/test-logs/NAME.log; a failing
# test's log tail is printed. Ends with the line "N passed, N failed, N skipped".
# A test runs at most TEST_TIMEOUT seconds (900), or what its own "# TIMEOUT: N" line says.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOGS="$ROOT/build/test-logs"
mkdir -p "$LOGS"
pass=0; fail=0; skip=0; failed=()

# python3 resolved once for every test: where it is a pyenv shim (a bash script, 0.3-2 s a call),
# the interpreter it picks goes first on PATH, alone, in a directory of this run; TET_PYTHON3 tells
# tests/lib.sh, which asks the shim itself otherwise (a test run alone), that it is done
PYDIR=""
_py=$(python3 -c 'import sys; print(sys.executable)' 2> /dev/null)
if [ -x "$_py" ] && [ "$(command -v python3)" != "$_py" ]; then
    PYDIR=$(mktemp -d "${TMPDIR:-/tmp}/tet-run-python.XXXXXX") && ln -s "$_py" "$PYDIR/python3" &&
        PATH="$PYDIR:$PATH"
fi
unset _py
command -v python3 > /dev/null && export TET_PYTHON3=$(command -v python3)

# The kit's build tests (t_kit_matrix, t_kit_notes) compile for minutes. When the run holds one
# of them after other tests, tests/kit/warm.sh compiles the same into their content-hash caches
# meanwhile, at the lowest priority (SCHED_IDLE: only CPU the running test leaves idle), in a
# session of its own; it is stopped (its process group, by the PID it was started with) before
# the first t_kit_* test, and whatever it did not finish the tests build themselves.
# TEST_WARM=0: not started.
selected=()
for t in "$ROOT"/tests/t_*.sh; do
    name=$(basename "$t" .sh)
    if [ -n "${1:-}" ] && [[ "$name" != *"$1"* ]]; then continue; fi
    selected+=("$t")
done
WARM_PID=""
warm_stop() {
    [ -n "$WARM_PID" ] || return 0
    kill -TERM -- "-$WARM_PID" 2>/dev/null
    for _ in $(seq 100); do kill -0 -- "-$WARM_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$WARM_PID" 2>/dev/null
    wait "$WARM_PID" 2>/dev/null
    WARM_PID=""
    echo "# kit builds made ahead (build/test-logs/kit-warm.log): $(grep -c ': exit 0' "$LOGS/kit-warm.log") done, $(grep -c ': exit [1-9]' "$LOGS/kit-warm.log") failed (the tests build those again)"
}
trap 'warm_stop; [ -z "$PYDIR" ] || rm -rf "$PYDIR"' EXIT
names=" $(printf '%s\n' "${selected[@]}" | xargs -rn1 basename | tr '\n' ' ')"
if [ "${TEST_WARM:-1}" = 1 ] && [[ "$names" =~ \ t_kit_(matrix|notes)\.sh\  ]] &&
   [[ "$(basename "${selected[0]}")" != t_kit_* ]] && command -v chrt > /dev/null; then
    # not a process group leader here, so setsid makes this PID the group's and the session's
    setsid chrt --idle 0 nice -n 19 ionice -c 3 bash "$ROOT/tests/kit/warm.sh" \
        > "$LOGS/kit-warm.log" 2>&1 < /dev/null &
    WARM_PID=$!
fi

for t in "${selected[@]}"; do
    name=$(basename "$t" .sh)
    [[ "$name" == t_kit_* ]] && warm_stop
    start=$(date +%s)
    printf '%-40s ' "$name"
    limit=$(sed -n 's/^# TIMEOUT: \([0-9]\{1,5\}\)$/\1/p' "$t" | head -1)
    ( cd "$ROOT" && exec timeout --kill-after=10 "${TEST_TIMEOUT:-${limit:-900}}" bash "$t" ) > "$LOGS/$name.log" 2>&1 < /dev/null
    rc=$?
    secs=$(( $(date +%s) - start ))
    if [ $rc = 0 ]; then
        subskips=$(grep -c '^# SKIP (sub-check)' "$LOGS/$name.log")
        if [ "$subskips" -gt 0 ]; then
            echo "PASS (${secs}s) with $subskips sub-check(s) skipped:"
            grep '^# SKIP (sub-check)' "$LOGS/$name.log" | sed 's/^/    | /'
        else
            echo "PASS (${secs}s)"
        fi
        pass=$((pass+1))
    elif [ $rc = 77 ]; then
        reason=$(grep -m1 '^SKIP' "$LOGS/$name.log" || echo "SKIP: (no reason printed)")
        if [ "${CI:-}" = true ]; then
            echo "FAIL (skipped under CI=true: $reason)"; fail=$((fail+1)); failed+=("$name")
        else
            echo "SKIPPED — $reason"; skip=$((skip+1))
        fi
    else
        [ $rc = 124 ] && echo "FAIL (timeout after ${secs}s)" || echo "FAIL (exit $rc, ${secs}s)"
        fail=$((fail+1)); failed+=("$name")
        tail -n 40 "$LOGS/$name.log" | sed 's/^/    | /'
    fi
done
# the failures again at the very end (CI logs are often read from their tail)
for name in "${failed[@]}"; do
    echo "--- $name: failed checks (full log: build/test-logs/$name.log)"
    { grep -E '^(not ok|FAIL|SKIP|ERROR)' "$LOGS/$name.log" || tail -n 5 "$LOGS/$name.log"; } | head -n 20 | sed 's/^/    | /'
done
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail = 0 ]
