#!/bin/bash
# Intent: a traced process that turns its probes against the tracer (build/fixtures/hostile,
# written from probes-patch/PROBES.md) cannot crash, hold or exhaust it. In every scenario, with
# default options: the tracer exits 0 within a bounded time of the capture's end (--duration)
# or of SIGINT, writes a report that is valid JSON, counts what it refused, and its peak RSS
# (ru_maxrss, measured outside it: tests/peak_rss.py) stays under 512 MiB:
#  - uffd: spawn strings on a userfaultfd page nobody serves. BPF fails to read them and the
#    tracer's own reads give up after 200 ms each, at most 4 readers held, the rest refused
#    (data_loss.process_memory); the process's threads never wait inside a BPF program, so
#    another tracer's uprobe attach and detach on the host (bpftrace) is not held;
#  - batch (hostile_batch, batched capture): a thread's buffer, once the tracer knows it, goes
#    behind such a page: the tracer's in-place reads of it (sweeps) give up the same way;
#  - tasks: 400 000 live tasks (the bound on live tasks followed, the rest counted untracked);
#  - sites: 200 000 distinct spawn sites (the site bound, then one overflow site);
#  - strings: 100 000 distinct 256-byte type names at one site;
#  - workers: 10 000 worker indexes (4096 followed, the polls on the others counted);
#  - idzero: task id 0 (never a Tokio task's: refused, counted);
#  - flood: 1.5 M events of every per-event probe in a random mix (random ids, codes, worker
#    indexes, string pointers and lengths up to 2^64 - 1): bounded like the rest.
# The peak RSS and the time to exit of each scenario are printed (the note's table). The
# scenarios the fixture says it has played (sites, strings, workers, idzero) end by SIGINT 2 s
# after it has, at the latest when the --duration they had would have ended them (the tracer
# takes what the ring still holds before its report, at a SIGINT as at a --duration's end);
# uffd (both ways), batch, tasks and flood keep their --duration.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
H=$BUILD/fixtures/hostile
need_file "$H" "fixture hostile"
need_file "$BUILD/fixtures/hostile_batch" "fixture hostile_batch"
command -v bpftrace > /dev/null || die_test "bpftrace missing (make deps)"
RSS_MAX_KIB=$(( 512 * 1024 ))

# h_start LABEL DUR|sigint -- HOSTILE-ARGS…: the fixture started, and the tracer attached to it by
# --pid (for DUR, or until h_end's SIGINT) under peak_rss.py; sets R (the report), HP (the
# fixture), TP (the tracer's wrapper)
h_start() {
    local label=$1 dur=$2; shift 3
    R=$TMPD/$label.json LABEL=$label T0=$SECONDS DUR=$dur
    start_bg "h.$label" "${HBIN:-$H}" "$@"
    HP=$BG_PID
    wait_for_line "$TMPD/h.$label.out" "waiting for a tracer" 10 || die_test "$label: fixture started ($(cat "$TMPD/h.$label.err"))"
    local targs=(--pid "$HP" -q -o "$R")
    [ "$dur" != sigint ] && targs+=(--duration "$dur")
    start_bg "t.$label" python3 "$ROOT/tests/peak_rss.py" "$TMPD/$label.rss" "$TRACER" "${targs[@]}"
    TP=$BG_PID
    wait_for_line "$TMPD/t.$label.err" attached 60 || die_test "$label: tracer attached ($(tail -2 "$TMPD/t.$label.err"))"
    T0=$SECONDS
}
# h_end [S]: S seconds of capture after the attach (default: the duration), then SIGINT (sigint)
# or the duration's end; the checks every scenario shares; the fixture stopped
h_end() {
    local s=${1:-${DUR%s}} left t1
    left=$(( T0 + s - SECONDS )); [ "$left" -gt 0 ] && sleep "$left"
    [ "$DUR" = sigint ] && kill -INT "$TP"
    t1=$SECONDS
    wait_exit "$TP" 120
    SECS=$(( SECONDS - t1 ))
    check_eq "$LABEL: tracer exit 0" 0 "$RC"
    check "$LABEL: exited within 20 s of the capture's end ($SECS s)" test "$SECS" -le 20
    # the checks read the report (tens of MB for sites, strings, flood: a second of jq each) from
    # the parts they use, taken in one read; a check reading another part adds it here
    jq -c '{totals, data_loss, capture, tasks: [.tasks[] | {state, task_id}], workers: [.workers[] | 0],
            spawn_sites: [.spawn_sites[] | {overflow_site}]}' "$R" > "$R.checked"
    check "$LABEL: the report is valid JSON" bash -c "jq -e .totals '$R.checked' > /dev/null"
    local kib; kib=$(sed -n 's/^maxrss_kib=\([0-9]*\).*/\1/p' "$TMPD/$LABEL.rss")
    check "$LABEL: peak RSS under 512 MiB ($(( ${kib:-0} / 1024 )) MiB)" test "${kib:-999999999}" -le "$RSS_MAX_KIB"
    echo "# $LABEL: peak RSS $(( ${kib:-0} / 1024 )) MiB, exit $SECS s after the capture's end"
    check "$LABEL: the fixture was not harmed (still running)" kill -0 "$HP"
    stop_pid "$HP"
}
# played LABEL S: the fixture has played its scenario (within S seconds)
played() { wait_for_line "$TMPD/h.$1.out" "^hostile: done" "$2" || not_ok "$1: the fixture played its scenario"; }
# h_end_played S: h_end 2 s after the fixture has played (the tracer's backlog of a loaded
# machine taken then), at the latest S seconds after the attach (the --duration it had before)
h_end_played() { local s=$(( SECONDS - T0 + 2 )); h_end $(( s < $1 ? s : $1 )); }
dl() { jqr "$R.checked" "$1"; }

# ---- uffd: reads of the process's memory that never complete ----
for how in 6s sigint; do
    h_start "uffd.$how" "$how" -- uffd
    played "uffd.$how" 10
    if [ "$how" = 6s ]; then
        # another tracer on the host attached and detached while the hostile process runs: a BPF
        # program sleeping in the process's thread would hold its detach (synchronize_rcu_tasks_trace)
        sleep 1
        start_bg bt timeout 60 bpftrace -e "uprobe:$H:rt_poll_begin { @polls = count(); } interval:s:1 { exit(); }"
        wait_exit "$BG_PID" 60
        check_eq "uffd: bpftrace attached, counted and detached meanwhile (exit 0 within 60 s)" 0 "$RC"
        check "uffd: bpftrace saw the process's polls ($(grep '^@polls' "$TMPD/bt.out"))" grep -qE '^@polls: [1-9]' "$TMPD/bt.out"
    fi
    h_end 5
    check "$LABEL: spawns with held strings were analyzed ($(dl .totals.spawns))" test "$(dl .totals.spawns)" -ge 50
    check "$LABEL: BPF could not read the held strings ($(dl .data_loss.string_read_errors))" test "$(dl .data_loss.string_read_errors)" -ge 50
    check_eq "$LABEL: the tracer's reads: 1–4 abandoned, the others refused, none failed ($(jq -c .data_loss.process_memory "$R.checked"))" \
        "true true 0" "$(dl '.data_loss.process_memory | "\(.timed_out >= 1 and .timed_out <= 4) \(.refused >= 1) \(.failed)"')"
done
HBIN=$BUILD/fixtures/hostile_batch h_start batch 5s -- batch
played batch 10
h_end
check_eq "batch: batched capture, its first batch received" "batched 1" "$(dl '"\(.capture.capture) \(.data_loss.batches.received)"')"
check_eq "batch: the sweeps of the held buffer: 1–4 abandoned, the others refused ($(jq -c .data_loss.process_memory "$R.checked"))" \
    "true true" "$(dl '.data_loss.process_memory | "\(.timed_out >= 1 and .timed_out <= 4) \(.refused >= 1)"')"

# ---- what the process makes the tracer keep ----
h_start tasks 8s -- tasks 400000
h_end
check_eq "tasks: 100 000 live tasks followed (--max-tasks), the rest untracked ($(dl .totals.tasks_untracked) spawns, $(dl .totals.polls_untracked) polls)" \
    "100000 true true" "$(dl '.totals | "\(.tasks_live) \(.tasks_untracked >= 1) \(.polls_untracked >= 1)"')"
check_eq "tasks: the JSON lists 10 000 live tasks (--live-tasks), the others omitted" "10000 true" \
    "$(dl '"\([.tasks[] | select(.state != "terminated")] | length) \(.totals.live_tasks_omitted >= 90000)"')"

# the histograms' budget made small enough for 65 536 sites' first values (TET_TEST_HIST_BUDGET:
# a block of 16-bit counters is 64 bytes, the default budget ~65 MiB)
TET_TEST_HIST_BUDGET=$((4 << 20)) h_start sites sigint -- sites 200000
played sites 8
h_end_played 8
check_eq "sites: 65 536 sites, then one overflow site; 10 000 listed (--sites), the others omitted" \
    "true 10000 1" "$(dl '"\((.spawn_sites | length) + .totals.spawn_sites_omitted >= 65537) \(.spawn_sites | length) \([.spawn_sites[] | select(.overflow_site)] | length)"')"
check "sites: the histograms' budget reached, the values past it counted ($(dl .totals.histogram_values_unbucketed))" \
    test "$(dl .totals.histogram_values_unbucketed)" -ge 1

h_start strings sigint -- strings 100000
played strings 6
h_end_played 6
check "strings: sites past the listing bound omitted ($(dl .totals.spawn_sites_omitted))" test "$(dl .totals.spawn_sites_omitted)" -ge 1

h_start workers sigint -- workers 10000
played workers 4
h_end_played 4
check_eq "workers: 4096 followed, the polls naming the others counted" "4096 $(( 10000 - 4096 ))" \
    "$(dl '"\(.workers | length) \(.totals.workers_untracked)"')"

h_start flood 8s -- flood 1500000
h_end
check_eq "flood: live tasks within the bound, bad string pointers refused by the kernel, not fatal" "true true" \
    "$(dl '"\(.totals.tasks_live <= 100000) \(.data_loss.process_memory.failed >= 1)"')"

h_start idzero sigint -- idzero 1000
played idzero 4
h_end_played 4
check_eq "idzero: 1000 spawns and 1000 polls of task id 0 refused, no task of id 0" "2000 0" \
    "$(dl '"\(.totals.task_id_zero) \([.tasks[] | select(.task_id == 0)] | length)"')"
finish
