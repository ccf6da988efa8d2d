#!/bin/bash
# Intent: on the real thing — per supported Tokio line and per capture mode (batched, the default,
# and per-event), the usdt sample service running every pathology under load, traced by PID for a
# few seconds — each pathology is found at the right
# file:line:col of the sample-service sources (the SPAWN-SITE marker line, the column of its
# tokio::spawn call): blocking_call and cpu_hog → long_poll; lost_waker → lost_waker (not
# stalled); stalled_task → stalled with a live waker (not lost_waker), on its oneshot
# (stall_reason sync, waiting_for oneshot_recv) — and the healthy paths (connections, load
# clients, the /work subtask, the pathology drivers on their 1 s intervals, the spawn storm's tiny
# tasks, slow_dependency's 1.5 s timer: its pending time labelled a timer wait) produce no
# finding (but for a lone long poll that a machine stall recorded by stallmon explains:
# tests/stall_excuse.py). Every pending task at the end says what it waits for; `unknown` only at the
# lost_waker site (it registers nothing). Nothing is dropped, type names decode, the workers are
# seen parking. Default thresholds: with wait reasons a timer wait is never taken for a stall.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer

PATHO=(blocking_call lost_waker stalled_task cpu_hog spawn_storm storm_burst)
HEALTHY=(connection load_client work_subtask pathology_driver slow_dependency)
declare -A LOC
for s in "${PATHO[@]}" "${HEALTHY[@]}"; do LOC[$s]=$(loc_of "$s"); [ -n "${LOC[$s]}" ] || die_test "no SPAWN-SITE: $s"; done

# sel NAME: jq filter selecting findings/sites at that spawn site (locations end in src/…)
sel() { echo "select(.location // \"\" | endswith(\"${LOC[$1]}\"))"; }

missing=()
for line in "${LINES[@]}"; do
  bin=$(sample_bin "$line" usdt)
  if [ ! -x "$bin" ]; then missing+=("tokio-$line/usdt"); continue; fi
  for cap in batched per-event; do
    L="tokio $line $cap"
    tk="$line.$cap"
    rm -f "$TMPD/start.$tk"
    start_bg "svc.$tk" "$bin" serve --workers 2 --pathology all --load 50 --duration 20s \
        --wait-start "$TMPD/start.$tk"
    sp=$BG_PID
    wait_exec "$sp" "$bin" || not_ok "$L: the service started"
    start_bg "tr.$tk" "$TRACER" --pid "$sp" --capture "$cap" --duration 6s --ringbuf-size 128M -o "$TMPD/$tk.json"
    tp=$BG_PID
    wait_for_line "$TMPD/tr.$tk.err" attached 20 || { not_ok "$L: attached"; cat "$TMPD/tr.$tk.err"; continue; }
    stallmon_start "$tk"
    touch "$TMPD/start.$tk"
    wait_exit "$tp" 120
    stallmon_stop
    check_eq "$L: tracer exit 0 after --duration" 0 "$RC"
    stop_pid "$sp"
    # the checks read the report ~25 times: from the parts they use (pending tasks only), not
    # from the whole report (~10 MB, half a second of jq each)
    R="$TMPD/$tk.checked.json"
    jq -c '{capture, totals, findings, workers,
            spawn_sites: [.spawn_sites[] | {location, type_name, tasks, pending_by_wait}],
            tasks: [.tasks[] | select(.state == "pending") | {state, wait, location}]}' \
        "$TMPD/$tk.json" > "$R" || not_ok "$L: the report is JSON"
    check_eq "$L: the report says $cap capture" "$cap" "$(jqr "$R" .capture.capture)"
    jq -r '.findings[] | "  \(.kind) \(.location) task \(.task_id)"' "$R" | sort | uniq -c | sort -rn | head -20
    check_eq "$L: no drops" 0 "$(jqr "$R" .totals.drops)"
    check "$L: polls seen" test "$(jqr "$R" .totals.polls)" -gt 100
    for want in long_poll:blocking_call long_poll:cpu_hog lost_waker:lost_waker stalled:stalled_task; do
        k=${want%%:*} s=${want#*:}
        check "$L: $k found at $s (${LOC[$s]})" \
            test "$(jqr "$R" "[.findings[] | $(sel "$s") | select(.kind == \"$k\")] | length")" -gt 0
    done
    check_eq "$L: lost_waker site is never reported stalled" 0 \
        "$(jqr "$R" "[.findings[] | $(sel lost_waker) | select(.kind == \"stalled\")] | length")"
    check_eq "$L: stalled_task is never reported lost_waker" 0 \
        "$(jqr "$R" "[.findings[] | $(sel stalled_task) | select(.kind == \"lost_waker\")] | length")"
    check_eq "$L: stalled_task: stalled on its oneshot (sync, oneshot_recv)" "sync oneshot_recv" \
        "$(jqr "$R" "[.findings[] | $(sel stalled_task) | select(.kind == \"stalled\") | \"\(.stall_reason) \(.waiting_for[0].kind)\"] | unique | join(\",\")")"
    check "$L: slow_dependency: its pending time is labelled a timer wait" \
        test "$(jqr "$R" "[.spawn_sites[] | $(sel slow_dependency) | .pending_by_wait.timer.periods // 0] | add // 0")" -gt 0
    check_eq "$L: every pending task has a wait; unknown only at the lost_waker site" "0 " \
        "$(jqr "$R" '[.tasks[] | select(.state == "pending" and .wait == null)] | length') $(jqr "$R" "[.tasks[] | select(.state == \"pending\" and .wait.kind == \"unknown\") | select($(sel lost_waker | sed 's/^select(/(/') | not) | .location] | unique | join(\",\")")"
    check "$L: stalled_task findings have a live waker" \
        test "$(jqr "$R" "[.findings[] | $(sel stalled_task) | select(.kind == \"stalled\") | .live_wakers] | min")" -ge 1
    # healthy: every finding is at a pathology site, but for a lone long poll at a healthy site
    # that a machine stall the tracer cannot see (recorded by stallmon) explains
    hl=(); for s in "${HEALTHY[@]}"; do hl+=("${LOC[$s]}"); done
    check_healthy "$L: healthy sites" "$TMPD/$tk.json" "${hl[@]}"
    allowed=$(printf '%s\n' "${PATHO[@]}" "${HEALTHY[@]}" | while read -r s; do echo "${LOC[$s]}"; done | jq -R . | jq -s .)
    check_eq "$L: no finding outside the pathology and healthy sites" "" \
        "$(jq -r --argjson ok "$allowed" '.findings[] | select(.location as $l | [$ok[] | . as $s | ($l // "") | endswith($s)] | any | not) | "\(.kind)@\(.location)"' "$R" | sort -u | tr '\n' ' ')"
    for s in "${HEALTHY[@]}"; do
        check "$L: healthy site $s traced (tasks > 0)" \
            test "$(jqr "$R" "[.spawn_sites[] | $(sel "$s") | .tasks] | add // 0")" -gt 0
    done
    check "$L: blocking_call type name decodes" \
        test "$(jqr "$R" "[.spawn_sites[] | $(sel blocking_call) | .type_name | contains(\"blocking_call_in_async\")] | any")" = true
    check "$L: workers seen parking" test "$(jqr "$R" '[.workers[].parks] | add // 0')" -gt 0
    check "$L: terminal summary has findings" grep -q '^Findings ([1-9]' "$TMPD/tr.$tk.out"
  done
done
[ ${#missing[@]} = 0 ] || { [ "$TESTS_FAILED" = 0 ] || finish;
    skip_test "usdt sample-service builds missing: ${missing[*]} (make builds them)"; }
finish
