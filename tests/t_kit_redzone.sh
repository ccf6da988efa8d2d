#!/bin/bash
# Intent: the probe asm is red-zone safe. Linux >= 6.18 turns uprobes on the 5-byte-nop probe sites
# into calls to a trampoline, which write below the stack pointer; a probe asm! with
# options(nostack) would let the compiler keep live data there. A hot loop computing a checksum
# with probes inside must give the same result untraced, traced (bpftrace on every probe, so
# every site is hit by the kernel), traced with batched capture (the recorder runs at every hook
# point and the event_batch sites are hit at every flush), and in the stock build.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root

for line in "${LINES[@]}"; do
    bin=$(sample_bin "$line" usdt); stock=$(sample_bin "$line" stock)
    need_file "$bin" "usdt sample-service for tokio $line"
    need_file "$stock" "stock sample-service for tokio $line"
    want=$("$stock" checksum --iterations 20000 | grep -o 'checksum=[0-9a-fx]*')
    untraced=$("$bin" checksum --iterations 20000 | grep -o 'checksum=[0-9a-fx]*')
    P="usdt:$bin:tokio"
    timeout 120 bpftrace -q -e "$(printf "$P:%s," "${PROBES_REQUIRED[@]}" | sed 's/,$//') { @hits = count(); }" \
        -c "$bin checksum --iterations 20000" > "$TMPD/t.$line" 2>&1
    traced=$(grep -o 'checksum=[0-9a-fx]*' "$TMPD/t.$line")
    hits=$(awk '/^@hits:/{print $2}' "$TMPD/t.$line")
    [ -n "$want" ] || not_ok "tokio $line: stock build printed no checksum"
    check_eq "tokio $line: untraced checksum equals stock" "$want" "$untraced"
    check_eq "tokio $line: traced checksum equals stock" "$want" "$traced"
    check "tokio $line: the traced run hit probes (${hits:-0} hits)" test "${hits:-0}" -gt 20000

    start_bg "btr.$line" "$TRACER" --binary "$bin" -q -o "$TMPD/b.$line.json"
    btr=$BG_PID
    wait_for_line "$TMPD/btr.$line.err" attached 30 || not_ok "tokio $line: batched tracer attached"
    batched=$("$bin" checksum --iterations 20000 | grep -o 'checksum=[0-9a-fx]*')
    kill -INT "$btr"; wait_exit "$btr" 120
    check_eq "tokio $line: checksum under batched capture equals stock" "$want" "$batched"
    # one read of the report (tens of MB: seconds of jq a read on a loaded machine)
    read -r cap polls < <(jq -r '"\(.capture.capture) \(.totals.polls)"' "$TMPD/b.$line.json")
    check_eq "tokio $line: that run was a batched capture" batched "$cap"
    check "tokio $line: the batched run recorded the checksum's polls ($polls)" test "${polls:-0}" -gt 80000
done
finish
