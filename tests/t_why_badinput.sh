#!/bin/bash
# Intent: "why was this poll slow" degrades honestly, never crashes, never names a wrong frame:
#  - bad options (--profile-hz not a number / out of range, --stacks with --no-sched or
#    --profile-hz 0, --stacks empty or unwritable): one line, the documented exit status, nothing
#    attached (the target's semaphores stay 0) and no file left behind;
#  - a kernel without the sched BTF tracepoints (TET_TEST_NO_SCHED_TP=1, the same verdict as a
#    real lack): exit 0, one warning naming it, the report says why (why.sched false,
#    why_no_sched), no poll is split (blocked_ns 0 everywhere), the CPU profile still works;
#  - perf_event_open refused (TET_TEST_NO_PERF=1, the EACCES path): exit 0, one warning, no profile
#    (why_no_profile names perf_event_paranoid), the split still known, --stacks an empty file;
#  - --no-sched: neither the split nor samples, the report says it was turned off;
#  - a stripped copy of the usdt sample service: exit 0, the report notes it is stripped, its own
#    frames are named module+0xOFFSET (never a name from somewhere else), the blocking call's
#    syscall is still named (kernel stack);
#  - a capture of a process that exits mid-way: its stacks are still symbolized (the symbolizer
#    keeps the files it opened) — the report's frames are names, not addresses.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
need_sample 1.53 usdt; bin=$SAMPLE

# start_svc BIN TAG [SECONDS [GATE]]: the service under load, all pathologies (120 s: every
# capture of a section ends before it, however slow the machine; the test stops it), its runtime
# held until GATE exists if given; sets SP
start_svc() {
    local gate=()
    [ -n "${4:-}" ] && gate=(--wait-start "$4")
    start_bg "svc.$2" "$1" serve --workers 2 --pathology all --load 50 --duration "${3:-120}s" "${gate[@]}"
    SP=$BG_PID
    for _ in $(seq 200); do [ "$(readlink "/proc/$SP/exe")" = "$(readlink -f "$1")" ] && break; sleep 0.05; done
}

# ---- options ----
start_svc "$bin" opts
expect_fail "--profile-hz not a number" 3 "--profile-hz 'fast': expected a whole number" "$TRACER" --pid "$SP" --profile-hz fast
expect_fail "--profile-hz negative" 3 "--profile-hz '-5': expected a whole number" "$TRACER" --pid "$SP" --profile-hz -5
expect_fail "--profile-hz too high" 3 "--profile-hz '20000': must be between 0 and 10000" "$TRACER" --pid "$SP" --profile-hz 20000
expect_fail "--stacks with --no-sched" 3 "--stacks needs the CPU profile, which --no-sched turns off" "$TRACER" --pid "$SP" --no-sched --stacks "$TMPD/s.folded"
expect_fail "--stacks with --profile-hz 0" 3 "--stacks needs the CPU profile" "$TRACER" --pid "$SP" --profile-hz 0 --stacks "$TMPD/s.folded"
expect_fail "--stacks empty" 3 "--stacks: empty file name" "$TRACER" --pid "$SP" --stacks ""
expect_fail "--stacks unwritable" 4 "cannot write the folded stacks $TMPD/nodir/s.folded" "$TRACER" --pid "$SP" --stacks "$TMPD/nodir/s.folded"
check_eq "nothing left behind (no folded file, no temporary)" "" "$(ls "$TMPD" | grep -E 'folded')"
check_eq "semaphores still 0 after the refusals" 0 "$(sem_total "$SP" 2>/dev/null || echo 0)"

# ---- a kernel without the tracepoints ----
TET_TEST_NO_SCHED_TP=1 "$TRACER" --pid "$SP" -d 3s --profile-hz 499 -o "$TMPD/notp.json" > "$TMPD/notp.out" 2> "$TMPD/notp.err"
check_eq "no tracepoints: exit 0" 0 "$?"
check "no tracepoints: one warning says so" grep -q "^tokio-ebpf-trace: warning: .*no sched_switch/sched_wakeup BTF tracepoints" "$TMPD/notp.err"
check_eq "no tracepoints: why.sched false" false "$(jqr "$TMPD/notp.json" .why.sched)"
check "no tracepoints: why_no_sched says why" test -n "$(jqr "$TMPD/notp.json" '.why.why_no_sched // empty')"
check_eq "no tracepoints: nothing blocked anywhere" 0 "$(jqr "$TMPD/notp.json" '[.spawn_sites[].blocked_ns] | add')"
check "no tracepoints: the CPU profile still works" test "$(jqr "$TMPD/notp.json" .why.cpu_samples_in_polls)" -gt 10
check "no tracepoints: the summary says polls are not split" grep -q "no poll time split" "$TMPD/notp.out"

# ---- perf_event_open refused ----
TET_TEST_NO_PERF=1 "$TRACER" --pid "$SP" -d 2s -o "$TMPD/noperf.json" --stacks "$TMPD/noperf.folded" > /dev/null 2> "$TMPD/noperf.err"
check_eq "perf refused: exit 0" 0 "$?"
check "perf refused: one warning says so" grep -q "^tokio-ebpf-trace: warning: perf_event_open refused" "$TMPD/noperf.err"
check_eq "perf refused: no profile, the split still known" "0 true" \
    "$(jqr "$TMPD/noperf.json" '"\(.why.profile_hz) \(.why.sched)"')"
check "perf refused: the report says why" \
    bash -c "jq -r .why.why_no_profile '$TMPD/noperf.json' | grep -q perf_event_paranoid"
check "perf refused: an empty folded file, not a missing one" test -f "$TMPD/noperf.folded" -a ! -s "$TMPD/noperf.folded"

# ---- --no-sched ----
"$TRACER" --pid "$SP" -d 2s --no-sched -o "$TMPD/nosched.json" > /dev/null 2> "$TMPD/nosched.err"
check_eq "--no-sched: exit 0" 0 "$?"
check_eq "--no-sched: neither split nor samples" "false 0 0" \
    "$(jqr "$TMPD/nosched.json" '"\(.why.sched) \(.why.profile_hz) \(.why.cpu_samples)"')"
check "--no-sched: the report says it was turned off" \
    bash -c "jq -r .why.why_no_sched '$TMPD/nosched.json' | grep -q -- --no-sched"
check "--no-sched: no warning (asked for)" bash -c "! grep -q warning '$TMPD/nosched.err'"
stop_pid "$SP"

# ---- a stripped binary ----
strip -o "$TMPD/svc-stripped" "$bin"
start_svc "$TMPD/svc-stripped" stripped
"$TRACER" --pid "$SP" -d 4s --profile-hz 499 -o "$TMPD/strip.json" --stacks "$TMPD/strip.folded" > /dev/null 2> "$TMPD/strip.err"
check_eq "stripped: exit 0" 0 "$?"
stop_pid "$SP"
check "stripped: the report notes it" \
    test "$(jqr "$TMPD/strip.json" '[.why.notes[] | test("svc-stripped: stripped")] | any')" = true
check_eq "stripped: no frame of its code is named (no symbols: no names)" "" \
    "$(grep -o 'sample_service::[^;]*' "$TMPD/strip.folded" | head -3)"
check "stripped: its frames are module+offset" grep -q 'svc-stripped+0x' "$TMPD/strip.folded"
check "stripped: the blocking call's syscall is still named" \
    test "$(jqr "$TMPD/strip.json" '[.findings[] | select(.kind == "long_poll") | .why.blocked_in.syscall // empty] | any(. == "clock_nanosleep")')" = true

# ---- the process exits during the capture ----
# its 3 s start once the tracer has attached
start_svc "$bin" exits 3 "$TMPD/go.exits"
start_bg tr.exits "$TRACER" --pid "$SP" --profile-hz 499 -o "$TMPD/exit.json"
TP=$BG_PID
wait_for_line "$TMPD/tr.exits.err" attached 60 || not_ok "process exits: tracer attached: $(cat "$TMPD/tr.exits.err")"
touch "$TMPD/go.exits"
wait_exit "$TP" 120
check_eq "process exits: tracer exit 0" 0 "$RC"
check_eq "process exits: ended by its exit" process_exit "$(jqr "$TMPD/exit.json" .capture.ended_by)"
check "process exits: its stacks are still named" \
    test "$(jqr "$TMPD/exit.json" '[.why.sites[].cpu_stacks[].frames[] | select(test("^sample_service::"))] | length')" -gt 0
finish
