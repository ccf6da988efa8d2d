#!/bin/bash
# Intent: the stack symbolizer (tracer/decode/stacksym.c) names what BPF stack traces hold, checked by
# tests/unit/stacksym_test.c on its own process: a function with its file:line, user code; an
# always_inline call as an inlined frame innermost (its line) then its caller (the line of the
# call); a return address as its call site; libc's nanosleep, not user code; "[unknown]" for an
# address in no mapping and for a pid that does not exist (-ESRCH); one cache for repeated
# addresses and for a fork of the same binary, which still resolves after it exited; a library
# loaded later found on refresh; kernel names from /proc/kallsyms; module facts (build-id,
# DWARF, frame pointers in a C library built -fno-omit-frame-pointer, none in its
# -fomit-frame-pointer copy nor in libc). On the Tokio 1.53 sample builds, running: the usdt one
# has frame pointers and DWARF, its names are demangled without hash, inline chains come out,
# Tokio and std frames are not user code, addresses resolve after it exits; the stock one has
# no frame pointers.
. "$(dirname "$0")/lib.sh"
need_file "$BUILD/tests/stacksym_test" "unit test binary"
need_file "$BUILD/tests/libstacksym_fp.so" "unit test helper library"
need_file "$BUILD/tests/libstacksym_nofp.so" "unit test helper library"
USDT=$(sample_bin 1.53 usdt) STOCK=$(sample_bin 1.53 stock)
need_file "$USDT" "sample-service (usdt build)"
need_file "$STOCK" "sample-service (stock build)"

"$BUILD/tests/stacksym_test" "$USDT" "$STOCK" > "$TMPD/unit.out" 2>&1
rc=$?
grep -E '^(not ok|#)' "$TMPD/unit.out"
check_eq "stacksym_test: all checks pass ($(grep -c '^ok' "$TMPD/unit.out") ok)" 0 "$rc"
check "stacksym_test: ran its checks" grep -q '^# [0-9]* checks, 0 failed' "$TMPD/unit.out"
check "stacksym_test: the Rust sub-tests ran" grep -q '^ok - rust stock: no frame pointers' "$TMPD/unit.out"
finish
