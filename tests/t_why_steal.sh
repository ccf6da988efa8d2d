#!/bin/bash
# Intent: time a hypervisor takes from a traced thread is told apart from time on CPU. On a KVM
# guest a vCPU the host does not run looks like a thread that stayed on CPU; the tracer reads
# KVM's per-CPU steal clock (bpf/sched.bpf.h) and charges what grew inside a poll as preempted,
# "by the hypervisor". Checked against observers we did not write:
#  - bpftool's dump of vmlinux BTF decides whether the kernel has the steal clock (VAR
#    'steal_time'); the report's why.steal must agree, why_no_steal must explain a false;
#  - the values the BPF side read (its per-CPU map steal_marks, dumped by bpftool from the
#    tracer's own maps, found through its file descriptors) equal the kernel's steal accounting in
#    /proc/stat (USER_HZ ticks) for each CPU, within 50 ms, while the tracer runs: a wrong address
#    would read something else;
#  - the stolen time the report charges is at most what /proc/stat says all CPUs lost over the
#    capture (plus 20 ms of tick rounding per CPU);
#  - without the steal clock (TET_TEST_NO_STEAL_CLOCK, a kernel that is not a KVM guest), without
#    the sched tracepoints (TET_TEST_NO_SCHED_TP) and with --no-sched the capture goes on and the
#    report says why there is no split.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
need_sample 1.53 usdt
command -v bpftool > /dev/null || die_test "bpftool not installed (make deps installs it)"

if bpftool btf dump file /sys/kernel/btf/vmlinux | grep -q "VAR 'steal_time'"; then WANT=true; else WANT=false; fi
echo "# vmlinux BTF has the KVM steal clock: $WANT"
steal_ms() { awk -v c="cpu$1" '$1 == c { print $9 * 10 }' /proc/stat; }   # CPU's steal, ms
steal_all_ms() { awk '$1 == "cpu" { print $9 * 10 }' /proc/stat; }

run() {  # run TAG [ENV=VALUE] TRACER_ARGS…: traces the sample service for 4 s
    local tag=$1; shift
    local envs=()
    while [[ "${1:-}" == *=* ]]; do envs+=("$1"); shift; done
    start_bg "svc.$tag" "$SAMPLE" serve --workers 2 --pathology all --load 200 --duration 15s
    SP=$BG_PID
    wait_exec "$SP" "$SAMPLE" || return 1
    S0=$(steal_all_ms)
    start_bg "tr.$tag" env "${envs[@]}" "$TRACER" --pid "$SP" --duration 4s "$@" -o "$TMPD/$tag.json"
    TP=$BG_PID
    wait_for_line "$TMPD/tr.$tag.err" attached 20 || { not_ok "$tag: attached"; cat "$TMPD/tr.$tag.err"; return 1; }
}
finish_run() {  # finish_run TAG
    wait_exit "$TP" 60
    S1=$(steal_all_ms)
    check_eq "$1: tracer exit 0" 0 "$RC"
    [ "$RC" = 0 ] || tail -n 5 "$TMPD/tr.$1.err"
    stop_pid "$SP"
}

# ---- the steal clock read by the BPF side = the kernel's steal accounting ----
run on || die_test "the traced run did not start"
sleep 2
# the tracer's own steal_marks map (other tracers may share the machine): among the maps its file
# descriptors hold 
ids=$(cat /proc/"$TP"/fdinfo/* 2>/dev/null | awk '$1 == "map_id:" { print $2 }' | sort -u | paste -sd, -)
id=$(bpftool -j map show | jq "[.[] | select(.name == \"steal_marks\" and (.id | IN(${ids:-0})))][0].id // empty")
check "on: the tracer's steal_marks map found by its PID" test -n "$id"
if [ -n "$id" ]; then
    bpftool -j map dump id "$id" > "$TMPD/marks.json"
    for c in $(seq 0 $(( $(nproc) - 1 ))); do st[$c]=$(steal_ms "$c"); done
    now_ms=$(( $(mono_ns) / 1000000 ))   # the marks' clock
    marked=0
    while read -r cpu steal ts; do
        [ "$ts" = 0 ] && { echo "# cpu$cpu: no mark yet"; continue; }
        marked=$((marked + 1))
        bpf_ms=$(( steal / 1000000 )) age=$(( now_ms - ts / 1000000 ))
        echo "# cpu$cpu: BPF read ${bpf_ms} ms of steal ${age} ms ago, /proc/stat ${st[$cpu]} ms now"
        # the mark is as old as the CPU's last target switch or sample: the kernel's count can
        # have grown since by at most that age (all of it stolen), never shrunk
        check "on: cpu$cpu: steal clock as read = /proc/stat's (−50 ms, +50 ms + the mark's age) [${bpf_ms} vs ${st[$cpu]}, ${age} ms]" \
            test $(( bpf_ms - st[cpu] )) -le 50 -a $(( st[cpu] - bpf_ms )) -le $(( 50 + age ))
    done < <(jq -r '.[0].formatted.values[] | "\(.cpu) \(.value.steal) \(.value.ts)"' "$TMPD/marks.json")
    if [ "$WANT" = true ]; then
        check "on: the BPF side marked a CPU" test "$marked" -gt 0
    else
        check_eq "on: no steal clock: no CPU marked" 0 "$marked"
    fi
fi
finish_run on
R="$TMPD/on.json"
check_eq "on: why.steal as vmlinux BTF has it" "$WANT" "$(jqr "$R" .why.steal)"
if [ "$WANT" = true ]; then
    check_eq "on: why_no_steal null" null "$(jqr "$R" .why.why_no_steal)"
else
    check "on: why_no_steal says why" grep -q . <<< "$(jqr "$R" '.why.why_no_steal // empty')"
fi
stolen=$(jqr "$R" .why.stolen_ns)
lost=$(( (S1 - S0 + 20 * $(nproc)) * 1000000 ))
echo "# stolen charged: $stolen ns; /proc/stat: $(( S1 - S0 )) ms lost by all CPUs over the run"
check "on: stolen time charged ≤ what /proc/stat says the CPUs lost [$stolen ≤ $lost]" test "$stolen" -le "$lost"
check "on: sites' stolen time ≤ the total seen" \
    test "$(jqr "$R" '[.spawn_sites[].stolen_ns] | add // 0')" -le "$stolen"
check "on: every finding's stolen part ≤ its preempted part" \
    test "$(jqr "$R" '[.findings[] | select(.kind == "long_poll") | select(.stolen_ns > .preempted_ns)] | length')" = 0

# ---- a kernel without the steal clock: the capture goes on, the report says so ----
run off TET_TEST_NO_STEAL_CLOCK=1 || die_test "the traced run did not start"
finish_run off
check_eq "no steal clock: why.steal false" false "$(jqr "$TMPD/off.json" .why.steal)"
check "no steal clock: why_no_steal names it" grep -q "not a KVM guest" <<< "$(jqr "$TMPD/off.json" .why.why_no_steal)"
check_eq "no steal clock: nothing stolen" 0 "$(jqr "$TMPD/off.json" .why.stolen_ns)"
check "no steal clock: polls still split" test "$(jqr "$TMPD/off.json" .why.sched)" = true

run notp TET_TEST_NO_SCHED_TP=1 || die_test "the traced run did not start"
finish_run notp
check "no sched tracepoints: why_no_steal says it needs them" \
    grep -q "needs the sched tracepoints" <<< "$(jqr "$TMPD/notp.json" '.why.why_no_steal // empty')"
check_eq "no sched tracepoints: why.steal false" false "$(jqr "$TMPD/notp.json" .why.steal)"

run nosched --no-sched || die_test "the traced run did not start"
finish_run nosched
check "--no-sched: why_no_steal says turned off" grep -q "turned off" <<< "$(jqr "$TMPD/nosched.json" '.why.why_no_steal // empty')"
finish
