#!/bin/bash
# Intent: every bad input to the kit gets one clear line naming the problem on stderr, the exit
# status of the one table (tracer/cli/exits.def: 4 bad input, 7 unpatchable, 6 build failed,
# 1 lacks probes, 3 usage), and leaves the user's tree untouched (no Cargo.lock written, no
# edits): a crate without Tokio, a Tokio older than any the kit patches, Tokio from a path
# instead of crates.io, a release whose sources a hook point of the catalogue does not fit, a
# cargo failure, a missing manifest, an unsupported target, a tracer that is not built (refused
# before building: the probe check is the tracer's `check --json`), and a binary without probes
# (what --check-only says of a binary is the tracer's answer, and readelf -n agrees).
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
expect_fail "crate without tokio" "$TMPD/no-tokio" 4 'does not depend on tokio'

fake_registry "$TMPD/reg-unsupported" 1.23.0
make_crate "$TMPD/unsupported" "$TMPD/reg-unsupported" 'tokio = { version = "=1.23.0", features = ["rt"] }'
expect_fail "tokio older than 1.24.0" "$TMPD/unsupported" 7 'tokio 1\.23\.0 is older than every release the kit patches \(the oldest is 1\.24\.0\) — nothing was changed$'

fake_registry "$TMPD/reg-broken" 1.43.1 break
make_crate "$TMPD/broken" "$TMPD/reg-broken" 'tokio = { version = "1.43", features = ["rt"] }'
expect_fail "sources a hook point does not fit" "$TMPD/broken" 7 'tokio 1\.43\.1: cannot be patched: hook harness\.[a-z_]+ .*src/runtime/task/harness\.rs.* — nothing was changed$'
check "a refusal leaves no half-patched tokio in the target dir" \
    bash -c "! ls -d '$TMPD/broken/target/tokio-usdt/'* 2>/dev/null | grep -q ."

make_crate "$TMPD/path-tokio" "$REG" "tokio = { path = \"$REG/tokio-1.43.1\", features = [\"rt\"] }"
expect_fail "tokio from a path, not crates.io" "$TMPD/path-tokio" 4 "comes from 'path'; only crates.io"

make_crate "$TMPD/cargo-fails" "$REG" 'tokio = { version = "1.43", features = ["rt"] }' 'fn main() { let x: u32 = "not a number"; }'
expect_fail "cargo failure" "$TMPD/cargo-fails" 6 'cargo build failed'
# the tracer checks what the kit builds: without it the kit refuses before building (not 6)
TOKIO_EBPF_TRACE=/nonexistent expect_fail "tracer not built" "$TMPD/cargo-fails" 4 \
    "^tokio-usdt-build: the tracer is not built \(/nonexistent\): run 'make' in $ROOT, or set TOKIO_EBPF_TRACE to an installed tokio-ebpf-trace"
check "tracer not built: nothing was built" test ! -e "$TMPD/cargo-fails/target/release"

expect_fail "missing manifest" "$TMPD/no-tokio" 4 'no such manifest' --manifest-path "$TMPD/nope/Cargo.toml"
expect_fail "unsupported target" "$TMPD/no-tokio" 4 "target 'aarch64-unknown-linux-gnu' is not supported" --target aarch64-unknown-linux-gnu
expect_fail "--vendor without a directory" "$TMPD/no-tokio" 3 '--vendor needs a directory' --vendor=

# a kit checkout whose vocabulary (scripts/tet-vocab.sh) is empty: one line naming it, exit 4
mkdir -p "$TMPD/kit/scripts" "$TMPD/kit/bpf" && cp "$KIT" "$TMPD/kit/scripts/"
: > "$TMPD/kit/scripts/tet-vocab.sh"
"$TMPD/kit/scripts/$(basename "$KIT")" --check-only /bin/true > "$TMPD/out" 2> "$TMPD/err"
check_eq "kit with an empty vocabulary: exit 4" 4 $?
check_eq "kit with an empty vocabulary: one line naming it, nothing on stdout" \
    "tokio-usdt-build: no probes in $TMPD/kit/scripts/tet-vocab.sh (a broken kit)|" "$(cat "$TMPD/err")|$(cat "$TMPD/out")"

stock=$(sample_bin 1.43 stock); usdt=$(sample_bin 1.43 usdt)
need_file "$stock" "stock sample-service for tokio 1.43"; need_file "$usdt" "usdt sample-service for tokio 1.43"
"$KIT" --check-only "$stock" > /dev/null 2> "$TMPD/err"
check_eq "binary without probes: --check-only exits 1 (lacks probes)" 1 $?
# readelf -n, an observer no one here wrote: the probes the kit says are missing are the
# vocabulary's that readelf does not show
readelf -n --wide "$stock" | awk '/Provider: tokio/ { getline; sub(/^ *Name: */, ""); print }' | sort -u > "$TMPD/re"
want=$(for p in "${TET_VOCAB_PROBES[@]}" "${TET_VOCAB_SITES[@]}"; do grep -qx "$p" "$TMPD/re" || printf '%s ' "$p"; done)
check_eq "binary without probes: names the binary and the missing probes (readelf -n's count)" \
    "tokio-usdt-build: $stock: MISSING tokio probes: ${want% }" "$(grep -m1 MISSING "$TMPD/err")"
"$KIT" --check-only "$usdt" > /dev/null 2> "$TMPD/err"
check_eq "usdt build: --check-only exits 0" 0 $?
check_eq "usdt build: carries all $(( ${#TET_VOCAB_PROBES[@]} + ${#TET_VOCAB_SITES[@]} )) (readelf -n shows $(readelf -n --wide "$usdt" | grep -c 'Provider: tokio') tokio notes)" \
    "tokio-usdt-build: $usdt: carries all $(( ${#TET_VOCAB_PROBES[@]} + ${#TET_VOCAB_SITES[@]} )) tokio probes" "$(cat "$TMPD/err")"
"$KIT" --check-only /bin/true > /dev/null 2> "$TMPD/err"
check_eq "a binary without Tokio: exit 0, says so" "0 tokio-usdt-build: /bin/true: does not link Tokio's runtime: no probes (nothing to trace)" "$? $(cat "$TMPD/err")"
"$KIT" --check-only "$TMPD/nope" > /dev/null 2> "$TMPD/err"
check_eq "--check-only a missing file: exit 4 (bad input)" 4 $?
check_eq "--check-only a missing file: check's line, then the kit's" \
    "tokio-usdt-build: $("$ROOT/build/bin/tokio-ebpf-trace" check --json "$TMPD/nope" | jq -r .error)|tokio-usdt-build: some binaries could not be checked" \
    "$(paste -sd'|' "$TMPD/err")"
TOKIO_EBPF_TRACE=/nonexistent "$KIT" --check-only "$usdt" > /dev/null 2> "$TMPD/err"
check_eq "--check-only without the tracer: exit 4, one line" "4 1" "$? $(wc -l < "$TMPD/err")"
"$KIT" --check-only > /dev/null 2> "$TMPD/err"
check_eq "--check-only without binaries: exit 3 (usage)" 3 $?
# one decision: the kit parses no ELF itself (comments aside)
check_eq "the kit runs no readelf or nm itself" "" \
    "$(grep -v '^ *#' "$KIT" | grep -nE 'readelf|\bnm\b' | head -3)"
finish
