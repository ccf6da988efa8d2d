#!/bin/bash
# Intent: the tracer keeps the structure a newcomer can take over (issue 26): no function in
# tracer/ over 150 lines, `trace`'s command function under 150, and no import circle between
# files, neither by symbol use (nm of the built objects) nor by #include (tests/structure.py),
# and between folders every arrow goes down the layers of tracer/README.md's drawing;
# no library folder (capture, decode, analyze, discover, lib) writes to stdout or stderr itself.
. "$(dirname "$0")/lib.sh"
need_file "$BUILD/obj/run.o" "the tracer's objects"
python3 "$ROOT/tests/structure.py" "$ROOT" > "$TMPD/s.out" 2>&1 || die_test "structure.py: $(tail -1 "$TMPD/s.out")"
sed 's/^/# /' "$TMPD/s.out"
read -r _ n file func < <(grep '^longest ' "$TMPD/s.out")
check "no function in tracer/ over 150 lines (longest: $func, $n, in $file)" test "$n" -le 150
n=$(awk '/^int cmd_trace\(/ { on = 1 } on { n++ } on && /^}/ { print n; exit }' "$ROOT/tracer/cli/trace.c")
check "cmd_trace under 150 lines (${n:-not found})" test "${n:-999}" -lt 150
check_eq "no import circle by symbol use" "symbol_circles []" "$(grep '^symbol_circles' "$TMPD/s.out")"
check_eq "no import circle by #include" "include_circles []" "$(grep '^include_circles' "$TMPD/s.out")"
# the folders in layers, top first (tracer/README.md's drawing): every arrow between folders, by
# symbol use or #include, goes down (capture and report share a layer: no arrow between them)
LAYERS=(cli run "capture report" analyze decode discover lib)
declare -A RANK=()
for i in "${!LAYERS[@]}"; do for f in ${LAYERS[$i]}; do RANK[$f]=$i; done; done
up=""
for a in $(grep '^folder_arrows' "$TMPD/s.out" | cut -d' ' -f2-); do
    from=${a%%->*} to=${a##*->}
    [ -n "${RANK[$from]:-}" ] && [ -n "${RANK[$to]:-}" ] || { up="$up $a(unknown folder)"; continue; }
    [ "${RANK[$from]}" -lt "${RANK[$to]}" ] || up="$up $a"
done
check "every arrow between folders goes down the layers (${LAYERS[*]}): against it:${up:- none}" test -z "$up"
prints=$(grep -nE '\b(printf|puts|perror)\(|\bf(printf|puts|putc|write)\([^;]*\b(stdout|stderr)\b' \
         "$ROOT"/tracer/{capture,decode,analyze,discover,lib}/*.c | grep -vE 'snprintf|vsnprintf')
check "no library folder prints (${prints:-none})" test -z "$prints"
finish
