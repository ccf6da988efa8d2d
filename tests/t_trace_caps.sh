#!/bin/bash
# Intent: the non-root path docs/cli.md documents ("no permission (2: root or CAP_BPF +
# CAP_PERFMON, checked before any bpf() call)"; check: "CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN,
# in the effective set") holds for real. An unprivileged user (nobody, via setpriv from
# util-linux) given exactly CAP_BPF + CAP_PERFMON (checked in /proc/self/status: CapEff is
# exactly bits 38 and 39) traces a service of its own: `check -p` says ready, the trace exits 0
# and counts exactly the work the test sent (curl requests → connection / work_subtask tasks, the
# sample service's own spawn sites), and since the user may read its own process's memory (the
# test opens /proc/PID/mem as that user) the in-place reads of idle threads are on. The same
# command without capabilities, with CAP_BPF alone or CAP_PERFMON alone is refused with the
# documented one line (exit 2, nothing on stdout); CAP_SYS_ADMIN alone is enough (check ready,
# a short trace exits 0).
# A service of another user (root): the documented set for that case (docs/flight-recorder.md:
# "CAP_BPF CAP_PERFMON CAP_SYS_PTRACE (batched capture reads idle threads' buffers)") traces it
# with the in-place reads on; with CAP_BPF + CAP_PERFMON alone the tracer may refuse, but with
# one line naming the PID and the reason (docs/cli.md: "tokio-ebpf-trace: FILE-or-PID: problem").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
need_sample 1.53 usdt; usdt=$SAMPLE
command -v setpriv > /dev/null || die_test "setpriv missing (util-linux, scripts/packages.txt)"
command -v curl > /dev/null || die_test "curl missing (scripts/packages.txt)"
LOC_CONN=$(loc_of connection) LOC_WORK=$(loc_of work_subtask)
[ -n "$LOC_CONN" ] && [ -n "$LOC_WORK" ] || die_test "no SPAWN-SITE markers"

# the user's copies: nobody must reach them (TMPD is 0700) and write its reports
chmod 755 "$TMPD"
NB="$TMPD/nb"
mkdir "$NB" && cp "$TRACER" "$NB/tet" && cp "$usdt" "$NB/svc" && chmod 755 "$NB/tet" "$NB/svc" && chown 65534:65534 "$NB"
AS_NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
# with_caps LIST CMD…: CMD as nobody with exactly the capabilities LIST (setpriv syntax) effective
with_caps() { local c=$1; shift; "${AS_NOBODY[@]}" --inh-caps="-all,$c" --ambient-caps="$c" -- "$@"; }
no_caps() { "${AS_NOBODY[@]}" --inh-caps=-all -- "$@"; }

check_eq "setpriv grants exactly CAP_BPF + CAP_PERFMON (CapEff, uid)" "000000c000000000 65534" \
    "$(with_caps +bpf,+perfmon sh -c 'echo $(sed -n "s/^CapEff:\t//p" /proc/self/status) $(id -u)')"

# serve_as NAME PREFIX…: starts the service (as PREFIX says); sets SVC and ADDR
serve_as() {
    local name=$1; shift
    start_bg "$name" "$@" "$NB/svc" serve --addr 127.0.0.1:0 --workers 2
    SVC=$BG_PID
    wait_for_line "$TMPD/$name.out" '^listening on ' 30 || die_test "$name listening: $(cat "$TMPD/$name.err")"
    ADDR=$(sed -n 's/^listening on //p' "$TMPD/$name.out")
}
# traced_run LABEL OUT CAPS: traces $SVC as nobody with CAPS while the test sends 5 + 3 requests;
# checks the exit status and the exact counts
traced_run() {
    local label=$1 out=$2 caps=$3 okc=0 tp
    rm -f "$out"
    start_bg "tr.$label" "${AS_NOBODY[@]}" --inh-caps="-all,$caps" --ambient-caps="$caps" -- \
        "$NB/tet" --pid "$SVC" -q -o "$out"
    tp=$BG_PID
    if ! wait_for_line "$TMPD/tr.$label.err" attached 30; then
        not_ok "$label: attached ($(head -c 400 "$TMPD/tr.$label.err"))"; stop_pid "$tp"; return 1
    fi
    for i in 1 2 3 4 5; do curl -sf -o /dev/null --max-time 20 "http://$ADDR/" && okc=$((okc+1)); done
    for i in 1 2 3; do curl -sf -o /dev/null --max-time 20 "http://$ADDR/work" && okc=$((okc+1)); done
    check_eq "$label: the test's 8 requests answered" 8 "$okc"
    kill -INT "$tp"; wait_exit "$tp" 60
    check_eq "$label: tracer exits 0" 0 "$RC"
    jq -e . "$out" > /dev/null 2>&1 || { not_ok "$label: report written: $(cat "$TMPD/tr.$label.err")"; return 1; }
    check_eq "$label: connection tasks = the 8 curl connections" 8 \
        "$(jqr "$out" "[.spawn_sites[] | select(.location // \"\" | endswith(\"$LOC_CONN\")) | .tasks] | add")"
    check_eq "$label: work_subtask tasks = the 3 /work requests" 3 \
        "$(jqr "$out" "[.spawn_sites[] | select(.location // \"\" | endswith(\"$LOC_WORK\")) | .tasks] | add")"
    check_eq "$label: every task is the service's, 0 drops, usdt" "$SVC 0 usdt" \
        "$(jqr "$out" '"\([.tasks[].pid] | unique | map(tostring) | join(",")) \(.totals.drops) \(.mode)"')"
}

# ---- a service of the user's own ----
serve_as own "${AS_NOBODY[@]}" --inh-caps=-all --
check_eq "the service runs as nobody" 65534 "$(stat -c %u "/proc/$SVC")"

with_caps +bpf,+perfmon "$NB/tet" check -p "$SVC" --json > "$TMPD/chk.json" 2> "$TMPD/chk.err"
check_eq "CAP_BPF+CAP_PERFMON: check -p: exit 0" 0 "$?"
check_eq "CAP_BPF+CAP_PERFMON: check -p: ready, usdt, permissions ok" "ready usdt true" \
    "$(jq -r '"\(.verdict) \(.mode) \(.kernel.permissions.ok)"' "$TMPD/chk.json")"

traced_run "CAP_BPF+CAP_PERFMON" "$NB/own.json" +bpf,+perfmon
R="$NB/own.json"
if [ -s "$R" ]; then
    check_eq "the report belongs to the unprivileged user" 65534 "$(stat -c %u "$R")"
    can_read=$(no_caps /usr/bin/python3 -c "open('/proc/$SVC/mem', 'rb'); print('yes')" 2>/dev/null)
    check_eq "the user may read its process's memory (the test did): in-place reads on" \
        "${can_read:-no} true null" "$(jqr "$R" '"yes \(.capture.batch.sweeps) \(.capture.batch.why_no_sweeps)"')"
    check_eq "the kernel side works too (sched tracking, CPU profile)" "true null null" \
        "$(jqr "$R" '"\(.why.sched) \(.why.why_no_sched) \(.why.why_no_profile)"')"
fi

# without them: the documented line, before anything is loaded
PERM="permission denied: tracing needs root, or CAP_BPF and CAP_PERFMON"
# (expect_fail runs its command under timeout: the setpriv words, not the functions)
caps_argv() { CAPS_ARGV=("${AS_NOBODY[@]}" --inh-caps="-all${1:+,$1}"); [ -n "$1" ] && CAPS_ARGV+=(--ambient-caps="$1"); CAPS_ARGV+=(--); }
caps_argv ""
expect_fail "no capabilities: refused" 2 "$PERM" "${CAPS_ARGV[@]}" "$NB/tet" --pid "$SVC" -d 1s
caps_argv +bpf
expect_fail "CAP_BPF alone: refused" 2 "$PERM" "${CAPS_ARGV[@]}" "$NB/tet" --pid "$SVC" -d 1s
caps_argv +perfmon
expect_fail "CAP_PERFMON alone: refused" 2 "$PERM" "${CAPS_ARGV[@]}" "$NB/tet" --pid "$SVC" -d 1s
with_caps +bpf "$NB/tet" check -p "$SVC" --json > "$TMPD/chk.json" 2> /dev/null
check_eq "CAP_BPF alone: check -p: cannot-trace (2), permissions false" "2 cannot-trace false" \
    "$? $(jq -r '"\(.verdict) \(.kernel.permissions.ok)"' "$TMPD/chk.json")"
# CAP_SYS_ADMIN alone (docs: "or CAP_SYS_ADMIN")
with_caps +sys_admin "$NB/tet" check -p "$SVC" --json > "$TMPD/chk.json" 2> /dev/null
check_eq "CAP_SYS_ADMIN alone: check -p: ready (0)" "0 ready" "$? $(jq -r .verdict "$TMPD/chk.json")"
with_caps +sys_admin "$NB/tet" --pid "$SVC" -d 1s -q -o "$NB/admin.json" > /dev/null 2> "$TMPD/admin.err"
rc=$?
check_eq "CAP_SYS_ADMIN alone: a 1 s trace exits 0$([ $rc = 0 ] || echo " ($(head -c 300 "$TMPD/admin.err"))")" 0 "$rc"
check_eq "CAP_SYS_ADMIN alone: the report is written (usdt, the service's PID)" "usdt $SVC" \
    "$(jq -r '"\(.mode) \(.capture.pid)"' "$NB/admin.json" 2>/dev/null)"
stop_pid "$SVC"

# ---- a service of another user (root) ----
serve_as root env
check_eq "this service runs as root" 0 "$(stat -c %u "/proc/$SVC")"
traced_run "root's service, CAP_BPF+CAP_PERFMON+CAP_SYS_PTRACE" "$NB/root.json" +bpf,+perfmon,+sys_ptrace
[ -s "$NB/root.json" ] && check_eq "root's service, CAP_SYS_PTRACE: in-place reads on (docs/flight-recorder.md)" \
    "true null" "$(jqr "$NB/root.json" '"\(.capture.batch.sweeps) \(.capture.batch.why_no_sweeps)"')"
caps_argv +bpf,+perfmon
expect_fail "root's service, CAP_BPF+CAP_PERFMON: a refusal names the PID and the reason" 2 \
    "PID $SVC: [^ ].*" "${CAPS_ARGV[@]}" "$NB/tet" --pid "$SVC" -d 1s
# --binary: the tracer attaches by path, then finds it may not read that process's memory
start_bg "bin.nb" "${AS_NOBODY[@]}" --inh-caps="-all,+bpf,+perfmon" --ambient-caps="+bpf,+perfmon" -- \
    "$NB/tet" --binary "$NB/svc" -d 3s -q -o "$NB/bin.json"
BT=$BG_PID
wait_for_line "$TMPD/bin.nb.err" attached 30 || not_ok "--binary as nobody: attached"
for i in 1 2 3; do curl -sf -o /dev/null --max-time 20 "http://$ADDR/"; done
wait_exit "$BT" 60
check_eq "--binary on root's process, CAP_BPF+CAP_PERFMON: exit 0" 0 "$RC"
check_eq "… in-place reads said off, with the reason (not sweeps: true)" \
    "false no permission to read the memory of a process of the binary (needs root or CAP_SYS_PTRACE)" \
    "$(jqr "$NB/bin.json" '"\(.capture.batch.sweeps) \(.capture.batch.why_no_sweeps)"' 2>/dev/null)"
stop_pid "$SVC"
finish
