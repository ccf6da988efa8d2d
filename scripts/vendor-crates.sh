#!/bin/bash
# vendor-crates.sh SUITE [ROOT_PACKAGE...]
#
# Makes a cargo "directory" source of Debian's packaged Rust crates for one Debian suite
# (bookworm → tokio 1.24, trixie → 1.43, sid → 1.53; sid-console: sid's console-subscriber
# closure, for `make bench`'s tokio-console build and the tests' console demo app; sid-uring:
# sid's tokio-uring closure for the tokio-1.53-uring line) under .cache/crates/SUITE/, without
# touching the system: a private apt configuration (own lists, own empty dpkg status) whose
# mirror is read from the system's apt sources at run time, `apt-get download`, `dpkg -x`.
#
# The package closure is pinned in crates/SUITE.pkgs ("name version" lines). When a pinned
# version has left the mirror (sid moves), the closure is resolved afresh and the script says so.
# With --update the pinned list is rewritten from a fresh resolve.
set -euo pipefail

die() { echo "vendor-crates: $*" >&2; exit 1; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
UPDATE=0
if [ "${1:-}" = "--update" ]; then UPDATE=1; shift; fi
SUITE=${1:-}; [ -n "$SUITE" ] || die "usage: vendor-crates.sh [--update] SUITE"
shift
case "$SUITE" in
    bookworm|trixie|sid|sid-console|sid-uring) ;;
    *) die "unknown suite '$SUITE' (supported: bookworm trixie sid sid-console sid-uring)";;
esac
DIST=${SUITE%%-*}   # the Debian suite the packages come from
PINS="$ROOT/crates/$SUITE.pkgs"
ROOTS_FILE="$ROOT/crates/$SUITE.roots"
[ -f "$ROOTS_FILE" ] || die "$ROOTS_FILE: missing root package list"
mapfile -t ROOTS < <(grep -v "^#" "$ROOTS_FILE" | grep .)

CACHE="$ROOT/.cache/crates"
OUT="$CACHE/$SUITE"
STAMP="$OUT/.stamp"
if [ $UPDATE = 0 ] && [ -f "$STAMP" ] && [ -f "$PINS" ] && cmp -s "$STAMP" "$PINS"; then
    exit 0
fi

# The mirror: first deb822 URIs of the system's Debian sources, or the first one-line "deb" entry.
mirror() {
    local m=""
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        grep -qiE '^Suites:.*\b(bookworm|trixie|sid|stable|unstable)\b' "$f" || continue
        m=$(awk 'tolower($1)=="uris:"{print $2; exit}' "$f")
        [ -n "$m" ] && break
    done
    if [ -z "$m" ] && [ -f /etc/apt/sources.list ]; then
        m=$(awk '$1=="deb" { for (i=2;i<=NF;i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' /etc/apt/sources.list)
    fi
    [ -n "$m" ] || die "no Debian mirror found in /etc/apt/sources.list{,.d}"
    echo "$m"
}

APTDIR="$CACHE/apt-$SUITE"
mkdir -p "$APTDIR"/{lists/partial,archives/partial,cache,etc,debs}
: > "$APTDIR/status"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$KEYRING" ] || die "$KEYRING: missing (install debian-archive-keyring)"
echo "deb [signed-by=$KEYRING] $(mirror) $DIST main" > "$APTDIR/etc/sources.list"

apt_() {
    apt-get -q -o Dir::State::Lists="$APTDIR/lists" -o Dir::State::status="$APTDIR/status" \
        -o Dir::Cache="$APTDIR/cache" -o Dir::Cache::Archives="$APTDIR/archives" \
        -o Dir::Etc::SourceList="$APTDIR/etc/sources.list" -o Dir::Etc::SourceParts=/dev/null \
        -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null \
        -o APT::Architecture=amd64 -o APT::Install-Recommends=0 -o Debug::NoLocking=1 "$@"
}

echo "vendor-crates: $SUITE: updating private package lists" >&2
apt_ update >"$APTDIR/update.log" 2>&1 || { tail -5 "$APTDIR/update.log" >&2; die "$SUITE: apt-get update failed"; }

resolve() {
    apt_ -s install "${ROOTS[@]}" > "$APTDIR/resolve.log" 2>&1 \
        || { tail -5 "$APTDIR/resolve.log" >&2; die "$SUITE: cannot resolve ${ROOTS[*]}"; }
    awk '$1=="Inst" && $2 ~ /^librust-/ { v=$3; gsub(/[()]/,"",v); print $2, v }' "$APTDIR/resolve.log" | sort
}

if [ $UPDATE = 1 ] || [ ! -f "$PINS" ]; then
    resolve > "$PINS.new"; mv "$PINS.new" "$PINS"
    echo "vendor-crates: $SUITE: wrote $(wc -l < "$PINS") pinned packages to crates/$SUITE.pkgs" >&2
fi

LIST="$APTDIR/want.pkgs"
cp "$PINS" "$LIST"
rm -f "$APTDIR"/debs/*.deb
download() {
    local pkgs
    mapfile -t pkgs < <(awk '{print $1 "=" $2}' "$1")
    (cd "$APTDIR/debs" && apt_ download "${pkgs[@]}") > "$APTDIR/download.log" 2>&1
}
if ! download "$LIST"; then
    echo "vendor-crates: WARNING: $SUITE: a pinned package has left the mirror ($(grep -m1 -E '^E:' "$APTDIR/download.log" | cut -c1-200 || true)); resolving afresh — the build may differ from the pinned Cargo.lock" >&2
    resolve > "$LIST"
    rm -f "$APTDIR"/debs/*.deb
    download "$LIST" || { tail -5 "$APTDIR/download.log" >&2; die "$SUITE: download failed"; }
fi

TMP="$CACHE/.x-$SUITE"
rm -rf "$TMP" "$OUT.new"; mkdir -p "$TMP" "$OUT.new"
for d in "$APTDIR"/debs/*.deb; do dpkg -x "$d" "$TMP"; done
REG="$TMP/usr/share/cargo/registry"
[ -d "$REG" ] || die "$SUITE: packages held no crates"
mv "$REG"/* "$OUT.new"/
rm -rf "$TMP" "$OUT"
mv "$OUT.new" "$OUT"
cp "$LIST" "$STAMP"
echo "vendor-crates: $SUITE: $(ls "$OUT" | wc -l) crates in .cache/crates/$SUITE" >&2
