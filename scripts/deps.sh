#!/bin/bash
# make deps: install the Debian packages in scripts/packages.txt (only those missing) and
# vendor the Debian crate sources for each supported Tokio line. Idempotent.
#   deps.sh --packages   the packages alone (and tracefs): what the C builds need
#   deps.sh --crates     the vendored crates alone: what the cargo builds need (after --packages)
# The Makefile runs the two apart, so that under make -j the C builds run while crates download.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "deps: $*" >&2; exit 1; }
what=${1:-all}
case $what in all|--packages|--crates) ;; *) die "usage: deps.sh [--packages|--crates]";; esac

if [ "$what" != --crates ]; then
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
# tracefs for bpftrace and uprobe checks
if [ ! -d /sys/kernel/tracing/events ] && [ "$(id -u)" = 0 ]; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi
[ "$what" = all ] || { echo "deps: packages ok" >&2; exit 0; }
fi

command -v cargo >/dev/null || die "cargo not found (install a Rust toolchain: rustup or Debian's cargo)"

# sid-uring: sid's tokio-uring closure, for the sample service's tokio-1.53-uring line;
# sid-console: sid's console-subscriber closure (make bench's tokio-console build, and the
# tokio-console demo app of tests/t_console_app.sh)
# The suites of sid share one pool of package lists and .debs (vendor-crates.sh): one after the
# other, sid first; bookworm's and trixie's meanwhile (mostly waiting on the network and on
# dpkg -x, one process per .deb). VENDOR_RUN: the lists are updated once in this run.
export VENDOR_RUN="$$.$(date +%s%N)"
vendor() { local s; for s; do "$ROOT/scripts/vendor-crates.sh" "$s" || return 1; done; }
vendor bookworm trixie & other=$!
vendor sid sid-uring sid-console || { wait "$other"; die "vendoring the sid crates failed"; }
wait "$other" || die "vendoring the bookworm/trixie crates failed"
echo "deps: ok" >&2
