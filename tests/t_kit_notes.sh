#!/bin/bash
# Intent: the kit's catalogue (probes-patch/hooks) puts exactly the documented tokio probes into a usdt build (readelf -n,
# an observer we did not write): the thirteen per-event probes with one site each, event_batch with 4
# sites, sample_rate with 16, each note with its documented argument count; a stock build carries
# no tokio notes; and the patched Tokio compiled WITHOUT --cfg tokio_task_tracking carries none
# either and has the same functions with the same sizes (nm) as the same Tokio unpatched, built
# the same way (the patch compiles to stock Tokio) — for the lines whose release t_kit_matrix
# does not already check that way in make test (1.24.2 and 1.43.1; km_compared: the matrix
# compares the newest of the hooks.py cover, 1.53.2).
. "$(dirname "$0")/lib.sh"

# The Cargo.lock files this test rewrites (cargo records the path source) are restored however it
# ends, byte for byte and with their modification time: a newer lock would make the next `make`
# rebuild every sample-service binary of the line.
LOCKS=()
restore_locks() { local l; for l in "${LOCKS[@]:-}"; do [ -n "$l" ] && [ -f "$TMPD/$(basename "$(dirname "$l")").lock" ] && cp -p "$TMPD/$(basename "$(dirname "$l")").lock" "$l"; done; }
trap 'restore_locks; _cleanup' EXIT
# the releases t_kit_matrix builds patched-without-cfg against stock anyway in make test
# (km_compared of the cover: 1.53.2 of our lines): their sample services are not built that way a
# second time here. (It once skipped every newest of a minor line, as the matrix compared them
# all; since make test compares part of the cover, 1.24.2 was compared nowhere.)
. "$(dirname "$0")/kit/matrix_lib.sh"
mapfile -t COVER < <(km_releases cover | sort -uV)
[ ${#COVER[@]} -ge 2 ] || die_test "probes-patch/hooks.py cover or tests/kit/registry.sh --list failed: cannot tell which releases t_kit_matrix compares"
MATRIX_COMPARED=" $(km_compared test "${COVER[@]}" | tr '\n' ' ')"

for line in "${LINES[@]}"; do
    usdt=$(sample_bin "$line" usdt); stock=$(sample_bin "$line" stock)
    need_file "$usdt" "usdt sample-service for tokio $line"
    need_file "$stock" "stock sample-service for tokio $line"

    tokio_notes "$usdt" > "$TMPD/notes"
    names=$(cut -d' ' -f1 "$TMPD/notes" | sort -u | tr '\n' ' ')
    want=$(printf '%s\n' "${!PROBE_ARGC[@]}" | sort | tr '\n' ' ')
    check_eq "tokio $line usdt: readelf -n lists exactly the documented probes" "$want" "$names"
    badsites=""
    for n in "${!PROBE_ARGC[@]}"; do
        c=$(awk -v n="$n" '$1 == n' "$TMPD/notes" | wc -l)
        [ "$c" = "${PROBE_SITES[$n]:-1}" ] || badsites+="$n:$c "
    done
    check_eq "tokio $line usdt: sites per probe (1 each, event_batch 4, sample_rate 16)" "" "$badsites"
    badargs=""
    while read -r n c; do
        [ "${PROBE_ARGC[$n]:-x}" = "$c" ] || badargs+="$n:$c "
    done < "$TMPD/notes"
    check_eq "tokio $line usdt: every note ($(wc -l < "$TMPD/notes") notes) has its documented argument count" "" "$badargs"
    check "tokio $line usdt: .probes section (semaphores) present" \
        bash -c "readelf -S --wide '$usdt' | grep -q ' \.probes '"
    check_eq "tokio $line stock: no tokio notes" 0 "$(tokio_notes "$stock" | wc -l)"

    # The patched tokio the kit made, built without the cfg, against the same tokio unpatched,
    # both as a path dependency from ONE directory (the source copied in before each build): a
    # path source's directory reaches the code (panic locations' lengths as immediates; cargo's
    # -C metadata, hence the symbol hashes that order functions and sway the inliner), so a
    # registry build, or another path even of equal length, differs by a few bytes whatever the
    # patch does (CI's clone path made it 16 bytes of .text; TimerEntry::reset 329 vs 317 bytes).
    patched=$(ls -d "$BUILD/cargo/tokio-$line/usdt/tokio-usdt"/tokio-*/ 2>/dev/null | head -1)
    rel=$(basename "$patched"); rel=${rel#tokio-}
    if [ -n "$rel" ] && [[ "$MATRIX_COMPARED" == *" $rel "* ]]; then
        echo "# tokio $line ($rel): the build without the cfg is compared with stock by t_kit_matrix (the matrix workload)"
        continue
    fi
    [ -n "$patched" ] || { not_ok "tokio $line: patched source missing under build/cargo/tokio-$line/usdt/tokio-usdt"; continue; }
    crate=$(basename "$patched")
    orig="$ROOT/.cache/crates/${SUITE_OF[$line]}/$crate"
    [ -f "$orig/Cargo.toml" ] || { not_ok "tokio $line: unpatched source missing at .cache/crates/${SUITE_OF[$line]}/$crate"; continue; }
    manifest="$ROOT/sample-service/lines/tokio-$line/Cargo.toml"
    lock="$ROOT/sample-service/lines/tokio-$line/Cargo.lock"
    cp -p "$lock" "$TMPD/tokio-$line.lock"
    LOCKS+=("$lock")
    kn="$BUILD/cargo/tokio-$line/kitnotes"
    src="$kn/src/$crate"
    # One target directory for both builds: the crates that do not depend on tokio (syn, libc,
    # mio, …) are compiled once, and at first taken from `make`'s stock build of the line (the
    # same manifest, profile and crate sources: cargo finds them fresh). The source in $src
    # gets fresh mtimes before each build, so tokio and its dependents are always rebuilt.
    if [ ! -d "$kn/target" ] && [ -d "$BUILD/cargo/tokio-$line/stock/release" ]; then
        mkdir -p "$kn" && cp -a "$BUILD/cargo/tokio-$line/stock" "$kn/target.tmp" && mv "$kn/target.tmp" "$kn/target"
    fi
    rm -rf "$kn/target-p" "$kn/target-s"   # the layout before the shared target directory
    declare -A BIN=()
    for v in p s; do    # p: patched, s: stock
        if [ "$v" = p ]; then from=$patched; else from=$orig/; fi
        # a build is kept while the sources it was made from (that Tokio, the sample service's
        # sources and manifest) are unchanged (content hash)
        h=$( (cd "$from" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
              cd "$ROOT/sample-service" && find src "lines/tokio-$line" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) |
            sha256sum | cut -c1-32)
        out="$kn/sample-service-$v"
        if [ -x "$out" ] && [ "$(cat "$out.built-from" 2>/dev/null)" = "$h" ]; then
            BIN[$v]=$out
            continue
        fi
        # fresh mtimes: cargo rebuilds from what is in the directory now
        rm -rf "$src" "$out.built-from" && mkdir -p "$src" && cp -r "$from." "$src/"
        if (cd "$ROOT/sample-service/lines/tokio-$line" &&
            env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS cargo --config "patch.crates-io.tokio.path=\"$src\"" \
                build --release --offline --manifest-path "$manifest" --target-dir "$kn/target") \
                > "$TMPD/nocfg-$v.log" 2>&1 && cp "$kn/target/release/sample-service" "$out"; then
            BIN[$v]=$out
            echo "$h" > "$out.built-from"
        else
            tail -20 "$TMPD/nocfg-$v.log"
            not_ok "tokio $line: build of the $([ $v = p ] && echo patched || echo unpatched) tokio as a path dependency failed"
        fi
        cp -p "$TMPD/tokio-$line.lock" "$lock"
    done
    if [ -n "${BIN[p]:-}" ] && [ -n "${BIN[s]:-}" ]; then
        nocfg=${BIN[p]}
        check_eq "tokio $line patched without cfg: no tokio notes" 0 "$(tokio_notes "$nocfg" | wc -l)"
        check "tokio $line patched without cfg: no .probes section" \
            bash -c "! readelf -S --wide '$nocfg' | grep -q ' \.probes '"
        # function by function (nm, hashes stripped): the same functions with the same sizes, and
        # the same .text size. (Built from two directories, even of equal length, they were not:
        # an inlining choice or a few bytes of a function moved with the path.)
        km_func_sizes "${BIN[s]}" > "$TMPD/fs-s"; km_func_sizes "$nocfg" > "$TMPD/fs-p"
        a=$(km_text_size "${BIN[s]}"); b=$(km_text_size "$nocfg")
        nfun=$(wc -l < "$TMPD/fs-s")
        diff "$TMPD/fs-s" "$TMPD/fs-p" > "$TMPD/fs-diff"
        check "tokio $line patched without cfg: the same $nfun functions with the same sizes as unpatched (nm), .text $a = $b bytes" \
            bash -c "[ '$nfun' -gt 1000 ] && [ -n '$a' ] && [ '$a' = '$b' ] && [ ! -s '$TMPD/fs-diff' ]"
        head -20 "$TMPD/fs-diff" | sed 's/^/#   /'
    fi
    cp -p "$TMPD/tokio-$line.lock" "$lock"
done
finish
