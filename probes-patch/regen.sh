#!/bin/bash
# regen.sh — maintain the Tokio USDT patches (see probes-patch/README.md, "Maintaining").
#
#   regen.sh [--check] [MINOR...]   refresh tokio-MINOR/usdt-probes.patch for every line in
#                                   `versions` (or the ones named): pristine sources + the patch's
#                                   hook edits + common/usdt.rs → a new patch; then check that it
#                                   applies with --fuzz=0 to every tested version.
#                                   --check changes nothing, exits 1 when a patch is stale.
#   regen.sh unpack MINOR DIR       DIR/a = pristine Tokio, DIR/b = patched copy to edit
#   regen.sh diff MINOR DIR         write tokio-MINOR/usdt-probes.patch from DIR/a → DIR/b
#                                   (DIR/b's usdt.rs is replaced by common/usdt.rs first)
#
# Pristine sources: $TOKIO_SRC/tokio-VERSION if TOKIO_SRC is set, else the Debian crates that
# `make deps` vendors (.cache/crates/*/tokio-VERSION). The module file is canonical in
# common/usdt.rs: edit it there, never inside a patch.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
MODULE=src/runtime/task/usdt.rs

die() { echo "regen: $*" >&2; exit 1; }

# line_field MINOR N: field N of the `versions` line for MINOR
line_field() {
    awk -v m="$1" -v n="$2" '$1 == m { print $n; found = 1 } END { exit !found }' "$HERE/versions" ||
        die "$1: not a line of $HERE/versions"
}
tested() { awk -v m="$1" '$1 == m { for (i = 3; i <= NF; i++) print $i }' "$HERE/versions"; }

pristine() {
    local ver=$1 d
    if [ -n "${TOKIO_SRC:-}" ]; then
        d=$TOKIO_SRC/tokio-$ver
    else
        d=$(ls -d "$ROOT"/.cache/crates/*/tokio-"$ver" 2>/dev/null | head -n1 || true)
    fi
    [ -n "$d" ] && [ -f "$d/Cargo.toml" ] ||
        die "tokio $ver: no pristine source (run 'make deps', or set TOKIO_SRC)"
    echo "$d"
}

# copy SRC DST: a clean copy of a crate tree
copy() { mkdir -p "$2" && (cd "$1" && tar -cf - --exclude=./target .) | (cd "$2" && tar -xf -); }

# mkdiff A B: unified diff of two trees, paths a/… b/…, no timestamps
mkdiff() {
    local parent rc=0
    parent=$(mktemp -d)
    ln -s "$1" "$parent/a"
    ln -s "$2" "$parent/b"
    (cd "$parent" && LC_ALL=C diff -Nrup a b > diff.out) || rc=$?
    [ $rc -le 1 ] || die "diff failed ($rc)"
    sed -E 's#^(---|\+\+\+) ([^\t]*)\t.*#\1 \2#' "$parent/diff.out"
    rm -rf "$parent"
}

unpack() { # unpack MINOR DIR
    local minor=$1 dir=$2 dirname first src
    dirname=$(line_field "$minor" 2)
    first=$(line_field "$minor" 3)
    src=$(pristine "$first")
    [ ! -e "$dir/a" ] && [ ! -e "$dir/b" ] || die "$dir/a or $dir/b exists already"
    copy "$src" "$dir/a"
    copy "$src" "$dir/b"
    if [ -s "$HERE/$dirname/usdt-probes.patch" ]; then
        patch -s -d "$dir/b" -p1 --fuzz=0 --no-backup-if-mismatch < "$HERE/$dirname/usdt-probes.patch" ||
            die "$dirname/usdt-probes.patch does not apply to tokio $first"
    fi
    mkdir -p "$(dirname "$dir/b/$MODULE")"
    cp "$HERE/common/usdt.rs" "$dir/b/$MODULE"
}

write_patch() { # write_patch MINOR DIR [--check]
    local minor=$1 dir=$2 check=${3:-} dirname out new
    dirname=$(line_field "$minor" 2)
    out=$HERE/$dirname/usdt-probes.patch
    cp "$HERE/common/usdt.rs" "$dir/b/$MODULE"
    new=$(mktemp)
    mkdiff "$(cd "$dir/a" && pwd)" "$(cd "$dir/b" && pwd)" > "$new"
    [ -s "$new" ] || die "$minor: the trees do not differ"
    if [ "$check" = --check ]; then
        if ! cmp -s "$new" "$out"; then
            echo "regen: $dirname/usdt-probes.patch is stale (run probes-patch/regen.sh $minor)" >&2
            rm -f "$new"
            return 1
        fi
        rm -f "$new"
    else
        mkdir -p "$HERE/$dirname"
        mv "$new" "$out"
        echo "regen: wrote $dirname/usdt-probes.patch ($(grep -c '^+++ ' "$out") files)"
    fi
}

check_applies() { # check_applies MINOR
    local minor=$1 dirname ver src
    dirname=$(line_field "$minor" 2)
    for ver in $(tested "$minor"); do
        src=$(pristine "$ver")
        patch -s -d "$src" -p1 --fuzz=0 --dry-run < "$HERE/$dirname/usdt-probes.patch" > /dev/null ||
            die "$dirname/usdt-probes.patch does not apply with --fuzz=0 to tokio $ver"
        echo "regen: $dirname/usdt-probes.patch applies to tokio $ver"
    done
}

refresh() { # refresh [--check] MINOR...
    local check="" minor tmp rc=0
    if [ "${1:-}" = --check ]; then check=--check; shift; fi
    [ $# -gt 0 ] || set -- $(awk 'NF { print $1 }' "$HERE/versions")
    for minor in "$@"; do
        tmp=$(mktemp -d)
        unpack "$minor" "$tmp"
        write_patch "$minor" "$tmp" $check || rc=1
        rm -rf "$tmp"
        [ $rc = 0 ] && check_applies "$minor"
    done
    return $rc
}

case "${1:-}" in
    unpack) [ $# = 3 ] || die "usage: regen.sh unpack MINOR DIR"; unpack "$2" "$3"
            echo "regen: edit $3/b, then: probes-patch/regen.sh diff $2 $3" ;;
    diff)   [ $# = 3 ] || die "usage: regen.sh diff MINOR DIR"; write_patch "$2" "$3"; check_applies "$2" ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' ;;
    *)      refresh "$@" ;;
esac
