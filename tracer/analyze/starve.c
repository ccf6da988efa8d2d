// SPDX-License-Identifier: MIT
/*
 * starve.c — starvation episodes (starve.h): worker threads grouped into runtimes by the tasks
 * they share, their open and last long polls, and the intersections of those polls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "htab.h"
#include "starve.h"

struct wthread {
	uint32_t pid, tid, parent;  /* parent: union-find over threads that polled the same task */
	int32_t worker;             /* its worker index (the last it polled or parked as) */
	uint32_t depth;             /* polls open on it (nested: a LocalSet or block_on in a poll) */
	bool open, has_last;
	bool mt;                    /* a multi-thread worker's thread (its launcher seen) */
	bool gone;                  /* another thread of its runtime polls as its worker index now
				     * (block_in_place handed the worker on): not one of the
				     * runtime's workers until it polls or parks as one again */
	bool claimed;               /* it took its worker index from the others (claim) */
	bool held;                  /* its open poll holds an episode (check) */
	struct an_holder cur;       /* the outermost open poll (poll_end 0) */
	struct an_holder last;      /* its last poll of long_ns or more */
};

struct starve {
	sv_new_fn fn;
	void *ctx;
	struct htab idx;            /* (pid, tid) → wthread */
	struct wthread *last;       /* the thread found last: a decoder delivers a thread's
				     * events in runs (threads are freed only with the table) */
	struct wthread **v;
	size_t n, cap;
	struct sv_episode *eps;
	size_t neps, eps_cap;
	uint64_t omitted, omitted_start, untracked;
};

struct starve *sv_new(sv_new_fn fn, void *ctx)
{
	struct starve *s = calloc(1, sizeof(*s));

	if (s) {
		s->fn = fn;
		s->ctx = ctx;
	}
	return s;
}

void sv_free(struct starve *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	free(s->idx.e);
	free(s->eps);
	free(s);
}

/* (a reader's lookup sets the memo: a cache, not the table's contents, hence the const) */
static struct wthread *find(const struct starve *s, uint32_t pid, uint32_t tid)
{
	struct wthread *w = s->last;

	if (w && w->tid == tid && w->pid == pid)
		return w;
	w = tid ? htab_get(&s->idx, pid, tid) : NULL;
	if (w)
		((struct starve *)s)->last = w;
	return w;
}

/* The group's representative thread; halves the path on the way (bounded: parents are
 * threads of the table, and a union only ever points a root at another root). */
static uint32_t root_of(const struct starve *s, struct wthread *w, bool halve)
{
	for (int guard = 0; w->parent != w->tid && guard < 64; guard++) {
		struct wthread *p = find(s, w->pid, w->parent), *gp;

		if (!p)
			break;
		if (halve && (gp = find(s, p->pid, p->parent)))
			w->parent = gp->tid;
		w = p;
	}
	return w->tid;
}

static void unite(struct starve *s, struct wthread *a, struct wthread *b)
{
	uint32_t ra, rb;
	struct wthread *r;

	/* a node on both paths (a parent: a thread of the table) is one group already — the
	 * common case, a task polled by another worker of its runtime, both pointing at the
	 * root (root_of would agree unless its 64-step guard cut a path short) */
	if (a->pid == b->pid && a->parent == b->parent)
		return;
	ra = root_of(s, a, true);
	rb = root_of(s, b, true);
	if (ra == rb)
		return;
	r = find(s, a->pid, ra > rb ? ra : rb);
	if (r)
		r->parent = ra < rb ? ra : rb;
}

/* Worker thread (pid, tid), made on first sight: worker indexes 1 and up exist only on the
 * multi-thread scheduler, one runtime's (a current-thread runtime is worker 0), so they are
 * one group from the start; worker 0 joins it by a task they share. NULL: beyond the bound. */
static void mt_join(struct starve *s, struct wthread *w);

static struct wthread *wt_get(struct starve *s, uint32_t pid, uint32_t tid, int32_t worker)
{
	struct wthread *w = find(s, pid, tid);

	if (w) {
		if (w->worker != worker)
			w->claimed = false; /* a new index: claimed at its first poll or park */
		w->worker = worker;
		return w;
	}
	{
		if (s->n >= SV_THREADS_MAX) {
			s->untracked++;
			return NULL;
		}
		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 16;
			void *v = realloc(s->v, cap * sizeof(*s->v));

			if (!v)
				return NULL;
			s->v = v;
			s->cap = cap;
		}
		w = calloc(1, sizeof(*w));
		if (!w)
			return NULL;
		w->pid = pid;
		w->tid = w->parent = tid;
		w->worker = worker;
		if (htab_put(&s->idx, pid, tid, w)) {
			free(w);
			return NULL;
		}
		s->v[s->n++] = w;
	}
	mt_join(s, w);
	return w;
}

/* Threads of worker indexes 1 and up, and those whose multi-thread launcher was seen, are one
 * runtime's from the start. */
static void mt_join(struct starve *s, struct wthread *w)
{
	if (w->worker < 1 && !w->mt)
		return;
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i] != w && s->v[i]->pid == w->pid && (s->v[i]->worker >= 1 || s->v[i]->mt)) {
			unite(s, w, s->v[i]);
			break;
		}
}

void sv_mt_thread(struct starve *s, uint32_t pid, uint32_t tid)
{
	struct wthread *w = tid ? find(s, pid, tid) : NULL;

	if (!tid)
		return;
	if (!w && !(w = wt_get(s, pid, tid, -1)))
		return;
	if (w->mt)
		return;
	w->mt = true;
	mt_join(s, w);
}

static void close_held(struct starve *s, struct wthread *w, uint64_t ts, uint64_t long_ns);
static inline void claim(struct starve *s, struct wthread *w);

void sv_park(struct starve *s, uint32_t pid, uint32_t tid, int32_t worker, uint64_t ts,
	     uint64_t long_ns)
{
	struct wthread *w;

	if (!tid || worker < 0 || !(w = wt_get(s, pid, tid, worker)))
		return;
	claim(s, w);
	if (!w->open)
		return;
	/* a worker parks outside every poll: the end of the open one was lost (a dropped event,
	 * a task retired without it); it ended by now at the latest */
	w->open = false;
	w->depth = 0;
	if (w->held)
		close_held(s, w, ts, long_ns);
}

/* claim()'s work, when w has not claimed its index yet or lost it */
static void claim_slow(struct starve *s, struct wthread *w)
{
	uint32_t root;

	w->gone = false;
	w->claimed = true;
	root = root_of(s, w, true);
	for (size_t i = 0; i < s->n; i++) {
		struct wthread *v = s->v[i];

		if (v != w && v->pid == w->pid && v->worker == w->worker && !v->gone &&
		    root_of(s, v, true) == root)
			v->gone = true;
	}
}

/* w polls or parks as its worker index: it is the runtime's thread of that index now, any other
 * thread of its runtime that was is not (a worker index is one thread's at a time) */
static inline void claim(struct starve *s, struct wthread *w)
{
	if (w->worker >= 0 && (!w->claimed || w->gone)) /* the common case: one look at two flags */
		claim_slow(s, w);
}

int sv_poll_begin(struct starve *s, uint32_t pid, uint32_t tid, int32_t worker, uint32_t prev_tid,
		  uint64_t task_id, uint64_t header_ptr, const struct an_site *site, uint64_t ts)
{
	struct wthread *w, *p;

	if (!tid)
		return 0;
	w = wt_get(s, pid, tid, worker);
	if (!w)
		return s->n >= SV_THREADS_MAX ? 0 : -ENOMEM;
	if (prev_tid && prev_tid != tid && (p = find(s, pid, prev_tid)))
		unite(s, w, p);
	claim(s, w);
	if (w->open) {
		w->depth++;
		return 0;
	}
	w->open = true;
	w->held = false;
	w->depth = 1;
	w->cur = (struct an_holder){ tid, worker, task_id, header_ptr, site, ts, 0 };
	return 0;
}

/* Worth a finding: two threads or more held (a single-thread runtime's long poll is its
 * long_poll finding; its victims are spared all the same) and something waited on it (polls that
 * held every worker while nothing else had work are their long_poll findings already). */
static bool worth(const struct sv_episode *e)
{
	return e->threads >= 2 && !e->stale && !e->voided && (e->victim_timers || e->victim_tasks);
}

static void tell(struct starve *s, struct sv_episode *e, uint64_t now)
{
	if (e->told || !worth(e))
		return;
	e->told = true;
	if (s->fn)
		s->fn(s->ctx, e, now);
}

/* Every thread of w0's runtime held at once, for long_ns or more, as of now: records the
 * episode, or updates the one with the same start (an end now known, a holder finished). */
static void check(struct starve *s, struct wthread *w0, uint64_t now, uint64_t long_ns)
{
	uint32_t root = root_of(s, w0, true);
	uint64_t start = 0, end = UINT64_MAX;
	struct sv_episode e = { .pid = w0->pid, .ongoing = true };
	struct sv_episode *x;
	bool has0 = false, has1 = false;

	for (size_t i = 0; i < s->n; i++) {
		struct wthread *w = s->v[i];
		const struct an_holder *h;
		uint64_t b, t;

		if (w->pid != w0->pid || root_of(s, w, true) != root || w->gone)
			continue; /* (a thread that handed its worker on runs no worker's polls) */
		if (w->open && w->cur.poll_begin <= now) {
			h = &w->cur;
			t = now;
		} else if (w->has_last) {
			h = &w->last;
			t = h->poll_end;
			e.ongoing = false;
		} else {
			return;
		}
		b = h->poll_begin;
		start = b > start ? b : start;
		end = t < end ? t : end;
		if (end < start || end - start < long_ns)
			return;
		if (e.nholders < AN_HOLDERS_MAX)
			e.holders[e.nholders++] = *h;
		if (h == &w->cur)
			w->held = true;
		e.threads++;
		has0 |= w->worker == 0;
		has1 |= w->worker >= 1;
	}
	/* a multi-thread runtime has a worker 0: until it is known, the group is not complete */
	if (!e.threads || (has1 && !has0))
		return;
	e.start = start;
	e.end = end;
	for (size_t i = s->neps; i-- > 0;) {
		x = &s->eps[i];
		if (x->pid == e.pid && x->start == start) {
			x->end = end;
			x->ongoing = e.ongoing;
			x->threads = e.threads;
			x->nholders = e.nholders;
			memcpy(x->holders, e.holders, sizeof(e.holders));
			tell(s, x, now);
			return;
		}
	}
	if (s->neps >= SV_EPISODES_MAX) {
		/* room from the oldest episode over that is no finding (a single thread's, one
		 * without victims, or none after all) */
		size_t k = 0;

		while (k < s->neps && (s->eps[k].told || s->eps[k].ongoing))
			k++;
		if (k == s->neps) {
			if (s->omitted_start != start) {
				s->omitted++;
				s->omitted_start = start;
			}
			return;
		}
		memmove(&s->eps[k], &s->eps[k + 1], (s->neps - k - 1) * sizeof(*s->eps));
		s->neps--;
	}
	if (s->neps == s->eps_cap) {
		size_t cap = s->eps_cap ? s->eps_cap * 2 : 8;
		void *v = realloc(s->eps, cap * sizeof(*s->eps));

		if (!v)
			return;
		s->eps = v;
		s->eps_cap = cap;
	}
	x = &s->eps[s->neps++];
	*x = e;
	tell(s, x, now);
}

/* w's open poll ended at ts: the episodes it held learn its end. An episode ends with the first
 * of its holders' ends, whatever order they come in (batched capture delivers each thread's
 * late), and is none when that leaves it shorter than long_ns (a tick saw a poll still open
 * whose end, earlier, had not come in yet). */
static void close_held(struct starve *s, struct wthread *w, uint64_t ts, uint64_t long_ns)
{
	for (size_t i = 0; i < s->neps; i++) {
		struct sv_episode *e = &s->eps[i];
		uint64_t end = UINT64_MAX;
		bool mine = false;

		if (e->pid != w->pid)
			continue;
		for (unsigned j = 0; j < e->nholders; j++) {
			struct an_holder *h = &e->holders[j];

			if (h->tid == w->tid && h->poll_begin == w->cur.poll_begin && !h->poll_end) {
				h->poll_end = ts;
				mine = true;
			}
			if (h->poll_end && h->poll_end < end)
				end = h->poll_end;
		}
		if (!mine || end == UINT64_MAX)
			continue;
		e->ongoing = false;
		e->end = end;
		if (end < e->start || end - e->start < long_ns)
			e->voided = true;
	}
}

void sv_poll_end(struct starve *s, uint32_t pid, uint32_t tid, uint64_t task_id,
		 uint64_t header_ptr, uint64_t ts, uint64_t long_ns)
{
	struct wthread *w = find(s, pid, tid);

	if (!w || !w->open)
		return;
	if (w->cur.task_id != task_id || w->cur.header_ptr != header_ptr) {
		if (w->depth > 1) /* a nested poll ended */
			w->depth--;
		return;
	}
	w->open = false;
	w->depth = 0;
	if (w->held)
		close_held(s, w, ts, long_ns);
	if (ts < w->cur.poll_begin || ts - w->cur.poll_begin < long_ns)
		return;
	w->last = w->cur;
	w->last.poll_end = ts;
	w->has_last = true;
	check(s, w, ts, long_ns);
}

void sv_tick(struct starve *s, uint64_t now, uint64_t long_ns)
{
	for (size_t i = 0; i < s->n; i++) {
		struct wthread *w = s->v[i];

		if (w->open && !w->gone && now >= w->cur.poll_begin && now - w->cur.poll_begin >= long_ns)
			check(s, w, now, long_ns);
	}
}

/* Episode e's runtime is thread (pid, tid)'s; its overlap with [from, to] (an ongoing episode
 * lasts until to). */
static uint64_t ep_overlap(const struct starve *s, const struct sv_episode *e, uint32_t pid,
			   uint32_t root, uint64_t from, uint64_t to)
{
	uint64_t lo, hi;
	struct wthread *h;

	if (e->pid != pid || !e->nholders || e->voided)
		return 0;
	hi = e->ongoing ? to : e->end;
	lo = e->start > from ? e->start : from;
	hi = hi < to ? hi : to;
	if (hi <= lo)
		return 0;
	h = find(s, pid, e->holders[0].tid);
	return h && root_of(s, h, false) == root ? hi - lo : 0;
}

uint64_t sv_starved(const struct starve *s, uint32_t pid, uint32_t tid, uint64_t from, uint64_t to)
{
	struct wthread *w = find(s, pid, tid);
	uint64_t sum = 0;
	uint32_t root;

	if (!w || !s->neps || to <= from)
		return 0;
	root = root_of(s, w, false);
	for (size_t i = 0; i < s->neps; i++)
		sum += ep_overlap(s, &s->eps[i], pid, root, from, to);
	return sum < to - from ? sum : to - from;
}

void sv_charge(struct starve *s, uint32_t pid, uint32_t tid, uint64_t from, uint64_t to, bool timer)
{
	struct wthread *w = find(s, pid, tid);
	uint32_t root;

	if (!w || !s->neps || to <= from)
		return;
	root = root_of(s, w, false);
	for (size_t i = 0; i < s->neps; i++) {
		struct sv_episode *e = &s->eps[i];
		uint64_t o = ep_overlap(s, e, pid, root, from, to);

		if (!o)
			continue;
		e->charged_ns += o;
		if (timer) {
			e->victim_timers++;
			if (to - from > e->victim_timer_max_ns)
				e->victim_timer_max_ns = to - from;
		} else {
			e->victim_tasks++;
			if (to - from > e->victim_sched_max_ns)
				e->victim_sched_max_ns = to - from;
		}
		tell(s, e, to);
	}
}

/* The runtime's worker threads at the end: one per worker index (those that handed theirs on
 * are not counted). */
static uint32_t group_size(const struct starve *s, uint32_t pid, uint32_t root)
{
	uint32_t n = 0;

	for (size_t i = 0; i < s->n; i++)
		n += s->v[i]->pid == pid && !s->v[i]->gone && root_of(s, s->v[i], false) == root;
	return n;
}

void sv_settle(struct starve *s)
{
	for (size_t i = 0; i < s->neps; i++) {
		struct sv_episode *e = &s->eps[i], *best = NULL;
		struct wthread *h = find(s, e->pid, e->holders[0].tid);
		uint32_t root;
		uint64_t most = 0;

		if (!h || e->stale || e->voided)
			continue;
		root = root_of(s, h, false);
		if (group_size(s, e->pid, root) <= e->threads)
			continue;
		e->stale = true;
		for (size_t j = 0; j < s->neps; j++) {
			struct sv_episode *x = &s->eps[j];
			uint64_t o = j == i || x->stale ? 0 : ep_overlap(s, x, e->pid, root, e->start, e->end);

			if (o > most && x->threads > e->threads) {
				most = o;
				best = x;
			}
		}
		if (!best)
			continue;
		best->victim_timers += e->victim_timers;
		best->victim_tasks += e->victim_tasks;
		best->charged_ns += e->charged_ns;
		if (e->victim_timer_max_ns > best->victim_timer_max_ns)
			best->victim_timer_max_ns = e->victim_timer_max_ns;
		if (e->victim_sched_max_ns > best->victim_sched_max_ns)
			best->victim_sched_max_ns = e->victim_sched_max_ns;
		tell(s, best, best->end);
	}
}

size_t sv_episodes(const struct starve *s, struct sv_episode **e)
{
	*e = s->eps;
	return s->neps;
}

uint64_t sv_omitted(const struct starve *s)
{
	return s->omitted;
}

uint64_t sv_threads_untracked(const struct starve *s)
{
	return s->untracked;
}

bool sv_any(const struct starve *s)
{
	return s->neps > 0;
}

bool sv_in_poll(const struct starve *s, uint32_t pid, uint32_t tid)
{
	const struct wthread *w = find(s, pid, tid);

	return w && w->open;
}
