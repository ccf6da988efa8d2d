# Helpers of the tracer-core tests (tests/t_trace_*.sh). Source after lib.sh.
FIX="$BUILD/fixtures"
FAKE="$FIX/fake_tokio"
FAKE_SO="$FIX/fake_tokio_so"
FAKE_SRC="tests/fixtures/trace/fake_tokio.c"

need_tracer() {
    need_file "$TRACER" "tracer binary"
    need_file "$FAKE" "fixture fake_tokio"
    need_file "$FAKE_SO" "fixture fake_tokio_so"
}

# need_sample LINE FLAVOUR: sets SAMPLE to the sample-service binary; a missing one fails the
# test with its reason (make builds it). Not for $(…): the reason would be swallowed.
need_sample() {
    SAMPLE=$(sample_bin "$1" "$2")
    need_file "$SAMPLE" "sample-service tokio-$1/$2"
}

# need_console_app: sets APP to tokio-console's demo app (the `app` example of Debian's
# console-subscriber crate, built with the kit by mk/console-app.mk); missing, it fails the test
need_console_app() {
    APP="$BUILD/console-app/app"
    need_file "$APP" "tokio-console demo app (make builds it: mk/console-app.mk)"
}

# wait_exec PID BINARY [TIMEOUT_S]: waits until PID runs BINARY (a background job is a shell for
# a moment before its exec; a tracer given --pid then would look at the shell)
wait_exec() {
    local i want; want=$(readlink -f "$2")
    for i in $(seq $(( ${3:-10} * 20 ))); do
        [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$want" ] && return 0
        sleep 0.05
    done
    echo "# wait_exec: $1 does not run $2 after ${3:-10} s"; return 1
}

# sem_values PID: "probe=value" for every tokio probe semaphore of PID (summed over sites
# and files), read from /proc/PID/mem at the run-time semaphore addresses the note reader gives.
sem_values() {
    "$TRACER" list -p "$1" --json 'tokio:*' 2>/dev/null | python3 -c '
import json, sys
pid = sys.argv[1]
notes = json.load(sys.stdin)
vals, seen = {}, set()
with open(f"/proc/{pid}/mem", "rb") as mem:
    for n in notes:
        a = n.get("runtime_semaphore") or 0
        if not a or a in seen:
            continue
        seen.add(a)
        mem.seek(a)
        vals[n["name"]] = vals.get(n["name"], 0) + int.from_bytes(mem.read(2), "little")
for k in sorted(vals):
    print(f"{k}={vals[k]}")
' "$1"
}
# sem_total PID: sum of every tokio semaphore of PID ("" when none could be read)
sem_total() {
    sem_values "$1" | awk -F= '{s += $2; n++} END { if (n) print s }'
}

# wait_sem PID MIN TIMEOUT_S: waits until the semaphore total is at least MIN
wait_sem() {
    local i t
    for i in $(seq $(( $3 * 10 ))); do
        t=$(sem_total "$1"); [ -n "$t" ] && [ "$t" -ge "$2" ] && return 0; sleep 0.1
    done
    return 1
}

# start_bg NAME CMD…: runs CMD in the background with stdout/stderr in $TMPD/NAME.{out,err};
# sets BG_PID and tracks it
start_bg() {
    local name=$1; shift
    "$@" > "$TMPD/$name.out" 2> "$TMPD/$name.err" &
    BG_PID=$!
    track_pid "$BG_PID"
}

# bt_stop PID LABEL: stops a bpftrace we started with SIGINT and waits for it to exit: it prints
# its maps only after detaching every probe, which under load takes long (5 s for ~115 uprobes
# with both CPUs busy; a 60 s wait ran out once), so reading its output earlier finds no counts.
# The SIGINT is sent again every 5 s: a bpftrace once sat 300 s after a single one without
# exiting (a fresh-clone CI run, t_fallback_counts; why is not known: one lost signal would
# explain it), and one in ~120 stops here sat until the next one (33 s of a t_batch_capture run
# when they were 30 s apart); bpftrace takes more like the first (0.17, checked: 22 of them
# 0.3 s apart while it detached 98 uprobes, it still printed its maps and exited 0). Still running
# after 300 s is a failure of its own.
bt_stop() {
    local t0=$SECONDS n=0
    while [ $n -lt 60 ]; do
        kill -INT "$1" 2>/dev/null; n=$((n + 1))
        wait_exit "$1" 5
        [ "$RC" = timeout ] || break
    done
    if [ "$RC" = timeout ]; then not_ok "$2: bpftrace did not exit within 300 s of SIGINT ($n sent)"
    else echo "# $2: bpftrace exited $(( SECONDS - t0 )) s after SIGINT ($n sent)"; fi
}

# stallmon_start NAME: starts the stall witness (build/fixtures/stallmon: a SCHED_FIFO thread per
# CPU noting every wake-up it got over 2 ms late) and waits until it watches; STALLS is its
# record. A witness that cannot run fails the test (tests/stall_excuse.py would excuse nothing).
# stallmon_stop: stops it and prints its summary.
stallmon_start() {
    need_file "$BUILD/fixtures/stallmon" "fixture stallmon"
    start_bg "stallmon.$1" "$BUILD/fixtures/stallmon"
    STALLMON_PID=$BG_PID STALLS="$TMPD/stallmon.$1.out"
    wait_for_line "$STALLS" '^ready' 10 || not_ok "stallmon watching: $(cat "$TMPD/stallmon.$1.err")"
}
# RC (a wait_exit's result the caller has yet to check) is left as it was.
stallmon_stop() {
    local keep=${RC-}
    kill -INT "$STALLMON_PID" 2> /dev/null
    wait_exit "$STALLMON_PID" 10
    [ "$RC" = 0 ] || not_ok "stallmon exit 0 at SIGINT (got $RC)"
    echo "# $(grep '^stallmon:' "$STALLS" || echo "stallmon: no summary (exit $RC)")"
    RC=$keep
}
# check_healthy LABEL REPORT [--except-type SUBSTR] SITE…: the findings of REPORT at the healthy
# sites SITE ("" for all) judged by tests/stall_excuse.py against the last stallmon record: none,
# but for a lone long poll a recorded machine stall explains. The judgement is printed.
check_healthy() {
    local label=$1 out; shift
    local opt=(); [ "${2:-}" = --except-type ] && { opt=(--except-type "$3"); set -- "$1" "${@:4}"; }
    out=$(python3 "$ROOT/tests/stall_excuse.py" "${opt[@]}" "$1" "$STALLS" "${@:2}")
    sed 's/^/# /' <<< "$out"
    check_eq "$label: no finding, but a lone long poll a recorded machine stall explains" ok "$(tail -n 1 <<< "$out")"
}

# mono_ns: CLOCK_MONOTONIC now, in ns (the tracer's clock), read by python
mono_ns() { python3 -c 'import time; print(time.monotonic_ns())'; }

# wait_exit PID TIMEOUT_S: waits for our child PID; sets RC (its status, or "timeout")
wait_exit() {
    local i
    for i in $(seq $(( $2 * 10 ))); do
        if ! kill -0 "$1" 2>/dev/null; then wait "$1" 2>/dev/null; RC=$?; return 0; fi
        sleep 0.1
    done
    RC=timeout
}

# expect_of FILE KEY: a value of the fixture's "expect k=v …" line
expect_of() { sed -n 's/^expect .*\b'"$2"'=\([0-9]*\).*/\1/p' "$1"; }

# site_of NAME: "file:line:col" of the fixture's spawn site NAME (from its SPAWN-SITE marker)
site_of() {
    local line
    line=$(grep -n "// SPAWN-SITE: $1\$" "$ROOT/$FAKE_SRC" | cut -d: -f1)
    echo "$FAKE_SRC:$line:5"
}

# jqr FILE EXPR: raw jq output
jqr() { jq -r "$2" "$1"; }

# expect_fail LABEL STATUS REGEX CMD…: exit STATUS, one stderr line matching REGEX (after the
# "tokio-ebpf-trace: " prefix), nothing on stdout
expect_fail() {
    local label=$1 want=$2 re=$3 rc lines; shift 3
    timeout -k 5 30 "$@" > "$TMPD/ef.out" 2> "$TMPD/ef.err" < /dev/null
    rc=$?
    lines=$(wc -l < "$TMPD/ef.err")
    if [ "$rc" = "$want" ] && [ "$lines" = 1 ] && [ ! -s "$TMPD/ef.out" ] &&
       grep -qE "^tokio-ebpf-trace: .*($re)" "$TMPD/ef.err"; then
        ok "$label → exit $rc: $(cat "$TMPD/ef.err")"
    else
        not_ok "$label (want exit $want and one line matching /$re/; got exit $rc, $lines lines: $(head -c 400 "$TMPD/ef.err"); stdout $(head -c 200 "$TMPD/ef.out"))"
    fi
}

# loc_of NAME: "src/FILE.rs:LINE:COL" of the sample service's "// SPAWN-SITE: NAME" marker (COL:
# the column of its tokio::spawn call; nothing when the marker's line has none). Every marker's
# is worked out at a test's first call, by one python3 (~0.35 s of start-up: t_deadlock made 36
# calls), into $TMPD/spawn-sites ("NAME LOCATION" lines, grep's order: the first of a NAME wins)
loc_of() {
    local n l
    [ -s "$TMPD/spawn-sites" ] || grep -rn '// SPAWN-SITE: [^ ]*$' "$ROOT/sample-service/src" --include='*.rs' | python3 -c '
import sys
for rec in sys.stdin:
    path, line, text = rec.rstrip("\n").split(":", 2)
    name = text.rsplit("// SPAWN-SITE: ", 1)[1]
    if "tokio::spawn(" in text and "/src/" in path:
        print(name, "src/" + path.split("/src/", 1)[1] + ":" + line + ":" + str(text.index("tokio::spawn(") + 1))' > "$TMPD/spawn-sites"
    while read -r n l; do [ "$n" = "$1" ] && { echo "$l"; return; }; done < "$TMPD/spawn-sites"
}

# fake_sysfs DIR: fake kernels for TET_SYSFS_ROOT under DIR/no-uprobes, DIR/no-btf, DIR/no-refctr
# (each lacking what its name says, the rest present)
fake_sysfs() {
    local K=$1
    mkdir -p "$K/no-uprobes/sys/kernel/btf" "$K/no-btf/sys/bus/event_source/devices/uprobe/format" \
             "$K/no-refctr/sys/bus/event_source/devices/uprobe" "$K/no-refctr/sys/kernel/btf"
    touch "$K/no-uprobes/sys/kernel/btf/vmlinux" "$K/no-refctr/sys/kernel/btf/vmlinux"
    echo 8 > "$K/no-btf/sys/bus/event_source/devices/uprobe/type"
    echo 8 > "$K/no-refctr/sys/bus/event_source/devices/uprobe/type"
    touch "$K/no-btf/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset"
}

# over_lines LINES RUN CHECK: for each Tokio line of LINES, its usdt sample service in batched
# capture (and per-event too on 1.53): RUN LABEL BIN CAPTURE, then CHECK "tokio LINE CAPTURE"
over_lines() {
    local lines=$1 run=$2 chk=$3 line bin caps cap
    for line in $lines; do
        bin=$(sample_bin "$line" usdt)
        need_file "$bin" "usdt sample service ($line)"
        caps=batched; [ "$line" = 1.53 ] && caps="batched per-event"
        for cap in $caps; do
            "$run" "$line.$cap" "$bin" "$cap"
            "$chk" "tokio $line $cap"
        done
    done
}

# A Prometheus remote-write receiver (Debian's prometheus, --web.enable-remote-write-receiver,
# on 127.0.0.1, a free port, a temporary data dir): the independent decoder of --remote-write.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# prom_receiver_init: picks its port (PP) and sets API; writes its configuration and data dir
prom_receiver_init() {
    command -v prometheus > /dev/null || die_test "prometheus missing (Debian package prometheus: make deps)"
    command -v curl > /dev/null || die_test "curl missing (scripts/packages.txt)"
    PP=$(free_port)
    API="http://127.0.0.1:$PP"
    printf 'global: { scrape_interval: 1h, evaluation_interval: 1h }\n' > "$TMPD/prom.yml"
    mkdir -p "$TMPD/prom-data"
}
# prom_up NAME: starts it (again: same port and data) and waits until it is ready; sets PROM
prom_up() {
    local i
    start_bg "prom.$1" prometheus --config.file="$TMPD/prom.yml" --storage.tsdb.path="$TMPD/prom-data" \
        --web.listen-address="127.0.0.1:$PP" --web.enable-remote-write-receiver
    PROM=$BG_PID
    for i in $(seq 200); do
        curl -sf -o /dev/null "$API/-/ready" && return 0
        sleep 0.1
    done
    die_test "prometheus ($1) ready on 127.0.0.1:$PP: $(tail -3 "$TMPD/prom.$1.err")"
}
# prom_q EXPR: the value of the instant query's first result ("" if none)
prom_q() { curl -sf --get "$API/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // empty'; }
