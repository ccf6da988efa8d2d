/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * uring.bpf.h — io_uring: which task filled each request of the target's rings, and when the
 * kernel submitted and completed it. Both BPF objects include it after sched.bpf.h (its tgids
 * map and of_target()) and call
 *     uring_poll(tgid, begin, task_id, header_ptr)
 * at both ends of every poll they see, while `uring_seen` is set (a global load otherwise:
 * nothing for a target without io_uring).
 *
 * The kernel consumes a ring's SQEs in the order user space filled them, and the submission
 * queue's tail (ctx->rings->sq.tail, memory shared with the process: read here through the
 * kernel's mapping) counts them. Read at a poll's begin and end on the thread that owns the
 * ring, it says which SQ positions that poll filled (TET_REC_URING_PUSH); io_uring_submit_req
 * says which position became which request (ctx->cached_sq_head, already advanced past it).
 * User space joins the two, so a request is the task's even when the runtime submits it later
 * (tokio-uring submits at park, outside every poll). A thread's ring is the one it created
 * (io_uring_create) or last submitted to; SQEs filled before that is known stay unattributed.
 * Rings with a kernel submission thread (IORING_SETUP_SQPOLL) are only attributed when their
 * creation was seen (the submitting thread is then the kernel's).
 *
 * A ring is the target's when a target process created it or submitted to it; attached by
 * path (target_tgid 0), a process is the target's when its executable is the traced binary
 * (target_exe_dev/ino) or its polls were seen (tgids). Completions are kept by ring: they may be
 * posted by io-wq workers or another task's context.
 */
#ifndef TET_URING_BPF_H
#define TET_URING_BPF_H

/* Set by user space: the traced binary (attached by path), as the kernel names its inode. */
const volatile __u64 target_exe_ino = 0;
const volatile __u32 target_exe_dev = 0;

/* A ring of a target was seen: the poll hooks track SQ tails from then on. User space reads it
 * (batched capture attaches the poll hooks then). */
__u32 uring_seen = 0;

struct uring_ring {
	__u32 tgid;
	__u32 flags;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);   /* struct io_ring_ctx * */
	__type(value, struct uring_ring);
} uring_rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);   /* tid */
	__type(value, __u64); /* its ring */
} uring_threads SEC(".maps");

#define URING_DEPTH 4
struct uring_frame {
	__u64 ring, task, header;
	__u32 from, pad;
};
struct uring_polls {
	__u32 depth, pad;
	struct uring_frame f[URING_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);   /* tid */
	__type(value, struct uring_polls);
} uring_polls SEC(".maps");

/* IORING_SETUP_* */
#define TET_SETUP_SQPOLL     (1u << 1)
#define TET_SETUP_SQE128     (1u << 10)
#define TET_SETUP_NO_SQARRAY (1u << 16)

/* The fd field of the SQE at SQ position pos, as user space wrote it (the request's own copy,
 * req->cqe.fd, is only set for opcodes that take a file: CLOSE's fd and OPENAT's dirfd are
 * not in it). The kernel has consumed the entry but not yet published the new SQ head, so
 * user space cannot have reused it. Falls back to req->cqe.fd when it cannot be read. */
static __always_inline __s32 sqe_fd(struct io_ring_ctx *rctx, struct io_kiocb *req, __u32 pos)
{
	__u32 flags = BPF_CORE_READ(rctx, flags), entries = BPF_CORE_READ(rctx, sq_entries), idx;
	struct io_uring_sqe *sqes = BPF_CORE_READ(rctx, sq_sqes), *sqe;
	__u32 *array;
	__s32 fd;

	if (!entries || !sqes)
		goto req_fd;
	idx = pos & (entries - 1);
	if (!(flags & TET_SETUP_NO_SQARRAY)) {
		array = BPF_CORE_READ(rctx, sq_array);
		if (!array || bpf_probe_read_kernel(&idx, sizeof(idx), &array[idx]))
			goto req_fd;
	}
	if (idx >= entries)
		goto req_fd;
	if (flags & TET_SETUP_SQE128)
		idx <<= 1;
	sqe = &sqes[idx];
	if (bpf_probe_read_kernel(&fd, sizeof(fd), &sqe->fd))
		goto req_fd;
	return fd;
req_fd:
	return BPF_CORE_READ(req, cqe.fd);
}

static __always_inline bool exe_is_target(void)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct file *f;

	if (!target_exe_ino)
		return false;
	f = BPF_CORE_READ(t, mm, exe_file);
	if (!f)
		return false;
	return BPF_CORE_READ(f, f_inode, i_ino) == target_exe_ino &&
	       BPF_CORE_READ(f, f_inode, i_sb, s_dev) == target_exe_dev;
}

static __always_inline bool uring_target(__u32 tgid)
{
	if (!tgid)
		return false;
	if (target_tgid)
		return tgid == target_tgid;
	if (bpf_map_lookup_elem(&tgids, &tgid))
		return true;
	if (!exe_is_target())
		return false;
	tgid_learn(tgid);
	return true;
}

static __always_inline void uring_count(bool ok)
{
	struct tet_counters *c = counters_get();

	if (c)
		__sync_fetch_and_add(ok ? &c->uring : &c->uring_drops, 1);
}

static __always_inline struct tet_uring_rec *uring_reserve(__u32 type, __u32 tgid)
{
	struct tet_uring_rec *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);

	if (!r) {
		uring_count(false);
		return NULL;
	}
	hdr_fill(&r->h, type, tgid);
	r->ctx = r->user_data = 0;
	r->fd = -1;
	r->res = 0;
	r->pos = r->flags = 0;
	r->opcode = 0;
	__builtin_memset(r->pad, 0, sizeof(r->pad));
	return r;
}

static __always_inline void uring_submit_rec(void *r)
{
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	uring_count(true);
}

/* The thread `tid` uses ring `ring` (a lookup first: lock-free). */
static __always_inline void thread_ring(__u32 tid, __u64 ring)
{
	__u64 *cur = bpf_map_lookup_elem(&uring_threads, &tid);

	if (!cur || *cur != ring)
		bpf_map_update_elem(&uring_threads, &tid, &ring, BPF_ANY);
}

static __noinline void ring_learn(__u64 ring, __u32 tgid, __s32 fd, __u32 flags)
{
	struct uring_ring v = { .tgid = tgid, .flags = flags };
	struct tet_uring_rec *r;

	if (bpf_map_update_elem(&uring_rings, &ring, &v, BPF_NOEXIST))
		return; /* known already (or the map is full: its requests are then not followed) */
	r = uring_reserve(TET_REC_URING_RING, tgid);
	if (r) {
		r->ctx = ring;
		r->fd = fd;
		r->flags = flags;
		uring_submit_rec(r);
	}
	if (!uring_seen)
		uring_seen = 1;
}

SEC("tp_btf/io_uring_create")
int BPF_PROG(tet_ur_create, int fd, void *ctxp, __u32 sq_entries, __u32 cq_entries, __u32 flags)
{
	__u64 id = bpf_get_current_pid_tgid(), ring = (__u64)ctxp;
	__u32 tgid = id >> 32;

	if (stopped() || !uring_target(tgid))
		return 0;
	ring_learn(ring, tgid, fd, flags);
	thread_ring((__u32)id, ring);
	return 0;
}

SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(tet_ur_submit, struct io_kiocb *req)
{
	__u64 id = bpf_get_current_pid_tgid(), ring;
	__u32 tgid = id >> 32;
	struct io_ring_ctx *rctx;
	struct uring_ring *known;
	struct tet_uring_rec *r;

	if (stopped())
		return 0;
	rctx = BPF_CORE_READ(req, ctx);
	ring = (__u64)rctx;
	known = bpf_map_lookup_elem(&uring_rings, &ring);
	if (!known) {
		if (!uring_target(tgid))
			return 0;
		ring_learn(ring, tgid, -1, BPF_CORE_READ(rctx, flags));
		known = bpf_map_lookup_elem(&uring_rings, &ring);
		if (!known)
			return 0;
	}
	/* the submitting thread fills the ring, unless the kernel's SQPOLL thread submits */
	if (!(known->flags & TET_SETUP_SQPOLL))
		thread_ring((__u32)id, ring);
	r = uring_reserve(TET_REC_URING_SUBMIT, known->tgid);
	if (!r)
		return 0;
	r->ctx = ring;
	r->user_data = BPF_CORE_READ(req, cqe.user_data);
	r->pos = BPF_CORE_READ(rctx, cached_sq_head) - 1;
	r->fd = sqe_fd(rctx, req, r->pos);
	r->flags = (__u32)BPF_CORE_READ(req, flags);
	r->opcode = BPF_CORE_READ(req, opcode);
	uring_submit_rec(r);
	return 0;
}

SEC("tp_btf/io_uring_complete")
int BPF_PROG(tet_ur_complete, struct io_ring_ctx *rctx, void *req, struct io_uring_cqe *cqe)
{
	__u64 ring = (__u64)rctx;
	struct uring_ring *known = bpf_map_lookup_elem(&uring_rings, &ring);
	struct tet_uring_rec *r;

	if (!known || stopped())
		return 0;
	r = uring_reserve(TET_REC_URING_DONE, known->tgid);
	if (!r)
		return 0;
	r->ctx = ring;
	r->user_data = BPF_CORE_READ(cqe, user_data);
	r->res = BPF_CORE_READ(cqe, res);
	r->flags = BPF_CORE_READ(cqe, flags);
	r->opcode = req ? BPF_CORE_READ((struct io_kiocb *)req, opcode) : TET_URING_NO_REQ;
	uring_submit_rec(r);
	return 0;
}

static __always_inline void uring_push(__u32 tgid, struct uring_frame *f, __u32 to)
{
	struct tet_uring_push_rec *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);

	if (!r) {
		uring_count(false);
		return;
	}
	hdr_fill(&r->h, TET_REC_URING_PUSH, tgid);
	r->ctx = f->ring;
	r->task_id = f->task;
	r->header_ptr = f->header;
	r->from = f->from;
	r->to = to;
	uring_submit_rec(r);
}

/* A poll begins or ends on this thread: what its ring's SQ tail moved by since the last mark
 * was filled by the innermost poll open. */
static __noinline void uring_poll(__u32 tgid, bool begin, __u64 task, __u64 header)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), tail, d;
	struct uring_polls *st, zero = {};
	struct uring_frame *f;
	struct io_ring_ctx *rctx;
	__u64 *ring;

	ring = bpf_map_lookup_elem(&uring_threads, &tid);
	if (!ring)
		return;
	rctx = (struct io_ring_ctx *)*ring;
	tail = BPF_CORE_READ(rctx, rings, sq.tail);
	st = bpf_map_lookup_elem(&uring_polls, &tid);
	if (!st) {
		if (!begin)
			return;
		bpf_map_update_elem(&uring_polls, &tid, &zero, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&uring_polls, &tid);
		if (!st)
			return;
	}
	d = st->depth;
	if (begin) {
		if (d > 0 && d <= URING_DEPTH) {
			f = &st->f[(d - 1) & (URING_DEPTH - 1)];
			if (f->ring == (__u64)rctx && tail != f->from)
				uring_push(tgid, f, tail);
			f->ring = (__u64)rctx;
			f->from = tail;
		}
		if (d < URING_DEPTH) {
			f = &st->f[d & (URING_DEPTH - 1)];
			f->ring = (__u64)rctx;
			f->task = task;
			f->header = header;
			f->from = tail;
		} else {
			struct tet_counters *c = counters_get();

			if (c)
				__sync_fetch_and_add(&c->uring_deep, 1);
		}
		st->depth = d + 1;
		return;
	}
	if (d == 0)
		return;
	/* the frame of this poll: the innermost of its task. Frames above it are polls whose end
	 * was not seen (an end probe attached after their begin): dropped, so a lost end never
	 * leaves the depth stuck. An end with no frame of its task (its begin was not seen) changes
	 * nothing, unless polls deeper than the frames kept are open: then it is the innermost. */
	{
		int found = -1;

		for (int i = URING_DEPTH - 1; i >= 0; i--) {
			if (i < d && st->f[i].task == task && st->f[i].header == header) {
				found = i;
				break;
			}
		}
		if (found < 0) {
			if (d > URING_DEPTH)
				st->depth = d - 1;
			return;
		}
		d = (__u32)found;
	}
	st->depth = d;
	f = &st->f[d & (URING_DEPTH - 1)];
	if (f->ring == (__u64)rctx && tail != f->from)
		uring_push(tgid, f, tail);
	if (d > 0 && d <= URING_DEPTH) {
		f = &st->f[(d - 1) & (URING_DEPTH - 1)];
		f->ring = (__u64)rctx;
		f->from = tail;
	}
}

#endif
