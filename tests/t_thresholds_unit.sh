#!/bin/bash
# Intent: the finding kinds' thresholds have one table (tracer/analyze/thresholds.def) and it is
# whole: every kind of findings.def has its row (or names the row it is judged by), option names
# and an_opts members are unique, an_opts_default is the table's defaults, and each default as
# `--help` writes it parses back to itself (tests/unit/thresholds_test.c). And `trace --help`, whose
# Thresholds block, --detect and --trigger lines the table writes, names no option twice.
. "$(dirname "$0")/lib.sh"
unit_test thresholds_test
[ -x "$TRACER" ] || { echo "FATAL: $TRACER not built (make)" >&2; exit 1; }
"$TRACER" trace --help > "$TMPD/help" 2>&1
dups=$(grep -oE '^ +(-[a-z], )?--[a-z0-9-]+' "$TMPD/help" | sed 's/.*--/--/' | sort | uniq -d | tr '\n' ' ')
check_eq "trace --help: each option once ($(grep -cE '^ +(-[a-z], )?--[a-z]' "$TMPD/help") options)" "" "$dups"
finish
