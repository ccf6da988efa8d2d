#!/bin/bash
# Intent: the preflight script tells a stock build from a usdt build: on a stock build it exits
# 1 and prints the exact kit command to rebuild; on a usdt build (and its running process) it
# exits 0 — also through its readelf path when the tracer is not built; bad input (missing file,
# not an ELF, dead PID) exits 4 with one line; it names the Tokio release a binary was built from
# (from its source paths alone: stripped too) and whether the kit supports it (verified, newer,
# older, several releases in one binary); a kernel without uprobes or BTF (a fake /sys
# through TET_SYSFS_ROOT) exits 2; a user without root or CAP_BPF+CAP_PERFMON exits 3.
. "$(dirname "$0")/lib.sh"
need_root
PF="$ROOT/scripts/install_tokio_tracing.sh"
for line in "${LINES[@]}"; do
    usdt=$(sample_bin "$line" usdt); stock=$(sample_bin "$line" stock)
    need_file "$usdt" "usdt sample-service for tokio $line"; need_file "$stock" "stock sample-service for tokio $line"
    "$PF" --no-install "$stock" > "$TMPD/out" 2>&1
    check_eq "tokio $line stock build: exit 1 (rebuild needed)" 1 $?
    check "tokio $line stock build: prints the kit command" grep -q "rebuild: $ROOT/scripts/tokio-usdt-build" "$TMPD/out"
    "$PF" --no-install "$usdt" > "$TMPD/out" 2>&1
    rc=$?; [ $rc = 0 ] || cat "$TMPD/out"
    check_eq "tokio $line usdt build: exit 0 (ready)" 0 $rc
    v=$(ls -d "$ROOT/.cache/crates/${SUITE_OF[$line]}"/tokio-[0-9]* | sed 's#.*/tokio-##')
    check_eq "tokio $line usdt build: names its Tokio release ($v) as verified" \
        "binary: Tokio release: $v — supported by the kit (verified release)" "$(grep '^binary: Tokio release' "$TMPD/out")"
done
# releases the kit does not list: an ELF carrying only such source paths
fake_elf() { # fake_elf NAME PATH...: /bin/true with the paths in a section of their own
    printf '%s' "${@:2}" > "$TMPD/$1.paths"
    objcopy --add-section ".rodata.x=$TMPD/$1.paths" /bin/true "$TMPD/$1" 2>/dev/null
}
fake_elf newer "/r/tokio-1.99.0/src/runtime/task/harness.rs"
TOKIO_EBPF_TRACE=/nonexistent "$PF" --no-install "$TMPD/newer" > "$TMPD/out" 2>&1
check "a newer release: the kit tries its closest known shape" \
    grep -q '^binary: Tokio release: 1.99.0 — newer than the kit knows (newest verified: 1\.53\.2): the kit tries the closest known shape and verifies it$' "$TMPD/out"
fake_elf older "/r/tokio-1.20.1/src/lib.rs"
TOKIO_EBPF_TRACE=/nonexistent "$PF" --no-install "$TMPD/older" > "$TMPD/out" 2>&1
check "an older release: not supported" grep -q '^binary: Tokio release: 1.20.1 — NOT supported by the kit (older than 1.24.0' "$TMPD/out"
fake_elf two "/r/tokio-1.47.5/src/a.rs" "/v/tokio-1.38.2/src/b.rs"
TOKIO_EBPF_TRACE=/nonexistent "$PF" --no-install "$TMPD/two" > "$TMPD/out" 2>&1
check_eq "two releases in one binary: both named, in order" \
    "binary: Tokio release: 1.38.2 — supported by the kit (verified release)|binary: Tokio release: 1.47.5 — supported by the kit (verified release)|binary: it links 2 Tokio releases (a dependency pins another one)" \
    "$(grep '^binary: \(Tokio release\|it links\)' "$TMPD/out" | paste -sd'|')"
# without a built tracer the script decides from readelf -n and nm itself
stock=$(sample_bin 1.53 stock); usdt=$(sample_bin 1.53 usdt)
TOKIO_EBPF_TRACE=/nonexistent "$PF" --no-install "$stock" > "$TMPD/out" 2>&1
check_eq "tracer not built, stock build: exit 1" 1 $?
check "tracer not built: says it uses readelf" grep -q 'using readelf -n' "$TMPD/out"
TOKIO_EBPF_TRACE=/nonexistent "$PF" --no-install "$usdt" > "$TMPD/out" 2>&1
check_eq "tracer not built, usdt build: exit 0" 0 $?
cp "$stock" "$TMPD/stripped"; strip "$TMPD/stripped"
TOKIO_EBPF_TRACE=/nonexistent "$PF" --no-install "$TMPD/stripped" > "$TMPD/out" 2>&1
check_eq "tracer not built, stripped stock build: exit 1 (rebuild)" 1 $?
check "stripped: says it has neither probes nor Tokio symbols" grep -q 'neither tokio USDT probes nor Tokio symbols' "$TMPD/out"
check "stripped: still names its Tokio release" grep -q '^binary: Tokio release: 1.53.2 — supported' "$TMPD/out"
chmod 755 "$TMPD"
setpriv --reuid=65534 --regid=65534 --clear-groups "$PF" --no-install "$usdt" > "$TMPD/out" 2>&1
check_eq "unprivileged user: exit 3" 3 $?
check "unprivileged user: says why" grep -q 'permission: NO' "$TMPD/out"

"$usdt" --duration 20s > "$TMPD/svc.out" 2>&1 & svc=$!; track_pid $svc
wait_for_line "$TMPD/svc.out" 'listening on' 15 || not_ok "sample service did not start"
"$PF" --no-install -p "$svc" > "$TMPD/out" 2>&1
check_eq "running usdt process (-p PID): exit 0" 0 $?
stop_pid $svc

# a kit whose vocabulary (scripts/tet-vocab.sh) is missing: one line naming it, exit 4, not a verdict
mkdir -p "$TMPD/kit/scripts" "$TMPD/kit/bpf" && cp "$PF" "$TMPD/kit/scripts/"
"$TMPD/kit/scripts/$(basename "$PF")" --no-install "$usdt" > "$TMPD/out" 2>&1
check_eq "kit without its vocabulary: exit 4" 4 $?
check_eq "kit without its vocabulary: one line naming it" \
    "install_tokio_tracing.sh: no probes in $TMPD/kit/scripts/tet-vocab.sh (a broken kit)" "$(cat "$TMPD/out")"

"$PF" --no-install "$TMPD/missing" > "$TMPD/out" 2>&1
check_eq "missing file: exit 4" 4 $?
check "missing file: one line naming it" grep -q "$TMPD/missing: no such file" "$TMPD/out"
echo "plain text" > "$TMPD/text"
"$PF" --no-install "$TMPD/text" > "$TMPD/out" 2>&1
check_eq "not an ELF: exit 4" 4 $?
sleep 1 & dead=$!; wait $dead
"$PF" --no-install -p "$dead" > "$TMPD/out" 2>&1
check_eq "dead PID: exit 4" 4 $?
mkdir -p "$TMPD/sys/sys/kernel"
TET_SYSFS_ROOT="$TMPD/sys" "$PF" --no-install "$usdt" > "$TMPD/out" 2>&1
check_eq "kernel without uprobes/BTF (fake sysfs): exit 2" 2 $?
check "kernel without uprobes: says so" grep -q 'uprobe PMU: NO' "$TMPD/out"
finish
