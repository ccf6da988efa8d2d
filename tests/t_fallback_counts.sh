#!/bin/bash
# Intent: the uprobe fallback sees exactly what an independent uprobe client sees, on stock
# (unpatched, no USDT notes) builds of every supported Tokio line. bpftrace counts every
# raw::poll instance (uprobe:BIN:_ZN5tokio7runtime4task3raw4poll*) and the two wake functions;
# the tracer (--binary, mode auto → uprobe-fallback) and bpftrace are both attached by path before
# the process starts (one bpftrace per binary, its counts of each run read from a dump of its
# maps). With 0 drops: polls = bpftrace's raw::poll hits, wakes = wake_by_val + wake_by_ref hits.
# The blocking-call pathology is found as long_poll and attributed to its future type
# (sample_service::pathology::blocking_call_in_async), and nothing else (healthy paths: the
# pathology driver, load clients, connections, /work subtasks) has a finding. yield-workload
# gives exactly N×(M+1) polls and N tasks at the yield_task future's site (task identity by
# header pointer, task end by Harness::complete). On 1.53 the same comparison runs again with
# one uprobe per function (TET_NO_UPROBE_MULTI=1) so both attach methods are checked.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_file "$TRACER" "tracer binary"
command -v bpftrace > /dev/null || die_test "bpftrace missing (make deps)"

RAW_POLL=_ZN${TET_VOCAB_TOKIO_FN[raw_poll]}   # scripts/tet-vocab.sh (tracer/discover/tokio_fns.def)
WAKE_VAL=_ZN${TET_VOCAB_TOKIO_FN[wake_by_val]}
WAKE_REF=_ZN${TET_VOCAB_TOKIO_FN[wake_by_ref]}

# One bpftrace per binary (bt_open BIN), attached by path before any of its runs: its counts of a
# run are read from a dump of its maps at SIGUSR1 after the run (minus the previous dump), not
# from its exit (attaching and detaching its ~200 uprobes took ~15 s a run). Maps dump in name
# order, @zdump last: a dump is whole once its @zdump line is out. The previous binary's bpftrace
# is sent SIGINT then (it detaches meanwhile) and waited for at the end (bt_stop).
BTN=0 BT_OLD=()
bt_open() {
    local bin=$1
    local bt="uprobe:$bin:$RAW_POLL* { @p = count(); } uprobe:$bin:$WAKE_VAL* { @wv = count(); }"
    bt+=" uprobe:$bin:$WAKE_REF* { @wr = count(); } BEGIN { @zdump = 1; printf(\"ready\\n\"); }"
    [ -n "${BTP:-}" ] && { kill -INT "$BTP"; BT_OLD+=("$BTP:$BT_LABEL"); }
    BTN=$((BTN + 1)) BT_LABEL=$(basename "$(dirname "$bin")") BT_PREV=(0 0 0)
    start_bg "bt.$BTN" bpftrace -e "$bt"
    BTP=$BG_PID BTO="$TMPD/bt.$BTN.out"
    wait_for_line "$BTO" '^ready' 60 || not_ok "$BT_LABEL: bpftrace attached (BEGIN ran): $(tail -2 "$TMPD/bt.$BTN.err")"
}
# bt_counts LABEL: "polls wakes_by_val wakes_by_ref" of the run just ended ("no count" for a count
# bpftrace did not print: it never becomes a 0 that matches a 0)
bt_counts() {
    local n i last v now=()
    n=$(grep -c '^@zdump:' "$BTO")
    kill -USR1 "$BTP"
    for i in $(seq 300); do [ "$(grep -c '^@zdump:' "$BTO")" -gt "$n" ] && break; sleep 0.1; done
    [ "$(grep -c '^@zdump:' "$BTO")" -gt "$n" ] || not_ok "$1: bpftrace dumped its maps at SIGUSR1"
    last=$(awk '/^@zdump:/ { last = cur; cur = ""; next } /^@(p|wv|wr): / { cur = cur $0 "\n" } END { printf "%s", last }' "$BTO")
    for v in p wv wr; do now+=("$(sed -n "s/^@$v: //p" <<< "$last")"); done
    BT_COUNTS=()
    for i in 0 1 2; do
        if [ -n "${now[$i]}" ]; then BT_COUNTS+=($(( now[i] - BT_PREV[i] ))); BT_PREV[$i]=${now[$i]}
        else BT_COUNTS+=("no count"); fi
    done
}

# compare LABEL BIN CMD…: the tracer attached by path (bpftrace is, since bt_open BIN), CMD run,
# counts compared. bpftrace's counts are read as soon as CMD has exited (nothing of the private
# copy runs any more: they are final), while the tracer detaches; with BT_RELEASE=1 bpftrace is
# then sent SIGINT too, so that its detach (~10-25 s for its ~100 uprobes) goes on beside the
# tracer's (~30-60 s for its 293 with one uprobe per function) instead of after it
compare() {
    local label=$1 bin=$2; shift 2
    start_bg "tr.$label" "$TRACER" --binary "$bin" -q --ringbuf-size 128M -o "$TMPD/$label.json"
    local trp=$BG_PID
    wait_for_line "$TMPD/tr.$label.err" attached 30 || { not_ok "$label: tracer attached"; cat "$TMPD/tr.$label.err"; }
    stallmon_start "$label"
    "$@" > "$TMPD/run.$label.out" 2> "$TMPD/run.$label.err"
    check_eq "$label: workload exit 0" 0 "$?"
    stallmon_stop
    kill -INT "$trp"
    bt_counts "$label"
    [ "${BT_RELEASE:-0}" = 1 ] && kill -INT "$BTP"
    wait_exit "$trp" 60
    check_eq "$label: tracer exit 0" 0 "$RC"
    R="$TMPD/$label.json"
    local p=${BT_COUNTS[0]/#no count/} wv=${BT_COUNTS[1]/#no count/} wr=${BT_COUNTS[2]/#no count/}
    check_eq "$label: mode uprobe-fallback" uprobe-fallback "$(jqr "$R" .mode)"
    check_eq "$label: tracer dropped nothing" 0 "$(jqr "$R" .totals.drops)"
    # a count bpftrace did not print fails: it never becomes a 0 that matches a 0
    check "$label: bpftrace counted polls (${p:-no count}) and wakes (${wv:-no count} by value, ${wr:-no count} by ref)" \
        test "${p:-0}" -gt 0 -a $(( ${wv:-0} + ${wr:-0} )) -gt 0
    check_eq "$label: polls: tracer = bpftrace (raw::poll hits)" "${p:-no count}" "$(jqr "$R" .totals.polls)"
    check_eq "$label: poll ends = polls" "$(jqr "$R" .totals.polls)" "$(jqr "$R" .data_loss.probe_hits.task_poll_end)"
    check_eq "$label: wakes: tracer = bpftrace (wake_by_val + wake_by_ref hits)" "$(( ${wv:-0} + ${wr:-0} ))" "$(jqr "$R" .totals.wakes)"
    echo "# $label: polls ${p:-0}, wakes $(( ${wv:-0} + ${wr:-0} )), attach $(jqr "$R" .fallback.attach.method) $(jqr "$R" .fallback.attach.uprobes) uprobes in $(jqr "$R" .fallback.attach.attach_ns) ns, cost $(jq -c .fallback.cost "$R")"
}

# private_copy LINE: a copy of the line's stock build of our own (uprobes attach to an inode, so a
# process of the same file run by anyone else on the machine would be counted by both), in BIN
private_copy() {
    BIN=$TMPD/bin-$1/sample-service
    mkdir -p "$(dirname "$BIN")" && cp "$(sample_bin "$1" stock)" "$BIN"
}
missing=()
for line in "${LINES[@]}"; do
    bin=$(sample_bin "$line" stock)
    if [ ! -x "$bin" ]; then missing+=("tokio-$line/stock"); continue; fi
    private_copy "$line"; bin=$BIN
    L="tokio $line"
    bt_open "$bin"
    compare "serve-$line" "$bin" "$bin" serve --workers 2 --pathology blocking_call --load 20 --duration 4s
    R="$TMPD/serve-$line.json"
    jq -r '.findings[] | "  \(.kind) \(.type_name)"' "$R" | sort | uniq -c
    check "$L: blocking_call found as long_poll at its future type" \
        test "$(jqr "$R" '[.findings[] | select(.kind == "long_poll" and (.type_name // "" | contains("pathology::blocking_call_in_async")))] | length')" -gt 0
    # none, but for a lone long poll that a machine stall recorded by stallmon explains
    check_healthy "$L: future types other than blocking_call_in_async (healthy paths)" "$R" \
        --except-type blocking_call_in_async ""
    check_eq "$L: long_poll findings have no spawn location (fallback)" null \
        "$(jqr "$R" '[.findings[] | select(.kind == "long_poll")][0].location')"
    check_eq "$L: unavailable figures listed" true "$(jqr "$R" '.fallback.unavailable | length > 3')"
    check "$L: per-call cost measured" test "$(jqr "$R" '.fallback.cost.uprobe_uretprobe_ns | floor')" -gt 0

    # yield-workload: N×(M+1) polls and N tasks at yield_task's future type
    N=6 M=25
    compare "yield-$line" "$bin" "$bin" yield-workload --tasks $N --yields $M --workers 2
    R="$TMPD/yield-$line.json"
    check_eq "$L: yield_task future: N×(M+1) polls, N tasks, N ended" "$((N*(M+1))) $N $N" \
        "$(jqr "$R" '[.spawn_sites[] | select(.type_name // "" | contains("workload::yield_task"))] | "\(map(.polls) | add) \(map(.tasks) | add) \(map(.tasks_terminated) | add)"')"
    check_eq "$L: yield_task: every poll but the last pending, the last ready" "$((N*M)) $N" \
        "$(jqr "$R" '[.spawn_sites[] | select(.type_name // "" | contains("workload::yield_task"))] | "\(map(.poll_results.pending) | add) \(map(.poll_results.ready) | add)"')"
done
bin=$TMPD/bin-1.53/sample-service
if [ -x "$bin" ]; then   # under the 1.53 bpftrace of the loop (its last line)
    # the last run of this bpftrace: it detaches beside the tracer (bt_stop below waits for it)
    BT_RELEASE=1 TET_NO_UPROBE_MULTI=1 compare "single-1.53" "$bin" "$bin" serve --workers 2 --pathology blocking_call --load 20 --duration 3s
    check_eq "tokio 1.53: TET_NO_UPROBE_MULTI=1 attaches one uprobe per function" uprobe \
        "$(jqr "$TMPD/single-1.53.json" .fallback.attach.method)"
    check_eq "tokio 1.53: uprobe_multi otherwise (kernel $(uname -r))" uprobe_multi \
        "$(jqr "$TMPD/serve-1.53.json" .fallback.attach.method)"
fi
[ -n "${BTP:-}" ] && BT_OLD+=("$BTP:$BT_LABEL")
for b in "${BT_OLD[@]}"; do bt_stop "${b%%:*}" "${b#*:}"; done
[ ${#missing[@]} = 0 ] || { [ "$TESTS_FAILED" = 0 ] || finish;
    skip_test "stock sample-service builds missing: ${missing[*]} (make builds them)"; }
finish
