#!/bin/bash
# Intent: the tracer core's pure parts are right, without BPF: log-linear histograms stay within
# their stated relative error (1/32) against exact quantiles of 100k log-uniform values, and merge
# exactly; durations parse (ns/us/µs/ms/s/m/h, fractions) and malformed/absurd ones are refused;
# the analyzer's state machine gives the right scheduling delay, pending time, busy time and
# lifetime on synthetic events; detectors: lost_waker only with zero live wakers and after its
# threshold, stalled with a live or unknown waker (never both), one finding per task and kind,
# yield_now self-wakes explained, spawn_blocking exempt from long_poll, never_yields while still in
# the poll; fallback identity by header pointer (reuse after terminate = new task); drops switch
# lost_waker off; live tasks bounded; timeline bounded; untrusted text sanitized for terminals;
# spawn sites in the tokio crate's own sources (any install) marked runtime, listed after the program's.
# --mode sampling's analysis (analyze/sampling.c) on synthetic samples and sleeps: an on-CPU
# long_poll run of N samples, a run broken by an nvcsw change, a blocked sleep finding with its
# system call and kernel frames, samples and a sleep outside a poll's body (outside_poll_body: no task, no run), hottest frames most first.
# --remote-write's encoder: the exposition text as a snappy WriteRequest, read back field by field
# (labels unescaped, the run's labels merged and sorted, malformed lines skipped).
# The JSON report of that synthetic capture has every key later checks rely on.
. "$(dirname "$0")/lib.sh"
need_file "$BUILD/fixtures/unit_trace" "unit test binary"

"$BUILD/fixtures/unit_trace" "$TMPD/unit.json" > "$TMPD/unit.out" 2>&1
rc=$?
grep -E '^(not ok|# )' "$TMPD/unit.out"
check_eq "unit_trace: all checks pass ($(grep -c '^ok' "$TMPD/unit.out") ok)" 0 "$rc"
check "unit_trace: ran its checks" grep -q '^# [0-9]* checks, 0 failed' "$TMPD/unit.out"

J="$TMPD/unit.json"
check "report is valid JSON" jq -e . "$J" > /dev/null
for k in schema_version mode totals.polls totals.wakes totals.spawns totals.events totals.drops \
         capture.duration_ns capture.thresholds.long_poll_ns data_loss.drops_by_probe; do
    check "report has .$k" jq -e ".$k != null" "$J" > /dev/null
done
check_eq "tasks[] have task_id location type_name polls" 0 \
    "$(jq '[.tasks[] | select(has("task_id") and has("location") and has("type_name") and has("polls") | not)] | length' "$J")"
check_eq "spawn_sites[] have location type_name tasks polls and busy/poll/sched/pending figures" 0 \
    "$(jq '[.spawn_sites[] | select(has("location") and has("type_name") and has("tasks") and has("polls") and has("busy_ns") and has("poll_ns") and has("sched_ns") and has("pending_ns") | not)] | length' "$J")"
check_eq "findings[] have kind task_id location type_name detail" 0 \
    "$(jq '[.findings[] | select(has("kind") and has("task_id") and has("location") and has("type_name") and has("detail") | not)] | length' "$J")"
check_eq "findings of the synthetic capture" "long_poll:13 long_poll:7 long_poll:9 lost_waker:3 never_yields:9 self_wake:6 stalled:10 stalled:2 stalled:4" \
    "$(jq -r '[.findings[] | "\(.kind):\(.task_id)"] | sort | join(" ")' "$J")"
check_eq "a task spawned before the trace has location null" null \
    "$(jq -r '.tasks[] | select(.task_id == 4) | .location' "$J")"
check_eq "location format file:line:col" "src/a.rs:10:9" \
    "$(jq -r '.spawn_sites[] | select(.type_name == "a::one") | .location' "$J")"
# every figure has its unit in its key, or is a count/ratio/identity named in the schema doc
check_eq "numeric keys carry a unit or are documented" "" \
    "$(jq -r '[paths(numbers) | map(select(type == "string")) | last] | unique | .[]' "$J" |
       grep -vE '_ns$|^(count|min|max|p50|p90|p99|mean|sum)$' |
       while read -r key; do grep -q "\`$key\`" "$ROOT/docs/report-schema.md" 2>/dev/null || echo "$key"; done | tr '\n' ' ' | sed 's/ $//')"
finish
