#!/bin/bash
# make deps: install the Debian packages in scripts/packages.txt (only those missing) and
# vendor the Debian crate sources for each supported Tokio line. Idempotent.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "deps: $*" >&2; exit 1; }

mapfile -t want < <(grep -v '^#' "$ROOT/scripts/packages.txt" | grep .)
missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || die "missing packages (${missing[*]}); run 'make deps' as root"
    echo "deps: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || die "apt-get update failed"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || die "apt-get install failed"
fi
command -v cargo >/dev/null || die "cargo not found (install a Rust toolchain: rustup or Debian's cargo)"

# sid-uring: sid's tokio-uring closure, for the sample service's tokio-1.53-uring line;
# sid-console: sid's console-subscriber closure (make bench's tokio-console build, and the
# tokio-console demo app of tests/t_console_app.sh)
for suite in bookworm trixie sid sid-uring sid-console; do
    "$ROOT/scripts/vendor-crates.sh" "$suite"
done
# tracefs for bpftrace and uprobe checks
if [ ! -d /sys/kernel/tracing/events ] && [ "$(id -u)" = 0 ]; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi
echo "deps: ok" >&2
