# Helpers for tests/t_notes_*.sh (source after tests/lib.sh).
FX="$BUILD/fixtures/notes"
need_fixtures() {  # fail (not skip) when the build did not make what a test needs
    local f
    [ -x "$TRACER" ] || die_test "$TRACER missing: run 'make' (or 'make test')"
    for f in "$@"; do
        [ -e "$FX/$f" ] || die_test "fixture $FX/$f missing: run 'make' (or 'make test')"
    done
}
# run_tet OUT ERR ARGS...: runs the tracer with a timeout, stdout/stderr to files, echoes rc
run_tet() {
    local out=$1 err=$2; shift 2
    timeout 30 "$TRACER" "$@" >"$out" 2>"$err"
    echo $?
}
