#!/bin/bash
# Intent: `trace` follows the other Tokio USDT dialects (docs/dialects.md) — Tokio's upstream
# proposal and oxide's tokio-dtrace — on real Tokio programs carrying them (sample-service/
# dialects): attached by path next to bpftrace (an independent USDT client) on the same probes,
# the tracer's polls, spawns, terminations (and wakes, upstream) equal bpftrace's and the
# program's own hook counts; the report (JSON, HTML) names the dialect and what it cannot give; the spawn
# sites are the workload's spawn lines; the 150 ms blocking poll is a long_poll at its site;
# without wakes (oxide) no task is called stalled or lost; `check --json` announced the same
# dialect and mode.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
command -v bpftrace > /dev/null || die_test "bpftrace missing (make deps)"
DIR="$BUILD/sample-service/dialects"
LIBRS="$ROOT/sample-service/dialects/src/lib.rs"
spawn_lines=$(grep -n 'tokio::spawn(wrap(' "$LIBRS" | cut -d: -f1 | sort -n | tr '\n' ' ' | sed 's/ $//')
long_line=$(grep -n 'tokio::spawn(wrap(Box::pin(long_poll_task' "$LIBRS" | cut -d: -f1)

count_of() { grep -m1 '^polls=' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
map_of() { local v; v=$(sed -n "s/^@$2: //p" "$1"); echo "${v:-0}"; }

# run LABEL BIN DIALECT SPAWN-PROBE WAKE-PROBE(or -)
run() {
    local label=$1 bin=$2 dialect=$3 spawn=$4 wake=$5
    local P="usdt:$bin:tokio" R="$TMPD/$label.json" bt
    need_file "$bin" "$label dialect program"
    "$TRACER" check --json "$bin" > "$TMPD/$label.check" 2>&1
    check_eq "$label: check --json says dialect $dialect, mode usdt" "$dialect usdt" \
        "$(jqr "$TMPD/$label.check" '"\(.tokio.dialect) \(.mode)"')"
    bt="$P:task-poll-start { @polls = count(); } $P:$spawn { @spawns = count(); }
        $P:task-terminate { @terminates = count(); } BEGIN { printf(\"ready\\n\"); }"
    [ "$wake" != - ] && bt+=" $P:$wake { @wakes = count(); }"
    start_bg "bt.$label" bpftrace -q -e "$bt"
    local btp=$BG_PID
    start_bg "tr.$label" "$TRACER" --binary "$bin" -q -o "$R" -o "$TMPD/$label.html"
    local trp=$BG_PID
    wait_for_line "$TMPD/tr.$label.err" attached 30 || not_ok "$label: tracer attached"
    wait_for_line "$TMPD/bt.$label.out" '^ready' 60 || not_ok "$label: bpftrace attached"
    "$bin" --duration 2 --tasks 6 > "$TMPD/$label.out" 2>&1
    check_eq "$label: the program ran" 0 "$?"
    # SIGINT, then each gets its time: stop_pid's SIGKILL after 5 s would leave no report and no
    # maps (bpftrace 0.17 has taken 7 s after a SIGINT here, and once needed a second one)
    kill -INT "$trp"
    wait_exit "$trp" 120
    check_eq "$label: tracer exit 0 after SIGINT" 0 "$RC"
    bt_stop "$btp" "$label"
    check "$label: report written" test -s "$R"
    local polls; polls=$(count_of "$TMPD/$label.out" polls)
    check "$label: the program polled ($polls)" test "${polls:-0}" -gt 100
    check_eq "$label: polls: tracer = bpftrace = the program" "$polls $polls" \
        "$(jqr "$R" .totals.polls) $(map_of "$TMPD/bt.$label.out" polls)"
    check_eq "$label: spawns: tracer = bpftrace = the program" \
        "$(count_of "$TMPD/$label.out" spawns) $(count_of "$TMPD/$label.out" spawns)" \
        "$(jqr "$R" .totals.spawns) $(map_of "$TMPD/bt.$label.out" spawns)"
    check_eq "$label: terminations: tracer = bpftrace" "$(map_of "$TMPD/bt.$label.out" terminates)" \
        "$(jqr "$R" .totals.terminations)"
    if [ "$wake" != - ]; then
        check_eq "$label: wakes: tracer = bpftrace = the program" \
            "$(count_of "$TMPD/$label.out" waker_wakes) $(count_of "$TMPD/$label.out" waker_wakes)" \
            "$(jqr "$R" .totals.wakes) $(map_of "$TMPD/bt.$label.out" wakes)"
    else
        check_eq "$label: no wakes, none made up" 0 "$(jqr "$R" .totals.wakes)"
        check_eq "$label: no stalled or lost_waker finding without wakes" 0 \
            "$(jqr "$R" '[.findings[] | select(.kind == "stalled" or .kind == "lost_waker")] | length')"
    fi
    check_eq "$label: the report names the dialect" "usdt $dialect" "$(jqr "$R" '"\(.mode) \(.dialect)"')"
    check "$label: … and what it cannot give" test -n "$(jqr "$R" '.dialect_lacks // empty')"
    check "$label: report.html names the dialect and what it lacks" \
        grep -qF "Probes of the <code>$dialect</code> dialect: no " "$TMPD/$label.html"
    check_eq "$label: spawn sites: the workload's spawn lines of src/lib.rs" "$spawn_lines" \
        "$(jqr "$R" '[.spawn_sites[] | select(.file == "src/lib.rs") | .line] | sort | map(tostring) | join(" ")')"
    check_eq "$label: the 150 ms poll is a long_poll at the blocking task's spawn site (line $long_line)" \
        "src/lib.rs:$long_line" \
        "$(jqr "$R" '[.findings[] | select(.kind == "long_poll" and .value_ns >= 150000000) | .location | sub(":[0-9]+$"; "")] | unique | join(" ")')"
    check_eq "$label: nothing dropped" 0 "$(jqr "$R" .totals.drops)"
}

run upstream "$DIR/tokio-upstream-dialect" tokio-upstream-usdt task-details waker-wake
run oxide "$DIR/tokio-dtrace-dialect" oxide-tokio-dtrace task-spawn -
finish
