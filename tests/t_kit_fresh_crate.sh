#!/bin/bash
# Intent: the kit builds a crate it has never seen (made here with `cargo new`, using Tokio from
# the crates of one Debian suite through the crate's own .cargo/config.toml source replacement)
# without editing it: Cargo.toml and Cargo.lock are byte-identical afterwards; the binary lands
# where `cargo build` puts it, carries every tokio probe of bpf/probes.def, and behaves exactly as the stock build.
# The crate's own warnings are shown; the patched Tokio's lints (a path dependency) are not.
. "$(dirname "$0")/lib.sh"

line=1.43; suite=${SUITE_OF[$line]}
crate="$TMPD/fresh-app"
cargo new --quiet --vcs none "$crate" || die_test "cargo new failed"
mkdir -p "$crate/.cargo"
cat > "$crate/.cargo/config.toml" <<CFG
[source.crates-io]
replace-with = "debian"
[source.debian]
directory = "$ROOT/.cache/crates/$suite"
[net]
offline = true
CFG
cat >> "$crate/Cargo.toml" <<'TOML'
tokio = { version = "1.43", features = ["full"] }
TOML
cat > "$crate/src/main.rs" <<'RS'
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let unused_in_app = 1;
    let sum = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for i in 0..50u64 {
        let sum = sum.clone();
        handles.push(tokio::spawn(async move {
            let (tx, mut rx) = tokio::sync::mpsc::channel(4);
            tokio::spawn(async move { for k in 0..10u64 { tx.send(i * k).await.unwrap(); } });
            while let Some(v) = rx.recv().await { sum.fetch_add(v, Ordering::Relaxed); tokio::task::yield_now().await; }
        }));
    }
    for h in handles { h.await.unwrap(); }
    let b = tokio::task::spawn_blocking(|| 7u64).await.unwrap();
    println!("sum={} blocking={}", sum.load(Ordering::Relaxed), b);
}
RS
(cd "$crate" && cargo build --release --quiet) > "$TMPD/stock.log" 2>&1 || { cat "$TMPD/stock.log"; die_test "stock build of the fresh crate failed"; }
cp "$crate/target/release/fresh-app" "$TMPD/fresh-app.stock"
snapshot() { (cd "$crate" && find . -path ./target -prune -o -type f -print0 | sort -z | xargs -0 sha256sum); }
snapshot > "$TMPD/before"

(cd "$crate" && "$ROOT/scripts/tokio-usdt-build" --release) > "$TMPD/kit.out" 2> "$TMPD/kit.err"
rc=$?
cat "$TMPD/kit.err" | tail -5
check_eq "kit build of a fresh crate succeeds" 0 "$rc"
snapshot > "$TMPD/after"
check "the crate's files (Cargo.toml, Cargo.lock, sources, config) are untouched" cmp -s "$TMPD/before" "$TMPD/after"
bin="$crate/target/release/fresh-app"
check "the binary lands where cargo build puts it" test -x "$bin"
check "the crate's own warnings are shown" grep -q 'unused variable: `unused_in_app`' "$TMPD/kit.err"
check "the patched Tokio's own lint warnings are not (they are counted)" \
    bash -c "! grep -qE '^ *--> .*tokio-usdt/tokio-' '$TMPD/kit.err'"
NPROBES=${#PROBE_ARGC[@]}   # per-event probes + batched sites (scripts/tet-vocab.sh)
check "the kit says the binary carries the probes" grep -q "fresh-app: carries all $NPROBES tokio probes" "$TMPD/kit.err"
check_eq "readelf -n: the fresh binary has the $NPROBES tokio probes" "$NPROBES" "$(tokio_notes "$bin" | cut -d' ' -f1 | sort -u | wc -l)"
check_eq "stock binary has no tokio probes" 0 "$(tokio_notes "$TMPD/fresh-app.stock" | wc -l)"
check_eq "the kit's binary prints what the stock one prints" "$("$TMPD/fresh-app.stock")" "$("$bin")"
# a second run reuses the patched copy (no re-patch) and still succeeds
(cd "$crate" && "$ROOT/scripts/tokio-usdt-build" --release) > /dev/null 2> "$TMPD/kit2.err"
check_eq "a second kit build succeeds" 0 $?
check "the second build reuses the patched Tokio" bash -c "! grep -q 'patched tokio' '$TMPD/kit2.err'"
finish
