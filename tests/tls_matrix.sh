#!/bin/bash
# Intent (make tls-matrix; not in make test: each release is a ~40 s cargo build): the task-id
# slot `check` locates (tracer/discover/tlsctx.c) is right on a Tokio release from every range
# where CONTEXT's layout changed, checked against the program's own DWARF by gdb.
# Ranges (runtime/context.rs and task/id.rs of ../shared/tokio-src): 1.24–1.28 a lazy
# thread_local and Id(u64) (Option<Id>: tag + id); 1.29–1.39 `const` init, Id(u64);
# 1.40–1.53 `const`, Id(NonZeroU64) (one word, 0 = None). Every release has current_task_id.
# The Debian lines (t_tls_taskid) cover 1.24 and 1.43/1.53; this adds both ends of each change
# (default TLS_MATRIX="1.28.2 1.29.0 1.39.3 1.40.0"). Per release, a small multi-thread program
# built with full DWARF (debug = 2) against it:
#   - check: method dwarf with the accessor's code agreeing, the layout of the range (tagged
#     before 1.40, niche from it);
#   - gdb with the DWARF (Python API): CONTEXT's storage variable, located by libthread_db, is at
#     fs_base + context_offset on every thread, and the DWARF path down its type (std's storage
#     wrapper, the Context, current_task_id) gives field_offset, with the field's size 16
#     (tagged) or 8 (niche);
#   - live: after three TaskIdGuard::enter(id) the slot holds id (tag 1 when tagged).
# Builds are kept under .cache/tls-matrix.
. "$(dirname "$0")/lib.sh"
need_root
need_file "$TRACER" "tracer binary"
command -v gdb > /dev/null || die_test "gdb missing (scripts/packages.txt; make deps)"
command -v cargo > /dev/null || die_test "cargo missing"
W="$ROOT/.cache/tls-matrix"
mkdir -p "$W"

cat > "$TMPD/dwarf.py" <<'EOF'
import gdb
want = "current_task_id"
def find(t, depth=0):
    """(offset, size) of the field `want` below type t, through structs, unions and enum variants"""
    t = t.strip_typedefs()
    if depth > 8 or t.code not in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION):
        return None
    for f in t.fields():
        if not hasattr(f, "bitpos") or f.type is None:
            continue
        if f.name == want:
            return f.bitpos // 8, f.type.strip_typedefs().sizeof
        r = find(f.type, depth + 1)
        if r:
            return f.bitpos // 8 + r[0], r[1]
    return None
name = "tokio::runtime::context::CONTEXT::{constant#0}::{closure#0}::__RUST_STD_INTERNAL_VAL"
s = None
for n in (name, name.replace("{constant#0}::{closure#0}", "{constant#0}::{closure#1}"),
          "tokio::runtime::context::CONTEXT::__getit::__KEY"):
    s = gdb.lookup_static_symbol(n) or gdb.lookup_global_symbol(n)
    if s:
        break
if not s:
    print("DWARF none 0 none")
else:
    r = find(s.type)
    print("DWARF %d %d %s" % (r[0], r[1], s.type) if r else "DWARF nofield 0 %s" % s.type)
    for th in gdb.selected_inferior().threads():
        th.switch()
        fs = int(gdb.parse_and_eval("$fs_base"))
        print("TLS %d %d" % (int(s.value(gdb.selected_frame()).address), fs))
EOF

. "$ROOT/tests/kit/tls_app.sh"

for v in ${TLS_MATRIX:-1.28.2 1.29.0 1.39.3 1.40.0}; do
    t0=$SECONDS
    tls_app_build "$v" || { not_ok "$v: builds ($(tail -3 "$TMPD/build.$v.log"))"; continue; }
    echo "# $v: built in $(( SECONDS - t0 )) s"
    "$TRACER" check --json "$APP" > "$TMPD/check.$v.json"
    sl() { jq -r ".task_id_slot.$1 // empty" "$TMPD/check.$v.json"; }
    check_eq "$v: located from the DWARF, the accessor's code agreeing" "dwarf/code agrees" "$(sl method)/$(sl cross_check)"
    want=niche; [ "$(printf '%s\n' "$v" 1.40.0 | sort -V | head -1)" != 1.40.0 ] && want=tagged
    check_eq "$v: layout" "$want" "$(sl layout)"
    ctx=$(sl context_offset) fo=$(sl field_offset) id=$(sl id_offset) tag=$(sl tag_offset)
    echo "# $v: $(jq -c .task_id_slot "$TMPD/check.$v.json")"
    enter=$(readelf -sW "$APP" | awk '$4 == "FUNC" && $8 ~ /11TaskIdGuard5enter/ { print $8; exit }')
    tagexpr=1; [ -n "$tag" ] && tagexpr="*(unsigned long *)(\$fs_base + $tag)"
    {
        printf 'set pagination off\nset confirm off\nsource %s\nset language c\n' "$TMPD/dwarf.py"
        for i in 1 2 3; do
            printf 'break *&'"'%s'"'\ncontinue\nset scheduler-locking on\nprintf "ARG %%lu\\n", $rdi\ndelete\nfinish\n' "$enter"
            printf 'printf "SLOT %%lu %%lu\\n", *(unsigned long *)($fs_base + %d), %s\n' "${id:-0}" "$tagexpr"
            printf 'set scheduler-locking off\n'
        done
    } > "$TMPD/gdb.$v.cmd"
    "$APP" 60 > "$TMPD/app.$v.out" 2>&1 &
    AP=$!
    track_pid "$AP"
    wait_for_line "$TMPD/app.$v.out" '^ready' 30 || not_ok "$v: program started"
    timeout 90 gdb -p "$AP" -batch -x "$TMPD/gdb.$v.cmd" > "$TMPD/gdb.$v.out" 2>&1
    stop_pid "$AP"
    read -r _ doff dsize dtype < <(grep '^DWARF ' "$TMPD/gdb.$v.out")
    echo "# $v: DWARF: $dtype, current_task_id at $doff, $dsize bytes"
    check_eq "$v: field_offset = the DWARF's ($dtype)" "$doff" "$fo"
    check_eq "$v: field size in DWARF (16 tagged, 8 niche)" "$([ "$want" = tagged ] && echo 16 || echo 8)" "$dsize"
    tls=$(awk -v c="$ctx" '/^TLS / { n++; if ($2 - $3 == c) ok++ } END { printf "%d/%d", ok, n }' "$TMPD/gdb.$v.out")
    check "$v: CONTEXT (DWARF variable, libthread_db) = fs_base$ctx on every thread ($tls)" \
        awk -v t="$tls" 'BEGIN { split(t, a, "/"); exit !(a[2] >= 3 && a[1] == a[2]) }'
    pairs=$(awk '/^ARG / { a = $2 } /^SLOT / { printf "%s=%s/%s ", a, $2, $3 }' "$TMPD/gdb.$v.out")
    check "$v: after TaskIdGuard::enter(id) the slot holds id, tag 1 (id=slot/tag: $pairs)" \
        awk -v p="$pairs" 'BEGIN { n = split(p, a, " "); ok = 0
            for (i = 1; i <= n; i++) { split(a[i], b, "[=/]"); if (b[1] > 0 && b[1] == b[2] && b[3] == 1) ok++ }
            exit !(n == 3 && ok == 3) }'
done
finish
