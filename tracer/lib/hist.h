/* SPDX-License-Identifier: MIT */
/*
 * hist.h — log-linear (HDR-style) histograms of nanosecond values.
 *
 * Values below 2^HIST_SUB_BITS are counted exactly; above, each power of two is split into
 * 2^HIST_SUB_BITS equal buckets, so a bucket's width is at most 1/2^HIST_SUB_BITS of its lower
 * bound: every percentile is reported within HIST_REL_ERR relative error (and never above the
 * recorded maximum). Count, sum, min and max are exact.
 *
 * Storage: one block of 2^HIST_SUB_BITS 16-bit counters (64 bytes, one cache line) per
 * power of two between the lowest and the highest used, in one allocation — so an empty
 * histogram costs 72 bytes and one of polls between 1 µs and 1 ms ~11 blocks (a tracer keeps
 * three per live task and adds to thousands of them in turn: the blocks of one task's polls
 * fit in a few lines, with no pointer between). A counter that would wrap carries into a
 * 32-bit array of the same shape, made the first time one does. Values up to 2^63 are
 * accepted.
 *
 * Adding a value touches the histogram itself only: count, sum, min and max at once, the
 * bucket later — up to HIST_PEND values below 2^32 wait in the histogram and go to their
 * buckets together (each bucket is another cache line). Whatever reads the buckets
 * (quantiles, the bucket walk, a merge) settles them first: a `const struct hist` is constant
 * in value, not in representation, and is read by the thread that adds to it.
 */
#ifndef TET_HIST_H
#define TET_HIST_H
#include <stdbool.h>
#include <stdint.h>

#define HIST_SUB_BITS 5
#define HIST_SUB      (1u << HIST_SUB_BITS)
#define HIST_BLOCKS   (64 - HIST_SUB_BITS + 1)  /* block 0: exact values; block b: 2^(b+S-1).. */
#define HIST_BLOCK_BYTES (HIST_SUB * sizeof(uint16_t))
#define HIST_REL_ERR  (1.0 / HIST_SUB)
#define HIST_PEND     7                        /* values waiting for their buckets */

struct hist {
	uint64_t count;
	uint64_t sum;     /* saturates at UINT64_MAX */
	uint64_t min, max;
	uint16_t *c;      /* c[i * HIST_SUB + s]: bucket s of block lo + i (its carry array's
			   * pointer follows the n blocks); NULL while n = 0 */
	uint32_t pend[HIST_PEND]; /* values counted above, not yet in their buckets */
	uint8_t npend;
	uint8_t lo, n;    /* blocks lo .. lo + n - 1 are held */
	bool outside;     /* a report's temporary aggregate: outside the budget (below) */
};

struct hist_summary {
	uint64_t count, sum, min, max, p50, p90, p99;
	double mean;
};

void hist_init(struct hist *h);
/* A temporary aggregate of histograms the budget already holds (a report's "all sites"): its
 * blocks are not counted against the budget (at most HIST_BLOCKS, freed by hist_free). */
void hist_init_outside(struct hist *h);
void hist_free(struct hist *h);
/* Returns 0, or -ENOMEM (the value still counts in count/sum/min/max; a value that waited
 * and found no block is counted in hist_unbucketed() when it is settled). */
int hist_add_slow(struct hist *h, uint64_t v);
static inline int hist_add(struct hist *h, uint64_t v)
{
	if (!h->count || h->npend == HIST_PEND || v > UINT32_MAX || h->sum + v < h->sum)
		return hist_add_slow(h, v);
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->count++;
	h->sum += v;
	h->pend[h->npend++] = (uint32_t)v;
	return 0;
}
int hist_merge(struct hist *dst, const struct hist *src);
/* Every histogram of the process shares one budget of bytes for its blocks and carries (what a
 * traced process makes the tracer keep must be bounded, and a hostile one can spread its
 * values over every power of two): past it a value counts in count/sum/min/max but in no
 * bucket (counted in hist_unbucketed(); quantiles lean to the maximum) — and a bucket whose
 * counter is full with no room for its carry array stays at 65535, its further values counted
 * in hist_unbucketed() the same way. */
void hist_set_budget(size_t bytes);
uint64_t hist_unbucketed(void);
size_t hist_bytes_held(void);
/* q in [0, 1]: the smallest bucket upper bound at or below which a fraction q of the values
 * lie, clamped to [min, max]; 0 for an empty histogram. */
uint64_t hist_quantile(const struct hist *h, double q);
void hist_summarize(const struct hist *h, struct hist_summary *s);

/* Bucket walk for exporters (Prometheus, heatmaps): calls cb for each non-empty bucket in
 * increasing order with its inclusive value range. */
typedef void (*hist_bucket_cb)(uint64_t lo, uint64_t hi, uint64_t count, void *ctx);
void hist_for_each_bucket(const struct hist *h, hist_bucket_cb cb, void *ctx);

#endif
