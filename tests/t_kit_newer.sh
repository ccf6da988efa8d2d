#!/bin/bash
# Intent: a Tokio release newer than every release the kit was verified on (simulated: Tokio 1.53.1's
# sources renamed 1.54.0, the releases after it not being here) goes through the closest-shape
# path: the kit says it is newer, names the verified release with the same shape (1.53.1), patches
# it, verifies that it compiles without the cfg too, and the binary carries every probe. A newer
# release whose code no longer fits a hook point (1.53.1 renamed 1.55.0 with `fn complete(self)`
# of the harness renamed, as a refactor would) is refused: exit 7 (unpatchable), one line naming the hook and the
# file, the crate's tree and Cargo.lock byte-identical, nothing left in the target directory.
. "$(dirname "$0")/lib.sh"
base=1.53.1
reg="$TMPD/registry"
"$ROOT/tests/kit/registry.sh" "$base" "$reg" || die_test "registry for tokio $base"
# a copy of the release under a new version number (directory sources check no per-file sums here)
fake_release() { # fake_release VERSION: $reg/tokio-VERSION from tokio-$base
    local v=$1 d="$reg/tokio-$1"
    cp -rL "$reg/tokio-$base" "$d"
    sed -i "0,/^version = \"$base\"/s//version = \"$v\"/" "$d/Cargo.toml"
    grep -q "^version = \"$v\"" "$d/Cargo.toml" || die_test "could not rename tokio $base to $v"
}
fake_release 1.54.0
fake_release 1.55.0
sed -i 's/^    fn complete(self) {$/    fn complete_task(self) {/; s/\.complete();$/.complete_task();/' "$reg/tokio-1.55.0/src/runtime/task/harness.rs"
grep -q 'fn complete_task(self)' "$reg/tokio-1.55.0/src/runtime/task/harness.rs" || die_test "could not mutate 1.55.0's harness"

mkcrate() { # mkcrate DIR VERSION
    cargo new --quiet --vcs none "$1" || die_test "cargo new"
    mkdir -p "$1/.cargo"
    printf '[source.crates-io]\nreplace-with = "m"\n[source.m]\ndirectory = "%s"\n[net]\noffline = true\n' "$reg" > "$1/.cargo/config.toml"
    echo "tokio = { version = \"=$2\", features = [\"full\"] }" >> "$1/Cargo.toml"
    cat > "$1/src/main.rs" <<'RS'
#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut n = 0u64;
    for i in 0..10u64 {
        n += tokio::spawn(async move { tokio::task::yield_now().await; i }).await.unwrap();
    }
    println!("n={n}");
}
RS
    (cd "$1" && cargo generate-lockfile --offline --quiet) || die_test "cargo generate-lockfile in $1"
}
snapshot() { (cd "$1" && find . -path ./target -prune -o -type f -print0 | sort -z | xargs -0 sha256sum); }

# ---- 1.54.0: the closest known shape, verified ----
mkcrate "$TMPD/newer" 1.54.0
snapshot "$TMPD/newer" > "$TMPD/newer.before"
(cd "$TMPD/newer" && "$ROOT/scripts/tokio-usdt-build" --release) > "$TMPD/newer.out" 2> "$TMPD/newer.err"
rc=$?
grep 'tokio-usdt-build:' "$TMPD/newer.err" | cut -c1-400
check_eq "tokio 1.54.0 (newer): the kit builds it" 0 "$rc"
check "it says the release is newer than every verified one and names 1.53.1's shape" \
    grep -q "tokio 1.54.0 is newer than every release the kit was verified on: its sources have the hook shape of tokio $base" "$TMPD/newer.err"
check "it verified the patched crate without the cfg" grep -q "verifying: the patched tokio 1.54.0 compiles without --cfg tokio_task_tracking" "$TMPD/newer.err"
bin="$TMPD/newer/target/release/newer"
check_eq "the binary carries every probe (readelf -n)" "$(printf '%s\n' "${!PROBE_ARGC[@]}" | sort | tr '\n' ' ')" \
    "$(tokio_notes "$bin" | cut -d' ' -f1 | sort -u | tr '\n' ' ')"
check_eq "the binary runs" "n=45" "$("$bin")"
snapshot "$TMPD/newer" > "$TMPD/newer.after"
check "the crate's files and Cargo.lock are byte-identical" cmp -s "$TMPD/newer.before" "$TMPD/newer.after"

# ---- 1.55.0: a hook point does not fit: refused, nothing changed ----
mkcrate "$TMPD/nofit" 1.55.0
snapshot "$TMPD/nofit" > "$TMPD/nofit.before"
(cd "$TMPD/nofit" && "$ROOT/scripts/tokio-usdt-build" --release) > "$TMPD/nofit.out" 2> "$TMPD/nofit.err"
rc=$?
cat "$TMPD/nofit.err"
check_eq "tokio 1.55.0 (a hook no longer fits): exit 7 (unpatchable)" 7 "$rc"
check_eq "one line on stderr" 1 "$(wc -l < "$TMPD/nofit.err")"
check "it names the hook and the file" grep -qE '^tokio-usdt-build: tokio 1\.55\.0: cannot be patched: hook harness\.[a-z_]+ .*src/runtime/task/harness\.rs' "$TMPD/nofit.err"
check "it says nothing was changed" grep -q 'nothing was changed$' "$TMPD/nofit.err"
snapshot "$TMPD/nofit" > "$TMPD/nofit.after"
check "the crate's files and Cargo.lock are byte-identical" cmp -s "$TMPD/nofit.before" "$TMPD/nofit.after"
check "no patched tree or staging dir left in the target directory" \
    bash -c "[ -z \"\$(ls -A '$TMPD/nofit/target/tokio-usdt' 2>/dev/null)\" ]"
finish
