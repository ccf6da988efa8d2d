#!/bin/bash
# Intent: the command table and help of tokio-ebpf-trace: --help / COMMAND --help / help
# COMMAND print USAGE-style text with examples and the exit codes and exit 0; -V prints the
# version; an unknown command or option is a usage error (exit 3, one line on stderr); a
# first argument starting with '-' runs `trace` (the placeholder answers exit 2).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/notes_lib.sh"
need_fixtures

rc=$(run_tet "$TMPD/o" "$TMPD/e" --help)
check_eq "--help exits 0" 0 "$rc"
check "--help lists list/check/trace" grep -q 'list .*FILE | -p PID' "$TMPD/o"
check "--help has examples" grep -q '^Examples:' "$TMPD/o"
check "--help documents exit status 4" grep -q '^  4  bad input' "$TMPD/o"
for c in list check; do
    rc=$(run_tet "$TMPD/o" "$TMPD/e" $c --help)
    check_eq "$c --help exits 0" 0 "$rc"
    check "$c --help has Usage" grep -q "^Usage: tokio-ebpf-trace $c" "$TMPD/o"
    check "$c --help has Examples" grep -q '^Examples:' "$TMPD/o"
    check "$c --help has Exit status" grep -q '^Exit status' "$TMPD/o"
    rc=$(run_tet "$TMPD/o2" "$TMPD/e" help $c)
    check_eq "help $c exits 0" 0 "$rc"
    check "help $c == $c --help" cmp -s "$TMPD/o" "$TMPD/o2"
done
check "check --help documents 0/1/2" bash -c "grep -q '^  0  ok: ready' '$TMPD/o' && grep -q '^  1  lacks probes' '$TMPD/o' && grep -q '^  2  cannot trace' '$TMPD/o'"

rc=$(run_tet "$TMPD/o" "$TMPD/e" -V)
check_eq "-V exits 0" 0 "$rc"
check "-V prints the version" grep -Eq '^tokio-ebpf-trace [0-9]+\.[0-9]+' "$TMPD/o"

rc=$(run_tet "$TMPD/o" "$TMPD/e" frobnicate)
check_eq "unknown command: exit 3" 3 "$rc"
check_eq "unknown command: one stderr line" 1 "$(wc -l < "$TMPD/e")"
rc=$(run_tet "$TMPD/o" "$TMPD/e" list --bogus "$FX/plain")
check_eq "unknown list option: exit 3" 3 "$rc"
rc=$(run_tet "$TMPD/o" "$TMPD/e" check)
check_eq "check without target: exit 3" 3 "$rc"
rc=$(run_tet "$TMPD/o" "$TMPD/e")
check_eq "no arguments: exit 3" 3 "$rc"
rc=$(run_tet "$TMPD/o" "$TMPD/e" list -p 12abc)
check_eq "list -p 12abc (bad PID): exit 3" 3 "$rc"
check "bad PID named on stderr" grep -q "invalid PID '12abc'" "$TMPD/e"
rc=$(run_tet "$TMPD/o" "$TMPD/e" check --json -p 0)
check_eq "check --json -p 0: exit 3" 3 "$rc"
check "check --json usage error is JSON on stdout" jq -e '.error | test("invalid PID")' "$TMPD/o"

# `tokio-ebpf-trace --pid …` goes to cmd_trace; while trace.c is the placeholder it says so
if grep -q 'tracing is not built yet' "$ROOT/tracer/cli/trace.c"; then
    rc=$(run_tet "$TMPD/o" "$TMPD/e" --pid 1)
    check_eq "--pid 1 runs the trace placeholder: exit 2" 2 "$rc"
    check "placeholder message" grep -q 'tracing is not built yet' "$TMPD/e"
else
    rc=$(run_tet "$TMPD/o" "$TMPD/e" --definitely-not-an-option)
    check "an option-like first argument reaches trace (not 'unknown command')" \
        bash -c "! grep -q 'unknown command' '$TMPD/e'"
fi
finish
