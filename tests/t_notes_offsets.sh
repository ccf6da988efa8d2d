#!/bin/bash
# Intent: the computed values a tracer attaches with are right, checked independently:
#  - every site's file offset holds the nop the note promises (byte 0x90, or 0f 1f 44 00 00),
#    in PIE, non-PIE, shared-library and i386 files, and equals the offset derived from
#    `readelf -S` (.text sh_addr/sh_offset);
#  - every semaphore address is the nm address of PROVIDER_NAME_semaphore and its offset
#    lies in .probes (readelf -S), in a writable segment;
#  - the .stapsdt.base prelink adjustment: a synthetic file moved by 0x200000 after linking
#    gives address = location + 0x200000 and the same file offsets as the unmoved file,
#    in 32/64-bit, little/big-endian;
#  - an inlined probe gives one note per copy.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/notes_lib.sh"
need_fixtures ops_O2 synth_64le_prelink.elf

sites_ok() {  # every note's site bytes and .text-derived offset
    local f=$1
    "$TRACER" list --json "$f" > "$TMPD/l.json" || { not_ok "$f: list failed"; return; }
    python3 - "$f" "$TMPD/l.json" <<'PY'
import json, subprocess, sys
f, js = sys.argv[1], json.load(open(sys.argv[2]))
data = open(f, "rb").read()
secs = {}
for line in subprocess.run(["readelf", "-SW", f], capture_output=True, text=True).stdout.splitlines():
    p = line.replace("[ ", "[").split()
    if len(p) > 5 and p[0].startswith("[") and p[1].startswith("."):
        secs[p[1]] = (int(p[3], 16), int(p[4], 16), int(p[5], 16))
bad = 0
for n in js:
    off, site = n["file_offset"], n["site"]
    b = data[off:off + 6]
    want = {"nop1": b[:1] == b"\x90", "nop5": b[:5] == b"\x0f\x1f\x44\x00\x00",
            "nop+nop5": b == b"\x90\x0f\x1f\x44\x00\x00"}.get(site, False)
    addr, size_off = secs[".text"][0], secs[".text"][1]
    text_off = n["address"] - addr + size_off
    in_text = secs[".text"][0] <= n["address"] < secs[".text"][0] + secs[".text"][2]
    if not want or (in_text and text_off != off):
        bad += 1
        print("bad site", n["name"], hex(off), site, b.hex(), file=sys.stderr)
    if n["semaphore"]:
        pa, po, ps = secs[".probes"]
        if not (pa <= n["semaphore_address"] < pa + ps) or n["semaphore_offset"] != n["semaphore_address"] - pa + po:
            bad += 1
            print("bad semaphore", n["name"], file=sys.stderr)
print(len(js), bad)
PY
}
for f in ops_O0 ops_O2 ops_O2_nopie ops32_O2 ops32_O2_nopie libops.so tokio_probes tokio_nop1 \
         libtokioprobes.so tokio_upstream; do
    r=$(sites_ok "$FX/$f")
    set -- $r
    if [ "${1:-0}" -gt 0 ] && [ "${2:-1}" = 0 ]; then ok "$f: $1 sites/semaphores at the right file offsets"
    else not_ok "$f: sites/semaphores wrong ($r)"; fi
done

# semaphores against nm
for f in ops_O2 ops32_O2 tokio_probes; do
    "$TRACER" list --json "$FX/$f" | jq -r '.[] | select(.semaphore != 0) | "\(.provider)_\(.name)_semaphore \(.semaphore_address)"' | sort -u > "$TMPD/sem"
    nm "$FX/$f" | while read -r a t n; do
        [[ $n == *_semaphore ]] && echo "$n $((16#$a))"; done | sort -u > "$TMPD/nm"
    check "$f: semaphore addresses equal nm's ($(wc -l < "$TMPD/sem"))" \
        bash -c "[ -s '$TMPD/sem' ] && diff -u '$TMPD/nm' '$TMPD/sem'"
done
check_eq "ops:start without semaphore use still has one (sdt.h semaphores), opsema:start has one" \
    "1" "$("$TRACER" list --json "$FX/ops_O2" opsema:start | jq '[.[] | select(.semaphore != 0)] | length')"

# prelink
for s in 64le 64be 32le 32be; do
    "$TRACER" list --json "$FX/synth_$s.elf" > "$TMPD/a.json"
    "$TRACER" list --json "$FX/synth_${s}_prelink.elf" > "$TMPD/b.json"
    check_eq "$s unmoved: address = location" "true" "$(jq '[.[] | .address == .location] | all' "$TMPD/a.json")"
    check_eq "$s prelinked: address = location + 0x200000, semaphore too" "true" \
        "$(jq '[.[] | .address == .location + 2097152 and (.semaphore == 0 or .semaphore_address == .semaphore + 2097152)] | all' "$TMPD/b.json")"
    check_eq "$s prelinked: same file offsets" \
        "$(jq -c '[.[] | [.file_offset, .semaphore_offset]]' "$TMPD/a.json")" \
        "$(jq -c '[.[] | [.file_offset, .semaphore_offset]]' "$TMPD/b.json")"
    # mkelf: note 0 at 0x10400, base 0x10f00, semaphore 0x21000 (file 0x1000), site file 0x400
    check_eq "$s: exact values decoded (byte order, class)" "66560 69376 135168 4096 1024" \
        "$(jq -r '.[0] | "\(.location) \(.base) \(.semaphore) \(.semaphore_offset) \(.file_offset)"' "$TMPD/a.json")"
done
check_eq "big-endian file says so" "big 32" "$(jq -r '.[0] | "\(.byte_order) \(.elf_class)"' < <("$TRACER" list --json "$FX/synth_32be.elf"))"

check_eq "inlined probe ops:inl: two notes, two addresses" "2 2" \
    "$("$TRACER" list --json "$FX/ops_O2" ops:inl | jq -r '"\(length) \([.[].address] | unique | length)"')"
finish
