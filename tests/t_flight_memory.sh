#!/bin/bash
# Intent: the flight recorder stays within its bounds and survives its disk:
#  - bad options (a window that is neither a duration nor a size, a trigger that is none, a
#    flight-recorder option without --flight-recorder, --output with it): one line, exit 3;
#    a dump directory that is missing, a file, or on a read-only file system: one line naming
#    it, exit 4 — and nothing attached (the service's semaphores stay 0);
#  - memory: with --flight-recorder 16M and the sample service under load (all pathologies,
#    1000 requests/s) for 36 s (FLIGHT_MEMORY_SECS), the tracer's anonymous RSS
#    (/proc/PID/status RssAnon, sampled every 2 s) never grows more than the window plus 32 MiB
#    over its value right after attach, while the recorder evicts (the window was filled many
#    times over: RssAnon levels off within 10 s, and 36 s evict ~1.8 M records). Hours of it are
#    `make soak-flight`, not a test;
#  - --dump-max-bytes (5M; dumps of ~1.2 MB: the service at 100 requests/s, blocking_call):
#    after every one of six SIGUSR1 dumps the dump directory holds at most the budget (or only
#    the newest dump), some were removed, and the ones kept are the newest;
#  - a disk that fills later (a 3 MiB tmpfs, four such dumps): the failed dump is reported (No
#    space left on device), leaves no partial or temporary file, the recorder keeps running, and
#    once space is freed the next SIGUSR1 dumps again; the recorder exits 0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
need_sample 1.53 usdt; bin=$SAMPLE
MNT=()
umount_all() { local m; for m in "${MNT[@]:-}"; do [ -n "$m" ] && umount "$m" 2>/dev/null; done; }
trap 'umount_all; _cleanup' EXIT

dump_files() { ls -1 "$1" | grep -E -- '-[0-9]+-[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-' ; }
dir_bytes() { local s=0 f; for f in $(dump_files "$1"); do s=$(( s + $(stat -c %s "$1/$f") )); done; echo $s; }
rss_anon() { awk '/^RssAnon:/ { print $2 * 1024 }' "/proc/$1/status" 2>/dev/null; }

start_bg svc "$bin" serve --workers 2 --pathology all --load 1000 --duration 400s
SP=$BG_PID
wait_for_line "$TMPD/svc.out" "listening on" 20 || die_test "service did not start: $(cat "$TMPD/svc.err")"

# ---- bad input ----
expect_fail "window neither a duration nor a size" 3 "--flight-recorder 'soon': expected a duration \(60s, 5m\) or a size" \
    "$TRACER" --pid "$SP" --flight-recorder soon
expect_fail "window too short" 3 "--flight-recorder .*must be at least 1s" "$TRACER" --pid "$SP" --flight-recorder 10ms
expect_fail "window too small" 3 "--flight-recorder '1M': expected a duration \(60s, 5m\) or a size \(256M, 1G\) of at least 4M" \
    "$TRACER" --pid "$SP" --flight-recorder 1M
expect_fail "a trigger that is none" 3 "--trigger sometimes: not a trigger" "$TRACER" --pid "$SP" --flight-recorder 60s --trigger sometimes
expect_fail "large_future is no trigger (a property of a spawn, not an incident)" 3 "--trigger large_future: not a trigger" \
    "$TRACER" --pid "$SP" --flight-recorder 60s --trigger large_future
expect_fail "a threshold trigger without a duration" 3 "--trigger poll>fast: .*not a duration" \
    "$TRACER" --pid "$SP" --flight-recorder 60s --trigger 'poll>fast'
expect_fail "a threshold on an unknown figure" 3 "--trigger wakes>5ms: no such figure" \
    "$TRACER" --pid "$SP" --flight-recorder 60s --trigger 'wakes>5ms'
expect_fail "--trigger without --flight-recorder" 3 "--trigger needs --flight-recorder WINDOW" \
    "$TRACER" --pid "$SP" --trigger long_poll
expect_fail "--dump-dir without --flight-recorder" 3 "--dump-dir needs --flight-recorder WINDOW" \
    "$TRACER" --pid "$SP" --dump-dir "$TMPD"
expect_fail "--output with --flight-recorder" 3 "drop --output, --trace, --stacks and --pprof" \
    "$TRACER" --pid "$SP" --flight-recorder 60s -o "$TMPD/x.json"
expect_fail "--dump-max-bytes too small" 3 "--dump-max-bytes '10K': must be between 1M" \
    "$TRACER" --pid "$SP" --flight-recorder 60s --dump-max-bytes 10K
expect_fail "--flight-memory with a size window" 3 "--flight-memory bounds a time window" \
    "$TRACER" --pid "$SP" --flight-recorder 64M --flight-memory 128M
expect_fail "a missing dump directory" 4 "--dump-dir $TMPD/none: No such file or directory" \
    "$TRACER" --pid "$SP" --flight-recorder 60s --dump-dir "$TMPD/none"
: > "$TMPD/afile"
expect_fail "a file as the dump directory" 4 "--dump-dir $TMPD/afile: Not a directory" \
    "$TRACER" --pid "$SP" --flight-recorder 60s --dump-dir "$TMPD/afile"
mkdir -p "$TMPD/ro"
if mount -t tmpfs -o ro,size=1m tmpfs "$TMPD/ro"; then
    MNT+=("$TMPD/ro")
    expect_fail "a read-only dump directory (root: the permission bits do not stop it)" 4 \
        "--dump-dir $TMPD/ro: cannot create files in it: Read-only file system" \
        "$TRACER" --pid "$SP" --flight-recorder 60s --dump-dir "$TMPD/ro"
else
    not_ok "mount a read-only tmpfs (root)"
fi
check_eq "nothing attached after the refusals (semaphores 0)" 0 "$(sem_total "$SP" 2>/dev/null || echo 0)"

# ---- memory within the window's bound, under load ----
D="$TMPD/mem"; mkdir -p "$D"
start_bg fr.mem "$TRACER" --pid "$SP" --flight-recorder 16M --trigger long_poll --trigger-cooldown 60s --dump-dir "$D" -q
FRP=$BG_PID
wait_for_line "$TMPD/fr.mem.err" "flight recorder: keeping" 30 || not_ok "memory: recorder attached: $(cat "$TMPD/fr.mem.err")"
sleep 1
base=$(rss_anon "$FRP")
max=$base
series=""
MEM_SECS=${FLIGHT_MEMORY_SECS:-36}
for i in $(seq $(( MEM_SECS / 2 ))); do
    sleep 2
    r=$(rss_anon "$FRP")
    [ -z "$r" ] && break
    [ "$r" -gt "$max" ] && max=$r
    [ $(( i % 5 )) = 0 ] && series+=" $(( r >> 20 ))"
done
kill -INT "$FRP"; wait_exit "$FRP" 60
check_eq "memory: recorder exit 0" 0 "$RC"
echo "# RssAnon MiB every 10 s:$series (right after attach $(( base >> 20 )), max $(( max >> 20 )))"
evicted=$(sed -n 's/.* \([0-9]*\) evicted$/\1/p' "$TMPD/fr.mem.err")
check "memory: the window was filled and evicted many times (${evicted:-?} records evicted)" test "${evicted:-0}" -gt 1000000
check "memory: RssAnon grew at most 16 MiB (window) + 32 MiB over $MEM_SECS s ($(( (max - base) >> 20 )) MiB)" \
    test $(( max - base )) -le $(( 48 << 20 ))

stop_pid "$SP"
# the dumps below are of a lighter load (~0.8 MB per second of window)
start_bg svc2 "$bin" serve --workers 2 --pathology blocking_call --load 100 --duration 300s
SP=$BG_PID
wait_for_line "$TMPD/svc2.out" "listening on" 20 || die_test "service did not start: $(cat "$TMPD/svc2.err")"

# ---- --dump-max-bytes ----
D="$TMPD/budget"; mkdir -p "$D"
start_bg fr.budget "$TRACER" --pid "$SP" --flight-recorder 2s --post-trigger 0s --dump-max-bytes 5M --dump-dir "$D" -q
FRP=$BG_PID
wait_for_line "$TMPD/fr.budget.err" "flight recorder: keeping" 30 || not_ok "budget: recorder attached"
sleep 2.5
made=()
for i in $(seq 6); do
    kill -USR1 "$FRP"
    wait_for_line "$TMPD/fr.budget.err" "flight recorder: dump $i .*" 10 || not_ok "budget: dump $i started"
    for _ in $(seq 300); do [ "$(grep -c 'written to' "$TMPD/fr.budget.err")" -ge $(( i * 3 )) ] && break; sleep 0.1; done
    made+=("$(grep -o "[^/]*-sigusr1\.json" "$TMPD/fr.budget.err" | tail -1 | sed 's/\.json$//')")
    # the dump's child removes old dumps after its last file is written (at nice 10): up to
    # 10 s for the directory to come within the budget, a dump that never trims it fails
    for _ in $(seq 100); do
        bytes=$(dir_bytes "$D")
        groups=$(dump_files "$D" | sed -E 's/\.(json|html|trace\.json)$//' | sort -u | wc -l)
        [ "$bytes" -le $(( 5 << 20 )) ] || [ "$groups" = 1 ] && break
        sleep 0.1
    done
    check "budget: after dump $i the directory holds ≤ 5 MiB or only the newest dump ($bytes bytes, $groups dumps)" \
        test "$bytes" -le $(( 5 << 20 )) -o "$groups" = 1
    sleep 0.7
done
kill -INT "$FRP"; wait_exit "$FRP" 120
kept=$(dump_files "$D" | sed -E 's/\.(json|html|trace\.json)$//' | sort -u | tr '\n' ' ')
k=$(echo $kept | wc -w)
newest=$(printf '%s\n' "${made[@]}" | tail -n "$k" | sort | tr '\n' ' ')
check "budget: some dumps kept, some removed ($k of 6 kept)" test "$k" -ge 2 -a "$k" -lt 6
check_eq "budget: the newest dumps are the ones kept (the oldest went first)" "$newest" "$kept"
check "budget: removals said" grep -q "removed .* old dump file" "$TMPD/fr.budget.err"

# ---- a disk that fills later ----
D="$TMPD/small"; mkdir -p "$D"
if mount -t tmpfs -o size=3m tmpfs "$D"; then
    MNT+=("$D")
    start_bg fr.full "$TRACER" --pid "$SP" --flight-recorder 2s --post-trigger 0s --dump-dir "$D" -q
    FRP=$BG_PID
    wait_for_line "$TMPD/fr.full.err" "flight recorder: keeping" 30 || not_ok "full: recorder attached"
    sleep 2.5
    for i in 1 2 3 4; do
        kill -USR1 "$FRP"
        # dump i is over when i dumps have ended: written (their last file, the Perfetto
        # trace) or failed; up to 30 s
        for _ in $(seq 300); do
            [ $(( $(grep -c "written to .*sigusr1\.trace\.json" "$TMPD/fr.full.err") + \
                  $(grep -cE "dump [0-9]+ failed" "$TMPD/fr.full.err") )) -ge "$i" ] && break
            sleep 0.1
        done
    done
    check "full: a failed dump is reported with its cause" grep -q "No space left on device" "$TMPD/fr.full.err"
    check "full: … and the recorder says it keeps running" grep -q "failed (see above): the recorder keeps running" "$TMPD/fr.full.err"
    check_eq "full: no partial or temporary file left" "" "$(ls -1 "$D" | grep -E '\.tmp\.' )"
    check "full: the recorder is still running" kill -0 "$FRP"
    rm -f "$D"/*
    n=$(grep -c "written to .*\.trace\.json" "$TMPD/fr.full.err")
    kill -USR1 "$FRP"
    for _ in $(seq 50); do [ "$(grep -c "written to .*\.trace\.json" "$TMPD/fr.full.err")" -gt "$n" ] && break; sleep 0.1; done
    check "full: space freed, the next SIGUSR1 dumps again" test "$(grep -c "written to .*\.trace\.json" "$TMPD/fr.full.err")" -gt "$n"
    kill -INT "$FRP"; wait_exit "$FRP" 120
    check_eq "full: recorder exit 0" 0 "$RC"
else
    not_ok "mount a 1 MiB tmpfs (root)"
fi
stop_pid "$SP"
finish
