#!/bin/bash
# Intent: report files behave as a careful Unix tool's: -o and --trace
#  - onto a symlink: the link is still a link afterwards, its target holds the report;
#  - onto a FIFO with a reader: still a FIFO, the reader got the whole report (valid JSON);
#    onto one nobody reads: exit 2 with the reason, no hang;
#  - onto a private character device (mknod c 1 3, a /dev/null of our own): still that device,
#    exit 0;
#  - onto '-': the JSON on stdout;
#  - onto a directory, into a missing directory, onto a dangling symlink, onto a block device,
#    onto /proc/version:
#    exit 4 before anything is attached, one line naming the path as given and the real reason
#    (never the reason of a temporary file);
#  - a tracer killed by SIGKILL during a capture leaves no file next to its outputs (temporary
#    files exist only while a report is written).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
need_sample 1.53 usdt; bin=$SAMPLE

start_bg svc "$bin" serve --workers 2 --pathology blocking_call --load 20 --duration 120s
SP=$BG_PID
wait_for_line "$TMPD/svc.out" "listening on" 20 || die_test "service did not start"
trace() { "$TRACER" --pid "$SP" -d 1s -q "$@"; }
jqok() { jq -e "$1" "$2" > /dev/null 2>&1; }

# a symlink
echo old > "$TMPD/target.json"; ln -s target.json "$TMPD/link.json"
echo old > "$TMPD/ttarget.json"; ln -s ttarget.json "$TMPD/tlink.json"
trace -o "$TMPD/link.json" --trace "$TMPD/tlink.json" 2> "$TMPD/link.err"
check_eq "symlink: exit 0" 0 "$?"
check_eq "symlink: both links are still links to their targets" "target.json ttarget.json" \
    "$(readlink "$TMPD/link.json") $(readlink "$TMPD/tlink.json")"
check "symlink: the report went to the link's target" jqok .totals.polls "$TMPD/target.json"
check "symlink: the trace went to the link's target" jqok .traceEvents "$TMPD/ttarget.json"

# a FIFO with a reader
mkfifo "$TMPD/fifo"
cat "$TMPD/fifo" > "$TMPD/fifo.out" &
RP=$!; track_pid $RP
trace -o "$TMPD/fifo" 2> "$TMPD/fifo.err"
check_eq "FIFO: exit 0" 0 "$?"
wait_exit $RP 10
check_eq "FIFO: still a FIFO" "fifo" "$(stat -c %F "$TMPD/fifo")"
check "FIFO: the reader got the whole report" jqok .totals.polls "$TMPD/fifo.out"

# a FIFO nobody reads: an error at the end, not a hang
mkfifo "$TMPD/lonely"
timeout 30 "$TRACER" --pid "$SP" -d 1s -q -o "$TMPD/lonely" 2> "$TMPD/lonely.err"
check_eq "FIFO without a reader: exit 2 (not a hang: timeout says 124)" 2 "$?"
check "FIFO without a reader: said" grep -q "cannot write the report $TMPD/lonely: a FIFO nobody reads" "$TMPD/lonely.err"
check_eq "FIFO without a reader: still a FIFO" "fifo" "$(stat -c %F "$TMPD/lonely")"

# a character device of our own (the same major/minor as /dev/null)
mknod "$TMPD/null" c 1 3
mknod "$TMPD/null2" c 1 3
trace -o "$TMPD/null" --trace "$TMPD/null2" 2> "$TMPD/null.err"
check_eq "char device: exit 0" 0 "$?"
check_eq "char device: both still character devices 1:3" "character special file 1:3 character special file 1:3" \
    "$(stat -c '%F %t:%T' "$TMPD/null") $(stat -c '%F %t:%T' "$TMPD/null2")"
check_eq "char device: nothing next to it" "" "$(ls "$TMPD" | grep -E '^null.*tmp')"

# '-'
trace -o - > "$TMPD/stdout.json" 2> /dev/null
check "'-': the JSON on stdout" jqok .totals.polls "$TMPD/stdout.json"

# refusals, before anything is attached
mkdir "$TMPD/adir"
expect_fail "a directory" 4 "cannot write the report $TMPD/adir: Is a directory" "$TRACER" --pid "$SP" -o "$TMPD/adir"
expect_fail "a missing directory" 4 "cannot write the report $TMPD/none/r.json: its directory does not exist" \
    "$TRACER" --pid "$SP" -o "$TMPD/none/r.json"
ln -s nowhere.json "$TMPD/dangling.json"
expect_fail "a dangling symlink" 4 "cannot write the report $TMPD/dangling.json: a symlink to a missing file" \
    "$TRACER" --pid "$SP" -o "$TMPD/dangling.json"
mknod "$TMPD/blk" b 7 0
expect_fail "a block device" 4 "cannot write the report $TMPD/blk: not a regular file, FIFO or character device" \
    "$TRACER" --pid "$SP" -o "$TMPD/blk"
expect_fail "/proc/version (no temporary file can be made next to it)" 4 \
    "cannot write the (report|trace) /proc/version: (Permission denied|it is replaced through a temporary file next to it, which /proc/ does not allow)" \
    "$TRACER" --pid "$SP" --trace /proc/version
check_eq "refusals: nothing attached (semaphores 0)" 0 "$(sem_total "$SP" 2>/dev/null || echo 0)"
check_eq "refusals: the directory, the link and the device untouched" "directory symbolic link block special file" \
    "$(stat -c %F "$TMPD/adir") $(stat -c %F "$TMPD/dangling.json") $(stat -c %F "$TMPD/blk")"

# SIGKILL during a capture
mkdir "$TMPD/k"
start_bg kill "$TRACER" --pid "$SP" -q -o "$TMPD/k/r.json" -o "$TMPD/k/r.html" --trace "$TMPD/k/t.json"
KP=$BG_PID
wait_for_line "$TMPD/kill.err" attached 30 || not_ok "SIGKILL: tracer attached"
sleep 0.5
kill -KILL "$KP"; wait "$KP" 2>/dev/null
check_eq "SIGKILL: no file left next to the outputs" "" "$(ls -A "$TMPD/k")"
for _ in $(seq 50); do [ "$(sem_total "$SP" 2>/dev/null || echo 0)" = 0 ] && break; sleep 0.1; done
check_eq "SIGKILL: the semaphores back to 0" 0 "$(sem_total "$SP" 2>/dev/null || echo 0)"
stop_pid "$SP"
finish
