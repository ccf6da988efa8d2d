// SPDX-License-Identifier: MIT
/*
 * capture.c — the capture session (see capture.h): the backend the targets and options call
 * for, opened with its own options, then used through its operations table (capture_ops.h)
 * only. The session owns the capture's end: it picks the instant, hands it to the backend
 * (whose BPF side stops at it) and leaves out every record stamped later, whichever backend
 * it came through.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "batchcap.h"
#include "capture.h"
#include "decode.h"
#include "fallback.h"
#include "perevent.h"
#include "sampler.h"
#include "seterr.h"
#include "symbols.h"

struct tet_session {
	const struct tet_capture_ops *ops;
	void *b;                     /* the backend */
	unsigned probes;             /* attached (bits of enum tet_event) */
	struct tet_session_opts o;   /* the caller's */
	uint64_t cutoff_ns;          /* the capture's end (0: running) */
	uint64_t late[TET_EV_COUNT]; /* events stamped after it (the BPF side stops at it, but an
				      * event that passed that check can be stamped just after) */
};

/* Every record of every backend comes through here: what is stamped after the capture's end
 * is neither analyzed nor counted as a hit. */
static int session_event(void *ctx, void *data, size_t size)
{
	struct tet_session *s = ctx;

	if (tet_decode_late(s->cutoff_ns, data, size, s->late))
		return 0;
	return s->o.on_event(s->o.ctx, data, size);
}

static int open_fallback(struct tet_session *s, const struct tet_session_opts *o,
			 const struct tet_targets *t, char *err, size_t len)
{
	struct tet_fb_opts fo = { .pid = o->pid, .probes = o->probes,
				  .ringbuf_bytes = o->ringbuf_bytes, .sched = o->sched,
				  .no_uring = o->no_uring, .on_event = session_event, .ctx = s };
	struct tet_fb *fb;
	int ret = tet_fb_open(&fb, &fo, t->fb_attach, t->syms, err, len);

	if (ret)
		return ret;
	s->ops = &tet_fb_ops;
	s->b = fb;
	s->probes = tet_fb_probes(fb);
	return 0;
}

static int open_batched(struct tet_session *s, const struct tet_session_opts *o,
			const struct tet_targets *t, char *err, size_t len)
{
	struct tet_bc_opts bo = { .pid = o->pid, .ringbuf_bytes = o->ringbuf_bytes,
				  .sample_rate = o->sample_rate ? o->sample_rate : 1,
				  .adaptive = o->adaptive, .max_cpu = o->max_cpu,
				  .sched = o->sched, .no_uring = o->no_uring,
				  .on_event = session_event, .ctx = s, .msgs = o->msgs };
	struct tet_bc *bc;
	int ret;

	bo.on_raw = o->on_raw;
	bo.no_decode = o->on_raw && o->no_decode;
	bo.raw_ctx = o->ctx;
	ret = tet_bc_open(&bc, &bo, t, err, len);
	if (ret)
		return ret;
	s->ops = &tet_bc_ops;
	s->b = bc;
	/* every event of every task, whatever --probes says: the records are one stream */
	s->probes = t->probes;
	return 0;
}

static int open_per_event(struct tet_session *s, const struct tet_session_opts *o,
			  const struct tet_targets *t, char *err, size_t len)
{
	struct tet_pe_opts po = { .pid = o->pid, .probes = o->probes,
				  .ringbuf_bytes = o->ringbuf_bytes, .sched = o->sched,
				  .no_uring = o->no_uring, .on_event = session_event, .ctx = s };
	struct tet_pe *pe;
	int ret = tet_pe_open(&pe, &po, t, err, len);

	if (ret)
		return ret;
	s->ops = &tet_pe_ops;
	s->b = pe;
	s->probes = o->probes & t->probes;
	return 0;
}

static int open_sampling(struct tet_session *s, const struct tet_session_opts *o, char *err,
			 size_t len)
{
	struct tet_sp_opts so = { .pid = o->pid, .ringbuf_bytes = o->ringbuf_bytes,
				  .profile_hz = o->sampler.profile_hz, .id_off = o->sampler.id_off,
				  .tagged = o->sampler.tagged, .poll_lo = o->sampler.poll_lo,
				  .poll_hi = o->sampler.poll_hi, .on_event = session_event, .ctx = s };
	struct tet_sp *sp;
	int ret = tet_sp_open(&sp, &so, err, len);

	if (ret)
		return ret;
	s->ops = &tet_sp_ops;
	s->b = sp;
	s->probes = 0;   /* no probe at all */
	return 0;
}

int tet_session_open(struct tet_session **out, const struct tet_session_opts *o,
		     const struct tet_targets *t, char *err, size_t len)
{
	struct tet_session *s = calloc(1, sizeof(*s));
	int ret;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->o = *o;
	ret = o->sampling ? open_sampling(s, o, err, len) :
	      t->fallback ? open_fallback(s, o, t, err, len) :
	      o->batched ? open_batched(s, o, t, err, len) : open_per_event(s, o, t, err, len);
	if (ret) {
		free(s);
		return ret;
	}
	*out = s;
	return 0;
}

unsigned tet_session_probes(const struct tet_session *s)
{
	return s->probes;
}

size_t tet_session_links(const struct tet_session *s)
{
	return s->ops->links(s->b);
}

const struct tet_bc_info *tet_session_batch_info(const struct tet_session *s)
{
	return s->ops->batch_info ? s->ops->batch_info(s->b) : NULL;
}

const struct tb_stats *tet_session_batch_stats(const struct tet_session *s)
{
	return s->ops->batch_stats ? s->ops->batch_stats(s->b) : NULL;
}

double tet_session_backlog(const struct tet_session *s)
{
	return s->ops->backlog ? s->ops->backlog(s->b) : -1.0;
}

struct tb *tet_session_decoder(struct tet_session *s)
{
	return s->ops->decoder ? s->ops->decoder(s->b) : NULL;
}

const struct tet_fb_info *tet_session_fallback(const struct tet_session *s)
{
	return s->ops->fallback ? s->ops->fallback(s->b) : NULL;
}

size_t tet_session_prog_ids(const struct tet_session *s, uint32_t *ids, const char **names,
			    size_t max)
{
	return s->ops->prog_ids(s->b, ids, names, max);
}

const struct tet_sched_info *tet_session_sched(const struct tet_session *s)
{
	return s->ops->sched(s->b);
}

const struct tet_uring_info *tet_session_uring(const struct tet_session *s)
{
	return s->ops->uring ? s->ops->uring(s->b) : NULL;   /* the sampler: none */
}

int tet_session_stacks_fd(const struct tet_session *s)
{
	return s->ops->stacks_fd(s->b);
}

int tet_session_lost_fd(const struct tet_session *s)
{
	return s->ops->lost_fd(s->b);
}

int tet_session_drain(struct tet_session *s)
{
	return s->ops->drain(s->b);
}

int tet_session_blocking_id(struct tet_session *s, uint64_t id)
{
	return s->ops->blocking_id ? s->ops->blocking_id(s->b, id) : -EOPNOTSUPP;
}

int tet_session_counters(struct tet_session *s, struct tet_counters *sum)
{
	int ret = s->ops->counters(s->b, sum);

	/* probe hits of the capture: those after its end were not analyzed */
	for (int i = 0; !ret && i < TET_EV_COUNT; i++)
		sum->seen[i] -= s->late[i] < sum->seen[i] ? s->late[i] : sum->seen[i];
	return ret;
}

void tet_session_end(struct tet_session *s, uint64_t cutoff_ns)
{
	if (s->cutoff_ns)
		return;
	if (!cutoff_ns) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts); /* bpf_ktime_get_ns()'s clock */
		cutoff_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	s->cutoff_ns = cutoff_ns;
	s->ops->end(s->b, cutoff_ns);
}

void tet_session_close(struct tet_session *s)
{
	if (!s)
		return;
	s->ops->close(s->b);
	free(s);
}
