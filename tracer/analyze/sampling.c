// SPDX-License-Identifier: MIT
/*
 * sampling.c — the analysis of `trace --mode sampling` (see sampling.h).
 *
 * Attribution. A worker thread's task id slot is never None between polls (a multi-thread
 * worker runs inside spawn_blocking: the slot then holds the id of the blocking task running its
 * loop; a current_thread runtime's slot is None between polls), and TaskIdGuard is set a little
 * after a poll begins and restored a little before it ends. So the id alone does not say "in a
 * poll of an async task": the user stack does, and the stack alone does not either: without
 * frame pointers the stack scan can find a raw::poll return address left over in the stack
 * (a slot of a live frame not written since an earlier poll), e.g. while the worker parks. A
 * sample is in an async poll's BODY when the innermost raw::poll instance frame of its stack is
 * one whose future type is not Tokio's BlockingTask (symbols.c names each instance's type) AND
 * the slot holds a polled task's id (not None, not an id seen as a BlockingTask's). Then:
 *   - the FRAME decides the future type, the SLOT the task;
 *   - an id met with two future types is counted (attribution.id_type_conflicts); the frame wins.
 * A sample with a poll frame whose slot holds no polled task's id is outside the body (before
 * the guard is set or after it is restored, in Harness::poll's own code, or a left-over frame):
 * counted (attribution.outside_poll_body) and charged to no task, no type and no run. Borrowing
 * a neighbouring sample's id made false long polls of short polls back to back (1000 tasks
 * yielding: consecutive samples 2 ms apart are different polls). A sample with an id in the slot
 * but no raw::poll frame (a truncated stack) is counted (attribution.no_poll_frame) and charged
 * to no type.
 *
 * long_poll: on one thread, >= N consecutive samples (N = ceil(threshold / period), at least 2)
 * in the body of a poll of the same frame and task, with no sleep of the thread between
 * (same_poll: its voluntary-switch count unchanged; a preemption does not end the run) and no
 * sample outside a body between: the poll ran on CPU at least (n-1) periods and at most (n+1)
 * periods — the bounds the report gives. Two polls of one task back to back on a thread with no
 * sleep between (a yield_now re-poll) still make one run unless a sample falls between them:
 * samples cannot see a poll's end. A sleep (sched_switch, not preempted) that began inside an
 * async poll's body (the slot holding a polled task's id at the switch) and lasted at least the
 * threshold is a long_poll too, measured exactly at the switches, with its system call and
 * kernel stack; a sleep with a poll frame but no polled task in the slot is counted
 * (attribution.sleeps_outside_poll_body) and is no finding.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampling.h"
#include "syscall_names.h"

const char *sa_type_name(const struct sa_model *m, int type)
{
	if (type < 0 || (size_t)type >= m->ntypes)
		return "(unknown)";
	return m->type_names[type];
}

static const char *frame_of(const struct sa_input *in, int32_t ustack)
{
	return in->stacks.frame ? in->stacks.frame(in->stacks.ctx, ustack) : NULL;
}

static bool blocking(const struct sa_input *in, int type)
{
	return type >= 0 && in->stacks.blocking && in->stacks.blocking(in->stacks.ctx, type);
}

static int cmp_sample(const void *a, const void *b)
{
	const struct sa_sample *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_sleep(const void *a, const void *b)
{
	const struct sa_sleep *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->since < y->since ? -1 : x->since > y->since;
}

/* false: not counted (cap entries already, or out of memory) */
static bool count_add(struct sa_count **v, size_t *n, const char *key, size_t cap)
{
	struct sa_count *p;

	for (size_t i = 0; i < *n; i++)
		if ((*v)[i].key == key || ((*v)[i].key && key && !strcmp((*v)[i].key, key))) {
			(*v)[i].n++;
			return true;
		}
	if (*n >= cap || !(p = realloc(*v, (*n + 1) * sizeof(**v))))
		return false;
	*v = p;
	(*v)[(*n)++] = (struct sa_count){ key, 1 };
	return true;
}

static int cmp_count(const void *a, const void *b)
{
	const struct sa_count *x = a, *y = b;

	return x->n > y->n ? -1 : x->n < y->n;
}

void sa_caps_init(struct sa_caps *c, size_t n)
{
	*c = (struct sa_caps){ SA_MAX_TASKS, SA_MAX_THREADS, SA_MAX_TYPES, SA_MAX_FRAMES,
			       SA_MAX_FINDINGS, SA_MAX_IDS };
	if (n) {
		c->tasks = n < c->tasks ? n : c->tasks;
		c->threads = n < c->threads ? n : c->threads;
		c->types = n < c->types ? n : c->types;
		c->frames = n < c->frames ? n : c->frames;
		c->findings = n < c->findings ? n : c->findings;
		c->ids = n < c->ids ? n : c->ids;
	}
}

/* Remembers (k1, k2) in t, up to the ids cap; false: refused (counted) */
static bool id_put(struct sa_model *o, struct htab *t, uint64_t k1, uint64_t k2)
{
	if (o->blk.len + o->type_task.len >= o->cap.ids || htab_put(t, k1, k2, (void *)1)) {
		o->refused.ids++;
		return false;
	}
	return true;
}

/* NULL: the task is not kept (the cap, or out of memory): refused.tasks counts the sample */
static struct sa_task *task_get(struct sa_model *o, uint64_t id)
{
	uintptr_t i = (uintptr_t)htab_get(&o->task_idx, id, 0);

	if (i)
		return &o->tasks[i - 1];
	if (o->ntasks >= o->cap.tasks)
		goto refuse;
	if (o->ntasks == o->tasks_cap) {
		size_t cap = o->tasks_cap ? o->tasks_cap * 2 : 256;
		struct sa_task *t = realloc(o->tasks, cap * sizeof(*t));

		if (!t)
			goto refuse;
		o->tasks = t;
		o->tasks_cap = cap;
	}
	if (htab_put(&o->task_idx, id, 0, (void *)(uintptr_t)(o->ntasks + 1)))
		goto refuse;
	o->tasks[o->ntasks] = (struct sa_task){ .id = id, .type = -1 };
	return &o->tasks[o->ntasks++];
refuse:
	o->refused.tasks++;
	return NULL;
}

static const char *sysname(int64_t nr)
{
	if (nr < 0 || (uint64_t)nr >= sizeof(tet_syscall_names) / sizeof(tet_syscall_names[0]) ||
	    !tet_syscall_names[nr])
		return NULL;
	return tet_syscall_names[nr];
}

static void add_finding(struct sa_model *o, const struct sa_finding *f)
{
	struct sa_finding *p;

	if (o->nf >= o->cap.findings || !(p = realloc(o->f, (o->nf + 1) * sizeof(*o->f)))) {
		o->refused.findings++;
		return;
	}
	o->f = p;
	o->f[o->nf++] = *f;
}

/* Each sample's future type (its poll function's, given by the caller); the ids the worker
 * loops' blocking tasks hold: a sample's poll frame a BlockingTask's, or a sleep the BPF side
 * marked TET_TS_BLOCKING (its id one the run had told it: the run learns them from the sleeps
 * too, where a scan finds no BlockingTask frame in some releases, 1.43 — there a worker loop's
 * samples whose scan finds a poll frame left over in the stack were charged to its id as an
 * async task's). */
static void classify(struct sa_model *o, const struct sa_input *in)
{
	for (size_t i = 0; i < in->nz; i++) {
		const struct sa_sleep *z = &in->z[i];

		if ((z->flags & TET_TS_BLOCKING) && z->task && !htab_get(&o->blk, z->task, 0))
			id_put(o, &o->blk, z->task, 0);
	}
	for (size_t i = 0; i < in->ns; i++) {
		struct sa_sample *s = &in->s[i];

		if (s->poll < 0)
			s->type = s->task ? -2 : -1;
		else if (blocking(in, s->ptype)) {
			s->type = -1;
			if (s->task && !htab_get(&o->blk, s->task, 0))
				id_put(o, &o->blk, s->task, 0);
		} else
			s->type = s->ptype;
	}
}

/* A sleep of thread tid that began in [t0, t1): the sleeps are sorted by thread, then start. */
static bool slept_between(const struct sa_input *in, uint32_t tid, uint64_t t0, uint64_t t1)
{
	size_t lo = 0, hi = in->nz;

	while (lo < hi) {   /* the first sleep at or after (tid, t0) */
		size_t m = lo + (hi - lo) / 2;
		const struct sa_sleep *z = &in->z[m];

		if (z->tid < tid || (z->tid == tid && z->since < t0))
			lo = m + 1;
		else
			hi = m;
	}
	return lo < in->nz && in->z[lo].tid == tid && in->z[lo].since < t1;
}

/* Samples a then b (b the next of a's thread) can be of one poll: the same thread and poll frame,
 * and the thread did not sleep between: its count of voluntary switches (read at each sample) is
 * unchanged, and no sleep record of it began between. The count sees the sleeps that send no
 * record (tls_switch_out sends none when the slot is None, as while a current_thread runtime
 * parks); a preemption is not a voluntary switch: the poll goes on after it. */
static bool same_poll(const struct sa_input *in, const struct sa_sample *a, const struct sa_sample *b)
{
	return b->tid == a->tid && b->poll == a->poll && b->nvcsw == a->nvcsw &&
	       !slept_between(in, a->tid, a->ts, b->ts);
}

/* The task each sample in an async poll is charged to (see the top of the file): the slot's, when
 * it holds a polled task's id; otherwise the sample is outside the poll's body and is charged to
 * nothing (type -3). */
static void charge(struct sa_model *o, const struct sa_input *in)
{
	for (size_t i = 0; i < in->ns; i++) {
		struct sa_sample *s = &in->s[i];

		if (s->type < 0) {
			if (s->type == -2)
				o->no_poll_frame++;
			continue;
		}
		if (s->task && !htab_get(&o->blk, s->task, 0)) {
			o->in_poll++;
			s->rtask = s->task;
			continue;
		}
		o->outside_body++;
		s->type = -3;
	}
}

/* A new thread's entry (the samples are sorted by thread); NULL: refused, counted. */
static struct sa_thread *thread_add(struct sa_model *o, uint32_t tid)
{
	struct sa_thread *p;

	if (o->nthreads >= o->cap.threads ||
	    !(p = realloc(o->threads, (o->nthreads + 1) * sizeof(*o->threads)))) {
		o->refused.threads++;
		return NULL;
	}
	o->threads = p;
	o->threads[o->nthreads] = (struct sa_thread){ .tid = tid };
	return &o->threads[o->nthreads++];
}

/* A sample in an async poll, charged to its future type: false when the type was refused. */
static bool type_charge(struct sa_model *o, const struct sa_input *in, const struct sa_sample *s)
{
	struct sa_type *t = &o->types[s->type];
	const char *fr = frame_of(in, s->ustack);

	if (!t->samples && !t->refused && o->nseen >= o->cap.types) {
		t->refused = true;
		o->refused.types++;
	}
	if (t->refused)
		return false;
	if (!t->samples)
		o->nseen++;
	t->samples++;
	if (!count_add(&t->hot, &t->nhot, fr ? fr : "[unknown]", o->cap.frames))
		o->refused.frames++;
	if (s->rtask && !htab_get(&o->type_task, (uint64_t)s->type, s->rtask) &&
	    id_put(o, &o->type_task, (uint64_t)s->type, s->rtask))
		t->ntasks++;
	return true;
}

/* Per future type, task and thread. */
static void aggregate(struct sa_model *o, const struct sa_input *in)
{
	struct sa_thread *th = NULL;

	for (size_t i = 0; i < in->ns; i++) {
		const struct sa_sample *s = &in->s[i];
		struct sa_task *tk;

		if (i == 0 || s->tid != in->s[i - 1].tid)   /* sorted by thread */
			th = thread_add(o, s->tid);
		if (th)
			th->samples++;
		if (s->type < 0)
			continue;
		if (th)
			th->in_poll++;
		if (!type_charge(o, in, s) || !s->rtask || !(tk = task_get(o, s->rtask)))
			continue;
		if (tk->type >= 0 && tk->type != s->type)
			o->conflicts++;
		tk->type = s->type;
		tk->samples++;
	}
	for (size_t t = 0; t < o->ntypes; t++)
		if (o->types[t].samples)
			qsort(o->types[t].hot, o->types[t].nhot, sizeof(*o->types[t].hot), cmp_count);
}

/* The most frequent frame of samples [i, j) (NULL unknown). */
static const char *run_hottest(struct sa_model *o, const struct sa_input *in, size_t i, size_t j)
{
	struct sa_count *c = NULL;
	const char *hot;
	size_t nc = 0;

	for (size_t k = i; k < j; k++)
		if (!count_add(&c, &nc, frame_of(in, in->s[k].ustack), o->cap.frames))
			o->refused.frames++;
	qsort(c, nc, sizeof(*c), cmp_count);
	hot = nc ? c[0].key : NULL;
	free(c);
	return hot;
}

/* long_poll on CPU: runs of samples on a thread. */
static void cpu_runs(struct sa_model *o, const struct sa_input *in)
{
	for (size_t i = 0; i < in->ns;) {
		size_t j = i + 1;
		const struct sa_sample *a = &in->s[i];
		uint64_t task = a->rtask;   /* every sample in a poll body has its task */

		if (a->type < 0) {
			i++;
			continue;
		}
		while (j < in->ns && in->s[j].type == a->type && in->s[j].rtask == task &&
		       same_poll(in, &in->s[j - 1], &in->s[j]))
			j++;
		if (j - i >= o->min_run) {
			struct sa_finding f = { .type = a->type, .task = task, .tid = a->tid,
						.first = a->ts, .last = in->s[j - 1].ts, .n = j - i };

			f.hot = run_hottest(o, in, i, j);
			add_finding(o, &f);
		}
		i = j;
	}
}

/* long_poll blocked: sleeps inside async polls. */
static void sleeps(struct sa_model *o, const struct sa_input *in)
{
	for (size_t i = 0; i < in->nz; i++) {
		const struct sa_sleep *z = &in->z[i];

		if (z->poll < 0 || blocking(in, z->ptype)) {
			o->parked_sleeps++;
			continue;
		}
		if (!z->task || htab_get(&o->blk, z->task, 0)) {
			/* the slot held no polled task: outside the poll's body (a stack scan's poll
			 * frame left over in the stack, or Harness::poll's own code) */
			o->outside_body_sleeps++;
			continue;
		}
		o->poll_sleeps++;
		if (z->ts - z->since < in->long_poll_ns)
			continue;
		{
			struct sa_finding f = { .blocked = true, .type = z->ptype, .task = z->task,
						.tid = z->tid, .first = z->since, .last = z->ts,
						.hot = frame_of(in, z->ustack),
						.syscall = sysname(z->syscall),
						.blocked_ns = (z->woken ? z->woken : z->ts) - z->since };

			if (z->kstack >= 0 && in->stacks.kframes)
				in->stacks.kframes(in->stacks.ctx, z->kstack, f.kframes, 3);
			add_finding(o, &f);
		}
	}
}

int sa_analyze(struct sa_model *o, const struct sa_input *in)
{
	*o = (struct sa_model){ .type_names = in->type_names, .ntypes = in->ntypes, .cap = in->caps };
	o->types = calloc(in->ntypes + 1, sizeof(*o->types));
	if (!o->types)
		return -ENOMEM;
	o->period_ns = 1000000000ull / in->profile_hz;
	o->min_run = (in->long_poll_ns + o->period_ns - 1) / o->period_ns;
	if (o->min_run < 2)
		o->min_run = 2;
	if (in->ns)  /* none yet (the first live analysis): s is NULL, which qsort may not take */
		qsort(in->s, in->ns, sizeof(*in->s), cmp_sample);
	if (in->nz)
		qsort(in->z, in->nz, sizeof(*in->z), cmp_sleep);
	classify(o, in);
	charge(o, in);
	aggregate(o, in);
	cpu_runs(o, in);
	sleeps(o, in);
	sa_heat_build(&o->heat, in, o->period_ns);
	return 0;
}

void sa_free(struct sa_model *o)
{
	for (size_t t = 0; o->types && t < o->ntypes; t++)
		free(o->types[t].hot);
	free(o->types);
	free(o->blk.e);
	free(o->task_idx.e);
	free(o->type_task.e);
	free(o->tasks);
	free(o->threads);
	free(o->f);
	sa_heat_free(&o->heat);
	*o = (struct sa_model){ 0 };
}
