#!/bin/bash
# Intent: the preflight script's verdict is the tracer's: it reads `tokio-ebpf-trace check --json`
# and decides nothing itself (no readelf, nm, /sys or CapEff of its own), so its exit status is
# check's on every case here — a stock build exits 1 and prints the exact kit command to rebuild,
# a usdt build (and its running process) exits 0, a stripped stock build exits 2 (neither probes
# nor symbols), a kernel without uprobes, BTF or ref_ctr_offset (a fake /sys through
# TET_SYSFS_ROOT, which check honours) exits 2 and prints check's facts and reason, a user
# without root or CAP_BPF+CAP_PERFMON exits 2 saying so; bad input (missing file, not an ELF,
# dead PID) exits 4 with check's one line; a tracer that is not built, or a kit without its
# vocabulary, is one line and exit 4, not a second verdict. It names the Tokio release a
# binary was built from (from its source paths alone: stripped too) and whether the kit
# supports it (verified, newer, older, several releases in one binary).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
PF="$ROOT/scripts/install_tokio_tracing.sh"
# same_as_check LABEL WANT_RC CHECK_ARGS…: the preflight's last run ($TMPD/out, exit $rc) exited
# WANT_RC, and so does `check` on the same target
same_as_check() {
    local label=$1 want=$2 crc; shift 2
    crc=$("$TRACER" check "$@" > /dev/null 2>&1; echo $?)
    check_eq "$label: exit $want, as check's" "$want $want" "$rc $crc"
}
for line in "${LINES[@]}"; do
    usdt=$(sample_bin "$line" usdt); stock=$(sample_bin "$line" stock)
    need_file "$usdt" "usdt sample-service for tokio $line"; need_file "$stock" "stock sample-service for tokio $line"
    "$PF" --no-install "$stock" > "$TMPD/out" 2>&1; rc=$?
    same_as_check "tokio $line stock build (rebuild needed)" 1 "$stock"
    check "tokio $line stock build: prints the kit command" grep -q "rebuild: $ROOT/scripts/tokio-usdt-build" "$TMPD/out"
    "$PF" --no-install "$usdt" > "$TMPD/out" 2>&1
    rc=$?; [ $rc = 0 ] || cat "$TMPD/out"
    same_as_check "tokio $line usdt build (ready)" 0 "$usdt"
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
"$PF" --no-install "$TMPD/newer" > "$TMPD/out" 2>&1
check "a newer release: the kit tries its closest known shape" \
    grep -q '^binary: Tokio release: 1.99.0 — newer than the kit knows (newest verified: 1\.53\.2): the kit tries the closest known shape and verifies it$' "$TMPD/out"
fake_elf older "/r/tokio-1.20.1/src/lib.rs"
"$PF" --no-install "$TMPD/older" > "$TMPD/out" 2>&1
check "an older release: not supported" grep -q '^binary: Tokio release: 1.20.1 — NOT supported by the kit (older than 1.24.0' "$TMPD/out"
fake_elf two "/r/tokio-1.47.5/src/a.rs" "/v/tokio-1.38.2/src/b.rs"
"$PF" --no-install "$TMPD/two" > "$TMPD/out" 2>&1
check_eq "two releases in one binary: both named, in order" \
    "binary: Tokio release: 1.38.2 — supported by the kit (verified release)|binary: Tokio release: 1.47.5 — supported by the kit (verified release)|binary: it links 2 Tokio releases (a dependency pins another one)" \
    "$(grep '^binary: \(Tokio release\|it links\)' "$TMPD/out" | paste -sd'|')"
# without a built tracer there is no verdict: one line saying how to get one, exit 4 (bad input)
stock=$(sample_bin 1.53 stock); usdt=$(sample_bin 1.53 usdt)
TOKIO_EBPF_TRACE=/nonexistent "$PF" --no-install "$stock" > "$TMPD/out" 2>&1
check_eq "tracer not built: exit 4" 4 $?
check_eq "tracer not built: one line, how to build it" \
    "install_tokio_tracing.sh: the tracer is not built (/nonexistent): run 'make' in $ROOT, or set TOKIO_EBPF_TRACE to an installed tokio-ebpf-trace" \
    "$(cat "$TMPD/out")"
cp "$stock" "$TMPD/stripped"; strip "$TMPD/stripped"
"$PF" --no-install "$TMPD/stripped" > "$TMPD/out" 2>&1; rc=$?
same_as_check "stripped stock build (cannot trace: rebuild)" 2 "$TMPD/stripped"
check "stripped: says it has neither probes nor Tokio symbols, and how to rebuild" \
    bash -c "grep -q 'neither tokio USDT probes nor Tokio symbols' '$TMPD/out' && grep -q 'rebuild: ' '$TMPD/out'"
check "stripped: still names its Tokio release" grep -q '^binary: Tokio release: 1.53.2 — supported' "$TMPD/out"
chmod 755 "$TMPD"
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all -- "$@"; }
nobody "$PF" --no-install "$usdt" > "$TMPD/out" 2>&1; rc=$?
check_eq "unprivileged user: exit 2, as check's as that user" "2 2" "$rc $(nobody "$TRACER" check "$usdt" > /dev/null 2>&1; echo $?)"
check_eq "unprivileged user: says why, in check's words" \
    "permission: NO: $(nobody "$TRACER" check --json "$usdt" | jq -r .kernel.permissions.problem) (run as root, or setcap cap_bpf,cap_perfmon+ep on the tracer)" \
    "$(grep '^permission:' "$TMPD/out")"

"$usdt" --duration 20s > "$TMPD/svc.out" 2>&1 & svc=$!; track_pid $svc
wait_for_line "$TMPD/svc.out" 'listening on' 15 || not_ok "sample service did not start"
"$PF" --no-install -p "$svc" > "$TMPD/out" 2>&1; rc=$?
same_as_check "running usdt process (-p PID)" 0 -p "$svc"
check "running process: names its executable" grep -qF "binary: $(readlink -f "$usdt") carries the tokio USDT probes" "$TMPD/out"
stop_pid $svc

# a kit whose vocabulary (scripts/tet-vocab.sh: the exit codes) is missing: one line naming it, exit 4
mkdir -p "$TMPD/kit/scripts" "$TMPD/kit/bpf" && cp "$PF" "$TMPD/kit/scripts/"
"$TMPD/kit/scripts/$(basename "$PF")" --no-install "$usdt" > "$TMPD/out" 2>&1
check_eq "kit without its vocabulary: exit 4" 4 $?
check_eq "kit without its vocabulary: one line naming it" \
    "install_tokio_tracing.sh: no exit codes in $TMPD/kit/scripts/tet-vocab.sh (a broken kit)" "$(cat "$TMPD/out")"

# bad input: check's one line, check's exit status (4)
"$PF" --no-install "$TMPD/missing" > "$TMPD/out" 2>&1; rc=$?
same_as_check "missing file" 4 "$TMPD/missing"
check_eq "missing file: check's one line" \
    "install_tokio_tracing.sh: $("$TRACER" check --json "$TMPD/missing" 2> /dev/null | jq -r .error)" "$(grep -v '^packages:' "$TMPD/out")"
echo "plain text" > "$TMPD/text"
"$PF" --no-install "$TMPD/text" > "$TMPD/out" 2>&1; rc=$?
same_as_check "not an ELF" 4 "$TMPD/text"
sleep 1 & dead=$!; wait $dead
"$PF" --no-install -p "$dead" > "$TMPD/out" 2>&1; rc=$?
same_as_check "dead PID" 4 -p "$dead"
"$PF" --no-install --frobnicate "$usdt" > "$TMPD/out" 2>&1
check_eq "unknown option: exit 3 (usage)" 3 $?

# the kernel, through fake sysfs trees (TET_SYSFS_ROOT): check's facts and reason, exit 2
K="$TMPD/sysfs"
fake_sysfs "$K"
for k in no-uprobes no-btf no-refctr; do
    TET_SYSFS_ROOT="$K/$k" "$PF" --no-install "$usdt" > "$TMPD/out" 2>&1; rc=$?
    check_eq "$k kernel: exit 2, as check's" "2 2" "$rc $(TET_SYSFS_ROOT="$K/$k" "$TRACER" check "$usdt" > /dev/null 2>&1; echo $?)"
    check_eq "$k kernel: the reason is check's" \
        "kernel: NO: $(TET_SYSFS_ROOT="$K/$k" "$TRACER" check --json "$usdt" | jq -r .kernel.problem)" "$(grep '^kernel: NO' "$TMPD/out")"
done
check "no-refctr kernel: says which fact is missing" grep -q '^kernel: USDT semaphores (ref_ctr_offset): NO$' "$TMPD/out"
TET_SYSFS_ROOT="$K/no-uprobes" "$PF" --no-install "$usdt" > "$TMPD/out" 2>&1
check "no-uprobes kernel: says so" grep -q '^kernel: uprobe PMU: NO$' "$TMPD/out"

# one decision: no readelf, nm, /sys or CapEff in the script's code (comments aside)
check_eq "the preflight parses no ELF, /sys or capabilities itself" "" \
    "$(grep -v '^ *#' "$PF" | grep -nE 'readelf|\bnm\b|/sys/|CapEff|/proc/self/status' | head -3)"
finish
