#!/bin/bash
# Intent: the sample service every tracer test runs behaves as documented, on each Tokio line's
# stock build, without any tracer: it announces `listening on ADDR` on port 0; `/` and `/work`
# answer 200; every pathology endpoint triggers (202) and the never-completing ones are capped
# (429); the service stays responsive while they run; SIGTERM and --duration end it with exit 0;
# the built-in load generator gets only successes, even with every pathology on; the workloads
# are exact (yield-workload: 4 × (10 + 1) = 44 polls) and deterministic (checksum: the same on
# every runtime flavour and every Tokio line); --wait-start holds the start; bad flags exit 2.
# Also checks the SPAWN-SITE markers tests rely on: one per site name, each on a spawn call.
# Stops only the processes it started (by PID).
. "$(dirname "$0")/lib.sh"

PATHOLOGIES=(slow_dependency blocking_call lost_waker stalled_task cpu_hog spawn_storm starvation deadlock)
WAITS_ROLES=(timer accept idle_conn idle_client notify leaked_rx oneshot_rx blocked joiner named large selfwake)
SRC="$ROOT/sample-service/src"

# ---- SPAWN-SITE markers (sources only, no binary needed) -------------------------------------
# (the deadlock pathology's tasks have sites of their own)
DEADLOCK_SITES=(deadlock_a deadlock_b deadlock_join_a deadlock_join_b deadlock_join_c lock_holder mutex_waiter
                rwlock_waiter semaphore_waiter lock_ordered)
for site in "${PATHOLOGIES[@]/deadlock/}" "${DEADLOCK_SITES[@]}" storm_burst yield_workload lock_workload \
            work_subtask connection load_client pathology_driver; do
    [ -n "$site" ] || continue
    hits=$(grep -rnE "// SPAWN-SITE: $site\$" "$SRC" --include='*.rs')
    n=$(grep -c . <<< "$hits")
    if [ -z "$hits" ] || [ "$n" != 1 ]; then
        not_ok "SPAWN-SITE $site: expected one marker, found ${n:-0}"
    elif ! grep -q 'tokio::spawn(' <<< "$hits"; then
        not_ok "SPAWN-SITE $site: marker line has no tokio::spawn call: $hits"
    else
        ok "SPAWN-SITE $site at $(cut -d: -f1,2 <<< "${hits#$SRC/}")"
    fi
done
for role in "${WAITS_ROLES[@]}"; do
    hits=$(grep -rnE "// SPAWN-SITE: waits_$role\$" "$SRC" --include='*.rs')
    n=$(grep -c . <<< "$hits")
    if [ -z "$hits" ] || [ "$n" != 1 ]; then
        not_ok "SPAWN-SITE waits_$role: expected one marker, found ${n:-0}"
    elif ! grep -qE '(tokio::spawn|\.spawn)\(' <<< "$hits"; then
        not_ok "SPAWN-SITE waits_$role: marker line has no spawn call: $hits"
    else
        ok "SPAWN-SITE waits_$role at $(cut -d: -f1,2 <<< "${hits#$SRC/}")"
    fi
done

# serve_start NAME ARGS…: starts the service in the background; sets PID and PORT
serve_start() {
    local name=$1; shift
    "$bin" "$@" > "$TMPD/$name.out" 2> "$TMPD/$name.err" &
    PID=$!; track_pid $PID
    PORT=""
    if wait_for_line "$TMPD/$name.out" '^listening on 127\.0\.0\.1:[0-9]+$' 10; then
        PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMPD/$name.out")
    fi
}
# wait_exit PID TIMEOUT_S: waits for our child PID to exit; sets RC to its exit status, or to
# "timeout" when it is still running after TIMEOUT_S. (Not in $(…): a subshell cannot wait.)
wait_exit() {
    local i
    RC=timeout
    for i in $(seq $(( $2 * 10 ))); do
        if ! kill -0 "$1" 2>/dev/null; then wait "$1"; RC=$?; return; fi
        sleep 0.1
    done
}
# get PATH: prints "STATUS BODY" (body's first line)
get() {
    curl -s --max-time 10 -o "$TMPD/body" -w '%{http_code}' "http://127.0.0.1:$PORT$1" > "$TMPD/code" 2>/dev/null
    echo "$(cat "$TMPD/code") $(head -1 "$TMPD/body" 2>/dev/null)"
}

first_checksum=""
for line in "${LINES[@]}"; do
    bin=$(sample_bin "$line" stock)
    need_file "$bin" "stock sample-service for tokio $line"

    # ---- endpoints, pathology triggers, SIGTERM ----
    serve_start "serve.$line" --addr 127.0.0.1:0 --workers 2
    if [ -z "$PORT" ]; then
        not_ok "tokio $line: no 'listening on' line: $(head -c 300 "$TMPD/serve.$line.err")"
        continue
    fi
    ok "tokio $line: listening on port $PORT"
    check_eq "tokio $line: GET /" "200 ok" "$(get /)"
    check_eq "tokio $line: GET /work" "200 work done: 332833500" "$(get /work)"
    check_eq "tokio $line: unknown path" "404 not found" "$(get /nope)"
    check_eq "tokio $line: unknown pathology" "404 unknown pathology" "$(get /pathology/nope)"
    check_eq "tokio $line: GET /pathology lists them" "200 $(IFS=,; echo "${PATHOLOGIES[*]}" | sed 's/,/, /g')" "$(get /pathology)"
    for p in "${PATHOLOGIES[@]}"; do
        check_eq "tokio $line: GET /pathology/$p triggers it" "202 triggered $p" "$(get "/pathology/$p")"
    done
    # lost_waker tasks never end: 5 at most per process (1 triggered above)
    for i in 1 2 3 4; do get /pathology/lost_waker > /dev/null; done
    check_eq "tokio $line: the 6th lost_waker is refused" "429" "$(get /pathology/lost_waker | cut -d' ' -f1)"
    # deadlock's tasks never end either: once per process
    check_eq "tokio $line: a second deadlock is refused" "429" "$(get /pathology/deadlock | cut -d' ' -f1)"
    check_eq "tokio $line: still serving after the pathologies" "200 ok" "$(get /)"
    kill -TERM "$PID"
    wait_exit "$PID" 10
    check_eq "tokio $line: SIGTERM exits 0" 0 "$RC"

    # ---- --duration, every pathology in the background, built-in load ----
    serve_start "load.$line" --pathology all --load 100 --duration 2s --workers 2
    [ -n "$PORT" ] || not_ok "tokio $line: load run printed no 'listening on' line"
    wait_exit "$PID" 15
    check_eq "tokio $line: --duration 2s exits 0 by itself" 0 "$RC"
    summary=$(grep -o 'load: sent=[0-9]* ok=[0-9]* failed=[0-9]*' "$TMPD/load.$line.err")
    okn=$(sed -n 's/.* ok=\([0-9]*\) .*/\1/p' <<< "$summary")
    if [ -n "$summary" ] && [ "${okn:-0}" -gt 50 ] && [[ "$summary" == *" failed=0" ]]; then
        ok "tokio $line: load with every pathology on: $summary"
    else
        not_ok "tokio $line: load with every pathology on: '${summary:-no summary}' (want ok > 50, failed=0)"
    fi

    # ---- workloads ----
    out=$("$bin" yield-workload --tasks 4 --yields 10 --workers 2)
    check_eq "tokio $line: yield-workload 4×10 (multi-thread)" "polls_expected=44" "$(grep -o 'polls_expected=[0-9]*' <<< "$out")"
    check "tokio $line: yield-workload reports ns_per_poll" grep -qE 'elapsed_ns=[0-9]+ ns_per_poll=[0-9.]+$' <<< "$out"
    out=$("$bin" yield-workload --tasks 4 --yields 10 --current-thread)
    check_eq "tokio $line: yield-workload 4×10 (current-thread)" "polls_expected=44" "$(grep -o 'polls_expected=[0-9]*' <<< "$out")"

    c1=$("$bin" checksum --iterations 3000 --workers 2)
    c2=$("$bin" checksum --iterations 3000 --workers 2)
    c3=$("$bin" checksum --iterations 3000 --current-thread)
    check "tokio $line: checksum prints checksum=<16 hex>" grep -qxE 'checksum=[0-9a-f]{16}' <<< "$c1"
    check_eq "tokio $line: checksum repeats" "$c1" "$c2"
    check_eq "tokio $line: checksum is the same on the current-thread runtime" "$c1" "$c3"
    if [ -z "$first_checksum" ]; then first_checksum=$c1
    else check_eq "tokio $line: checksum equals tokio ${LINES[0]}'s" "$first_checksum" "$c1"; fi

    # ---- --wait-start holds the runtime until the file exists ----
    "$bin" yield-workload --tasks 4 --yields 10 --wait-start "$TMPD/go.$line" > "$TMPD/wait.$line" 2>&1 &
    wpid=$!; track_pid $wpid
    sleep 0.3
    if kill -0 "$wpid" 2>/dev/null && [ ! -s "$TMPD/wait.$line" ]; then
        ok "tokio $line: --wait-start waits for its file"
    else
        not_ok "tokio $line: --wait-start did not wait"
    fi
    touch "$TMPD/go.$line"
    wait_exit "$wpid" 10
    check_eq "tokio $line: --wait-start then runs" 0 "$RC"
    check_eq "tokio $line: --wait-start workload output" "polls_expected=44" "$(grep -o 'polls_expected=[0-9]*' "$TMPD/wait.$line")"

    # ---- waits: one line per role with its task id, ready, exit 0 after --duration ----
    wstart=$(date +%s%N)
    "$bin" waits --duration 2s > "$TMPD/waits.$line" 2> "$TMPD/waits.$line.err" &
    wpid=$!; track_pid $wpid
    if wait_for_line "$TMPD/waits.$line" '^waits pid=[0-9]+ ready$' 10; then
        check_eq "tokio $line: waits ready line carries its pid" "waits pid=$wpid ready" "$(grep '^waits pid=' "$TMPD/waits.$line")"
    else
        not_ok "tokio $line: waits printed no ready line: $(head -c 300 "$TMPD/waits.$line.err")"
    fi
    wait_exit "$wpid" 10
    welapsed=$(( ($(date +%s%N) - wstart) / 1000000 ))
    check_eq "tokio $line: waits --duration 2s exits 0 by itself" 0 "$RC"
    check "tokio $line: waits ran its duration (${welapsed} ms)" test "$welapsed" -ge 2000
    W="$TMPD/waits.$line"
    wl() { grep -E "^waits task=$1 id=[0-9]+( |\$)" "$W"; }
    for role in "${WAITS_ROLES[@]}"; do
        [ "$role" = named ] && continue
        check_eq "tokio $line: waits line for $role, with an id" 1 "$(wl "$role" | wc -l)"
    done
    if grep -qx 'waits named unsupported' "$W"; then
        check_eq "tokio $line: waits named: unsupported (no task line) and says why on stderr" "0 1" \
            "$(wl named | wc -l) $(grep -c 'named: unsupported in this build' "$W.err")"
    else
        check_eq "tokio $line: waits named: one line with its name" 1 "$(wl named | grep -c ' name=waits-named$')"
    fi
    check_eq "tokio $line: waits task ids are distinct" \
        "$(grep -c '^waits task=' "$W")" "$(sed -n 's/^waits task=[a-z_]* id=\([0-9]*\).*/\1/p' "$W" | sort -u | wc -l)"
    check "tokio $line: waits accept: fd and addr" grep -qE '^waits task=accept id=[0-9]+ fd=[0-9]+ addr=127\.0\.0\.1:[0-9]+$' "$W"
    for role in idle_conn idle_client; do
        check "tokio $line: waits $role: fd, addr and peer" grep -qE "^waits task=$role id=[0-9]+ fd=[0-9]+ addr=127\.0\.0\.1:[0-9]+ peer=127\.0\.0\.1:[0-9]+\$" "$W"
    done
    check_eq "tokio $line: waits idle_conn's peer is idle_client's addr" \
        "$(wl idle_client | sed -n 's/.* addr=\([^ ]*\) .*/\1/p')" "$(wl idle_conn | sed -n 's/.* peer=\([^ ]*\)$/\1/p')"
    check_eq "tokio $line: waits joiner joins blocked" \
        "$(wl blocked | sed -n 's/.* id=\([0-9]*\)$/\1/p')" "$(wl joiner | sed -n 's/.* joins=\([0-9]*\)$/\1/p')"
    wsize=$(wl large | sed -n 's/.* size=\([0-9]*\)$/\1/p')
    check "tokio $line: waits large: size ≥ 20000 (${wsize:-none})" test "${wsize:-0}" -ge 20000
    check "tokio $line: waits nothing on stdout but its lines" \
        test "$(grep -cvE '^waits (task=[a-z_]+ id=[0-9]+.*|named unsupported|pid=[0-9]+ ready)$' "$W")" = 0
    "$bin" waits --workers 4 > /dev/null 2>&1
    check_eq "tokio $line: waits --workers: usage error" 2 $?

    # ---- usage errors ----
    "$bin" --pathology bogus > /dev/null 2>&1
    check_eq "tokio $line: unknown pathology name exits 2" 2 $?
    "$bin" yield-workload --tasks x > /dev/null 2>&1
    check_eq "tokio $line: bad number exits 2" 2 $?
    "$bin" serve --cancel-at-exit > /dev/null 2> "$TMPD/cae.err"
    check_eq "tokio $line: --cancel-at-exit outside uring-workload exits 2, naming it (then the usage)" \
        "2 sample-service: unknown argument '--cancel-at-exit' for \`serve\`" "$? $(head -1 "$TMPD/cae.err")"
    "$bin" uring-workload > /dev/null 2> "$TMPD/uring.err"
    check_eq "tokio $line: uring-workload refused (exit 2) naming the uring line" "2 1" \
        "$? $(grep -c 'built without tokio-uring: use the tokio-1.53-uring line' "$TMPD/uring.err")"
done

# ---- the tokio-1.53-uring line: uring-workload ----
bin=$(sample_bin 1.53-uring stock)
need_file "$bin" "stock sample-service for tokio 1.53-uring"
mkdir -p "$TMPD/uring-tmp"
TMPDIR="$TMPD/uring-tmp" "$bin" uring-workload --tasks 3 --duration 1s --file-size 8192 > "$TMPD/uring.out" 2>&1
check_eq "uring-workload: exit 0" 0 $?
check "uring-workload: verified what it read back" \
    test "$(sed -n 's/.*bytes_verified=\([0-9]*\).*/\1/p' "$TMPD/uring.out")" -gt 0
check_eq "uring-workload: per-opcode line, one OPENAT/CLOSE/UNLINKAT per task, no stuck read" "3 3 3 0" \
    "$(sed -n 's/^uring ops .*openat=\([0-9]*\) close=\([0-9]*\) unlinkat=\([0-9]*\) stuck_read=\([01]\)$/\1 \2 \3 \4/p' "$TMPD/uring.out")"
check_eq "uring-workload: each task printed its id and requests, adding up to the op counts" ok \
    "$(python3 - "$TMPD/uring.out" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
ops = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", re.search(r"^uring ops (.*)$", t, re.M).group(1)))
tasks = re.findall(r"^uring task id=(\d+) requests=(\d+)$", t, re.M)
total = sum(ops[k] for k in ("write", "read", "fsync", "openat", "close", "unlinkat"))
print("ok" if len(tasks) == 3 and len({i for i, _ in tasks}) == 3 and sum(int(n) for _, n in tasks) == total else (tasks, total))
PY
)"
check_eq "uring-workload: no file left in TMPDIR" 0 "$(ls -A "$TMPD/uring-tmp" | wc -l)"
TMPDIR="$TMPD/uring-tmp" "$bin" uring-workload --tasks 1 --duration 300ms --stuck-pipe > "$TMPD/uring2.out" 2>&1
check_eq "uring-workload --stuck-pipe: exit 0 (the stuck read abandoned), its fd printed" "0 1" \
    "$? $(grep -cE '^uring pid=[0-9]+ stuck_fd=[0-9]+$' "$TMPD/uring2.out")"
TMPDIR="$TMPD/uring-tmp" "$bin" uring-workload --tasks 1 --duration 300ms --stuck-pipe --cancel-at-exit > "$TMPD/uring3.out" 2>&1
check_eq "uring-workload --stuck-pipe --cancel-at-exit: exit 0, the read cancelled by the driver (said so)" "0 1" \
    "$? $(grep -c '^uring cancelled_at_exit=1$' "$TMPD/uring3.out")"
"$bin" uring-workload --workers 2 > /dev/null 2>&1
check_eq "uring-workload --workers: usage error" 2 $?
finish
