/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sched.bpf.h — why a poll was slow, from the kernel side (no change to the program): both BPF
 * objects include it and define (after it, they may use its maps)
 *     static bool in_poll(struct task_struct *t)   — t (the current task) is inside a poll
 * A process is traced when it is target_tgid, or (every process of a binary: target_tgid 0)
 * when its tgid is in `tgids`, which the objects fill as they see its polls or batches.
 *
 * sched_switch (BTF tracepoint, Linux 5.5): a thread of the target switched out inside a poll
 * starts an off-CPU period in its task storage (Linux 5.11): preempted when it was still
 * runnable, blocked when it went to sleep — then with the syscall it slept in (orig_ax of its
 * user registers, bpf_task_pt_regs, Linux 5.15) and its user and kernel stacks (frame pointers,
 * bpf_get_stackid: identical stacks share one entry of the stack map, so the ring carries only
 * their ids). sched_wakeup notes when a blocked thread became runnable again: from there to
 * the switch back in it waited for a CPU like a preempted one. The switch in sends the period
 * as one TET_REC_OFFCPU record; user space charges it to the poll it fell in. Off-CPU periods
 * outside polls (a parked worker) cost one storage lookup and send nothing.
 *
 * Time the hypervisor took (KVM guests): a virtual CPU the host does not run looks, from inside,
 * like a thread that stayed on it; no sched_switch says otherwise. KVM's steal clock (per CPU,
 * struct kvm_steal_time .steal, ns, written by the host at every entry of the vCPU) says how
 * much. A target thread's stint on a CPU is cut into windows by its switch in, the CPU samples
 * and its switch out; steal that grew within a window of a thread inside a poll is sent as a
 * TET_REC_OFFCPU with TET_OFFCPU_STOLEN, placed at the window's end (a long steal ends there: the
 * sample timer, overdue, fires as the vCPU resumes). steal_clock is set by user space when
 * vmlinux BTF has the variable; the code is dead otherwise.
 *
 * A perf-event program (cpu-clock, one event per CPU, --profile-hz) sends a TET_REC_SAMPLE
 * with the stacks of a target thread it interrupts; user space charges it to the poll running
 * on that thread at that instant.
 *
 * sched_process_exit: the last thread of a target process exiting sends one TET_REC_EXIT with
 * the process's wait status (a fatal signal, a core dump, the exit status), read from the
 * signal struct once the group is dead (the tracepoint's group_dead, or signal->live at 0). The
 * process is then forgotten (tgids), so a reused PID is learnt anew.
 *
 * Records are reserved and submitted like the probes' (BPF_RB_NO_WAKEUP); a full ring counts in
 * offcpu_drops / sample_drops, a stack the map cannot hold in stack_errors (the record then
 * carries a negative id).
 */
#ifndef TET_SCHED_BPF_H
#define TET_SCHED_BPF_H

struct offcpu_state {
	__u64 since;        /* switched out at (0: not off CPU inside a poll) */
	__u64 woken;        /* blocked: woken at (0: not yet) */
	__s64 syscall;
	__s32 ustack, kstack;
	__u32 flags;        /* TET_OFFCPU_* */
	__u32 tflags;       /* tls_slot: TET_TS_* of the slot read at the switch out */
	__u64 task;         /* tls_slot: the task id slot at the switch out */
	__u64 polls[TET_SCAN_CANDS];  /* tls_slot: the stack scan at the switch out */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_state);
} offcpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 32768);  /* × TET_STACK_DEPTH × 8 bytes = 16 MiB */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, TET_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

static __always_inline bool in_poll(struct task_struct *t);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);   /* tgid */
	__type(value, __u8);
} tgids SEC(".maps");

static __always_inline bool of_target(__u32 tgid)
{
	if (target_tgid)
		return tgid == target_tgid;
	return bpf_map_lookup_elem(&tgids, &tgid) != NULL;
}

/* Learns a process of the binary (a lookup first: lock-free; the update takes a bucket lock). */
static __always_inline void tgid_learn(__u32 tgid)
{
	__u8 one = 1;

	if (!target_tgid && !bpf_map_lookup_elem(&tgids, &tgid))
		bpf_map_update_elem(&tgids, &tgid, &one, BPF_NOEXIST);
}

/* task_struct.state before Linux 5.14 (2f064a59a11f "sched: Change task_struct::state") */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline bool runnable(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state) == 0;
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state) == 0;
}

static __always_inline __s32 stack_id(void *ctx, __u64 flags, struct tet_counters *c)
{
	long id = bpf_get_stackid(ctx, &stacks, flags);

	if (id < 0 && c)
		__sync_fetch_and_add(&c->stack_errors, 1);
	return (__s32)id;
}

/* The system call a task sleeping in the kernel entered by (x86-64: orig_ax), -1 if none. */
static __always_inline __s64 syscall_of(struct task_struct *t)
{
#if defined(__TARGET_ARCH_x86)
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);

	if (!regs)
		return -1;
	return BPF_CORE_READ(regs, orig_ax);
#else
	return -1;
#endif
}

/* KVM's struct kvm_steal_time (arch/x86/include/uapi/asm/kvm_para.h, a host ABI) begins with
 * `steal`. Its per-CPU variable steal_time is not in kallsyms unless the kernel has
 * CONFIG_KALLSYMS_ALL, so it is found the way the kernel finds it, next to this CPU's runqueue:
 * both are per-CPU variables, at the distance their offsets in vmlinux BTF's .data..percpu give
 * (steal_rq_delta, set by user space with steal_clock). The runqueue comes from the target
 * thread switching or sampled here (se.cfs_rq->rq) and is checked to be this CPU's. */
const volatile bool steal_clock = false;
const volatile __s64 steal_rq_delta = 0;

struct steal_mark {
	__u64 steal, ts;    /* this CPU's steal clock at ts (0: no mark yet) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct steal_mark);
} steal_marks SEC(".maps");

/* Marks this CPU's steal clock, read through the runqueue of `t`, a target thread switching in or
 * out or sampled here (the idle task, say, has none); with `send` (t, thread `tid` of `tgid`, is
 * inside a poll and has been on this CPU since the previous mark) the steal since that mark goes
 * to the ring first. A clock that cannot be read leaves no mark: a window never spans another
 * thread's stint. */
static __always_inline void steal_window(struct task_struct *t, bool send, __u32 tgid, __u32 tid)
{
	struct tet_offcpu_rec *r;
	struct steal_mark *m;
	__u64 now, steal = 0, since;
	__u32 zero = 0;
	struct rq *rq;

	if (!steal_clock)
		return;
	m = bpf_map_lookup_elem(&steal_marks, &zero);
	if (!m)
		return;
	rq = BPF_CORE_READ(t, se.cfs_rq, rq);
	if (!rq || BPF_CORE_READ(rq, cpu) != (int)bpf_get_smp_processor_id() ||
	    bpf_probe_read_kernel(&steal, sizeof(steal), (void *)rq + steal_rq_delta) < 0) {
		m->ts = 0;
		return;
	}
	now = bpf_ktime_get_ns();
	/* a clock that went back or grew more than the window did is not one (the window is one
	 * thread's stint on this CPU, unbroken by switches): no record, a new mark */
	if (send && m->ts && steal > m->steal && steal - m->steal <= now - m->ts) {
		since = now - (steal - m->steal);
		r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
		if (r) {
			r->h.ts = now;
			r->h.type = TET_REC_OFFCPU;
			r->h.pid = tgid;
			r->h.tid = tid;
			r->h.cpu = bpf_get_smp_processor_id();
			r->since = since;
			r->woken = 0;
			r->syscall = -1;
			r->ustack = r->kstack = -1;
			r->flags = TET_OFFCPU_PREEMPTED | TET_OFFCPU_STOLEN;
			r->pad = 0;
			bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
		} else {
			struct tet_counters *c = counters_get();

			if (c)
				__sync_fetch_and_add(&c->offcpu_drops, 1);
		}
	}
	m->steal = steal;
	m->ts = now;
}

/* --mode sampling (no uprobe at all): Tokio's thread-local current task id, at a fixed offset
 * from the thread pointer (tracer/discover/tlsctx.c finds it in the ELF file): tls_id_off for
 * the id word; tls_tagged (Tokio 1.24-1.39): a u64 tag at tls_id_off - 8, 0 = None; else one
 * u64, 0 = None. The thread pointer is the task's fs base (x86-64). One bounded, non-faulting
 * read of the thread's own memory (`t` is the current task); a failure sets TET_TS_NOREAD. */
const volatile bool tls_slot = false;
const volatile bool tls_tagged = false;
const volatile __s64 tls_id_off = 0;

static __always_inline __u64 slot_read(struct task_struct *t, __u32 *flags)
{
#if defined(__TARGET_ARCH_x86)
	__u64 fs = BPF_CORE_READ(t, thread.fsbase), v[2] = { 0, 0 };

	if (!fs)
		goto noread;
	if (tls_tagged) {
		if (bpf_probe_read_user(v, sizeof(v), (void *)(fs + tls_id_off - 8)) < 0)
			goto noread;
		return v[0] ? v[1] : 0;
	}
	if (bpf_probe_read_user(v, sizeof(v[0]), (void *)(fs + tls_id_off)) < 0)
		goto noread;
	return v[0];
noread:
#endif
	*flags |= TET_TS_NOREAD;
	return 0;
}

/* --mode sampling: the words of the user stack (from the thread's user stack pointer up,
 * TET_SCAN_READS reads of TET_SCAN_WORDS) in (poll_lo, poll_hi], the runtime range of the
 * raw::poll instances; the first TET_SCAN_CANDS go to cand. A read that fails ends the scan. */
const volatile __u64 poll_lo = 0;
const volatile __u64 poll_hi = 0;

struct scan_buf {
	__u64 w[TET_SCAN_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scan_buf);
} scan_bufs SEC(".maps");

struct scan_ctx {
	__u64 sp;
	__u64 cand[TET_SCAN_CANDS];
	__u32 n;
	__u32 pad;
};

/* bpf_loop's body (Linux 5.17): word i of the scan (bounded loops of this size are too many
 * states for the verifier). */
static long scan_word(__u64 i, void *arg)
{
	struct scan_ctx *c = arg;
	struct scan_buf *b;
	__u32 zero = 0, w = i % TET_SCAN_WORDS;
	__u64 v;

	b = bpf_map_lookup_elem(&scan_bufs, &zero);
	if (!b)
		return 1;
	if (!w && bpf_probe_read_user(b->w, sizeof(b->w), (void *)(c->sp + i * sizeof(__u64))) < 0)
		return 1;
	if (w >= TET_SCAN_WORDS)
		return 1;
	v = b->w[w];
	if (v > poll_lo && v <= poll_hi) {
		c->cand[c->n & (TET_SCAN_CANDS - 1)] = v;
		if (++c->n >= TET_SCAN_CANDS)
			return 1;
	}
	return 0;
}

static __always_inline void scan_polls(struct task_struct *t, __u64 *cand)
{
	struct scan_ctx c = {};
	struct pt_regs *regs;

	if (!poll_hi)
		return;
	regs = (struct pt_regs *)bpf_task_pt_regs(t);
	if (!regs)
		return;
	c.sp = BPF_CORE_READ(regs, sp);
	bpf_loop(TET_SCAN_WORDS * TET_SCAN_READS, scan_word, &c, 0);
	__builtin_memcpy(cand, c.cand, sizeof(c.cand));
}

/* --mode sampling: the task ids user space has seen in a BlockingTask's poll (a multi-thread
 * worker's loop, a spawn_blocking closure; run/run_sampling.c adds them as it reads the records).
 * A thread that switches out with one of them in its slot is not in an async poll's body: its
 * sleep is recorded (the heat map's exact off-CPU time) with TET_TS_BLOCKING and without the
 * stack scan and the stacks, which cost several microseconds; a busy multi-thread runtime's
 * workers park thousands of times a second, each time in their loop's blocking task. LRU: a
 * spawn_blocking closure's id is used once; a worker loop's, at every park, stays. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, TET_BLOCKING_IDS);
	__type(key, __u64);
	__type(value, __u8);
} blocking_ids SEC(".maps");

/* --mode sampling: a thread going to sleep with a task in its slot (a poll, or a worker parked
 * inside the blocking task that runs its loop: user space tells them apart by the stack, and
 * tells BPF the blocking tasks' ids it has seen: blocking_ids). */
static __always_inline void tls_switch_out(void *ctx, struct task_struct *prev, bool preempt)
{
	struct offcpu_state *st;
	struct tet_counters *c;
	__u32 flags = 0;
	__u64 task;

	if (preempt || runnable(prev))
		return;
	task = slot_read(prev, &flags);
	if (!task && !flags)
		return;
	st = bpf_task_storage_get(&offcpu, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	c = counters_get();
	if (!st) {
		if (c)
			__sync_fetch_and_add(&c->offcpu_drops, 1);
		return;
	}
	st->since = bpf_ktime_get_ns();
	st->woken = 0;
	st->flags = 0;
	st->task = task;
	st->tflags = flags;
	__builtin_memset(st->polls, 0, sizeof(st->polls));
	st->syscall = syscall_of(prev);
	if (task && bpf_map_lookup_elem(&blocking_ids, &task)) {
		st->tflags |= TET_TS_BLOCKING;
		st->ustack = st->kstack = -1;
		return;
	}
	scan_polls(prev, st->polls);
	st->kstack = stack_id(ctx, 0, c);
	st->ustack = stack_id(ctx, BPF_F_USER_STACK, c);
}

/* An off-CPU record as the thread comes back (TET_REC_OFFCPU, or TET_REC_TOFFCPU's head) from
 * what its switch out kept. */
static __always_inline void offcpu_fill(struct tet_offcpu_rec *o, const struct offcpu_state *st,
					__u32 type, __u32 tgid, struct task_struct *next)
{
	o->h.ts = bpf_ktime_get_ns();
	o->h.type = type;
	o->h.pid = tgid;
	o->h.tid = (__u32)BPF_CORE_READ(next, pid);
	o->h.cpu = bpf_get_smp_processor_id();
	o->since = st->since;
	o->woken = st->woken;
	o->syscall = st->syscall;
	o->ustack = st->ustack;
	o->kstack = st->kstack;
	o->flags = st->flags;
	o->pad = 0;
}

static __always_inline void tls_switch_in(struct task_struct *next, __u32 tgid)
{
	struct offcpu_state *st = bpf_task_storage_get(&offcpu, next, 0, 0);
	struct tet_toffcpu_rec *r;
	struct tet_counters *c;

	if (!st || !st->since)
		return;
	c = counters_get();
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		if (c)
			__sync_fetch_and_add(&c->offcpu_drops, 1);
		st->since = 0;
		return;
	}
	offcpu_fill(&r->o, st, TET_REC_TOFFCPU, tgid, next); /* st->flags: 0 in this mode */
	r->task = st->task;
	r->flags = st->tflags;
	r->pad = 0;
	__builtin_memcpy(r->polls, st->polls, sizeof(r->polls));
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	if (c)
		__sync_fetch_and_add(&c->offcpu, 1);
	st->since = 0;
}

/* Task storage is only touched here, in the scheduler's tracepoints (not preemptible): the
 * state is made at a thread's first switch out inside a poll. */
static __always_inline void switch_out(void *ctx, struct task_struct *prev, __u32 tgid, bool preempt)
{
	struct offcpu_state *st;
	struct tet_counters *c;

	if (!in_poll(prev))
		return;
	steal_window(prev, true, tgid, (__u32)BPF_CORE_READ(prev, pid));
	st = bpf_task_storage_get(&offcpu, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st) {
		if ((c = counters_get()))
			__sync_fetch_and_add(&c->offcpu_drops, 1);
		return;
	}
	st->since = bpf_ktime_get_ns();
	st->woken = 0;
	st->syscall = -1;
	st->ustack = st->kstack = -1;
	st->flags = 0;
	if (preempt || runnable(prev)) {
		st->flags = TET_OFFCPU_PREEMPTED;
		return;
	}
	c = counters_get();
	st->syscall = syscall_of(prev);
	st->kstack = stack_id(ctx, 0, c);
	st->ustack = stack_id(ctx, BPF_F_USER_STACK, c);
}

static __always_inline void switch_in(struct task_struct *next, __u32 tgid)
{
	struct offcpu_state *st = bpf_task_storage_get(&offcpu, next, 0, 0);
	struct tet_offcpu_rec *r;
	struct tet_counters *c;

	if (!st || !st->since)
		return;
	c = counters_get();
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		if (c)
			__sync_fetch_and_add(&c->offcpu_drops, 1);
		st->since = 0;
		return;
	}
	offcpu_fill(r, st, TET_REC_OFFCPU, tgid, next);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	if (c)
		__sync_fetch_and_add(&c->offcpu, 1);
	st->since = 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(tet_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 ptgid = prev->tgid, ntgid = next->tgid;  /* trusted BTF arguments: plain loads */

	if (stopped())
		return 0;
	if (tls_slot) {
		if (ptgid && of_target(ptgid))
			tls_switch_out(ctx, prev, preempt);
		if (ntgid && of_target(ntgid))
			tls_switch_in(next, ntgid);
		return 0;
	}
	if (ptgid && of_target(ptgid))
		switch_out(ctx, prev, ptgid, preempt);
	if (ntgid && of_target(ntgid)) {
		switch_in(next, ntgid);
		steal_window(next, false, 0, 0);
	}
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(tet_wakeup, struct task_struct *p)
{
	__u32 tgid = p->tgid;  /* a trusted BTF argument: a plain load */
	struct offcpu_state *st;

	if (!tgid || !of_target(tgid))
		return 0;
	st = bpf_task_storage_get(&offcpu, p, 0, 0);
	if (st && st->since && !st->woken && !(st->flags & TET_OFFCPU_PREEMPTED))
		st->woken = bpf_ktime_get_ns();
	return 0;
}

/* --mode sampling: the sample carries the thread's task id slot. */
static __always_inline int tls_sample(struct bpf_perf_event_data *ctx, __u32 tgid, __u32 tid)
{
	struct tet_tsample_rec *r;
	struct tet_counters *c = counters_get();
	__u64 ip;

	if (!c)
		return 0;
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		__sync_fetch_and_add(&c->sample_drops, 1);
		return 0;
	}
	r->h.ts = bpf_ktime_get_ns();
	r->h.type = TET_REC_TSAMPLE;
	r->h.pid = tgid;
	r->h.tid = tid;
	r->h.cpu = bpf_get_smp_processor_id();
	r->flags = 0;
	r->nvcsw = (__u32)BPF_CORE_READ(bpf_get_current_task_btf(), nvcsw);
	r->task = slot_read(bpf_get_current_task_btf(), &r->flags);
	__builtin_memset(r->polls, 0, sizeof(r->polls));
	scan_polls(bpf_get_current_task_btf(), r->polls);
	ip = PT_REGS_IP(&ctx->regs);
	r->kstack = (__s64)ip >= 0 ? -1 : stack_id(ctx, 0, c);
	r->ustack = stack_id(ctx, BPF_F_USER_STACK, c);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	__sync_fetch_and_add(&c->samples, 1);
	return 0;
}

SEC("perf_event")
int tet_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), ip;
	__u32 tgid = id >> 32;
	struct task_struct *cur;
	struct tet_sample_rec *r;
	struct tet_counters *c;

	if (!tgid || !of_target(tgid) || stopped())
		return 0;
	if (tls_slot)
		return tls_sample(ctx, tgid, (__u32)id);
	if (steal_clock) { /* in_poll reads the thread's memory: not for nothing */
		cur = bpf_get_current_task_btf();
		steal_window(cur, in_poll(cur), tgid, (__u32)id);
	}
	c = counters_get();
	if (!c)
		return 0;
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		__sync_fetch_and_add(&c->sample_drops, 1);
		return 0;
	}
	r->h.ts = bpf_ktime_get_ns();
	r->h.type = TET_REC_SAMPLE;
	r->h.pid = tgid;
	r->h.tid = (__u32)id;
	r->h.cpu = bpf_get_smp_processor_id();
	/* a sample taken in user mode has no kernel stack: its instruction pointer is in the
	 * lower half of the address space (x86-64, arm64); the context is read in full words */
	ip = PT_REGS_IP(&ctx->regs);
	r->kstack = (__s64)ip >= 0 ? -1 : stack_id(ctx, 0, c);
	r->ustack = stack_id(ctx, BPF_F_USER_STACK, c);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	__sync_fetch_and_add(&c->samples, 1);
	return 0;
}

#define TET_SIGNAL_GROUP_EXIT 0x00000004 /* include/linux/sched/signal.h, unchanged since 2.6 */

/* Set by user space from the tracepoint's BTF: sched_process_exit has a group_dead argument
 * (Linux 6.16 moved the tracepoint before the exit's `signal->live` decrement and added it);
 * before, the group is dead when signal->live is 0 at the tracepoint. */
const volatile bool exit_group_dead_arg = false;

SEC("tp_btf/sched_process_exit")
int tet_exit(__u64 *ctx)
{
	struct task_struct *p = (struct task_struct *)ctx[0];
	__u32 tgid = BPF_CORE_READ(p, tgid), flags;
	struct tet_exit_rec *r;
	struct tet_counters *c;
	bool dead;

	if (!tgid || !of_target(tgid))
		return 0;
	if (exit_group_dead_arg)
		dead = (__u8)ctx[1];
	else
		dead = BPF_CORE_READ(p, signal, live.counter) == 0;
	if (!dead)
		return 0;
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		if ((c = counters_get()))
			__sync_fetch_and_add(&c->exit_drops, 1);
		goto forget;
	}
	flags = BPF_CORE_READ(p, signal, flags);
	r->h.ts = bpf_ktime_get_ns();
	r->h.type = TET_REC_EXIT;
	r->h.pid = tgid;
	r->h.tid = (__u32)BPF_CORE_READ(p, pid);
	r->h.cpu = bpf_get_smp_processor_id();
	r->group_exit = !!(flags & TET_SIGNAL_GROUP_EXIT);
	r->code = r->group_exit ? (__u32)BPF_CORE_READ(p, signal, group_exit_code) :
				  (__u32)BPF_CORE_READ(p, exit_code);
	bpf_ringbuf_submit(r, 0); /* rare, and the tracer may be waiting for it: wake it */
forget:
	if (!target_tgid)
		bpf_map_delete_elem(&tgids, &tgid);
	return 0;
}

#endif
