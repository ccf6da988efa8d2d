#!/bin/bash
# Intent: every bad input of `tokio-ebpf-trace --pid/--binary` gets one clear line on stderr
# (prefixed "tokio-ebpf-trace: ", naming the problem), nothing on stdout, the documented non-zero
# exit status (3 usage, 4 no such PID/file or not ELF, 2 cannot trace), and leaves nothing
# attached (the fixture's semaphores stay 0). Covered: PID not found, not a Tokio process, Tokio
# without probes (points to the kit), --binary without probes / missing / not ELF / directory,
# no permission (run as nobody: refused before loading anything), kernel without uprobes or BTF
# (TET_SYSFS_ROOT points the kernel-feature checks at a fake sysfs), unknown flags, missing
# values, malformed and absurd durations and numbers, two targets or none, an unwritable
# --output (refused before attaching); batched capture and sampling: bad --capture,
# --sample-rate and --nice values, --sample-rate or --capture batched with per-event capture or
# the uprobe fallback, on a target without tokio:event_batch, on stock Tokio, and on a target
# whose tokio:sample_rate probe has the wrong number of sites (batch_badrate: refused with
# --sample-rate N; traced with adaptive sampling off, the report saying why); --sample-rate
# neither N nor auto, --max-overhead out of range or with a fixed rate, per-event capture, the
# uprobe fallback or the flight recorder.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
need_file "$FIX/stock_like" "fixture stock_like"
need_file "$FIX/batch_badrate" "fixture batch_badrate"

start_bg fix "$FAKE" --go "$TMPD/never" --hold
FP=$BG_PID
wait_for_line "$TMPD/fix.out" '^pid ' 10 || die_test "fixture started"
start_bg stock "$FIX/stock_like"
SP=$BG_PID
wait_exec "$SP" "$FIX/stock_like" || not_ok "stock_like started"
sleep 60 & SLEEP=$!; track_pid $SLEEP
start_bg badrate "$FIX/batch_badrate"
BP=$BG_PID

# ---- targets ----
expect_fail "PID not found" 4 "no process with PID 2147483000" "$TRACER" --pid 2147483000
expect_fail "PID not a number" 3 "invalid PID" "$TRACER" --pid 12ab
expect_fail "PID zero" 3 "invalid PID" "$TRACER" --pid 0
expect_fail "not a Tokio process (sleep)" 2 "is not a Tokio program" "$TRACER" --pid $SLEEP
# --mode usdt: the USDT path's own verdict (auto mode would try the uprobe fallback next; its
# bad inputs are tests/t_fallback_badinput.sh's)
expect_fail "Tokio without probes: points to the kit" 2 "uses Tokio but carries no tokio USDT probes: rebuild it with scripts/tokio-usdt-build" "$TRACER" --mode usdt --pid $SP
expect_fail "--binary without probes" 2 "/bin/true is not a Tokio program" "$TRACER" --binary /bin/true
expect_fail "--binary: stock-like Tokio binary" 2 "carries no tokio USDT probes" "$TRACER" --mode usdt --binary "$FIX/stock_like"
expect_fail "--binary missing" 4 "No such file or directory" "$TRACER" --binary "$TMPD/nope"
expect_fail "--binary not ELF" 4 "not an ELF file" "$TRACER" --binary /etc/passwd
expect_fail "--binary a directory" 4 "not a regular file" "$TRACER" --binary /etc
expect_fail "two targets" 3 "give one target" "$TRACER" --pid $FP --binary "$FAKE"
expect_fail "no target" 3 "nothing to trace" "$TRACER" --duration 1s
# the stock sample service, when built
stock=$(sample_bin 1.43 stock)
if [ -x "$stock" ]; then
    expect_fail "--binary stock sample-service, --mode usdt" 2 "carries no tokio USDT probes" "$TRACER" --mode usdt --binary "$stock"
fi

# ---- privileges: refused before loading (no bpf() call) ----
if command -v setpriv > /dev/null; then
    expect_fail "no permission (uid nobody)" 2 "permission denied: tracing needs root, or CAP_BPF and CAP_PERFMON" \
        setpriv --reuid=65534 --regid=65534 --clear-groups "$TRACER" --pid $FP
    command -v strace > /dev/null || not_ok "strace missing: cannot test that nothing is attempted (make deps installs it)"
    if command -v strace > /dev/null; then
        strace -f -e trace=bpf,perf_event_open,execve -o "$TMPD/strace.out" \
            setpriv --reuid=65534 --regid=65534 --clear-groups "$TRACER" --pid $FP > /dev/null 2>&1
        check "no permission: the tracer ran under strace" grep -q "execve(\"$TRACER\"" "$TMPD/strace.out"
        check "no permission: no bpf()/perf_event_open() attempted" bash -c "! grep -qE 'bpf\(|perf_event_open\(' '$TMPD/strace.out'"
    fi
else
    not_ok "setpriv missing: cannot test the unprivileged case"
fi

# ---- kernel features (TET_SYSFS_ROOT: a fake sysfs for the checks) ----
K="$TMPD/sysfs"
fake_sysfs "$K"
expect_fail "kernel without uprobes" 2 "kernel without uprobes: .*uprobe/type is missing" env TET_SYSFS_ROOT="$K/no-uprobes" "$TRACER" --pid $FP
expect_fail "kernel without BTF" 2 "kernel without BTF: .*btf/vmlinux is missing" env TET_SYSFS_ROOT="$K/no-btf" "$TRACER" --pid $FP
expect_fail "kernel uprobes without ref_ctr_offset" 2 "cannot drive USDT semaphores" env TET_SYSFS_ROOT="$K/no-refctr" "$TRACER" --pid $FP

# ---- flags ----
expect_fail "unknown long flag" 3 "unknown option '--frobnicate'" "$TRACER" --pid $FP --frobnicate
expect_fail "unknown short flag" 3 "unknown option '-Z'" "$TRACER" --pid $FP -Z
expect_fail "missing value" 3 "option '--duration' needs a value" "$TRACER" --pid $FP --duration
expect_fail "stray argument" 3 "unexpected argument 'extra'" "$TRACER" --pid $FP extra
expect_fail "unknown probe class" 3 "unknown probe class 'polls'" "$TRACER" --pid $FP --probes poll,polls
expect_fail "unknown detector" 3 "unknown detector 'slow'" "$TRACER" --pid $FP --detect slow
expect_fail "ring size not a power of two" 3 "power of two between 64K and 1G" "$TRACER" --pid $FP --ringbuf-size 1000K
expect_fail "ring size too big" 3 "power of two between 64K and 1G" "$TRACER" --pid $FP --ringbuf-size 2G
expect_fail "self-wake ratio above 1" 3 "expected a number in \(0, 1\]" "$TRACER" --pid $FP --self-wake-ratio 2
expect_fail "top 0" 3 "must be between 1 and 1000" "$TRACER" --pid $FP --top 0
expect_fail "min self-wakes negative" 3 "expected a whole number" "$TRACER" --pid $FP --self-wake-min -3
expect_fail "--live-tasks not a number" 3 "--live-tasks '1x': expected a whole number" "$TRACER" --pid $FP --live-tasks 1x
expect_fail "--live-tasks too large" 3 "--live-tasks '10000001': must be between 0 and 10000000" "$TRACER" --pid $FP --live-tasks 10000001
expect_fail "--max-tasks 0" 3 "--max-tasks '0': must be between 1 and 10000000" "$TRACER" --pid $FP --max-tasks 0
expect_fail "--max-tasks not a number" 3 "--max-tasks 'lots': expected a whole number" "$TRACER" --pid $FP --max-tasks lots
expect_fail "--sites too large" 3 "--sites '10000001': must be between 0 and 10000000" "$TRACER" --pid $FP --sites 10000001
expect_fail "large-future size not a size" 3 "large-future-size" "$TRACER" --pid $FP --large-future-size 12Q

# ---- batched capture and sampling ----
expect_fail "--capture unknown" 3 "--capture 'bogus': expected batched, per-event or auto" "$TRACER" --pid $FP --capture bogus
expect_fail "--sample-rate 0" 3 "--sample-rate '0': must be between 1 and 65535" "$TRACER" --pid $FP --sample-rate 0
expect_fail "--sample-rate 65536" 3 "--sample-rate '65536': must be between 1 and 65535" "$TRACER" --pid $FP --sample-rate 65536
expect_fail "--sample-rate not a number" 3 "--sample-rate '1x': expected a whole number" "$TRACER" --pid $FP --sample-rate 1x
expect_fail "--nice 20" 3 "--nice '20': must be between 0 and 19" "$TRACER" --pid $FP --nice 20
expect_fail "--sample-rate with --capture per-event" 3 "--sample-rate needs batched capture .*drop --capture per-event" \
    "$TRACER" --pid $FP --sample-rate 10 --capture per-event
expect_fail "--sample-rate with --mode uprobe" 3 "--sample-rate needs batched capture, which the uprobe fallback does not have" \
    "$TRACER" --pid $SP --sample-rate 10 --mode uprobe
expect_fail "--capture batched with --mode uprobe" 3 "--capture batched needs the tokio USDT probes" \
    "$TRACER" --pid $SP --capture batched --mode uprobe
expect_fail "--capture batched, no tokio:event_batch" 2 "no tokio:event_batch probe \\(built by an older kit\\?\\)" \
    "$TRACER" --pid $FP --capture batched
expect_fail "--sample-rate, no tokio:event_batch" 2 "no tokio:event_batch probe" "$TRACER" --pid $FP --sample-rate 10
expect_fail "--sample-rate on stock Tokio" 2 "stock Tokio \\(traced through uprobes\\) has no batched capture" \
    "$TRACER" --pid $SP --sample-rate 10
expect_fail "--sample-rate, tokio:sample_rate with 3 sites" 2 "tokio:sample_rate has 3 sites, 16 expected: cannot set a sampling rate" \
    "$TRACER" --pid $BP --sample-rate 10
# adaptive sampling (docs/sampling.md): its budget's bounds and the options it cannot go with;
# a kit build whose sampling sites are not the 16 expected is traced without it, and says why
expect_fail "--sample-rate neither a number nor auto" 3 "--sample-rate 'automatic': expected a whole number" \
    "$TRACER" --pid $FP --sample-rate automatic
expect_fail "--max-overhead 0" 3 "--max-overhead '0': must be between 1 and 400" "$TRACER" --pid $FP --max-overhead 0
expect_fail "--max-overhead 401" 3 "--max-overhead '401': must be between 1 and 400" "$TRACER" --pid $FP --max-overhead 401
expect_fail "--max-overhead with a fixed --sample-rate" 3 "--max-overhead bounds adaptive sampling, which a fixed --sample-rate turns off" \
    "$TRACER" --pid $FP --sample-rate 10 --max-overhead 30
expect_fail "--max-overhead with --capture per-event" 3 "--max-overhead needs batched capture" \
    "$TRACER" --pid $FP --capture per-event --max-overhead 30
expect_fail "--max-overhead with --mode uprobe" 3 "--max-overhead needs batched capture" \
    "$TRACER" --pid $SP --mode uprobe --max-overhead 30
expect_fail "--max-overhead with --flight-recorder" 3 "--max-overhead bounds adaptive sampling, which the flight recorder does not use" \
    "$TRACER" --pid $FP --flight-recorder 10s --max-overhead 30
"$TRACER" --pid $BP -d 1s -q -o "$TMPD/badrate.json" > /dev/null 2> "$TMPD/badrate.err"
check_eq "batch_badrate, default options: traced (exit 0)" 0 "$?"
check_eq "… sampling fixed, saying why" "fixed the probes do not have the 16 tokio:sample_rate sites that spell a rate" \
    "$(jq -r '.capture.batch.sampling | "\(.mode) \(.why_fixed)"' "$TMPD/badrate.json" | cut -d'(' -f1 | sed 's/ *$//')"
check_eq "batch_badrate: nothing left attached (semaphores 0)" 0 "$(sem_total $BP)"

# ---- durations ----
while IFS='|' read -r flag value re; do
    [ -n "$flag" ] || continue
    expect_fail "$flag '$value'" 3 "$re" "$TRACER" --pid $FP "$flag" "$value"
done <<'EOF'
--duration|0s|must be at least 1ms
--duration|-5s|negative duration
--duration|30|missing unit
--duration|1.5|missing unit
--duration|5x|unknown unit 'x'
--duration|5 s|unknown unit ' s'
--duration|abc|not a duration
--duration||empty duration
--duration|.s|not a duration
--duration|1e3s|unknown unit 'e3s'
--duration|99999999999999999999s|overflows
--duration|600000000000h|overflows
--duration|1000h|must be at most
--interval|1ms|must be at least 100ms
--long-poll-threshold|0ns|must be at least 1µs
--stall-threshold|0.1us|must be at least 1ms
--never-yields-threshold|2d|unknown unit 'd'
--drain-interval|5s|must be at most 1s
EOF

# ---- an unwritable report: refused before attaching ----
expect_fail "--output in a missing directory" 4 "cannot write the report $TMPD/no/such/dir/r.json" \
    "$TRACER" --pid $FP -o "$TMPD/no/such/dir/r.json"

check_eq "after all of these, nothing is attached to the fixture (semaphores 0)" 0 "$(sem_total $FP)"
finish
