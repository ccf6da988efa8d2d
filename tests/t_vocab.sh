#!/bin/bash
# Intent: the probe vocabulary has one source (bpf/probes.def) and the human contract
# (probes-patch/PROBES.md) says the same: every probe and site with its argument count in the
# probe table, every code set with the same values in its *Codes* table; the scripts and the
# tests read their lists from its shell copy, scripts/tet-vocab.sh, which is what
# scripts/gen-vocab.c makes of probes.def now (no probe name list written out elsewhere, no
# parsing of probes.def in shell); the tracer's --probes classes are probes.def's.
. "$(dirname "$0")/lib.sh"
DOC="$ROOT/probes-patch/PROBES.md"

# the shell's copy of the table (scripts/tet-vocab.sh, which lib.sh sourced) is what
# scripts/gen-vocab.c makes of probes.def now
need_file "$BUILD/tet-vocab.sh" "the vocabulary for the shell (make)"
check "scripts/tet-vocab.sh is build/tet-vocab.sh (else: make vocab)" cmp -s "$BUILD/tet-vocab.sh" "$ROOT/scripts/tet-vocab.sh"

n=0
for name in "${TET_VOCAB_PROBES[@]}" "${TET_VOCAB_SITES[@]}"; do
    n=$((n + 1))
    argc=${TET_VOCAB_ARGC[$name]}
    check "PROBES.md lists tokio:$name with $argc arguments" \
        grep -qE "^\| \`$name\` \| $argc \|" "$DOC"
done
check_eq "probes.def: 15 probes and sites" 15 "$n"
# and the other way round: every probe row of PROBES.md is in probes.def
while read -r name; do
    check "probes.def has PROBES.md's tokio:$name" test -n "${TET_VOCAB_ARGC[$name]:-}"
done < <(sed -n 's/^| `\([a-z_]*\)` | [0-9]* |.*/\1/p' "$DOC")

# codes: PROBES.md's code tables, by set, against TET_CODE values
code_rows() { # the code column of the table under the line matching $1
    awk -v h="$1" 'index($0, h) == 1 { on = 1; next } on && /^\| [0-9]+ \|/ { split($0, a, "|"); gsub(/ /, "", a[2]); print a[2]; seen = 1; next }
                   on && seen && !/^\|/ { exit }' "$DOC" | tr '\n' ' '
}
def_codes() { local -n c=TET_VOCAB_CODES_$1; printf '%s ' "${!c[@]}"; }
check_eq "spawn kind codes" "$(code_rows '*spawn kind*')" "$(def_codes KIND)"
check_eq "poll result codes" "$(code_rows '*poll result*')" "$(def_codes POLL)"
check_eq "yield reason codes" "$(code_rows '*yield reason*')" "$(def_codes YIELD)"
check_eq "terminate reason codes" "$(code_rows '*terminate reason*')" "$(def_codes TERM)"
check_eq "wait kind codes" "$(code_rows '*wait kind*')" "$(def_codes WAIT)"
# a TET_CODES count that is not its codes' makes scripts/gen-vocab.c fail: one line, no output
mkdir -p "$TMPD/def"
sed 's/^TET_CODES(POLL, *5,/TET_CODES(POLL, 6,/' "$ROOT/bpf/probes.def" > "$TMPD/def/probes.def"
cc -I"$TMPD/def" -I"$ROOT/tracer/discover" -I"$ROOT/tracer/cli" -o "$TMPD/gen-vocab-bad" "$ROOT/scripts/gen-vocab.c" &&
    "$TMPD/gen-vocab-bad" > "$TMPD/bad.out" 2> "$TMPD/bad.err"
rc=$?
check_eq "a wrong TET_CODES count: gen-vocab exits 1" 1 "$rc"
check_eq "… with one line naming the set, nothing on stdout" \
    "gen-vocab: TET_CODES(POLL, 6): 5 TET_CODE entries|" "$(cat "$TMPD/bad.err")|$(cat "$TMPD/bad.out")"

# no second list of probe names: no line of the scripts, tests or C sources names eight or more
# probes (a list written out); naming a few in passing, or one per line, is not a list
for f in "$ROOT"/scripts/* "$ROOT"/tests/*.sh "$ROOT"/tracer/*/*.[ch] "$ROOT"/bpf/*.[ch]; do
    [ -f "$f" ] && [ "$f" != "$ROOT/tests/t_vocab.sh" ] && [ "$f" != "$ROOT/scripts/tet-vocab.sh" ] || continue
    worst=$(grep -noE '\b(task_spawn|task_poll_begin|task_poll_end|task_yielded|waker_wake|waker_clone|waker_drop|task_terminate|worker_park|worker_unpark|task_wait|task_meta|task_lock)\b' "$f" |
            sort -u | cut -d: -f1 | uniq -c | sort -n | tail -1 | awk '{ print $1 }')
    check "${f#$ROOT/}: no line lists the probe names (at most ${worst:-0} on a line)" test "${worst:-0}" -lt 8
done

# the --probes classes are the table's
[ -x "$TRACER" ] || { echo "FATAL: $TRACER not built (make)" >&2; exit 1; }
msg=$("$TRACER" --pid 1 --probes nosuchclass 2>&1)
classes=$(printf '%s, ' "${TET_VOCAB_CLASSES[@]}"); classes=${classes%, }
check "unknown --probes class lists probes.def's classes ($classes)" \
    grep -qF "($classes, all)" <<<"$msg"
finish
