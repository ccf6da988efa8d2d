#!/bin/bash
# Intent: the SDT argument grammar is parsed completely and exactly.
#  - hand-written notes (hand_args.c): every register alias (%rax/%eax/%ax/%al/%ah, %sil,
#    %r9d/%r10w/%r11b/%r12l, %xmm), disp(base), base+index*scale, no base, rip-relative with
#    a symbol or a number, absolute symbol/number, constants in every base, floats, the
#    size-less v1 form, no arguments; the i386 set — all equal to hand_expected.txt.
#  - compiler-made operands (sys/sdt.h, gcc): -O0 stack slots, -O2 registers, constants,
#    SIB, rip-relative globals, absolute globals (i386 non-PIE), @GOTOFF (i386 PIC), with
#    sizes and signedness matching the C types, and symbols resolved to their nm address.
#  - an x86_64 register in an i386 file is refused (exit 4, one line naming it).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/notes_lib.sh"
need_fixtures hand hand32 hand32_bad ops_O0 ops_O2 ops_O2_nopie ops32_O0 ops32_O2 ops32_O2_nopie
FMT="$ROOT/tests/fixtures/notes/args_fmt.py"

for f in hand hand32; do "$TRACER" list --json "$FX/$f" | python3 "$FMT"; done > "$TMPD/hand.txt"
if diff -u "$ROOT/tests/fixtures/notes/hand_expected.txt" "$TMPD/hand.txt"; then
    ok "hand-written arguments parse exactly as hand_expected.txt ($(wc -l < "$TMPD/hand.txt") args)"
else
    not_ok "hand-written arguments differ from hand_expected.txt"
fi
"$TRACER" list --json "$FX/hand" > "$TMPD/hand.json"
check_eq "note with no arguments: args \"\" and 0 parsed" '"" 0' \
    "$(jq -r '.[] | select(.name=="empty") | "\"\(.args)\" \(.parsed_args|length)"' "$TMPD/hand.json")"
symaddr=$(nm "$FX/hand" | awk '$3=="hand_sym"{print $1}')
check_eq "hand_sym(%rip) resolves to nm's address" "$((16#$symaddr))" \
    "$(jq '[.[] | select(.name=="rip") | .parsed_args[0].symbol_address][0]' "$TMPD/hand.json")"
check_eq "2^64-1 constant written exactly" 1 \
    "$(grep -c '"value":18446744073709551615' "$TMPD/hand.json")"

rc=$(run_tet "$TMPD/o" "$TMPD/e" list "$FX/hand32_bad")
check_eq "i386 file with %rax: exit 4" 4 "$rc"
check_eq "i386 file with %rax: one stderr line" 1 "$(wc -l < "$TMPD/e")"
check "i386 file with %rax: names file, probe and reason" \
    grep -q "hand32_bad: hand:bad32: argument #1 '8@%rax': x86_64 register in an i386 file" "$TMPD/e"
check_eq "i386 file with %rax: nothing on stdout" 0 "$(wc -c < "$TMPD/o")"

# compiler-made operands; q FILE NOTE JQ-EXPR
q() { "$TRACER" list --json "$FX/$1" | jq -r --arg n "$2" "[.[] | select(.name==\$n)][0] | $3"; }
sizes='[.parsed_args[] | "\(if .signed then "s" else "u" end)\(.size)"] | join(" ")'
check_eq "-O0: every ops:regs argument is a stack slot off %rbp" "true" \
    "$(q ops_O0 regs '[.parsed_args[] | .kind=="mem" and .base=="rbp"] | all')"
check_eq "-O0 i386: every ops:regs argument is a stack slot off %ebp" "true" \
    "$(q ops32_O0 regs '[.parsed_args[] | .kind=="mem" and .base=="ebp"] | all')"
check_eq "-O2: every ops:regs argument is a register" "true" \
    "$(q ops_O2 regs '[.parsed_args[] | .kind=="reg"] | all')"
check_eq "sizes/signs follow the C types (long,int,short,schar,uchar,ptr,int)" \
    "s8 s4 s2 s1 u1 u8 s4" "$(q ops_O2 regs "$sizes")"
check_eq "same at -O0" "s8 s4 s2 s1 u1 u8 s4" "$(q ops_O0 regs "$sizes")"
check_eq "i386: pointer and long are 4 bytes" "s4 s4 s2 s1 u1 u4 s4" "$(q ops32_O2 regs "$sizes")"
check_eq "casts: (schar,ushort,int,ull)" "s1 u2 s4 u8" "$(q ops_O2 sizes "$sizes")"
for f in ops_O0 ops_O2 ops32_O2; do
    check_eq "$f: constants 42 and -7" "const:42 const:-7" \
        "$(q $f consts '[.parsed_args[] | "\(.kind):\(.value)"] | join(" ")')"
done
check_eq "-O2 PIE: p[i] is base+index*8 (SIB)" "mem true true 8" \
    "$(q ops_O2 sib '.parsed_args[0] | "\(.kind) \(.base != null) \(.index != null) \(.scale)"')"
check_eq "-O2 i386: p[i] is base+index*4 (SIB)" "mem true true 4" \
    "$(q ops32_O2 sib '.parsed_args[0] | "\(.kind) \(.base != null) \(.index != null) \(.scale)"')"
gint=$(nm "$FX/ops_O2" | awk '$3=="g_int"{print $1}')
check_eq "-O2 PIE: g_int is rip-relative, symbol resolved to nm's address" \
    "true g_int $((16#$gint))" \
    "$(q ops_O2 global '.parsed_args[0] | "\(.rip_relative) \(.symbol) \(.symbol_address)"')"
garr=$(nm "$FX/ops_O2_nopie" | awk '$3=="g_arr"{print $1}')
check_eq "-O2 non-PIE: g_arr[i] is sym(,%index,8), no base" "null true 8 g_arr $((16#$garr))" \
    "$(q ops_O2_nopie arr '.parsed_args[0] | "\(.base) \(.index != null) \(.scale) \(.symbol) \(.symbol_address)"')"
gint32=$(nm "$FX/ops32_O2_nopie" | awk '$3=="g_int"{print $1}')
check_eq "i386 non-PIE: g_int is an absolute memory operand" "mem null null g_int $((16#$gint32))" \
    "$(q ops32_O2_nopie global '.parsed_args[0] | "\(.kind) \(.base) \(.index) \(.symbol) \(.symbol_address)"')"
gint32p=$(nm "$FX/ops32_O2" | awk '$3=="g_int"{print $1}')
check_eq "i386 PIC: g_int@GOTOFF(%reg), symbol resolved without @GOTOFF" "g_int@GOTOFF $((16#$gint32p))" \
    "$(q ops32_O2 global '.parsed_args[0] | "\(.symbol) \(.symbol_address)"')"
check_eq "i386 PIC: 4+g_arr@GOTOFF(%ecx,%edx,4) keeps the +4" "4 4" \
    "$(q ops32_O2 arr '.parsed_args[1] | "\(.offset) \(.scale)"')"
check_eq "ops32 files are ELF class 32" "32" "$(q ops32_O2 regs '.elf_class')"
finish
