// SPDX-License-Identifier: MIT
/* hist.c — log-linear histograms (see hist.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
}

void hist_free(struct hist *h)
{
	for (int b = 0; b < HIST_BLOCKS; b++)
		free(h->blocks[b]);
	hist_init(h);
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

static uint64_t *block_get(struct hist *h, unsigned b)
{
	if (!h->blocks[b])
		h->blocks[b] = calloc(HIST_SUB, sizeof(uint64_t));
	return h->blocks[b];
}

int hist_add_slow(struct hist *h, uint64_t v)
{
	unsigned b, s;
	uint64_t *blk;

	add_stats(h, 1, v, v, v);
	locate(v, &b, &s);
	blk = block_get(h, b);
	if (!blk)
		return -ENOMEM;
	blk[s]++;
	return 0;
}

int hist_merge(struct hist *dst, const struct hist *src)
{
	int err = 0;

	if (!src->count)
		return 0;
	add_stats(dst, src->count, src->sum, src->min, src->max);
	for (unsigned b = 0; b < HIST_BLOCKS; b++) {
		uint64_t *blk;

		if (!src->blocks[b])
			continue;
		blk = block_get(dst, b);
		if (!blk) {
			err = -ENOMEM;
			continue;
		}
		for (unsigned s = 0; s < HIST_SUB; s++)
			blk[s] += src->blocks[b][s];
	}
	return err;
}

uint64_t hist_quantile(const struct hist *h, double q)
{
	uint64_t target, seen = 0;

	if (!h->count)
		return 0;
	if (q <= 0)
		return h->min;
	if (q >= 1)
		return h->max;
	/* the rank of the value at quantile q, 1-based: ceil(q * count) */
	target = (uint64_t)(q * (double)h->count);
	if ((double)target < q * (double)h->count)
		target++;
	if (target == 0)
		target = 1;
	for (unsigned b = 0; b < HIST_BLOCKS; b++) {
		if (!h->blocks[b])
			continue;
		for (unsigned s = 0; s < HIST_SUB; s++) {
			uint64_t lo, hi;

			seen += h->blocks[b][s];
			if (seen < target)
				continue;
			bucket_range(b, s, &lo, &hi);
			if (hi > h->max)
				hi = h->max;
			if (hi < h->min)
				hi = h->min;
			return hi;
		}
	}
	return h->max; /* counts lost to -ENOMEM */
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

void hist_for_each_bucket(const struct hist *h, hist_bucket_cb cb, void *ctx)
{
	for (unsigned b = 0; b < HIST_BLOCKS; b++) {
		if (!h->blocks[b])
			continue;
		for (unsigned s = 0; s < HIST_SUB; s++) {
			uint64_t lo, hi;

			if (!h->blocks[b][s])
				continue;
			bucket_range(b, s, &lo, &hi);
			cb(lo, hi, h->blocks[b][s], ctx);
		}
	}
}
