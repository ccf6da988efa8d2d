#!/bin/bash
# Intent: in batched capture, a task the sample rate leaves out costs its service no trap and no
# call it does not need (probes-patch/PROBES.md "When a thread flushes", probes-patch/README.md
# gating). The usdt sample service (Tokio 1.53, one worker) serves its own loopback load at
# 100 requests/s, so its worker sleeps ~10 ms between requests; bpftrace, an observer we did not
# write, counts the batches the process hands over by the head's `reason` (uprobes on the four
# event_batch sites' functions, the `buf` argument) and the calls of the out-of-line task_wait
# hook. At --sample-rate 65535 no task of the run is recorded (the report says so: 0 polls
# analysed): no batch is flushed for a park (reason 2: a batch of park records alone waits for
# the age rule; before, every wake-up after a sleep of over 1 ms flushed one, a trap per
# request), and task_wait is never called (its gate sees no recorded poll open; before, every
# I/O wait of every request called it). Control, --sample-rate 1 on the same load: every task
# recorded, batches flushed for parks and task_wait called, so the two counts can be seen.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
command -v bpftrace > /dev/null || die_test "bpftrace missing (make deps)"
BIN=$(sample_bin 1.53 usdt)
need_file "$BIN" "the tokio-1.53 usdt sample service"

# run LABEL RATE: the service behind a gate, the tracer and bpftrace attached, 2 s of load.
# Leaves $TMPD/LABEL.json and bpftrace's maps in $TMPD/bt.LABEL.out.
run() {
    local label=$1 rate=$2 sp trp btp
    rm -f "$TMPD/gate.$label"
    start_bg "svc.$label" "$BIN" serve --workers 1 --load 100 --concurrency 1 --load-paths / \
        --duration 2s --wait-start "$TMPD/gate.$label"
    sp=$BG_PID
    wait_exec "$sp" "$BIN" || not_ok "$label: the service started"
    start_bg "tr.$label" "$TRACER" --pid "$sp" --sample-rate "$rate" -q -o "$TMPD/$label.json"
    trp=$BG_PID
    wait_for_line "$TMPD/tr.$label.err" attached 30 || not_ok "$label: tracer attached"
    # emit(buf, len, seq, clock, mono_ns): the head's reason is the byte at buf + 29
    start_bg "bt.$label" bpftrace -e "
        uprobe:$BIN:*usdt3imp13event_batch_*4emit* { @reason[*(uint8 *)(arg0 + 29)] = count(); }
        uprobe:$BIN:*usdt3imp9task_wait17h* { @task_wait = count(); }
        BEGIN { printf(\"ready\\n\"); }"
    btp=$BG_PID
    wait_for_line "$TMPD/bt.$label.out" '^ready' 60 || not_ok "$label: bpftrace attached"
    touch "$TMPD/gate.$label"
    wait_exit "$sp" 60
    check_eq "$label: service exit 0" 0 "$RC"
    kill -INT "$trp"; wait_exit "$trp" 60
    check_eq "$label: tracer exit 0" 0 "$RC"
    bt_stop "$btp" "$label"
}
# bt LABEL KEY: a count bpftrace printed (0 when it printed none)
bt() { local v; v=$(sed -n "s/^@$2: //p" "$TMPD/bt.$1.out"); echo "${v:-0}"; }

run unsampled 65535
R="$TMPD/unsampled.json"
check_eq "unsampled: capture.sample_rate 65535" 65535 "$(jqr "$R" .capture.sample_rate)"
check "unsampled: the load ran (≥ 150 polls, $(jqr "$R" .totals.polls))" test "$(jqr "$R" .totals.polls)" -ge 150
check "unsampled: the worker parked between requests (≥ 50 parks, $(jqr "$R" .totals.parks))" \
    test "$(jqr "$R" .totals.parks)" -ge 50
check_eq "unsampled: no task recorded (0 polls analysed)" 0 "$(jqr "$R" .totals.analyzed.polls)"
seen=$(awk -F': ' '/^@reason\[/ { n += $2 } END { print n + 0 }' "$TMPD/bt.unsampled.out")
check "unsampled: bpftrace saw batches ($seen)" test "$seen" -gt 0
check_eq "unsampled: no batch flushed for a park (reason 2)" 0 "$(bt unsampled 'reason\[2\]')"
check_eq "unsampled: task_wait never called" 0 "$(bt unsampled task_wait)"

run all 1
R="$TMPD/all.json"
check "all: every task recorded (polls analysed = polls, $(jqr "$R" .totals.polls))" \
    test "$(jqr "$R" .totals.analyzed.polls)" = "$(jqr "$R" .totals.polls)" -a "$(jqr "$R" .totals.polls)" -ge 150
check "all: batches flushed for parks ($(bt all 'reason\[2\]'))" test "$(bt all 'reason\[2\]')" -gt 0
check "all: task_wait called ($(bt all task_wait))" test "$(bt all task_wait)" -gt 0
sed 's/^/# unsampled: /' "$TMPD/bt.unsampled.out" | grep '@'
sed 's/^/# all: /' "$TMPD/bt.all.out" | grep '@'
finish
