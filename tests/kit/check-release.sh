#!/bin/bash
# tests/kit/check-release.sh VERSION [check|build|stock] — patch Tokio VERSION with the kit's catalogue
# (probes-patch/hooks.py) and compile the matrix workload (tests/fixtures/kit/matrix-app) against
# it with --cfg tokio_task_tracking and without. `check` (default): cargo check only; `stock`:
# cargo check against the unpatched release (the harness itself).
# Work dir: $KIT_MATRIX_DIR/VERSION (default .cache/kit-matrix; the patched tree is made anew).
set -euo pipefail
die() { echo "check-release: $*" >&2; exit 1; }
V=${1:?usage: check-release.sh VERSION [check|build]}; MODE=${2:-check}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=${KIT_MATRIX_DIR:-$ROOT/.cache/kit-matrix}/$V
mkdir -p "$W"
"$ROOT/tests/kit/registry.sh" "$V" "$W/registry"
rm -rf "$W/tokio-$V"
if [ "$MODE" = stock ]; then
    cp -rL "$W/registry/tokio-$V" "$W/tokio-$V"; MODE=check; CFGS=no
else
    python3 "$ROOT/probes-patch/hooks.py" apply "$W/registry/tokio-$V" "$W/tokio-$V"; CFGS="yes no"
fi
app=$W/app
. "$ROOT/tests/kit/matrix_lib.sh"
km_make_app "$app" "$V" "$W/registry"
printf '[patch.crates-io]\ntokio = { path = "%s" }\n' "$W/tokio-$V" >> "$app/Cargo.toml"
for cfg in $CFGS; do
    flags="-C force-frame-pointers=yes"
    [ $cfg = yes ] && flags="--cfg tokio_task_tracking --check-cfg=cfg(tokio_task_tracking) $flags -C link-arg=-Wl,-z,separate-loadable-segments"
    (cd "$app" && RUSTFLAGS="$flags" cargo $MODE --release --quiet --target-dir "$W/target-$cfg" 2> "$W/$MODE-$cfg.log") ||
        { grep -E '^error' -A8 "$W/$MODE-$cfg.log" | head -40 >&2; die "tokio $V: cargo $MODE with cfg=$cfg failed (log: $W/$MODE-$cfg.log)"; }
done
echo "check-release: tokio $V: cargo $MODE passes ($([ "$CFGS" = no ] && echo "unpatched" || echo "patched, with and without the cfg"))"
