#!/bin/bash
# Intent: `check` gives the right verdict and exit status on C stand-ins for each case —
# this project's probes (ready, 0; nop5 sites, semaphores), the same with 1-byte nops and no
# semaphores (ready, warns about traps), missing probes (ready, lists them), Tokio's upstream
# proposal names and oxide's tokio-dtrace names (recognised dialects, ready), a stock build
# with Tokio symbols (fallback, 1), the same stripped (cannot, 2, says stripped), Tokio
# symbols without the task functions (cannot, 2), a non-Tokio binary with notes and a plain
# binary (cannot, 2); --json carries the same verdict and the kernel facts match sysfs;
# without privileges (as nobody) the verdict is cannot (2) whatever the binary.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/notes_lib.sh"
need_fixtures tokio_probes tokio_nop1 tokio_partial tokio_upstream tokio_oxide tokio_stock \
    tokio_stock_stripped tokio_stock_noraw ops_O2 plain libtokioprobes.so

# verdict FILE RC DIALECT MODE [MISSING]
verdict() {
    local f=$1 rc=$2 dialect=$3 mode=$4 missing=${5:-}
    local r
    r=$(run_tet "$TMPD/h" "$TMPD/e" check "$FX/$f")
    check_eq "$f: exit $rc" "$rc" "$r"
    r=$(run_tet "$TMPD/j" "$TMPD/e" check --json "$FX/$f")
    check_eq "$f --json: exit $rc" "$rc" "$r"
    check_eq "$f --json: dialect/mode/exit_code/missing" "$dialect $mode $rc [$missing]" \
        "$(jq -r '"\(.tokio.dialect) \(.mode) \(.exit_code) [\(.tokio.missing | join(","))]"' "$TMPD/j")"
    check "$f: human verdict line says $mode" grep -q "^Verdict: .* attach mode $mode" "$TMPD/h"
}
verdict tokio_probes 0 tokio-ebpf-trace usdt
verdict libtokioprobes.so 0 tokio-ebpf-trace usdt
verdict tokio_nop1 0 tokio-ebpf-trace usdt
verdict tokio_partial 0 tokio-ebpf-trace usdt "task_yielded,worker_park,worker_unpark"
verdict tokio_upstream 0 tokio-upstream-usdt usdt
verdict tokio_oxide 0 oxide-tokio-dtrace usdt
verdict tokio_stock 1 null uprobe-fallback
verdict tokio_stock_stripped 2 null impossible
verdict tokio_stock_noraw 2 null impossible
verdict ops_O2 2 null impossible
verdict plain 2 null impossible

"$TRACER" check --json "$FX/tokio_probes" > "$TMPD/j"
check_eq "project probes: 10 probes, all with semaphores, all nop5" "10 true true" \
    "$(jq -r '.tokio.probes | "\(length) \(map(.sites_with_semaphore > 0) | all) \(map(.site_kinds.nop5 == .sites) | all)"' "$TMPD/j")"
"$TRACER" check --json "$FX/tokio_nop1" > "$TMPD/j"
check_eq "nop1 build: no semaphores, nop1 sites" "false true" \
    "$(jq -r '.tokio.probes | "\(map(.sites_with_semaphore > 0) | any) \(map(.site_kinds.nop1 == .sites) | all)"' "$TMPD/j")"
if jq -e '.kernel.optimized_uprobes' "$TMPD/j" >/dev/null; then
    check "nop1 build: warns that 1-byte nops trap" jq -e '.warnings | any(test("not 5-byte nops"))' "$TMPD/j"
else
    check "nop1 build: no nop-size warning on a kernel that does not optimize uprobes" \
        jq -e '.warnings | any(test("not 5-byte nops")) | not' "$TMPD/j"
fi
"$TRACER" check --json "$FX/tokio_upstream" > "$TMPD/j"
check_eq "upstream names listed" "task-details task-poll-end task-poll-start task-start task-terminate task-waker-clone task-waker-drop task-waker-wake" \
    "$(jq -r '[.tokio.probes[].name] | sort | join(" ")' "$TMPD/j")"
"$TRACER" check --json "$FX/tokio_stock" > "$TMPD/j"
check_eq "stock: raw::poll x2 (legacy), wake_by_ref (v0) found" "2 1 1" \
    "$(jq -r '.symbols | "\(.raw_poll) \(.wake_by_ref) \(.drop_waker)"' "$TMPD/j")"
"$TRACER" check --json "$FX/tokio_stock_stripped" > "$TMPD/j"
check "stripped stock: the reason says stripped" jq -e '.reasons | any(test("stripped"))' "$TMPD/j"
check_eq "stripped stock: no symtab, Tokio strings seen" "false true" \
    "$(jq -r '.symbols | "\(.symtab) \(.tokio_strings)"' "$TMPD/j")"

# kernel facts against sysfs / uname
k() { jq -r ".kernel.$1" "$TMPD/j"; }
check_eq "uprobe PMU as in sysfs" "$([ -e /sys/bus/event_source/devices/uprobe/type ] && echo true || echo false)" "$(k uprobe_pmu)"
check_eq "uprobe PMU type as in sysfs" "$(cat /sys/bus/event_source/devices/uprobe/type 2>/dev/null || echo null)" "$(k uprobe_pmu_type)"
check_eq "ref_ctr_offset as in sysfs" "$([ -e /sys/bus/event_source/devices/uprobe/format/ref_ctr_offset ] && echo true || echo false)" "$(k ref_ctr_offset)"
check_eq "BTF as in sysfs" "$([ -r /sys/kernel/btf/vmlinux ] && echo true || echo false)" "$(k btf)"
check_eq "release as uname -r" "$(uname -r)" "$(k release)"
IFS=. read -r kmaj kmin _ <<<"$(uname -r)"
want_opt=false
if [ "$(uname -m)" = x86_64 ] && { [ "$kmaj" -gt 6 ] || { [ "$kmaj" = 6 ] && [ "${kmin%%[!0-9]*}" -ge 18 ]; }; }; then want_opt=true; fi
check_eq "optimized uprobes: x86_64 and >= 6.18 (and the uprobe syscall answers)" "$want_opt" "$(k optimized_uprobes)"
check_eq "permissions: euid as id -u" "$(id -u)" "$(jq -r .kernel.permissions.euid "$TMPD/j")"

if [ "$(id -u)" = 0 ]; then
    chmod 755 "$TMPD"; cp "$TRACER" "$TMPD/tet"; chmod 755 "$TMPD/tet"
    setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all -- \
        "$TMPD/tet" check --json "$FX/tokio_probes" > "$TMPD/j" 2> "$TMPD/e"
    rc=$?
    check_eq "as nobody: cannot trace (exit 2)" 2 "$rc"
    check_eq "as nobody: permissions false, binary offers usdt" "false usdt impossible" \
        "$(jq -r '"\(.kernel.permissions.ok) \(.binary_mode) \(.mode)"' "$TMPD/j")"
    check "as nobody: the reason names CAP_BPF and CAP_PERFMON" jq -e '.reasons | any(test("CAP_BPF and CAP_PERFMON"))' "$TMPD/j"
else
    skip_check "the unprivileged check needs root to drop privileges (uid $(id -u))"
fi
finish
