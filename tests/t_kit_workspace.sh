#!/bin/bash
# Intent: the kit builds what real services look like — a Cargo workspace (made here) with a
# library member and two binary members that use it and Tokio (Debian sid's crates, Tokio 1.53.2,
# through the workspace's own .cargo/config.toml source replacement), one of them with a build
# script that sets a `cargo:rustc-env` the binary prints, and a committed Cargo.lock:
#   - `--release --workspace` builds both binaries; each carries every tokio probe and site
#     (readelf -n: all the names of bpf/probes.def, with their argument counts) and prints what
#     its stock build prints; `-p NAME` builds only that member, `--bin NAME` only that binary;
#   - `test -p LIB` runs the library's #[tokio::test] and exits with cargo test's status (0 when
#     it passes, cargo's 101 when it fails); `run -p BIN -- ARGS` runs the binary with ARGS
#     (passed through verbatim: spaces, quotes, `$`) and passes its stdout and exit status through;
#   - `--vendor DIR` writes DIR/tokio-1.53.2 and prints a [patch.crates-io] snippet and RUSTFLAGS;
#     a copy of the workspace with that snippet appended to its Cargo.toml builds with plain
#     `cargo build --release` and those RUSTFLAGS into binaries that carry every probe; a second
#     --vendor run replaces the tree it wrote; a DIR/tokio-1.53.2 it did not write (no
#     .tokio-usdt-stamp) is refused in one line, exit 4 (bad input), and left as it is;
#   - the workspace's files (every manifest, Cargo.lock, sources, build script, .cargo) are
#     byte-identical after every kit run.
. "$(dirname "$0")/lib.sh"
KIT="$ROOT/scripts/tokio-usdt-build"
line=1.53; suite=${SUITE_OF[$line]}; tv=1.53.2
REG="$ROOT/.cache/crates/$suite"
[ -d "$REG/tokio-$tv" ] || die_test "Debian $suite crates missing: $REG/tokio-$tv (run 'make deps')"

# ---- the workspace -------------------------------------------------------------------------------
WS="$TMPD/ws"
mkdir -p "$WS/.cargo" "$WS/svc-lib/src" "$WS/svc-api/src" "$WS/svc-worker/src"
printf '[source.crates-io]\nreplace-with = "debian"\n[source.debian]\ndirectory = "%s"\n[net]\noffline = true\n' "$REG" > "$WS/.cargo/config.toml"
cat > "$WS/Cargo.toml" <<TOML
[workspace]
members = ["svc-lib", "svc-api", "svc-worker"]
resolver = "2"

[workspace.package]
version = "0.3.1"
edition = "2021"

[workspace.dependencies]
tokio = { version = "$line", features = ["rt-multi-thread", "macros", "sync", "time"] }
svc-lib = { path = "svc-lib" }
TOML
cat > "$WS/svc-lib/Cargo.toml" <<'TOML'
[package]
name = "svc-lib"
version.workspace = true
edition.workspace = true

[dependencies]
tokio.workspace = true
TOML
cat > "$WS/svc-lib/src/lib.rs" <<'RS'
//! What the services share.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A service's label.
///
/// ```
/// assert_eq!(svc_lib::label("x"), "svc:x");
/// ```
pub fn label(s: &str) -> String {
    format!("svc:{s}")
}

/// Sums i*k for i < n, k < 4, over 2n tasks talking through channels.
pub async fn fan_out(n: u64) -> u64 {
    let sum = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for i in 0..n {
        let sum = sum.clone();
        handles.push(tokio::spawn(async move {
            let (tx, mut rx) = tokio::sync::mpsc::channel(2);
            tokio::spawn(async move {
                for k in 0..4u64 {
                    tx.send(i * k).await.unwrap();
                }
            });
            while let Some(v) = rx.recv().await {
                sum.fetch_add(v, Ordering::Relaxed);
                tokio::task::yield_now().await;
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    sum.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn fan_out_sums() {
        assert_eq!(super::fan_out(10).await, 270);
        if std::env::var_os("FAIL_ME").is_some() {
            panic!("FAIL_ME is set: failing on purpose");
        }
    }
}
RS
cat > "$WS/svc-api/Cargo.toml" <<'TOML'
[package]
name = "svc-api"
version.workspace = true
edition.workspace = true

[dependencies]
svc-lib.workspace = true
tokio.workspace = true
TOML
cat > "$WS/svc-api/src/main.rs" <<'RS'
#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sum = svc_lib::fan_out(20).await;
    println!("{} args={:?} sum={}", svc_lib::label("api"), args, sum);
    if let Some(code) = args.iter().find_map(|a| a.strip_prefix("--exit=")) {
        std::process::exit(code.parse().unwrap());
    }
}
RS
cat > "$WS/svc-worker/Cargo.toml" <<'TOML'
[package]
name = "svc-worker"
version.workspace = true
edition.workspace = true
build = "build.rs"

[dependencies]
svc-lib.workspace = true
tokio.workspace = true
TOML
cat > "$WS/svc-worker/build.rs" <<'RS'
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-env=WORKER_FLAVOUR=set-by-build-rs");
}
RS
cat > "$WS/svc-worker/src/main.rs" <<'RS'
#[tokio::main(flavor = "current_thread")]
async fn main() {
    let b = tokio::task::spawn_blocking(|| 6u64 * 7).await.unwrap();
    let sum = svc_lib::fan_out(5).await;
    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    println!("{} flavour={} blocking={} sum={}", svc_lib::label("worker"), env!("WORKER_FLAVOUR"), b, sum);
}
RS
# the committed lock, once, with plain cargo; then the stock build (its own target dir)
(cd "$WS" && cargo generate-lockfile --offline --quiet) || die_test "cargo generate-lockfile in the workspace"
check "the workspace's lock resolves tokio $tv" grep -qx "version = \"$tv\"" "$WS/Cargo.lock"
(cd "$WS" && cargo build --release --workspace --quiet --target-dir "$TMPD/stock-target") > "$TMPD/stock.log" 2>&1 \
    || { cat "$TMPD/stock.log"; die_test "stock build of the workspace failed"; }
ARGS_RUN=("two words" 'q"uo$te\n' "")
for b in svc-api svc-worker; do
    "$TMPD/stock-target/release/$b" "${ARGS_RUN[@]}" > "$TMPD/$b.stock.out" || die_test "stock $b failed"
done
check "the stock build prints what the build script set" grep -q 'flavour=set-by-build-rs ' "$TMPD/svc-worker.stock.out"
check_eq "stock binaries have no tokio probes" 0 "$(tokio_notes "$TMPD/stock-target/release/svc-api" | wc -l)"

snapshot() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
snapshot "$WS" > "$TMPD/ws.before"
check "the snapshot covers every manifest, the lock, sources, build script and .cargo" \
    test "$(cut -c67- "$TMPD/ws.before" | tr '\n' ' ')" = "./.cargo/config.toml ./Cargo.lock ./Cargo.toml ./svc-api/Cargo.toml ./svc-api/src/main.rs ./svc-lib/Cargo.toml ./svc-lib/src/lib.rs ./svc-worker/Cargo.toml ./svc-worker/build.rs ./svc-worker/src/main.rs "

KT="$TMPD/kit-target"   # one target dir for every kit run (the kit's patched Tokio lives there too)
# kit [SUBCMD] ARGS…: the kit in the workspace with the shared target dir, given as people type it
# (relative, with ..); sets krc, kit.out/kit.err
kit() {
    local pre=()
    case "${1:-}" in build|test|bench|run|check) pre=("$1"); shift;; esac
    (cd "$WS" && "$KIT" "${pre[@]}" --target-dir "../$(basename "$KT")" "$@") > "$TMPD/kit.out" 2> "$TMPD/kit.err"
    krc=$?
    [ $krc = 0 ] || { echo "# kit ${pre[*]} $* exited $krc; its stderr ends:"; tail -n 5 "$TMPD/kit.err" | sed 's/^/#   /'; }
}
untouched() { snapshot "$WS" > "$TMPD/ws.after"; check "$1: the workspace's files are byte-identical" cmp -s "$TMPD/ws.before" "$TMPD/ws.after"; }
no_tokio_lints() { ! grep -qE '^ *--> .*/tokio-usdt/tokio-' "$TMPD/kit.err"; }
# the binaries the kit says it checked (basenames, sorted, one line)
checked() { sed -n 's#^tokio-usdt-build: .*/\([^/]*\): carries all [0-9]* tokio probes$#\1#p' "$TMPD/kit.err" | sort | tr '\n' ' '; }
# has_probes BINARY: readelf -n shows every probe and site of bpf/probes.def, each with its argc
has_probes() {
    local notes p bad=0
    notes=$(tokio_notes "$1" | sort -u)
    for p in "${!PROBE_ARGC[@]}"; do
        grep -qx "$p ${PROBE_ARGC[$p]}" <<< "$notes" || { echo "# $1: no note '$p' with ${PROBE_ARGC[$p]} arguments"; bad=1; }
    done
    [ "$(cut -d' ' -f1 <<< "$notes" | sort -u | wc -l)" = "${#PROBE_ARGC[@]}" ] || { echo "# $1: tokio notes beyond probes.def: $(cut -d' ' -f1 <<< "$notes" | sort -u | tr '\n' ' ')"; bad=1; }
    return $bad
}

# ---- 1. builds: --bin, -p, --workspace -----------------------------------------------------------
kit --release --bin svc-api
check_eq "--bin svc-api: the kit build succeeds" 0 "$krc"
check_eq "--bin svc-api: only that binary is built and checked" "svc-api " "$(checked)"
check "--bin svc-api: the other binary is not built" test ! -e "$KT/release/svc-worker"
check "--bin svc-api: the patched Tokio's own warnings are not shown (--target-dir with ..)" no_tokio_lints
untouched "--bin svc-api"

kit --release -p svc-worker
check_eq "-p svc-worker: the kit build succeeds" 0 "$krc"
check_eq "-p svc-worker: only that member's binary is built and checked" "svc-worker " "$(checked)"
untouched "-p svc-worker"

kit --release --workspace
check_eq "--workspace: the kit build succeeds" 0 "$krc"
check_eq "--workspace: both binaries are built and checked" "svc-api svc-worker " "$(checked)"
check_eq "--workspace: nothing on stdout" "" "$(cat "$TMPD/kit.out")"
for b in svc-api svc-worker; do
    check "--workspace: readelf -n: $b carries every tokio probe and site" has_probes "$KT/release/$b"
    "$KT/release/$b" "${ARGS_RUN[@]}" > "$TMPD/$b.kit.out"
    check_eq "--workspace: $b exits 0" 0 $?
    check_eq "--workspace: $b prints what its stock build prints" "$(cat "$TMPD/$b.stock.out")" "$(cat "$TMPD/$b.kit.out")"
done
untouched "--workspace"

# ---- 2. test and run -----------------------------------------------------------------------------
kit test --release -p svc-lib
check_eq "test -p svc-lib: exit 0 when the tests pass" 0 "$krc"
check "test -p svc-lib: the #[tokio::test] ran and passed" grep -q '^test tests::fan_out_sums \.\.\. ok$' "$TMPD/kit.out"
check "test -p svc-lib: the doc test ran too" grep -q '^test svc-lib/src/lib.rs - label (line [0-9]*) \.\.\. ok$' "$TMPD/kit.out"
check "test -p svc-lib: the kit checked the test binary for the probes" grep -qE '/deps/svc_lib-[0-9a-f]+: carries all [0-9]+ tokio probes$' "$TMPD/kit.err"
untouched "test -p svc-lib"
FAIL_ME=1 kit test --release -p svc-lib
check_eq "test -p svc-lib with a failing test: cargo test's exit status (101)" 101 "$krc"
check "test -p svc-lib with a failing test: the failure is shown" grep -q '^test tests::fan_out_sums \.\.\. FAILED$' "$TMPD/kit.out"
untouched "a failing test"

kit run --release -p svc-api -- "${ARGS_RUN[@]}"
check_eq "run -p svc-api -- ARGS: exit 0" 0 "$krc"
check_eq "run -p svc-api -- ARGS: stdout is the program's, the ARGS verbatim" "$(cat "$TMPD/svc-api.stock.out")" "$(cat "$TMPD/kit.out")"
kit run --release -p svc-api -- --exit=7
check_eq "run -p svc-api -- --exit=7: the program's exit status" 7 "$krc"
check_eq "run -p svc-api -- --exit=7: its stdout" "svc:api args=[\"--exit=7\"] sum=1140" "$(cat "$TMPD/kit.out")"
untouched "run -p svc-api"

# ---- 3. --vendor ---------------------------------------------------------------------------------
VD="$TMPD/vendor"
kit --release --vendor "$VD"
check_eq "--vendor DIR: exit 0" 0 "$krc"
check "--vendor DIR: writes DIR/tokio-$tv with the kit's stamp" test -f "$VD/tokio-$tv/.tokio-usdt-stamp" -a -f "$VD/tokio-$tv/Cargo.toml"
check "--vendor DIR: the tree carries the probes' emitter" grep -rqs tokio_task_tracking "$VD/tokio-$tv/src"
check_eq "--vendor DIR: prints the [patch.crates-io] snippet" "[patch.crates-io]|tokio = { path = \"$VD/tokio-$tv\" }" \
    "$(sed -n '/^\[patch\.crates-io\]$/,/^tokio = /p' "$TMPD/kit.out" | paste -sd'|')"
rustflags=$(sed -n 's/^RUSTFLAGS="\(.*\)"$/\1/p' "$TMPD/kit.out")
check "--vendor DIR: prints the RUSTFLAGS (the cfg, frame pointers, the linker flag)" \
    grep -q -- '--cfg tokio_task_tracking .*force-frame-pointers=yes.*separate-loadable-segments' <<< "$rustflags"
untouched "--vendor DIR"

# a second run to the same DIR replaces the tree it wrote
echo stale > "$VD/tokio-$tv/stale-file"
kit --release --vendor "$VD"
check_eq "--vendor again: exit 0" 0 "$krc"
check "--vendor again: the tree is written anew (a stray file is gone, the stamp is there)" \
    test ! -e "$VD/tokio-$tv/stale-file" -a -f "$VD/tokio-$tv/.tokio-usdt-stamp"
check_eq "--vendor again: no staging dir left behind" "tokio-$tv" "$(ls -A "$VD")"
untouched "--vendor again"

# a DIR/tokio-VERSION the kit did not write is refused, and left as it is
FD="$TMPD/foreign"
mkdir -p "$FD/tokio-$tv/src" && echo 'my own tokio' > "$FD/tokio-$tv/src/lib.rs"
snapshot "$FD" > "$TMPD/fd.before"
kit --release --vendor "$FD"
check_eq "--vendor to a tree the kit did not write: exit 4 (bad input)" 4 "$krc"
check_eq "--vendor to a tree the kit did not write: one line naming it, nothing on stdout" \
    "tokio-usdt-build: $FD/tokio-$tv exists and is not a tree this kit wrote: remove it first|" \
    "$(cat "$TMPD/kit.err")|$(cat "$TMPD/kit.out")"
snapshot "$FD" > "$TMPD/fd.after"
check "--vendor to a tree the kit did not write: it is left as it is (nothing added)" cmp -s "$TMPD/fd.before" "$TMPD/fd.after"
untouched "refused --vendor"

# the committable flow: in a copy of the workspace, vendor into it, append the snippet, plain cargo
CP="$TMPD/ws-vendored"
cp -a "$WS" "$CP"
(cd "$CP" && "$KIT" --release --target-dir "$KT" --vendor vendor) > "$TMPD/kit.out" 2> "$TMPD/kit.err"
check_eq "--vendor vendor (inside a copy of the workspace): exit 0" 0 $?
snippet=$(sed -n '/^\[patch\.crates-io\]$/,/^tokio = /p' "$TMPD/kit.out")
check_eq "--vendor inside the workspace: the snippet's path is relative to the workspace root" \
    "[patch.crates-io]|tokio = { path = \"vendor/tokio-$tv\" }" "$(paste -sd'|' <<< "$snippet")"
rustflags=$(sed -n 's/^RUSTFLAGS="\(.*\)"$/\1/p' "$TMPD/kit.out")
printf '\n%s\n' "$snippet" >> "$CP/Cargo.toml"
# the kit's binaries are in $KT too: remove them, the plain build must make its own
rm -f "$KT/release/svc-api" "$KT/release/svc-worker"
(cd "$CP" && RUSTFLAGS=$rustflags cargo build --release --workspace --target-dir "$KT") > "$TMPD/plain.log" 2>&1
prc=$?
[ $prc = 0 ] || tail -n 20 "$TMPD/plain.log"
check_eq "the copy with the snippet builds with plain cargo build --release and the RUSTFLAGS" 0 "$prc"
check "the plain build used the vendored tokio" grep -q "Compiling tokio v$tv ($CP/vendor/tokio-$tv)" "$TMPD/plain.log"
for b in svc-api svc-worker; do
    check "plain build of the vendored copy: readelf -n: $b carries every tokio probe and site" has_probes "$KT/release/$b"
    check_eq "plain build of the vendored copy: $b prints what its stock build prints" \
        "$(cat "$TMPD/$b.stock.out")" "$("$KT/release/$b" "${ARGS_RUN[@]}")"
done
check "the copy's lock changed in the tokio entry only (it is now the path patch)" \
    diff -q <(awk 'BEGIN{RS="";ORS="\n\n"} !/\nname = "tokio"\n/' "$WS/Cargo.lock") <(awk 'BEGIN{RS="";ORS="\n\n"} !/\nname = "tokio"\n/' "$CP/Cargo.lock")
(cd "$CP" && RUSTFLAGS=$rustflags cargo build --release --workspace --locked --target-dir "$KT") > "$TMPD/plain.log" 2>&1
check_eq "with that lock committed, the copy builds with --locked (as a Dockerfile would)" 0 $?
untouched "the vendored copy's build (the original workspace)"

# ---- 4. two Tokio 1.x releases in one graph: cargo cannot resolve it (see the report); not tested
finish
