// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tokio_usdt.bpf.c — one program per tokio:* USDT probe (probes-patch/PROBES.md).
 *
 * Each program filters on the target process, fetches the probe's arguments through libbpf's
 * USDT support (argument specs resolved by libbpf at attach time; semaphores handled by the
 * kernel through uprobe ref_ctr_offset), and writes one fixed-size record to the ring buffer.
 *
 * Records are submitted with BPF_RB_NO_WAKEUP: the consumer drains on a timer, so no probe hit
 * pays for a wakeup (measured: ~2.5 µs per event with wakeups, ~0.6 µs without). The timestamp
 * is taken after the reservation, so the ring order of two causally related events (a wake,
 * then the poll it caused on another CPU) agrees with their timestamps.
 *
 * Nothing is lost silently: every hit that passes the filter counts in `seen`, every failed
 * reservation in `drops`, per event type, in a per-CPU array user space sums. The counters are
 * bumped atomically: uprobe programs run with migration, not preemption, disabled, so two
 * programs can interleave on one CPU.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
/* Rust inlines probe sites freely; leave room for many distinct argument specs. */
#define BPF_USDT_MAX_SPEC_CNT 1024
#include <bpf/usdt.bpf.h>
#include "events.h"
#include "common.bpf.h"
#include "sched.bpf.h"
#include "uring.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

static __always_inline __u64 arg(struct pt_regs *ctx, __u64 n, struct tet_counters *c)
{
	long v = 0;

	if (bpf_usdt_arg(ctx, n, &v) < 0)
		__sync_fetch_and_add(&c->arg_errors, 1);
	return (__u64)v;
}

/* How long this thread has waited for a CPU while runnable, in total (CONFIG_SCHED_INFO; 0
 * without it). Its growth over a poll is time the poll spent preempted, not blocking the
 * worker itself. CO-RE read through the BTF task pointer (Linux 5.11). */
static __always_inline __u64 run_delay(void)
{
	struct task_struct *task = bpf_get_current_task_btf();

	if (!bpf_core_field_exists(task->sched_info))
		return 0;
	return BPF_CORE_READ(task, sched_info.run_delay);
}

/* Why a poll was slow (sched.bpf.h, below): per-event capture counts the polls open on each
 * thread in its task storage, so that sched_switch knows a thread is inside one. Set by user
 * space when the sched programs are loaded. */
const volatile bool track_polls = false;

static void poll_depth(__u32 tgid, bool begin);

/* The start of every probe's program: the target filter, the counters, a record of `size`
 * bytes reserved (a failure is counted, with the task of argument n_task, -1 = none) and its
 * header filled. NULL: nothing to write. */
static __always_inline void *probe_rec(struct pt_regs *ctx, __u32 type, __u64 size, int n_task,
				       struct tet_counters **cp, __u32 *tgidp)
{
	struct tet_counters *c;
	struct tet_hdr *h;
	__u32 tgid = filter();

	if (!tgid || !(c = counters_get()))
		return NULL;
	h = rec_reserve(c, type, size);
	if (!h) {
		if (n_task >= 0)
			note_lost(c, tgid, type, arg(ctx, n_task, c));
		return NULL;
	}
	hdr_fill(h, type, tgid);
	*cp = c;
	*tgidp = tgid;
	return h;
}

/* The common path of the small probes: up to four arguments, mapped onto the record's
 * task_id/header_ptr/a/b by the caller's argument numbers (-1 = absent). */
static __always_inline int emit(struct pt_regs *ctx, __u32 type,
				int n_task, int n_hdr, int n_a, int n_b)
{
	struct tet_counters *c;
	struct tet_event_rec *r;
	__u64 task, hdr;
	__u32 tgid;

	r = probe_rec(ctx, type, sizeof(*r), n_task, &c, &tgid);
	if (!r)
		return 0;
	r->task_id = task = n_task >= 0 ? arg(ctx, n_task, c) : 0;
	r->header_ptr = hdr = n_hdr >= 0 ? arg(ctx, n_hdr, c) : 0;
	r->a = n_a >= 0 ? arg(ctx, n_a, c) : 0;
	r->b = n_b >= 0 ? arg(ctx, n_b, c) : 0;
	r->cpu_wait = type == TET_EV_POLL_BEGIN || type == TET_EV_POLL_END ? run_delay() : 0;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	if (track_polls && (type == TET_EV_POLL_BEGIN || type == TET_EV_POLL_END))
		poll_depth(tgid, type == TET_EV_POLL_BEGIN);
	if (uring_seen && (type == TET_EV_POLL_BEGIN || type == TET_EV_POLL_END))
		uring_poll(tgid, type == TET_EV_POLL_BEGIN, task, hdr);
	return 0;
}

/* io_uring in batched capture (uring.bpf.h): the poll probes with nothing recorded but the SQ
 * ranges the polls fill, attached once a ring of the target is seen. */
static __always_inline int ur_poll(struct pt_regs *ctx, bool begin)
{
	struct tet_counters *c;
	__u32 tgid = filter();

	if (!tgid || !(c = counters_get()))
		return 0;
	uring_poll(tgid, begin, arg(ctx, 0, c), arg(ctx, 1, c));
	return 0;
}

SEC("usdt")
int tet_ur_poll_begin(struct pt_regs *ctx)
{
	return ur_poll(ctx, true);
}

SEC("usdt")
int tet_ur_poll_end(struct pt_regs *ctx)
{
	return ur_poll(ctx, false);
}

SEC("usdt")
int tet_poll_begin(struct pt_regs *ctx)
{
	return emit(ctx, TET_EV_POLL_BEGIN, 0, 1, 2, -1);
}

SEC("usdt")
int tet_poll_end(struct pt_regs *ctx)
{
	return emit(ctx, TET_EV_POLL_END, 0, 1, 2, -1);
}

SEC("usdt")
int tet_yielded(struct pt_regs *ctx)
{
	return emit(ctx, TET_EV_YIELD, 0, -1, 1, -1);
}

SEC("usdt")
int tet_wake(struct pt_regs *ctx)
{
	return emit(ctx, TET_EV_WAKE, 0, 1, 2, -1);
}

SEC("usdt")
int tet_waker_clone(struct pt_regs *ctx)
{
	return emit(ctx, TET_EV_WAKER_CLONE, 0, 1, -1, -1);
}

SEC("usdt")
int tet_waker_drop(struct pt_regs *ctx)
{
	return emit(ctx, TET_EV_WAKER_DROP, 0, 1, -1, -1);
}

SEC("usdt")
int tet_terminate(struct pt_regs *ctx)
{
	return emit(ctx, TET_EV_TERMINATE, 0, 1, 2, -1);
}

SEC("usdt")
int tet_park(struct pt_regs *ctx)
{
	return emit(ctx, TET_EV_PARK, -1, -1, 0, 1);
}

SEC("usdt")
int tet_unpark(struct pt_regs *ctx)
{
	return emit(ctx, TET_EV_UNPARK, -1, -1, 0, 1);
}

/* task_wait: object in header_ptr, kind in a, arg in b (events.h) */
SEC("usdt")
int tet_wait(struct pt_regs *ctx)
{
	return emit(ctx, TET_EV_WAIT, 0, 2, 1, 3);
}

/* task_lock: object in header_ptr, lock op in a, permits in b (events.h) */
SEC("usdt")
int tet_lock(struct pt_regs *ctx)
{
	return emit(ctx, TET_EV_LOCK, 0, 2, 1, 3);
}

/* ---- the other dialects (tracer/discover/dialect.h) ----
 *
 * One program for every probe of Tokio's upstream USDT proposal and of oxide's tokio-dtrace:
 * the attach cookie says which event it is and which argument fills which field (4 bits each:
 * an argument number, 0xe the constant in the cookie's high half, 0xf none). */
static __always_inline __u64 dialect_arg(struct pt_regs *ctx, __u64 cookie, int shift,
					 struct tet_counters *c)
{
	__u64 n = (cookie >> shift) & 0xf;

	if (n == 0xf)
		return 0;
	if (n == 0xe)
		return cookie >> 32;
	return arg(ctx, n, c);
}

SEC("usdt")
int tet_dialect(struct pt_regs *ctx)
{
	__u64 ck = bpf_usdt_cookie(ctx);
	__u32 type = ck & 0xff, tgid;
	struct tet_counters *c;
	struct tet_event_rec *r;
	int n_task = (ck >> 8) & 0xf;

	if (type >= TET_EV_COUNT)
		return 0;
	r = probe_rec(ctx, type, sizeof(*r), n_task == 0xf ? -1 : n_task, &c, &tgid);
	if (!r)
		return 0;
	r->task_id = dialect_arg(ctx, ck, 8, c);
	r->header_ptr = dialect_arg(ctx, ck, 12, c);
	r->a = dialect_arg(ctx, ck, 16, c);
	r->b = dialect_arg(ctx, ck, 20, c);
	r->cpu_wait = type == TET_EV_POLL_BEGIN || type == TET_EV_POLL_END ? run_delay() : 0;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	if (track_polls && (type == TET_EV_POLL_BEGIN || type == TET_EV_POLL_END))
		poll_depth(tgid, type == TET_EV_POLL_BEGIN);
	return 0;
}

/* Copies min(len, max) bytes of a user string; returns the count copied, 0 on failure.
 * bpf_probe_read_user() fails on a page the process never touched — a Location's file name
 * usually sits on such a page (nothing reads it until a panic) — and user space reads those
 * from the process later. No program here sleeps on the process's memory: a sleepable one
 * (bpf_copy_from_user) waits inside the process's thread for as long as a userfaultfd or FUSE
 * page keeps it, and every uprobe detach on the host waits for it (synchronize_rcu_tasks_trace). */
static __always_inline __u16 read_bounded(char *dst, __u64 src, __u64 len, __u32 max,
					  struct tet_counters *c)
{
	__u32 n = len > max ? max : (__u32)len;
	long err;

	if (n == 0 || !src)
		return 0;
	n &= 0x1ff; /* n ≤ max ≤ 256 < 512: the verifier sees the bound */
	if (n > max)
		return 0;
	err = bpf_probe_read_user(dst, n, (const void *)src);
	if (err < 0) {
		__sync_fetch_and_add(&c->read_errors, 1);
		return 0;
	}
	return n;
}

/* task_spawn; a string that cannot be read here is read by user space from the process
 * at file_ptr/type_ptr (bounded in time: tracer/lib/pmem.h). */
SEC("usdt")
int tet_spawn(struct pt_regs *ctx)
{
	struct tet_counters *c;
	struct tet_spawn_rec *r;
	__u32 tgid;

	r = probe_rec(ctx, TET_EV_SPAWN, sizeof(*r), 0, &c, &tgid);
	if (!r)
		return 0;
	r->task_id = arg(ctx, 0, c);
	r->header_ptr = arg(ctx, 1, c);
	r->kind = (__u32)arg(ctx, 2, c);
	r->file_ptr = arg(ctx, 3, c);
	r->file_len = arg(ctx, 4, c);
	r->line = (__u32)arg(ctx, 5, c);
	r->col = (__u32)arg(ctx, 6, c);
	r->type_ptr = arg(ctx, 7, c);
	r->type_len = arg(ctx, 8, c);
	r->file_copied = read_bounded(r->data, r->file_ptr, r->file_len, TET_FILE_MAX, c);
	r->type_copied = read_bounded(r->data + TET_FILE_MAX, r->type_ptr, r->type_len,
				      TET_TYPE_MAX, c);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

/* A dialect's spawn: the cookie names the task id, file (a NUL-terminated string), line and col
 * arguments in its task, hdr, a, b fields. */
SEC("usdt")
int tet_dialect_spawn(struct pt_regs *ctx)
{
	__u64 ck = bpf_usdt_cookie(ctx);
	struct tet_counters *c;
	struct tet_spawn_rec *r;
	__u32 tgid;
	long n;

	r = probe_rec(ctx, TET_EV_SPAWN, sizeof(*r), (ck >> 8) & 0xf, &c, &tgid);
	if (!r)
		return 0;
	r->task_id = dialect_arg(ctx, ck, 8, c);
	r->header_ptr = 0;
	r->kind = 0;
	r->file_ptr = dialect_arg(ctx, ck, 12, c);
	r->line = (__u32)dialect_arg(ctx, ck, 16, c);
	r->col = (__u32)dialect_arg(ctx, ck, 20, c);
	r->type_ptr = 0;
	r->type_len = 0;
	r->type_copied = 0;
	n = r->file_ptr ? bpf_probe_read_user_str(r->data, TET_FILE_MAX, (const void *)r->file_ptr) : 0;
	if (n < 0) {
		__sync_fetch_and_add(&c->read_errors, 1);
		n = 0;
	}
	r->file_copied = n > 0 ? n - 1 : 0; /* without the NUL */
	r->file_len = r->file_copied;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}



/* task_meta: the name is not static data, readable only now (the emitter touched its pages) */
SEC("usdt")
int tet_meta(struct pt_regs *ctx)
{
	struct tet_counters *c;
	struct tet_meta_rec *r;
	__u32 tgid;

	r = probe_rec(ctx, TET_EV_META, sizeof(*r), 0, &c, &tgid);
	if (!r)
		return 0;
	r->task_id = arg(ctx, 0, c);
	r->name_len = arg(ctx, 2, c);
	r->size = arg(ctx, 3, c);
	r->flags = (__u32)arg(ctx, 4, c);
	r->pad = 0;
	r->name_copied = read_bounded(r->name, arg(ctx, 1, c), r->name_len, TET_NAME_MAX, c);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

/* ---- batched capture: tokio:event_batch (PROBES.md "Batch format") ----
 *
 * One hit per batch: copy the thread's buffer head and its records into the ring, nothing per
 * event. The arguments sit in fixed registers (rdi buffer, rsi record bytes, rdx sequence
 * number, rcx flush clock, r8 flush CLOCK_MONOTONIC ns), so the program is attached as a plain
 * uprobe on every site at once (uprobe_multi) with each site's semaphore as its
 * ref_ctr_offset. bpf_ringbuf_reserve() takes a constant size: the record is reserved in one
 * of four sizes (1, 4, 16 or 33 KiB of data), the smallest that holds head + records. A batch the ring has no room for is
 * lost whole: its head's per-probe counts go to batch_lost, so the loss is reported per
 * event type. */
#define BATCH_HEAD sizeof(struct tet_batch_head)

/* Reserves a batch record with room for `tier` bytes of data (a constant once inlined) and
 * copies n bytes of the thread's buffer into it. NULL when the ring is full. */
static void batch_buf(__u32 tgid, __u64 buf);

static __always_inline struct tet_batch_rec *batch_reserve(__u64 tier, __u64 buf, __u64 n,
							   __u32 tgid, struct tet_counters *c)
{
	struct tet_batch_rec *r = bpf_ringbuf_reserve(&events, sizeof(*r) + tier, 0);

	if (!r)
		return NULL;
	hdr_fill(&r->h, TET_REC_BATCH, tgid);
	/* the compiler knows n <= tier on the caller's branch and drops the clamp; the verifier
	 * must see it on the register that is passed */
	barrier_var(n);
	if (n > tier)
		n = tier;
	if (bpf_probe_read_user(r->data, n, (const void *)buf) < 0) {
		__sync_fetch_and_add(&c->batch_read_errors, 1);
		n = 0;
	}
	r->copied = (__u32)n;
	return r;
}

SEC("uprobe")
int tet_batch(struct pt_regs *ctx)
{
	struct tet_counters *c;
	struct tet_batch_rec *r;
	__u64 buf = PT_REGS_PARM1(ctx), len = PT_REGS_PARM2(ctx);
	__u32 tgid;
	__u64 n;

	/* not stopped(): a batch flushed after the end still holds events from before it (the
	 * decoder cuts them) */
	tgid = filter_pid();
	if (!tgid)
		return 0;
	c = counters_get();
	if (!c)
		return 0;
	__sync_fetch_and_add(&c->batches, 1);
	if (track_polls)
		batch_buf(tgid, buf);
	if (len > TET_BATCH_DATA_MAX) {
		__sync_fetch_and_add(&c->batch_bad, 1);
		return 0;
	}
	n = BATCH_HEAD + len;
	if (n <= 1024)
		r = batch_reserve(1024, buf, n, tgid, c);
	else if (n <= 4096)
		r = batch_reserve(4096, buf, n, tgid, c);
	else if (n <= 16384)
		r = batch_reserve(16384, buf, n, tgid, c);
	else
		r = batch_reserve(BATCH_HEAD + TET_BATCH_DATA_MAX, buf, n, tgid, c);
	if (!r) {
		__u64 counts[TET_BATCH_COUNTS];

		__sync_fetch_and_add(&c->batch_drops, 1);
		if (bpf_probe_read_user(counts, sizeof(counts),
					(const void *)(buf + __builtin_offsetof(struct tet_batch_head, counts))) < 0) {
			__sync_fetch_and_add(&c->batch_read_errors, 1);
			return 0;
		}
		for (int i = 0; i < TET_BATCH_COUNTS; i++) {
			if (counts[i] > TET_BATCH_COUNT_MAX) { /* the head is the process's: bounded */
				counts[i] = TET_BATCH_COUNT_MAX;
				__sync_fetch_and_add(&c->batch_bad, 1);
			}
			__sync_fetch_and_add(&c->batch_lost[i], counts[i]);
		}
		return 0;
	}
	r->buf = buf;
	r->seq = PT_REGS_PARM3(ctx);
	r->clock = PT_REGS_PARM4(ctx);
	r->mono_ns = PT_REGS_PARM5(ctx);
	r->len = (__u32)len;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

/* The sample_rate sites never run; a uprobe needs a program all the same. */
SEC("uprobe")
int tet_nop(struct pt_regs *ctx)
{
	return 0;
}

/* ---- why a poll was slow (sched.bpf.h) ----
 *
 * A thread is inside a poll when, in per-event capture, its poll_begin hits outnumber its
 * poll_end hits (counted per thread by the two programs above), or, in batched capture, its
 * batch buffer's head has polls open (the `depth` byte the process keeps; the buffer is known
 * from the thread's first flush on). Kept in hash maps, not task storage: the probe programs
 * run preemptible, and a task storage helper preempted half-way makes the sched_switch that
 * follows on that CPU find task storage busy. Entries outlive their thread (bounded; a reused
 * tid reads a stale depth, which user space, matching periods to polls, absorbs). Every process
 * of a binary: one is known (tgids) from its first poll or batch. */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);   /* tid */
	__type(value, __u32); /* polls open (per-event capture) */
} poll_depths SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);   /* tid */
	__type(value, __u64); /* its batch buffer (batched capture) */
} batch_bufs SEC(".maps");

/* the head's bytes up to `depth` (events.h struct tet_batch_head) */
struct batch_head_start {
	__u32 magic;
	__u8 skip[26];
	__u8 depth;
	__u8 open_max;
};
_Static_assert(__builtin_offsetof(struct batch_head_start, depth) ==
	       __builtin_offsetof(struct tet_batch_head, depth), "batch_head_start: depth");
_Static_assert(__builtin_offsetof(struct batch_head_start, open_max) ==
	       __builtin_offsetof(struct tet_batch_head, open_max), "batch_head_start: open_max");

static __always_inline bool in_poll(struct task_struct *t)
{
	__u32 tid = (__u32)BPF_CORE_READ(t, pid);
	struct batch_head_start h;
	__u64 *buf = bpf_map_lookup_elem(&batch_bufs, &tid);
	__u32 *depth;

	if (!buf) {
		depth = bpf_map_lookup_elem(&poll_depths, &tid);
		return depth && *depth > 0;
	}
	if (bpf_probe_read_user(&h, sizeof(h), (const void *)*buf) < 0 ||
	    h.magic != TET_BATCH_MAGIC)
		return false;
	return h.depth > 0;
}

static __noinline void poll_depth(__u32 tgid, bool begin)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), one = 1;
	__u32 *d;

	tgid_learn(tgid);
	d = bpf_map_lookup_elem(&poll_depths, &tid);
	if (!d) {
		if (begin)
			bpf_map_update_elem(&poll_depths, &tid, &one, BPF_NOEXIST);
		return;
	}
	if (begin)
		__sync_fetch_and_add(d, 1);
	else if (*d)
		__sync_fetch_and_add(d, (__u32)-1);
}

static __noinline void batch_buf(__u32 tgid, __u64 buf)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *b;

	tgid_learn(tgid);
	b = bpf_map_lookup_elem(&batch_bufs, &tid);
	if (b && *b == buf)
		return;
	bpf_map_update_elem(&batch_bufs, &tid, &buf, BPF_ANY);
}
