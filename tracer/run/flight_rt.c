// SPDX-License-Identifier: MIT
/*
 * flight_rt.c — the flight recorder's decisions (see flight_rt.h): pure, tested in
 * tests/unit/flight_test.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "flight_rt.h"
#include "units.h"

int fr_rt_init(struct fr_rt *fl, const struct flight_opts *o)
{
	memset(fl, 0, sizeof(*fl));
	fl->o = o;
	for (size_t i = 0; i < o->ntrig; i++) {
		const struct fr_trigger *t = &o->trig[i];

		if (t->kind == FR_TRIG_DETECTOR) {
			fl->detectors |= 1u << t->detector;
		} else if (t->kind == FR_TRIG_POLL) {
			if (!fl->trig_poll_ns || t->threshold_ns < fl->trig_poll_ns)
				fl->trig_poll_ns = t->threshold_ns;
		} else if (t->kind == FR_TRIG_SCHED) {
			if (!fl->trig_sched_ns || t->threshold_ns < fl->trig_sched_ns)
				fl->trig_sched_ns = t->threshold_ns;
		} else if (t->kind == FR_TRIG_EXIT) {
			fl->any_exit = true;
		}
	}
	fl->snaps = calloc(FR_SNAPS_MAX, sizeof(*fl->snaps));
	fl->snap_every = o->window_ns / FR_SNAPS_MAX > NSEC_PER_SEC ? o->window_ns / FR_SNAPS_MAX :
			 NSEC_PER_SEC;
	return fl->snaps ? 0 : -ENOMEM;
}

void fr_rt_free(struct fr_rt *fl)
{
	free(fl->snaps);
	fl->snaps = NULL;
}

bool fr_rt_needs_live(const struct fr_rt *fl)
{
	return fl->detectors || fl->trig_poll_ns || fl->trig_sched_ns;
}

static bool in_cooldown(const struct fr_rt *fl, uint64_t at)
{
	uint64_t d = at > fl->last_throttled ? at - fl->last_throttled : fl->last_throttled - at;

	return fl->throttled_once && d < fl->o->cooldown_ns;
}

enum fr_fire_result fr_rt_fire(struct fr_rt *fl, const struct report_trigger *t, uint64_t now,
			       uint32_t pid_filter, uint32_t name_pid, bool throttled, bool exit)
{
	uint64_t at = t->at_ns ? t->at_ns : now;
	struct fr_pending *p;

	if ((throttled && in_cooldown(fl, at)) || fl->nq == FR_PENDING_MAX) {
		fl->suppressed++;
		return FR_SUPPRESSED;
	}
	if (throttled) {
		fl->last_throttled = at;
		fl->throttled_once = true;
	}
	p = &fl->q[fl->nq++];
	memset(p, 0, sizeof(*p));
	p->t = *t;
	if (!p->t.at_ns)
		p->t.at_ns = now;
	p->due = now + (exit && fl->o->post_ns > FR_EXIT_POST_MAX_NS ? FR_EXIT_POST_MAX_NS :
			fl->o->post_ns);
	p->pid_filter = pid_filter;
	p->name_pid = name_pid;
	p->exit = exit;
	return FR_QUEUED;
}

static bool trigger_matches(const struct fr_trigger *x, const struct an_detect *d)
{
	return (x->kind == FR_TRIG_DETECTOR && d->what == x->detector) ||
	       (x->kind == FR_TRIG_POLL && d->what == AN_DETECT_POLL && d->value_ns > x->threshold_ns) ||
	       (x->kind == FR_TRIG_SCHED && d->what == AN_DETECT_SCHED && d->value_ns > x->threshold_ns);
}

bool fr_rt_match_detect(const struct fr_rt *fl, const struct an_detect *d, const char *loc,
			struct report_trigger *t)
{
	const struct fr_trigger *best = NULL;
	unsigned long long task = d->task_id ? d->task_id : d->header_ptr;
	char v[32], th[32];

	for (size_t i = 0; i < fl->o->ntrig; i++) {
		const struct fr_trigger *x = &fl->o->trig[i];

		if (trigger_matches(x, d) && (!best || x->threshold_ns < best->threshold_ns))
			best = x;
	}
	if (!best)
		return false;
	memset(t, 0, sizeof(*t));
	t->kind = d->what < AN_FINDING_KINDS ? an_finding_name(d->what) :
		  d->what == AN_DETECT_POLL ? "poll" : "sched_delay";
	t->spec = best->spec;
	t->ts = d->ts;
	t->at_ns = d->at;
	t->pid = d->pid;
	t->tid = d->tid;
	t->has_task = true;
	t->task_id = d->task_id;
	t->header_ptr = d->header_ptr;
	t->value_ns = d->value_ns;
	t->threshold_ns = best->kind == FR_TRIG_DETECTOR ? d->threshold_ns : best->threshold_ns;
	fmt_duration(d->value_ns, v, sizeof(v));
	fmt_duration(t->threshold_ns, th, sizeof(th));
	if (d->what == AN_SELF_WAKE)
		snprintf(t->detail, sizeof(t->detail), "self_wake: task %llu (%s) woke itself in %llu polls",
			 task, loc, (unsigned long long)d->value_ns);
	else
		snprintf(t->detail, sizeof(t->detail), "%s: task %llu (%s) of PID %u: %s, over %s",
			 t->kind, task, loc, d->pid, v, th);
	return true;
}

bool fr_rt_exit_trigger(const struct fr_rt *fl, const struct tet_exit_rec *r, const char *signame,
			struct report_trigger *t)
{
	int sig = (int)(r->code & 0x7f);

	if (!sig && !fl->any_exit) /* a crash always dumps */
		return false;
	memset(t, 0, sizeof(*t));
	t->kind = sig ? "process_crash" : "process_exit";
	t->spec = sig ? "crash" : "exit";
	t->ts = t->at_ns = r->h.ts;
	t->pid = r->h.pid;
	t->tid = r->h.tid;
	t->signal = sig;
	t->core_dumped = sig && (r->code & 0x80);
	t->exit_status = sig ? -1 : (int)((r->code >> 8) & 0xff);
	if (sig)
		snprintf(t->detail, sizeof(t->detail), "process %u killed by %s%s", r->h.pid, signame,
			 t->core_dumped ? " (core dumped)" : "");
	else
		snprintf(t->detail, sizeof(t->detail), "process %u exited with status %d", r->h.pid,
			 t->exit_status);
	return true;
}

uint64_t fr_rt_keep_from(const struct fr_rt *fl, uint64_t now)
{
	uint64_t edge = now;

	for (size_t i = 0; i < fl->nq; i++)
		if (fl->q[i].t.at_ns < edge)
			edge = fl->q[i].t.at_ns;
	return edge;
}

bool fr_rt_take_due(struct fr_rt *fl, uint64_t now, bool anyway, struct fr_pending *p)
{
	if (!fl->nq || (!anyway && now < fl->q[0].due))
		return false;
	*p = fl->q[0];
	memmove(fl->q, fl->q + 1, (fl->nq - 1) * sizeof(fl->q[0]));
	fl->nq--;
	fl->dump_index++;
	return true;
}

void fr_rt_plan(const struct flight_opts *o, const struct fr_stats *st, const struct fr_pending *p,
		struct fr_plan *plan)
{
	uint64_t from, want;

	memset(plan, 0, sizeof(*plan));
	plan->to = p->due;
	if (o->window_ns) {
		want = p->t.at_ns > o->window_ns ? p->t.at_ns - o->window_ns : 0;
		from = want;
		if (st->oldest_ts > from) {
			plan->cut_by_memory = st->evicted_by_size && st->evicted_by_size_until >= want;
			from = st->oldest_ts;
		}
	} else {
		from = st->oldest_ts;
	}
	/* the triggering occurrence whole (a poll longer than the window) */
	if (p->t.ts && p->t.ts < from && p->t.ts >= st->oldest_ts)
		from = p->t.ts;
	if (!from || from > plan->to)
		from = plan->to;
	plan->from = from;
}

bool fr_rt_snap_due(struct fr_rt *fl, uint64_t now)
{
	if (now < fl->next_snap)
		return false;
	fl->next_snap = now + fl->snap_every;
	return true;
}

void fr_rt_snap_add(struct fr_rt *fl, uint64_t now, const struct tet_counters *c,
		    const uint64_t *exact)
{
	struct fr_snap *s = &fl->snaps[fl->snap_next];

	s->c = *c;
	if (exact)
		memcpy(s->exact, exact, sizeof(s->exact));
	s->ts = now;
	fl->snap_next = (fl->snap_next + 1) % FR_SNAPS_MAX;
	if (fl->nsnaps < FR_SNAPS_MAX)
		fl->nsnaps++;
}

const struct fr_snap *fr_rt_snap_base(const struct fr_rt *fl, uint64_t from)
{
	const struct fr_snap *base = NULL;

	for (size_t i = 0; i < fl->nsnaps; i++)
		if (fl->snaps[i].ts <= from && (!base || fl->snaps[i].ts > base->ts))
			base = &fl->snaps[i];
	return base;
}

const struct fr_snap *fr_rt_snap_at(const struct fr_rt *fl, size_t i)
{
	size_t first = fl->nsnaps < FR_SNAPS_MAX ? 0 : fl->snap_next;

	return &fl->snaps[(first + i) % FR_SNAPS_MAX];
}

void fr_counters_since(struct tet_counters *now, const struct tet_counters *base)
{
	uint64_t *a = (uint64_t *)now;
	const uint64_t *b = (const uint64_t *)base;

	for (size_t i = 0; i < sizeof(*now) / sizeof(uint64_t); i++)
		a[i] = a[i] >= b[i] ? a[i] - b[i] : 0;
}
