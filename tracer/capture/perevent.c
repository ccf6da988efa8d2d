// SPDX-License-Identifier: MIT
/*
 * perevent.c — per-event USDT capture (see perevent.h).
 *
 * One BPF object (bpf/tokio_usdt.bpf.c) holds one program per probe. Programs of probes that
 * are not requested, or present in no target file, get autoload off, so they are never
 * loaded. Each (file, probe) pair is one bpf_program__attach_usdt(): libbpf finds the probe's
 * sites in the file, decodes their argument specs, and creates one uprobe per site with the
 * semaphore's file offset as ref_ctr_offset, so the kernel raises the semaphore in every
 * process mapping the file (including processes started later, for pid -1) and lowers it
 * again when the uprobe goes away. The links are ours (not the skeleton's) because one
 * program may be attached to several files (executable + shared library).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfutil.h"
#include "decode.h"
#include "discover.h"
#include "kuring.h"
#include "perevent.h"
#include "seterr.h"
#include "usdtobj.h"
#include "vocab.h"
#include "tokio_usdt.skel.h"

struct tet_pe {
	struct tokio_usdt *skel;
	struct ring_buffer *rb;
	struct bpf_link **links;
	size_t nlinks;
	unsigned probes;
	struct tet_pe_opts o;
	struct tet_sched *sched;
	struct tet_sched_info sched_info;
	struct tet_uring *uring;
	struct tet_uring_info uring_info;
};


static struct bpf_program *prog_of(const struct tet_pe *s, int ev)
{
	const struct tokio_usdt *skel = s->skel;

	switch (ev) {
	case TET_EV_SPAWN: return skel->progs.tet_spawn;
	case TET_EV_POLL_BEGIN: return skel->progs.tet_poll_begin;
	case TET_EV_POLL_END: return skel->progs.tet_poll_end;
	case TET_EV_YIELD: return skel->progs.tet_yielded;
	case TET_EV_WAKE: return skel->progs.tet_wake;
	case TET_EV_WAKER_CLONE: return skel->progs.tet_waker_clone;
	case TET_EV_WAKER_DROP: return skel->progs.tet_waker_drop;
	case TET_EV_TERMINATE: return skel->progs.tet_terminate;
	case TET_EV_PARK: return skel->progs.tet_park;
	case TET_EV_UNPARK: return skel->progs.tet_unpark;
	case TET_EV_WAIT: return skel->progs.tet_wait;
	case TET_EV_META: return skel->progs.tet_meta;
	case TET_EV_LOCK: return skel->progs.tet_lock;
	}
	return NULL;
}

/* Detaching takes ~0.1 s per uprobe and goes probe by probe, so while it runs some probes
 * still fire and others no longer do (e.g. a task spawned after task_spawn was detached and
 * polled before task_poll_begin was): what happens after the capture's end is left out. */
static int ring_cb(void *ctx, void *data, size_t size)
{
	struct tet_pe *s = ctx;
	const struct tet_hdr *h = data;
	struct tet_spawn_rec copy;

	if (size >= sizeof(struct tet_spawn_rec) && h->type == TET_EV_SPAWN)
		return s->o.on_event(s->o.ctx, (void *)tet_decode_spawn(data, &copy), size);
	return s->o.on_event(s->o.ctx, data, size);
}

static void pe_close(void *b);

int tet_pe_open(struct tet_pe **out, const struct tet_pe_opts *o, const struct tet_targets *t,
		char *err, size_t len)
{
	struct tet_pe *s;
	int ret;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->probes = o->probes & t->probes;
	if (!s->probes) {
		seterr(err, len, "none of the requested probes exists in %s", t->exe ? t->exe : "the target");
		free(s);
		return -ENODATA;
	}
	ret = tet_usdt_open(&s->skel, o->pid, err, len);
	if (ret)
		goto fail;
	{
		unsigned native = 0, other = 0;

		for (size_t i = 0; i < t->n; i++)
			if (t->v[i].dialect->native)
				native |= t->v[i].probes;
			else
				other |= t->v[i].probes;
		for (int ev = 0; ev < TET_EV_COUNT; ev++)
			bpf_program__set_autoload(prog_of(s, ev), !!(s->probes & native & (1u << ev)));
		bpf_program__set_autoload(s->skel->progs.tet_dialect,
					  !!(s->probes & other & ~TET_PROBE_BIT(TET_EV_SPAWN)));
		bpf_program__set_autoload(s->skel->progs.tet_dialect_spawn,
					  !!(s->probes & other & TET_PROBE_BIT(TET_EV_SPAWN)));
	}
	bpf_program__set_autoload(s->skel->progs.tet_batch, false);
	bpf_program__set_autoload(s->skel->progs.tet_nop, false);
	bpf_program__set_autoload(s->skel->progs.tet_ur_poll_begin, false);
	bpf_program__set_autoload(s->skel->progs.tet_ur_poll_end, false);
	/* io_uring: the poll programs report the SQ ranges (only with both poll probes) */
	if (tet_usdt_uring_prepare(s->skel, o->no_uring, tet_targets_exe_path(t, o->pid),
				   &s->uring_info)) {
		s->uring_info.hooks = (s->probes & TET_CLASS_POLL) == TET_CLASS_POLL;
		if (!s->uring_info.hooks)
			s->uring_info.why_no_hooks = "the poll probes are not attached (--probes): io_uring requests are not linked to tasks";
	}
	/* polls open per thread: only with both poll probes */
	s->skel->rodata->track_polls = tet_usdt_sched_prepare(s->skel, &o->sched, &s->sched_info) &&
		(s->probes & TET_CLASS_POLL) == TET_CLASS_POLL;
	ret = tet_usdt_load(s->skel, o->ringbuf_bytes, err, len);
	if (ret)
		goto fail;
	for (size_t i = 0; i < t->n; i++) {
		for (int ev = 0; ev < TET_EV_COUNT; ev++) {
			struct bpf_link *l, **v;

			const struct tet_dprobe *dp = t->v[i].dprobe[ev];
			LIBBPF_OPTS(bpf_usdt_opts, uo);
			struct bpf_program *prog = prog_of(s, ev);
			const char *name = tet_probe_name(ev);

			if (!(s->probes & t->v[i].probes & (1u << ev)))
				continue;
			if (!t->v[i].dialect->native) {
				/* another dialect: the generic program, told the layout by cookie */
				prog = ev == TET_EV_SPAWN ? s->skel->progs.tet_dialect_spawn
							  : s->skel->progs.tet_dialect;
				name = dp->name;
				uo.usdt_cookie = tet_dprobe_cookie(dp);
			}
			l = bpf_program__attach_usdt(prog, o->pid > 0 ? o->pid : -1,
						     t->v[i].attach_path, "tokio", name, &uo);
			if (!l) {
				ret = -errno;
				seterr(err, len, "cannot attach tokio:%s in %s: %s%s%s", name,
				       t->v[i].path, strerror(-ret),
				       *tet_libbpf_last_error() ? " — libbpf: " : "",
				       tet_libbpf_last_error());
				goto fail;
			}
			v = realloc(s->links, (s->nlinks + 1) * sizeof(*v));
			if (!v) {
				bpf_link__destroy(l);
				ret = -ENOMEM;
				seterr(err, len, "out of memory");
				goto fail;
			}
			s->links = v;
			s->links[s->nlinks++] = l;
		}
	}
	s->o = *o;
	s->sched = tet_usdt_sched_attach(s->skel, &o->sched, &s->sched_info);
	s->uring = tet_usdt_uring_attach(s->skel, &s->uring_info);
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), ring_cb, s, NULL);
	if (!s->rb) {
		ret = -errno;
		seterr(err, len, "cannot open the ring buffer: %s", strerror(-ret));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	pe_close(s);
	return ret;
}

static size_t pe_links(const void *b)
{
	return ((const struct tet_pe *)b)->nlinks;
}

static size_t pe_prog_ids(const void *b, uint32_t *ids, const char **names, size_t max)
{
	const struct tet_pe *s = b;
	size_t n = 0;

	for (int ev = 0; ev < TET_EV_COUNT && n < max; ev++) {
		struct bpf_program *p = prog_of(s, ev);

		if (!tet_prog_id(p, &ids[n]))
			continue;
		names[n] = bpf_program__name(p);
		n++;
	}
	return n;
}

static const struct tet_sched_info *pe_sched(const void *b)
{
	return &((const struct tet_pe *)b)->sched_info;
}

static const struct tet_uring_info *pe_uring(const void *b)
{
	return &((const struct tet_pe *)b)->uring_info;
}

static int pe_stacks_fd(const void *b)
{
	const struct tet_pe *s = b;

	return s->skel ? bpf_map__fd(s->skel->maps.stacks) : -1;
}

static int pe_lost_fd(const void *b)
{
	const struct tet_pe *s = b;

	return s->skel ? bpf_map__fd(s->skel->maps.lost_tasks) : -1;
}

static int pe_drain(void *b)
{
	struct tet_pe *s = b;

	return s->rb ? ring_buffer__consume(s->rb) : 0;
}

static int pe_counters(void *b, struct tet_counters *sum)
{
	struct tet_pe *s = b;
	int ret = tet_counters_sum(bpf_map__fd(s->skel->maps.counters), sum);

	return ret;
}

static void pe_end(void *b, uint64_t cutoff_ns)
{
	struct tet_pe *s = b;

	/* every program stops at the cutoff, before the links go one by one */
	if (cutoff_ns && s->skel && s->skel->bss)
		__atomic_store_n(&s->skel->bss->stop_ns, cutoff_ns, __ATOMIC_SEQ_CST);
	tet_sched_detach(s->sched);
	s->sched = NULL;
	tet_uring_detach(s->uring);
	s->uring = NULL;
	for (size_t i = 0; i < s->nlinks; i++)
		bpf_link__destroy(s->links[i]);
	free(s->links);
	s->links = NULL;
	s->nlinks = 0;
}

static void pe_close(void *b)
{
	struct tet_pe *s = b;

	if (!s)
		return;
	pe_end(s, 0);
	ring_buffer__free(s->rb);
	tokio_usdt__destroy(s->skel);
	free(s);
}

const struct tet_capture_ops tet_pe_ops = {
	.name = "per-event",
	.links = pe_links,
	.prog_ids = pe_prog_ids,
	.sched = pe_sched,
	.uring = pe_uring,
	.stacks_fd = pe_stacks_fd,
	.lost_fd = pe_lost_fd,
	.drain = pe_drain,
	.counters = pe_counters,
	.end = pe_end,
	.close = pe_close,
};
