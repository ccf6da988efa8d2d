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
. "$(dirname "$0")/kit/nocfg_lib.sh"
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
    # both as a path dependency from ONE directory (tests/kit/nocfg_lib.sh)
    patched=$(kn_patched "$line")
    rel=$(basename "$patched"); rel=${rel#tokio-}
    if [ -n "$rel" ] && [[ "$MATRIX_COMPARED" == *" $rel "* ]]; then
        echo "# tokio $line ($rel): the build without the cfg is compared with stock by t_kit_matrix (the matrix workload)"
        continue
    fi
    if ! kn_build "$line"; then
        for v in p s; do [ -f "${KN_LOG[$v]:-}" ] && tail -20 "${KN_LOG[$v]}"; done
        not_ok "$KN_ERR"
    fi
    declare -A BIN=()
    for v in p s; do [ -n "${KN_BIN[$v]:-}" ] && BIN[$v]=${KN_BIN[$v]}; done
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
done
finish
