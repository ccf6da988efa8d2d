// SPDX-License-Identifier: MIT
/*
 * model.c — the text and figures every report shares (report.h): a finding's sentence and its
 * advice, what a pending task waits for, lock holders, a flight-recorder dump's line, the
 * drops' impact and advice, totals of a sampled capture, the workers' order, why a poll was slow
 * in one line. The terminal summary (terminal.c), the JSON report (jsonreport.c), report.html,
 * the Perfetto trace and the metrics are written from these.
 *
 * Everything read from the traced process (file names, type names) is untrusted: the JSON
 * writer escapes it (and replaces invalid UTF-8), text for people goes through text_sanitize().
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "batch_stats.h"
#include "locks.h"
#include "report.h"
#include "vocab.h"
#include "text.h"
#include "units.h"
static const char *const finding_advice[AN_FINDING_KINDS] = {
#define AN_FINDING(e, name, title, one, many, rank, trigger, advice) [AN_##e] = advice,
#include "findings.def"
#undef AN_FINDING
};

/* "all 2 worker threads of pid 41 held for 2.5s by long polls (task 3 spawned at src/a.rs:10:5
 * on worker 0, 2.5s; task 4 …); 5 timers fell due in it and fired up to 2.4s late, 3 woken
 * tasks waited up to 2.4s to be polled (9.1s of their waits charged here)" */
static void starvation_text(const struct an_finding *f, char *what, size_t len)
{
	char v[32], d[32], loc[1200];
	size_t l;

	snprintf(what, len, "all %llu worker thread%s of pid %u held at once for %s%s by long polls (",
		 (unsigned long long)f->polls, f->polls == 1 ? "" : "s", f->pid,
		 fmt_duration(f->value_ns, v, sizeof(v)), f->ongoing ? " and counting" : "");
	for (unsigned i = 0; i < f->nholders && i < AN_HOLDERS_MAX; i++) {
		const struct an_holder *h = &f->holders[i];
		uint64_t pd = h->poll_end > h->poll_begin ? h->poll_end - h->poll_begin :
			      f->first_ts + f->value_ns - h->poll_begin;

		report_site_loc(h->site, loc, sizeof(loc));
		l = strlen(what);
		snprintf(what + l, len - l, "%stask %llu %s%s on worker %d, a %s%s poll", i ? "; " : "",
			 (unsigned long long)h->task_id,
			 h->site && !h->site->unknown && !h->site->typed ? "spawned at " : "", loc,
			 h->worker, fmt_duration(pd, d, sizeof(d)), h->poll_end ? "" : "+");
	}
	l = strlen(what);
	if (f->polls > f->nholders)
		snprintf(what + l, len - l, "; %llu more", (unsigned long long)(f->polls - f->nholders));
	l = strlen(what);
	snprintf(what + l, len - l, ")");
	l = strlen(what);
	if (!f->victim_timers && !f->victim_tasks) {
		snprintf(what + l, len - l, "; no timer or woken task was seen waiting on it");
		return;
	}
	if (f->victim_timers) {
		snprintf(what + l, len - l, "; %llu timer%s fell due in it and fired up to %s late",
			 (unsigned long long)f->victim_timers, f->victim_timers == 1 ? "" : "s",
			 fmt_duration(f->victim_timer_max_ns, d, sizeof(d)));
		l = strlen(what);
	}
	if (f->victim_tasks) {
		snprintf(what + l, len - l, "%s %llu woken task%s waited up to %s to be polled",
			 f->victim_timers ? "," : ";", (unsigned long long)f->victim_tasks,
			 f->victim_tasks == 1 ? "" : "s",
			 fmt_duration(f->victim_sched_max_ns, d, sizeof(d)));
		l = strlen(what);
	}
	snprintf(what + l, len - l, " (%s of their waits charged here)",
		 fmt_duration(f->charged_ns, d, sizeof(d)));
}

/* "what task 5 waits on": a lock (its type, address, the holder) or a JoinHandle */
static size_t member_wait_text(const struct an_cycle_member *x, char *buf, size_t len)
{
	if (x->wait_kind == TET_WAIT_JOIN)
		return (size_t)snprintf(buf, len, "waits on the JoinHandle of task %llu",
					(unsigned long long)x->object);
	return (size_t)snprintf(buf, len, "waits on %s 0x%llx%s held by task %llu",
				lk_prim_type(x->prim), (unsigned long long)x->object,
				x->prim == TET_LOCK_READ || x->prim == TET_LOCK_WRITE ?
				(x->permits > 1 ? " (write)" : " (read)") : "",
				(unsigned long long)x->on_task);
}

/* "deadlock of 2 tasks of pid 41 for 3.2s: task 5 'db' spawned at src/a.rs:10:5 waits on
 * tokio::sync::Mutex 0x… held by task 6; task 6 spawned at … waits on … held by task 5" */
static void deadlock_text(const struct an_finding *f, char *what, size_t len)
{
	char v[32], loc[1200], nm[200], w[300];
	size_t l;

	snprintf(what, len, "deadlock of %u task%s of pid %u for %s%s: ",
		 f->nmembers + f->members_more, f->nmembers + f->members_more == 1 ? "" : "s",
		 f->pid, fmt_duration(f->value_ns, v, sizeof(v)), f->ongoing ? " and counting" : "");
	for (unsigned i = 0; i < f->nmembers && i < AN_CYCLE_MAX; i++) {
		const struct an_cycle_member *x = &f->members[i];

		report_site_loc(x->site, loc, sizeof(loc));
		report_task_name(x->name, x->name_len, nm, sizeof(nm));
		member_wait_text(x, w, sizeof(w));
		l = strlen(what);
		snprintf(what + l, len - l, "%stask %llu%s%s%s %s%s %s", i ? "; " : "",
			 (unsigned long long)x->task_id, *nm ? " '" : "", nm, *nm ? "'" : "",
			 x->site && !x->site->unknown && !x->site->typed ? "spawned at " : "", loc, w);
	}
	l = strlen(what);
	if (f->members_more)
		snprintf(what + l, len - l, "; %u more task%s wait%s on them", f->members_more,
			 f->members_more == 1 ? "" : "s", f->members_more == 1 ? "s" : "");
}

const char *report_site_loc(const struct an_site *s, char *buf, size_t len)
{
	if (!s || s->unknown)
		return snprintf(buf, len, "(spawned before the trace)"), buf;
	if (s->other)
		return snprintf(buf, len, "(other sites)"), buf;
	if (s->typed) { /* uprobe fallback: the future type stands where the location would */
		size_t n = (size_t)snprintf(buf, len, "future ");

		if (n < len)
			text_sanitize(s->type_name, s->type_len, 0, buf + n, len - n);
		return buf;
	}
	return text_sanitize(s->location, s->location_len, 0, buf, len);
}

void report_finding_detail(const struct an_finding *f, char *buf, size_t len)
{
	char loc[1200], v[32], th[32], what[400];

	if (f->kind == AN_DEADLOCK) {
		char big[3000];

		deadlock_text(f, big, sizeof(big));
		snprintf(buf, len, "%s: %s", big, finding_advice[AN_DEADLOCK]);
		return;
	}
	if (f->kind == AN_STARVATION) {
		char big[1800];

		starvation_text(f, big, sizeof(big));
		snprintf(buf, len, "runtime starvation: %s: %s", big, finding_advice[AN_STARVATION]);
		return;
	}
	report_site_loc(f->site, loc, sizeof(loc));
	fmt_duration(f->value_ns, v, sizeof(v));
	fmt_duration(f->threshold_ns, th, sizeof(th));
	switch (f->kind) {
	case AN_LONG_POLL:
		snprintf(what, sizeof(what), "a poll took %s (threshold %s)", v, th);
		if (f->cpu_wait_ns >= 1000) {
			char w[32];
			size_t l = strlen(what);

			snprintf(what + l, sizeof(what) - l, " not counting %s its thread sat preempted",
				 fmt_duration(f->cpu_wait_ns, w, sizeof(w)));
			if (f->stolen_ns >= 1000) {
				l = strlen(what);
				snprintf(what + l, sizeof(what) - l, " (%s of it by the hypervisor)",
					 fmt_duration(f->stolen_ns, w, sizeof(w)));
			}
		}
		if (f->occurrences > 1) {
			size_t l = strlen(what);

			snprintf(what + l, sizeof(what) - l, "; %llu polls over the threshold",
				 (unsigned long long)f->occurrences);
		}
		break;
	case AN_STALLED:
		if (f->live_wakers >= 0)
			snprintf(what, sizeof(what), "pending for %s (threshold %s) with %lld live waker%s",
				 v, th, (long long)f->live_wakers,
				 f->live_wakers == 1 ? "" : "s");
		else
			snprintf(what, sizeof(what), "pending for %s (threshold %s)", v, th);
		{
			size_t l = strlen(what);

			snprintf(what + l, sizeof(what) - l, f->ongoing ? ", still without a wake" :
				 ", before a wake came");
		}
		break;
	case AN_LOST_WAKER:
		snprintf(what, sizeof(what), "pending for %s with no live waker (none cloned, or all dropped)%s",
			 v, f->contradicted ? "; a wake came later after all (a clone was missed?)" : "");
		break;
	case AN_NEVER_YIELDS:
		snprintf(what, sizeof(what), "inside one poll for %s%s (threshold %s)", v,
			 f->ongoing ? " and counting" : "", th);
		break;
	case AN_SELF_WAKE:
		snprintf(what, sizeof(what), "%llu of its wakes (%.0f%%) were self-wakes without yield_now or the coop budget, over %llu polls",
			 (unsigned long long)f->occurrences, f->ratio * 100,
			 (unsigned long long)f->polls);
		break;
	case AN_LARGE_FUTURE:
		snprintf(what, sizeof(what), "its future is %llu bytes (threshold %llu)%s",
			 (unsigned long long)f->size, (unsigned long long)f->threshold_ns,
			 f->boxed ? ", boxed by Tokio at spawn" : "");
		break;
	default:
		snprintf(what, sizeof(what), "?");
	}
	{
		char nm[TET_NAME_MAX * 4 + 8], q[TET_NAME_MAX * 4 + 8];

		report_task_name(f->name, f->name_len, nm, sizeof(nm));
		snprintf(q, sizeof(q), *nm ? " '%s'" : "", nm);
		snprintf(buf, len, "task %llu%s %s%s: %s: %s", (unsigned long long)f->task_id, q,
			 f->site && !f->site->unknown && !f->site->typed ? "spawned at " : "", loc,
			 what, (unsigned)f->kind < AN_FINDING_KINDS ? finding_advice[f->kind] : "");
	}
}

const char *report_task_name(const char *name, size_t n, char *buf, size_t len)
{
	if (!n) {
		if (len)
			*buf = 0;
		return buf;
	}
	return text_sanitize(name, n, 80, buf, len);
}

/* ---- what a pending task waits for ---- */
static const char *io_dir(uint64_t arg)
{
	if ((arg & 3) == 3)
		return "readable or writable";
	return arg & 1 ? "readable" : arg & 2 ? "writable" : "ready";
}

const char *report_wait_text(const struct an_wait *w, uint32_t pid, uint64_t now,
			     const struct report_meta *m, char *buf, size_t len)
{
	static const char *const title[TET_WAIT_CODES] = {
		[TET_WAIT_NOTIFY] = "tokio::sync::Notify",
		[TET_WAIT_SEMAPHORE] = "a semaphore (Mutex, RwLock, Semaphore or a bounded mpsc send)",
		[TET_WAIT_MPSC] = "an mpsc channel (receive)",
		[TET_WAIT_ONESHOT] = "a oneshot channel (receive)",
		[TET_WAIT_BROADCAST] = "a broadcast channel (receive)",
	};
	char d[32], what[512];
	const char *kind = NULL;
	int fd;

	switch (w->kind) {
	case TET_WAIT_TIMER: {
		uint64_t due = w->arg > UINT64_MAX - w->ts ? UINT64_MAX : w->ts + w->arg;

		if (now < due)
			snprintf(buf, len, "a timer due in %s", fmt_duration(due - now, d, sizeof(d)));
		else
			snprintf(buf, len, "a timer %s past due", fmt_duration(now - due, d, sizeof(d)));
		break;
	}
	case TET_WAIT_IO:
		*what = 0;
		fd = m && m->io_fd ? m->io_fd(m->io_ctx, pid, w->object, what, sizeof(what), &kind) : -1;
		if (fd >= 0)
			snprintf(buf, len, "I/O: fd %d %s (%s)", fd, io_dir(w->arg), *what ? what : "?");
		else
			snprintf(buf, len, "I/O: %s, driver token 0x%llx (fd unknown)", io_dir(w->arg),
				 (unsigned long long)w->object);
		break;
	case TET_WAIT_JOIN:
		snprintf(buf, len, "the JoinHandle of task %llu", (unsigned long long)w->object);
		break;
	case TET_WAIT_SEMAPHORE:
		snprintf(buf, len, "%s 0x%llx, %llu permit%s", title[w->kind],
			 (unsigned long long)w->object, (unsigned long long)w->arg,
			 w->arg == 1 ? "" : "s");
		break;
	default:
		snprintf(buf, len, "%s 0x%llx", w->kind < TET_WAIT_CODES ? title[w->kind] : "?",
			 (unsigned long long)w->object);
	}
	return buf;
}

/* The semaphore wait of a wait list on `object` (0: the first one); NULL: none. */
const struct an_wait *report_lock_wait(const struct an_wait *v, unsigned n, uint64_t object)
{
	for (unsigned i = 0; i < n && i < AN_WAITS_MAX; i++)
		if (v[i].kind == TET_WAIT_SEMAPHORE && (!object || v[i].object == object))
			return &v[i];
	return NULL;
}

/* "; waiting on tokio::sync::Mutex 0x… held by task 12, spawned at src/db.rs:40:9, for 5.1s,
 * itself waiting on …" (w: the semaphore wait; holder as the analyzer last judged it) */
void report_lock_held_text(const struct analyzer *a, const struct report_meta *m, uint32_t pid,
			   const struct an_wait *w, unsigned prim, uint64_t holder,
			   const struct an_site *site, uint64_t held_ns, uint32_t others,
			   char *buf, size_t len)
{
	struct an_task_summary h;
	char loc[1200], d[32], t[800];
	size_t l;

	report_site_loc(site, loc, sizeof(loc));
	snprintf(buf, len, "; waiting on %s 0x%llx%s held by task %llu%s%s, for %s",
		 lk_prim_type(prim), (unsigned long long)(w ? w->object : 0),
		 prim == TET_LOCK_WRITE ? " (write)" : prim == TET_LOCK_READ ? " (read)" : "",
		 (unsigned long long)holder,
		 site && !site->unknown && !site->typed ? ", spawned at " : site ? " " : "",
		 site ? loc : "", fmt_duration(held_ns, d, sizeof(d)));
	l = strlen(buf);
	if (others)
		snprintf(buf + l, len - l, " (and %u other holder%s)", others, others == 1 ? "" : "s");
	l = strlen(buf);
	if (!an_task_get(a, pid, holder, &h)) {
		snprintf(buf + l, len - l, ", a task not seen otherwise");
		return;
	}
	switch (h.state) {
	case AN_PENDING:
		if (h.nwaits)
			snprintf(buf + l, len - l, ", itself waiting on %s",
				 report_wait_text(&h.waits[h.waits[0].kind == TET_WAIT_TIMER && h.nwaits > 1],
						  pid, an_now(a), m, t, sizeof(t)));
		else
			snprintf(buf + l, len - l, ", itself pending on nothing Tokio's probes name");
		break;
	case AN_POLLING:
		snprintf(buf + l, len - l, ", itself running (in a poll)");
		break;
	case AN_TERMINATED:
	case AN_DONE:
		snprintf(buf + l, len - l, ", a task that has ended (the guard outlived it)");
		break;
	default:
		snprintf(buf + l, len - l, ", itself waiting to be polled");
	}
}

void report_wait_finding_text(const struct analyzer *a, const struct report_meta *m,
			      const struct an_finding *f, char *buf, size_t len)
{
	uint64_t now = an_now(a);
	char t[800], d[32];
	size_t l;

	if (f->kind != AN_STALLED || !an_get_opts(a)->wait_events)
		return;
	l = strlen(buf);
	if (!f->nwaits) {
		snprintf(buf + l, len - l, "; it waits on nothing Tokio's probes name (not a Tokio timer, I/O resource, sync primitive or JoinHandle)");
		return;
	}
	switch (f->why) {
	case AN_STALL_JOIN_POLL:
		snprintf(buf + l, len - l, "; waiting on the JoinHandle of task %llu, which is inside a %s poll",
			 (unsigned long long)f->other_task, fmt_duration(f->other_ns, d, sizeof(d)));
		return;
	case AN_STALL_JOIN_STALLED:
		snprintf(buf + l, len - l, "; waiting on the JoinHandle of task %llu, which is stalled itself (pending for %s)",
			 (unsigned long long)f->other_task, fmt_duration(f->other_ns, d, sizeof(d)));
		return;
	case AN_STALL_TIMER_LATE:
		snprintf(buf + l, len - l, "; its timer is %s past due and has not woken it",
			 fmt_duration(f->other_ns, d, sizeof(d)));
		return;
	case AN_STALL_LOCK_HELD:
		report_lock_held_text(a, m, f->pid, report_lock_wait(f->waits, f->nwaits, f->other_object),
				      f->prim, f->other_task,
				      f->other_site, f->other_ns, f->other_holders, buf + l, len - l);
		return;
	default:
		break;
	}
	for (unsigned i = 0; i < f->nwaits && i < AN_WAITS_MAX; i++) {
		l = strlen(buf);
		snprintf(buf + l, len - l, "%s%s", i ? " or " : "; waiting on ",
			 report_wait_text(&f->waits[i], f->pid, now, m, t, sizeof(t)));
	}
	if (f->sharers) {
		l = strlen(buf);
		snprintf(buf + l, len - l, ", with %u other task%s waiting on it", f->sharers,
			 f->sharers == 1 ? "" : "s");
	}
	l = strlen(buf);
	snprintf(buf + l, len - l, ", never signalled");
}

const char *report_drop_impact(unsigned type)
{
	static const char *const impact[TET_EV_COUNT] = {
		[TET_EV_SPAWN] = "spawns, spawn-site attribution (tasks fall under 'spawned before the trace'), lifetimes, lost_waker",
		[TET_EV_POLL_BEGIN] = "polls, busy time, poll durations, scheduling delay, long_poll, never_yields",
		[TET_EV_POLL_END] = "busy time, poll durations, pending time, long_poll, self_wake, lost_waker",
		[TET_EV_YIELD] = "yields by reason, self_wake",
		[TET_EV_WAKE] = "wakes, pending time, scheduling delay, stalled, self_wake, lost_waker",
		[TET_EV_WAKER_CLONE] = "live wakers: lost_waker detection switched off",
		[TET_EV_WAKER_DROP] = "live wakers: lost_waker detection switched off",
		[TET_EV_TERMINATE] = "terminations, lifetimes, live task counts",
		[TET_EV_PARK] = "worker parked time",
		[TET_EV_UNPARK] = "worker parked time",
		[TET_EV_WAIT] = "wait reasons: a stalled task's reason may be unknown (judged by time alone)",
		[TET_EV_META] = "task names and future sizes, large_future",
		[TET_EV_LOCK] = "lock holders: a waiter's holder may be unnamed or stale, deadlock detection switched off",
	};

	return type < TET_EV_COUNT ? impact[type] : "?";
}

const char *report_signal_name(int sig, char *buf, size_t len)
{
	const char *abbrev = sig > 0 ? sigabbrev_np(sig) : NULL; /* glibc 2.32 */

	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else
		snprintf(buf, len, "signal %d", sig);
	return buf;
}

/* "+12.345s" (or "-0.250s" before the capture's start): a moment as an offset from it */
static const char *fmt_offset(const struct report_meta *m, uint64_t ts, char *buf, size_t len)
{
	bool neg = ts < m->start_ns;
	uint64_t d = neg ? m->start_ns - ts : ts - m->start_ns;

	snprintf(buf, len, "%c%llu.%03llus", neg ? '-' : '+', (unsigned long long)(d / NSEC_PER_SEC),
		 (unsigned long long)(d / NSEC_PER_MSEC % 1000));
	return buf;
}

/* The sampling rule at work, one sentence for the terminal and report.html (docs/sampling.md);
 * "" when there is nothing to say (every task, nothing set aside). */
const char *report_sampling_line(const struct report_meta *m, const struct analyzer *a, char *buf,
				 size_t len)
{
	const struct an_sampling *sm = an_get_sampling(a);
	const struct an_totals *t = an_totals(a);
	uint64_t aside = t->tasks_set_aside_rate + t->tasks_set_aside_gap;

	*buf = 0;
	if (!m->batch)
		return buf;
	if (m->batch->why_fixed) {
		snprintf(buf, len, "sampling: not adaptive (%s)", m->batch->why_fixed);
		return buf;
	}
	if (!sm->known || (sm->rate_max <= 1 && !aside && !sm->gaps))
		return buf;
	snprintf(buf, len,
		 "sampling: %s, 1 task in %u at the end (highest %u, %zu rate%s set), %llu task%s set aside whole (%llu as the rate rose, %llu alive while batches were lost); per-site and per-task figures from the tasks followed, totals from every task",
		 m->batch->adaptive ? "adaptive" : "fixed", sm->rate, sm->rate_max,
		 sm->nchanges + (size_t)sm->changes_omitted, sm->nchanges + sm->changes_omitted == 1 ? "" : "s",
		 (unsigned long long)aside, aside == 1 ? "" : "s",
		 (unsigned long long)t->tasks_set_aside_rate, (unsigned long long)t->tasks_set_aside_gap);
	return buf;
}

const char *report_flight_line(const struct report_meta *m, char *buf, size_t len)
{
	const struct report_flight *fl = m->flight;
	const struct report_trigger *tr;
	char spec[400], detail[1100], at[32], from[32], to[32];
	const char *sp;

	if (!fl) {
		snprintf(buf, len, "?");
		return buf;
	}
	tr = &fl->trigger;
	sp = tr->spec ? tr->spec : tr->kind ? tr->kind : "?";
	text_sanitize(sp, strlen(sp), 80, spec, sizeof(spec));
	text_sanitize(tr->detail, strnlen(tr->detail, sizeof(tr->detail)), 0, detail, sizeof(detail));
	snprintf(buf, len, "dump %llu: trigger %s at %s%s%s%s, window %s..%s",
		 (unsigned long long)fl->dump_index, spec, fmt_offset(m, tr->ts, at, sizeof(at)),
		 *detail ? " (" : "", detail, *detail ? ")" : "",
		 fmt_offset(m, fl->from_ns, from, sizeof(from)), fmt_offset(m, fl->to_ns, to, sizeof(to)));
	return buf;
}

bool report_is_trigger(const struct report_meta *m, const struct an_finding *f)
{
	const struct report_trigger *tr = m->flight ? &m->flight->trigger : NULL;

	if (!tr || !tr->has_task || !tr->kind || f->pid != tr->pid ||
	    strcmp(an_finding_name(f->kind), tr->kind))
		return false;
	return f->task_id ? f->task_id == tr->task_id : f->header_ptr == tr->header_ptr;
}

uint64_t report_total_drops(const struct report_meta *m)
{
	uint64_t d = 0;

	for (int i = 0; i < TET_EV_COUNT; i++)
		d += m->counters.drops[i];
	return d;
}

uint64_t report_batches_lost_otherwise(const struct report_meta *m)
{
	uint64_t known;

	if (!m->batch || !m->batch->stats)
		return 0;
	/* a batch the live analysis skipped is a gap to it only between batches of a thread it
	 * follows: skipped first or last batches of a thread leave this figure understated */
	known = m->counters.batch_drops + m->batch->skipped_by_analysis;
	return m->batch->stats->lost_batches > known ? m->batch->stats->lost_batches - known : 0;
}

uint64_t report_total(const struct report_meta *m, const struct an_totals *t, unsigned type)
{
	if (m->batch && m->sample_rate > 1) {
		switch (type) {
		case TET_EV_SPAWN: case TET_EV_POLL_BEGIN: case TET_EV_WAKE: case TET_EV_TERMINATE:
		case TET_EV_PARK: case TET_EV_UNPARK:
			/* what the threads counted, in the batches received and (BPF read their
			 * heads) in those the full ring lost */
			return m->batch->exact[type] + (m->counters_valid ? m->counters.drops[type] : 0);
		}
	}
	switch (type) {
	case TET_EV_SPAWN: return t->spawns;
	case TET_EV_POLL_BEGIN: return t->polls;
	case TET_EV_POLL_END: return t->by_type[TET_EV_POLL_END];
	case TET_EV_YIELD: return t->yields;
	case TET_EV_WAKE: return t->wakes;
	case TET_EV_WAKER_CLONE: return t->waker_clones;
	case TET_EV_WAKER_DROP: return t->waker_drops;
	case TET_EV_TERMINATE: return t->terminates;
	case TET_EV_PARK: return t->parks;
	case TET_EV_UNPARK: return t->unparks;
	}
	return 0;
}

static int cmp_worker(const void *x, const void *y)
{
	const struct an_worker *a = *(const struct an_worker *const *)x;
	const struct an_worker *b = *(const struct an_worker *const *)y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

const struct an_worker **report_sorted_workers(const struct analyzer *a, size_t *n)
{
	const struct an_worker *const *w;
	const struct an_worker **v;

	*n = an_workers(a, &w);
	v = malloc((*n ? *n : 1) * sizeof(*v));
	if (!v) {
		*n = 0;
		return NULL;
	}
	memcpy(v, w, *n * sizeof(*v));
	qsort(v, *n, sizeof(*v), cmp_worker);
	return v;
}

/* ---- one line per finding (terminal, JSON, HTML) ---- */
static size_t wadd(char *buf, size_t len, size_t o, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static size_t wadd(char *buf, size_t len, size_t o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o >= len)
		return o;
	va_start(ap, fmt);
	n = vsnprintf(buf + o, len - o, fmt, ap);
	va_end(ap);
	return n < 0 ? o : o + (size_t)n;
}

/* "where it slept": the user frames from the leaf to the program's own, at most 6 */
static size_t blocked_chain(char *buf, size_t len, size_t o, const struct why_stack *st)
{
	uint32_t first = 0, shown = 0;

	while (first < st->nframes && !strncmp(st->frames[first], "[kernel] ", 9))
		first++;
	for (uint32_t i = first; i < st->nframes && shown < 6; i++) {
		if (shown == 4 && st->user_leaf != UINT32_MAX && st->user_leaf > i) {
			o = wadd(buf, len, o, " ← …");
			i = st->user_leaf;
		}
		o = wadd(buf, len, o, " ← %s", st->frames[i]);
		shown++;
		if (i == st->user_leaf)
			break;
	}
	return o;
}

const char *why_finding_line(const struct why_finding *wf, char *buf, size_t len)
{
	char a[32], b[32], c[32];
	size_t o = 0;

	buf[0] = 0;
	if (wf->known) {
		o = wadd(buf, len, o, "on CPU %s · preempted %s",
			fmt_duration(wf->on_cpu_ns, a, sizeof(a)),
			fmt_duration(wf->preempted_ns, b, sizeof(b)));
		if (wf->stolen_ns)
			o = wadd(buf, len, o, " (%s by the hypervisor)",
				fmt_duration(wf->stolen_ns, a, sizeof(a)));
		o = wadd(buf, len, o, " · blocked %s", fmt_duration(wf->blocked_ns, c, sizeof(c)));
		if (wf->doubtful)
			o = wadd(buf, len, o, "%s", WHY_DOUBT_WORDS);
	}
	if (wf->blocked_top) {
		o = wadd(buf, len, o, "%sblocked %s in %s", o ? "; " : "",
			fmt_duration(wf->blocked_top->ns, a, sizeof(a)),
			wf->blocked_top->syscall ? wf->blocked_top->syscall : "the kernel");
		o = blocked_chain(buf, len, o, wf->blocked_top);
	}
	if (wf->nhot) {
		o = wadd(buf, len, o, "%shottest of %llu CPU samples:", o ? "; " : "",
			(unsigned long long)wf->samples);
		for (size_t i = 0; i < wf->nhot && i < 3; i++)
			o = wadd(buf, len, o, "%s %s (%.0f %%)", i ? "," : "", wf->hot[i].frame,
				wf->hot[i].share * 100);
	}
	return buf;
}

/* What would lose less, when drops are more than 2 % of the events; "" otherwise. */
const char *report_drop_advice(const struct report_meta *m, const struct an_totals *t, char *buf,
			       size_t len)
{
	uint64_t drops = report_total_drops(m);
	size_t n = 0;

	*buf = 0;
	if (!m->counters_valid || !drops || drops * 50 < t->events + drops)
		return buf;
	n += (size_t)snprintf(buf + n, len - n, "%.1f %% of the events were lost: ",
			      100.0 * (double)drops / (double)(t->events + drops));
	if (m->ringbuf && n < len)
		n += (size_t)snprintf(buf + n, len - n, "a larger ring (--ringbuf-size, %zuM now)",
				      m->ringbuf >> 20);
	if (n < len && m->batch && m->sample_rate <= 1)
		n += (size_t)snprintf(buf + n, len - n, ", sampling (--sample-rate 10)");
	else if (n < len && !m->batch && m->mode && !strcmp(m->mode, "usdt"))
		n += (size_t)snprintf(buf + n, len - n, ", batched capture (a target built by this kit's current scripts/tokio-usdt-build), fewer probe classes (--probes)");
	else if (n < len && !m->batch)
		n += (size_t)snprintf(buf + n, len - n, ", fewer probe classes (--probes)");
	if (n < len)
		snprintf(buf + n, len - n, ", or a lower --nice so the tracer keeps up");
	return buf;
}

/* Estimated time the probes added to the traced process: every raw::poll pays an entry uprobe
 * and a uretprobe, every other event one uprobe (measured per call at start). */
double report_fallback_overhead_ns(const struct report_fallback *f, const struct an_totals *t)
{
	uint64_t other = t->events > 2 * t->polls ? t->events - 2 * t->polls : 0;

	return (double)t->polls * f->uretprobe_ns + (double)other * f->uprobe_ns;
}

const char *report_poll_result(unsigned code, char *buf, size_t len)
{
	const char *l = code < TET_POLL_CODES ? tet_code_label(TET_SET_POLL, code) : NULL;

	if (!l)
		return "?";
	snprintf(buf, len, "%c%s", toupper((unsigned char)l[0]), l + 1);
	return buf;
}

const char *report_remote_write_line(const struct rw_stats *w, char *buf, size_t len)
{
	snprintf(buf, len, "remote write to %s: %llu push%s delivered (%llu samples), %llu retr%s; failed requests: %llu connection, %llu server (5xx), %llu client (4xx); samples dropped: %llu queue full, %llu refused, %llu at exit",
		 w->url ? w->url : "?", (unsigned long long)w->pushes, w->pushes == 1 ? "" : "es",
		 (unsigned long long)w->samples, (unsigned long long)w->retries,
		 w->retries == 1 ? "y" : "ies", (unsigned long long)w->fail_connection,
		 (unsigned long long)w->fail_server, (unsigned long long)w->fail_client,
		 (unsigned long long)w->dropped_queue, (unsigned long long)w->dropped_rejected,
		 (unsigned long long)w->dropped_exit);
	return buf;
}
