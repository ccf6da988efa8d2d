// SPDX-License-Identifier: MIT
/* hist.c — log-linear histograms (see hist.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"

static size_t g_blocks, g_budget = SIZE_MAX;
static uint64_t g_unbucketed;

void hist_set_block_budget(size_t blocks)
{
	g_budget = blocks;
}

uint64_t hist_unbucketed(void)
{
	return g_unbucketed;
}

size_t hist_blocks_held(void)
{
	return g_blocks;
}

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
}

void hist_init_outside(struct hist *h)
{
	hist_init(h);
	h->outside = true;
}

void hist_free(struct hist *h)
{
	bool outside = h->outside;

	for (unsigned i = 0; i < h->n; i++)
		if (h->blk[i]) {
			free(h->blk[i]);
			g_blocks -= !outside;
		}
	free(h->blk);
	hist_init(h);
	h->outside = outside;
}

/* The counters of block b, NULL while it is empty. */
static uint64_t *block_at(const struct hist *h, unsigned b)
{
	unsigned i = b - h->lo;

	return i < h->n ? h->blk[i] : NULL;
}

static void locate(uint64_t v, unsigned *block, unsigned *sub)
{
	unsigned m;

	if (v < HIST_SUB) {
		*block = 0;
		*sub = (unsigned)v;
		return;
	}
	m = 63 - (unsigned)__builtin_clzll(v);
	*block = m - HIST_SUB_BITS + 1;
	*sub = (unsigned)(v >> (m - HIST_SUB_BITS)) - HIST_SUB;
}

/* Inclusive value range of a bucket. */
static void bucket_range(unsigned block, unsigned sub, uint64_t *lo, uint64_t *hi)
{
	unsigned shift;

	if (block == 0) {
		*lo = *hi = sub;
		return;
	}
	shift = block - 1;
	*lo = ((uint64_t)HIST_SUB + sub) << shift;
	*hi = *lo + ((1ull << shift) - 1);
}

static void add_stats(struct hist *h, uint64_t n, uint64_t sum, uint64_t min, uint64_t max)
{
	if (!h->count || min < h->min)
		h->min = min;
	if (!h->count || max > h->max)
		h->max = max;
	h->count += n;
	h->sum = h->sum + sum < h->sum ? UINT64_MAX : h->sum + sum;
}

/* The counters of block b, made (with its slot) if need be; NULL: out of memory. */
static uint64_t *block_get(struct hist *h, unsigned b)
{
	unsigned lo = h->n ? h->lo : b, hi = h->n ? h->lo + h->n - 1u : b;

	if (b < lo)
		lo = b;
	if (b > hi)
		hi = b;
	if (!h->n || lo != h->lo || hi - lo + 1 != h->n) { /* widen the slots to lo .. hi */
		uint64_t **v = calloc(hi - lo + 1, sizeof(*v));

		if (!v)
			return NULL;
		if (h->n)
			memcpy(v + (h->lo - lo), h->blk, h->n * sizeof(*v));
		free(h->blk);
		h->blk = v;
		h->lo = (uint8_t)lo;
		h->n = (uint8_t)(hi - lo + 1);
	}
	if (!h->blk[b - lo] && (h->outside || g_blocks < g_budget) &&
	    (h->blk[b - lo] = calloc(HIST_SUB, sizeof(uint64_t))))
		g_blocks += !h->outside;
	return h->blk[b - lo];
}

/* Value v into its bucket (counted in the stats already). */
static int bucket_add(struct hist *h, uint64_t v)
{
	unsigned b, s;
	uint64_t *blk;

	locate(v, &b, &s);
	blk = block_at(h, b);
	if (!blk)
		blk = block_get(h, b);
	if (!blk) {
		g_unbucketed++;
		return -ENOMEM;
	}
	blk[s]++;
	return 0;
}

/* The waiting values into their buckets (see hist.h: a reader's settling changes the
 * representation only, hence the const). */
static const struct hist *settled(const struct hist *c)
{
	struct hist *h = (struct hist *)c;
	uint8_t n = h->npend;

	h->npend = 0;
	for (uint8_t i = 0; i < n; i++)
		bucket_add(h, h->pend[i]);
	return c;
}

int hist_add_slow(struct hist *h, uint64_t v)
{
	settled(h);
	add_stats(h, 1, v, v, v);
	return bucket_add(h, v);
}

int hist_merge(struct hist *dst, const struct hist *src)
{
	int err = 0;

	if (!src->count)
		return 0;
	settled(dst);
	settled(src);
	add_stats(dst, src->count, src->sum, src->min, src->max);
	for (unsigned i = 0; i < src->n; i++) {
		const uint64_t *from = src->blk[i];
		uint64_t *blk;

		if (!from)
			continue;
		blk = block_get(dst, src->lo + i);
		if (!blk) {
			for (unsigned s = 0; s < HIST_SUB; s++)
				g_unbucketed += from[s];
			err = -ENOMEM;
			continue;
		}
		for (unsigned s = 0; s < HIST_SUB; s++)
			blk[s] += from[s];
	}
	return err;
}

/* Calls fn on every non-empty bucket, lowest first, until it returns true (then true). */
static bool walk(const struct hist *h, bool (*fn)(uint64_t lo, uint64_t hi, uint64_t n, void *ctx),
		 void *ctx)
{
	settled(h);
	for (unsigned b = h->lo; b < (unsigned)h->lo + h->n; b++) {
		const uint64_t *blk = block_at(h, b);

		if (!blk)
			continue;
		for (unsigned s = 0; s < HIST_SUB; s++) {
			uint64_t lo, hi;

			if (!blk[s])
				continue;
			bucket_range(b, s, &lo, &hi);
			if (fn(lo, hi, blk[s], ctx))
				return true;
		}
	}
	return false;
}

struct rank_walk {
	uint64_t target, seen, hi;
};

/* the bucket holding the target-th value (1-based) */
static bool rank_step(uint64_t lo, uint64_t hi, uint64_t n, void *ctx)
{
	struct rank_walk *r = ctx;

	(void)lo;
	r->seen += n;
	r->hi = hi;
	return r->seen >= r->target;
}

uint64_t hist_quantile(const struct hist *h, double q)
{
	struct rank_walk r = { 0 };

	if (!h->count)
		return 0;
	if (q <= 0)
		return h->min;
	if (q >= 1)
		return h->max;
	/* the rank of the value at quantile q, 1-based: ceil(q * count) */
	r.target = (uint64_t)(q * (double)h->count);
	if ((double)r.target < q * (double)h->count)
		r.target++;
	if (r.target == 0)
		r.target = 1;
	if (!walk(h, rank_step, &r))
		return h->max; /* counts lost to -ENOMEM */
	if (r.hi > h->max)
		r.hi = h->max;
	if (r.hi < h->min)
		r.hi = h->min;
	return r.hi;
}

void hist_summarize(const struct hist *h, struct hist_summary *s)
{
	s->count = h->count;
	s->sum = h->sum;
	s->min = h->count ? h->min : 0;
	s->max = h->count ? h->max : 0;
	s->p50 = hist_quantile(h, 0.50);
	s->p90 = hist_quantile(h, 0.90);
	s->p99 = hist_quantile(h, 0.99);
	s->mean = h->count ? (double)h->sum / (double)h->count : 0;
}

struct each_walk {
	hist_bucket_cb cb;
	void *ctx;
};

static bool each_step(uint64_t lo, uint64_t hi, uint64_t n, void *ctx)
{
	const struct each_walk *e = ctx;

	e->cb(lo, hi, n, e->ctx);
	return false;
}

void hist_for_each_bucket(const struct hist *h, hist_bucket_cb cb, void *ctx)
{
	struct each_walk e = { cb, ctx };

	walk(h, each_step, &e);
}
