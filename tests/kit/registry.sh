#!/bin/bash
# tests/kit/registry.sh VERSION DIR — a cargo directory source holding Tokio VERSION and what it
# needs, for the kit's release matrix: the release (and its tokio-macros) unpacked from
# ../shared/tokio-src, mio 0.8.11 and socket2 0.4.10 from there (Tokio 1.24–1.38), Debian
# bookworm's num_cpus and syn 1 (Tokio 1.24–1.38, tokio-macros 1.x), everything else Debian
# sid's (.cache/crates/sid, made by `make deps`); a release only Debian ships (1.24.2, 1.53.2):
# that Debian suite's crates. Crates are symlinks; DIR is made anew.
#   registry.sh --list   every release there is a source for (shared tarballs + Debian's), in order
#   registry.sh --unpack-all   unpacks every tarball; prints the folders holding tokio-V/ crates
set -euo pipefail
die() { echo "registry: $*" >&2; exit 1; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SHARED=${TOKIO_SRC_DIR:-$ROOT/../shared/tokio-src}
CR=$ROOT/.cache/crates
UNPACK=$ROOT/.cache/tokio-src
unpack() { # unpack TARBALL: into .cache/tokio-src, once (checked against SHA256SUMS)
    local t=$1 name
    name=$(basename "$t" .tar.xz)
    [ -f "$UNPACK/$name.done" ] && return 0
    (cd "$SHARED" && grep " $(basename "$t")\$" SHA256SUMS | sha256sum -c --quiet -) || die "$t: checksum mismatch"
    mkdir -p "$UNPACK/$name.tmp" && tar -xJf "$t" -C "$UNPACK/$name.tmp" && touch "$UNPACK/$name.done"
}
if [ "${1:-}" = --unpack-all ]; then
    # every tarball unpacked (once); prints the folders that hold tokio-V/ crates
    for t in "$SHARED"/tokio-*.tar.xz; do unpack "$t"; echo "$UNPACK/$(basename "$t" .tar.xz).tmp"; done
    ls -d "$CR"/bookworm "$CR"/trixie "$CR"/sid 2>/dev/null
    exit 0
fi
if [ "${1:-}" = --list ]; then
    { ls "$SHARED" | sed -n 's/^tokio-\([0-9.]*\)\.tar\.xz$/\1/p'
      ls -d "$CR"/{bookworm,trixie,sid}/tokio-[0-9]* 2>/dev/null | sed 's#.*/tokio-##'; } | sort -uV
    exit 0
fi
[ $# = 2 ] || die "usage: registry.sh VERSION DIR | --list"
V=$1 OUT=$2
[ -d "$CR/sid" ] && [ -d "$CR/bookworm" ] || die "no Debian crates in .cache/crates (run 'make deps')"
if [ -f "$SHARED/tokio-$V.tar.xz" ]; then
    unpack "$SHARED/tokio-$V.tar.xz"
    src=("$UNPACK/tokio-$V.tmp"/*)
else
    # a release only Debian ships (bookworm's 1.24.2, sid's 1.53.2): that suite's crates as they are
    deb=$(ls -d "$CR"/{bookworm,trixie,sid}/tokio-"$V" 2>/dev/null | head -1 || true)
    [ -n "$deb" ] || die "tokio $V: neither $SHARED/tokio-$V.tar.xz nor a Debian crate in .cache/crates"
    rm -rf "$OUT" && mkdir -p "$OUT"
    crates=("$(dirname "$deb")"/*/)
    ln -s "${crates[@]%/}" "$OUT/"
    exit 0
fi
for d in mio-0.8.11 socket2-0.4.10; do unpack "$SHARED/$d.tar.xz"; src+=("$UNPACK/$d.tmp/$d"); done
rm -rf "$OUT" && mkdir -p "$OUT"
# one ln for the ~300 crates (a fork each took seconds on a loaded machine, at every release)
crates=()
for c in "$CR"/sid/*/; do
    c=${c%/}
    case ${c##*/} in tokio-[0-9]*|tokio-macros-*) continue;; esac
    crates+=("$c")
done
ln -s "${crates[@]}" "$OUT/"
for c in "$CR"/bookworm/num_cpus-* "$CR"/bookworm/syn-1.* "${src[@]}"; do ln -sfn "$c" "$OUT/$(basename "$c")"; done
