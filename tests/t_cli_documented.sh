#!/bin/bash
# Intent: behaviour docs/cli.md documents that no other test exercised.
# (1) `--binary PATH` traces a process of PATH that was already running when the tracer started
#     ("every process running PATH"): the semaphores of that process are raised while attached
#     and back to 0 after; the report counts exactly the work the test itself sent (N curl
#     requests = N connection tasks, the /work ones = work_subtask tasks: the sample service's
#     routes.rs / server.rs spawn one each), all under that PID, and a task spawned before the
#     tracer started (a keep-alive connection the test opened beforehand) is traced too (spawn
#     not seen, ≥ the 10 requests the test sent on it as polls).
# (2) JSON errors: "--output - … errors are JSON on stdout too" and "with --json, the same message
#     is also printed on stdout as one JSON object {"error": "…"} … the exit status is non-zero":
#     for each kind of failure before attaching (usage 3, bad input 4, cannot trace 2; -o - before
#     or after the bad option, --output=-, -o-, the `trace` command), stdout is exactly one JSON
#     object with the one key "error", whose text is stderr's one line minus "tokio-ebpf-trace: ";
#     the exit status is the documented one; nothing is left attached.
# (3) `list --pretty` / `check --pretty`: indented JSON (more than one line, where --json is one),
#     the same document as --json (jq -S), the same exit status; an error with --pretty is JSON too.
#     `list -v` adds one line per argument, exactly the arguments readelf -n prints for each note
#     (index, signedness and size from N@, kind from the operand: %reg, $const, else memory, the
#     operand as written); without -v the output is the same minus those lines.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
need_sample 1.53 usdt; usdt=$SAMPLE
need_sample 1.53 stock; stock=$SAMPLE
command -v curl > /dev/null || die_test "curl missing (scripts/packages.txt)"
PY=/usr/bin/python3
LOC_CONN=$(loc_of connection) LOC_WORK=$(loc_of work_subtask)
[ -n "$LOC_CONN" ] && [ -n "$LOC_WORK" ] || die_test "no SPAWN-SITE markers"

# ================= (1) --binary PATH, the process already running =================
# a private copy: --binary traces every process of the path, and other tests run the shared one
own="$TMPD/sample-service"
cp "$usdt" "$own"
start_bg svc "$own" serve --addr 127.0.0.1:0 --workers 2
SP=$BG_PID
wait_for_line "$TMPD/svc.out" '^listening on ' 30 || die_test "service listening: $(cat "$TMPD/svc.err")"
ADDR=$(sed -n 's/^listening on //p' "$TMPD/svc.out")
# a keep-alive connection opened (its task spawned) before the tracer starts; 10 more requests
# on it once told to go
start_bg ka "$PY" -c '
import http.client, os, sys, time
host, port = sys.argv[1].rsplit(":", 1)
c = http.client.HTTPConnection(host, int(port), timeout=30)
def get():
    c.request("GET", "/"); r = c.getresponse(); r.read(); return r.status
print("pre", get(), flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
print("post", sum(get() == 200 for _ in range(10)), flush=True)
' "$ADDR" "$TMPD/go"
wait_for_line "$TMPD/ka.out" '^pre 200$' 20 || not_ok "keep-alive connection opened before the tracer: $(cat "$TMPD/ka.err")"

start_bg tr "$TRACER" --binary "$own" -q -o "$TMPD/bin.json"
TP=$BG_PID
wait_for_line "$TMPD/tr.err" attached 30 || die_test "tracer attached by path: $(cat "$TMPD/tr.err")"
check "attach line: the path, every process" grep -q "to $own, every process" "$TMPD/tr.err"
check "the running process's semaphores are raised while attached ($(sem_total $SP))" test "$(sem_total $SP)" -gt 0
touch "$TMPD/go"
wait_for_line "$TMPD/ka.out" '^post ' 30 || not_ok "keep-alive requests sent"
check_eq "10 requests on the pre-trace connection answered" "post 10" "$(grep '^post ' "$TMPD/ka.out")"
N_ROOT=6 N_WORK=4 okc=0
for i in $(seq $N_ROOT); do curl -sf -o /dev/null --max-time 20 "http://$ADDR/" && okc=$((okc+1)); done
for i in $(seq $N_WORK); do curl -sf -o /dev/null --max-time 20 "http://$ADDR/work" && okc=$((okc+1)); done
check_eq "the test's curl requests all answered" $((N_ROOT + N_WORK)) "$okc"
kill -INT "$TP"; wait_exit "$TP" 60
check_eq "tracer (SIGINT) exits 0" 0 "$RC"
R="$TMPD/bin.json"
if jq -e . "$R" > /dev/null 2>&1; then
    check_eq "report: binary mode (pid null, the path)" "null $own" "$(jqr "$R" '"\(.capture.pid) \(.capture.binary)"')"
    check_eq "report: every task is the running process's" "$SP" "$(jqr "$R" '[.tasks[].pid] | unique | map(tostring) | join(",")')"
    check_eq "connection tasks = the test's curl connections" $((N_ROOT + N_WORK)) \
        "$(jqr "$R" "[.spawn_sites[] | select(.location // \"\" | endswith(\"$LOC_CONN\")) | .tasks] | add")"
    check_eq "work_subtask tasks = the test's /work requests" $N_WORK \
        "$(jqr "$R" "[.spawn_sites[] | select(.location // \"\" | endswith(\"$LOC_WORK\")) | .tasks] | add")"
    check "a task spawned before the tracer started is traced (≥ 10 polls: $(jqr "$R" '[.tasks[] | select(.spawn_seen == false) | .polls] | max'))" \
        test "$(jqr "$R" '[.tasks[] | select(.spawn_seen == false) | .polls] | max // 0')" -ge 10
    check_eq "report: 0 drops" 0 "$(jqr "$R" .totals.drops)"
else
    not_ok "--binary report written and valid: $(cat "$TMPD/tr.err")"
fi
check_eq "after the tracer: the process's semaphores are back to 0" 0 "$(sem_total $SP)"
stop_pid "$SP"

# ================= (2) errors are JSON on stdout with --output - =================
start_bg fix "$FAKE" --go "$TMPD/never" --hold
FP=$BG_PID
wait_for_line "$TMPD/fix.out" '^pid ' 10 || die_test "fixture started"
sleep 60 & SLEEP=$!; track_pid $SLEEP
# a port in use, held by us
start_bg port "$PY" -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(120)'
wait_for_line "$TMPD/port.out" '^[0-9]+$' 10 || not_ok "port holder started"
BUSY=$(cat "$TMPD/port.out")

# expect_json_err LABEL STATUS REGEX CMD…: exit STATUS; stdout exactly one JSON object, one line,
# {"error": TEXT} with TEXT matching REGEX; stderr exactly "tokio-ebpf-trace: TEXT"
expect_json_err() {
    local label=$1 want=$2 re=$3 rc msg; shift 3
    timeout -k 5 30 "$@" > "$TMPD/je.out" 2> "$TMPD/je.err" < /dev/null
    rc=$?
    msg=$(jq -r '.error' "$TMPD/je.out" 2>/dev/null)
    if [ "$rc" = "$want" ] && [ "$(wc -l < "$TMPD/je.out")" = 1 ] &&
       jq -se 'length == 1 and (.[0] | type == "object" and keys == ["error"])' "$TMPD/je.out" > /dev/null 2>&1 &&
       grep -qE -- "$re" <<< "$msg" &&
       [ "$(cat "$TMPD/je.err")" = "tokio-ebpf-trace: $msg" ]; then
        ok "$label → exit $rc, stdout $(cat "$TMPD/je.out")"
    else
        not_ok "$label (want exit $want, one {\"error\"} object matching /$re/ on stdout, the same one line on stderr; got exit $rc, stdout: $(head -c 300 "$TMPD/je.out"); stderr: $(head -c 300 "$TMPD/je.err"))"
    fi
}
T=$TRACER
while IFS='|' read -r label want re args; do
    [ -n "$label" ] || continue
    # shellcheck disable=SC2086 # the table's arguments are words
    eval "set -- $args"
    expect_json_err "-o -: $label" "$want" "$re" "$@"
done <<EOF
PID not found (-o - after)|4|^no process with PID 2147483000\$|"\$T" --pid 2147483000 -o -
PID not found (-o - before)|4|^no process with PID 2147483000\$|"\$T" -o - --pid 2147483000
PID not found (--output=-)|4|no process with PID|"\$T" --output=- --pid 2147483000
PID not found (-o-)|4|no process with PID|"\$T" -o- --pid 2147483000
PID not found (trace command)|4|no process with PID|"\$T" trace -o - --pid 2147483000
invalid PID|3|invalid PID '12ab'|"\$T" -o - --pid 12ab
not a Tokio program|2|PID $SLEEP: .* is not a Tokio program|"\$T" -o - --pid $SLEEP
--binary missing|4|$TMPD/nope: No such file or directory|"\$T" -o - --binary "$TMPD/nope"
--binary not ELF|4|/etc/passwd: not an ELF file|"\$T" -o - --binary /etc/passwd
unknown option before -o -|3|unknown option '--frobnicate'|"\$T" --pid $FP --frobnicate -o -
unknown option after -o -|3|unknown option '--frobnicate'|"\$T" -o - --pid $FP --frobnicate
missing value|3|option '--duration' needs a value|"\$T" -o - --pid $FP --duration
bad duration|3|--duration '0s': must be at least 1ms|"\$T" -o - --pid $FP --duration 0s
no target|3|nothing to trace|"\$T" -o -
two targets|3|give one target|"\$T" -o - --pid $FP --binary "$FAKE"
-o - twice|3|already an output|"\$T" -o - -o - --pid $FP
--flight-recorder with -o -|3|drop --output|"\$T" -o - --flight-recorder 10s --pid $FP
--output in a missing directory|4|cannot write the report $TMPD/no/such/r.json|"\$T" -o - -o "$TMPD/no/such/r.json" --pid $FP
--trace in a missing directory|4|cannot write the trace $TMPD/no/such/t.json|"\$T" -o - --trace "$TMPD/no/such/t.json" --pid $FP
--metrics-addr malformed|3|--metrics-addr 'bogus'|"\$T" -o - --metrics-addr bogus --pid $FP
--metrics-addr in use|2|--metrics-addr 127.0.0.1:$BUSY: cannot listen|"\$T" -o - --metrics-addr 127.0.0.1:$BUSY --pid $FP
--capture batched without tokio:event_batch|2|no tokio:event_batch probe|"\$T" -o - --capture batched --pid $FP
kernel without uprobes|2|kernel without uprobes|env TET_SYSFS_ROOT="$TMPD/nosys" "\$T" -o - --pid $FP
no permission (uid nobody)|2|^permission denied: tracing needs root, or CAP_BPF and CAP_PERFMON|setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all -- "\$T" -o - --pid $FP
EOF
check_eq "after all of these, nothing is attached to the fixture (semaphores 0)" 0 "$(sem_total $FP)"

# ================= (3) list --pretty / -v, check --pretty =================
# same_json LABEL A B: both parse and are the same document
same_json() { cmp -s <(jq -S . "$2" 2>/dev/null) <(jq -S . "$3" 2>/dev/null) && jq -e . "$2" > /dev/null 2>&1; }
# pretty_vs_json LABEL WANT_RC ARGS…: `ARGS --pretty` vs `ARGS --json`
pretty_vs_json() {
    local label=$1 want=$2 rcp rcj; shift 2
    "$TRACER" "$@" --pretty > "$TMPD/p.out" 2> "$TMPD/p.err"; rcp=$?
    "$TRACER" "$@" --json > "$TMPD/j.out" 2> "$TMPD/j.err"; rcj=$?
    check_eq "$label --pretty: exit $want, as --json" "$want $want" "$rcp $rcj"
    check "$label --pretty: the same JSON as --json" same_json "$label" "$TMPD/p.out" "$TMPD/j.out"
    check "$label --pretty: indented (--json: 1 line, --pretty: $(wc -l < "$TMPD/p.out") lines, nested lines start with 2 spaces)" \
        bash -c "[ \$(wc -l < '$TMPD/j.out') = 1 ] && [ \$(wc -l < '$TMPD/p.out') -gt 3 ] && grep -q '^  [^ ]' '$TMPD/p.out'"
}
pretty_vs_json "list FILE" 0 list "$own"
check_eq "list FILE --pretty: one object per note (readelf -n: $(tokio_notes "$own" | wc -l) tokio notes)" \
    "$(tokio_notes "$own" | wc -l)" "$(jq '[.[] | select(.provider == "tokio")] | length' "$TMPD/p.out")"
pretty_vs_json "list FILE 'tokio:task_*'" 0 list "$own" 'tokio:task_*'
check_eq "list 'tokio:task_*' --pretty: the task_* notes readelf shows" \
    "$(tokio_notes "$own" | awk '$1 ~ /^task_/ { print $1 }' | sort | tr '\n' ' ')" \
    "$(jq -r '.[].name' "$TMPD/p.out" | sort | tr '\n' ' ')"
pretty_vs_json "list -p PID" 0 list -p "$FP"
jqe() { jq -e "$1" "$2" > /dev/null; }   # jqe FILTER FILE: FILTER holds
check "list -p PID --pretty: run-time keys (pid, runtime_address)" \
    jqe "length > 0 and all(.[]; .pid == $FP and (.runtime_address | type == \"number\"))" "$TMPD/p.out"
pretty_vs_json "check FILE (usdt build)" 0 check "$own"
check "check --pretty: the documented keys" jqe '. as $o |
    ["tokio","symbols","kernel","binary_mode","mode","verdict","exit_code","reasons","warnings"] | all(. as $k | $o | has($k))' "$TMPD/p.out"
check_eq "check --pretty (usdt build): verdict ready, exit_code 0, mode usdt" "ready 0 usdt" \
    "$(jq -r '"\(.verdict) \(.exit_code) \(.mode)"' "$TMPD/p.out")"
pretty_vs_json "check FILE (stock build)" 1 check "$stock"
check_eq "check --pretty (stock build): fallback-only, exit_code 1" "fallback-only 1" \
    "$(jq -r '"\(.verdict) \(.exit_code)"' "$TMPD/p.out")"
pretty_vs_json "check -p PID" 0 check -p "$FP"
expect_json_err "list --pretty, missing file" 4 "$TMPD/nope" "$TRACER" list --pretty "$TMPD/nope"
expect_json_err "check --pretty, missing file" 4 "$TMPD/nope" "$TRACER" check --pretty "$TMPD/nope"

# list -v against readelf -n: "argK  {s|u}BITS  KIND  OPERAND" per argument, in note order
readelf_args() {
    readelf -n --wide "$1" | awk '
        /^ *Provider:/  { p = $2 }
        /^ *Arguments:/ { sub(/^ *Arguments: */, ""); n = split($0, a, " ")
                          for (i = 1; i <= n; i++) {
                              at = index(a[i], "@"); sz = substr(a[i], 1, at - 1) + 0; op = substr(a[i], at + 1)
                              t = (sz < 0 ? "s" : "u") ((sz < 0 ? -sz : sz) * 8)
                              k = substr(op, 1, 1) == "%" ? "reg" : substr(op, 1, 1) == "$" ? "const" : "mem"
                              print "arg" i, t, k, op } }'
}
list_v_args() { grep -E '^ +arg[0-9]+ ' "$1" | awk '{ print $1, $2, $3, $4 }'; }
# the "[SYM = 0xADDR]" a -v line adds for a symbolic operand
v_syms() { sed -n 's/^ *arg[0-9].*\[\([^ ]*\) = \(0x[0-9a-f]*\)\]$/\1 \2/p' "$1"; }
# list_v_syms_ok OUT ELF: each of them is the symbol's value as nm shows it (.symtab or .dynsym)
list_v_syms_ok() {
    local sym addr bad=0
    while read -r sym addr; do
        { nm --defined-only "$2"; nm -D --defined-only "$2"; } 2>/dev/null | awk -v s="$sym" '$3 == s { print $1 }' |
            while read -r v; do [ $((16#$v)) = $((addr)) ] && echo same; done | grep -q same || bad=1
    done < <(v_syms "$1")
    [ "$bad" = 0 ]
}
for f in "$FIX/notes/ops_O0" "$FIX/notes/ops_O2" "$own"; do
    [ -e "$f" ] || { not_ok "fixture $f missing (make)"; continue; }
    "$TRACER" list -v "$f" > "$TMPD/v.out" 2> "$TMPD/v.err"; rc=$?
    "$TRACER" list "$f" > "$TMPD/n.out" 2>> "$TMPD/v.err"
    check_eq "list -v $(basename "$f"): exit 0" 0 "$rc"
    n=$(readelf_args "$f" | wc -l)
    check "list -v $(basename "$f"): one line per argument, as readelf -n ($n arguments)" \
        cmp -s <(readelf_args "$f") <(list_v_args "$TMPD/v.out")
    check "list -v $(basename "$f"): each operand's symbol and address as nm shows them ($(v_syms "$TMPD/v.out" | wc -l))" list_v_syms_ok "$TMPD/v.out" "$f"
    check "list $(basename "$f") without -v: the same minus the argument lines" \
        cmp -s "$TMPD/n.out" <(grep -vE '^ +arg[0-9]+ ' "$TMPD/v.out")
    check "list -v $(basename "$f"): argument lines present ($n)" test "$n" -gt 0
done
finish
