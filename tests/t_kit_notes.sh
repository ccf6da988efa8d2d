#!/bin/bash
# Intent: the patch sets put exactly the documented tokio probes into a usdt build (readelf -n,
# an observer we did not write): the ten per-event probes with one site each, event_batch with 4
# sites, sample_rate with 16, each note with its documented argument count; a stock build carries
# no tokio notes; and the patched Tokio compiled WITHOUT --cfg tokio_task_tracking carries none
# either and has the same .text size as the stock build (the patch compiles to stock Tokio).
. "$(dirname "$0")/lib.sh"

# .text size in bytes (the system awk is mawk: no strtonum; bash converts the hex)
text_size() {
    local h
    h=$(readelf -S --wide "$1" | awk '$2 == ".text" { print $6 }')
    [ -n "$h" ] && echo $((16#$h))
}
# the Cargo.lock files this test rewrites are restored however it ends
LOCKS=()
restore_locks() { local l; for l in "${LOCKS[@]:-}"; do [ -n "$l" ] && [ -f "$TMPD/$(basename "$(dirname "$l")").lock" ] && cp "$TMPD/$(basename "$(dirname "$l")").lock" "$l"; done; }
trap 'restore_locks; _cleanup' EXIT

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

    # the patched tokio the kit made, built without the cfg, like the stock build otherwise
    patched=$(ls -d "$BUILD/cargo/tokio-$line/usdt/tokio-usdt"/tokio-*/ 2>/dev/null | head -1)
    [ -n "$patched" ] || { not_ok "tokio $line: patched source missing under build/cargo/tokio-$line/usdt/tokio-usdt"; continue; }
    manifest="$ROOT/sample-service/lines/tokio-$line/Cargo.toml"
    lock="$ROOT/sample-service/lines/tokio-$line/Cargo.lock"
    cp "$lock" "$TMPD/tokio-$line.lock"
    LOCKS+=("$lock")
    if (cd "$ROOT/sample-service/lines/tokio-$line" &&
        env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS cargo --config "patch.crates-io.tokio.path=\"${patched%/}\"" \
            build --release --offline --manifest-path "$manifest" --target-dir "$BUILD/cargo/tokio-$line/nocfg") \
            > "$TMPD/nocfg.log" 2>&1; then
        nocfg="$BUILD/cargo/tokio-$line/nocfg/release/sample-service"
        check_eq "tokio $line patched without cfg: no tokio notes" 0 "$(tokio_notes "$nocfg" | wc -l)"
        check "tokio $line patched without cfg: no .probes section" \
            bash -c "! readelf -S --wide '$nocfg' | grep -q ' \.probes '"
        a=$(text_size "$stock"); b=$(text_size "$nocfg")
        check "tokio $line patched without cfg: .text size equals the stock build's (${a:-none} = ${b:-none} bytes)" \
            test -n "$a" -a "$a" = "$b"
    else
        tail -20 "$TMPD/nocfg.log"
        not_ok "tokio $line: build of the patched tokio without the cfg failed"
    fi
    cp "$TMPD/tokio-$line.lock" "$lock"
done
finish
