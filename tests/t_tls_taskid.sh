#!/bin/bash
# Intent: `check` locates Tokio's thread-local task id (CONTEXT.current_task_id; the
# foundation of issue 27's sampling mode, tracer/discover/tlsctx.c) right, and two tools no one
# here wrote agree with it.
# (1) readelf: check's TLS block offset and CONTEXT offset are the ELF file's (PT_TLS size and
#     alignment, the STT_TLS symbol's value), on the stock and usdt builds of the three Debian
#     lines; the layout is `tagged` (Option<Id(u64)>) on 1.24, `niche` (Option<Id(NonZeroU64)>)
#     on 1.43 and 1.53.
# (2) gdb, attached to the running stock service of each line: for every thread, the address
#     libthread_db gives for CONTEXT's symbol is fs_base + check's context_offset; stopped at
#     three entries of TaskIdGuard::enter(id) (a function the locator does not read), after it
#     returns the slot at fs_base + id_offset holds that id (and the tag reads 1 on 1.24).
# (3) bpftrace on the usdt builds of 1.24 and 1.53 (both layouts): a cpu-clock sampler reads
#     the slot at curtask->thread.fsbase + id_offset while the USDT probes task_poll_begin/end
#     say which task the thread polls. Inside polls the slot is the polled task on >= 80 % of
#     the samples (the rest read the thread's value outside polls: poll_begin fires before
#     Tokio's TaskIdGuard is entered), and anything else on <= 2 %; outside polls a thread
#     reads one value (>= 75 % of >= 20 samples: a few hundred samples at most, and a loaded
#     machine shifts them; 87.5 % of 48 was seen): None (0) on the main thread, and on a worker the id of the
#     blocking task that runs its worker loop (multi-thread workers are launched by
#     spawn_blocking: a worker's slot is never None), distinct per worker, two workers.
# (4) A stripped copy gets method none with the reason, never an offset; so do copies whose
#     accessor was patched to store outside CONTEXT, to address another CONTEXT, or to begin
#     with a byte that is no x86-64 instruction, and copies whose ELF numbers are hostile
#     (PT_TLS alignment 3, size 2 GiB, start not aligned; CONTEXT's st_value 2^63; the
#     accessor's st_size 0); check's verdict stays the same, and the ASan + UBSan build reads
#     them without a report.
# (5) The DWARF method (the variable's TLS location, the member path of its type) on C++
#     stand-ins (tests/fixtures/tls/fake_context.cc: the same namespaces and mangled names) that
#     print the field's real offset from the thread pointer: with DWARF method dwarf and the
#     code agreeing, tagged too; without DWARF method code; without the accessor symbol the
#     DWARF alone; an accessor storing elsewhere than the DWARF's field is refused; the ASan +
#     UBSan build gives the same answers without a report. A DWARF patched into a type that
#     contains itself five times over is refused ("DWARF unusable") within 20 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_file "$TRACER" "tracer binary"
command -v gdb > /dev/null || die_test "gdb missing (scripts/packages.txt; make deps)"
command -v bpftrace > /dev/null || die_test "bpftrace missing (make deps)"
command -v readelf > /dev/null || die_test "readelf missing (binutils)"

slot() { jq -r ".task_id_slot.$2 // empty" "$TMPD/check.$1.json"; }

# ---- (1) readelf -------------------------------------------------------------------------------
for line in 1.24 1.43 1.53; do
    for kind in stock usdt; do
        need_sample "$line" "$kind"
        l="$line-$kind"
        "$TRACER" check --json "$SAMPLE" > "$TMPD/check.$l.json"
        check_eq "$l: located from code" code "$(slot "$l" method)"
        want=niche; [ "$line" = 1.24 ] && want=tagged
        check_eq "$l: layout" "$want" "$(slot "$l" layout)"
        read -r memsz align < <(readelf -lW "$SAMPLE" | awk '$1 == "TLS" { print $6, $NF }')
        read -r symv syms < <(readelf -sW "$SAMPLE" | awk '$4 == "TLS" && $8 ~ /7context7CONTEXT/ { print "0x" $2, $3 }')
        [ -n "${memsz:-}" ] && [ -n "${symv:-}" ] && [ "$((align))" -gt 0 ] || { not_ok "$l: readelf gives PT_TLS and CONTEXT"; continue; }
        memsz=$((memsz)) align=$((align)) symv=$((symv))
        block=$(( -((memsz + align - 1) / align * align) ))
        check_eq "$l: TLS block = -round_up(PT_TLS memsz $memsz, align $align) (readelf)" "$block" "$(slot "$l" tls_block_offset)"
        check_eq "$l: CONTEXT = block + its STT_TLS symbol's value $symv (readelf)" "$(( block + symv ))" "$(slot "$l" context_offset)"
        check "$l: the id lies inside CONTEXT's $syms bytes" \
            test "$(( $(slot "$l" id_offset) + 8 ))" -le "$(( block + symv + syms ))" -a "$(slot "$l" id_offset)" -ge "$(( block + symv ))"
    done
done

# ---- (2) gdb on the stock service --------------------------------------------------------------
for line in 1.24 1.43 1.53; do
    l="$line-stock"
    need_sample "$line" stock
    ctx=$(slot "$l" context_offset) id=$(slot "$l" id_offset) tag=$(slot "$l" tag_offset)
    sym=$(readelf -sW "$SAMPLE" | awk '$4 == "TLS" && $8 ~ /7context7CONTEXT/ { print $8; exit }')
    enter=$(readelf -sW "$SAMPLE" | awk '$4 == "FUNC" && $8 ~ /11TaskIdGuard5enter/ { print $8; exit }')
    [ -n "$sym" ] && [ -n "$enter" ] && [ -n "$id" ] || { not_ok "$l: CONTEXT ($sym), TaskIdGuard::enter ($enter), slot ($id)"; continue; }
    # niche (no tag word): gdb prints 1 in the tag's column, and the message says n/a
    tagexpr=1 tagsay="tag n/a (niche)"
    [ -n "$tag" ] && tagexpr="*(unsigned long *)(\$fs_base + $tag)" tagsay="tag 1"
    {
        printf 'set pagination off\nset confirm off\nset language c\n'
        printf 'thread apply all printf "TLS %%ld %%ld\\n", $fs_base, (long)&'"'%s'"'\n' "$sym"
        for i in 1 2 3; do
            printf 'break *&'"'%s'"'\ncontinue\nset scheduler-locking on\nprintf "ARG %%lu\\n", $rdi\ndelete\nfinish\n' "$enter"
            printf 'printf "SLOT %%lu %%lu\\n", *(unsigned long *)($fs_base + %d), %s\n' "$id" "$tagexpr"
            printf 'set scheduler-locking off\n'
        done
    } > "$TMPD/gdb.$l.cmd"
    start_bg "svc.$l" "$SAMPLE" serve --workers 2 --load 200 --duration 60s
    SP=$BG_PID
    wait_for_line "$TMPD/svc.$l.out" '^listening on ' 30 || not_ok "$l: service listening"
    timeout 60 gdb -p "$SP" -batch -x "$TMPD/gdb.$l.cmd" > "$TMPD/gdb.$l.out" 2>&1
    stop_pid "$SP"
    tls=$(awk -v c="$ctx" '/^TLS / { n++; if ($3 - $2 == c) ok++ } END { printf "%d/%d", ok, n }' "$TMPD/gdb.$l.out")
    check "$l: gdb: every thread's CONTEXT (libthread_db) = fs_base$ctx ($tls threads)" \
        awk -v t="$tls" 'BEGIN { split(t, a, "/"); exit !(a[2] >= 3 && a[1] == a[2]) }'
    pairs=$(awk '/^ARG / { a = $2 } /^SLOT / { printf "%s=%s/%s ", a, $2, $3 }' "$TMPD/gdb.$l.out")
    check "$l: gdb: after TaskIdGuard::enter(id) the slot holds id, $tagsay (id=slot/tag: $pairs)" \
        awk -v p="$pairs" 'BEGIN { n = split(p, a, " "); ok = 0
            for (i = 1; i <= n; i++) { split(a[i], b, "[=/]"); if (b[1] > 0 && b[1] == b[2] && b[3] == 1) ok++ }
            exit !(n == 3 && ok == 3) }'
    [ "${pairs// /}" = "" ] && sed 's/^/#   gdb: /' "$TMPD/gdb.$l.out" | tail -15
done

# ---- (3) bpftrace sampler on the usdt builds ---------------------------------------------------
bt_prog() {  # bt_prog BIN PID ID_OFF [TAG_OFF]
    echo "usdt:$1:tokio:task_poll_begin /pid == $2/ { @cur[tid] = arg0; }"
    echo "usdt:$1:tokio:task_poll_end /pid == $2/ { delete(@cur[tid]); }"
    echo "profile:hz:997 /pid == $2/ { \$fs = (int64)curtask->thread.fsbase;"
    echo "  \$v = *uptr((uint64 *)(\$fs + $3));"
    [ -n "${4:-}" ] && echo "  if (*uptr((uint64 *)(\$fs + $4)) == 0) { \$v = 0; }"
    echo "  \$c = @cur[tid];"
    echo "  if (\$c) { @in[tid, \$c == \$v ? 1 : 0, \$v] = count(); } else { @out[tid, \$v] = count(); } }"
    echo "BEGIN { printf(\"ready\\n\"); }"
    echo "interval:s:3 { exit(); }"
}
for line in 1.24 1.53; do
    l="$line-usdt"
    need_sample "$line" usdt
    start_bg "svc.$l" "$SAMPLE" serve --workers 2 --load 300 --pathology cpu_hog --duration 60s
    SP=$BG_PID
    wait_for_line "$TMPD/svc.$l.out" '^listening on ' 30 || not_ok "$l: service listening"
    bt_prog "$SAMPLE" "$SP" "$(slot "$l" id_offset)" "$(slot "$l" tag_offset)" > "$TMPD/bt.$l.bt"
    timeout 60 bpftrace -q -p "$SP" "$TMPD/bt.$l.bt" > "$TMPD/bt.$l.out" 2> "$TMPD/bt.$l.err"
    check_eq "$l: bpftrace exit 0" 0 "$?"
    stop_pid "$SP"
    python3 - "$TMPD/bt.$l.out" "$SP" > "$TMPD/bt.$l.res" << 'EOF'
import re, sys
pid = int(sys.argv[2])
ins, outs = [], {}
for ln in open(sys.argv[1]):
    m = re.match(r'@in\[(\d+), (\d), (-?\d+)\]: (\d+)', ln)
    if m:
        ins.append(tuple(map(int, m.groups())))
    m = re.match(r'@out\[(\d+), (-?\d+)\]: (\d+)', ln)
    if m:
        t, v, n = map(int, m.groups())
        outs.setdefault(t, {})[v] = n
base = {t: max(vs, key=vs.get) for t, vs in outs.items()}
n_in = sum(i[3] for i in ins)
agree = sum(i[3] for i in ins if i[1])
parent = sum(i[3] for i in ins if not i[1] and base.get(i[0]) == i[2])
other = n_in - agree - parent
n_out = sum(sum(vs.values()) for vs in outs.values())
at_base = sum(vs[base[t]] for t, vs in outs.items())
workers = [base[t] for t in base if t != pid]
print(f"in={n_in} agree={agree} parent={parent} other={other} out={n_out} out_base={at_base} "
      f"main={base.get(pid, 'none')} workers={','.join(map(str, sorted(workers)))}")
EOF
    res=$(cat "$TMPD/bt.$l.res")
    echo "# $l: $res"
    get() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<< "$res"; }
    n_in=$(get in) agree=$(get agree) other=$(get other) n_out=$(get out) at_base=$(get out_base)
    check "$l: >= 50 samples inside polls (${n_in:-none})" test "${n_in:-0}" -ge 50
    check "$l: inside polls the slot is the polled task on >= 80 % ($agree of $n_in)" \
        test "$(( ${agree:-0} * 100 ))" -ge "$(( ${n_in:-1} * 80 ))"
    check "$l: inside polls the slot is a third value (neither the task nor the thread's own) on <= 2 % ($other of $n_in)" \
        test "$(( ${other:-1000000} * 100 ))" -le "$(( ${n_in:-0} * 2 ))"
    check "$l: outside polls each thread reads one value on >= 75 % of >= 20 samples ($at_base of $n_out)" \
        test "$(( ${at_base:-0} * 100 ))" -ge "$(( ${n_out:-1} * 75 ))" -a "${n_out:-0}" -ge 20
    check_eq "$l: outside polls the main thread reads None" 0 "$(get main)"
    w=$(get workers)
    check "$l: two worker threads sampled outside polls (--workers 2: $w)" \
        python3 -c 'import sys; sys.exit(len([x for x in sys.argv[1].split(",") if x]) != 2)' "$w"
    check "$l: each worker reads its own nonzero id outside polls (its worker-loop task: $w)" \
        python3 -c 'import sys; w = sys.argv[1].split(","); sys.exit(not (w[0] and "0" not in w and len(set(w)) == len(w)))' "$w"
done

# ---- (4) refusals ------------------------------------------------------------------------------
need_sample 1.53 stock
strip -o "$TMPD/stripped" "$SAMPLE"
"$TRACER" check --json "$TMPD/stripped" > "$TMPD/check.stripped.json"
check_eq "stripped: method none" none "$(slot stripped method)"
check "stripped: the reason says stripped, and no offset is given" \
    bash -c '[[ "$(jq -r .task_id_slot.reason "$1")" == *stripped* ]] && [ "$(jq -r .task_id_slot.id_offset "$1")" = null ]' _ "$TMPD/check.stripped.json"
# accessor code that says something else: each a one-line refusal, the verdict unchanged (1)
python3 - "$SAMPLE" "$TMPD" "$(jq -r .task_id_slot.accessor "$TMPD/check.1.53-stock.json")" << 'EOF'
import struct, sys
src, out, acc = sys.argv[1], sys.argv[2], int(sys.argv[3])
b = bytearray(open(src, "rb").read())
phoff = struct.unpack_from("<Q", b, 0x20)[0]
phentsize, phnum = struct.unpack_from("<HH", b, 0x36)
fo = None
for i in range(phnum):
    typ, flags, off, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", b, phoff + i * phentsize)
    if typ == 1 and vaddr <= acc < vaddr + filesz:
        fo = off + acc - vaddr
code = bytes(b[fo:fo + 128])
lea, st = code.find(bytes.fromhex("488d80")), code.find(bytes.fromhex("48895830"))
assert lea > 0 and st > lea, "1.53 accessor: lea -X(%rax),%rax and mov %rbx,0x30(%rax) expected"
def write(name, at, new):
    c = bytearray(b)
    c[fo + at:fo + at + len(new)] = new
    open(f"{out}/{name}", "wb").write(c)
write("store-out", st + 3, b"\x60")                                   # mov %rbx,0x60(%rax)
write("lea-off", lea + 3, struct.pack("<i", struct.unpack_from("<i", code, lea + 3)[0] + 8))
write("bad-insn", 0, b"\x06")                                         # no x86-64 instruction
EOF
# the ELF's own numbers made hostile: an alignment that is no power of two, a 2 GiB TLS block,
# a PT_TLS whose start is not aligned (glibc's static and dynamic loaders place it differently),
# CONTEXT's symbol at 2^63 (signed arithmetic overflowed there once), an accessor of size 0
python3 - "$SAMPLE" "$TMPD" << 'EOF'
import struct, sys
src, out = sys.argv[1], sys.argv[2]
b = bytes(open(src, "rb").read())
phoff, shoff = struct.unpack_from("<QQ", b, 0x20)
phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", b, 0x36)
tls = [phoff + i * phentsize for i in range(phnum) if struct.unpack_from("<I", b, phoff + i * phentsize)[0] == 7]
assert len(tls) == 1, "one PT_TLS expected"
tls = tls[0]
align = struct.unpack_from("<Q", b, tls + 48)[0]
assert align >= 2, "PT_TLS alignment >= 2 expected"
def patched(name, at, fmt, value):
    c = bytearray(b)
    struct.pack_into(fmt, c, at, value)
    open(f"{out}/{name}", "wb").write(c)
patched("tls-align3", tls + 48, "<Q", 3)
patched("tls-memsz2g", tls + 40, "<Q", 1 << 31)
patched("tls-unaligned", tls + 16, "<Q", struct.unpack_from("<Q", b, tls + 16)[0] + align // 2)
syms = {}
for i in range(shnum):
    sh = shoff + i * shentsize
    if struct.unpack_from("<I", b, sh + 4)[0] != 2:          # SHT_SYMTAB
        continue
    off, size, link = struct.unpack_from("<QQI", b, sh + 24)
    entsize = struct.unpack_from("<Q", b, sh + 56)[0]
    stroff = struct.unpack_from("<Q", b, shoff + link * shentsize + 24)[0]
    for k in range(size // entsize):
        e = off + k * entsize
        n0 = stroff + struct.unpack_from("<I", b, e)[0]
        name = b[n0:b.index(b"\0", n0)]
        if b"5tokio" in name and b"7context7CONTEXT" in name and b[e + 4] & 15 == 6:
            syms.setdefault("ctx", e)
        if b"5tokio" in name and b"7context19set_current_task_id" in name and b[e + 4] & 15 == 2:
            syms.setdefault("acc", e)
assert len(syms) == 2, f"CONTEXT and set_current_task_id in .symtab expected: {syms}"
patched("ctx-value2p63", syms["ctx"] + 8, "<Q", 1 << 63)
patched("acc-size0", syms["acc"] + 16, "<Q", 0)
EOF
for m in "store-out:outside every CONTEXT symbol" "lea-off:addresses CONTEXT at" "bad-insn:instruction not understood" \
         "tls-align3:PT_TLS not understood" "tls-memsz2g:PT_TLS not understood" "tls-unaligned:is not aligned to its" \
         "ctx-value2p63:outside PT_TLS" "acc-size0:bytes long in the symbol table"; do
    f=${m%%:*} why=${m#*:}
    "$TRACER" check --json "$TMPD/$f" > "$TMPD/check.$f.json"
    rc=$?
    check "$f: method none, the reason says '$why', no offset, verdict unchanged (exit $rc)" \
        bash -c '[ "$(jq -r .task_id_slot.method "$1")" = none ] && [[ "$(jq -r .task_id_slot.reason "$1")" == *"$2"* ]] &&
                 [ "$(jq -r .task_id_slot.id_offset "$1")" = null ] && [ "$3" = 1 ]' _ "$TMPD/check.$f.json" "$why" "$rc"
    # the same with ASan + UBSan (build/asan): the decoder reads no byte it should not
    ASAN_OPTIONS="exitcode=66:detect_leaks=1:halt_on_error=1" UBSAN_OPTIONS="halt_on_error=1:exitcode=66" \
        "$BUILD/asan/tokio-ebpf-trace" check --json "$TMPD/$f" > /dev/null 2> "$TMPD/asan.$f.err"
    rc=$?
    check "$f: the sanitized build exits the same ($rc), no sanitizer report" \
        bash -c '[ "$1" = 1 ] && ! grep -qE "AddressSanitizer|runtime error|LeakSanitizer" "$2"' _ "$rc" "$TMPD/asan.$f.err"
done
"$TRACER" check --json "$FIX/fake_tokio" > "$TMPD/check.fake.json" 2>/dev/null
check_eq "fake_tokio (C, no Tokio CONTEXT): method none" none "$(slot fake method)"

# ---- (5) the DWARF method, on C++ stand-ins that print the field's real offset ------------------
for m in fake_context:dwarf:niche fake_context_tagged:dwarf:tagged fake_context_nodwarf:code:niche \
         fake_context_tagged_nodwarf:code:tagged fake_context_nosym:dwarf:niche fake_context_elsewhere:none:; do
    IFS=: read -r f method layout <<< "$m"
    need_file "$FIX/$f" "fixture $f (mk/tlsctx.mk)"
    real=$("$FIX/$f" | sed -n 's/^id_offset=//p')
    "$TRACER" check --json "$FIX/$f" > "$TMPD/check.$f.json"
    check_eq "$f: method $method" "$method" "$(slot "$f" method)"
    case $f in
    *elsewhere) check "$f: DWARF and code disagree: refused, no offset ($(slot "$f" reason))" \
                    bash -c '[[ "$1" == *disagree* ]] && [ -z "$2" ]' _ "$(slot "$f" reason)" "$(slot "$f" id_offset)" ;;
    *) check_eq "$f: id_offset = the program's own (&field - thread pointer), layout $layout" \
           "$real $layout" "$(slot "$f" id_offset) $(slot "$f" layout)" ;;
    esac
    ASAN_OPTIONS="exitcode=66:detect_leaks=1:halt_on_error=1" UBSAN_OPTIONS="halt_on_error=1:exitcode=66" \
        "$BUILD/asan/tokio-ebpf-trace" check --json "$FIX/$f" > "$TMPD/asan.$f.json" 2> "$TMPD/asan.$f.err"
    rc=$?
    check "$f: the ASan + UBSan build gives the same slot (exit $rc), no sanitizer report" \
        bash -c '[ "$1" != 66 ] && ! grep -qE "Sanitizer|runtime error" "$2" &&
                 [ "$(jq -c .task_id_slot "$3")" = "$(jq -c .task_id_slot "$4")" ]' _ "$rc" "$TMPD/asan.$f.err" "$TMPD/asan.$f.json" "$TMPD/check.$f.json"
done
check_eq "fake_context: the accessor's code agrees with the DWARF" "code agrees" "$(slot fake_context cross_check)"
check "fake_context_nosym: the DWARF alone, saying why the code gave nothing" \
    bash -c '[[ "$1" == "code: "*"not in the symbol table"* ]]' _ "$(slot fake_context_nosym cross_check)"
# hostile DWARF: every member of Context made a Context and current_task_id renamed (patched
# .debug_info of fake_context): a search of 5^12 paths, cut by the DWARF pass's budget of DIEs
# visited, in both builds: a one-line refusal within 20 s, never an offset
python3 - "$FIX/fake_context" "$TMPD" << 'EOF'
import re, struct, subprocess, sys
src, out = sys.argv[1], sys.argv[2]
b = bytes(open(src, "rb").read())
shoff = struct.unpack_from("<Q", b, 0x28)[0]
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3a)
strtab = struct.unpack_from("<Q", b, shoff + shstrndx * shentsize + 24)[0]
sec = {}
for i in range(shnum):
    sh = shoff + i * shentsize
    n0 = strtab + struct.unpack_from("<I", b, sh)[0]
    sec[b[n0:b.index(b"\0", n0)].decode()] = struct.unpack_from("<Q", b, sh + 24)[0]
info = sec[".debug_info"]
dump = subprocess.run(["readelf", "--debug-dump=info", src], capture_output=True, text=True).stdout
# Context's DIE, its sibling attribute, its members' name and type attributes (one CU at 0:
# a ref4 is then the DIE's offset in .debug_info)
die = re.search(r"<(\d)><([0-9a-f]+)>: Abbrev Number: \d+ \(DW_TAG_structure_type\)\n"
                r"(?:    <[0-9a-f]+> +DW_AT_\w+ *:.*\n)*?    <[0-9a-f]+> +DW_AT_name +: \(indirect string, offset: 0x[0-9a-f]+\): Context\n", dump)
assert die and "Compilation Unit @ offset 0:" in dump, "Context's DIE in the first CU expected"
level, ctx = int(die.group(1)), int(die.group(2), 16)
rest = dump[die.end():]
body = rest[:re.search(r"^ <%d><" % level, rest, re.M).start()]
head = dump[die.start():die.end()] + rest[:re.search(r"^ <%d><" % (level + 1), rest, re.M).start()]
sib = int(re.search(r"<([0-9a-f]+)> +DW_AT_sibling", head).group(1), 16)
types = [int(x, 16) for x in re.findall(r"<([0-9a-f]+)> +DW_AT_type", body)]
names = re.findall(r"<([0-9a-f]+)> +DW_AT_name +: \(indirect string, offset: (0x[0-9a-f]+)\): (\w+)", body)
assert len(types) == 5 and len(names) == 5 and names[2][2] == "current_task_id", (types, names)
def write(name, edits):
    c = bytearray(b)
    for at, v in edits:
        struct.pack_into("<I", c, info + at, v)
    open(f"{out}/{name}", "wb").write(c)
# every member of Context is a Context, none is current_task_id: 5^12 paths of depth 12
write("dw-selfref", [(t, ctx) for t in types] + [(int(names[2][0], 16), int(names[3][1], 16))])
EOF
for bin in "$TRACER" "$BUILD/asan/tokio-ebpf-trace"; do
    ASAN_OPTIONS="exitcode=66:detect_leaks=1:halt_on_error=1" UBSAN_OPTIONS="halt_on_error=1:exitcode=66" \
        timeout 20 "$bin" check --json "$TMPD/dw-selfref" > "$TMPD/check.dw-selfref.json" 2> "$TMPD/dw-selfref.err"
    rc=$?
    check "dw-selfref (${bin#$BUILD/}): 'DWARF unusable', no offset, exit $rc (124: timed out), no sanitizer report" \
        bash -c '[ "$1" != 124 ] && [ "$1" != 66 ] && [ "$(jq -r .task_id_slot.method "$2")" = none ] &&
                 [[ "$(jq -r .task_id_slot.reason "$2")" == "DWARF unusable"* ]] && [ "$(jq -r .task_id_slot.id_offset "$2")" = null ] &&
                 ! grep -qE "Sanitizer|runtime error" "$3"' _ "$rc" "$TMPD/check.dw-selfref.json" "$TMPD/dw-selfref.err"
done
finish
