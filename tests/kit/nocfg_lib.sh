# The sample service of a Tokio line built twice as a path dependency from ONE directory: the
# kit's patched Tokio WITHOUT --cfg tokio_task_tracking (p) and the same Tokio unpatched (s), for
# t_kit_notes's comparison (nm). Source after tests/lib.sh. Also run ahead of the tests by
# tests/kit/warm.sh (the same content-hash cache).
#
# A path source's directory reaches the code (panic locations' lengths as immediates; cargo's
# -C metadata, hence the symbol hashes that order functions and sway the inliner), so a
# registry build, or another path even of equal length, differs by a few bytes whatever the
# patch does (CI's clone path made it 16 bytes of .text; TimerEntry::reset 329 vs 317 bytes).
#
# The builds run in a copy of the sample service (the line's manifest, lock and cargo config, and
# src/) under build/cargo/tokio-LINE/kitnotes/ws: cargo rewrites the lock
# to record the path source, and the repository's own lock stays untouched (a newer one would make
# the next `make` rebuild every sample-service binary of the line, also while tests run).

kn_dir() { echo "$BUILD/cargo/tokio-$1/kitnotes"; }

# kn_patched LINE: the kit's patched Tokio of the line's usdt build (make), or nothing
kn_patched() { ls -d "$BUILD/cargo/tokio-$1/usdt/tokio-usdt"/tokio-*/ 2>/dev/null | head -1; }

# kn_build LINE: sets KN_BIN[p] and KN_BIN[s] (the binaries), or KN_ERR; KN_LOG[v] the build logs.
# A build is kept while the sources it was made from (that Tokio, the sample service's sources
# and manifest) are unchanged (content hash).
declare -A KN_BIN=() KN_LOG=()
kn_build() {
    local line=$1 patched crate orig kn ws src v from h out
    KN_BIN=() KN_LOG=() KN_ERR=""
    kn=$(kn_dir "$line")
    mkdir -p "$kn"
    patched=$(kn_patched "$line")
    [ -n "$patched" ] || { KN_ERR="tokio $line: patched source missing under build/cargo/tokio-$line/usdt/tokio-usdt"; return 1; }
    crate=$(basename "$patched")
    orig="$ROOT/.cache/crates/${SUITE_OF[$line]}/$crate"
    [ -f "$orig/Cargo.toml" ] || { KN_ERR="tokio $line: unpatched source missing at .cache/crates/${SUITE_OF[$line]}/$crate"; return 1; }
    src="$kn/src/$crate"
    ws="$kn/ws/sample-service/lines/tokio-$line"
    # One target directory for both builds: the crates that do not depend on tokio (syn, libc,
    # mio, …) are compiled once, and at first taken from `make`'s stock build of the line (the
    # same manifest, profile and crate sources: cargo finds them fresh). The source in $src
    # gets fresh mtimes before each build, so tokio and its dependents are always rebuilt.
    if [ ! -d "$kn/target" ] && [ -d "$BUILD/cargo/tokio-$line/stock/release" ]; then
        rm -rf "$kn/target.tmp"
        cp -a "$BUILD/cargo/tokio-$line/stock" "$kn/target.tmp" && mv "$kn/target.tmp" "$kn/target"
    fi
    rm -rf "$kn/target-p" "$kn/target-s"   # the layout before the shared target directory
    for v in p s; do    # p: patched, s: stock
        if [ "$v" = p ]; then from=$patched; else from=$orig/; fi
        h=$( (cd "$from" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
              cd "$ROOT/sample-service" && find src "lines/tokio-$line" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) |
            sha256sum | cut -c1-32)
        out="$kn/sample-service-$v"
        KN_LOG[$v]="$kn/nocfg-$v.log"
        if [ -x "$out" ] && [ "$(cat "$out.built-from" 2>/dev/null)" = "$h" ]; then
            KN_BIN[$v]=$out
            continue
        fi
        # fresh mtimes: cargo rebuilds from what is in the directory now
        rm -rf "$src" "$out.built-from" && mkdir -p "$src" && cp -r "$from." "$src/"
        # the crates' directory as the line's own config names it, seen from the line's
        # directory (the same path string: cargo then finds make's compiled crates fresh)
        rm -rf "$kn/ws" && mkdir -p "$ws" &&
            cp -a "$ROOT/sample-service/src" "$kn/ws/sample-service/" &&
            cp -a "$ROOT/sample-service/lines/tokio-$line/." "$ws/" &&
            sed -i "s|^directory = \"\(\.\./\)*|directory = \"$ROOT/sample-service/lines/tokio-$line/../../../|" "$ws/.cargo/config.toml"
        if (cd "$ws" &&
            env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS cargo --config "patch.crates-io.tokio.path=\"$src\"" \
                build --release --offline --target-dir "$kn/target") \
                > "${KN_LOG[$v]}" 2>&1 && cp "$kn/target/release/sample-service" "$out"; then
            KN_BIN[$v]=$out
            echo "$h" > "$out.built-from"
        else
            KN_ERR="tokio $line: build of the $([ $v = p ] && echo patched || echo unpatched) tokio as a path dependency failed"
        fi
    done
    [ -z "$KN_ERR" ]
}
