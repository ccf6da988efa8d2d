#!/bin/bash
# Intent: `check` and `trace` cannot disagree: for every note fixture and every sample binary
# (usdt, stock, a stripped stock copy, each other dialect's program), the mode `check --json`
# announces is the mode `trace --binary` then uses, and their exit statuses agree (check 0/1
# → trace 0 in mode usdt / uprobe-fallback; check 2 → trace 2; check 4 → trace 4). The same
# under a fake sysfs without kernel BTF, without uprobes and without ref_ctr_offset (both: 2,
# and check --json's kernel verdict, kernel.ok / kernel.problem, is trace's own line; the
# preflight and the kit read those fields), for a user without the permissions (both: 2,
# kernel.permissions.problem is trace's line), and with a missing file (both: 4).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/notes_lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_fixtures tokio_probes tokio_nop1 tokio_partial tokio_upstream tokio_oxide tokio_stock \
    tokio_stock_stripped tokio_stock_noraw tokio_host ops_O2 plain libtokioprobes.so

# agree LABEL FILE [env…]: check, then trace, on FILE
agree() {
    local label=$1 f=$2; shift 2
    local crc trc cmode tmode
    crc=$(env "$@" timeout 30 "$TRACER" check --json "$f" > "$TMPD/c.json" 2> "$TMPD/c.err"; echo $?)
    cmode=$(jq -r '.mode // "none"' "$TMPD/c.json" 2>/dev/null)
    trc=$(env "$@" timeout 60 "$TRACER" --binary "$f" --duration 300ms -q -o "$TMPD/t.json" \
          > /dev/null 2> "$TMPD/t.err"; echo $?)
    tmode=none
    [ "$trc" = 0 ] && tmode=$(jq -r .mode "$TMPD/t.json")
    case "$crc" in
        0|1) check_eq "$label: check exit $crc ($cmode) → trace exit 0 in mode $cmode" "0 $cmode" "$trc $tmode"
             [ "$trc" = 0 ] || sed 's/^/#   trace: /' "$TMPD/t.err" ;;
        2|4) check_eq "$label: check exit $crc ($cmode) → trace exit $crc" "$crc" "$trc"
             check "$label: trace said why in one line" test "$(wc -l < "$TMPD/t.err")" -eq 1 ;;
        *)   not_ok "$label: check exit $crc: $(head -1 "$TMPD/c.err")" ;;
    esac
    [ "$crc" = 4 ] || check "$label: check's mode is one of usdt / uprobe-fallback / impossible" \
        grep -qxE 'usdt|uprobe-fallback|impossible' <<<"$cmode"
}

for f in tokio_probes tokio_nop1 tokio_partial tokio_upstream tokio_oxide tokio_stock \
         tokio_stock_stripped tokio_stock_noraw tokio_host ops_O2 plain libtokioprobes.so; do
    agree "fixture $f" "$FX/$f"
done
n=0
for b in "$BUILD"/sample-service/*/*/sample-service "$BUILD"/sample-service/dialects/*-dialect; do
    [ -x "$b" ] || continue
    n=$((n + 1))
    agree "${b#$BUILD/}" "$b"
done
check "sample binaries found (make builds them)" test "$n" -ge 9
stock=$(ls "$BUILD"/sample-service/tokio-1.53/stock/sample-service)
strip -o "$TMPD/stripped-sample" "$stock"
agree "stripped stock sample" "$TMPD/stripped-sample"
usdt="$BUILD/sample-service/tokio-1.53/usdt/sample-service"
agree "missing file" "$TMPD/no-such-file"

# the kernel, through a fake sysfs (TET_SYSFS_ROOT): the same verdict from both
K="$TMPD/sysfs"
fake_sysfs "$K"
for k in no-btf no-uprobes no-refctr; do
    agree "$k kernel, usdt sample" "$usdt" TET_SYSFS_ROOT="$K/$k"
    check_eq "$k kernel: check says cannot (2)" 2 \
        "$(TET_SYSFS_ROOT="$K/$k" "$TRACER" check "$usdt" > /dev/null 2>&1; echo $?)"
    check_eq "$k kernel: check --json's kernel.ok false, kernel.problem trace's line, permissions ok" \
        "false|$(sed 's/^tokio-ebpf-trace: //' "$TMPD/t.err")|true" \
        "$(jq -r '"\(.kernel.ok)|\(.kernel.problem)|\(.kernel.permissions.ok)"' "$TMPD/c.json")"
done
check_eq "this kernel: kernel.ok true, no problem" "true null" "$(jq -r '"\(.kernel.ok) \(.kernel.problem)"' \
    <("$TRACER" check --json "$usdt"))"
# a user without the permissions: the same verdict, and check names trace's reason
chmod 755 "$TMPD"
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all -- "$@"; }
crc=$(nobody "$TRACER" check --json "$usdt" > "$TMPD/c.json" 2> /dev/null; echo $?)
trc=$(nobody "$TRACER" --binary "$usdt" --duration 300ms -q -o "$TMPD/nobody.json" > /dev/null 2> "$TMPD/t.err"; echo $?)
check_eq "no permissions: check and trace both exit 2" "2 2" "$crc $trc"
check_eq "no permissions: kernel.ok true, kernel.permissions.ok false, its problem trace's line" \
    "true|false|$(sed 's/^tokio-ebpf-trace: //' "$TMPD/t.err")" \
    "$(jq -r '"\(.kernel.ok)|\(.kernel.permissions.ok)|\(.kernel.permissions.problem)"' "$TMPD/c.json")"
finish
