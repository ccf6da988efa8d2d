#!/bin/bash
# Intent: the probe vocabulary has one source (bpf/probes.def) and the human contract
# (probes-patch/PROBES.md) says the same: every probe and site with its argument count in the
# probe table, every code set with the same values in its *Codes* table; the scripts and the
# tests read their lists from probes.def (no probe name list written out elsewhere); the
# tracer's --probes classes are probes.def's.
. "$(dirname "$0")/lib.sh"
DEF="$ROOT/bpf/probes.def"
DOC="$ROOT/probes-patch/PROBES.md"

n=0
while read -r name argc; do
    n=$((n + 1))
    check "PROBES.md lists tokio:$name with $argc arguments" \
        grep -qE "^\| \`$name\` \| $argc \|" "$DOC"
done < <(sed -n 's/^TET_\(PROBE\|SITE\)(\([a-z_]*\), *\([A-Z_]*, *\)\{0,1\}\([0-9]*\),.*/\2 \4/p' "$DEF")
check_eq "probes.def: 15 probes and sites" 15 "$n"
# and the other way round: every probe row of PROBES.md is in probes.def
while read -r name; do
    check "probes.def has PROBES.md's tokio:$name" grep -qE "^TET_(PROBE|SITE)\($name," "$DEF"
done < <(sed -n 's/^| `\([a-z_]*\)` | [0-9]* |.*/\1/p' "$DOC")

# codes: PROBES.md's code tables, by set, against TET_CODE values
code_rows() { # the code column of the table under the line matching $1
    awk -v h="$1" 'index($0, h) == 1 { on = 1; next } on && /^\| [0-9]+ \|/ { split($0, a, "|"); gsub(/ /, "", a[2]); print a[2]; seen = 1; next }
                   on && seen && !/^\|/ { exit }' "$DOC" | tr '\n' ' '
}
def_codes() { sed -n "s/^TET_CODE($1, *[A-Z_]*, *\([0-9]*\),.*/\1/p" "$DEF" | tr '\n' ' '; }
check_eq "spawn kind codes" "$(code_rows '*spawn kind*')" "$(def_codes KIND)"
check_eq "poll result codes" "$(code_rows '*poll result*')" "$(def_codes POLL)"
check_eq "yield reason codes" "$(code_rows '*yield reason*')" "$(def_codes YIELD)"
check_eq "terminate reason codes" "$(code_rows '*terminate reason*')" "$(def_codes TERM)"
check_eq "wait kind codes" "$(code_rows '*wait kind*')" "$(def_codes WAIT)"
for set in KIND POLL YIELD TERM WAIT META; do
    cnt=$(sed -n "s/^TET_CODES($set, *\([0-9]*\),.*/\1/p" "$DEF")
    check_eq "$set: TET_CODES count = its codes" "$cnt" "$(def_codes $set | wc -w)"
done

# no second list of probe names: no line of the scripts, tests or C sources names eight or more
# probes (a list written out); naming a few in passing, or one per line, is not a list
for f in "$ROOT"/scripts/* "$ROOT"/tests/*.sh "$ROOT"/tracer/*/*.[ch] "$ROOT"/bpf/*.[ch]; do
    [ -f "$f" ] && [ "$f" != "$ROOT/tests/t_vocab.sh" ] || continue
    worst=$(grep -noE '\b(task_spawn|task_poll_begin|task_poll_end|task_yielded|waker_wake|waker_clone|waker_drop|task_terminate|worker_park|worker_unpark|task_wait|task_meta|task_lock)\b' "$f" |
            sort -u | cut -d: -f1 | uniq -c | sort -n | tail -1 | awk '{ print $1 }')
    check "${f#$ROOT/}: no line lists the probe names (at most ${worst:-0} on a line)" test "${worst:-0}" -lt 8
done

# the --probes classes are the table's
[ -x "$TRACER" ] || { echo "FATAL: $TRACER not built (make)" >&2; exit 1; }
msg=$("$TRACER" --pid 1 --probes nosuchclass 2>&1)
classes=$(sed -n 's/^TET_CLASS(\([a-z]*\),.*/\1/p' "$DEF" | tr '\n' ' ' | sed 's/ $//; s/ /, /g')
check "unknown --probes class lists probes.def's classes ($classes)" \
    grep -qF "($classes, all)" <<<"$msg"
finish
