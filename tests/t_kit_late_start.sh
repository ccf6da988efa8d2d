#!/bin/bash
# Intent: a process started AFTER the tracer attached is traced. The probes are gated by USDT
# semaphores, which the kernel increments in new processes only when the binary's segment layout
# lets it (the kit links with -z separate-loadable-segments because rust-lld's default layout
# breaks this). bpftrace attaches to the binary path first; the yield workload started afterwards
# must show exactly its 4 × (10 + 1) = 44 polls.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root

for line in "${LINES[@]}"; do
    bin=$(sample_bin "$line" usdt)
    need_file "$bin" "usdt sample-service for tokio $line"
    # polls of the tasks spawned at the workload's line (the runtime may spawn blocking tasks too)
    wl=$(grep -n 'SPAWN-SITE: yield_workload$' "$ROOT/sample-service/src/workload.rs" | cut -d: -f1)
    bpftrace -e "usdt:$bin:tokio:task_spawn /arg5 == $wl/ { @mine[arg0] = 1; }
        usdt:$bin:tokio:task_poll_begin /@mine[arg0]/ { @polls = count(); } END { clear(@mine); }
        BEGIN { printf(\"ready\\n\"); }" > "$TMPD/bt.$line" 2>&1 &
    bt=$!; track_pid $bt
    # bpftrace runs BEGIN once every probe is attached ("Attaching N probes" comes before)
    if ! wait_for_line "$TMPD/bt.$line" '^ready' 30; then
        cat "$TMPD/bt.$line"; not_ok "tokio $line: bpftrace did not attach"; stop_pid $bt; continue
    fi
    "$bin" yield-workload --tasks 4 --yields 10 --workers 2 > "$TMPD/w.$line" 2>&1
    check_eq "tokio $line: workload started after attach ran" 0 $?
    bt_stop $bt "tokio $line"
    check_eq "tokio $line: process started after attach is traced: 44 polls" "@polls: 44" "$(grep '^@polls' "$TMPD/bt.$line")"
done
finish
