// SPDX-License-Identifier: MIT
/*
 * sampler.c — the capture of --mode sampling (see sampler.h): the uprobe object with only its
 * sched programs, the task id slot's place in its rodata.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfutil.h"
#include "capture_ops.h"
#include "sampler.h"
#include "seterr.h"
#include "tokio_uprobe.skel.h"

struct tet_sp {
	struct tokio_uprobe *skel;
	struct ring_buffer *rb;
	struct tet_sched_opts sched_opts;
	struct tet_sched *sched;
	struct tet_sched_info sched_info;
	bool ended;
};

static void sp_close(void *b);

int tet_sp_open(struct tet_sp **out, const struct tet_sp_opts *o, char *err, size_t len)
{
	struct tet_sp *s;
	struct bpf_program *p;
	int ret;

	*out = NULL;
	if (o->pid <= 0 || !o->profile_hz) {
		seterr(err, len, "the sampling capture needs a process and a sampling rate");
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->skel = tokio_uprobe__open();
	if (!s->skel) {
		seterr(err, len, "cannot open the BPF object: %s", strerror(errno));
		free(s);
		return -ENOMEM;
	}
	s->skel->rodata->target_tgid = (uint32_t)o->pid;
	s->skel->rodata->tls_slot = true;
	s->skel->rodata->tls_tagged = o->tagged;
	s->skel->rodata->tls_id_off = o->id_off;
	s->skel->rodata->poll_lo = o->poll_lo;
	s->skel->rodata->poll_hi = o->poll_hi;
	ret = bpf_map__set_max_entries(s->skel->maps.events, (uint32_t)o->ringbuf_bytes);
	if (ret) {
		seterr(err, len, "ring buffer size %zu refused: %s", o->ringbuf_bytes, strerror(-ret));
		goto fail;
	}
	/* nothing but the sched side: no uprobe, no io_uring hook */
	bpf_object__for_each_program(p, s->skel->obj)
		bpf_program__set_autoload(p, false);
	s->sched_opts.off = false;
	s->sched_opts.profile_hz = o->profile_hz;
	tet_sched_prepare(&(struct tet_sched_progs){ s->skel->progs.tet_switch,
			  s->skel->progs.tet_wakeup, s->skel->progs.tet_sample,
			  s->skel->progs.tet_exit, &s->skel->rodata->exit_group_dead_arg,
			  NULL, NULL }, &s->sched_opts, &s->sched_info);
	tet_btf_release(); /* the set-up's questions are answered: libbpf parses its own */
	ret = tokio_uprobe__load(s->skel);
	if (ret) {
		seterr(err, len, "cannot load the BPF programs: %s", strerror(-ret));
		goto fail;
	}
	s->sched = tet_sched_attach(&(struct tet_sched_progs){ s->skel->progs.tet_switch,
				    s->skel->progs.tet_wakeup, s->skel->progs.tet_sample,
				    s->skel->progs.tet_exit, NULL, NULL, NULL },
				    &s->sched_opts, &s->sched_info);
	if (!s->sched_info.profile_hz) {
		ret = -EOPNOTSUPP;
		seterr(err, len, "the CPU sampler could not be attached: %s",
		       s->sched_info.why_no_profile ? s->sched_info.why_no_profile : "unknown reason");
		goto fail;
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), o->on_event, o->ctx, NULL);
	if (!s->rb) {
		ret = -errno;
		seterr(err, len, "cannot open the ring buffer: %s", strerror(-ret));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	sp_close(s);
	return ret;
}

size_t tet_sp_uprobes(const struct tet_sp *s)
{
	(void)s;
	return 0;
}

/* ---- the capture interface (capture_ops.h) ---- */
static size_t sp_links(const void *b)
{
	(void)b;
	return 0; /* no uprobe, no USDT link: the perf events and tracepoints are in sched() */
}

static size_t sp_prog_ids(const void *b, uint32_t *ids, const char **names, size_t max)
{
	const struct tet_sp *s = b;
	struct bpf_program *ps[] = { s->skel->progs.tet_switch, s->skel->progs.tet_wakeup,
				     s->skel->progs.tet_sample, s->skel->progs.tet_exit };
	size_t n = 0;

	for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]) && n < max; i++) {
		if (!tet_prog_id(ps[i], &ids[n]))
			continue;
		names[n++] = bpf_program__name(ps[i]);
	}
	return n;
}

static const struct tet_sched_info *sp_sched(const void *b)
{
	return &((const struct tet_sp *)b)->sched_info;
}

static int sp_stacks_fd(const void *b)
{
	return bpf_map__fd(((const struct tet_sp *)b)->skel->maps.stacks);
}

static int sp_lost_fd(const void *b)
{
	(void)b;
	return -1;
}

static int sp_drain(void *b)
{
	struct tet_sp *s = b;

	return s->rb ? ring_buffer__consume(s->rb) : 0;
}

static int sp_counters(void *b, struct tet_counters *sum)
{
	return tet_counters_sum(bpf_map__fd(((struct tet_sp *)b)->skel->maps.counters), sum);
}

static int sp_blocking_id(void *b, uint64_t id)
{
	uint8_t one = 1;

	if (bpf_map_update_elem(bpf_map__fd(((struct tet_sp *)b)->skel->maps.blocking_ids), &id,
				&one, BPF_ANY))
		return -errno;
	return 0;
}

static void sp_end(void *b, uint64_t cutoff_ns)
{
	struct tet_sp *s = b;

	if (s->ended)
		return;
	if (cutoff_ns && s->skel->bss)
		__atomic_store_n(&s->skel->bss->stop_ns, cutoff_ns, __ATOMIC_SEQ_CST);
	tet_sched_detach(s->sched);
	s->sched = NULL;
	s->ended = true;
}

static void sp_close(void *b)
{
	struct tet_sp *s = b;

	if (!s)
		return;
	tet_sched_detach(s->sched);
	ring_buffer__free(s->rb);
	tokio_uprobe__destroy(s->skel);
	free(s);
}

const struct tet_capture_ops tet_sp_ops = {
	.name = "sampling",
	.links = sp_links,
	.prog_ids = sp_prog_ids,
	.sched = sp_sched,
	.stacks_fd = sp_stacks_fd,
	.lost_fd = sp_lost_fd,
	.drain = sp_drain,
	.counters = sp_counters,
	.end = sp_end,
	.close = sp_close,
	.blocking_id = sp_blocking_id,
};
