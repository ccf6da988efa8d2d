#!/bin/bash
# install_tokio_tracing.sh — preflight: can this binary (or process) be traced with tokio-ebpf-trace?
#
# USAGE
#   scripts/install_tokio_tracing.sh [--no-install] BINARY
#   scripts/install_tokio_tracing.sh [--no-install] -p PID
#
# It
#   1. installs the system packages the tracer needs at run time (libbpf, libelf, zlib, jq;
#      bpftool and bpftrace for diagnostics) when they are missing — unless --no-install;
#   2. asks the tracer, `tokio-ebpf-trace check --json` (the decision `trace` acts on), and says
#      what it found: the kernel (uprobe PMU, USDT semaphore support (ref_ctr_offset), BTF), the
#      permission to load BPF (root, or CAP_BPF + CAP_PERFMON), and the binary: the tokio:* USDT
#      probes, else Tokio's task symbols for the uprobe fallback;
#   3. names the Tokio release(s) the binary was built from (the source paths of Tokio's panic
#      locations, `…/tokio-1.47.5/src/…`, which even a stripped binary keeps) and whether the kit
#      can patch that release (probes-patch/versions); when the binary lacks the probes, it prints
#      the exact kit command that rebuilds it with them.
# The tracer must be built (`make` in the kit's root builds build/bin/tokio-ebpf-trace), or
# TOKIO_EBPF_TRACE must name an installed one: the verdict is only ever the tracer's.
#
# EXAMPLES
#   scripts/install_tokio_tracing.sh target/release/myservice
#   scripts/install_tokio_tracing.sh --no-install -p "$(pidof myservice)"
#
# EXIT STATUS (the tracer's table, tracer/cli/exits.def: docs/cli.md)
#   0  ok: ready, the binary carries the probes and this machine can trace it
#   1  lacks probes: rebuild it with the kit (command printed); until then it can be traced
#      in uprobe-fallback mode, on its Tokio symbols
#   2  cannot trace: the kernel (no uprobes, no USDT semaphore support, no BTF) or the
#      permissions (not root, no CAP_BPF+CAP_PERFMON) forbid it, or the binary has neither
#      probes nor Tokio symbols (a stripped stock build: rebuild it with the kit)
#   3  usage error
#   4  bad input: no such file, not an ELF, no such process; a broken kit; the tracer not built
#   5  install failed: installing the packages failed
set -uo pipefail
ME=install_tokio_tracing.sh
KIT_ROOT=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
TRACER=${TOKIO_EBPF_TRACE:-$KIT_ROOT/build/bin/tokio-ebpf-trace}
RUNTIME_PKGS=(libbpf1 libelf1 zlib1g jq bpftool bpftrace binutils)
# the exit codes (tracer/cli/exits.def, for the shell in scripts/tet-vocab.sh); without them, the
# one literal: 4, bad input (a broken kit)
. "$KIT_ROOT/scripts/tet-vocab.sh" 2> /dev/null
[ -n "${TET_EXIT_INPUT:-}" ] || { echo "$ME: no exit codes in $KIT_ROOT/scripts/tet-vocab.sh (a broken kit)" >&2; exit 4; }

fail() { local code=$1; shift; echo "$ME: $*" >&2; exit "$code"; }
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

INSTALL=1
TARGET=""
PID=""
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit "$TET_EXIT_OK";;
        --no-install) INSTALL=0;;
        -p|--pid) [ $# -ge 2 ] || fail "$TET_EXIT_USAGE" "-p needs a PID"; PID=$2; shift;;
        -*) fail "$TET_EXIT_USAGE" "unknown option '$1' (see --help)";;
        *) [ -z "$TARGET" ] || fail "$TET_EXIT_USAGE" "one binary at a time ('$TARGET' and '$1')"; TARGET=$1;;
    esac
    shift
done
[ -n "$PID$TARGET" ] || { usage >&2; exit "$TET_EXIT_USAGE"; }
[ -z "$PID" ] || [ -z "$TARGET" ] || fail "$TET_EXIT_USAGE" "a binary or -p PID, not both"
[ -x "$TRACER" ] || fail "$TET_EXIT_INPUT" "the tracer is not built ($TRACER): run 'make' in $KIT_ROOT, or set TOKIO_EBPF_TRACE to an installed tokio-ebpf-trace"

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
            >/dev/null 2>&1 || fail "$TET_EXIT_INSTALL" "installing ${missing[*]} failed (apt-get install)"
    else
        echo "packages: missing ${missing[*]} (run as root without --no-install to install them)"
    fi
else
    echo "packages: ok (${RUNTIME_PKGS[*]})"
fi

# ---- 2. the tracer's verdict: the kernel, the permissions, the binary -------------------------
command -v jq > /dev/null || fail "$TET_EXIT_INPUT" "'jq' not found (run without --no-install as root, or install it)"
if [ -n "$PID" ]; then who=(-p "$PID"); BIN_PATH=/proc/$PID/exe; else who=("$TARGET"); BIN_PATH=$TARGET; fi
CHECK=$("$TRACER" check --json "${who[@]}" 2> /dev/null)
rc=$?
case $rc in
    "$TET_EXIT_OK"|"$TET_EXIT_NOPROBES"|"$TET_EXIT_CANNOT") ;;
    "$TET_EXIT_USAGE"|"$TET_EXIT_INPUT")   # the tracer's one line about the FILE or PID
        fail "$rc" "$(jq -r '.error // empty' <<< "$CHECK" 2> /dev/null || echo "tokio-ebpf-trace check failed")";;
    *) fail "$TET_EXIT_INPUT" "$TRACER check ${who[*]} failed (exit $rc): $("$TRACER" check "${who[@]}" 2>&1 > /dev/null | head -1)";;
esac
yn='if . then "yes" else "NO" end'
jq -r ".kernel | \"kernel: \(.release) (\(.machine))\",
    \"kernel: uprobe PMU: \(.uprobe_pmu | $yn)\",
    \"kernel: USDT semaphores (ref_ctr_offset): \(.ref_ctr_offset | $yn)\",
    \"kernel: BTF: \(.btf | $yn)\",
    if .ok then \"kernel: can trace\" else \"kernel: NO: \(.problem)\" end,
    if .permissions.ok then \"permission: yes (euid \(.permissions.euid))\"
    else \"permission: NO: \(.permissions.problem) (run as root, or setcap cap_bpf,cap_perfmon+ep on the tracer)\" end" <<< "$CHECK"
[ -n "$PID" ] && TARGET=$(jq -r '[.files[] | select(.main) | .path][0] // "?"' <<< "$CHECK")
BINARY_MODE=$(jq -r .binary_mode <<< "$CHECK")

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

case $BINARY_MODE in
    usdt) echo "binary: $TARGET carries the tokio USDT probes";;
    uprobe-fallback)
        echo "binary: $TARGET has NO tokio USDT probes (stock Tokio). It must be rebuilt with the kit to be traced with USDT:"
        rebuild_hint
        echo "  (or trace it as it is in uprobe-fallback mode: fewer details, higher cost)";;
    *)
        echo "binary: $TARGET has neither tokio USDT probes nor Tokio symbols (stripped, or not a Tokio program). Rebuild it with the kit:"
        rebuild_hint;;
esac

jq -r '(.reasons[] | "check: - \(.)"), (.warnings[] | "check: ! \(.)")' <<< "$CHECK"
[ "$rc" = "$TET_EXIT_OK" ] && echo "ready: trace it with $TRACER --pid PID (or --binary $TARGET)"
exit "$rc"
