#!/bin/bash
# Intent: a capture ends at one instant for every probe, in every capture mode, even while the
# target polls as fast as it can (a yield workload, 1 worker, the other CPU left to the tracer,
# a 64 MiB ring that the capture itself never fills): ended by --duration, by SIGINT and by the
# target exiting, the report has 0 drops (the probes, detached one by one in ~0.1 s each, no
# longer flood the ring after the end), task_poll_end hits exceed task_poll_begin hits by at most
# the polls in flight (the tasks the report shows polling) — before the fix they differed by a
# detach's worth of polls — and every analysed event is stamped before the end (capture.last_event_at_ns ≤
# capture.duration_ns). Per-event capture (--capture per-event --probes all), batched capture,
# and the uprobe fallback on the stock build.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
need_sample 1.53 usdt; usdt=$SAMPLE
need_sample 1.53 stock; stock=$SAMPLE

# run LABEL BIN HOW TRACER-ARGS…: HOW = duration | sigint | exit. The yield workload, except
# for batched capture, whose consumer a yield workload outruns on these 2 CPUs (~10 M events/s):
# there a spin workload (20 µs per poll). Under the uprobe fallback the tracer exits only once
# the process has (its uprobe_multi links' release waits in synchronize_srcu while a worker is
# inside a probed raw::poll), so there the workload must outlast the 2 s capture, but not by a
# minute: the spin workload too, 200 000 polls of 20 µs (≥ 4 s) plus what a probed poll costs
# on the host (13 µs on one machine here: ≤ 7 s; 2 µs on another, where 200 × 3000 yields,
# sized for 13 µs, ended in 1.2 s, before the capture). ended_by is checked, so a capture the
# workload's exit ended instead fails.
run() {
    local label=$1 bin=$2 how=$3 yields=20000; shift 3
    [ "$how" = exit ] && yields=1500
    local wl=(yield-workload --tasks 200 --yields $yields)
    if [[ "$label" == batched* || "$label" == fallback* ]]; then
        wl=(spin-workload --tasks 200000 --us 20)
    fi
    rm -f "$TMPD/go"
    start_bg "wl.$label" "$bin" "${wl[@]}" --workers 1 --wait-start "$TMPD/go"
    local wp=$BG_PID
    for _ in $(seq 100); do [ "$(readlink "/proc/$wp/exe")" = "$(readlink -f "$bin")" ] && break; sleep 0.05; done
    local dur=()
    [ "$how" = duration ] && dur=(-d 2s)
    # --nice 0: the other CPU is the tracer's even if something else wakes up on the machine
    # (at the default nice 10 any busy process takes most of it, and the ring fills)
    start_bg "tr.$label" "$TRACER" --pid "$wp" "${dur[@]}" --ringbuf-size 64M --nice 0 -q -o "$TMPD/$label.json" "$@"
    local tp=$BG_PID
    wait_for_line "$TMPD/tr.$label.err" attached 30 || not_ok "$label: tracer attached: $(cat "$TMPD/tr.$label.err")"
    touch "$TMPD/go"
    if [ "$how" = sigint ]; then sleep 2; kill -INT "$tp"; fi
    wait_exit "$tp" 60
    check_eq "$label: tracer exit 0" 0 "$RC"
    stop_pid "$wp"
    [ -s "$TMPD/$label.json" ] || { not_ok "$label: report written"; return; }
    # the checks below read the parts they use (polling tasks only), not the whole report:
    # 200000 spun tasks make it tens of MB, seconds of jq per check
    local R="$TMPD/$label.checked.json"
    jq -c '{totals, capture, data_loss: {probe_hits: .data_loss.probe_hits},
            tasks: [.tasks[] | select(.state == "polling") | {state}]}' "$TMPD/$label.json" > "$R" ||
        not_ok "$label: the report is JSON"
    check "$label: the target polled during the capture (polls > 10000)" test "$(jqr "$R" .totals.polls)" -gt 10000
    check_eq "$label: 0 drops (the ring never filled during the capture)" 0 "$(jqr "$R" .totals.drops)"
    check_eq "$label: task_poll_begin hits − task_poll_end hits = the polls in flight at the end ($(jqr "$R" '"\(.data_loss.probe_hits.task_poll_begin) − \(.data_loss.probe_hits.task_poll_end)"'))" \
        "$(jqr "$R" '[.tasks[] | select(.state == "polling")] | length')" \
        "$(jqr "$R" '.data_loss.probe_hits.task_poll_begin - .data_loss.probe_hits.task_poll_end')"
    check "$label: every analysed event stamped before the end ($(jqr "$R" '"\(.capture.last_event_at_ns) ≤ \(.capture.duration_ns)"'))" \
        test "$(jqr "$R" '.capture.last_event_at_ns <= .capture.duration_ns')" = true
    local ended="process_exit the target's exit"
    [ "$how" = duration ] && ended="duration --duration"
    [ "$how" = sigint ] && ended="signal SIGINT"
    check_eq "$label: ended by ${ended#* }" "${ended%% *}" "$(jqr "$R" .capture.ended_by)"
}

for how in duration sigint exit; do
    run "per-event-$how" "$usdt" $how --capture per-event --probes all
done
run batched-duration "$usdt" duration
run batched-sigint "$usdt" sigint
run fallback-duration "$stock" duration --mode uprobe
run fallback-sigint "$stock" sigint --mode uprobe
finish
