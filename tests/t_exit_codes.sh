#!/bin/bash
# Intent: one exit-code table (tracer/cli/exits.def) for the tracer, the preflight and the kit,
# one meaning per code: every EXIT STATUS doc — `tokio-ebpf-trace --help` and each command's,
# the preflight's and the kit's --help, docs/cli.md's table — lists codes of that table, each
# once, with the table's label ("CODE  LABEL: …"), and documents every code its tool can exit
# with (the scripts: each TET_EXIT_* they use; the tracer: each TET_EXIT_* in tracer/;
# docs/cli.md: all of them); the scripts exit with no number of their own (but the one
# literal 4 when the table itself is missing), and the table's shell copy
# (scripts/tet-vocab.sh, which lib.sh sourced) gives the tracer's numbers.
. "$(dirname "$0")/lib.sh"
[ -x "$TRACER" ] || die_test "$TRACER not built (make)"
PF="$ROOT/scripts/install_tokio_tracing.sh"
KIT="$ROOT/scripts/tokio-usdt-build"
check "the table has codes 0-7 (scripts/tet-vocab.sh)" test "${!TET_VOCAB_EXIT_LABEL[*]}" = "0 1 2 3 4 5 6 7"
check_eq "the tracer's codes keep their numbers" "0 1 2 3 4" \
    "$TET_EXIT_OK $TET_EXIT_NOPROBES $TET_EXIT_CANNOT $TET_EXIT_USAGE $TET_EXIT_INPUT"
check_eq "labels are unique (one meaning per code)" "${#TET_VOCAB_EXIT_LABEL[@]}" \
    "$(printf '%s\n' "${TET_VOCAB_EXIT_LABEL[@]}" | sort -u | wc -l)"

# doc_codes FILE: "CODE LABEL" for each "  CODE  LABEL[: …]" line of the block under an
# "Exit status"/"EXIT STATUS" heading (up to the next blank line), "#" comment marks stripped
doc_codes() {
    sed 's/^# \{0,1\}//' "$1" | awk '/^(Exit status|EXIT STATUS)/ { on = 1; next } on && /^ *$/ { on = 0 }
        on && match($0, /^ +[0-9]+  +[^ ]/) { line = $0; sub(/^ +/, "", line); code = line; sub(/ .*/, "", code)
            sub(/^[0-9]+ +/, "", line); sub(/:.*/, "", line); print code " " line }'
}
# doc_ok NAME FILE CODE…: FILE documents each CODE, every code it documents is the table's with
# the table's label, none twice
doc_ok() {
    local name=$1 f=$2 code label bad="" n; shift 2
    n=$(doc_codes "$f" | wc -l)
    [ "$n" -gt 0 ] || { not_ok "$name: no EXIT STATUS codes found"; return; }
    while read -r code label; do
        [ "${TET_VOCAB_EXIT_LABEL[$code]:-}" = "$label" ] ||
            bad+="$code '$label' (table: '${TET_VOCAB_EXIT_LABEL[$code]:-no such code}'); "
    done < <(doc_codes "$f")
    check_eq "$name: its $n codes carry the table's labels" "" "$bad"
    check_eq "$name: no code twice" "" "$(doc_codes "$f" | cut -d' ' -f1 | sort | uniq -d | tr '\n' ' ')"
    for code in "$@"; do
        check "$name documents $code (${TET_VOCAB_EXIT_LABEL[$code]})" grep -q "^$code " <(doc_codes "$f")
    done
}
# codes_used FILE…: the table's codes of the TET_EXIT_* names FILEs use; with -x, only where a
# script exits with one (exit, fail, die's EXIT=, check_binaries' worst=)
codes_used() {
    local n v re='TET_EXIT_[A-Z]+'
    [ "$1" = -x ] && { re='(exit|fail|EXIT=|worst=)[ "$]*TET_EXIT_[A-Z]+'; shift; }
    for n in $(grep -ohE "$re" "$@" | grep -oE 'TET_EXIT_[A-Z]+' | sort -u); do
        v=${!n:-}; [ -n "$v" ] && echo "$v"
    done | sort -un | tr '\n' ' '
}

"$TRACER" --help > "$TMPD/main.help"
doc_ok "tokio-ebpf-trace --help" "$TMPD/main.help" $(codes_used $(find "$ROOT/tracer" -name '*.[ch]'))
for c in check list trace; do "$TRACER" $c --help > "$TMPD/$c.help"; done
doc_ok "check --help" "$TMPD/check.help" "$TET_EXIT_OK" "$TET_EXIT_NOPROBES" "$TET_EXIT_CANNOT" "$TET_EXIT_USAGE" "$TET_EXIT_INPUT"
doc_ok "list --help" "$TMPD/list.help" "$TET_EXIT_OK" "$TET_EXIT_USAGE" "$TET_EXIT_INPUT"
doc_ok "trace --help" "$TMPD/trace.help" "$TET_EXIT_OK" "$TET_EXIT_CANNOT" "$TET_EXIT_USAGE" "$TET_EXIT_INPUT"
"$PF" --help > "$TMPD/pf.help"
doc_ok "install_tokio_tracing.sh --help" "$TMPD/pf.help" $(codes_used -x "$PF") "$TET_EXIT_NOPROBES" "$TET_EXIT_CANNOT"
"$KIT" --help > "$TMPD/kit.help"
doc_ok "tokio-usdt-build --help" "$TMPD/kit.help" $(codes_used -x "$KIT")
# docs/cli.md: "| CODE | **LABEL** | …" rows of its Exit status table, all codes
sed -n 's/^| \([0-9]*\) | \*\*\([^*]*\)\*\* |.*/  \1  \2/p' "$ROOT/docs/cli.md" | sed '1i Exit status' > "$TMPD/cli.md.codes"
doc_ok "docs/cli.md" "$TMPD/cli.md.codes" "${!TET_VOCAB_EXIT_LABEL[@]}"

# the scripts exit with the table's names, never a number of their own (the one literal: 4,
# bad input, when scripts/tet-vocab.sh — the table — is missing)
for f in "$PF" "$KIT"; do
    check_eq "${f#$ROOT/}: no exit status but the table's" "" \
        "$(grep -v '^ *#' "$f" | grep -nE '(exit|EXIT=) *[0-9]' | grep -vE "exit 4; \}$|exit 130' INT TERM$" | head -3)"
done
finish
