#!/bin/bash
# Intent: the preflight script tells a stock build from a usdt build: on a stock build it exits
# 1 and prints the exact kit command to rebuild; on a usdt build (and its running process) it
# exits 0 — also through its readelf path when the tracer is not built; bad input (missing file,
# not an ELF, dead PID) exits 4 with one line; a kernel without uprobes or BTF (a fake /sys
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
done
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
chmod 755 "$TMPD"
setpriv --reuid=65534 --regid=65534 --clear-groups "$PF" --no-install "$usdt" > "$TMPD/out" 2>&1
check_eq "unprivileged user: exit 3" 3 $?
check "unprivileged user: says why" grep -q 'permission: NO' "$TMPD/out"

"$usdt" --duration 20s > "$TMPD/svc.out" 2>&1 & svc=$!; track_pid $svc
wait_for_line "$TMPD/svc.out" 'listening on' 15 || not_ok "sample service did not start"
"$PF" --no-install -p "$svc" > "$TMPD/out" 2>&1
check_eq "running usdt process (-p PID): exit 0" 0 $?
stop_pid $svc

# a kit whose vocabulary (bpf/probes.def) is missing: one line naming it, exit 4, not a verdict
mkdir -p "$TMPD/kit/scripts" "$TMPD/kit/bpf" && cp "$PF" "$TMPD/kit/scripts/"
: > "$TMPD/kit/bpf/probes.def"
"$TMPD/kit/scripts/$(basename "$PF")" --no-install "$usdt" > "$TMPD/out" 2>&1
check_eq "kit without probes.def entries: exit 4" 4 $?
check_eq "kit without probes.def entries: one line naming it" \
    "install_tokio_tracing.sh: no probes in $TMPD/kit/bpf/probes.def (a broken kit)" "$(cat "$TMPD/out")"

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
