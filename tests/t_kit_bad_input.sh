#!/bin/bash
# Intent: every bad input to the kit gets one clear line naming the problem on stderr, a
# non-zero exit, and leaves the user's tree untouched (no Cargo.lock written, no edits):
# a crate without Tokio, a Tokio older than any the kit patches, Tokio from a path instead of
# crates.io, a release whose sources a hook point of the catalogue does not fit, a cargo
# failure, a missing manifest, an unsupported target, and a binary without probes.
. "$(dirname "$0")/lib.sh"
KIT="$ROOT/scripts/tokio-usdt-build"
REG="$ROOT/.cache/crates/trixie"
[ -d "$REG/tokio-1.43.1" ] || die_test "vendored crates missing: $REG (run 'make deps')"

# make_crate DIR REGISTRY DEPS_TOML [MAIN_RS]
make_crate() {
    mkdir -p "$1/src" "$1/.cargo"
    printf '[package]\nname = "%s"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n%s\n' "$(basename "$1")" "$3" > "$1/Cargo.toml"
    printf '[source.crates-io]\nreplace-with = "local"\n[source.local]\ndirectory = "%s"\n[net]\noffline = true\n' "$2" > "$1/.cargo/config.toml"
    printf '%s\n' "${4:-fn main() { println!(\"hi\"); }}" > "$1/src/main.rs"
}
snapshot() { (cd "$1" && find . -path ./target -prune -o -type f -print0 | sort -z | xargs -0 sha256sum); }
# expect_fail NAME DIR WANT_RC REGEX [KIT ARGS...]: runs the kit in DIR
expect_fail() {
    local name=$1 dir=$2 want=$3 re=$4; shift 4
    snapshot "$dir" > "$TMPD/snap.before"
    (cd "$dir" && "$KIT" "$@") > "$TMPD/out" 2> "$TMPD/err"
    local rc=$?
    local last; last=$(grep '^tokio-usdt-build:' "$TMPD/err" | tail -1)
    check_eq "$name: exit status" "$want" "$rc"
    if [[ "$last" =~ $re ]]; then ok "$name: says: $last"; else not_ok "$name: message '$last' does not match /$re/"; cat "$TMPD/err" | tail -5; fi
    snapshot "$dir" > "$TMPD/snap.after"
    check "$name: the crate's tree is untouched (no Cargo.lock written, nothing edited)" cmp -s "$TMPD/snap.before" "$TMPD/snap.after"
}

# a registry that is the trixie one, with tokio replaced by an altered copy
fake_registry() {  # fake_registry DIR VERSION [break]
    mkdir -p "$1"
    for c in "$REG"/*; do [ "$(basename "$c")" = tokio-1.43.1 ] || ln -s "$c" "$1/"; done
    cp -a "$REG/tokio-1.43.1" "$1/tokio-$2"
    sed -i "0,/^version = \"1.43.1\"/s//version = \"$2\"/" "$1/tokio-$2/Cargo.toml"
    if [ "${3:-}" = break ]; then
        # empty the harness, where the catalogue's poll hooks are: no anchor can be found
        : > "$1/tokio-$2/src/runtime/task/harness.rs"
    fi
}

make_crate "$TMPD/no-tokio" "$REG" ""
expect_fail "crate without tokio" "$TMPD/no-tokio" 1 'does not depend on tokio'

fake_registry "$TMPD/reg-unsupported" 1.23.0
make_crate "$TMPD/unsupported" "$TMPD/reg-unsupported" 'tokio = { version = "=1.23.0", features = ["rt"] }'
expect_fail "tokio older than 1.24.0" "$TMPD/unsupported" 4 'tokio 1\.23\.0 is older than every release the kit patches \(the oldest is 1\.24\.0\) — nothing was changed$'

fake_registry "$TMPD/reg-broken" 1.43.1 break
make_crate "$TMPD/broken" "$TMPD/reg-broken" 'tokio = { version = "1.43", features = ["rt"] }'
expect_fail "sources a hook point does not fit" "$TMPD/broken" 4 'tokio 1\.43\.1: cannot be patched: hook harness\.[a-z_]+ .*src/runtime/task/harness\.rs.* — nothing was changed$'
check "a refusal leaves no half-patched tokio in the target dir" \
    bash -c "! ls -d '$TMPD/broken/target/tokio-usdt/'* 2>/dev/null | grep -q ."

make_crate "$TMPD/path-tokio" "$REG" "tokio = { path = \"$REG/tokio-1.43.1\", features = [\"rt\"] }"
expect_fail "tokio from a path, not crates.io" "$TMPD/path-tokio" 1 "comes from 'path'; only crates.io"

make_crate "$TMPD/cargo-fails" "$REG" 'tokio = { version = "1.43", features = ["rt"] }' 'fn main() { let x: u32 = "not a number"; }'
expect_fail "cargo failure" "$TMPD/cargo-fails" 2 'cargo build failed'

expect_fail "missing manifest" "$TMPD/no-tokio" 1 'no such manifest' --manifest-path "$TMPD/nope/Cargo.toml"
expect_fail "unsupported target" "$TMPD/no-tokio" 1 "target 'aarch64-unknown-linux-gnu' is not supported" --target aarch64-unknown-linux-gnu

# a kit checkout whose vocabulary (scripts/tet-vocab.sh) is empty: one line naming it, exit 1
mkdir -p "$TMPD/kit/scripts" "$TMPD/kit/bpf" && cp "$KIT" "$TMPD/kit/scripts/"
: > "$TMPD/kit/scripts/tet-vocab.sh"
"$TMPD/kit/scripts/$(basename "$KIT")" --check-only /bin/true > "$TMPD/out" 2> "$TMPD/err"
check_eq "kit with an empty vocabulary: exit 1" 1 $?
check_eq "kit with an empty vocabulary: one line naming it, nothing on stdout" \
    "tokio-usdt-build: no probes in $TMPD/kit/scripts/tet-vocab.sh (a broken kit)|" "$(cat "$TMPD/err")|$(cat "$TMPD/out")"

stock=$(sample_bin 1.43 stock)
need_file "$stock" "stock sample-service for tokio 1.43"
"$KIT" --check-only "$stock" > /dev/null 2> "$TMPD/err"
check_eq "binary without probes: --check-only exits 3" 3 $?
check "binary without probes: names the binary and the missing probes" grep -q "$stock: MISSING tokio probes: task_spawn" "$TMPD/err"
finish
