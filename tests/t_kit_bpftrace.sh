#!/bin/bash
# Intent: bpftrace, a USDT client nobody here wrote, attached to all thirteen per-event probes of
# each usdt sample-service build (before the process starts) reads consistent values: every task
# seen in task_poll_begin was announced by task_spawn; every task_wait fires inside the poll of
# the task it names (the innermost poll of its thread; 0 only outside any task poll), with a
# kind 0-7, a JoinHandle's object an announced task; every task_meta follows its task's spawn,
# with a size > 0 and no name (these builds have no task::Builder); every task_lock acquire (op
# 0-3) fires inside the poll of the task it names, every op is 0-5 with permits > 0, a Mutex is
# acquired 1 permit at a time and never by two tasks at once (acquires and releases per object,
# the deadlock pathology's locks among them); spawn locations (pointer + length) decode to real
# file:line:col of the sample-service sources (the line holds the spawn call); type names decode;
# poll-result, yield, terminate and spawn-kind codes are in range; worker indices are below the
# worker count (or -1 off the workers); poll begin/end pair up per thread.
. "$(dirname "$0")/lib.sh"
need_root

for line in "${LINES[@]}"; do
    bin=$(sample_bin "$line" usdt)
    need_file "$bin" "usdt sample-service for tokio $line"
    P="usdt:$bin:tokio"
    # bpftrace 0.17 reads USDT arguments arg0..arg5 only; task_spawn has nine. Its col,
    # type_name_ptr and type_name_len (args 6-8) are read with reg() from the registers the
    # note names (readelf -n), which this test requires to be plain register operands.
    spawn_args=$(readelf -n --wide "$bin" | awk '/Name: task_spawn$/{f=1} f && /Arguments:/{sub(/^ *Arguments: */,""); print; exit}')
    read -r -a sa <<< "$spawn_args"
    regexpr() {  # SDT operand (e.g. 4@%eax, 8@%r10) → bpftrace expression
        local op=${1#*@} size=${1%@*} r
        [[ "$op" =~ ^%([a-z0-9]+)$ ]] || { echo "BAD"; return; }
        r=${BASH_REMATCH[1]}
        case "$r" in
            r[0-9]*) r=${r%[dwb]};;
            [re]ax|al|ax) r=ax;; [re]bx|bl|bx) r=bx;; [re]cx|cl|cx) r=cx;; [re]dx|dl|dx) r=dx;;
            [re]si|sil|si) r=si;; [re]di|dil|di) r=di;; [re]bp|bpl|bp) r=bp;;
            *) echo "BAD"; return;;
        esac
        case "${size#-}" in 8) echo "reg(\"$r\")";; 4) echo "(reg(\"$r\") & 0xffffffff)";;
            2) echo "(reg(\"$r\") & 0xffff)";; 1) echo "(reg(\"$r\") & 0xff)";; *) echo BAD;; esac
    }
    a6=$(regexpr "${sa[6]:-}"); a7=$(regexpr "${sa[7]:-}"); a8=$(regexpr "${sa[8]:-}")
    check_eq "tokio $line: task_spawn has 9 arguments" 9 "${#sa[@]}"
    if [[ "$a6$a7$a8" == *BAD* ]]; then not_ok "tokio $line: task_spawn args 6-8 are not register operands: $spawn_args"; continue; fi
    cat > "$TMPD/probes.bt" <<BT
${P}:task_spawn     { printf("%llu S %d %llu %llu %d %s:%d:%d\n", nsecs, tid, arg0, arg1, arg2, str(arg3, arg4), arg5, $a6);
                      printf("%llu N %llu %s\n", nsecs, arg0, str($a7, $a8)); }
${P}:task_poll_begin { printf("%llu B %d %llu %llu %d\n", nsecs, tid, arg0, arg1, (int32)arg2); }
${P}:task_poll_end  { printf("%llu E %d %llu %llu %d\n", nsecs, tid, arg0, arg1, arg2); }
${P}:task_yielded   { printf("%llu Y %d %llu %d\n", nsecs, tid, arg0, arg1); }
${P}:waker_wake     { printf("%llu W %d %llu %llu %d\n", nsecs, tid, arg0, arg1, arg2); }
${P}:waker_clone    { printf("%llu C %d %llu %llu\n", nsecs, tid, arg0, arg1); }
${P}:waker_drop     { printf("%llu D %d %llu %llu\n", nsecs, tid, arg0, arg1); }
${P}:task_terminate { printf("%llu T %d %llu %llu %d\n", nsecs, tid, arg0, arg1, arg2); }
${P}:worker_park    { printf("%llu P %d %d %llu\n", nsecs, tid, (int32)arg0, arg1); }
${P}:worker_unpark  { printf("%llu U %d %d %llu\n", nsecs, tid, (int32)arg0, arg1); }
${P}:task_wait      { printf("%llu A %d %llu %d %llu %llu\n", nsecs, tid, arg0, arg1, arg2, arg3); }
${P}:task_meta      { printf("%llu M %d %llu %llu %llu %d\n", nsecs, tid, arg0, arg2, arg3, arg4); }
${P}:task_lock      { printf("%llu L %d %llu %d %llu %llu\n", nsecs, tid, arg0, arg1, arg2, arg3); }
BT
    # Pathologies except the spawn storm (a flood that bpftrace's printf channel would lose
    # events of); 2 workers; a little load so the HTTP paths run too.
    BPFTRACE_STRLEN=128 BPFTRACE_PERF_RB_PAGES=4096 timeout 60 bpftrace -q "$TMPD/probes.bt" \
        -c "$bin --workers 2 --pathology slow_dependency,blocking_call,lost_waker,stalled_task,cpu_hog,deadlock --load 50 --duration 3s" \
        > "$TMPD/events.$line" 2> "$TMPD/bpftrace.$line.err"
    rc=$?
    check_eq "tokio $line: bpftrace ran the service to completion" 0 "$rc"
    if grep -q 'Lost' "$TMPD/bpftrace.$line.err" "$TMPD/events.$line"; then
        not_ok "tokio $line: bpftrace lost events: $(grep -m1 Lost "$TMPD/bpftrace.$line.err" "$TMPD/events.$line")"
        continue
    fi
    # bpftrace prints per-CPU buffers: order the events by their timestamps
    sort -s -n -k1,1 "$TMPD/events.$line" | cut -d' ' -f2- > "$TMPD/sorted.$line"
    python3 - "$TMPD/sorted.$line" "$ROOT/sample-service" 2 > "$TMPD/verdict.$line" <<'PY'
import collections, os, re, sys
events, srcroot, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
spawned, bad, seen = {}, [], collections.Counter()
locs = collections.Counter()
polling = {}
mutex_held = {}
for raw in open(events, errors='replace'):
    f = raw.rstrip('\n').split(' ', 6)
    k = f[0]
    if k == 'N':
        if len(f) < 3 or not f[2]: bad.append(f'empty type name: {raw.strip()!r}')
        else: seen['N'] += 1
        continue
    if k not in 'SBEYWCDTPUAML' or len(k) != 1: continue
    seen[k] += 1
    if k == 'S':
        tid, task, hdr, kind, loc = f[1], int(f[2]), int(f[3]), int(f[4]), ' '.join(f[5:])
        if task == 0: bad.append('spawn with task id 0')
        if hdr == 0: bad.append('spawn with header 0')
        if kind not in (0, 1, 2): bad.append(f'spawn kind {kind}')
        m = re.fullmatch(r'(.+):(\d+):(\d+)', loc)
        if not m: bad.append(f'undecodable location {loc!r}'); continue
        spawned[task] = loc; locs[loc] += 1
    elif k == 'B':
        tid, task, hdr, worker = f[1], int(f[2]), int(f[3]), int(f[4])
        if task not in spawned: bad.append(f'poll_begin of unannounced task {task}')
        if not (worker == -1 or 0 <= worker < workers): bad.append(f'worker index {worker}')
        # polls nest: a multi-thread worker runs inside a blocking-pool task of its own
        stack = polling.setdefault(tid, [])
        if task in stack: bad.append(f'thread {tid}: task {task} polled inside its own poll')
        stack.append(task)
    elif k == 'E':
        tid, task, result = f[1], int(f[2]), int(f[4])
        if not 0 <= result <= 4: bad.append(f'poll result {result}')
        stack = polling.get(tid) or [None]
        if stack.pop() != task: bad.append(f'thread {tid}: poll_end of {task} is not the innermost poll')
    elif k == 'Y':
        if not 0 <= int(f[3]) <= 2: bad.append(f'yield reason {f[3]}')
    elif k == 'W':
        if int(f[4]) not in (0, 1): bad.append(f'by_ref {f[4]}')
    elif k == 'T':
        if not 0 <= int(f[4]) <= 2: bad.append(f'terminate reason {f[4]}')
    elif k in 'PU':
        w = int(f[2])
        if not 0 <= w < workers: bad.append(f'{k} worker index {w}')
    elif k == 'A':
        tid, task, kind, obj = f[1], int(f[2]), int(f[3]), int(f[4])
        if not 0 <= kind <= 7: bad.append(f'wait kind {kind}')
        stack = polling.get(tid) or []
        if task and (not stack or stack[-1] != task):
            bad.append(f'thread {tid}: task_wait of task {task} outside its poll')
        if kind == 6 and obj not in spawned: bad.append(f'join wait on unannounced task {obj}')
    elif k == 'L':
        tid, task, op, obj, permits = f[1], int(f[2]), int(f[3]), int(f[4]), int(f[5])
        if not 0 <= op <= 5: bad.append(f'lock op {op}')
        if permits == 0 and op != 5: bad.append(f'lock op {op} with 0 permits')
        stack = polling.get(tid) or []
        if op <= 3 and task and (not stack or stack[-1] != task):
            bad.append(f'thread {tid}: task_lock acquire of task {task} outside its poll')
        if op == 0:
            if permits != 1: bad.append(f'Mutex acquire of {permits} permits')
            if mutex_held.get(obj, 0): bad.append(f'Mutex {obj:#x} acquired by {task} while held')
            mutex_held[obj] = 1
        elif op == 4 and obj in mutex_held:
            mutex_held[obj] = 0
    elif k == 'M':
        task, name_len, size, flags = int(f[2]), int(f[3]), int(f[4]), int(f[5])
        if task not in spawned: bad.append(f'task_meta of unannounced task {task}')
        if size == 0 or name_len or not 0 <= flags <= 1: bad.append(f'task_meta {task}: size {size} name {name_len} flags {flags}')
# locations in the sample service: the named line must hold a spawn call
ours = 0
for loc in locs:
    path, line, col = loc.rsplit(':', 2)
    if '/sample-service/' in path or path.startswith(('src/', '../')):
        cand = [os.path.join(srcroot, 'src', path.split('src/', 1)[-1])]
        src = next((c for c in cand if os.path.isfile(c)), None)
        if not src: bad.append(f'{loc}: no such sample-service source'); continue
        text = open(src).read().split('\n')
        l = text[int(line) - 1] if 0 < int(line) <= len(text) else ''
        if 'spawn' not in l[int(col) - 1:]: bad.append(f'{loc}: line does not spawn: {l.strip()!r}')
        ours += 1
print('counts', dict(seen))
print('sample-service spawn sites', ours, sorted(l for l in locs if 'src/' in l)[:20])
for b in sorted(set(bad))[:30]: print('BAD', b)
print('verdict', 'ok' if not bad and ours > 0 and all(seen[k] for k in 'SBEWTAML') and seen['N'] == seen['S'] else 'bad')
PY
    cat "$TMPD/verdict.$line"
    check_eq "tokio $line: bpftrace events consistent (see counts above)" "verdict ok" "$(tail -1 "$TMPD/verdict.$line")"
    # yield_now: a workload with a known count — 4 tasks × 10 yields → 40 yields of reason 0,
    # 44 polls, 4 spawns, 4 terminations
    # (counted for the tasks spawned at the workload's own line: the runtime may spawn blocking
    # tasks of its own)
    wl=$(grep -n 'SPAWN-SITE: yield_workload$' "$ROOT/sample-service/src/workload.rs" | cut -d: -f1)
    timeout 60 bpftrace -q -e "$P:task_spawn /arg5 == $wl/ { @mine[arg0] = 1; @spawns = count(); }
        $P:task_yielded /@mine[arg0]/ { @y[arg1] = count(); } $P:task_poll_begin /@mine[arg0]/ { @polls = count(); }
        $P:task_terminate /@mine[arg0]/ { @terms[arg2] = count(); } END { clear(@mine); }" \
        -c "$bin yield-workload --tasks 4 --yields 10 --workers 2" > "$TMPD/y.$line" 2>&1
    check_eq "tokio $line: yield_now counted: 40 task_yielded with reason 0" "@y[0]: 40" "$(grep '^@y\[' "$TMPD/y.$line" | tr '\n' ' ' | sed 's/ $//')"
    check_eq "tokio $line: 44 polls for 4 tasks × 10 yields" "@polls: 44" "$(grep '^@polls' "$TMPD/y.$line")"
    check_eq "tokio $line: 4 spawns" "@spawns: 4" "$(grep '^@spawns' "$TMPD/y.$line")"
    check_eq "tokio $line: 4 tasks terminate as completed" "@terms[0]: 4" "$(grep '^@terms' "$TMPD/y.$line" | tr '\n' ' ' | sed 's/ $//')"
    for k in S B E W C D T P U; do
        grep -q "^$k " "$TMPD/sorted.$line" || not_ok "tokio $line: probe class $k never fired"
    done
done
finish
