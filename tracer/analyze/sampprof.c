// SPDX-License-Identifier: MIT
/*
 * sampprof.c — the profile of `trace --mode sampling` (see sampprof.h).
 *
 * A CPU sample is in the profile when the analysis put it in an async poll (its type >= 0: the
 * model's in_poll, as the other modes' --stacks holds the samples charged to polls), a sleep
 * when it began inside one (a poll frame whose type is not Tokio's BlockingTask: the model's
 * poll_sleeps). The long_poll label follows the findings: a sample between the first and the
 * last sample of an on-CPU long_poll of its thread, a sleep as long as the threshold.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampprof.h"
#include "syscall_names.h"

struct run { uint32_t tid; uint64_t first, last; };

static int cmp_run(const void *a, const void *b)
{
	const struct run *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct sp_entry *x = a, *y = b;

	if (x->blocked != y->blocked)
		return x->blocked ? 1 : -1;
	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	if (x->ustack != y->ustack)
		return x->ustack < y->ustack ? -1 : 1;
	if (x->kstack != y->kstack)
		return x->kstack < y->kstack ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->long_poll != y->long_poll)
		return x->long_poll ? 1 : -1;
	return x->syscall < y->syscall ? -1 : x->syscall > y->syscall;
}

/* Whether (tid, ts) lies in one of the on-CPU runs (sorted by thread, then first). */
static bool in_run(const struct run *r, size_t n, uint32_t tid, uint64_t ts)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {   /* the first run after (tid, ts) */
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].tid < tid || (r[mid].tid == tid && r[mid].first <= ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && r[lo - 1].tid == tid && ts <= r[lo - 1].last;
}

static const char *sysname(int64_t nr)
{
	if (nr < 0 || (uint64_t)nr >= sizeof(tet_syscall_names) / sizeof(tet_syscall_names[0]))
		return NULL;
	return tet_syscall_names[nr];
}

static bool in_poll_sleep(const struct sa_input *in, const struct sa_sleep *z)
{
	return z->poll >= 0 && !(z->ptype >= 0 && in->stacks.blocking &&
				 in->stacks.blocking(in->stacks.ctx, z->ptype));
}

int sp_build(struct sp_profile *p, const struct sa_model *m, const struct sa_input *in)
{
	struct run *runs = calloc(m->nf + 1, sizeof(*runs));
	size_t nruns = 0, k = 0;

	*p = (struct sp_profile){ .m = m };
	p->v = calloc(in->ns + in->nz + 1, sizeof(*p->v));
	p->sl = calloc(in->nz + 1, sizeof(*p->sl));
	if (!runs || !p->v || !p->sl) {
		free(runs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->nf; i++)
		if (!m->f[i].blocked)
			runs[nruns++] = (struct run){ m->f[i].tid, m->f[i].first, m->f[i].last };
	qsort(runs, nruns, sizeof(*runs), cmp_run);
	for (size_t i = 0; i < in->ns; i++) {
		const struct sa_sample *s = &in->s[i];

		if (s->type < 0)
			continue;
		p->v[k++] = (struct sp_entry){ .type = s->type, .ustack = s->ustack, .kstack = -1,
			.tid = s->tid, .long_poll = in_run(runs, nruns, s->tid, s->ts), .syscall = -1,
			.count = 1 };
		p->samples++;
	}
	free(runs);
	for (size_t i = 0; i < in->nz; i++) {
		const struct sa_sleep *z = &in->z[i];
		uint64_t off = z->ts - z->since;  /* in order: the run refused the others */
		bool lp = off >= in->long_poll_ns;

		if (!in_poll_sleep(in, z))
			continue;
		p->v[k++] = (struct sp_entry){ .blocked = true, .type = z->ptype, .ustack = z->ustack,
			.kstack = z->kstack, .tid = z->tid, .long_poll = lp, .syscall = z->syscall,
			.sysname = sysname(z->syscall), .count = 1, .ns = off };
		p->sl[p->nsl++] = (struct sp_sleep){ z, htab_get(&m->blk, z->task, 0) ? 0 : z->task,
						      sysname(z->syscall), lp };
		p->sleeps++;
		p->off_cpu_ns += off;
	}
	qsort(p->v, k, sizeof(*p->v), cmp_entry);
	for (size_t i = 0; i < k; i++) {   /* the equal ones merged */
		if (p->n && !cmp_entry(&p->v[p->n - 1], &p->v[i])) {
			p->v[p->n - 1].count += p->v[i].count;
			p->v[p->n - 1].ns += p->v[i].ns;
		} else {
			p->v[p->n++] = p->v[i];
		}
	}
	return 0;
}

void sp_free(struct sp_profile *p)
{
	free(p->v);
	free(p->sl);
	p->v = NULL;
	p->sl = NULL;
	p->n = p->nsl = 0;
}
