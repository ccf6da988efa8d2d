#!/bin/bash
# Intent: bpftrace, a USDT client nobody here wrote, attached to all ten probes of each usdt
# sample-service build (before the process starts) reads consistent values: every task seen in
# task_poll_begin was announced by task_spawn; spawn locations (pointer + length) decode to real
# file:line:col of the sample-service sources (the line holds the spawn call); type names decode;
# poll-result, yield, terminate and spawn-kind codes are in range; worker indices are below the
# worker count (or -1 off the workers); poll begin/end pair up per thread.
. "$(dirname "$0")/lib.sh"
need_root

for line in "${LINES[@]}"; do
    bin=$(sample_bin "$line" usdt)
    need_file "$bin" "usdt sample-service for tokio $line"
    P="usdt:$bin:tokio"
    cat > "$TMPD/probes.bt" <<BT
${P}:task_spawn     { printf("S %d %llu %llu %d %s:%d:%d|%s\n", tid, arg0, arg1, arg2, str(arg3, arg4), arg5, arg6, str(arg7, arg8)); }
${P}:task_poll_begin { printf("B %d %llu %llu %d\n", tid, arg0, arg1, (int32)arg2); }
${P}:task_poll_end  { printf("E %d %llu %llu %d\n", tid, arg0, arg1, arg2); }
${P}:task_yielded   { printf("Y %d %llu %d\n", tid, arg0, arg1); }
${P}:waker_wake     { printf("W %d %llu %llu %d\n", tid, arg0, arg1, arg2); }
${P}:waker_clone    { printf("C %d %llu %llu\n", tid, arg0, arg1); }
${P}:waker_drop     { printf("D %d %llu %llu\n", tid, arg0, arg1); }
${P}:task_terminate { printf("T %d %llu %llu %d\n", tid, arg0, arg1, arg2); }
${P}:worker_park    { printf("P %d %d %llu\n", tid, (int32)arg0, arg1); }
${P}:worker_unpark  { printf("U %d %d %llu\n", tid, (int32)arg0, arg1); }
BT
    # Pathologies except the spawn storm (a flood that bpftrace's printf channel would lose
    # events of); 2 workers; a little load so the HTTP paths run too.
    BPFTRACE_STRLEN=200 BPFTRACE_PERF_RB_PAGES=4096 timeout 60 bpftrace -q "$TMPD/probes.bt" \
        -c "$bin --workers 2 --pathology slow_dependency,blocking_call,lost_waker,stalled_task,cpu_hog --load 50 --duration 3s" \
        > "$TMPD/events.$line" 2> "$TMPD/bpftrace.$line.err"
    rc=$?
    check_eq "tokio $line: bpftrace ran the service to completion" 0 "$rc"
    if grep -q 'Lost' "$TMPD/bpftrace.$line.err" "$TMPD/events.$line"; then
        not_ok "tokio $line: bpftrace lost events: $(grep -m1 Lost "$TMPD/bpftrace.$line.err" "$TMPD/events.$line")"
        continue
    fi
    python3 - "$TMPD/events.$line" "$ROOT/sample-service" 2 > "$TMPD/verdict.$line" <<'PY'
import collections, os, re, sys
events, srcroot, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
spawned, bad, seen = {}, [], collections.Counter()
locs = collections.Counter()
polling = {}
for raw in open(events, errors='replace'):
    f = raw.rstrip('\n').split(' ', 6)
    k = f[0]
    if k not in 'SBEYWCDTPU' or len(k) != 1: continue
    seen[k] += 1
    if k == 'S':
        tid, task, hdr, kind, rest = f[1], int(f[2]), int(f[3]), int(f[4]), ' '.join(f[5:])
        loc, _, tname = rest.partition('|')
        if task == 0: bad.append('spawn with task id 0')
        if hdr == 0: bad.append('spawn with header 0')
        if kind not in (0, 1, 2): bad.append(f'spawn kind {kind}')
        if not tname: bad.append(f'task {task}: empty type name')
        m = re.fullmatch(r'(.+):(\d+):(\d+)', loc)
        if not m: bad.append(f'undecodable location {loc!r}'); continue
        spawned[task] = loc; locs[loc] += 1
    elif k == 'B':
        tid, task, hdr, worker = f[1], int(f[2]), int(f[3]), int(f[4])
        if task not in spawned: bad.append(f'poll_begin of unannounced task {task}')
        if not (worker == -1 or 0 <= worker < workers): bad.append(f'worker index {worker}')
        if tid in polling: bad.append(f'thread {tid}: nested poll_begin')
        polling[tid] = task
    elif k == 'E':
        tid, task, result = f[1], int(f[2]), int(f[4])
        if not 0 <= result <= 4: bad.append(f'poll result {result}')
        if polling.pop(tid, None) != task: bad.append(f'thread {tid}: poll_end of {task} without its begin')
    elif k == 'Y':
        if not 0 <= int(f[3]) <= 2: bad.append(f'yield reason {f[3]}')
    elif k == 'W':
        if int(f[4]) not in (0, 1): bad.append(f'by_ref {f[4]}')
    elif k == 'T':
        if not 0 <= int(f[4]) <= 2: bad.append(f'terminate reason {f[4]}')
    elif k in 'PU':
        w = int(f[2])
        if not 0 <= w < workers: bad.append(f'{k} worker index {w}')
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
print('verdict', 'ok' if not bad and ours > 0 and all(seen[k] for k in 'SBEWT') else 'bad')
PY
    cat "$TMPD/verdict.$line"
    check_eq "tokio $line: bpftrace events consistent (see counts above)" "verdict ok" "$(tail -1 "$TMPD/verdict.$line")"
    # yield_now: a workload with a known count — 4 tasks × 10 yields → 40 yields of reason 0,
    # 44 polls, 4 spawns, 4 terminations
    timeout 60 bpftrace -q -e "$P:task_yielded { @y[arg1] = count(); } $P:task_poll_begin { @polls = count(); }
        $P:task_spawn { @spawns = count(); } $P:task_terminate { @terms[arg2] = count(); }" \
        -c "$bin yield-workload --tasks 4 --yields 10 --workers 2" > "$TMPD/y.$line" 2>&1
    check_eq "tokio $line: yield_now counted: 40 task_yielded with reason 0" "@y[0]: 40" "$(grep '^@y\[' "$TMPD/y.$line" | tr '\n' ' ' | sed 's/ $//')"
    check_eq "tokio $line: 44 polls for 4 tasks × 10 yields" "@polls: 44" "$(grep '^@polls' "$TMPD/y.$line")"
    check_eq "tokio $line: 4 spawns" "@spawns: 4" "$(grep '^@spawns' "$TMPD/y.$line")"
    check_eq "tokio $line: 4 tasks terminate as completed" "@terms[0]: 4" "$(grep '^@terms' "$TMPD/y.$line" | tr '\n' ' ' | sed 's/ $//')"
    for k in S B E W C D T P U; do
        grep -q "^$k " "$TMPD/events.$line" || not_ok "tokio $line: probe class $k never fired"
    done
done
finish
