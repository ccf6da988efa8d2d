#!/bin/bash
# Intent: the probe vocabulary has one source (bpf/probes.def) and the human contract
# (probes-patch/PROBES.md) says the same: every probe and site with its argument count in the
# probe table, every code set with the same values in its *Codes* table; the scripts and the
# tests read their lists from its shell copy, scripts/tet-vocab.sh, which is what
# scripts/gen-vocab.c makes of probes.def now (no probe name list written out elsewhere, no
# parsing of probes.def in shell); the tracer's --probes classes are probes.def's.
# The finding kinds (tracer/analyze/findings.def) and their thresholds (thresholds.def), which
# `trace --help` writes (its Thresholds block with the defaults, the kinds of --detect and
# --trigger): every list of kinds in docs/ is the table's, every threshold option the docs
# name with a value in parentheses has --help's default there, docs/cli.md gives each one's
# default, and report-schema.md's detector table names for each kind the options it is judged
# by (TET_VOCAB_KIND_OPTIONS), with their defaults.
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
cc -I"$TMPD/def" -I"$ROOT/tracer/discover" -I"$ROOT/tracer/cli" -I"$ROOT/tracer/analyze" -o "$TMPD/gen-vocab-bad" "$ROOT/scripts/gen-vocab.c" &&
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

# ---- the finding kinds and their thresholds: docs/ against the table and `trace --help` ----
"$TRACER" trace --help > "$TMPD/help"
# --help's Thresholds block: "      --OPTION UNIT   help (default VALUE)"
declare -A DEF=()
while read -r opt val; do DEF[$opt]=$val; done < <(
    sed -n '/^Thresholds:$/,/^[A-Z]/s/^ *--\([a-z-]*\) .*(default \([^)]*\))$/\1 \2/p' "$TMPD/help")
opts=$(printf '%s\n' ${TET_VOCAB_KIND_OPTIONS[@]} | sort -u | tr '\n' ' ')
check_eq "--help's Thresholds block: the table's options" "$opts" "$(printf '%s\n' "${!DEF[@]}" | sort | tr '\n' ' ')"
kinds=$(IFS=,; echo "${TET_VOCAB_KINDS[*]}") triggers="${TET_VOCAB_TRIGGERS[*]}"
flat() { tr '\n' ' ' < "$1" | tr -s ' '; }   # a file as one line: lists wrap
# the words of --help between two strings: its lines break at a space or after a comma
help_words() { tr '\n' ' ' < "$TMPD/help" | sed -n "s/.*$1\(.*\)$2.*/\1/p" | tr -s ', ' '\n\n' | grep . | tr '\n' ' ' | sed 's/ $//'; }
check_eq "--help's --detect line: the table's kinds" "${TET_VOCAB_KINDS[*]}" "$(help_words 'detectors: ' ' all or none')"
check_eq "--help's --trigger line: the kinds --trigger takes" "$triggers" "$(help_words 'repeatable: ' ' (the detectors')"
# backticked kinds ("`long_poll`", "`\"long_poll\"`") in a piece of text, in order
kinds_in() { grep -oE '`"?[a-z_]+"?`' | tr -d '`"' | grep -xF -f <(printf '%s\n' "${TET_VOCAB_KINDS[@]}") | tr '\n' ' ' | sed 's/ $//'; }
D=$ROOT/docs
check_eq "docs/cli.md --detect: the table's kinds" "--detect $kinds|all|none" \
    "$(grep -oE '`--detect [a-z_,]+\|all\|none`' "$D/cli.md" | tr -d '`')"
check_eq "docs/cli.md --trigger: the kinds --trigger takes" "$triggers" \
    "$(flat "$D/cli.md" | sed -n 's/.*`--trigger` (repeatable) \(.*\) (the detectors).*/\1/p' | kinds_in)"
check_eq "docs/flight-recorder.md's trigger table: the kinds --trigger takes" "$triggers" \
    "$(grep -E '^\| `long_poll`' "$D/flight-recorder.md" | cut -d'|' -f2 | kinds_in)"
check_eq "docs/report-schema.md flight_recorder.trigger.kind: the kinds --trigger takes" "$triggers" \
    "$(grep -E '^\| `kind` \| `"sigusr1"`' "$D/report-schema.md" | sed 's/.*a detector (\([^)]*\)).*/\1/' | kinds_in)"
check_eq "docs/report-schema.md spawn_sites[].findings: every kind" "${TET_VOCAB_KINDS[*]}" \
    "$(grep -E '^\| `findings` \| findings per kind at this site' "$D/report-schema.md" | kinds_in)"
check_eq "docs/reports.md tokio_trace_findings_total: every kind, and omitted" "${TET_VOCAB_KINDS[*]} omitted" \
    "$(grep -E '^\| `tokio_trace_findings_total`' "$D/reports.md" | grep -oE '`[a-z_]+`' | tr -d '`' | sed 1,2d | tr '\n' ' ' | sed 's/ $//')"
# report-schema.md's detector table: one row per kind, the options it is judged by with defaults
for k in "${TET_VOCAB_KINDS[@]}"; do
    want=
    for o in ${TET_VOCAB_KIND_OPTIONS[$k]}; do want+="${want:+, }\`--$o\` (${DEF[$o]})"; done
    check_eq "docs/report-schema.md detector $k: its thresholds and defaults" "$want" \
        "$(grep -E "^\| \`$k\` \| .*\`--[a-z-]+\` \([^)]*\) \|$" "$D/report-schema.md" | awk -F' \\| ' '{ print $NF }' | sed 's/ |$//')"
done
check_eq "docs/report-schema.md's detector table: a row per kind, no other" "$(printf '%s\n' "${TET_VOCAB_KINDS[@]}" | sort | tr '\n' ' ')" \
    "$(sed -n '/^| `kind` | condition | flag (default) |$/,/^$/p' "$D/report-schema.md" | sed 1d | grep -oE '^\| `[a-z_]+`' | tr -d '|` ' | sort | tr '\n' ' ')"
# every "`--OPTION` (VALUE…" of a threshold option in the docs says its default; cli.md each one
for o in "${!DEF[@]}"; do
    n=0 bad=
    while IFS= read -r hit; do
        n=$((n + 1)); v=${hit#*(}; v=${v%%[:) ]*}
        [ "$v" = "${DEF[$o]}" ] || bad+=" ${hit%%:*}: $v"
    done < <(cd "$ROOT" && cat docs/*.md README.md tracer/README.md | tr '\n' ' ' | grep -oE "\`--$o\` \([^):]*" | sed "s/^/docs:/")
    check_eq "docs: every \`--$o\` (VALUE) is its default ${DEF[$o]} ($n)" "" "$bad"
    check "docs/cli.md gives --$o's default" grep -qF "\`--$o\` (${DEF[$o]}" "$D/cli.md"
done
finish
