#!/bin/bash
# Intent: what the tracer reads of a traced process's /proc to name an epoll token's fd — fd
# links, the epoll fds' fdinfo, the TCP/UDP/unix socket tables, all shaped by the process —
# survives a bounded libFuzzer run (ASan + UBSan, default 12 s, FDWHAT_FUZZ_TIME to change) on
# made-up /proc directories (tests/fuzz/fuzz_fdwhat.c: every description NUL-terminated in its
# buffer, of a known kind, with no control byte). The seeds come from this machine's own /proc
# (tests/fuzz/fdwhat_seeds.py) and must reach every kind of description first, a unix path's
# newline escaped (a seed that no longer reaches them would make the run shallow).
. "$(dirname "$0")/lib.sh"
FUZZ="$BUILD/fuzz/fuzz_fdwhat"; SEEDS="$BUILD/fuzz/fdwhat-seeds"
[ -x "$FUZZ" ] && [ -e "$SEEDS/.done" ] || die_test "$FUZZ or its seeds missing: run 'make'"
FUZZ_FDWHAT_VERBOSE=1 "$FUZZ" "$SEEDS/real" > "$TMPD/real.out" 2>&1
check_eq "the real seed runs clean" 0 "$?"
check_eq "the real seed reaches every kind (listener, 2 connections, udp, unix, 2 pipes, the epoll fd)" \
    "connection connection listener other pipe pipe udp unix" \
    "$(awk '/^fd [0-9]+ / && !seen[$2]++ {print $3}' "$TMPD/real.out" | sort | tr '\n' ' ' | sed 's/ $//')"
check "the unix socket's path: its newline escaped" grep -qE '^fd [0-9]+ unix unix socket .*s\\x0aock \(listening\)$' "$TMPD/real.out"
mkdir -p "$TMPD/corpus"
fuzz_bounded "$FUZZ" "${FDWHAT_FUZZ_TIME:-12}" "$TMPD/corpus" "$SEEDS"
finish
