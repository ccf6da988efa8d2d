#!/bin/bash
# Intent: io_uring requests of a Tokio program are counted, timed and linked to the task whose
# poll filled them as the kernel's own tracepoints and the program itself see them, in every
# capture mode (per-event, batched, the uprobe fallback on stock Tokio). The subject is the
# sample service's uring-workload (tokio-uring 0.5 on Tokio 1.53: file tasks writing, reading
# back and fsyncing their files; tokio-uring submits every SQE at park, outside the polls).
#   Run A (whole life, no stuck read): the tracer (--pid, attached while the process waits at
#   --wait-start) and bpftrace on io_uring:io_uring_submit_req / io_uring_complete (same
#   process) — per opcode: submissions equal bpftrace's counts and the program's own count of
#   the tokio-uring calls it made ("uring ops …" line: one SQE per call), completions equal
#   bpftrace's, and the summed submit → complete latency equals bpftrace's (nsecs at the same
#   tracepoints) within 3 µs per request; every request is linked to a task (none unattributed),
#   all of them to the file tasks' spawn site, each task as many as it counted itself (it prints
#   its Tokio task id and its calls), and each completion was consumed by a poll.
#   Run B (--stuck-pipe, the capture ends while the process still runs): the READ on the pipe
#   nobody writes to is in flight, named in its task's stalled finding (opcode READ, the fd the
#   program printed, "pipe:[…]" from its fd table) in the JSON and the terminal; the file
#   tasks have no finding.
#   A program without io_uring has no io_uring section; --no-io-uring turns it off and says so, as
#   does a kernel without the tracepoints (TET_TEST_NO_URING_TP), with a warning. The flight
#   recorder's stalled dump names the READ too.
#   Run C (--stuck-pipe --cancel-at-exit): the stuck READ is cancelled by tokio-uring's driver
#   before the exit ends the capture; the stalled finding names it still, as cancelled
#   (ECANCELED), the same request (user_data) bpftrace saw complete with -125.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_file "$TRACER" "tracer binary"
command -v bpftrace > /dev/null || die_test "bpftrace missing (make deps)"
need_sample 1.53-uring usdt; USDT=$SAMPLE
need_sample 1.53-uring stock; STOCK=$SAMPLE
need_sample 1.53 usdt; PLAIN=$SAMPLE

site_line() { grep -n "// SPAWN-SITE: $1\$" "$ROOT/sample-service/src/uring.rs" | cut -d: -f1; }
# jq: is this spawn site (location, or in the uprobe fallback the future type) the one of
# site_line $l / async fn $fn?
JQ_SITE='def site($l; $fn): (.location // "" | contains($l)) or (.location == null and (.type_name // "" | contains("uring::" + $fn + "::")));'
FILE_LINE=$(site_line uring_file)
STUCK_LINE=$(site_line uring_stuck_read)
[ -n "$FILE_LINE" ] && [ -n "$STUCK_LINE" ] || die_test "SPAWN-SITE markers in sample-service/src/uring.rs"

# IORING_OP_* codes of the calls the workload makes (include/uapi/linux/io_uring.h)
declare -A OPCODE=([openat]=18 [close]=19 [fsync]=3 [read]=22 [write]=23 [unlinkat]=36)

BT='tracepoint:io_uring:io_uring_submit_req /pid == $1/ {
  @sub[args->opcode] = count();
  @s[args->ctx, args->user_data] = nsecs; @o[args->ctx, args->user_data] = args->opcode + 1; }
tracepoint:io_uring:io_uring_complete /@o[args->ctx, args->user_data]/ {
  $k = @o[args->ctx, args->user_data] - 1;
  @done[$k] = count(); @lat[$k] = sum(nsecs - @s[args->ctx, args->user_data]);
  delete(@s[args->ctx, args->user_data]); delete(@o[args->ctx, args->user_data]); }
END { clear(@s); clear(@o); }
BEGIN { printf("ready\n"); }'

# start LABEL BIN DURATION [ARGS…]: the workload waiting at its gate, then the tracer on its PID
# (TRACER_ARGS); sets WP, TP
start() {
    local label=$1 bin=$2 dur=$3; shift 3
    rm -f "$TMPD/gate.$label"
    # its files in the test's directory: a workload stopped by signal cannot unlink them
    TMPDIR="$TMPD" start_bg "run.$label" "$bin" uring-workload --duration "$dur" --wait-start "$TMPD/gate.$label" "$@"
    WP=$BG_PID
    wait_exec "$WP" "$bin" || not_ok "$label: workload started"
    local out=(-o "$TMPD/$label.json")
    [[ " ${TRACER_ARGS[*]} " == *" --flight-recorder "* ]] && out=()  # it writes dumps instead
    start_bg "tr.$label" "$TRACER" --pid "$WP" --ringbuf-size 128M "${out[@]}" "${TRACER_ARGS[@]}"
    TP=$BG_PID
    wait_for_line "$TMPD/tr.$label.err" attached 30 || not_ok "$label: tracer attached"
}

# latency_within T B N: T, B and N integers, N > 0 and |T - B| ≤ 3000 N + 50000 (in the shell: a
# python3 a check cost ~0.35 s of start-up, 18 of them)
latency_within() {
    local v x=() d
    [ $# = 3 ] || return 1
    for v in "$@"; do   # decimal, as python's int() reads them (a leading 0 is no octal)
        [[ $v =~ ^(-?)([0-9]+)$ ]] || return 1
        x+=($(( ${BASH_REMATCH[1]}10#${BASH_REMATCH[2]} )))
    done
    d=$(( x[0] - x[1] )); [ "$d" -lt 0 ] && d=$(( -d ))
    [ "${x[2]}" -gt 0 ] && [ "$d" -le $(( 3000 * x[2] + 50000 )) ]
}

# run A: counts, latencies and links against bpftrace and the program
run_a() {
    local label=$1 bin=$2 R="$TMPD/$1.json" op code
    start "$label" "$bin" 2s --tasks 3
    start_bg "bt.$label" bpftrace -e "$BT" "$WP"
    local btp=$BG_PID
    wait_for_line "$TMPD/bt.$label.out" '^ready' 60 || not_ok "$label: bpftrace attached (BEGIN ran)"
    touch "$TMPD/gate.$label"
    wait_exit "$WP" 60
    check_eq "$label: workload exit 0" 0 "$RC"
    wait_exit "$TP" 120
    check_eq "$label: tracer exit 0 (ended with the process)" 0 "$RC"
    bt_stop "$btp" "$label"
    [ -s "$R" ] || { not_ok "$label: report written"; return; }
    check_eq "$label: nothing dropped" "0 0" "$(jqr "$R" '"\(.totals.drops) \(.io_uring.records_lost)"')"
    local ops; ops=$(grep '^uring ops ' "$TMPD/run.$label.out")
    check "$label: the program printed its op counts" test -n "$ops"
    for op in write read fsync openat close unlinkat; do
        code=${OPCODE[$op]}
        local prog bt_sub bt_done bt_lat tr
        prog=$(sed -n "s/.* $op=\([0-9]*\).*/\1/p" <<< "$ops")
        bt_sub=$(sed -n "s/^@sub\[$code\]: //p" "$TMPD/bt.$label.out")
        bt_done=$(sed -n "s/^@done\[$code\]: //p" "$TMPD/bt.$label.out")
        bt_lat=$(sed -n "s/^@lat\[$code\]: //p" "$TMPD/bt.$label.out")
        tr=$(jq -r --argjson c "$code" '.io_uring.by_opcode[] | select(.opcode == $c) |
             "\(.submitted) \(.completed) \(.latency_ns.sum) \(.in_flight) \(.op)"' "$R")
        check "$label: $op: bpftrace counted it (${bt_sub:-no count})" test "${bt_sub:-0}" -gt 0
        check_eq "$label: $op: submissions = the program's calls = bpftrace's" \
            "${prog:-?} ${prog:-?}" "$(cut -d' ' -f1 <<< "$tr") ${bt_sub:-none}"
        check_eq "$label: $op: completions = bpftrace's, none in flight" \
            "${bt_done:-none} 0" "$(cut -d' ' -f2,4 <<< "$tr")"
        check_eq "$label: $op: named ${op^^}" "${op^^}" "$(cut -d' ' -f5 <<< "$tr")"
        # the same tracepoints, read a few hundred ns apart by two programs: per request the
        # two latencies differ by far less than 3 µs (plus 50 µs in all for an interrupt
        # between the two programs, which a count of 3 requests would not absorb)
        check "$label: $op: summed latency $(cut -d' ' -f3 <<< "$tr") ns vs bpftrace's ${bt_lat:-none} ns (≤ 3 µs per request + 50 µs)" \
            latency_within "$(cut -d' ' -f3 <<< "$tr")" "${bt_lat:-0}" "${bt_done:-0}"
    done
    check_eq "$label: every request linked to a task (linked = submitted, unattributed 0)" \
        "$(jqr "$R" .io_uring.submitted) 0" "$(jqr "$R" '"\(.io_uring.linked) \(.io_uring.unattributed)"')"
    check_eq "$label: all linked requests are the file tasks' (one site, 3 tasks, every request)" \
        "1 3 $(jqr "$R" .io_uring.submitted)" "$(jq -r --arg l "src/uring.rs:$FILE_LINE:" "$JQ_SITE"'
            [.io_uring.by_site[] | select(.linked)] as $s
            | "\($s | length) \([$s[] | select(site($l; "uring_file_task"))][0].tasks)"
              + " \([$s[] | select(site($l; "uring_file_task")) | .by_opcode[].submitted] | add)"' "$R")"
    # each file task printed its Tokio task id and the requests it made: the tracer's count per
    # task must be the same (by id; the uprobe fallback knows tasks by header only: as a multiset)
    local printed; printed=$(sed -n 's/^uring task id=\([0-9]*\) requests=\([0-9]*\)$/\1 \2/p' "$TMPD/run.$label.out" | sort)
    check_eq "$label: 3 file tasks printed their request counts" 3 "$(grep -c . <<< "$printed")"
    check_eq "$label: requests per task = the task's own count (as a multiset)" \
        "$(cut -d' ' -f2 <<< "$printed" | sort -n | tr '\n' ' ')" \
        "$(jq -r '[.tasks[] | select(.io_uring != null) | .io_uring.requests] | sort | map(tostring) | join(" ")' "$R") "
    if [ "$label" != fallback ]; then
        check_eq "$label: requests per task = the task's own count (by task id)" "$printed" \
            "$(jq -r '.tasks[] | select(.io_uring != null) | "\(.task_id) \(.io_uring.requests)"' "$R" | sort)"
    fi
    check_eq "$label: per task: completed = requests, none in flight, by opcode adding up, latencies summing to the total" \
        "true" "$(jq -r '[.tasks[] | select(.io_uring != null) | .io_uring] as $t
            | ([$t[] | .completed == .requests and .in_flight == 0 and ([.by_op[]] | add) == .requests] | all)
              and ([$t[].latency_sum_ns] | add) == ([.io_uring.by_opcode[].latency_ns.sum] | add)' "$R")"
    check_eq "$label: every completion consumed by a poll of its task" \
        "$(jqr "$R" .io_uring.completed) 0 0" "$(jqr "$R" '"\(.io_uring.consumed) \(.io_uring.unconsumed) \(.io_uring.completions_unmatched)"')"
    check "$label: complete → poll delays recorded" \
        test "$(jqr "$R" '[.io_uring.by_opcode[].complete_to_poll_ns.count] | add')" -gt 1000
}

# run B: the stuck read is named in its task's stalled finding
run_b() {
    local label=$1 bin=$2 R="$TMPD/$1.json" fd
    # the workload outlives the capture by far: a tracer starved of CPU (nice 10 on a loaded
    # machine) takes long to end
    start "$label" "$bin" 120s --tasks 1 --stuck-pipe
    touch "$TMPD/gate.$label"
    wait_exit "$TP" 120
    check_eq "$label: tracer exit 0 (--duration)" 0 "$RC"
    check "$label: the workload still runs at the end of the capture" kill -0 "$WP"
    stop_pid "$WP"
    fd=$(sed -n 's/^uring pid=[0-9]* stuck_fd=\([0-9]*\)$/\1/p' "$TMPD/run.$label.out")
    [ -s "$R" ] && [ -n "$fd" ] || { not_ok "$label: report and stuck fd"; return; }
    check_eq "$label: one stalled finding, at the stuck read's site, naming READ on fd $fd (a pipe)" \
        "1 true READ $fd true" "$(jq -r --arg l "src/uring.rs:$STUCK_LINE:" "$JQ_SITE"'
            [.findings[] | select(.kind == "stalled" and site($l; "uring_stuck_read"))] as $f
            | "\($f | length) \($f[0].ongoing) \($f[0].io_uring_in_flight[0].op) \($f[0].io_uring_in_flight[0].fd)"
              + " \($f[0].io_uring_in_flight[0].fd_target | startswith("pipe:["))"' "$R")"
    check "$label: the finding's sentence names it" \
        test "$(jq -r '[.findings[] | select(.kind == "stalled") | .detail | test("waiting on io_uring READ fd '"$fd"' \\(pipe:\\[[0-9]+\\]\\), submitted .* before the end, not completed")] | any' "$R")" = true
    check "$label: the terminal summary names it too" \
        grep -qE "stalled .*waiting on io_uring READ fd $fd \(pipe:\[[0-9]+\]\)" "$TMPD/tr.$label.out"
    [ "$label" = fallback-stuck ] || check_eq "$label: the stuck task waits on io_uring (tasks[].wait), its READ on fd $fd" "io_uring request READ $fd" \
        "$(jq -r --arg l "src/uring.rs:$STUCK_LINE:" "$JQ_SITE"'[.tasks[] | select(site($l; "uring_stuck_read")) | .wait | "\(.kind) \(.class) \(.io_uring.op) \(.io_uring.fd)"] | join(",")' "$R")"
    check_eq "$label: the READ is listed in flight, linked to the stuck task" "READ true" \
        "$(jq -r --argjson fd "$fd" '[.io_uring.in_flight_requests[] | select(.fd == $fd)][0] | "\(.op) \(.task_id != null)"' "$R")"
    check_eq "$label: the file tasks have no finding" 0 \
        "$(jq --arg l "src/uring.rs:$FILE_LINE:" "$JQ_SITE"'[.findings[] | select(site($l; "uring_file_task"))] | length' "$R")"
    check_eq "$label: their requests are linked (none unattributed)" 0 "$(jqr "$R" .io_uring.unattributed)"
}

TRACER_ARGS=(--capture per-event -q)
run_a per-event "$USDT"
TRACER_ARGS=(--capture per-event --duration 3s)
run_b per-event-stuck "$USDT"
TRACER_ARGS=(-q)
run_a batched "$USDT"
check_eq "batched: the poll hooks were attached from the start (binary with io_uring code)" "true false" \
    "$(jqr "$TMPD/batched.json" '"\(.capture.io_uring.linked_to_polls) \(.capture.io_uring.poll_hooks_on_demand)"')"
TRACER_ARGS=(--duration 3s)
run_b batched-stuck "$USDT"
TRACER_ARGS=(--mode uprobe -q)
run_a fallback "$STOCK"
TRACER_ARGS=(--mode uprobe --duration 3s)
run_b fallback-stuck "$STOCK"

# the flight recorder (batched capture into a window): the stalled trigger's dump names the READ
mkdir -p "$TMPD/fl"
TRACER_ARGS=(--flight-recorder 10s --trigger stalled --dump-dir "$TMPD/fl" -q)
start flight "$USDT" 120s --tasks 1 --stuck-pipe
touch "$TMPD/gate.flight"
for i in $(seq 150); do ls "$TMPD"/fl/*-stalled.json > /dev/null 2>&1 && break; sleep 0.1; done
sleep 0.5
kill -INT "$TP"; wait_exit "$TP" 120
check_eq "flight: tracer exit 0" 0 "$RC"
stop_pid "$WP"
FD=$(sed -n 's/^uring pid=[0-9]* stuck_fd=\([0-9]*\)$/\1/p' "$TMPD/run.flight.out")
check_eq "flight: the stalled dump's finding names the READ on the pipe, every request linked" "READ $FD true 0" \
    "$(jq -r '[.findings[] | select(.kind == "stalled")][0] as $f
        | "\($f.io_uring_in_flight[0].op) \($f.io_uring_in_flight[0].fd) \($f.io_uring_in_flight[0].fd_target | startswith("pipe:[")) \(.io_uring.unattributed)"' \
        "$(ls "$TMPD"/fl/*-stalled.json | grep -v trace.json | head -1)" 2>&1)"

# run C (--stuck-pipe --cancel-at-exit): the program returns from tokio-uring's runtime at the
# end, whose driver cancels the stuck READ (ASYNC_CANCEL) before the exit ends the capture: the
# stalled finding still names the READ, in flight for its whole stall, as cancelled — the
# request bpftrace saw complete with -ECANCELED (its user_data) — and it is no longer in flight
BTC='tracepoint:io_uring:io_uring_complete /pid == $1 && args->res == -125/ { printf("cancelled 0x%llx\n", args->user_data); }
BEGIN { printf("ready\n"); }'
TRACER_ARGS=()
start cancel "$USDT" 3s --tasks 1 --stuck-pipe --cancel-at-exit
start_bg bt.cancel bpftrace -e "$BTC" "$WP"
btp=$BG_PID
wait_for_line "$TMPD/bt.cancel.out" '^ready' 60 || not_ok "cancel: bpftrace attached (BEGIN ran)"
touch "$TMPD/gate.cancel"
wait_exit "$WP" 60
check_eq "cancel: workload exit 0, after the driver cancelled the read" "0 1" \
    "$RC $(grep -c '^uring cancelled_at_exit=1$' "$TMPD/run.cancel.out")"
wait_exit "$TP" 120
check_eq "cancel: tracer exit 0 (ended with the process)" 0 "$RC"
bt_stop "$btp" cancel
R="$TMPD/cancel.json"
FD=$(sed -n 's/^uring pid=[0-9]* stuck_fd=\([0-9]*\)$/\1/p' "$TMPD/run.cancel.out")
UD=$(sed -n 's/^cancelled \(0x[0-9a-f]*\)$/\1/p' "$TMPD/bt.cancel.out")
check "cancel: bpftrace saw one request cancelled (${UD:-none})" test "$(wc -w <<< "$UD")" = 1
check_eq "cancel: one stalled finding at the stuck read's site; it waited on the READ on fd $FD (a pipe), cancelled, none in flight" \
    "1 READ $FD true cancelled -125 $UD 0" "$(jq -r --arg l "src/uring.rs:$STUCK_LINE:" "$JQ_SITE"'
        [.findings[] | select(.kind == "stalled" and site($l; "uring_stuck_read"))] as $f
        | ($f[0].io_uring_waited[0] // {}) as $w
        | "\($f | length) \($w.op) \($w.fd) \($w.fd_target // "" | startswith("pipe:[")) \($w.outcome) \($w.res) \($w.user_data)"
          + " \($f[0].io_uring_in_flight | length)"' "$R")"
check "cancel: it was in flight for the whole stall (submitted at or before the stall began, ended after the threshold)" \
    test "$(jq -r '[.findings[] | select(.kind == "stalled" and .io_uring_waited[0] != null)][0] as $f
        | $f != null and ($f.io_uring_waited[0].submitted_at_ns <= $f.first_at_ns + 1000000 and $f.io_uring_waited[0].ended_at_ns >= $f.first_at_ns + $f.threshold_ns)' "$R")" = true
check "cancel: the sentence names it" \
    test "$(jq -r '[.findings[] | select(.kind == "stalled") | .detail | test("waiting on io_uring READ fd '"$FD"' \\(pipe:\\[[0-9]+\\]\\) for [0-9.]+[a-zµ]+, until it was cancelled \\(ECANCELED\\)")] | any' "$R")" = true
check "cancel: the terminal summary names it too" \
    grep -qE "stalled .*waiting on io_uring READ fd $FD \(pipe:\[[0-9]+\]\) for .*, until it was cancelled \(ECANCELED\)" "$TMPD/tr.cancel.out"
check_eq "cancel: nothing in flight at the end" 0 "$(jqr "$R" .io_uring.in_flight)"

# batched capture attaching the hooks only once a ring is seen (as for a binary without io_uring
# code that creates a ring anyway): requests are linked from then on; those filled before the
# hooks took effect are counted as unattributed, never given to a wrong task
export TET_TEST_URING_LAZY=1
TRACER_ARGS=(--duration 8s -q)   # attaching the hooks takes a while for a tracer short of CPU
start lazy "$USDT" 120s --tasks 2
touch "$TMPD/gate.lazy"
wait_exit "$TP" 120
check_eq "lazy: tracer exit 0" 0 "$RC"
stop_pid "$WP"
unset TET_TEST_URING_LAZY
check_eq "lazy: hooks attached on demand" "true true" \
    "$(jqr "$TMPD/lazy.json" '"\(.capture.io_uring.linked_to_polls) \(.capture.io_uring.poll_hooks_on_demand)"')"
check "lazy: requests linked from then on, the earlier ones unattributed ($(jqr "$TMPD/lazy.json" '"\(.io_uring.linked) linked, \(.io_uring.unattributed) not, of \(.io_uring.submitted)"'))" \
    test "$(jqr "$TMPD/lazy.json" '.io_uring.linked > 100 and .io_uring.linked + .io_uring.unattributed == .io_uring.submitted')" = true
check_eq "lazy: linked only to the file tasks" 1 \
    "$(jq '[.io_uring.by_site[] | select(.linked)] | length' "$TMPD/lazy.json")"

# a program without io_uring: no section
start_bg plainrun "$PLAIN" yield-workload --tasks 50 --yields 200 --wait-start "$TMPD/gate.plain"
WP=$BG_PID
wait_exec "$WP" "$PLAIN" || not_ok "plain: workload started"
start_bg trplain "$TRACER" --pid "$WP" -o "$TMPD/plain.json"
TP=$BG_PID
wait_for_line "$TMPD/trplain.err" attached 30 || not_ok "plain: tracer attached"
touch "$TMPD/gate.plain"
wait_exit "$TP" 120
check_eq "plain: tracer exit 0" 0 "$RC"
check_eq "plain: no io_uring section in the JSON, io_uring traced" "null true" \
    "$(jqr "$TMPD/plain.json" '"\(.io_uring) \(.capture.io_uring.traced)"')"
check "plain: no io_uring section in the terminal" bash -c "! grep -q '^io_uring' '$TMPD/trplain.err'"

# a kernel without the io_uring tracepoints: the capture goes on without, and says so
export TET_TEST_NO_URING_TP=1
TRACER_ARGS=(--duration 2s -q)
start notp "$USDT" 120s --tasks 1
touch "$TMPD/gate.notp"
wait_exit "$TP" 120
check_eq "no tracepoints: tracer exit 0" 0 "$RC"
stop_pid "$WP"
unset TET_TEST_NO_URING_TP
check_eq "no tracepoints: off, said why, no section, the tasks still traced" "false true null true" \
    "$(jqr "$TMPD/notp.json" '"\(.capture.io_uring.traced) \(.capture.io_uring.why_not | test("no io_uring_submit_req")) \(.io_uring) \(.totals.polls > 1000)"')"
check "no tracepoints: a warning (the target has io_uring code)" \
    grep -q "warning: io_uring: the kernel has no io_uring_submit_req" "$TMPD/tr.notp.err"

# --no-io-uring
TRACER_ARGS=(--no-io-uring --duration 2s -q)
start nouring "$USDT" 120s --tasks 1 --stuck-pipe
touch "$TMPD/gate.nouring"
wait_exit "$TP" 120
check_eq "--no-io-uring: tracer exit 0" 0 "$RC"
stop_pid "$WP"
check_eq "--no-io-uring: off, said so, no section" "false true null" \
    "$(jqr "$TMPD/nouring.json" '"\(.capture.io_uring.traced) \(.capture.io_uring.why_not | test("--no-io-uring")) \(.io_uring)"')"
finish
