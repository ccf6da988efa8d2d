// SPDX-License-Identifier: MIT
/*
 * jsonparts.c — JSON objects and runs of keys the JSON report (jsonreport.c) and report.html's
 * data (html.c) or io_uring's section (uring_report.c) share (jsonparts.h): distributions, a
 * spawn site's reference, what a task waits for, lock holders, a starvation episode, a deadlock
 * cycle, the capture's start, thresholds, totals, why's head and a worker's counts.
 */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "jsonparts.h"
#include "locks.h"
#include "thresholds.h"
#include "units.h"
#include "vocab.h"

void report_wait_json(struct jw *w, const struct an_wait *x, uint32_t pid, uint64_t now,
		      const struct report_meta *m)
{
	char what[512], hex[24];
	const char *kind = NULL;
	int fd;

	jw_obj_begin(w);
	jw_kstr(w, "kind", an_wait_name(x->kind));
	snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)x->object);
	switch (x->kind) {
	case TET_WAIT_TIMER: {
		uint64_t due = x->arg > UINT64_MAX - x->ts ? UINT64_MAX : x->ts + x->arg;

		jw_ki64(w, "due_in_ns", due >= now ? (int64_t)(due - now > INT64_MAX ? INT64_MAX : due - now) :
			-(int64_t)(now - due > INT64_MAX ? INT64_MAX : now - due));
		break;
	}
	case TET_WAIT_IO:
		jw_kstr(w, "token", hex);
		jw_kbool(w, "readable", x->arg & 1);
		jw_kbool(w, "writable", x->arg & 2);
		*what = 0;
		fd = m && m->io_fd ? m->io_fd(m->io_ctx, pid, x->object, what, sizeof(what), &kind) : -1;
		jw_key(w, "fd");
		if (fd >= 0)
			jw_i64(w, fd);
		else
			jw_null(w);
		jw_kstr(w, "fd_kind", fd >= 0 ? kind : NULL);
		jw_kstr(w, "fd_what", fd >= 0 && *what ? what : NULL);
		break;
	case TET_WAIT_JOIN:
		jw_ku64(w, "task_id", x->object);
		break;
	case TET_WAIT_SEMAPHORE:
		jw_kstr(w, "address", hex);
		jw_ku64(w, "permits", x->arg);
		break;
	default:
		jw_kstr(w, "address", hex);
	}
	jw_obj_end(w);
}

void report_starvation_json(struct jw *w, const struct report_meta *m, const struct an_finding *f)
{
	uint64_t end = f->first_ts + f->value_ns;

	jw_ku64(w, "worker_threads", f->polls);
	jw_key(w, "held_by");
	jw_arr_begin(w);
	for (unsigned i = 0; i < f->nholders && i < AN_HOLDERS_MAX; i++) {
		const struct an_holder *h = &f->holders[i];

		jw_obj_begin(w);
		jw_ku64(w, "task_id", h->task_id);
		jw_ku64(w, "tid", h->tid);
		jw_ki64(w, "worker", h->worker);
		report_json_site_ref(w, h->site);
		jw_ku64(w, "poll_began_at_ns", report_rel(m, h->poll_begin));
		jw_ku64(w, "poll_ns", h->poll_end > h->poll_begin ? h->poll_end - h->poll_begin :
			end > h->poll_begin ? end - h->poll_begin : 0);
		jw_kbool(w, "poll_ongoing", !h->poll_end);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "victims");
	jw_obj_begin(w);
	jw_ku64(w, "timers_late", f->victim_timers);
	jw_ku64(w, "timer_late_max_ns", f->victim_timer_max_ns);
	jw_ku64(w, "tasks_delayed", f->victim_tasks);
	jw_ku64(w, "sched_delay_max_ns", f->victim_sched_max_ns);
	jw_ku64(w, "charged_ns", f->charged_ns);
	jw_obj_end(w);
}

void report_finding_wait_json(struct jw *w, const struct analyzer *a,
			      const struct report_meta *m, const struct an_finding *f)
{
	jw_key(w, "name");
	if (f->name_len)
		jw_strn(w, f->name, f->name_len);
	else
		jw_null(w);
	if (f->kind == AN_LARGE_FUTURE) {
		jw_ku64(w, "future_size", f->size);
		jw_kbool(w, "future_boxed", f->boxed);
	}
	if (f->kind != AN_STALLED || !an_get_opts(a)->wait_events)
		return;
	jw_kstr(w, "stall_reason", an_stall_why_name(f->why));
	jw_key(w, "waiting_for");
	jw_arr_begin(w);
	for (unsigned i = 0; i < f->nwaits && i < AN_WAITS_MAX; i++)
		report_wait_json(w, &f->waits[i], f->pid, an_now(a), m);
	jw_arr_end(w);
	jw_key(w, "awaited_task");
	if (f->why == AN_STALL_JOIN_POLL || f->why == AN_STALL_JOIN_STALLED) {
		jw_obj_begin(w);
		jw_ku64(w, "task_id", f->other_task);
		jw_kstr(w, "state", f->why == AN_STALL_JOIN_POLL ? "in_long_poll" : "stalled");
		jw_ku64(w, "for_ns", f->other_ns);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
	if (f->why == AN_STALL_TIMER_LATE)
		jw_ku64(w, "timer_late_ns", f->other_ns);
	if (f->why == AN_STALL_SYNC || f->why == AN_STALL_LOCK_HELD)
		jw_ku64(w, "other_waiters", f->sharers);
	if (f->why == AN_STALL_LOCK_HELD) {
		jw_key(w, "held_by");
		report_lock_holder_json(w, a, f->pid, f->prim, f->other_task, f->other_site,
					f->other_ns, f->other_holders);
	}
}

void report_lock_holder_json(struct jw *w, const struct analyzer *a, uint32_t pid, unsigned prim,
			     uint64_t holder, const struct an_site *site, uint64_t held_ns,
			     uint32_t others)
{
	struct an_task_summary h;

	jw_obj_begin(w);
	jw_kstr(w, "primitive", lk_prim_type(prim));
	jw_kstr(w, "mode", prim == TET_LOCK_WRITE ? "write" : prim == TET_LOCK_READ ? "read" : NULL);
	jw_ku64(w, "task_id", holder);
	report_json_site_ref(w, site);
	jw_ku64(w, "held_ns", held_ns);
	jw_ku64(w, "other_holders", others);
	jw_kstr(w, "holder_state", an_task_get(a, pid, holder, &h) ? an_state_name(h.state) : NULL);
	jw_obj_end(w);
}

void report_deadlock_json(struct jw *w, const struct report_meta *m, const struct an_finding *f)
{
	jw_key(w, "cycle");
	jw_arr_begin(w);
	for (unsigned i = 0; i < f->nmembers && i < AN_CYCLE_MAX; i++) {
		const struct an_cycle_member *x = &f->members[i];
		char hex[24];

		jw_obj_begin(w);
		jw_ku64(w, "task_id", x->task_id);
		report_json_site_ref(w, x->site);
		jw_key(w, "name");
		if (x->name_len)
			jw_strn(w, x->name, x->name_len);
		else
			jw_null(w);
		jw_ku64(w, "pending_since_ns", report_rel(m, x->pending_since));
		jw_key(w, "waits_on");
		jw_obj_begin(w);
		jw_kstr(w, "kind", an_wait_name(x->wait_kind));
		if (x->wait_kind == TET_WAIT_SEMAPHORE) {
			snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)x->object);
			jw_kstr(w, "primitive", lk_prim_type(x->prim));
			jw_kstr(w, "mode", x->prim == TET_LOCK_WRITE || x->prim == TET_LOCK_READ ?
				(x->permits > 1 ? "write" : "read") : NULL);
			jw_kstr(w, "address", hex);
			jw_ku64(w, "permits", x->permits);
			jw_ku64(w, "held_by", x->on_task);
			jw_ku64(w, "held_since_ns", report_rel(m, x->held_since));
		} else {
			jw_ku64(w, "task_id", x->object);
		}
		jw_obj_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_ku64(w, "more_tasks", f->members_more);
}

/* ---- JSON ---- */
void report_json_hist_summary(struct jw *w, const char *key, const struct hist_summary *s)
{
	jw_key(w, key);
	jw_obj_begin(w);
	jw_ku64(w, "count", s->count);
	if (s->count) {
		jw_ku64(w, "min", s->min);
		jw_ku64(w, "p50", s->p50);
		jw_ku64(w, "p90", s->p90);
		jw_ku64(w, "p99", s->p99);
		jw_ku64(w, "max", s->max);
		jw_kdouble(w, "mean", s->mean);
		jw_ku64(w, "sum", s->sum);
	}
	jw_obj_end(w);
}

void report_json_hist(struct jw *w, const char *key, const struct hist *h)
{
	struct hist_summary s;

	hist_summarize(h, &s);
	report_json_hist_summary(w, key, &s);
}

void report_json_site_ref(struct jw *w, const struct an_site *s)
{
	jw_key(w, "location");
	if (s && !s->unknown && !s->other && !s->typed)
		jw_strn(w, s->location, s->location_len);
	else
		jw_null(w);
	jw_key(w, "type_name");
	if (s && !s->unknown && !s->other)
		jw_strn(w, s->type_name, s->type_len);
	else
		jw_null(w);
}

/* ---- pieces the HTML page's data blob shares (same keys, same order) ---- */
void report_json_started(struct jw *w, const struct report_meta *m)
{
	char iso[64];
	struct tm tm;

	gmtime_r(&m->wall_start.tv_sec, &tm);
	strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%SZ", &tm);
	jw_kstr(w, "started_at", iso);
	jw_ku64(w, "duration_ns", m->end_ns > m->start_ns ? m->end_ns - m->start_ns : 0);
	/* the _at_ns offsets' origin on the system's clock: lines up with other tools' stamps */
	jw_ku64(w, "monotonic_start_ns", m->start_ns);
}

void report_json_thresholds(struct jw *w, const struct an_opts *o, bool all)
{
	/* a RATIO's member is a double, every other one a uint64_t (thresholds.c checks) */
#define AN_THRESHOLD(kind, option, unit, field, def, min, max, help)                           \
	if (all || AN_UNIT_##unit == AN_UNIT_DURATION)                                           \
		_Generic(o->field, double: jw_kdouble, default: jw_ku64)(w, #field, o->field);
#include "thresholds.def"
}

void report_json_totals_head(struct jw *w, const struct an_totals *t, const struct report_meta *m)
{
	jw_ku64(w, "events", t->events);
	jw_ku64(w, "drops", report_total_drops(m));
	jw_ku64(w, "polls", report_total(m, t, TET_EV_POLL_BEGIN));
	jw_ku64(w, "wakes", report_total(m, t, TET_EV_WAKE));
	jw_ku64(w, "spawns", report_total(m, t, TET_EV_SPAWN));
}

void report_json_worker_counts(struct jw *w, const struct an_worker *wk)
{
	jw_ku64(w, "pid", wk->pid);
	jw_ki64(w, "worker", wk->index);
	jw_ku64(w, "tid", wk->tid);
	jw_ku64(w, "polls", wk->polls);
	jw_ku64(w, "busy_ns", wk->busy_ns);
	jw_ku64(w, "parks", wk->parks);
	jw_ku64(w, "parked_ns", wk->parked_ns);
}

void report_json_why_head(struct jw *w, const struct why_report *r)
{
	jw_kbool(w, "sched", r->sched);
	jw_kstr(w, "why_no_sched", r->why_no_sched);
	jw_ku64(w, "profile_hz", r->profile_hz);
	jw_kstr(w, "why_no_profile", r->why_no_profile);
	jw_kbool(w, "steal", r->steal);
	jw_kstr(w, "why_no_steal", r->why_no_steal);
	jw_ku64(w, "stolen_periods", r->stolen_periods);
	jw_ku64(w, "stolen_ns", r->stolen_ns);
	jw_ku64(w, "cpu_samples", r->samples);
	jw_ku64(w, "cpu_samples_in_polls", r->samples_in_polls);
	jw_ku64(w, "offcpu_periods_in_polls", r->offcpu_periods);
	jw_ku64(w, "stack_errors", r->stack_errors);
	jw_ku64(w, "offcpu_periods_lost", r->offcpu_lost);
	jw_ku64(w, "splits_doubtful", r->splits_doubtful);
	jw_ku64(w, "cpu_samples_lost", r->samples_lost);
	jw_key(w, "notes");
	jw_arr_begin(w);
	for (size_t i = 0; i < r->nnotes; i++)
		jw_str(w, r->notes[i]);
	jw_arr_end(w);
}

void report_json_remote_write(struct jw *w, const struct rw_stats *s)
{
	jw_key(w, "remote_write");
	jw_obj_begin(w);
	jw_kstr(w, "url", s->url);
	jw_ku64(w, "interval_ns", s->interval_ns);
	jw_ku64(w, "pushes", s->pushes);
	jw_ku64(w, "samples", s->samples);
	jw_ku64(w, "retries", s->retries);
	jw_key(w, "failures");
	jw_obj_begin(w);
	jw_ku64(w, "connection", s->fail_connection);
	jw_ku64(w, "server", s->fail_server);
	jw_ku64(w, "client", s->fail_client);
	jw_obj_end(w);
	jw_key(w, "dropped_samples");
	jw_obj_begin(w);
	jw_ku64(w, "queue_full", s->dropped_queue);
	jw_ku64(w, "rejected", s->dropped_rejected);
	jw_ku64(w, "at_exit", s->dropped_exit);
	jw_obj_end(w);
	jw_ku64(w, "queue_max", s->queue_max);
	jw_ku64(w, "last_status", (uint64_t)(s->last_status > 0 ? s->last_status : 0));
	jw_obj_end(w);
}
