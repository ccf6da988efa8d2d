#!/bin/bash
# Intent: `make demo`, the README's first command, does what the README says: it builds, runs the
# usdt sample service under load with every pathology, traces it, prints the findings and writes
# the reports. Judged against the sample service's sources, not the tracer: the printed findings
# name each planted pathology at its spawn site (the "// SPAWN-SITE:" marker line and the column
# of its tokio::spawn call) with the detector tests/t_trace_sample.sh and the pathology docs assign
# to it — blocking_call and cpu_hog → long_poll (and starvation, when they hold both workers at
# once: held by them alone, with victims), starvation (every worker held at once for 120 ms by
# its tasks) → starvation (≥ 1 episode held by its tasks alone over the 2 workers, 100–400 ms,
# late timers as victims; no stalled finding but stalled_task's and the lock waiters'), lost_waker → lost_waker,
# stalled_task → stalled (on its oneshot), deadlock → two `deadlock` findings (deadlock_a + deadlock_b,
# the three deadlock_join tasks: their cycles at exactly those sites) and its lock waiters
# (mutex_waiter, rwlock_waiter, semaphore_waiter) → stalled, `lock_held` by lock_holder, its lock_ordered
# tasks (contention in one order) → stalled, `lock_held` — and name no healthy site (sample-service/README.md: everything else must
# produce no finding; slow_dependency, a 1.5 s timer, is a timer wait, not a stall) but for a lone
# long poll that a machine stall recorded by stallmon explains (tests/stall_excuse.py); report.html is complete (doctype … closing </html>), report.json and
# trace.json are valid JSON, and the report is the demo's capture (mode usdt, batched, ended by
# its duration, no drops). Run as `make demo DEMO_OUT=$TMPD/demo` so that a user's build/demo is
# left as it was (checked: its files' checksums before and after).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_file "$(sample_bin 1.53 usdt)" "usdt sample service (1.53)"

PATHO=(blocking_call cpu_hog lost_waker stalled_task starvation mutex_waiter rwlock_waiter semaphore_waiter
       lock_ordered)
declare -A KIND=([blocking_call]=long_poll [cpu_hog]=long_poll [lost_waker]=lost_waker
                 [stalled_task]=stalled [starvation]=starvation [mutex_waiter]=stalled
                 [rwlock_waiter]=stalled [semaphore_waiter]=stalled [lock_ordered]=stalled)
DEADLOCKED=(deadlock_a deadlock_b deadlock_join_a deadlock_join_b deadlock_join_c)
HEALTHY=(connection load_client work_subtask pathology_driver spawn_storm storm_burst slow_dependency
         lock_holder)
declare -A LOC
for s in "${PATHO[@]}" "${HEALTHY[@]}" "${DEADLOCKED[@]}"; do
    LOC[$s]=$(loc_of "$s"); [ -n "${LOC[$s]}" ] || die_test "no SPAWN-SITE marker: $s"
done

snapshot() { [ -d "$ROOT/build/demo" ] && (cd "$ROOT/build/demo" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum); }
before=$(snapshot)

D="$TMPD/demo"
stallmon_start demo   # a witness of machine stalls, for a healthy site's lone long poll
steal_ms() { awk '$1 == "cpu" { print $9 * 10 }' /proc/stat; }   # all CPUs' steal (/proc/stat), ms
steal0=$(steal_ms)
start=$(date +%s)
make -C "$ROOT" --no-print-directory demo DEMO_OUT="$D" > "$TMPD/demo.out" 2> "$TMPD/demo.err" < /dev/null
rc=$?
stallmon_stop
echo "# make demo: exit $rc after $(( $(date +%s) - start )) s; the kernel counted $(( $(steal_ms) - steal0 )) ms of CPU steal meanwhile"
sed 's/^/# | /' "$TMPD/demo.out" | tail -n 25
check_eq "make demo exits 0" 0 "$rc"
[ "$rc" = 0 ] || { tail -n 30 "$TMPD/demo.err"; }
check_eq "DEMO_OUT: build/demo left as it was" "$before" "$(snapshot)"

# ---- the printed findings: the block after "demo: findings by spawn site:" ----
awk '/^demo: findings by spawn site:/ { on = 1; next } on && /^  [a-z_]+  / { print } on && /^demo: / { on = 0 }' \
    "$TMPD/demo.out" > "$TMPD/findings"
check "the demo prints its findings by spawn site" test -s "$TMPD/findings"
for s in "${PATHO[@]}"; do
    want="${KIND[$s]}  [^ ]*${LOC[$s]}  ×[0-9]+"
    check "planted $s: printed as ${KIND[$s]} at ${LOC[$s]}" grep -qE "^  $want( |\$)" "$TMPD/findings"
done
# a healthy site has no finding, but for a single long poll that a machine stall the tracer cannot
# see (stallmon's record: a real-time thread on some CPU kept from running through it) explains
hl=(); for s in "${HEALTHY[@]}"; do hl+=("${LOC[$s]}"); done
check_healthy "healthy sites (${HEALTHY[*]})" "$D/report.json" "${hl[@]}"
check_eq "every printed finding is a planted pathology (kind at its site) or at a healthy site (judged above)" "" \
    "$(while read -r kind loc _; do
           hit=""
           for s in "${PATHO[@]}"; do
               [ "$kind" = "${KIND[$s]}" ] && [[ "$loc" == *"${LOC[$s]}" ]] && hit=1
               # two long-poll pathologies holding both workers at once starve the runtime;
               # the starvation pathology's polls are long polls too
               [ "$kind" = starvation ] && [ "${KIND[$s]}" = long_poll ] && [[ "$loc" == *"${LOC[$s]}" ]] && hit=1
               [ "$s" = starvation ] && [[ "$kind" =~ ^(long_poll|never_yields)$ ]] && [[ "$loc" == *"${LOC[$s]}" ]] && hit=1
           done
           for s in "${HEALTHY[@]}"; do [[ "$loc" == *"${LOC[$s]}" ]] && hit=1; done
           for s in "${DEADLOCKED[@]}"; do [ "$kind" = deadlock ] && [[ "$loc" == *"${LOC[$s]}" ]] && hit=1; done
           [ -n "$hit" ] || echo "$kind $loc"
       done < "$TMPD/findings")"
lp=("${LOC[starvation]}"); for s in "${PATHO[@]}"; do [ "${KIND[$s]}" = long_poll ] && lp+=("${LOC[$s]}"); done
hl_json=$(printf '%s\n' "${lp[@]}" "${hl[@]}" | jq -R . | jq -s .)
check_eq "starvation episodes (if any) are held by long-poll pathologies (or healthy sites, judged above), each with victims" "" \
    "$(jq -r --argjson ok "$hl_json" '.findings[] | select(.kind == "starvation") |
        (.held_by[] | select(.location as $l | [$ok[] | . as $s | ($l // "") | endswith($s)] | any | not) | "held by \(.location)"),
        (select((.victims.timers_late + .victims.tasks_delayed) == 0) | "no victims at \(.location)")' "$D/report.json")"
STV="[.findings[] | select(.kind == \"starvation\" and ([.held_by[] | .location // \"\" | endswith(\"${LOC[starvation]}\")] | all))]"
check "starvation pathology: episodes held by its tasks alone, over the 2 workers, ~120 ms, timers late as victims ($(jq -c "$STV | map({w: .worker_threads, ms: (.value_ns / 1e6 | floor), timers: .victims.timers_late})" "$D/report.json"))" \
    test "$(jq "$STV | map(select(.worker_threads == 2 and .value_ns >= 100000000 and .value_ns <= 400000000 and .victims.timers_late >= 1)) | length" "$D/report.json")" -ge 1
check_eq "starvation pathology: the timers it made late are no stall (no stalled finding but stalled_task's and the lock waiters')" "" \
    "$(jq -r --arg l "${LOC[stalled_task]}" --arg m "${LOC[mutex_waiter]}" --arg r "${LOC[rwlock_waiter]}" --arg s "${LOC[semaphore_waiter]}" --arg o "${LOC[lock_ordered]}" \
        '[.findings[] | select(.kind == "stalled") | select((.location // "") as $x | [$l, $m, $r, $s, $o] | map(. as $e | $x | endswith($e)) | any | not) | "\(.location) \(.stall_reason)"] | unique | join(", ")' "$D/report.json")"
cyc() { printf '%s\n' "$@" | sort | tr '\n' ' '; }
check_eq "deadlock pathology: two deadlocks, their cycles at the deadlock sites" \
    "$(printf '%s\n' "$(cyc "${LOC[deadlock_a]}" "${LOC[deadlock_b]}")" "$(cyc "${LOC[deadlock_join_a]}" "${LOC[deadlock_join_b]}" "${LOC[deadlock_join_c]}")" | sort | tr '\n' '|')" \
    "$(jq -r '.findings[] | select(.kind == "deadlock") | [.cycle[].location | sub(".*/src/"; "src/")] | sort | join(" ")' "$D/report.json" | sed 's/$/ /' | sort | tr '\n' '|')"
check_eq "deadlock pathology: its lock waiters are stalled on the locks lock_holder holds" \
    "mutex_waiter=lock_held:tokio::sync::Mutex rwlock_waiter=lock_held:tokio::sync::RwLock semaphore_waiter=lock_held:tokio::sync::Semaphore" \
    "$(for s in mutex_waiter rwlock_waiter semaphore_waiter; do printf '%s=%s ' "$s" "$(jq -r --arg l "${LOC[$s]}" --arg h "${LOC[lock_holder]}" '[.findings[] | select(.kind == "stalled" and ((.location // "") | endswith($l))) | select((.held_by.location // "") | endswith($h)) | "\(.stall_reason):\(.held_by.primitive)"] | unique | join(",")' "$D/report.json")"; done | sed 's/ $//')"
check "the tracer's summary (printed by the demo) lists findings" grep -qE '^Findings \([0-9]+\)' "$TMPD/demo.out"

# ---- the reports ----
H="$D/report.html"
check "report.html written into DEMO_OUT" test -s "$H"
check "the demo names report.html's path" grep -qF "HTML report: $H" "$TMPD/demo.out"
check "report.html starts with a doctype" bash -c "head -c 200 '$H' | grep -qi '^<!doctype html'"
check "report.html is complete (ends with </html>)" bash -c "tail -c 200 '$H' | tr -d ' \n' | grep -qi '</html>\$'"
R="$D/report.json"
valid_json() { jq -e "$1" "$2" > /dev/null; }   # valid_json FILTER FILE: parses, FILTER true
check "report.json is valid JSON (an object)" valid_json 'type == "object"' "$R"
check "trace.json is valid JSON (a trace-event file)" valid_json '.traceEvents | length > 0' "$D/trace.json"
check_eq "report: the demo's capture (usdt, batched, ended by its duration, 0 drops)" "usdt batched duration 0" \
    "$(jq -r '"\(.mode) \(.capture.capture) \(.capture.ended_by) \(.totals.drops)"' "$R")"
check "slow_dependency: its pending time is labelled a timer wait" \
    test "$(jq "[.spawn_sites[] | select(.location // \"\" | endswith(\"${LOC[slow_dependency]}\")) | .pending_by_wait.timer.periods // 0] | add // 0" "$R")" -gt 0
check_eq "stalled_task: stalled on its oneshot (the JSON says what it waits for)" "sync oneshot_recv" \
    "$(jq -r "[.findings[] | select(.kind == \"stalled\" and (.location // \"\" | endswith(\"${LOC[stalled_task]}\"))) | \"\(.stall_reason) \(.waiting_for[0].kind)\"] | unique | join(\",\")" "$R")"
check_eq "report.json has the printed findings (same kinds at the same sites)" \
    "$(awk '{ print $1, $2, $3 }' "$TMPD/findings" | sort)" \
    "$(jq -r '.findings | group_by(.kind + " " + (.location // "?"))[] | "\(.[0].kind) \(.[0].location // "?") ×\(length)"' "$R" | sort)"
finish
