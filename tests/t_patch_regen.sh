#!/bin/bash
# Intent: the committed patch sets are exactly what probes-patch/regen.sh makes from pristine
# Tokio sources plus common/usdt.rs (no stale patch after an emitter edit), and each applies
# with patch -p1 --fuzz=0 to every tested version in probes-patch/versions.
. "$(dirname "$0")/lib.sh"
"$ROOT/probes-patch/regen.sh" --check > "$TMPD/out" 2>&1
rc=$?; cat "$TMPD/out"
check_eq "regen.sh --check: patches are fresh and apply without fuzz" 0 $rc
while read -r minor dir tested; do
    case "$minor" in ''|'#'*) continue;; esac
    for v in $tested; do
        src=$(ls -d "$ROOT"/.cache/crates/*/tokio-"$v" 2>/dev/null | head -1)
        [ -n "$src" ] || { not_ok "tokio $v: pristine source missing under .cache/crates (make deps)"; continue; }
        rm -rf "$TMPD/t"; cp -a "$src" "$TMPD/t"
        check "tokio $v: $dir patch applies with --fuzz=0" patch -p1 --fuzz=0 --dry-run -s -d "$TMPD/t" -i "$ROOT/probes-patch/$dir/usdt-probes.patch"
    done
done < "$ROOT/probes-patch/versions"
finish
