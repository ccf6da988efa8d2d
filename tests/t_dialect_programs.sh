#!/bin/bash
# Intent: the two dialect programs (sample-service/dialects, docs/dialects.md) carry their
# dialect's probes as that project emits them, and fire them once per runtime hook call:
# - readelf -n: exactly the dialect's probe names under provider "tokio", one site each, with the
#   dialect's argument count, a semaphore where the dialect has one (oxide's tokio-dtrace: every
#   probe, through the `usdt` crate; Tokio's upstream proposal: task-details only) and none
#   elsewhere; every site a 1-byte nop.
# - bpftrace, a USDT client nobody here wrote, attached before the program starts (-c), counts
#   as many task-poll-start hits (and spawns, terminates, poll ends, wakes or parks) as the
#   program counted hook calls (its last line, printed after the runtime shut down); every task
#   polled was announced at spawn; the long poll (150 ms) shows between poll start and end; the
#   spawn locations decode to the workload's spawn lines.
. "$(dirname "$0")/lib.sh"
need_root

DIR="$BUILD/sample-service/dialects"
LIBRS="$ROOT/sample-service/dialects/src/lib.rs"

# note_table BIN: "name argc sema-nonzero pc" per tokio note
note_table() {
    readelf -n --wide "$1" | awk '
        /Provider:/ { prov=$NF }
        /^ *Name:/ { name=$2 }
        /Location:/ { pc=$2; sub(/,$/,"",pc); sema=$6 }
        /Arguments:/ { if (prov=="tokio") { n=NF-1; s=(sema ~ /^0x0+$/) ? 0 : 1; print name, n, s, pc } }'
}

# check_notes LABEL BIN EXPECTED: EXPECTED holds "name argc sema" lines
check_notes() {
    local label=$1 bin=$2 expected=$3 pc bad=0 name
    note_table "$bin" > "$TMPD/notes.$label"
    [ -s "$TMPD/notes.$label" ] || { not_ok "$label: no provider tokio notes in $bin"; return; }
    check_eq "$label: the dialect's notes (name, argument count, semaphore), one site each" \
        "$(sort <<< "$expected")" "$(cut -d' ' -f1-3 "$TMPD/notes.$label" | sort)"
    while read -r name _ _ pc; do
        insn=$(objdump -d --no-show-raw-insn --start-address="$pc" --stop-address=$((pc + 1)) "$bin" |
               awk -v a="$(printf '%x' $((pc)))" '$1 == a":" { print $2 }')
        [ "$insn" = nop ] || { not_ok "$label: $name's site at $pc is '$insn', not a 1-byte nop"; bad=1; }
    done < "$TMPD/notes.$label"
    [ $bad = 0 ] && ok "$label: every site is a 1-byte nop"
}

# count_of FILE KEY: the program's count KEY=N from its line of counts
count_of() { grep -m1 '^polls=' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# map_of FILE MAP: bpftrace's @MAP value (0 when never hit)
map_of() { local v; v=$(sed -n "s/^@$2: //p" "$1"); echo "${v:-0}"; }

spawn_lines=$(grep -n 'tokio::spawn(wrap(' "$LIBRS" | cut -d: -f1 | tr '\n' ' ')

# ---- Tokio's upstream proposal ------------------------------------------------------------------
bin="$DIR/tokio-upstream-dialect"
need_file "$bin" "upstream-dialect program"
check_notes upstream "$bin" "task-start 4 0
task-details 5 1
task-poll-start 1 0
task-poll-end 1 0
task-terminate 2 0
waker-clone 1 0
waker-drop 1 0
waker-wake 1 0"
P="usdt:$bin:tokio"
timeout 60 bpftrace -q -e "
    $P:task-start { @spawns = count(); @announced[arg0] = 1; @kind[arg1] = count(); }
    $P:task-details { @loc[str(arg1), str(arg2), arg3] = count(); }
    $P:task-poll-start { @polls = count(); if (@announced[arg0] != 1) { @unannounced = count(); } @t0[tid] = nsecs; }
    $P:task-poll-end /@t0[tid]/ { @poll_ends = count(); @longest_ms = max((nsecs - @t0[tid]) / 1000000); delete(@t0[tid]); }
    $P:task-terminate { @terminates = count(); @reason[arg1] = count(); }
    $P:waker-clone { @waker_clones = count(); }
    $P:waker-drop { @waker_drops = count(); }
    $P:waker-wake { @waker_wakes = count(); }
    END { clear(@announced); clear(@t0); }" -c "$bin --duration 2 --tasks 6" > "$TMPD/up.out" 2> "$TMPD/up.err"
check_eq "upstream: bpftrace ran the program to completion" 0 "$?"
grep -E '^(ready|polls=)' "$TMPD/up.out"
polls=$(count_of "$TMPD/up.out" polls)
check "upstream: the program polled (polls=$polls)" test "${polls:-0}" -gt 100
for k in polls spawns terminates poll_ends waker_clones waker_drops waker_wakes; do
    check_eq "upstream: bpftrace's $k = the program's hook calls" "$(count_of "$TMPD/up.out" $k)" "$(map_of "$TMPD/up.out" $k)"
done
check_eq "upstream: every task polled was announced by task-start" 0 "$(map_of "$TMPD/up.out" unannounced)"
check "upstream: the long poll seen (longest $(map_of "$TMPD/up.out" longest_ms) ms ≥ 150)" test "$(map_of "$TMPD/up.out" longest_ms)" -ge 150
check_eq "upstream: task-start kind 1 (spawn) for the 7 tasks" "@kind[1]: 7" "$(grep '^@kind' "$TMPD/up.out")"
check_eq "upstream: the tasks completed (reason 0)" "@reason[0]: $(count_of "$TMPD/up.out" terminates)" "$(grep '^@reason' "$TMPD/up.out")"
# task-details: unnamed (""), file src/lib.rs at the workload's spawn lines
locs=$(sed -n 's/^@loc\[, src\/lib.rs, \([0-9]*\)\]: [0-9]*$/\1/p' "$TMPD/up.out" | sort -n | tr '\n' ' ')
check_eq "upstream: task-details name \"\" and the spawn lines of src/lib.rs" "$spawn_lines" "$locs"

# ---- oxide's tokio-dtrace -----------------------------------------------------------------------
bin="$DIR/tokio-dtrace-dialect"
need_file "$bin" "tokio-dtrace-dialect program"
check_notes oxide "$bin" "task-spawn 4 1
task-poll-start 4 1
task-poll-end 4 1
task-terminate 4 1
worker-thread-start 0 1
worker-thread-stop 0 1
worker-thread-park 0 1
worker-thread-unpark 0 1"
# every probe its own semaphore (the usdt crate's __usdt_sema_tokio_<probe>), in .probes
semas=$(readelf -n --wide "$bin" | awk '/Provider: tokio/ { print s } /Semaphore:/ { s=$6 }' | sort -u | wc -l)
check_eq "oxide: 8 distinct semaphores" 8 "$semas"
check "oxide: semaphore symbols as the usdt crate names them" \
    bash -c "nm '$bin' | grep -q ' __usdt_sema_tokio_task__poll__start$'"
P="usdt:$bin:tokio"
timeout 60 bpftrace -q -e "
    $P:task-spawn { @spawns = count(); @announced[arg0] = 1; @loc[str(arg1), arg2] = count(); }
    $P:task-poll-start { @polls = count(); if (@announced[arg0] != 1) { @unannounced = count(); } @t0[tid] = nsecs; }
    $P:task-poll-end /@t0[tid]/ { @poll_ends = count(); @longest_ms = max((nsecs - @t0[tid]) / 1000000); delete(@t0[tid]); }
    $P:task-terminate { @terminates = count(); }
    $P:worker-thread-start { @thread_starts = count(); }
    $P:worker-thread-stop { @thread_stops = count(); }
    $P:worker-thread-park { @parks = count(); }
    $P:worker-thread-unpark { @unparks = count(); }
    END { clear(@announced); clear(@t0); }" -c "$bin --duration 2 --tasks 6" > "$TMPD/ox.out" 2> "$TMPD/ox.err"
check_eq "oxide: bpftrace ran the program to completion" 0 "$?"
grep -E '^(ready|polls=)' "$TMPD/ox.out"
polls=$(count_of "$TMPD/ox.out" polls)
check "oxide: the program polled (polls=$polls)" test "${polls:-0}" -gt 100
for k in polls spawns terminates poll_ends thread_starts thread_stops parks unparks; do
    check_eq "oxide: bpftrace's $k = the program's hook calls" "$(count_of "$TMPD/ox.out" $k)" "$(map_of "$TMPD/ox.out" $k)"
done
check_eq "oxide: every task polled was announced by task-spawn" 0 "$(map_of "$TMPD/ox.out" unannounced)"
check "oxide: the long poll seen (longest $(map_of "$TMPD/ox.out" longest_ms) ms ≥ 150)" test "$(map_of "$TMPD/ox.out" longest_ms)" -ge 150
locs=$(sed -n 's/^@loc\[src\/lib.rs, \([0-9]*\)\]: [0-9]*$/\1/p' "$TMPD/ox.out" | sort -n | tr '\n' ' ')
check_eq "oxide: task-spawn's file and line: the spawn lines of src/lib.rs" "$spawn_lines" "$locs"
finish
