#!/bin/bash
# Intent: every kind of bad input gives one line on stderr naming the file (or PID) and the
# problem, a non-zero exit (4; 3 for a malformed PID argument), nothing on stdout in human
# mode and exactly one JSON object {"error": …} in --json mode — never a crash, a hang or a
# partial document. Inputs: not ELF, empty, truncated at many lengths, note sizes overrunning
# the section, provider/name/args without NUL, a descriptor too small, trailing garbage,
# absurd argument count, bad argument, site outside code, semaphore in code, section past
# EOF, a relocatable object, a bad ELF class, a directory, a FIFO, a missing file, an
# unreadable file (as nobody), a PID that does not exist, a PID that exits during the walk.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/notes_lib.sh"
need_fixtures ops_O2 bad_overrun-desc.elf

# bad CMD... : expects exit $WANT, one stderr line containing $MATCH, clean stdout; both modes
bad() {
    local what=$1 match=$2; shift 2
    local rc lines
    for mode in human json; do
        if [ $mode = json ]; then set -- "$@" --json; fi
        rc=$(run_tet "$TMPD/o" "$TMPD/e" "$@")
        lines=$(wc -l < "$TMPD/e")
        if [ "$rc" != "${WANT:-4}" ]; then not_ok "$what ($mode): exit $rc, want ${WANT:-4}"; cat "$TMPD/e"; continue; fi
        if [ "$lines" != 1 ] || ! grep -qF -- "$match" "$TMPD/e"; then
            not_ok "$what ($mode): stderr should be one line with '$match'"; cat "$TMPD/e"; continue; fi
        if [ $mode = human ] && [ -s "$TMPD/o" ]; then not_ok "$what: stdout not empty"; continue; fi
        if [ $mode = json ] && ! jq -e -s 'length == 1 and (.[0].error | type == "string")' "$TMPD/o" >/dev/null; then
            not_ok "$what (json): stdout is not exactly one {\"error\":…} object"; cat "$TMPD/o"; continue; fi
        ok "$what ($mode): exit $rc, '$(head -c 120 "$TMPD/e")'"
    done
}

printf 'hello, not an ELF\n' > "$TMPD/text"
: > "$TMPD/empty"
mkdir "$TMPD/dir"
mkfifo "$TMPD/fifo"
for cmd in list check; do
    bad "$cmd: not ELF" "$TMPD/text: not an ELF file" $cmd "$TMPD/text"
    bad "$cmd: empty file" "$TMPD/empty: empty file" $cmd "$TMPD/empty"
    bad "$cmd: directory" "$TMPD/dir: is a directory" $cmd "$TMPD/dir"
    bad "$cmd: FIFO (no hang)" "$TMPD/fifo: not a regular file" $cmd "$TMPD/fifo"
    bad "$cmd: missing file" "$TMPD/nope: No such file or directory" $cmd "$TMPD/nope"
done

# truncated copies of a real binary at many lengths
size=$(stat -c %s "$FX/ops_O2")
for len in 4 16 52 63 64 100 1000 4096 $((size/2)) $((size-200)) $((size-1)); do
    head -c $len "$FX/ops_O2" > "$TMPD/trunc$len"
    rc=$(run_tet "$TMPD/o" "$TMPD/e" list "$TMPD/trunc$len")
    if [ "$rc" = 4 ] && [ "$(wc -l < "$TMPD/e")" = 1 ] && grep -q "trunc$len" "$TMPD/e" && [ ! -s "$TMPD/o" ]; then
        ok "truncated to $len bytes: exit 4, '$(cat "$TMPD/e")'"
    else
        not_ok "truncated to $len bytes: exit $rc"; cat "$TMPD/e"
    fi
done

F=$FX
bad "name size overruns the section" "name size 4096 overruns the section" list "$F/bad_overrun-name.elf"
bad "descriptor size overruns the section" "descriptor size 4294967040 overruns" list "$F/bad_overrun-desc.elf"
bad "descriptor too small" "too small for 3 addresses" list "$F/bad_short-desc.elf"
bad "provider without NUL" "provider string is not NUL-terminated" list "$F/bad_nonul-provider.elf"
bad "name without NUL" "probe name is not NUL-terminated" list "$F/bad_nonul-name.elf"
bad "args without NUL" "argument string is missing or not NUL-terminated" list "$F/bad_nonul-args.elf"
bad "trailing bytes after the last note" "5 bytes left, a note header needs 12" list "$F/bad_trailing-bytes.elf"
bad "absurd argument count" "1000 arguments, more than the SDT maximum of 12" list "$F/bad_too-many-args.elf"
bad "unknown register" "argument #2 '8@%bogus': unknown register" list "$F/bad_bad-args.elf"
bad "site outside an executable segment" "is not in an executable segment" list "$F/bad_site-not-exec.elf"
bad "semaphore in code" "is not in a writable data segment" list "$F/bad_sema-in-text.elf"
bad "section past end of file" "lies outside the file (truncated?)" list "$F/bad_sec-past-eof.elf"
bad "relocatable object" "not an executable or shared object" list "$F/bad_type-rel.elf"
bad "bad ELF class" "not an ELF file" list "$F/bad_bad-class.elf"
bad "check: overrun" "descriptor size 4294967040 overruns" check "$F/bad_overrun-desc.elf"

# unreadable: as root every file is readable, so run as nobody on a 0600 file
cp "$FX/ops_O2" "$TMPD/secret"; chmod 600 "$TMPD/secret"; chmod 755 "$TMPD"
if [ "$(id -u)" = 0 ]; then
    cp "$TRACER" "$TMPD/tet"; chmod 755 "$TMPD/tet"
    for mode in "" --json; do
        setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$TMPD/tet" list $mode "$TMPD/secret" > "$TMPD/o" 2> "$TMPD/e"
        rc=$?
        check_eq "unreadable file ${mode:-human}: exit 4" 4 "$rc"
        check "unreadable file ${mode:-human}: one line with Permission denied" \
            bash -c "[ \$(wc -l < '$TMPD/e') = 1 ] && grep -q 'secret: Permission denied' '$TMPD/e'"
    done
else
    rc=$(run_tet "$TMPD/o" "$TMPD/e" list "$TMPD/secret")
    check_eq "unreadable file (own file, readable): lists" 0 "$rc"
fi

# PIDs
pid=$(bash -c 'echo $$')   # a process that has exited
while kill -0 "$pid" 2>/dev/null; do pid=$((pid + 7919)); done
bad "list: PID that does not exist" "process $pid does not exist" list -p "$pid"
bad "check: PID that does not exist" "process $pid does not exist" check -p "$pid"
WANT=3 bad "PID that is not a number" "invalid PID 'abc'" list -p abc

# a PID that exits during the walk: the tracer pauses after reading maps (test hook)
for mode in "" --json; do
    "$FX/ops_O2" sleep > "$TMPD/ready" & vp=$!; track_pid $vp
    for i in $(seq 50); do [ -s "$TMPD/ready" ] && break; sleep 0.1; done
    # killed 1.5 s in, inside a 5 s pause after the maps were read: the tracer's start has 1.5 s
    ( sleep 1.5; kill -KILL $vp ) &
    TET_TEST_MAPS_DELAY_MS=5000 timeout 30 "$TRACER" list -p $vp $mode > "$TMPD/o" 2> "$TMPD/e"
    rc=$?
    wait $vp 2>/dev/null
    check_eq "PID exits during the walk ${mode:-human}: exit 4" 4 "$rc"
    check "PID exits during the walk ${mode:-human}: one line 'exited during the walk'" \
        bash -c "[ \$(wc -l < '$TMPD/e') = 1 ] && grep -q 'process $vp exited during the walk' '$TMPD/e'"
    if [ -n "$mode" ]; then
        check "PID exits during the walk --json: one error object" jq -e -s 'length == 1 and .[0].error' "$TMPD/o"
    else
        check_eq "PID exits during the walk: stdout empty" 0 "$(wc -c < "$TMPD/o")"
    fi
done
finish
