// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tokio_uprobe.bpf.c — the uprobe fallback: stock (unpatched) Tokio, traced through uprobes on
 * its task functions (tracer/discover/symbols.c finds them), feeding the same records (bpf/events.h) as
 * the USDT programs so the analyzer is shared. Task identity is the task header pointer, the
 * first argument of every function probed here; task_id is 0.
 *
 *   raw::poll<T, S>(header)            entry  → task_poll_begin  (b = the instance's future-type
 *                                                                  index: the attach cookie)
 *                                      return → task_poll_end    (a = ready when the task
 *                                               [+ task_terminate]    completed inside the poll,
 *                                                                      else pending)
 *   Harness<T, S>::complete(header)    inside a poll of that header: marks the poll completed;
 *                                      outside any poll (runtime shutdown, abort of an idle
 *                                      task): task_terminate, reason cancelled
 *   raw::dealloc<T, S>(header)         task_terminate, reason unknown (only attached when
 *                                      Harness::complete was not found)
 *   waker::wake_by_val/wake_by_ref     waker_wake (a = by_ref)
 *   waker::clone_waker/drop_waker      waker_clone / waker_drop
 *
 * The return needs the header the entry saw: a per-thread stack (hash map keyed by tid,
 * bounded depth; LocalSet polls its tasks inside the poll of another) carries it, with the
 * "completed" mark set by Harness::complete. Records go out with BPF_RB_NO_WAKEUP (the consumer
 * drains on a timer, as for USDT). Counters as in tokio_usdt.bpf.c: every hit that passes the
 * PID filter counts in `seen`, every failed reservation in `drops`.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "events.h"
#include "common.bpf.h"
#include "sched.bpf.h"
#include "uring.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The probes' codes are bpf/probes.def's (events.h: TET_POLL_READY …); a stock build cannot
 * tell some reasons: */
#define TERM_UNKNOWN 255
#define NEST_MAX 4

struct poll_stack {
	__u64 hdr[NEST_MAX];
	__u32 done;     /* bit i: the poll at depth i completed its task */
	__u32 depth;    /* may exceed NEST_MAX: those levels are not recorded */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct poll_stack);
} polls SEC(".maps");

/* Why a poll was slow (sched.bpf.h, at the end): set by user space when the sched programs are
 * loaded; attached by path, each polling process is then learnt (tgids). A thread is inside a
 * poll while its `polls` stack is not empty. */
const volatile bool track_polls = false;

static void poll_seen(__u32 tgid);

static __always_inline int emit(struct tet_counters *c, __u32 tgid, __u32 type, __u64 hdr,
				__u64 a, __u64 b)
{
	struct tet_event_rec *r;

	r = rec_reserve(c, type, sizeof(*r));
	if (!r) {
		note_lost(c, tgid, type, hdr);
		return 0;
	}
	hdr_fill(&r->h, type, tgid);
	r->task_id = 0;
	r->header_ptr = hdr;
	r->a = a;
	r->b = b;
	r->cpu_wait = 0;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

/* The common path of the one-event probes. */
static __always_inline int simple(struct pt_regs *ctx, __u32 type, __u64 a)
{
	struct tet_counters *c;
	__u32 tgid = filter();

	if (!tgid)
		return 0;
	c = counters_get();
	if (!c)
		return 0;
	return emit(c, tgid, type, PT_REGS_PARM1(ctx), a, 0);
}

SEC("uprobe")
int tet_fb_poll(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 hdr = PT_REGS_PARM1(ctx);
	struct tet_counters *c;
	struct poll_stack *st;
	__u32 tgid = filter();

	if (!tgid)
		return 0;
	c = counters_get();
	if (!c)
		return 0;
	st = bpf_map_lookup_elem(&polls, &tid);
	if (!st) {
		struct poll_stack zero = {};

		bpf_map_update_elem(&polls, &tid, &zero, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&polls, &tid);
		if (!st)
			return 0; /* map full: the poll_end will be unmatched */
	}
	if (st->depth < NEST_MAX) {
		__u32 d = st->depth & (NEST_MAX - 1);

		st->hdr[d] = hdr;
		st->done &= ~(1u << d);
	}
	st->depth++;
	if (track_polls)
		poll_seen(tgid);
	if (uring_seen)
		uring_poll(tgid, true, 0, hdr);
	/* a = -1: the worker index is not known here (user space numbers polling threads) */
	return emit(c, tgid, TET_EV_POLL_BEGIN, hdr, (__u64)-1, bpf_get_attach_cookie(ctx));
}

SEC("uretprobe")
int tet_fb_poll_ret(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct tet_counters *c;
	struct poll_stack *st;
	__u32 tgid = filter(), d;
	__u64 hdr;
	bool done;

	if (!tgid)
		return 0;
	c = counters_get();
	st = bpf_map_lookup_elem(&polls, &tid);
	if (!c || !st || !st->depth)
		return 0; /* entered before the probes were attached */
	d = --st->depth;
	if (d >= NEST_MAX)
		return 0;
	d &= NEST_MAX - 1;
	hdr = st->hdr[d];
	done = st->done & (1u << d);
	emit(c, tgid, TET_EV_POLL_END, hdr, done ? TET_POLL_READY : TET_POLL_PENDING, 0);
	if (uring_seen)
		uring_poll(tgid, false, 0, hdr);
	if (done)
		emit(c, tgid, TET_EV_TERMINATE, hdr, TET_TERM_COMPLETED, 0);
	return 0;
}

SEC("uprobe")
int tet_fb_complete(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 hdr = PT_REGS_PARM1(ctx);
	struct tet_counters *c;
	struct poll_stack *st;
	__u32 tgid = filter();

	if (!tgid)
		return 0;
	st = bpf_map_lookup_elem(&polls, &tid);
	if (st) {
		for (int i = 0; i < NEST_MAX; i++) {
			if (i < st->depth && st->hdr[i] == hdr) {
				st->done |= 1u << i;
				return 0; /* the poll's return reports it */
			}
		}
	}
	c = counters_get();
	if (!c)
		return 0;
	return emit(c, tgid, TET_EV_TERMINATE, hdr, TET_TERM_CANCELLED, 0);
}

SEC("uprobe")
int tet_fb_dealloc(struct pt_regs *ctx)
{
	return simple(ctx, TET_EV_TERMINATE, TERM_UNKNOWN);
}

SEC("uprobe")
int tet_fb_wake_by_val(struct pt_regs *ctx)
{
	return simple(ctx, TET_EV_WAKE, 0);
}

SEC("uprobe")
int tet_fb_wake_by_ref(struct pt_regs *ctx)
{
	return simple(ctx, TET_EV_WAKE, 1);
}

SEC("uprobe")
int tet_fb_clone(struct pt_regs *ctx)
{
	return simple(ctx, TET_EV_WAKER_CLONE, 0);
}

SEC("uprobe")
int tet_fb_drop(struct pt_regs *ctx)
{
	return simple(ctx, TET_EV_WAKER_DROP, 0);
}

/* Calibration (fallback.c): attached to a function of the tracer itself to time what a probe
 * hit costs on this machine (the trap and the program dispatch; the programs above add their
 * map and ring-buffer work on top). */
SEC("uprobe")
int tet_fb_calib(struct pt_regs *ctx)
{
	return 0;
}

/* ---- why a poll was slow ---- */

static __always_inline bool in_poll(struct task_struct *t)
{
	__u32 tid = (__u32)BPF_CORE_READ(t, pid);
	struct poll_stack *st = bpf_map_lookup_elem(&polls, &tid);

	return st && st->depth > 0;
}


static __noinline void poll_seen(__u32 tgid)
{
	tgid_learn(tgid);
}
