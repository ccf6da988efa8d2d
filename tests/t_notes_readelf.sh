#!/bin/bash
# Intent: `list --json` finds exactly the notes `readelf -n` shows — same provider, name,
# location, base, semaphore and argument string, same count — on real binaries nobody here
# wrote (Debian's python3.11 and libstdc++, plus every other packaged file with SDT notes
# found in the usual places: libpython, binutils, a JVM…), on our compiled fixtures (PIE,
# non-PIE, shared library, i386, -O0/-O2) and on synthetic 32/64-bit little/big-endian
# files, prelinked or not.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/notes_lib.sh"
need_fixtures ops_O2 synth_64be.elf
X="$ROOT/tests/fixtures/notes/readelf_xcheck.py"

xcheck() {  # xcheck FILE: list --json vs readelf -n
    local f=$1 n
    if ! timeout 60 "$TRACER" list --json "$f" > "$TMPD/l.json" 2> "$TMPD/e"; then
        not_ok "$f: list failed: $(head -1 "$TMPD/e")"; return
    fi
    if n=$(python3 "$X" "$f" "$TMPD/l.json"); then
        ok "$f: $n notes, same as readelf -n"
    else
        not_ok "$f: differs from readelf -n"; echo "$n"
    fi
}

# real binaries that must be here (python3 and g++ are in scripts/packages.txt)
required=(/usr/bin/python3.11 "$(readlink -f /usr/lib/x86_64-linux-gnu/libstdc++.so.6)")
for f in "${required[@]}"; do
    [ -r "$f" ] || die_test "$f missing (Debian python3.11 / libstdc++6 expected)"
    xcheck "$f"
done
# any other packaged file with SDT notes in the usual places
extra=0
for f in /usr/lib/x86_64-linux-gnu/libpython3*.so.1.0 /usr/bin/x86_64-linux-gnu-ld.gold \
         /usr/bin/x86_64-linux-gnu-gcc-12 /usr/lib/jvm/*/lib/server/libjvm.so; do
    [ -f "$f" ] && readelf -n "$f" 2>/dev/null | grep -q NT_STAPSDT || continue
    xcheck "$f"; extra=$((extra+1))
done
echo "# $extra other packaged binaries with notes cross-checked"

for f in ops_O0 ops_O2 ops_O2_nopie ops32_O0 ops32_O2 ops32_O2_nopie libops.so hand hand32 \
         tokio_probes tokio_nop1 tokio_partial libtokioprobes.so tokio_upstream tokio_oxide; do
    xcheck "$FX/$f"
done
for s in 64le 64be 32le 32be; do
    xcheck "$FX/synth_$s.elf"
    xcheck "$FX/synth_${s}_prelink.elf"
done
finish
