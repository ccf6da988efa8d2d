// SPDX-License-Identifier: MIT
/* hist.c — log-linear histograms (see hist.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"

static size_t g_bytes, g_budget = SIZE_MAX;
static uint64_t g_unbucketed;

void hist_set_budget(size_t bytes)
{
	g_budget = bytes;
}

uint64_t hist_unbucketed(void)
{
	return g_unbucketed;
}

size_t hist_bytes_held(void)
{
	return g_bytes;
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

/* Where the carry array's pointer is kept: after the n blocks (8-byte aligned: n × 64). */
static uint32_t **carry_slot(const struct hist *h)
{
	return (uint32_t **)(void *)(h->c + (size_t)h->n * HIST_SUB);
}

static size_t carry_bytes(unsigned n)
{
	return (size_t)n * HIST_SUB * sizeof(uint32_t);
}

/* Bytes of the budget for n blocks (and the carry array's pointer), with a carry array or
 * not. */
static size_t held_bytes(unsigned n, bool carry)
{
	return n * HIST_BLOCK_BYTES + sizeof(uint32_t *) + (carry ? carry_bytes(n) : 0);
}

/* Room for `more` bytes in the budget (always for an aggregate outside it). */
static bool room(const struct hist *h, size_t more)
{
	return h->outside || (g_bytes <= g_budget && more <= g_budget - g_bytes);
}

static void charge(const struct hist *h, size_t add, size_t sub)
{
	if (!h->outside)
		g_bytes = g_bytes + add - sub;
}

void hist_free(struct hist *h)
{
	bool outside = h->outside;

	if (h->c) {
		uint32_t *carry = *carry_slot(h);

		charge(h, 0, held_bytes(h->n, carry));
		free(carry);
		free(h->c);
	}
	hist_init(h);
	h->outside = outside;
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

/* The blocks widened to hold block b (false: past the budget or out of memory; nothing
 * changed). The counters and carries move to their places in the new span. */
static bool widen(struct hist *h, unsigned b)
{
	unsigned lo = h->n ? h->lo : b, hi = h->n ? h->lo + h->n - 1u : b, n, at;
	uint32_t *carry = h->c ? *carry_slot(h) : NULL, *nc = NULL;
	size_t bytes;
	uint16_t *c;
	void *p;

	if (b < lo)
		lo = b;
	if (b > hi)
		hi = b;
	n = hi - lo + 1;
	at = h->n ? (unsigned)h->lo - lo : 0;
	if (!room(h, held_bytes(n, carry) - (h->n ? held_bytes(h->n, carry) : 0)))
		return false;
	bytes = (size_t)n * HIST_BLOCK_BYTES + sizeof(uint32_t *);
	if (posix_memalign(&p, 64, bytes)) /* a block per cache line */
		return false;
	c = p;
	if (carry && !(nc = calloc((size_t)n * HIST_SUB, sizeof(*nc)))) {
		free(c);
		return false;
	}
	memset(c, 0, bytes);
	if (h->n) {
		memcpy(c + (size_t)at * HIST_SUB, h->c, (size_t)h->n * HIST_BLOCK_BYTES);
		if (carry)
			memcpy(nc + (size_t)at * HIST_SUB, carry, carry_bytes(h->n));
	}
	charge(h, held_bytes(n, carry), h->n ? held_bytes(h->n, carry) : 0);
	free(carry);
	free(h->c);
	h->c = c;
	h->lo = (uint8_t)lo;
	h->n = (uint8_t)n;
	*carry_slot(h) = nc;
	return true;
}

/* Block b held (widened to it if need be). */
static void widen_to(struct hist *h, unsigned b)
{
	if ((unsigned)(b - h->lo) >= h->n)
		widen(h, b);
}

/* Bucket k's counter holds `total` (past 65535): the 65536s into its carry. With no room for
 * the carry array the counter stays at its most, the rest counted unbucketed (the fullest
 * bucket is still the fullest). */
static int carry(struct hist *h, size_t k, uint64_t total)
{
	uint32_t **slot = carry_slot(h);

	if (!*slot && room(h, carry_bytes(h->n)) &&
	    (*slot = calloc((size_t)h->n * HIST_SUB, sizeof(**slot))))
		charge(h, carry_bytes(h->n), 0);
	if (!*slot || total >> 16 > UINT32_MAX - (*slot)[k]) {
		h->c[k] = UINT16_MAX;
		g_unbucketed += total - UINT16_MAX;
		return -ENOMEM;
	}
	h->c[k] = (uint16_t)total;
	(*slot)[k] += (uint32_t)(total >> 16);
	return 0;
}

/* n more values in bucket s of block b (-ENOMEM: no room for the block or a carry). */
static int bucket_add_n(struct hist *h, unsigned b, unsigned s, uint64_t n)
{
	uint64_t total;
	size_t k;

	if ((unsigned)(b - h->lo) >= h->n && !widen(h, b)) {
		g_unbucketed += n;
		return -ENOMEM;
	}
	k = (size_t)(b - h->lo) * HIST_SUB + s;
	total = h->c[k] + n;
	if (total >> 16)
		return carry(h, k, total);
	h->c[k] = (uint16_t)total;
	return 0;
}

/* The count in bucket k. */
static uint64_t bucket_count(const struct hist *h, size_t k)
{
	const uint32_t *carry = *carry_slot(h);

	return h->c[k] + (carry ? (uint64_t)carry[k] << 16 : 0);
}

/* Value v into its bucket (counted in the stats already). */
static int bucket_add(struct hist *h, uint64_t v)
{
	unsigned b, s, i;
	size_t k;

	locate(v, &b, &s);
	i = b - h->lo;
	if (__builtin_expect(i >= h->n, 0))
		return bucket_add_n(h, b, s, 1);
	k = (size_t)i * HIST_SUB + s;
	if (__builtin_expect(!++h->c[k], 0))
		return carry(h, k, 1u << 16);
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
	if (src->n) { /* dst spans src's blocks at once (if it can: else block by block below) */
		widen_to(dst, src->lo);
		widen_to(dst, src->lo + src->n - 1u);
	}
	for (unsigned i = 0; i < src->n; i++)
		for (unsigned s = 0; s < HIST_SUB; s++) {
			uint64_t n = bucket_count(src, (size_t)i * HIST_SUB + s);

			if (n && bucket_add_n(dst, src->lo + i, s, n))
				err = -ENOMEM;
		}
	return err;
}

/* Calls fn on every non-empty bucket, lowest first, until it returns true (then true). */
static bool walk(const struct hist *h, bool (*fn)(uint64_t lo, uint64_t hi, uint64_t n, void *ctx),
		 void *ctx)
{
	settled(h);
	for (unsigned i = 0; i < h->n; i++)
		for (unsigned s = 0; s < HIST_SUB; s++) {
			uint64_t n = bucket_count(h, (size_t)i * HIST_SUB + s), lo, hi;

			if (!n)
				continue;
			bucket_range(h->lo + i, s, &lo, &hi);
			if (fn(lo, hi, n, ctx))
				return true;
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
