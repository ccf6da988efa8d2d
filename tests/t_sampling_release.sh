#!/bin/bash
# Intent: `trace --mode sampling` (issue 27) on a Tokio release no Debian line ships, from the
# range whose thread-local layout the Debian lines do not cover: 1.29-1.39 (`const` thread_local
# init, Id(u64): Option<Id> is a tag and the id; 1.24 has the lazy init, 1.43 and 1.53 the niche;
# tests/tls_matrix.sh has the ranges). A small program (tests/kit/tls_app.sh, against Tokio
# 1.36.0 from ../shared/tokio-src, with DWARF) runs 2 workers: short tasks (300 us polls) and one
# task, hog_compute, that spins 30 ms in a poll every 100 ms. Traced 3 s at 499 Hz with a 10 ms
# long-poll threshold, no uprobe:
#   - the slot is found from the DWARF, tagged;
#   - on-CPU long polls of hog_compute's future, each on one task, hottest frame the program's own
#     (app::crunch, or hog_compute's poll it is inlined in); no finding of another future type
#     (the short tasks);
#   - samples charged to async polls, the 2 workers' loop ids told to the BPF side.
. "$(dirname "$0")/lib.sh"
need_root
need_file "$TRACER" "tracer binary"
command -v cargo > /dev/null || die_test "cargo missing"
W="$ROOT/.cache/tls-matrix"
mkdir -p "$W"
. "$ROOT/tests/kit/tls_app.sh"
V=1.36.0
t0=$SECONDS
tls_app_build "$V" || { not_ok "$V: builds ($(tail -3 "$TMPD/build.$V.log"))"; finish; }
echo "# $V: built in $(( SECONDS - t0 )) s"
"$APP" 30 > "$TMPD/app.out" 2>&1 &
AP=$!
track_pid "$AP"
wait_for_line "$TMPD/app.out" '^ready' 30 || not_ok "$V: program started"
j="$TMPD/s.json"
"$TRACER" trace --pid "$AP" --mode sampling --profile-hz 499 --long-poll-threshold 10ms --duration 3s \
    -o "$j" > "$TMPD/tr.out" 2> "$TMPD/tr.err"
check_eq "$V: tracer exit 0" 0 "$?"
stop_pid "$AP"
[ -s "$j" ] || { not_ok "$V: a report ($(tail -3 "$TMPD/tr.err"))"; finish; }
echo "# $V: slot $(jq -c .task_id_slot "$j"); attribution $(jq -c '.attribution | del(.rule)' "$j")"
echo "# $V: findings $(jq -c '[.findings[] | "\(.seen_as) \(.future_type) \(.samples // .off_cpu_ns) \(.hottest_frame)"]' "$j")"
check_eq "$V: mode sampling, 0 uprobes; slot from the DWARF, tagged" "sampling 0 dwarf tagged" \
    "$(jq -r '"\(.mode) \(.capture.uprobes) \(.task_id_slot.method) \(.task_id_slot.layout)"' "$j")"
check_eq "$V: hog_compute's on-CPU long polls, each with the program's own hottest frame" true \
    "$(jq '[.findings[] | select(.seen_as == "on_cpu" and (.future_type | test("hog_compute")))] | length > 0 and all(.hottest_frame | test("app::(crunch|hog_compute)"))' "$j")"
check_eq "$V: every long poll names its task (the thread-local id), one task" 1 \
    "$(jq '[.findings[] | select(.future_type | test("hog_compute")) | .task | select(. > 0)] | unique | length' "$j")"
check_eq "$V: no finding of another future type (the 300 us polls)" "" \
    "$(jq -r '.findings[] | select(.future_type | test("hog_compute") | not) | .future_type' "$j" | sort -u)"
check_eq "$V: samples in async polls; the 2 workers' loop ids told to the BPF side" true \
    "$(jq '.attribution.in_async_poll > 0 and .capture.blocking_task_ids >= 2' "$j")"
finish
