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
#
# The suites of one Debian suite (sid, sid-uring, sid-console) share its pool,
# .cache/crates/pool-DIST: the package lists (updated once per `make deps`: scripts/deps.sh sets
# VENDOR_RUN, and a run that finds the lists updated under the same VENDOR_RUN uses them; without
# it they are always updated), the downloaded .debs (a file name is a package version: only the
# missing ones are downloaded). Each suite extracts its own .debs (dpkg -x, in name order: on this
# file system extracting in parallel, or linking from per-package extractions, was no faster).
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
POOL="$CACHE/pool-$DIST"
mkdir -p "$APTDIR"/{archives/partial,cache,etc} "$POOL"/{lists/partial,debs}
rm -rf "$APTDIR/lists" "$APTDIR/debs"   # the layout before the pool
: > "$APTDIR/status"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$KEYRING" ] || die "$KEYRING: missing (install debian-archive-keyring)"
echo "deb [signed-by=$KEYRING] $(mirror) $DIST main" > "$APTDIR/etc/sources.list"

apt_() {
    apt-get -q -o Dir::State::Lists="$POOL/lists" -o Dir::State::status="$APTDIR/status" \
        -o Dir::Cache="$APTDIR/cache" -o Dir::Cache::Archives="$APTDIR/archives" \
        -o Dir::Etc::SourceList="$APTDIR/etc/sources.list" -o Dir::Etc::SourceParts=/dev/null \
        -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null \
        -o APT::Architecture=amd64 -o APT::Install-Recommends=0 -o Debug::NoLocking=1 "$@"
}

if [ -n "${VENDOR_RUN:-}" ] && [ "$(cat "$POOL/lists/.vendor-run" 2>/dev/null)" = "$VENDOR_RUN" ] &&
   cmp -s "$POOL/lists/.sources.list" "$APTDIR/etc/sources.list"; then
    echo "vendor-crates: $SUITE: $DIST's package lists updated by this run" >&2
else
    echo "vendor-crates: $SUITE: updating private package lists" >&2
    rm -f "$POOL/lists/.vendor-run"
    apt_ update >"$APTDIR/update.log" 2>&1 || { tail -5 "$APTDIR/update.log" >&2; die "$SUITE: apt-get update failed"; }
    cp "$APTDIR/etc/sources.list" "$POOL/lists/.sources.list"
    [ -z "${VENDOR_RUN:-}" ] || echo "$VENDOR_RUN" > "$POOL/lists/.vendor-run"
fi

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
# debs LIST: the pool's .deb of every "name version" of LIST, in name order (missing:NAME=VERSION
# when it has none); apt names a downloaded file name_version_arch.deb, an epoch's colon as %3a
debs() {
    local n v f
    while read -r n v; do
        f=("$POOL/debs/${n}_${v//:/%3a}_"*.deb)
        if [ -f "${f[0]}" ]; then echo "${f[0]}"; else echo "missing:$n=$v"; fi
    done < "$1" | LC_ALL=C sort
}
# download LIST: the packages of LIST the pool lacks, downloaded into it (through a directory of
# this suite's: a download that fails leaves nothing in the pool)
download() {
    local pkgs dl="$APTDIR/download"
    mapfile -t pkgs < <(debs "$1" | sed -n 's/^missing://p')
    rm -rf "$dl" && mkdir -p "$dl"
    echo "vendor-crates: $SUITE: $(wc -l < "$1") packages, $(( $(wc -l < "$1") - ${#pkgs[@]} )) already in the pool" >&2
    [ ${#pkgs[@]} = 0 ] && return 0
    (cd "$dl" && apt_ download "${pkgs[@]}") > "$APTDIR/download.log" 2>&1 || return 1
    mv "$dl"/*.deb "$POOL/debs/"
}
if ! download "$LIST"; then
    echo "vendor-crates: WARNING: $SUITE: a pinned package has left the mirror ($(grep -m1 -E '^E:' "$APTDIR/download.log" | cut -c1-200 || true)); resolving afresh — the build may differ from the pinned Cargo.lock" >&2
    resolve > "$LIST"
    download "$LIST" || { tail -5 "$APTDIR/download.log" >&2; die "$SUITE: download failed"; }
fi
mapfile -t DEBS < <(debs "$LIST")
[ ${#DEBS[@]} -gt 0 ] || die "$SUITE: no packages"
for d in "${DEBS[@]}"; do [ -f "$d" ] || die "$SUITE: ${d#missing:} is not in the pool after its download"; done

TMP="$CACHE/.x-$SUITE"
rm -rf "$TMP" "$OUT.new"; mkdir -p "$TMP" "$OUT.new"
for d in "${DEBS[@]}"; do dpkg -x "$d" "$TMP"; done
REG="$TMP/usr/share/cargo/registry"
[ -d "$REG" ] || die "$SUITE: packages held no crates"
mv "$REG"/* "$OUT.new"/
rm -rf "$TMP" "$OUT"
mv "$OUT.new" "$OUT"
cp "$LIST" "$STAMP"
echo "vendor-crates: $SUITE: $(ls "$OUT" | wc -l) crates in .cache/crates/$SUITE" >&2
