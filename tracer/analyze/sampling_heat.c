// SPDX-License-Identifier: MIT
/*
 * sampling_heat.c — `trace --mode sampling`'s worker heat map (see sampling.h): per thread of the
 * target and time bucket, how much of the bucket it spent on CPU in async polls, on CPU outside
 * them, and off CPU. Pure: it reads the records sa_analyze sorted and classified.
 *
 * What each figure is worth. cpu-clock samples fire only while a thread runs: n samples in a
 * bucket estimate n periods on CPU, off by up to a period or two (a sample is put whole in the
 * bucket of its stamp; the CPU time it stands for may straddle the edge). Sleeps are exact
 * (sched_switch out to back in), but only those the sampler records: a thread's sleep while its
 * task id slot was None (a current_thread runtime parked, a thread outside the runtime) and
 * preemptions send none. So a bucket's shares need not add up to the whole: the rest is not seen.
 */
#include <stdlib.h>
#include <string.h>

#include "sampling.h"

uint64_t sa_heat_width(uint64_t span, uint64_t period_ns)
{
	uint64_t want = span / SA_HEAT_COLS + (span % SA_HEAT_COLS != 0);

	if (want < period_ns)
		want = period_ns;
	if (!want)
		want = 1;
	for (uint64_t p = 1;; p *= 10) {
		if (p >= want)
			return p;
		if (2 * p >= want)
			return 2 * p;
		if (5 * p >= want)
			return 5 * p;
		if (p > UINT64_MAX / 100)
			return want;
	}
}

/* The row of tid (rows by tid), NULL: none */
static struct sa_heat_row *row_of(struct sa_heat *h, uint32_t tid)
{
	size_t lo = 0, hi = h->nrows;

	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;

		if (h->rows[m].tid == tid)
			return &h->rows[m];
		if (h->rows[m].tid < tid)
			lo = m + 1;
		else
			hi = m;
	}
	return NULL;
}

/* The distinct tids of the samples and the sleeps (each sorted by tid), lowest first, up to max
 * into v; the count of all of them */
static size_t tids(const struct sa_input *in, uint32_t *v, size_t max)
{
	size_t i = 0, k = 0, n = 0;
	uint64_t last = UINT64_MAX;

	while (i < in->ns || k < in->nz) {
		uint32_t t;

		if (k >= in->nz || (i < in->ns && in->s[i].tid <= in->z[k].tid))
			t = in->s[i++].tid;
		else
			t = in->z[k++].tid;
		if (t == last)
			continue;
		last = t;
		if (n < max)
			v[n] = t;
		n++;
	}
	return n;
}

static void window(struct sa_heat *h, const struct sa_input *in)
{
	uint64_t from = in->window_from ? in->window_from : UINT64_MAX, to = in->window_to;

	for (size_t i = 0; i < in->ns; i++) {
		if (in->s[i].ts < from)
			from = in->s[i].ts;
		if (in->s[i].ts >= to)
			to = in->s[i].ts + 1;
	}
	for (size_t i = 0; i < in->nz; i++) {
		if (in->z[i].since < from)
			from = in->z[i].since;
		if (in->z[i].ts > to)
			to = in->z[i].ts;
	}
	if (from == UINT64_MAX)
		from = 0;
	if (to <= from)
		to = from + 1;
	h->from = from;
	h->to = to;
}

void sa_heat_build(struct sa_heat *h, const struct sa_input *in, uint64_t period_ns)
{
	uint32_t *tid = malloc(SA_HEAT_ROWS * sizeof(*tid));
	size_t all;

	*h = (struct sa_heat){ 0 };
	window(h, in);
	h->width = sa_heat_width(h->to - h->from, period_ns);
	h->ncols = (size_t)((h->to - h->from) / h->width + ((h->to - h->from) % h->width != 0));
	all = tids(in, tid ? tid : (uint32_t[1]){ 0 }, tid ? SA_HEAT_ROWS : 0);
	h->rows = tid ? calloc(all < SA_HEAT_ROWS ? all : SA_HEAT_ROWS, sizeof(*h->rows)) : NULL;
	if (all && h->rows)
		h->rows[0].cells = calloc(all < SA_HEAT_ROWS ? all * h->ncols : SA_HEAT_ROWS * h->ncols,
					  sizeof(struct sa_heat_cell));
	if (all && (!h->rows || !h->rows[0].cells)) {   /* out of memory: no rows */
		free(h->rows);
		free(tid);
		h->rows = NULL;
		h->rows_refused = all;
		return;
	}
	if (!all) {
		free(h->rows);
		free(tid);
		h->rows = NULL;
		return;
	}
	h->nrows = all < SA_HEAT_ROWS ? all : SA_HEAT_ROWS;
	h->rows_refused = all - h->nrows;
	for (size_t r = 0; r < h->nrows; r++) {
		h->rows[r].tid = tid[r];
		h->rows[r].cells = h->rows[0].cells + r * h->ncols;
	}
	free(tid);
	for (size_t i = 0; i < in->ns; i++) {
		const struct sa_sample *s = &in->s[i];
		struct sa_heat_row *r = row_of(h, s->tid);
		struct sa_heat_cell *c;

		if (!r)
			continue;
		c = &r->cells[(s->ts - h->from) / h->width];   /* from <= ts < to */
		r->samples++;
		if (s->type >= 0) {
			r->in_poll++;
			c->poll++;
		} else {
			c->other++;
		}
	}
	for (size_t i = 0; i < in->nz; i++) {
		const struct sa_sleep *z = &in->z[i];
		struct sa_heat_row *r = row_of(h, z->tid);

		if (!r || z->ts <= z->since)
			continue;
		r->off_ns += z->ts - z->since;
		for (uint64_t t = z->since; t < z->ts;) {   /* cut at the buckets' edges */
			size_t col = (size_t)((t - h->from) / h->width);
			uint64_t end = h->from + (col + 1) * h->width;

			if (end > z->ts)
				end = z->ts;
			r->cells[col].off_ns += end - t;
			t = end;
		}
	}
}

void sa_heat_free(struct sa_heat *h)
{
	if (h->nrows)
		free(h->rows[0].cells);
	free(h->rows);
	*h = (struct sa_heat){ 0 };
}

void sa_heat_share(const struct sa_heat *h, uint64_t period_ns, const struct sa_heat_row *r,
		   size_t col, unsigned *poll, unsigned *other, unsigned *off)
{
	const struct sa_heat_cell *c = &r->cells[col];
	uint64_t b = h->from + col * h->width, e = b + h->width;
	double w, offs, on, p, o;

	if (e > h->to)   /* the last bucket ends with the window */
		e = h->to;
	w = (double)(e - b);
	offs = (double)c->off_ns > w ? w : (double)c->off_ns;
	p = (double)c->poll * (double)period_ns;
	o = (double)c->other * (double)period_ns;
	on = p + o;
	if (on > w - offs) {   /* the estimate, never past what the exact sleeps leave */
		p = on > 0 ? p * (w - offs) / on : 0;
		o = on > 0 ? o * (w - offs) / on : 0;
	}
	*poll = (unsigned)(p / w * 1000 + 0.5);
	*other = (unsigned)(o / w * 1000 + 0.5);
	*off = (unsigned)(offs / w * 1000 + 0.5);
	if (*poll + *other + *off > 1000) {   /* rounding */
		unsigned x = *poll + *other + *off - 1000;

		if (*off >= x)
			*off -= x;
		else
			*other = *other > x ? *other - x : 0;
	}
}
