#!/bin/bash
# install_tokio_tracing.sh — preflight: can this binary (or process) be traced with tokio-ebpf-trace?
#
# USAGE
#   scripts/install_tokio_tracing.sh [--no-install] BINARY
#   scripts/install_tokio_tracing.sh [--no-install] -p PID
#
# It
#   1. installs the system packages the tracer needs at run time (libbpf, libelf, zlib; bpftool
#      and bpftrace for diagnostics) when they are missing — unless --no-install;
#   2. checks the kernel: uprobe PMU, USDT semaphore support (ref_ctr_offset), BTF at
#      /sys/kernel/btf/vmlinux, and permission to load BPF (root, or CAP_BPF + CAP_PERFMON);
#   3. checks the binary: which Tokio release(s) it was built from (the source paths of Tokio's
#      panic locations, `…/tokio-1.47.5/src/…`, which even a stripped binary keeps) and whether
#      the kit can patch that release (probes-patch/versions); does it carry the tokio:* USDT
#      probes? If not, it says the binary must be rebuilt and prints the exact kit command. The verdict comes from `tokio-ebpf-trace check`
#      when the tracer is built (build/bin/tokio-ebpf-trace), else from `readelf -n`.
#
# EXAMPLES
#   scripts/install_tokio_tracing.sh target/release/myservice
#   scripts/install_tokio_tracing.sh --no-install -p "$(pidof myservice)"
#
# EXIT STATUS
#   0  ready: the binary carries the probes and this machine can trace it
#   1  the binary lacks the tokio probes: rebuild it with the kit (command printed);
#      stock Tokio can still be traced in uprobe-fallback mode when its symbols are present
#   2  this kernel cannot trace (no uprobes or no BTF)
#   3  no permission to load BPF programs (not root, no CAP_BPF+CAP_PERFMON)
#   4  usage error or bad input (no such file, not an ELF, no such process)
#   5  installing the packages failed
set -uo pipefail
ME=install_tokio_tracing.sh
KIT_ROOT=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
TRACER=${TOKIO_EBPF_TRACE:-$KIT_ROOT/build/bin/tokio-ebpf-trace}
SYSFS=${TET_SYSFS_ROOT:-}     # tests point this at a fake /sys tree
RUNTIME_PKGS=(libbpf1 libelf1 zlib1g bpftool bpftrace binutils)
# the probes a usdt build must carry (required 1 in bpf/probes.def, for the shell in
# scripts/tet-vocab.sh); task_wait and task_meta (wait reasons, task names and sizes) are newer:
# a build without them is traced, with stalled judged by time alone
. "$KIT_ROOT/scripts/tet-vocab.sh" 2> /dev/null
PROBES=(${TET_VOCAB_REQUIRED[@]+"${TET_VOCAB_REQUIRED[@]}"})
[ "${#PROBES[@]}" -gt 0 ] || { echo "$ME: no probes in $KIT_ROOT/scripts/tet-vocab.sh (a broken kit)" >&2; exit 4; }

fail() { local code=$1; shift; echo "$ME: $*" >&2; exit "$code"; }
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

INSTALL=1
TARGET=""
PID=""
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0;;
        --no-install) INSTALL=0;;
        -p|--pid) [ $# -ge 2 ] || fail 4 "-p needs a PID"; PID=$2; shift;;
        -*) fail 4 "unknown option '$1' (see --help)";;
        *) [ -z "$TARGET" ] || fail 4 "one binary at a time ('$TARGET' and '$1')"; TARGET=$1;;
    esac
    shift
done
if [ -n "$PID" ]; then
    [[ "$PID" =~ ^[0-9]+$ ]] || fail 4 "PID '$PID' is not a number"
    [ -d "/proc/$PID" ] || fail 4 "PID $PID: no such process"
    TARGET=$(readlink "/proc/$PID/exe" 2>/dev/null) || fail 4 "PID $PID: cannot read /proc/$PID/exe (permission?)"
    TARGET=${TARGET% (deleted)}
    BIN_PATH="/proc/$PID/exe"
else
    [ -n "$TARGET" ] || { usage >&2; exit 4; }
    BIN_PATH=$TARGET
fi
[ -e "$BIN_PATH" ] || fail 4 "$TARGET: no such file"
[ -f "$BIN_PATH" ] || fail 4 "$TARGET: not a regular file"
[ -r "$BIN_PATH" ] || fail 4 "$TARGET: not readable"
[ "$(head -c4 "$BIN_PATH" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] || fail 4 "$TARGET: not an ELF file"

# ---- 1. packages ------------------------------------------------------------------------------
missing=()
for p in "${RUNTIME_PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ $INSTALL = 1 ] && [ "$(id -u)" = 0 ]; then
        echo "packages: installing ${missing[*]}"
        { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
          { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; }; } \
            >/dev/null 2>&1 || fail 5 "installing ${missing[*]} failed (apt-get install)"
    else
        echo "packages: missing ${missing[*]} (run as root without --no-install to install them)"
    fi
else
    echo "packages: ok (${RUNTIME_PKGS[*]})"
fi

# ---- 2. kernel and permissions ----------------------------------------------------------------
kernel_ok=1
if [ -e "$SYSFS/sys/bus/event_source/devices/uprobe/type" ]; then
    echo "kernel: uprobe PMU: yes"
else
    echo "kernel: uprobe PMU: NO (CONFIG_UPROBE_EVENTS missing): nothing can be traced"; kernel_ok=0
fi
if [ -e "$SYSFS/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset" ]; then
    echo "kernel: USDT semaphores (ref_ctr_offset): yes"
else
    echo "kernel: USDT semaphores (ref_ctr_offset): no (Linux < 4.20): probes gated by semaphores stay off"
fi
if [ -e "$SYSFS/sys/kernel/btf/vmlinux" ]; then
    echo "kernel: BTF: yes"
else
    echo "kernel: BTF: NO (/sys/kernel/btf/vmlinux missing; CONFIG_DEBUG_INFO_BTF): the tracer's CO-RE programs cannot load"; kernel_ok=0
fi
perm_ok=1
if [ "$(id -u)" = 0 ]; then
    echo "permission: root"
else
    capeff=$(awk '/^CapEff:/{print $2}' /proc/self/status)
    # CAP_PERFMON = 38, CAP_BPF = 39 (Linux 5.8)
    if (( (16#$capeff >> 38 & 1) && (16#$capeff >> 39 & 1) )); then
        echo "permission: CAP_BPF + CAP_PERFMON"
    else
        echo "permission: NO: not root and no CAP_BPF+CAP_PERFMON (run as root, or setcap cap_bpf,cap_perfmon+ep on the tracer)"; perm_ok=0
    fi
fi

# ---- 3. the binary ----------------------------------------------------------------------------
rebuild_hint() {
    # the crate root: the directory above target/<profile>/ (or target/<triple>/<profile>/)
    local bin dir crate="" profile="--release"
    bin=$(readlink -f "$TARGET")
    dir=$(dirname "$bin")
    case "$(basename "$dir")" in debug) profile="";; esac
    local d=$dir
    while [ "$d" != / ]; do
        if [ "$(basename "$d")" = target ] && [ -f "$(dirname "$d")/Cargo.toml" ]; then crate=$(dirname "$d"); break; fi
        d=$(dirname "$d")
    done
    if [ -n "$crate" ]; then
        echo "  rebuild: $KIT_ROOT/scripts/tokio-usdt-build $profile${profile:+ }--manifest-path $crate/Cargo.toml --bin $(basename "$bin")"
    else
        echo "  rebuild: $KIT_ROOT/scripts/tokio-usdt-build --release --manifest-path /path/to/your/crate/Cargo.toml   (in the crate that builds $(basename "$bin"))"
    fi
}

# Tokio's release, from the binary alone: the paths of its source files that panic locations and
# #[track_caller] data keep in .rodata (registry, vendored or kit copies all end in tokio-V/src/)
tokio_releases() {
    LC_ALL=C grep -aoE '(^|[/\\])tokio-1\.[0-9]{1,3}\.[0-9]{1,3}[/\\]src[/\\]' "$BIN_PATH" 2>/dev/null |
        sed -E 's#^.*tokio-##; s#[/\\]src[/\\]$##' | sort -uV
}
# what the kit can do with release $1: the matrix probes-patch/versions lists, or the newest known
release_support() {
    local v=$1 line newest
    line=$(awk -v v="$v" '$1 == v' "$KIT_ROOT/probes-patch/versions" 2>/dev/null)
    case "$line" in
        *" ok "*) echo "supported by the kit (verified release)"; return;;
        *" unpatchable "*) echo "NOT supported by the kit: $(echo "$line" | cut -d' ' -f4- | tr _ ' ')"; return;;
    esac
    newest=$(awk '$2 == "ok" {print $1}' "$KIT_ROOT/probes-patch/versions" 2>/dev/null | sort -V | tail -1)
    if [ -z "$newest" ]; then echo "unknown (probes-patch/versions missing: a broken kit checkout)"
    elif [ "$(printf '%s\n%s\n' "$v" 1.24.0 | sort -V | head -1)" != 1.24.0 ]; then
        echo "NOT supported by the kit (older than 1.24.0, the oldest release it patches)"
    elif [ "$(printf '%s\n%s\n' "$v" "$newest" | sort -V | tail -1)" = "$v" ]; then
        echo "newer than the kit knows (newest verified: $newest): the kit tries the closest known shape and verifies it"
    else
        echo "not in the kit's verified list: the kit tries the closest known shape and verifies it"
    fi
}
mapfile -t TOKIO_RELEASES < <(tokio_releases)
if [ ${#TOKIO_RELEASES[@]} = 0 ]; then
    echo "binary: Tokio release: not found (no tokio-V/src/ paths in the binary)"
fi
for v in "${TOKIO_RELEASES[@]}"; do
    echo "binary: Tokio release: $v — $(release_support "$v")"
done
[ ${#TOKIO_RELEASES[@]} -gt 1 ] && echo "binary: it links ${#TOKIO_RELEASES[@]} Tokio releases (a dependency pins another one)"

verdict=""
if [ -x "$TRACER" ]; then
    # the tracer's own verdict, the one `trace` acts on (tokio-ebpf-trace check: 0 ready,
    # 1 fallback only, 2 cannot trace); what the binary offers is its binary_mode (the kernel
    # and the permissions are judged above, and by check's exit status)
    if [ -n "$PID" ]; then who=(-p "$PID"); else who=("$TARGET"); fi
    out=$("$TRACER" check "${who[@]}" 2>&1)
    rc=$?
    echo "$out" | sed 's/^/  check: /'
    [ "$rc" -le 2 ] || fail 4 "$TARGET: tokio-ebpf-trace check failed (exit $rc)"
    mode=$("$TRACER" check --json "${who[@]}" 2>/dev/null | grep -o '"binary_mode": *"[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/')
    case $mode in
        usdt) verdict=usdt;;
        uprobe-fallback) verdict=fallback;;
        impossible) verdict=none;;
        *) fail 4 "$TARGET: tokio-ebpf-trace check --json gave no binary_mode";;
    esac
    # check's exit status is trace's: a kernel or permission the checks above let pass still
    # stops it
    [ "$rc" = 2 ] && [ "$verdict" != none ] && [ "$kernel_ok" = 1 ] && [ "$perm_ok" = 1 ] && kernel_ok=0
else
    echo "binary: (tracer not built: using readelf -n; 'make' builds $TRACER)"
    notes=$(readelf -n --wide "$BIN_PATH" 2>/dev/null | awk '/Provider: tokio/{getline; sub(/^ *Name: */,""); print}' | sort -u)
    have=0; for p in "${PROBES[@]}"; do grep -qx "$p" <<< "$notes" && have=$((have+1)); done
    if [ $have = ${#PROBES[@]} ]; then verdict=usdt
    elif grep -q "${TET_VOCAB_TOKIO_FN[raw_poll]}" < <(nm "$BIN_PATH" 2>/dev/null); then verdict=fallback
    else verdict=none; fi
fi

case $verdict in
    usdt) echo "binary: $TARGET carries the tokio USDT probes";;
    fallback)
        echo "binary: $TARGET has NO tokio USDT probes (stock Tokio). It must be rebuilt with the kit to be traced with USDT:"
        rebuild_hint
        echo "  (or trace it as it is in uprobe-fallback mode: fewer details, higher cost)";;
    none)
        echo "binary: $TARGET has neither tokio USDT probes nor Tokio symbols (stripped, or not a Tokio program). Rebuild it with the kit:"
        rebuild_hint;;
esac

[ $kernel_ok = 1 ] || exit 2
[ $perm_ok = 1 ] || exit 3
[ "$verdict" = usdt ] || exit 1
echo "ready: trace it with $TRACER --pid PID (or --binary $TARGET)"
exit 0
