#!/bin/bash
# Intent: the fallback names every raw::poll instance by its future type, and what it says is
# true. On the stock build of every Tokio line, per instance: the type tracer/discover/symbols.c gives
# (DWARF via libdw) equals the one tests/fallback/dwarf_poll_types.py reads from readelf's dump
# and objdump (an independent reader); with DWARF ignored (TET_FALLBACK_NO_DWARF=1, as for a
# release build without debug info) the symbols-only answer — a type, or "A | B" when LLVM merged
# the code of several futures — always contains the true type, is never wrong, and names the
# blocking_call future's instances. The functions found are the same on every line: 31 raw::poll,
# the four waker functions, Harness::complete, dealloc, shutdown (counts printed).
. "$(dirname "$0")/lib.sh"
SYMS="$BUILD/tests/fallback_symbols"
need_file "$SYMS" "fallback_symbols inspector"
command -v readelf > /dev/null && command -v objdump > /dev/null || die_test "binutils missing"

missing=()
for line in "${LINES[@]}"; do
    bin=$(sample_bin "$line" stock)
    if [ ! -x "$bin" ]; then missing+=("tokio-$line/stock"); continue; fi
    L="tokio $line"
    python3 "$ROOT/tests/fallback/dwarf_poll_types.py" "$bin" > "$TMPD/truth.$line"
    "$SYMS" "$bin" --json > "$TMPD/dwarf.$line.json"
    check_eq "$L: fallback_symbols exit 0 (usable)" 0 "$?"
    TET_FALLBACK_NO_DWARF=1 "$SYMS" "$bin" --json > "$TMPD/syms.$line.json"
    echo "# $L: $(jq -c .counts "$TMPD/dwarf.$line.json")"
    check "$L: raw::poll instances found" test "$(jq '.counts["raw::poll"]' "$TMPD/dwarf.$line.json")" -gt 10
    for k in waker::wake_by_val waker::wake_by_ref waker::clone_waker waker::drop_waker Harness::complete raw::dealloc raw::shutdown; do
        check "$L: $k found" test "$(jq ".counts[\"$k\"]" "$TMPD/dwarf.$line.json")" -ge 1
    done
    python3 - "$TMPD/truth.$line" "$TMPD/dwarf.$line.json" "$TMPD/syms.$line.json" > "$TMPD/cmp.$line" <<'PY'
import json, re, sys
truth = dict(l.split(" ", 1) for l in open(sys.argv[1]).read().splitlines())
def norm(t):
    # DWARF names a closure or async block by its kind and index, and the body of an async fn
    # or block holding another one ({async_fn#0}, {async_block#2}: a spawn inside an async fn)
    # too; demangled symbols say {{closure}} for all of them
    t = re.sub(r"\{(async_fn_env|async_block_env|closure_env|async_fn|async_block)#\d+\}", "{{closure}}", t)
    t = re.sub(r"\{impl#\d+\}::launch", "Launch::launch", t)
    # DWARF spells Box's default allocator (a future over Tokio's boxing threshold: Tokio 1.43+
    # spawns it as Pin<Box<F>>), demangled symbols do not
    return t.replace(", ", ",").replace(",alloc::alloc::Global>", ">")
res = {"dwarf_ok": 0, "dwarf_bad": 0, "sym_exact": 0, "sym_set": 0, "sym_bad": 0, "n": 0,
       "blocking": 0}
for path, kind in ((sys.argv[2], "dwarf"), (sys.argv[3], "sym")):
    for f in json.load(open(path))["functions"]:
        if f["kind"] != "raw::poll":
            continue
        want = truth.get("%x" % f["addr"])
        if want is None or want == "?":
            continue
        want = norm(want)
        got = [norm(x) for x in f["type"].split(" | ")]
        if kind == "dwarf":
            res["n"] += 1
            res["dwarf_ok" if got == [want] else "dwarf_bad"] += 1
        elif got == [want]:
            res["sym_exact"] += 1
        elif want in got:
            res["sym_set"] += 1
        else:
            res["sym_bad"] += 1
            print("wrong:", "%x" % f["addr"], want, "got", f["type"], file=sys.stderr)
        if kind == "sym" and "blocking_call_in_async" in want and want in got:
            res["blocking"] += 1
print(" ".join("%s=%d" % kv for kv in res.items()))
PY
    r=$(cat "$TMPD/cmp.$line"); echo "# $L: $r"
    v() { sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" <<< "$r"; }
    check "$L: DWARF truth names the instances" test "$(v n)" -gt 10
    check_eq "$L: libdw types = readelf/objdump types, every instance" "$(v n)" "$(v dwarf_ok)"
    check_eq "$L: symbols only: never wrong" 0 "$(v sym_bad)"
    check_eq "$L: symbols only: exact or a set holding the type, every instance" "$(v n)" "$(( $(v sym_exact) + $(v sym_set) ))"
    check "$L: symbols only: some exact" test "$(v sym_exact)" -gt 0
    check "$L: symbols only: blocking_call's instances carry its type" test "$(v blocking)" -ge 1
done
[ ${#missing[@]} = 0 ] || { [ "$TESTS_FAILED" = 0 ] || finish;
    skip_test "stock sample-service builds missing: ${missing[*]} (make builds them)"; }
finish
