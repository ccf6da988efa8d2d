// SPDX-License-Identifier: MIT
/*
 * fallback.c — load bpf/tokio_uprobe.bpf.c and attach it to the task functions of a stock
 * Tokio binary (see fallback.h, symbols.c).
 *
 * Attach method. There can be hundreds of monomorphised raw::poll instances, and each needs an
 * entry uprobe and a uretprobe. Linux 6.6 added multi-uprobe links (89ae89f53d20 "bpf: Add
 * multi uprobe link"): one BPF_LINK_CREATE with attach type BPF_TRACE_UPROBE_MULTI takes every
 * offset of one file, with a BPF cookie per offset, and one close detaches them all (one RCU
 * grace period, where single uprobes pay one each on detach). libbpf 1.1 has no API for it
 * (bpf_program__attach_uprobe_multi came in libbpf 1.3), so the link is created with the raw
 * bpf(2) command. Whether the kernel has it is probed at run time with a throwaway program
 * attached to the first raw::poll; without it (or with TET_NO_UPROBE_MULTI=1) every function
 * gets its own perf-event uprobe through bpf_program__attach_uprobe_opts(), its cookie passed
 * the perf-link way (Linux 5.15). Either way the cookie of a raw::poll uprobe is its future
 * type's index, which the program reads with bpf_get_attach_cookie().
 *
 * Workers. The fallback does not know worker indices (the USDT probes pass them); threads are
 * numbered in the order they are first seen polling, so per-worker figures and the
 * "wake from outside the runtime" test still work. The numbering is done here, on a copy of
 * each record, before the analyzer sees it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfutil.h"
#include "decode.h"
#include "fallback.h"
#include "seterr.h"
#include "tokio_uprobe.skel.h"

enum fb_prog { P_POLL, P_POLL_RET, P_COMPLETE, P_DEALLOC, P_WAKE_VAL, P_WAKE_REF, P_CLONE, P_DROP,
	       P_COUNT };

struct tet_fb {
	struct tokio_uprobe *skel;
	struct ring_buffer *rb;
	struct tet_attachments att;
	unsigned probes;
	struct tet_fb_info info;
	tet_fb_event_fn on_event;
	void *ctx;
	uint32_t *tids;         /* open addressing: tid → worker index (index = slot order) */
	int32_t *tid_idx;
	size_t tids_cap, ntids;
	struct tet_sched_opts sched_opts;
	struct tet_sched *sched;
	struct tet_sched_info sched_info;
	struct tet_uring *uring;
	struct tet_uring_info uring_info;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct bpf_program *prog(struct tokio_uprobe *k, enum fb_prog p)
{
	switch (p) {
	case P_POLL: return k->progs.tet_fb_poll;
	case P_POLL_RET: return k->progs.tet_fb_poll_ret;
	case P_COMPLETE: return k->progs.tet_fb_complete;
	case P_DEALLOC: return k->progs.tet_fb_dealloc;
	case P_WAKE_VAL: return k->progs.tet_fb_wake_by_val;
	case P_WAKE_REF: return k->progs.tet_fb_wake_by_ref;
	case P_CLONE: return k->progs.tet_fb_clone;
	case P_DROP: return k->progs.tet_fb_drop;
	default: return NULL;
	}
}

/* What each program probes, and when it is needed. */
static enum tsym_kind prog_kind(enum fb_prog p)
{
	static const enum tsym_kind k[P_COUNT] = {
		[P_POLL] = TSYM_POLL, [P_POLL_RET] = TSYM_POLL, [P_COMPLETE] = TSYM_COMPLETE,
		[P_DEALLOC] = TSYM_DEALLOC, [P_WAKE_VAL] = TSYM_WAKE_BY_VAL,
		[P_WAKE_REF] = TSYM_WAKE_BY_REF, [P_CLONE] = TSYM_CLONE, [P_DROP] = TSYM_DROP,
	};

	return k[p];
}

static bool prog_wanted(const struct tsym_table *t, unsigned probes, enum fb_prog p)
{
	switch (p) {
	case P_POLL:
	case P_POLL_RET:
		return probes & (1u << TET_EV_POLL_BEGIN);
	case P_COMPLETE: /* the poll result (ready) needs it too */
		return (probes & (1u << TET_EV_POLL_BEGIN | 1u << TET_EV_TERMINATE)) &&
		       t->count[TSYM_COMPLETE];
	case P_DEALLOC: /* a task's end only when Harness::complete is not there */
		return (probes & (1u << TET_EV_TERMINATE)) && !t->count[TSYM_COMPLETE];
	case P_WAKE_VAL:
	case P_WAKE_REF:
		return probes & (1u << TET_EV_WAKE);
	case P_CLONE:
		return probes & (1u << TET_EV_WAKER_CLONE);
	case P_DROP:
		return probes & (1u << TET_EV_WAKER_DROP);
	default:
		return false;
	}
}

/* Worker index of a polling thread: order of first appearance. */
static int32_t worker_of(struct tet_fb *s, uint32_t tid)
{
	size_t i;

	if ((s->ntids + 1) * 2 > s->tids_cap) {
		size_t cap = s->tids_cap ? s->tids_cap * 2 : 256;
		uint32_t *t = calloc(cap, sizeof(*t));
		int32_t *x = calloc(cap, sizeof(*x));

		if (!t || !x) {
			free(t);
			free(x);
			return -1;
		}
		for (size_t k = 0; k < s->tids_cap; k++) {
			if (!s->tids[k])
				continue;
			for (i = (s->tids[k] * 2654435761u) & (cap - 1); t[i]; i = (i + 1) & (cap - 1))
				;
			t[i] = s->tids[k];
			x[i] = s->tid_idx[k];
		}
		free(s->tids);
		free(s->tid_idx);
		s->tids = t;
		s->tid_idx = x;
		s->tids_cap = cap;
	}
	for (i = (tid * 2654435761u) & (s->tids_cap - 1); s->tids[i]; i = (i + 1) & (s->tids_cap - 1))
		if (s->tids[i] == tid)
			return s->tid_idx[i];
	s->tids[i] = tid;
	s->tid_idx[i] = (int32_t)s->ntids++;
	return s->tid_idx[i];
}

static int ring_cb(void *ctx, void *data, size_t size)
{
	struct tet_fb *s = ctx;
	struct tet_event_rec r;
	const struct tet_hdr *h = data;

	if (size < sizeof(r) || h->type >= TET_EV_COUNT)
		return s->on_event(s->ctx, data, size);
	memcpy(&r, data, sizeof(r));
	if (r.h.type == TET_EV_POLL_BEGIN && r.h.tid)
		r.a = (uint64_t)(int64_t)worker_of(s, r.h.tid);
	return s->on_event(s->ctx, &r, sizeof(r));
}

/* The calibration target: a function that does nothing, with the usual frame-pointer prologue
 * as first instruction (push: emulated by the kernel's uprobe code, like raw::poll's jmp). */
int tet_fb_calib_target(int x);
__asm__(".text\n"
	".globl tet_fb_calib_target\n"
	".type tet_fb_calib_target, @function\n"
	"tet_fb_calib_target:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	lea 1(%rdi), %eax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size tet_fb_calib_target, .-tet_fb_calib_target\n");

static uint64_t calib_loop(int n)
{
	uint64_t t0 = mono_ns();
	volatile int acc = 0;

	for (int i = 0; i < n; i++)
		acc = tet_fb_calib_target(acc);
	return mono_ns() - t0;
}

/* File offset of tet_fb_calib_target in /proc/self/exe, from /proc/self/maps. */
static int calib_offset(uint64_t *off)
{
	uint64_t addr = (uint64_t)(uintptr_t)&tet_fb_calib_target, lo, hi, foff;
	char line[512], perm[8];
	FILE *fp = fopen("/proc/self/maps", "re");
	int ret = -ENOENT;

	if (!fp)
		return -errno;
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%lx-%lx %7s %lx", &lo, &hi, perm, &foff) != 4)
			continue;
		if (addr >= lo && addr < hi && perm[2] == 'x') {
			*off = addr - lo + foff;
			ret = 0;
			break;
		}
	}
	fclose(fp);
	return ret;
}

/* Per-call cost of an entry uprobe, and of an entry uprobe + uretprobe, on this machine now:
 * the median of three rounds of N calls, probed minus unprobed. */
static void calibrate(struct tet_fb *s)
{
	enum { N = 20000, ROUNDS = 3 };
	struct bpf_program *p = s->skel->progs.tet_fb_calib;
	double plain[ROUNDS], one[ROUNDS], two[ROUNDS];
	struct bpf_link *l1 = NULL, *l2 = NULL;
	uint64_t off = 0;

	if (calib_offset(&off))
		return;
	calib_loop(N); /* warm */
	for (int r = 0; r < ROUNDS; r++)
		plain[r] = (double)calib_loop(N) / N;
	l1 = bpf_program__attach_uprobe(p, false, getpid(), "/proc/self/exe", off);
	if (!l1)
		return;
	calib_loop(N); /* warm: the first hits map the kernel's out-of-line area */
	for (int r = 0; r < ROUNDS; r++)
		one[r] = (double)calib_loop(N) / N;
	l2 = bpf_program__attach_uprobe(p, true, getpid(), "/proc/self/exe", off);
	if (l2) {
		calib_loop(N);
		for (int r = 0; r < ROUNDS; r++)
			two[r] = (double)calib_loop(N) / N;
	}
	bpf_link__destroy(l2);
	bpf_link__destroy(l1);
	/* medians of 3 */
#define MED3(v) ((v)[0] > (v)[1] ? ((v)[1] > (v)[2] ? (v)[1] : (v)[0] > (v)[2] ? (v)[2] : (v)[0]) \
				 : ((v)[0] > (v)[2] ? (v)[0] : (v)[1] > (v)[2] ? (v)[2] : (v)[1]))
	s->info.uprobe_ns = MED3(one) - MED3(plain);
	if (l2)
		s->info.uretprobe_ns = MED3(two) - MED3(plain);
#undef MED3
}

static void tet_fb_close(struct tet_fb *s);

int tet_fb_open(struct tet_fb **out, const struct tet_fb_opts *o, const char *path,
		const struct tsym_table *t, char *err, size_t len)
{
	uint64_t *offs = NULL, *cookies = NULL, t0;
	struct tet_fb *s;
	bool multi;
	int ret;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->on_event = o->on_event;
	s->ctx = o->ctx;
	s->probes = o->probes & tsym_probes(t);
	if (!s->probes) {
		seterr(err, len, "none of the requested probe classes can be traced through the symbols of %s",
		       path);
		free(s);
		return -ENODATA;
	}
	offs = calloc(t->nfns + 1, sizeof(*offs));
	cookies = calloc(t->nfns + 1, sizeof(*cookies));
	s->skel = tokio_uprobe__open();
	if (!offs || !cookies || !s->skel) {
		ret = -ENOMEM;
		seterr(err, len, "cannot open the BPF object: %s", strerror(ENOMEM));
		goto fail;
	}
	s->skel->rodata->target_tgid = (uint32_t)(o->pid > 0 ? o->pid : 0);
	ret = bpf_map__set_max_entries(s->skel->maps.events, (uint32_t)o->ringbuf_bytes);
	if (ret) {
		seterr(err, len, "ring buffer size %zu refused: %s", o->ringbuf_bytes, strerror(-ret));
		goto fail;
	}
	{
		size_t first = 0;

		while (first < t->nfns && t->fns[first].kind != TSYM_POLL)
			first++;
		multi = first < t->nfns &&
			tet_uprobe_multi_works(path, t->fns[first].file_off, o->pid, &s->info.why_single);
	}
	s->info.multi = multi;
	for (int p = 0; p < P_COUNT; p++) {
		bool want = prog_wanted(t, s->probes, (enum fb_prog)p);

		bpf_program__set_autoload(prog(s->skel, (enum fb_prog)p), want);
		if (want && multi)
			bpf_program__set_expected_attach_type(prog(s->skel, (enum fb_prog)p),
							      TET_TRACE_UPROBE_MULTI);
	}
	s->sched_opts = o->sched;
	s->skel->rodata->track_polls =
		tet_sched_prepare(&(struct tet_sched_progs){ s->skel->progs.tet_switch,
				  s->skel->progs.tet_wakeup, s->skel->progs.tet_sample,
				  s->skel->progs.tet_exit,
				  &s->skel->rodata->exit_group_dead_arg,
				  &s->skel->rodata->steal_clock,
				  (int64_t *)&s->skel->rodata->steal_rq_delta },
				  &o->sched, &s->sched_info);
	/* io_uring: tet_fb_poll / tet_fb_poll_ret report the SQ ranges */
	if (tet_uring_prepare(&(struct tet_uring_progs){ s->skel->progs.tet_ur_create,
			      s->skel->progs.tet_ur_submit, s->skel->progs.tet_ur_complete,
			      (uint64_t *)&s->skel->rodata->target_exe_ino,
			      (uint32_t *)&s->skel->rodata->target_exe_dev },
			      o->no_uring, o->pid > 0 ? NULL : path, &s->uring_info))
		s->uring_info.hooks = true;
	tet_btf_release(); /* the set-up's questions are answered: libbpf parses its own */
	ret = tokio_uprobe__load(s->skel);
	if (ret) {
		seterr(err, len, "cannot load the BPF programs: %s", strerror(-ret));
		goto fail;
	}
	if (!getenv("TET_NO_CALIBRATION"))
		calibrate(s);
	t0 = mono_ns();
	for (int p = 0; p < P_COUNT; p++) {
		struct bpf_program *bp = prog(s->skel, (enum fb_prog)p);
		bool ret_probe = p == P_POLL_RET;
		size_t n = 0;

		if (!prog_wanted(t, s->probes, (enum fb_prog)p))
			continue;
		for (size_t i = 0; i < t->nfns; i++) {
			if (t->fns[i].kind != prog_kind((enum fb_prog)p))
				continue;
			offs[n] = t->fns[i].file_off;
			cookies[n] = t->fns[i].kind == TSYM_POLL ? (uint64_t)t->fns[i].type : 0;
			n++;
		}
		s->info.uprobes += n;
		if (multi) {
			int fd = tet_uprobe_multi(bpf_program__fd(bp), path, offs, NULL, cookies, n, ret_probe, o->pid);

			if (fd < 0) {
				ret = fd;
				seterr(err, len, "cannot attach %zu uprobes (%s) to %s: %s", n,
				       bpf_program__name(bp), path, strerror(-fd));
				goto fail;
			}
			ret = tet_att_fd(&s->att, fd);
		} else {
			for (size_t i = 0; i < n && !ret; i++) {
				LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = ret_probe,
					    .bpf_cookie = cookies[i]);
				struct bpf_link *l = bpf_program__attach_uprobe_opts(
					bp, o->pid > 0 ? o->pid : -1, path, offs[i], &uo);

				if (!l) {
					ret = -errno;
					seterr(err, len, "cannot attach a uprobe (%s) at offset 0x%llx of %s: %s",
					       bpf_program__name(bp), (unsigned long long)offs[i], path,
					       strerror(-ret));
					goto fail;
				}
				ret = tet_att_link(&s->att, l);
			}
		}
		if (ret) {
			seterr(err, len, "out of memory");
			goto fail;
		}
	}
	s->info.attach_ns = mono_ns() - t0;
	s->info.links = s->att.nlinks + s->att.nfds;
	s->sched = tet_sched_attach(&(struct tet_sched_progs){ s->skel->progs.tet_switch,
				    s->skel->progs.tet_wakeup, s->skel->progs.tet_sample,
				  s->skel->progs.tet_exit, NULL, NULL, NULL },
				    &s->sched_opts, &s->sched_info);
	s->uring = tet_uring_attach(&(struct tet_uring_progs){ s->skel->progs.tet_ur_create,
				    s->skel->progs.tet_ur_submit, s->skel->progs.tet_ur_complete,
				    NULL, NULL }, &s->uring_info);
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), ring_cb, s, NULL);
	if (!s->rb) {
		ret = -errno;
		seterr(err, len, "cannot open the ring buffer: %s", strerror(-ret));
		goto fail;
	}
	free(offs);
	free(cookies);
	*out = s;
	return 0;
fail:
	free(offs);
	free(cookies);
	tet_fb_close(s);
	return ret;
}

unsigned tet_fb_probes(const struct tet_fb *s)
{
	return s->probes;
}

static const struct tet_fb_info *tet_fb_info(const struct tet_fb *s)
{
	return &s->info;
}

static size_t tet_fb_prog_ids(const struct tet_fb *s, uint32_t *ids, const char **names, size_t max)
{
	size_t n = 0;

	for (int p = 0; p < P_COUNT && n < max; p++) {
		struct bpf_program *bp = prog(s->skel, (enum fb_prog)p);

		if (!tet_prog_id(bp, &ids[n]))
			continue;
		names[n] = bpf_program__name(bp);
		n++;
	}
	return n;
}

static int tet_fb_drain(struct tet_fb *s)
{
	return s->rb ? ring_buffer__consume(s->rb) : 0;
}

static int tet_fb_counters(struct tet_fb *s, struct tet_counters *sum)
{
	return tet_counters_sum(bpf_map__fd(s->skel->maps.counters), sum);
}

static void tet_fb_detach(struct tet_fb *s, uint64_t cutoff)
{
	uint64_t t0 = mono_ns();

	if (!s->att.nlinks && !s->att.nfds)
		return;
	/* every program stops at the cutoff, before the links go one by one */
	if (cutoff && s->skel->bss)
		__atomic_store_n(&s->skel->bss->stop_ns, cutoff, __ATOMIC_SEQ_CST);
	tet_sched_detach(s->sched);
	s->sched = NULL;
	tet_uring_detach(s->uring);
	s->uring = NULL;
	tet_att_release(&s->att);
	s->info.detach_ns = mono_ns() - t0;
}

static const struct tet_uring_info *tet_fb_uring(const struct tet_fb *s)
{
	return &s->uring_info;
}

static const struct tet_sched_info *tet_fb_sched(const struct tet_fb *s)
{
	return &s->sched_info;
}

static int tet_fb_stacks_fd(const struct tet_fb *s)
{
	return bpf_map__fd(s->skel->maps.stacks);
}

static int tet_fb_lost_fd(const struct tet_fb *s)
{
	return bpf_map__fd(s->skel->maps.lost_tasks);
}

static void tet_fb_close(struct tet_fb *s)
{
	if (!s)
		return;
	tet_fb_detach(s, 0);
	tet_sched_detach(s->sched);
	tet_uring_detach(s->uring);
	ring_buffer__free(s->rb);
	tokio_uprobe__destroy(s->skel);
	free(s->tids);
	free(s->tid_idx);
	free(s);
}

/* ---- the capture interface (capture_ops.h) ---- */
static size_t fb_links(const void *b)
{
	return tet_fb_info(b)->uprobes;
}

static size_t fb_prog_ids(const void *b, uint32_t *ids, const char **names, size_t max)
{
	return tet_fb_prog_ids(b, ids, names, max);
}

static const struct tet_sched_info *fb_sched(const void *b)
{
	return tet_fb_sched(b);
}

static const struct tet_uring_info *fb_uring(const void *b)
{
	return tet_fb_uring(b);
}

static int fb_stacks_fd(const void *b)
{
	return tet_fb_stacks_fd(b);
}

static int fb_lost_fd(const void *b)
{
	return tet_fb_lost_fd(b);
}

static int fb_drain(void *b)
{
	return tet_fb_drain(b);
}

static int fb_counters(void *b, struct tet_counters *sum)
{
	return tet_fb_counters(b, sum);
}

static void fb_end(void *b, uint64_t cutoff_ns)
{
	tet_fb_detach(b, cutoff_ns);
}

static void fb_close(void *b)
{
	tet_fb_close(b);
}

static const struct tet_fb_info *fb_info(const void *b)
{
	return tet_fb_info(b);
}

const struct tet_capture_ops tet_fb_ops = {
	.name = "uprobe-fallback",
	.links = fb_links,
	.prog_ids = fb_prog_ids,
	.sched = fb_sched,
	.uring = fb_uring,
	.stacks_fd = fb_stacks_fd,
	.lost_fd = fb_lost_fd,
	.drain = fb_drain,
	.counters = fb_counters,
	.end = fb_end,
	.close = fb_close,
	.fallback = fb_info,
};
