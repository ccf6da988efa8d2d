#!/bin/bash
# Intent: probes-patch/versions is what probes-patch/hooks.py makes from the catalogue
# (probes-patch/hooks/*.hooks) and every Tokio source there is (../shared/tokio-src + Debian's) —
# no stale table after a catalogue edit — and lists every one of those releases as patchable;
# `hooks.py diff` is a patch that applies with --fuzz=0 and gives exactly what `apply` gives; a bad
# input gets one line and leaves nothing behind: sources a hook does not fit (exit 4, naming the
# hook and the file), an anchor found twice, an already patched tree; a directory that is no
# Tokio crate, a destination that exists, a catalogue with a syntax error (exit 1, the last naming
# the file and line).
. "$(dirname "$0")/lib.sh"
H="$ROOT/probes-patch/hooks.py"
mapfile -t DIRS < <("$ROOT/tests/kit/registry.sh" --unpack-all) || die_test "unpacking ../shared/tokio-src"
mapfile -t ALL < <("$ROOT/tests/kit/registry.sh" --list)
python3 "$H" matrix --check "${DIRS[@]}" > "$TMPD/m.out" 2> "$TMPD/m.err"
rc=$?; cat "$TMPD/m.err" | head -20
check_eq "probes-patch/versions is fresh (hooks.py matrix --check)" 0 $rc
check_eq "every release with a source (${#ALL[@]}) is listed patchable" "$(printf '%s ' "${ALL[@]}")" \
    "$(awk '$2 == "ok" { printf "%s ", $1 }' "$ROOT/probes-patch/versions")"
check "at least 70 releases (1.24.0–1.53.2)" test "${#ALL[@]}" -ge 70

# hooks.py cover (what make test builds): its releases together take every hook#variant some
# release of versions takes (counted here with awk from versions and the catalogue's hook names),
# the newest release among them, and fewer than all
mapfile -t COVER < <(python3 "$H" cover)
taken() { # taken [RELEASE…]: the sorted hook#variant pairs of those releases (all when none given)
    awk -v want="$*" -v hooks="$(grep -h '^hook ' "$ROOT"/probes-patch/hooks/*.hooks | cut -d' ' -f2 | tr '\n' ' ')" '
        BEGIN { nh = split(hooks, H, " "); nw = split(want, W, " "); for (i = 1; i <= nw; i++) sel[W[i]] = 1 }
        /^#/ || $2 != "ok" || (nw && !($1 in sel)) { next }
        { delete v; for (i = 3; i <= NF; i++) if ($i ~ /^variants=/) { n = split(substr($i, 10), P, ",");
              for (j = 1; j <= n; j++) { split(P[j], q, "#"); v[q[1]] = q[2] } }
          for (i = 1; i <= nh; i++) print H[i] "#" (H[i] in v ? v[H[i]] : 1) }' "$ROOT/probes-patch/versions" | sort -u
}
taken > "$TMPD/all.pairs"; taken "${COVER[@]}" > "$TMPD/cover.pairs"
check "hooks.py cover: ${#COVER[@]} releases (${COVER[*]}), fewer than all, the newest (${ALL[-1]}) among them" \
    bash -c "[ ${#COVER[@]} -ge 2 ] && [ ${#COVER[@]} -lt ${#ALL[@]} ] && printf '%s\n' ${COVER[*]} | grep -qFx '${ALL[-1]}'"
check_eq "hooks.py cover: they take all $(wc -l < "$TMPD/all.pairs") hook#variant pairs the releases take" \
    "" "$(comm -23 "$TMPD/all.pairs" "$TMPD/cover.pairs" | tr '\n' ' ')"

# diff ≡ apply, on three shapes
for v in 1.24.0 1.38.2 1.51.4; do
    src=$("$ROOT/tests/kit/registry.sh" --unpack-all >/dev/null; echo "$ROOT/.cache/tokio-src/tokio-$v.tmp/tokio-$v")
    rm -rf "$TMPD/a" "$TMPD/b"
    python3 "$H" apply "$src" "$TMPD/a" || { not_ok "tokio $v: apply"; continue; }
    cp -r "$src" "$TMPD/b"
    python3 "$H" diff "$src" > "$TMPD/p.diff"
    check "tokio $v: hooks.py diff applies with patch -p1 --fuzz=0" patch -s -p1 --fuzz=0 -d "$TMPD/b" -i "$TMPD/p.diff"
    check "tokio $v: ... and gives the tree apply gives" diff -r -x .cargo-checksum.json "$TMPD/a" "$TMPD/b"
done

# bad inputs
base="$ROOT/.cache/tokio-src/tokio-1.47.5.tmp/tokio-1.47.5"
one_line() { # one_line NAME WANT_RC REGEX CMD...
    local name=$1 want=$2 re=$3; shift 3
    "$@" > "$TMPD/o" 2> "$TMPD/e"; local rc=$?
    check_eq "$name: exit $want" "$want" "$rc"
    check_eq "$name: one line on stderr, nothing on stdout" "1 0" "$(wc -l < "$TMPD/e") $(wc -c < "$TMPD/o")"
    if grep -qE "$re" "$TMPD/e"; then ok "$name: says $(cut -c1-160 "$TMPD/e")"; else not_ok "$name: '$(cat "$TMPD/e")' does not match /$re/"; fi
}
cp -r "$base" "$TMPD/nofit"
sed -i 's/^    fn complete(self) {$/    fn complete_task(self) {/' "$TMPD/nofit/src/runtime/task/harness.rs"
one_line "a hook that does not fit" 4 '^hooks: tokio 1\.47\.5 cannot be patched: hook harness\.task_terminate .*anchor not found in src/runtime/task/harness\.rs' \
    python3 "$H" apply "$TMPD/nofit" "$TMPD/nofit.out"
check "... and nothing is written" test ! -e "$TMPD/nofit.out"
cp -r "$base" "$TMPD/twice"
f="$TMPD/twice/src/runtime/task/harness.rs"
grep -n -m1 -A1 '^    fn complete(self) {$' "$f" | sed 's/^[0-9]*[-:]//' >> "$f"
one_line "an anchor found twice" 4 'hook harness\.task_terminate .*found 2 times in src/runtime/task/harness\.rs' \
    python3 "$H" plan "$TMPD/twice"
python3 "$H" apply "$base" "$TMPD/patched" || not_ok "apply 1.47.5"
one_line "an already patched tree" 4 'src/runtime/task/usdt\.rs already exists: this Tokio is patched already' \
    python3 "$H" apply "$TMPD/patched" "$TMPD/patched2"
one_line "not a Tokio crate" 1 '^hooks: .*/nocrate: not a Tokio crate' python3 "$H" plan "$TMPD/nocrate"
one_line "a destination that exists" 1 '^hooks: .*/nofit: exists already$' python3 "$H" apply "$base" "$TMPD/nofit"
mkdir -p "$TMPD/kit/probes-patch/hooks" "$TMPD/kit/probes-patch/common"
cp "$H" "$TMPD/kit/probes-patch/"; cp "$ROOT/probes-patch/common/usdt.rs" "$TMPD/kit/probes-patch/common/"
printf 'hook x.y\nedit src/lib.rs\n@find\nfn main() {}\n@end\n' > "$TMPD/kit/probes-patch/hooks/bad.hooks"
one_line "a catalogue syntax error" 1 '^hooks: bad\.hooks:2: (edit without @end|misplaced @end)' \
    python3 "$TMPD/kit/probes-patch/hooks.py" plan "$base"
finish
