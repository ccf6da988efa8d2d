// SPDX-License-Identifier: MIT
/*
 * report.c — terminal summary and JSON report (schema: docs/report-schema.md).
 *
 * Everything read from the traced process (file names, type names) is untrusted: the JSON
 * writer escapes it (and replaces invalid UTF-8), the terminal gets report_sanitize()d text.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "json.h"
#include "locks.h"
#include "report.h"
#include "vocab.h"
#include "text.h"
#include "units.h"

static const char *const finding_advice[AN_FINDING_KINDS] = {
	[AN_LONG_POLL] = "something blocks the worker thread inside this task (a synchronous call, a lock, or CPU-bound work without .await): move it to spawn_blocking or make it async",
	[AN_STALLED] = "it waits for something that has not happened (a channel nobody sends on, a lock, a slow upstream)",
	[AN_LOST_WAKER] = "it returned Pending without keeping a waker, so nothing can ever wake it: a future that forgets cx.waker()",
	[AN_NEVER_YIELDS] = "it has not returned to the scheduler: a loop without .await, or a blocking call, starves the other tasks of this worker",
	[AN_SELF_WAKE] = "it wakes itself instead of waiting: a busy loop through the scheduler (wake_by_ref + Pending)",
	[AN_LARGE_FUTURE] = "a large future is moved whole when spawned and every poll touches its pages: Box::pin what it holds across .await, or the future itself",
	[AN_DEADLOCK] = "each of these tasks waits for the next one and none can go on by itself: take the locks in one order everywhere, do not hold a lock while awaiting a task that needs it, or bound the waits (timeout, try_lock)",
	[AN_STARVATION] = "while every worker sat inside these polls nothing else of the runtime ran, not even its timers and I/O driver: the tasks and timers that waited are victims, not stalled — fix the long polls (spawn_blocking, block_in_place, or .await inside the loop)",
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

static uint64_t rel(const struct report_meta *m, uint64_t ts);

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

/* ---- text helpers ---- */
const char *report_sanitize(const char *s, size_t n, size_t max_chars, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0, chars = 0;

	if (!len)
		return buf;
	if (!s) {
		snprintf(buf, len, "?");
		return buf;
	}
	for (size_t i = 0; i < n;) {
		size_t l = utf8_seq_len(p + i, n - i, true); /* no U+2028/9 on a terminal */
		char tmp[8];
		size_t tl;

		if (max_chars && chars >= max_chars) {
			if (o + 4 <= len) {
				memcpy(buf + o, "\xe2\x80\xa6", 3);
				o += 3;
			}
			break;
		}
		if (l == 1 && p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\') {
			tmp[0] = (char)p[i];
			tl = 1;
		} else if (l == 1 && p[i] == '\\') {
			memcpy(tmp, "\\\\", 2);
			tl = 2;
		} else if (l > 1) {
			memcpy(tmp, p + i, l);
			tl = l;
		} else {
			snprintf(tmp, sizeof(tmp), "\\x%02x", p[i]);
			tl = 4;
			l = 1;
		}
		if (o + tl + 1 > len)
			break;
		memcpy(buf + o, tmp, tl);
		o += tl;
		i += l;
		chars++;
	}
	buf[o] = 0;
	return buf;
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
			report_sanitize(s->type_name, s->type_len, 0, buf + n, len - n);
		return buf;
	}
	return report_sanitize(s->location, s->location_len, 0, buf, len);
}

static const char *site_type(const struct an_site *s, size_t max, char *buf, size_t len)
{
	if (!s || s->unknown || s->other)
		return snprintf(buf, len, "?"), buf;
	return report_sanitize(s->type_name, s->type_len, max, buf, len);
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
	return report_sanitize(name, n, 80, buf, len);
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
		jw_ku64(w, "poll_began_at_ns", rel(m, h->poll_begin));
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

void report_task_wait_json(struct jw *w, const struct analyzer *a, const struct report_meta *m,
			   const struct an_task_summary *t, uint64_t now)
{
	const struct ur_inflight *req;

	jw_key(w, "name");
	if (t->name_len)
		jw_strn(w, t->name, t->name_len);
	else
		jw_null(w);
	jw_key(w, "future_size");
	if (t->meta_seen)
		jw_u64(w, t->future_size);
	else
		jw_null(w);
	jw_key(w, "future_boxed");
	if (t->meta_seen)
		jw_bool(w, t->future_boxed);
	else
		jw_null(w);
	jw_key(w, "wait");
	if (t->state != AN_PENDING || !an_get_opts(a)->wait_events) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w);
	if ((req = report_uring_task_request(a, t))) {
		report_uring_task_wait(w, a, m, req);
	} else {
		jw_kstr(w, "kind", an_wait_name(t->nwaits ? (t->waits[0].kind == TET_WAIT_TIMER && t->nwaits > 1 ?
							     t->waits[1].kind : t->waits[0].kind) :
						AN_WAIT_UNKNOWN));
		jw_kstr(w, "class", an_wait_class_name(an_wait_class(t, now)));
	}
	jw_key(w, "waits");
	jw_arr_begin(w);
	for (unsigned i = 0; i < t->nwaits && i < AN_WAITS_MAX; i++)
		report_wait_json(w, &t->waits[i], t->pid, now, m);
	jw_arr_end(w);
	jw_key(w, "held_by");
	{
		const struct an_wait *lw = report_lock_wait(t->waits, t->nwaits, 0);
		const struct lk_lock *k = lw ? an_lock(a, t->pid, lw->object) : NULL;
		struct an_task_summary h;

		if (k && k->nholders)
			report_lock_holder_json(w, a, t->pid, k->prim, k->h[0].task_id,
						an_task_get(a, t->pid, k->h[0].task_id, &h) ? h.site : NULL,
						now > k->h[0].since ? now - k->h[0].since : 0,
						k->nholders - 1);
		else
			jw_null(w);
	}
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
		jw_ku64(w, "pending_since_ns", rel(m, x->pending_since));
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
			jw_ku64(w, "held_since_ns", rel(m, x->held_since));
		} else {
			jw_ku64(w, "task_id", x->object);
		}
		jw_obj_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_ku64(w, "more_tasks", f->members_more);
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
	report_sanitize(sp, strlen(sp), 80, spec, sizeof(spec));
	report_sanitize(tr->detail, strnlen(tr->detail, sizeof(tr->detail)), 0, detail, sizeof(detail));
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

uint64_t report_total(const struct report_meta *m, const struct an_totals *t, unsigned type)
{
	if (m->batch && m->sample_rate > 1) {
		switch (type) {
		case TET_EV_SPAWN: case TET_EV_POLL_BEGIN: case TET_EV_WAKE: case TET_EV_TERMINATE:
		case TET_EV_PARK: case TET_EV_UNPARK:
			return m->batch->exact[type];
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

/* ---- terminal ---- */
/* The program's sites first, then Tokio's own (its workers' one poll encloses every poll they
 * run: at the top they would hide the sites one can act on); each by busy time. */
static int cmp_busy(const void *x, const void *y)
{
	const struct an_site *a = *(const struct an_site *const *)x;
	const struct an_site *b = *(const struct an_site *const *)y;

	if (a->runtime != b->runtime)
		return a->runtime ? 1 : -1;
	return a->busy_ns < b->busy_ns ? 1 : a->busy_ns > b->busy_ns ? -1 :
	       a->polls < b->polls ? 1 : a->polls > b->polls ? -1 : 0;
}

static const char *d(uint64_t ns, char *buf)
{
	return fmt_duration(ns, buf, 16);
}

static void print_sites(FILE *out, const struct analyzer *a, size_t top)
{
	const struct an_site *const *sites;
	const struct an_site **v;
	size_t n = an_sites(a, &sites), shown = 0;
	char b1[16], b2[16], b3[16], b4[16], b5[16], loc[400], type[400];

	if (!n)
		return;
	v = malloc(n * sizeof(*v));
	if (!v)
		return;
	memcpy(v, sites, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp_busy);
	fprintf(out, "\nSpawn sites by busy time\n");
	fprintf(out, "  %9s %9s %6s %9s %9s %9s %9s  %s\n", "BUSY", "POLLS", "TASKS", "POLL p50",
		"POLL p99", "SCHED p99", "PEND p99", "LOCATION  TYPE");
	for (size_t i = 0; i < n && shown < top; i++) {
		const struct an_site *s = v[i];

		if (!s->polls && !s->tasks)
			continue;
		shown++;
		fprintf(out, "  %9s %9llu %6llu %9s %9s %9s %9s  %s%s  %s\n", d(s->busy_ns, b1),
			(unsigned long long)s->polls, (unsigned long long)s->tasks,
			d(hist_quantile(&s->poll_ns, 0.5), b2), d(hist_quantile(&s->poll_ns, 0.99), b3),
			d(hist_quantile(&s->sched_ns, 0.99), b4),
			d(hist_quantile(&s->pending_ns, 0.99), b5),
			report_site_loc(s, loc, sizeof(loc)), s->runtime ? " (Tokio runtime)" : "",
			site_type(s, 60, type, sizeof(type)));
	}
	if (n > shown)
		fprintf(out, "  … %zu more site%s in the JSON report\n", n - shown, n - shown == 1 ? "" : "s");
	free(v);
}

static void print_tops(FILE *out, const char *title, const struct an_top *t, size_t n, size_t top)
{
	char b[16], loc[400], type[400];

	if (!n)
		return;
	fprintf(out, "\n%s\n", title);
	for (size_t i = 0; i < n && i < top; i++) {
		char w[32];

		if (t[i].worker >= 0)
			snprintf(w, sizeof(w), "worker %d", t[i].worker);
		else
			snprintf(w, sizeof(w), "tid %u", t[i].tid);
		fprintf(out, "  %9s  task %-8llu %-10s %s  %s\n", d(t[i].value_ns, b),
			(unsigned long long)t[i].task_id, w, report_site_loc(t[i].site, loc, sizeof(loc)),
			site_type(t[i].site, 60, type, sizeof(type)));
	}
}

static void print_workers(FILE *out, const struct analyzer *a, uint64_t span)
{
	size_t n;
	const struct an_worker **w = report_sorted_workers(a, &n);
	char b1[16], b2[16];

	if (!n) {
		free(w);
		return;
	}
	fprintf(out, "\nWorkers\n  %-12s %9s %9s %6s %9s %7s\n", "WORKER", "BUSY", "PARKED", "BUSY%",
		"POLLS", "PARKS");
	for (size_t i = 0; i < n; i++) {
		char name[32];

		snprintf(name, sizeof(name), "%u/%d", w[i]->pid, w[i]->index);
		fprintf(out, "  %-12s %9s %9s %5.1f%% %9llu %7llu\n", name, d(w[i]->busy_ns, b1),
			d(w[i]->parked_ns, b2), span ? 100.0 * (double)w[i]->busy_ns / (double)span : 0.0,
			(unsigned long long)w[i]->polls, (unsigned long long)w[i]->parks);
	}
	free(w);
}

struct finding_group {
	const struct an_finding *worst;
	size_t count, ongoing;
};

static bool worse(const struct an_finding *a, const struct an_finding *b)
{
	return a->kind == AN_SELF_WAKE ? a->ratio > b->ratio : a->value_ns > b->value_ns;
}

static int cmp_group(const void *x, const void *y)
{
	const struct finding_group *a = x, *b = y;

	if (a->worst->kind != b->worst->kind)
		return a->worst->kind < b->worst->kind ? -1 : 1;
	return a->count < b->count ? 1 : a->count > b->count ? -1 : 0;
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

/* Where the polls' time went, per site (kernel side), and what could not be had. */
static void print_why(FILE *out, const struct report_meta *m)
{
	const struct why_report *w = m->why;
	char loc[400], a[32], b[32], c[32];
	size_t shown = 0;

	if (!w)
		return;
	if (w->why_no_sched)
		fprintf(out, "\nno poll time split: %s\n", w->why_no_sched);
	if (w->why_no_profile && w->sched)
		fprintf(out, "no CPU profile: %s\n", w->why_no_profile);
	if (w->stolen_ns)
		fprintf(out, "the hypervisor took %s from the traced threads (%llu times), counted as preempted, not on CPU\n",
			fmt_duration(w->stolen_ns, a, sizeof(a)), (unsigned long long)w->stolen_periods);
	if (w->offcpu_lost || w->samples_lost)
		fprintf(out, "the ring had no room for %llu off-CPU period%s and %llu CPU sample%s: a poll whose sleep or preemption was lost counts it as on CPU (--ringbuf-size)\n",
			(unsigned long long)w->offcpu_lost, w->offcpu_lost == 1 ? "" : "s",
			(unsigned long long)w->samples_lost, w->samples_lost == 1 ? "" : "s");
	for (size_t i = 0; i < w->nnotes; i++)
		fprintf(out, "note: %s\n", w->notes[i]);
	if (!w->nsites)
		return;
	fprintf(out, "\nWhere the polls' time went (%llu CPU samples at %u Hz, %llu in polls; %llu off-CPU periods in polls)\n",
		(unsigned long long)w->samples, w->profile_hz,
		(unsigned long long)w->samples_in_polls, (unsigned long long)w->offcpu_periods);
	fprintf(out, "  %9s %9s %9s %8s  %-40s %s\n", "ON CPU", "PREEMPTED", "BLOCKED", "SAMPLES",
		"LOCATION", "HOTTEST FRAME / BLOCKED IN");
	for (size_t i = 0; i < w->nsites && shown < m->top; i++, shown++) {
		const struct why_site *ws = &w->sites[i];
		const struct why_stack *st = ws->ncpu ? &ws->cpu[0] : NULL;

		fprintf(out, "  %9s %9s %9s %8llu  %-40s %s\n", d(ws->on_cpu_ns, a), d(ws->preempted_ns, b),
			d(ws->blocked_ns, c), (unsigned long long)ws->samples,
			report_site_loc(ws->site, loc, sizeof(loc)),
			st ? st->frames[st->user_leaf != UINT32_MAX ? st->user_leaf : 0] :
			ws->nblocked && ws->blocked[0].syscall ? ws->blocked[0].syscall : "");
	}
}

/* One line per (kind, spawn site): how many tasks, and the worst one's sentence. */
static void print_findings(FILE *out, const struct analyzer *a, const struct report_meta *m,
			   size_t top)
{
	const struct an_finding *f;
	size_t n = an_findings(a, &f), ng = 0;
	struct finding_group *g;
	char detail[4096];

	if (!n) {
		fprintf(out, "\nFindings: none\n");
		return;
	}
	g = calloc(n, sizeof(*g));
	if (!g)
		return;
	for (size_t i = 0; i < n; i++) {
		size_t j;

		for (j = 0; j < ng; j++)
			if (g[j].worst->kind == f[i].kind && g[j].worst->site == f[i].site)
				break;
		if (j == ng)
			g[ng++].worst = &f[i];
		else if (worse(&f[i], g[j].worst))
			g[j].worst = &f[i];
		g[j].count++;
		g[j].ongoing += f[i].ongoing;
	}
	qsort(g, ng, sizeof(*g), cmp_group);
	fprintf(out, "\nFindings (%zu) by kind and spawn site, with the worst task of each\n", n);
	for (size_t i = 0; i < ng && i < top * 2; i++) {
		report_finding_detail(g[i].worst, detail, sizeof(detail));
		report_uring_finding_text(a, g[i].worst, detail, sizeof(detail));
		report_wait_finding_text(a, m, g[i].worst, detail, sizeof(detail));
		fprintf(out, "  %-12s ×%-4zu %s\n", an_finding_name(g[i].worst->kind), g[i].count,
			detail);
		if (m->why && (size_t)(g[i].worst - f) < m->why->nfindings &&
		    *why_finding_line(&m->why->findings[g[i].worst - f], detail, sizeof(detail)))
			fprintf(out, "  %-12s       %s\n", "", detail);
	}
	if (ng > top * 2)
		fprintf(out, "  … %zu more groups in the JSON report\n", ng - top * 2);
	if (an_totals(a)->findings_omitted)
		fprintf(out, "  (%llu more not recorded: finding limit reached)\n",
			(unsigned long long)an_totals(a)->findings_omitted);
	free(g);
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

static void print_drops(FILE *out, const struct report_meta *m, const struct analyzer *a)
{
	uint64_t drops = report_total_drops(m);
	char advice[400];

	if (!m->counters_valid) {
		fprintf(out, "  drop counters unavailable\n");
		return;
	}
	if (!drops)
		return;
	fprintf(out, "\nDROPPED EVENTS: %llu (ring buffer full). Affected figures:\n",
		(unsigned long long)drops);
	for (unsigned i = 0; i < TET_EV_COUNT; i++)
		if (m->counters.drops[i])
			fprintf(out, "  %-16s %10llu lost: %s\n", an_event_name(i),
				(unsigned long long)m->counters.drops[i], report_drop_impact(i));
	if (an_wakers_unreliable(a))
		fprintf(out, "  lost_waker detection was switched off when the drops began\n");
	if (an_totals(a)->findings_set_aside)
		fprintf(out, "  %llu finding%s set aside: events of %s tasks were lost, which could explain %s (a lost wake looks like a stall)\n",
			(unsigned long long)an_totals(a)->findings_set_aside,
			an_totals(a)->findings_set_aside == 1 ? "" : "s",
			an_totals(a)->findings_set_aside == 1 ? "its" : "their",
			an_totals(a)->findings_set_aside == 1 ? "it" : "them");
	if (*report_drop_advice(m, an_totals(a), advice, sizeof(advice)))
		fprintf(out, "  to lose less: %s\n", advice);
}

/* Batched capture: what did not arrive, or arrived out of place. */
static void print_batch_loss(FILE *out, const struct report_meta *m, bool final)
{
	const struct tb_stats *st = m->batch ? m->batch->stats : NULL;
	uint64_t unflushed = 0;

	if (!st)
		return;
	for (int i = 0; i < TET_EV_COUNT; i++)
		unflushed += st->unflushed[i];
	if (st->lost_batches || m->counters.batch_drops || st->threads_vanished)
		fprintf(out, "BATCHES LOST: %llu (ring buffer full) + %llu (otherwise); %llu thread%s ended without its last batch (%llu events known lost)\n",
			(unsigned long long)m->counters.batch_drops,
			(unsigned long long)(st->lost_batches > m->counters.batch_drops ?
					     st->lost_batches - m->counters.batch_drops : 0),
			(unsigned long long)st->threads_vanished, st->threads_vanished == 1 ? "" : "s",
			(unsigned long long)unflushed);
	if (final && (st->late || st->forced))
		fprintf(out, "  %llu events arrived after later ones were analyzed (late), %llu were analyzed before their threads caught up (hold limit)\n",
			(unsigned long long)st->late, (unsigned long long)st->forced);
}

/* Estimated time the probes added to the traced process: every raw::poll pays an entry uprobe
 * and a uretprobe, every other event one uprobe (measured per call at start). */
static double fallback_overhead_ns(const struct report_fallback *f, const struct an_totals *t)
{
	uint64_t other = t->events > 2 * t->polls ? t->events - 2 * t->polls : 0;

	return (double)t->polls * f->uretprobe_ns + (double)other * f->uprobe_ns;
}

static void print_fallback(FILE *out, const struct report_fallback *f, const struct an_totals *t)
{
	char b[16];

	fprintf(out, "uprobe fallback on %s: %zu raw::poll instances, %zu future types (%zu exact, %zu ambiguous; from %s)\n",
		f->file, f->poll_instances, f->types, f->types_exact, f->types_ambiguous,
		f->type_source);
	fprintf(out, "  functions:");
	for (size_t i = 0; i < f->nfns; i++)
		fprintf(out, " %s %zu%s", f->fn_names[i], f->fn_counts[i], i + 1 < f->nfns ? "," : "\n");
	fprintf(out, "  attached %zu uprobes with %zu link%s (%s) in %s\n", f->uprobes, f->links,
		f->links == 1 ? "" : "s", f->multi ? "uprobe_multi" : f->why_single ? f->why_single : "single uprobes",
		d(f->attach_ns, b));
	if (f->uprobe_ns > 0)
		fprintf(out, "  cost per probed call (measured): uprobe %.0f ns, uprobe+uretprobe %.0f ns → ~%.1f ms of the process's time in probes\n",
			f->uprobe_ns, f->uretprobe_ns, fallback_overhead_ns(f, t) / 1e6);
	fprintf(out, "  not available in this mode:");
	for (size_t i = 0; i < f->nunavailable; i++)
		fprintf(out, " %s%s", f->unavailable[i], i + 1 < f->nunavailable ? ";" : "\n");
}

struct waits_ctx {
	const struct analyzer *a;
	uint64_t n[TET_WAIT_CODES + 1], named, uring;
	uint64_t pending;
	uint64_t now, stall_ns;
	uint64_t idle, idle_by[TET_WAIT_CODES + 1], idle_max; /* idle by design past stall_ns */
};

static void count_wait(const struct an_task_summary *t, void *p)
{
	struct waits_ctx *c = p;
	unsigned k = AN_WAIT_UNKNOWN;

	if (t->state != AN_PENDING)
		return;
	c->pending++;
	if (report_uring_task_request(c->a, t)) {
		c->uring++;
		return;
	}
	for (unsigned i = 0; i < t->nwaits; i++)
		if (t->waits[i].kind != TET_WAIT_TIMER || k == AN_WAIT_UNKNOWN)
			k = t->waits[i].kind < TET_WAIT_CODES ? t->waits[i].kind : AN_WAIT_UNKNOWN;
	c->n[k]++;
	if (an_wait_class(t, c->now) == AN_WAIT_IDLE && t->pending_now_ns >= c->stall_ns) {
		unsigned s = AN_WAIT_UNKNOWN;

		for (unsigned i = 0; i < t->nwaits && s == AN_WAIT_UNKNOWN; i++)
			if (an_wait_is_subscription(t->waits[i].kind))
				s = t->waits[i].kind;
		c->idle++;
		c->idle_by[s]++;
		if (t->pending_now_ns > c->idle_max)
			c->idle_max = t->pending_now_ns;
	}
}

/* "Pending at the end: 12 tasks waiting on timer 5, io 4, notify 1, unknown 2" */
static void print_waits(FILE *out, const struct analyzer *a)
{
	struct waits_ctx c = { .a = a, .now = an_now(a), .stall_ns = an_get_opts(a)->stall_ns };
	bool first = true;
	char d[32];

	if (!an_get_opts(a)->wait_events)
		return;
	an_for_each_task(a, count_wait, &c);
	if (!c.pending)
		return;
	fprintf(out, "\nPending at the end: %llu task%s, waiting on", (unsigned long long)c.pending,
		c.pending == 1 ? "" : "s");
	for (unsigned k = 0; k <= AN_WAIT_UNKNOWN; k++)
		if (c.n[k]) {
			fprintf(out, "%s %s %llu", first ? "" : ",", an_wait_name(k),
				(unsigned long long)c.n[k]);
			first = false;
		}
	if (c.uring)
		fprintf(out, "%s io_uring %llu", first ? "" : ",", (unsigned long long)c.uring);
	fputs(" (tasks[].wait in the JSON report)\n", out);
	if (!c.idle)
		return;
	fprintf(out, "Idle by design: %llu of them pending for %s or more on a subscription (",
		(unsigned long long)c.idle, fmt_duration(c.stall_ns, d, sizeof(d)));
	first = true;
	for (unsigned k = 0; k <= AN_WAIT_UNKNOWN; k++)
		if (c.idle_by[k]) {
			fprintf(out, "%s%s %llu", first ? "" : ", ", an_wait_name(k),
				(unsigned long long)c.idle_by[k]);
			first = false;
		}
	fprintf(out, "; longest %s): waiting for work is not a finding (docs/wait-reasons.md)\n",
		fmt_duration(c.idle_max, d, sizeof(d)));
}

void report_terminal(FILE *out, const struct analyzer *a, const struct report_meta *m, bool final)
{
	const struct an_totals *t = an_totals(a);
	uint64_t span = m->end_ns > m->start_ns ? m->end_ns - m->start_ns : 0;
	const struct an_top *tops;
	size_t ntops;
	char b[16], raw[600], target[2400];

	if (m->pid)
		snprintf(raw, sizeof(raw), "PID %d (%s)", m->pid, m->executable ? m->executable : "?");
	else
		snprintf(raw, sizeof(raw), "every process running %s", m->binary ? m->binary : "?");
	report_sanitize(raw, strlen(raw), 0, target, sizeof(target));
	if (m->batch && m->sample_rate > 1)
		snprintf(raw, sizeof(raw), "%s capture, 1 task in %u", m->capture, m->sample_rate);
	else
		snprintf(raw, sizeof(raw), "%s capture", m->capture ? m->capture : "per-event");
	fprintf(out, "\n%s %s, %s, mode %s, %s\n", final ? "==" : "--", target, d(span, b), m->mode,
		raw);
	if (final && m->dialect && m->dialect_lacks && *m->dialect_lacks)
		fprintf(out, "probes of the %s dialect: %s\n", m->dialect, m->dialect_lacks);
	if (final && m->flight)
		fprintf(out, "flight-recorder %s\n", report_flight_line(m, target, sizeof(target)));
	if (final && m->ended_by && !strcmp(m->ended_by, "process_crash"))
		fprintf(out, "the process was killed by %s%s\n",
			report_signal_name(m->exit_signal, raw, sizeof(raw)),
			m->exit_core ? " (core dumped)" : "");
	if (m->fallback && final)
		print_fallback(out, m->fallback, t);
	fprintf(out, "events %llu (%llu dropped)  polls %llu  wakes %llu  spawns %llu  terminations %llu  tasks live %llu\n",
		(unsigned long long)t->events, (unsigned long long)report_total_drops(m),
		(unsigned long long)report_total(m, t, TET_EV_POLL_BEGIN),
		(unsigned long long)report_total(m, t, TET_EV_WAKE),
		(unsigned long long)report_total(m, t, TET_EV_SPAWN),
		(unsigned long long)report_total(m, t, TET_EV_TERMINATE),
		(unsigned long long)t->tasks_live);
	if (m->batch && m->sample_rate > 1)
		fprintf(out, "sampled: figures per site and task from %llu sampled tasks (%llu polls analyzed); the totals above count every task\n",
			(unsigned long long)t->tasks_seen, (unsigned long long)t->polls);
	print_drops(out, m, a);
	print_batch_loss(out, m, final);
	print_sites(out, a, final ? m->top : (m->top < 5 ? m->top : 5));
	if (final) {
		ntops = an_top_polls(a, &tops);
		print_tops(out, "Slowest polls", tops, ntops, m->top);
		ntops = an_top_sched(a, &tops);
		print_tops(out, "Worst scheduling delays (runnable → polled)", tops, ntops, m->top);
		print_workers(out, a, span);
	}
	if (final) {
		print_why(out, m);
		report_uring_terminal(out, a, m);
		print_waits(out, a);
	}
	print_findings(out, a, m, final ? m->top : 2);
	fflush(out);
}

/* ---- JSON ---- */
static void j_hist(struct jw *w, const char *key, const struct hist_summary *s)
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
	j_hist(w, key, &s);
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

static void j_hex(struct jw *w, const char *key, uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "0x%llx", (unsigned long long)v);
	jw_kstr(w, key, b);
}

static void j_probes(struct jw *w, const char *key, unsigned mask)
{
	jw_key(w, key);
	jw_arr_begin(w);
	for (unsigned i = 0; i < TET_EV_COUNT; i++)
		if (mask & (1u << i))
			jw_str(w, an_event_name(i));
	jw_arr_end(w);
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

void report_json_thresholds_ns(struct jw *w, const struct an_opts *o)
{
	jw_ku64(w, "long_poll_ns", o->long_poll_ns);
	jw_ku64(w, "stall_ns", o->stall_ns);
	jw_ku64(w, "lost_waker_ns", o->lost_waker_ns);
	jw_ku64(w, "never_yields_ns", o->never_yields_ns);
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

static uint64_t rel(const struct report_meta *m, uint64_t ts)
{
	return ts > m->start_ns ? ts - m->start_ns : 0;
}

/* ---- why a poll was slow (why.h) ---- */
static void j_frames(struct jw *w, const struct why_stack *st, uint32_t max)
{
	jw_key(w, "frames");
	jw_arr_begin(w);
	for (uint32_t i = 0; i < st->nframes && i < max; i++)
		jw_str(w, st->frames[i]);
	jw_arr_end(w);
	jw_ku64(w, "user_addresses", st->user_addresses);
	jw_key(w, "user_frame");
	if (st->user_leaf != UINT32_MAX)
		jw_str(w, st->frames[st->user_leaf]);
	else
		jw_null(w);
}

static void j_why_finding(struct jw *w, const struct why_finding *wf)
{
	char line[2048];

	jw_key(w, "why");
	if (!wf->known && !wf->nhot) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w);
	jw_kstr(w, "summary", why_finding_line(wf, line, sizeof(line)));
	if (wf->known) {
		jw_ku64(w, "on_cpu_ns", wf->on_cpu_ns);
		jw_ku64(w, "preempted_ns", wf->preempted_ns);
		jw_ku64(w, "stolen_ns", wf->stolen_ns);
		jw_ku64(w, "blocked_ns", wf->blocked_ns);
	}
	jw_key(w, "blocked_in");
	if (wf->blocked_top) {
		jw_obj_begin(w);
		jw_kstr(w, "syscall", wf->blocked_top->syscall);
		jw_ku64(w, "ns", wf->blocked_top->ns);
		j_frames(w, wf->blocked_top, 64);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
	jw_ku64(w, "cpu_samples", wf->samples);
	jw_key(w, "hottest");
	jw_arr_begin(w);
	for (size_t i = 0; i < wf->nhot; i++) {
		jw_obj_begin(w);
		jw_kstr(w, "frame", wf->hot[i].frame);
		jw_ku64(w, "samples", wf->hot[i].samples);
		jw_kdouble(w, "share", wf->hot[i].share);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

static void j_why_stacks(struct jw *w, const char *key, const struct why_stack *v, size_t n,
			 size_t max, bool blocked)
{
	jw_key(w, key);
	jw_arr_begin(w);
	for (size_t i = 0; i < n && i < max; i++) {
		jw_obj_begin(w);
		jw_ku64(w, blocked ? "periods" : "samples", v[i].count);
		if (blocked) {
			jw_ku64(w, "ns", v[i].ns);
			jw_kstr(w, "syscall", v[i].syscall);
		}
		j_frames(w, &v[i], 64);
		jw_obj_end(w);
	}
	jw_arr_end(w);
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
	jw_ku64(w, "cpu_samples_lost", r->samples_lost);
	jw_key(w, "notes");
	jw_arr_begin(w);
	for (size_t i = 0; i < r->nnotes; i++)
		jw_str(w, r->notes[i]);
	jw_arr_end(w);
}

static void j_why(struct jw *w, const struct why_report *r)
{
	jw_key(w, "why");
	if (!r) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w);
	report_json_why_head(w, r);
	jw_key(w, "sites");
	jw_arr_begin(w);
	for (size_t i = 0; i < r->nsites; i++) {
		const struct why_site *ws = &r->sites[i];

		jw_obj_begin(w);
		report_json_site_ref(w, ws->site);
		jw_ku64(w, "cpu_samples", ws->samples);
		jw_ku64(w, "on_cpu_ns", ws->on_cpu_ns);
		jw_ku64(w, "preempted_ns", ws->preempted_ns);
		jw_ku64(w, "stolen_ns", ws->stolen_ns);
		jw_ku64(w, "blocked_ns", ws->blocked_ns);
		j_why_stacks(w, "cpu_stacks", ws->cpu, ws->ncpu, 20, false);
		j_why_stacks(w, "blocked_stacks", ws->blocked, ws->nblocked, 10, true);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

static bool site_has_finding(const struct an_site *s)
{
	for (int k = 0; k < AN_FINDING_KINDS; k++)
		if (s->findings[k])
			return true;
	return false;
}

/* Sites a JSON report lists when there are too many: the shared ones (spawned before the
 * capture, past the site bound), those with a finding, then by busy time, polls */
static int cmp_site_listed(const void *x, const void *y)
{
	const struct an_site *a = *(const struct an_site *const *)x;
	const struct an_site *b = *(const struct an_site *const *)y;
	bool fa = site_has_finding(a), fb = site_has_finding(b);
	bool sa = a->unknown || a->other, sb = b->unknown || b->other;

	if (sa != sb)
		return sa ? -1 : 1;
	if (fa != fb)
		return fa ? -1 : 1;
	if (a->busy_ns != b->busy_ns)
		return a->busy_ns < b->busy_ns ? 1 : -1;
	if (a->polls != b->polls)
		return a->polls < b->polls ? 1 : -1;
	return a->index < b->index ? -1 : a->index > b->index;
}

/* … and those listed in the analyzer's order, as when every site is listed */
static int cmp_site_index(const void *x, const void *y)
{
	const struct an_site *a = *(const struct an_site *const *)x;
	const struct an_site *b = *(const struct an_site *const *)y;

	return a->index < b->index ? -1 : a->index > b->index;
}

static void j_site(struct jw *w, const struct an_site *s, uint32_t sample_rate, bool waits)
{
	jw_obj_begin(w);
	report_json_site_ref(w, s);
	jw_ku64(w, "sample_rate", sample_rate ? sample_rate : 1);
	jw_key(w, "file");
	if (s->unknown || s->other || s->typed)
		jw_null(w);
	else
		jw_strn(w, s->file, s->file_len);
	jw_ku64(w, "line", s->line);
	jw_ku64(w, "col", s->col);
	jw_kstr(w, "kind", s->unknown || s->other ? NULL : an_kind_name(s->kind));
	jw_kbool(w, "runtime", s->runtime);
	jw_kbool(w, "spawned_before_trace", s->unknown);
	jw_kbool(w, "overflow_site", s->other);
	jw_kbool(w, "file_truncated", s->file_len_reported > s->file_len);
	jw_kbool(w, "type_name_truncated", s->type_len_reported > s->type_len);
	jw_ku64(w, "tasks", s->tasks);
	jw_ku64(w, "tasks_terminated", s->tasks_terminated);
	jw_ku64(w, "tasks_live", s->tasks - s->tasks_terminated);
	jw_ku64(w, "tasks_untracked", s->tasks_untracked);
	jw_ku64(w, "polls", s->polls);
	jw_ku64(w, "busy_ns", s->busy_ns);
	jw_ku64(w, "preempted_ns", s->cpu_wait_ns);
	jw_ku64(w, "stolen_ns", s->stolen_ns);
	jw_ku64(w, "blocked_ns", s->blocked_ns);
	jw_ku64(w, "on_cpu_ns", s->busy_ns > s->cpu_wait_ns + s->blocked_ns ?
		s->busy_ns - s->cpu_wait_ns - s->blocked_ns : 0);
	jw_ku64(w, "cpu_samples", s->samples);
	jw_ku64(w, "wakes", s->wakes);
	jw_ku64(w, "self_wakes", s->self_wakes);
	jw_ku64(w, "self_wake_polls", s->self_wake_polls);
	jw_ku64(w, "outside_runtime_wakes", s->outside_wakes);
	jw_key(w, "yields");
	jw_obj_begin(w);
	for (int i = 0; i < TET_YIELD_CODES; i++)
		jw_ku64(w, tet_code_label(TET_SET_YIELD, i), s->yields[i]);
	jw_obj_end(w);
	jw_key(w, "poll_results");
	jw_obj_begin(w);
	for (int i = 0; i < TET_POLL_CODES; i++)
		jw_ku64(w, tet_code_label(TET_SET_POLL, i), s->results[i]);
	jw_obj_end(w);
	jw_key(w, "terminations");
	jw_obj_begin(w);
	for (int i = 0; i < TET_TERM_CODES; i++)
		jw_ku64(w, tet_code_label(TET_SET_TERM, i), s->terms[i]);
	jw_obj_end(w);
	report_json_hist(w, "poll_ns", &s->poll_ns);
	report_json_hist(w, "sched_ns", &s->sched_ns);
	report_json_hist(w, "pending_ns", &s->pending_ns);
	report_json_hist(w, "lifetime_ns", &s->lifetime_ns);
	if (waits) {
		jw_key(w, "pending_by_wait");
		jw_obj_begin(w);
		for (unsigned k = 0; k <= AN_WAIT_UNKNOWN; k++) {
			if (!s->wait_n[k])
				continue;
			jw_key(w, an_wait_name(k));
			jw_obj_begin(w);
			jw_ku64(w, "periods", s->wait_n[k]);
			jw_ku64(w, "total_ns", s->wait_ns[k]);
			jw_ku64(w, "max_ns", s->wait_max_ns[k]);
			jw_obj_end(w);
		}
		jw_obj_end(w);
	}
	jw_key(w, "findings");
	jw_obj_begin(w);
	for (int k = 0; k < AN_FINDING_KINDS; k++)
		jw_ku64(w, an_finding_name(k), s->findings[k]);
	jw_obj_end(w);
	jw_obj_end(w);
}

struct task_ctx {
	struct jw *w;
	const struct analyzer *a;
	const struct report_meta *m;
	uint64_t now;
};

static void j_task(const struct an_task_summary *t, void *p)
{
	struct task_ctx *c = p;
	struct jw *w = c->w;
	uint64_t end = t->end_ts ? t->end_ts : c->now;

	jw_obj_begin(w);
	jw_ku64(w, "task_id", t->task_id);
	jw_ku64(w, "pid", t->pid);
	j_hex(w, "header_ptr", t->header_ptr);
	report_json_site_ref(w, t->site);
	jw_kstr(w, "kind", t->spawn_seen ? an_kind_name(t->kind) : NULL);
	jw_kstr(w, "state", an_state_name(t->state));
	jw_kstr(w, "termination", t->term_reason >= 0 && t->term_reason < TET_TERM_CODES ?
		tet_code_label(TET_SET_TERM, t->term_reason) : NULL);
	jw_kbool(w, "spawn_seen", t->spawn_seen);
	jw_ku64(w, "first_seen_at_ns", rel(c->m, t->spawn_seen ? t->spawn_ts : t->first_ts));
	jw_key(w, "lifetime_ns");
	if (t->spawn_seen && end >= t->spawn_ts)
		jw_u64(w, end - t->spawn_ts);
	else
		jw_null(w);
	jw_ku64(w, "polls", t->polls);
	jw_ku64(w, "busy_ns", t->busy_ns);
	jw_ku64(w, "preempted_ns", t->cpu_wait_ns);
	jw_ku64(w, "blocked_ns", t->blocked_ns);
	jw_ku64(w, "on_cpu_ns", t->busy_ns > t->cpu_wait_ns + t->blocked_ns ?
		t->busy_ns - t->cpu_wait_ns - t->blocked_ns : 0);
	jw_ku64(w, "cpu_samples", t->samples);
	jw_ku64(w, "wakes", t->wakes);
	jw_ku64(w, "self_wakes", t->self_wakes);
	jw_ku64(w, "self_wake_polls", t->self_wake_polls);
	jw_ku64(w, "outside_runtime_wakes", t->outside_wakes);
	jw_key(w, "yields");
	jw_obj_begin(w);
	for (int i = 0; i < TET_YIELD_CODES; i++)
		jw_ku64(w, tet_code_label(TET_SET_YIELD, i), t->yields[i]);
	jw_obj_end(w);
	j_hist(w, "poll_ns", &t->poll_ns);
	j_hist(w, "sched_ns", &t->sched_ns);
	j_hist(w, "pending_ns", &t->pending_ns);
	if (t->state == AN_PENDING)
		jw_ku64(w, "pending_now_ns", t->pending_now_ns);
	jw_key(w, "live_wakers");
	if (t->wakers_known)
		jw_i64(w, t->live_wakers);
	else
		jw_null(w);
	jw_ku64(w, "waker_clones", t->waker_clones);
	jw_ku64(w, "waker_drops", t->waker_drops);
	report_uring_task_json(w, &t->uring);
	report_task_wait_json(w, c->a, c->m, t, c->now);
	jw_obj_end(w);
}

static void j_tops(struct jw *w, const char *key, const char *vkey, const struct an_top *t,
		   size_t n, const struct report_meta *m)
{
	jw_key(w, key);
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		jw_obj_begin(w);
		jw_ku64(w, vkey, t[i].value_ns);
		jw_ku64(w, "task_id", t[i].task_id);
		jw_ku64(w, "pid", t[i].pid);
		jw_ku64(w, "tid", t[i].tid);
		jw_ki64(w, "worker", t[i].worker);
		jw_ku64(w, "at_ns", rel(m, t[i].ts));
		report_json_site_ref(w, t[i].site);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/* "exit": how the traced process ended (ended_by "process_exit" / "process_crash") */
static void j_exit(struct jw *w, const struct report_meta *m)
{
	bool crash = m->ended_by && !strcmp(m->ended_by, "process_crash");
	char sig[32];

	if (!crash && !(m->ended_by && !strcmp(m->ended_by, "process_exit")))
		return;
	jw_key(w, "exit");
	jw_obj_begin(w);
	jw_kstr(w, "signal", crash && m->exit_signal > 0 ?
		report_signal_name(m->exit_signal, sig, sizeof(sig)) : NULL);
	jw_kbool(w, "core_dumped", crash && m->exit_core);
	jw_key(w, "status");
	if (!crash && m->exit_status >= 0)
		jw_i64(w, m->exit_status);
	else
		jw_null(w);
	jw_obj_end(w);
}

static void j_u64_or_null(struct jw *w, const char *key, bool known, uint64_t v)
{
	jw_key(w, key);
	if (known)
		jw_u64(w, v);
	else
		jw_null(w);
}

/* "flight_recorder": a dump's window and what fired it (m->flight) */
static void j_flight(struct jw *w, const struct report_meta *m)
{
	const struct report_flight *fl = m->flight;
	const struct report_trigger *tr = &fl->trigger;
	char sig[32];

	jw_key(w, "flight_recorder");
	jw_obj_begin(w);
	jw_ku64(w, "dump_index", fl->dump_index);
	jw_kstr(w, "name", fl->basename);
	j_u64_or_null(w, "window_ns", fl->window_ns, fl->window_ns);
	jw_ku64(w, "window_bytes", fl->window_bytes);
	jw_ku64(w, "post_trigger_ns", fl->post_ns);
	jw_ku64(w, "window_start_at_ns", rel(m, fl->from_ns));
	jw_ku64(w, "window_end_at_ns", rel(m, fl->to_ns));
	jw_ku64(w, "records", fl->records);
	jw_ku64(w, "bytes", fl->bytes);
	jw_kbool(w, "cut_by_memory", fl->cut_by_memory);
	jw_ku64(w, "triggers_suppressed", fl->triggers_suppressed);
	jw_key(w, "trigger");
	jw_obj_begin(w);
	jw_kstr(w, "kind", tr->kind);
	jw_kstr(w, "spec", tr->spec ? tr->spec : tr->kind);
	jw_ku64(w, "at_ns", rel(m, tr->ts));
	jw_ku64(w, "detected_at_ns", rel(m, tr->at_ns));
	j_u64_or_null(w, "pid", tr->pid, tr->pid);
	j_u64_or_null(w, "tid", tr->tid, tr->tid);
	j_u64_or_null(w, "task_id", tr->has_task, tr->task_id);
	if (tr->has_task)
		j_hex(w, "header_ptr", tr->header_ptr);
	else
		jw_kstr(w, "header_ptr", NULL);
	j_u64_or_null(w, "value_ns", tr->value_ns, tr->value_ns);
	j_u64_or_null(w, "threshold_ns", tr->threshold_ns, tr->threshold_ns);
	jw_kstr(w, "signal", tr->signal > 0 ? report_signal_name(tr->signal, sig, sizeof(sig)) : NULL);
	jw_kbool(w, "core_dumped", tr->core_dumped);
	jw_key(w, "exit_status");
	if (tr->kind && !strcmp(tr->kind, "process_exit") && tr->exit_status >= 0)
		jw_i64(w, tr->exit_status);
	else
		jw_null(w);
	jw_key(w, "detail");
	jw_strn(w, tr->detail, strnlen(tr->detail, sizeof(tr->detail)));
	jw_obj_end(w);
	jw_obj_end(w);
}

int report_json(FILE *out, const struct analyzer *a, const struct report_meta *m)
{
	const struct an_totals *t = an_totals(a);
	const struct an_opts *o = an_get_opts(a);
	const struct an_site *const *sites;
	const struct an_worker **workers;
	const struct an_finding *f;
	const struct an_top *tops;
	size_t n;
	struct jw *w = jw_new(out, true);
	struct task_ctx tc = { w, a, m, an_now(a) };
	char detail[2048];

	if (!w)
		return -ENOMEM;
	jw_obj_begin(w);
	jw_ku64(w, "schema_version", REPORT_SCHEMA_VERSION);
	jw_key(w, "tool");
	jw_obj_begin(w);
	jw_kstr(w, "name", "tokio-ebpf-trace");
	jw_obj_end(w);
	jw_kstr(w, "mode", m->mode);
	jw_kstr(w, "dialect", m->dialect);
	jw_kstr(w, "dialect_lacks", m->dialect_lacks && *m->dialect_lacks ? m->dialect_lacks : NULL);
	jw_key(w, "fallback");
	if (m->fallback) {
		const struct report_fallback *f = m->fallback;

		jw_obj_begin(w);
		jw_kstr(w, "file", f->file);
		jw_key(w, "functions");
		jw_obj_begin(w);
		for (size_t i = 0; i < f->nfns; i++)
			jw_ku64(w, f->fn_names[i], f->fn_counts[i]);
		jw_obj_end(w);
		jw_key(w, "functions_missing");
		jw_arr_begin(w);
		for (size_t i = 0; i < f->nfns; i++)
			if (!f->fn_counts[i])
				jw_str(w, f->fn_names[i]);
		jw_arr_end(w);
		jw_key(w, "unavailable");
		jw_arr_begin(w);
		for (size_t i = 0; i < f->nunavailable; i++)
			jw_str(w, f->unavailable[i]);
		jw_arr_end(w);
		jw_key(w, "future_types");
		jw_obj_begin(w);
		jw_ku64(w, "poll_instances", f->poll_instances);
		jw_ku64(w, "types", f->types);
		jw_ku64(w, "exact", f->types_exact);
		jw_ku64(w, "ambiguous", f->types_ambiguous);
		jw_kstr(w, "source", f->type_source);
		jw_obj_end(w);
		jw_key(w, "attach");
		jw_obj_begin(w);
		jw_kstr(w, "method", f->multi ? "uprobe_multi" : "uprobe");
		jw_kstr(w, "why_not_multi", f->multi ? NULL : f->why_single);
		jw_ku64(w, "uprobes", f->uprobes);
		jw_ku64(w, "links", f->links);
		jw_ku64(w, "attach_ns", f->attach_ns);
		jw_obj_end(w);
		jw_key(w, "cost");
		jw_obj_begin(w);
		jw_key(w, "uprobe_ns");
		if (f->uprobe_ns > 0)
			jw_double(w, f->uprobe_ns);
		else
			jw_null(w);
		jw_key(w, "uprobe_uretprobe_ns");
		if (f->uretprobe_ns > 0)
			jw_double(w, f->uretprobe_ns);
		else
			jw_null(w);
		jw_key(w, "estimated_overhead_ns");
		if (f->uprobe_ns > 0)
			jw_u64(w, (uint64_t)fallback_overhead_ns(f, an_totals(a)));
		else
			jw_null(w);
		jw_obj_end(w);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}

	jw_key(w, "capture");
	jw_obj_begin(w);
	jw_key(w, "pid");
	if (m->pid)
		jw_u64(w, (uint64_t)m->pid);
	else
		jw_null(w);
	jw_kstr(w, "binary", m->binary);
	jw_kstr(w, "executable", m->executable);
	jw_key(w, "files");
	jw_arr_begin(w);
	for (size_t i = 0; i < m->nfiles; i++) {
		jw_obj_begin(w);
		jw_kstr(w, "path", m->files[i].path);
		j_probes(w, "probes", m->files[i].probes);
		jw_ku64(w, "sites", m->files[i].sites);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	j_probes(w, "probes_attached", m->probes);
	/* what pending tasks wait for: with task_wait (kits from the wait-reason change on) */
	jw_kbool(w, "wait_reasons", an_get_opts(a)->wait_events);
	jw_kstr(w, "capture", m->capture ? m->capture : "per-event");
	jw_ku64(w, "sample_rate", m->sample_rate ? m->sample_rate : 1);
	jw_key(w, "batch");
	if (m->batch) {
		const struct report_batch *bt = m->batch;

		jw_obj_begin(w);
		jw_ku64(w, "sites", bt->sites);
		jw_ku64(w, "sample_rate_sites", bt->rate_sites);
		jw_kstr(w, "attach", bt->multi ? "uprobe_multi" : "uprobe");
		jw_kstr(w, "why_not_multi", bt->multi ? NULL : bt->why_single);
		jw_kbool(w, "preemption", bt->preemption);
		jw_kstr(w, "why_no_preemption", bt->preemption ? NULL : bt->why_no_preemption);
		jw_kbool(w, "sweeps", bt->sweeps);
		jw_kstr(w, "why_no_sweeps", bt->sweeps ? NULL : bt->why_no_sweeps);
		jw_kstr(w, "clock", bt->stats->clock == TET_BATCH_CLOCK_TSC ? "tsc" :
			    bt->stats->clock == TET_BATCH_CLOCK_MONO ? "monotonic" : NULL);
		jw_ki64(w, "clock_error_ns", bt->stats->clock_error_ns);
		jw_ku64(w, "threads", bt->stats->threads);
		jw_ku64(w, "polls_seen_in_progress", bt->stats->open_polls_seen);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
	report_uring_capture_json(w, m);
	report_json_started(w, m);
	jw_key(w, "requested_duration_ns");
	if (m->requested_ns)
		jw_u64(w, m->requested_ns);
	else
		jw_null(w);
	jw_kstr(w, "ended_by", m->ended_by);
	jw_key(w, "last_event_at_ns"); /* the newest event analyzed, from the start */
	if (an_totals(a)->last_ts)
		jw_i64(w, (int64_t)an_totals(a)->last_ts - (int64_t)m->start_ns);
	else
		jw_null(w);
	jw_key(w, "thresholds");
	jw_obj_begin(w);
	report_json_thresholds_ns(w, o);
	jw_kdouble(w, "self_wake_ratio", o->self_wake_ratio);
	jw_ku64(w, "self_wake_min", o->self_wake_min);
	jw_ku64(w, "large_future_bytes", o->large_future_bytes);
	jw_obj_end(w);
	jw_key(w, "detectors");
	jw_arr_begin(w);
	for (int k = 0; k < AN_FINDING_KINDS; k++)
		if (o->detect & (1u << k))
			jw_str(w, an_finding_name(k));
	jw_arr_end(w);
	jw_kdouble(w, "histogram_relative_error", HIST_REL_ERR);
	jw_obj_end(w);
	j_exit(w, m);
	if (m->flight)
		j_flight(w, m);

	jw_key(w, "totals");
	jw_obj_begin(w);
	report_json_totals_head(w, t, m);
	jw_ku64(w, "terminations", report_total(m, t, TET_EV_TERMINATE));
	jw_ku64(w, "yields", t->yields);
	jw_ku64(w, "waker_clones", t->waker_clones);
	jw_ku64(w, "waker_drops", t->waker_drops);
	jw_ku64(w, "parks", report_total(m, t, TET_EV_PARK));
	jw_ku64(w, "unparks", report_total(m, t, TET_EV_UNPARK));
	jw_kbool(w, "sampled", m->batch && m->sample_rate > 1);
	jw_key(w, "analyzed");
	jw_obj_begin(w);
	jw_ku64(w, "polls", t->polls);
	jw_ku64(w, "wakes", t->wakes);
	jw_ku64(w, "spawns", t->spawns);
	jw_ku64(w, "terminations", t->terminates);
	jw_obj_end(w);
	jw_ku64(w, "self_wakes", t->self_wakes);
	jw_ku64(w, "outside_runtime_wakes", t->outside_wakes);
	jw_ku64(w, "tasks_seen", t->tasks_seen);
	jw_ku64(w, "tasks_live", t->tasks_live);
	jw_ku64(w, "tasks_untracked", t->tasks_untracked);
	jw_ku64(w, "polls_untracked", t->polls_untracked);
	{
		const struct an_site *const *sv;
		size_t ns = an_sites(a, &sv), cap = an_get_opts(a)->max_sites_listed;

		jw_ku64(w, "spawn_sites_omitted", ns > cap ? ns - cap : 0);
	}
	jw_ku64(w, "task_records_omitted", t->task_records_omitted);
	jw_ku64(w, "live_tasks_omitted", an_live_tasks_omitted(a));
	jw_ku64(w, "findings", an_findings(a, &f));
	jw_ku64(w, "findings_omitted", t->findings_omitted);
	jw_ku64(w, "findings_set_aside", t->findings_set_aside);
	jw_ku64(w, "stalled_in_deadlock", t->stalled_in_deadlock);
	jw_ku64(w, "unmatched_poll_ends", t->unmatched_poll_ends);
	jw_ku64(w, "waits_outside_tasks", t->waits_outside_polls);
	jw_ku64(w, "waits_not_kept", t->waits_dropped);
	jw_ku64(w, "untracked_task_events", t->unknown_task_events);
	jw_ku64(w, "waker_count_inconsistent", t->waker_count_inconsistent);
	jw_ku64(w, "lost_waker_contradicted", t->lost_waker_contradicted);
	jw_ku64(w, "starvation_episodes_omitted", t->starvation_omitted);
	jw_ku64(w, "worker_polls_untracked", t->worker_polls_untracked);
	jw_ku64(w, "workers_untracked", t->workers_untracked);
	jw_ku64(w, "task_id_zero", t->task_id_zero);
	jw_ku64(w, "histogram_values_unbucketed", t->hist_unbucketed);
	jw_ku64(w, "kernel_records_refused", t->kernel_refused);
	{
		const struct lk_stats *ls = an_lock_stats(a);
		const struct tb_stats *bs = m->batch ? m->batch->stats : NULL;
		uint64_t fa = bs ? bs->acquires_folded : 0, fr = bs ? bs->releases_folded : 0;

		jw_key(w, "lock_events");
		jw_obj_begin(w);
		jw_ku64(w, "acquires", ls->acquires + fa);
		jw_ku64(w, "releases", ls->releases + fr);
		jw_ku64(w, "folded_acquires", fa);
		jw_ku64(w, "folded_releases", fr);
		jw_ku64(w, "forgets", ls->forgets);
		jw_ku64(w, "releases_of_unknown_locks", ls->releases_unknown);
		jw_ku64(w, "locks_untracked", ls->locks_untracked);
		jw_ku64(w, "holders_untracked", ls->holders_untracked);
		jw_ku64(w, "bad_ops", ls->bad);
		jw_obj_end(w);
	}
	jw_obj_end(w);

	jw_key(w, "data_loss");
	jw_obj_begin(w);
	jw_kbool(w, "counters_read", m->counters_valid);
	jw_key(w, "probe_hits");
	jw_obj_begin(w);
	for (unsigned i = 0; i < TET_EV_COUNT; i++)
		if (m->probes & (1u << i))
			jw_ku64(w, an_event_name(i), m->counters.seen[i]);
	jw_obj_end(w);
	jw_key(w, "drops_by_probe");
	jw_obj_begin(w);
	for (unsigned i = 0; i < TET_EV_COUNT; i++)
		if (m->probes & (1u << i))
			jw_ku64(w, an_event_name(i), m->counters.drops[i]);
	jw_obj_end(w);
	jw_key(w, "affected");
	jw_arr_begin(w);
	for (unsigned i = 0; i < TET_EV_COUNT; i++) {
		if (!m->counters.drops[i])
			continue;
		jw_obj_begin(w);
		jw_kstr(w, "probe", an_event_name(i));
		jw_ku64(w, "drops", m->counters.drops[i]);
		jw_kstr(w, "figures", report_drop_impact(i));
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_kbool(w, "lost_waker_disabled", an_wakers_unreliable(a));
	{ /* the findings lost events could explain: counted by kind, their tasks listed */
		const struct an_finding *fa;
		size_t na = an_findings_aside(a, &fa);
		uint64_t by[AN_FINDING_KINDS] = { 0 };
		char advice[400];

		jw_key(w, "findings_set_aside");
		jw_obj_begin(w);
		for (size_t i = 0; i < na; i++)
			by[fa[i].kind]++;
		for (int k = 0; k < AN_FINDING_KINDS; k++)
			jw_ku64(w, an_finding_name(k), by[k]);
		jw_key(w, "tasks");
		jw_arr_begin(w);
		for (size_t i = 0; i < na && i < 100; i++) {
			jw_obj_begin(w);
			jw_kstr(w, "kind", an_finding_name(fa[i].kind));
			jw_ku64(w, "pid", fa[i].pid);
			jw_ku64(w, "task_id", fa[i].task_id);
			jw_obj_end(w);
		}
		jw_arr_end(w);
		jw_obj_end(w);
		report_drop_advice(m, an_totals(a), advice, sizeof(advice));
		jw_key(w, "advice");
		if (*advice)
			jw_str(w, advice);
		else
			jw_null(w);
	}
	jw_ku64(w, "string_read_errors", m->counters.read_errors);
	jw_key(w, "process_memory");
	jw_obj_begin(w);
	jw_ku64(w, "reads", m->pmem.reads);
	jw_ku64(w, "timed_out", m->pmem.timed_out);
	jw_ku64(w, "refused", m->pmem.refused);
	jw_ku64(w, "failed", m->pmem.failed);
	jw_obj_end(w);
	jw_ku64(w, "argument_errors", m->counters.arg_errors);
	jw_key(w, "batches");
	if (m->batch) {
		const struct tb_stats *st = m->batch->stats;

		jw_obj_begin(w);
		jw_ku64(w, "received", st->batches);
		jw_ku64(w, "lost_ring_full", m->counters.batch_drops);
		/* gaps in a thread's sequence numbers: the ring's losses, and any other */
		jw_ku64(w, "lost_otherwise", st->lost_batches > m->counters.batch_drops ?
			st->lost_batches - m->counters.batch_drops : 0);
		jw_ku64(w, "refused", m->counters.batch_bad + st->bad_batches);
		jw_ku64(w, "torn", st->torn_batches);
		jw_ku64(w, "implausible", st->implausible);
		jw_ku64(w, "strings_refused", st->strings_refused);
		jw_ku64(w, "threads_refused", st->threads_refused);
		jw_ku64(w, "read_errors", m->counters.batch_read_errors);
		jw_ku64(w, "bad_records", st->bad_records);
		jw_ku64(w, "wait_records_not_kept", st->waits_dropped);
		jw_ku64(w, "lock_records_not_kept", st->locks_dropped);
		jw_ku64(w, "records", st->records);
		jw_ku64(w, "records_read_in_place", st->sweep_records);
		jw_ku64(w, "before_capture", st->before_start);
		jw_ku64(w, "after_capture", st->after_cutoff);
		jw_ku64(w, "late", st->late);
		jw_ku64(w, "forced", st->forced);
		jw_ku64(w, "threads_vanished", st->threads_vanished);
		jw_ku64(w, "threads_final_batch_late", st->threads_revived);
		jw_ku64(w, "sweeps", st->sweeps);
		jw_ku64(w, "sweep_failures", st->sweep_failures);
		jw_ku64(w, "held_max", st->pending_max);
		jw_ku64(w, "preemptions_lost", m->counters.offcpu_drops);
		jw_key(w, "unflushed_by_probe");
		jw_obj_begin(w);
		for (unsigned i = 0; i < TET_EV_COUNT; i++)
			if (st->unflushed[i])
				jw_ku64(w, an_event_name(i), st->unflushed[i]);
		jw_obj_end(w);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
	jw_obj_end(w);

	n = an_sites(a, &sites);
	jw_key(w, "spawn_sites");
	jw_arr_begin(w);
	{
		size_t cap = an_get_opts(a)->max_sites_listed;
		const struct an_site **v = n > cap ? malloc(n * sizeof(*v)) : NULL;

		if (v) { /* too many to list: those with a finding first, then the busiest */
			memcpy(v, sites, n * sizeof(*v));
			qsort(v, n, sizeof(*v), cmp_site_listed);
			qsort(v, cap, sizeof(*v), cmp_site_index);
		}
		for (size_t i = 0; i < n && i < cap; i++)
			j_site(w, v ? v[i] : sites[i], m->sample_rate, an_get_opts(a)->wait_events);
		free(v);
	}
	jw_arr_end(w);

	jw_key(w, "tasks");
	jw_arr_begin(w);
	an_for_each_listed_task(a, j_task, &tc);
	jw_arr_end(w);

	workers = report_sorted_workers(a, &n);
	jw_key(w, "workers");
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		jw_obj_begin(w);
		report_json_worker_counts(w, workers[i]);
		jw_kbool(w, "parked_at_end", workers[i]->parked);
		report_json_hist(w, "park_ns", &workers[i]->park_ns);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	free(workers);

	n = an_top_polls(a, &tops);
	j_tops(w, "slowest_polls", "duration_ns", tops, n, m);
	n = an_top_sched(a, &tops);
	j_tops(w, "worst_sched_delays", "delay_ns", tops, n, m);

	n = an_findings(a, &f);
	jw_key(w, "findings");
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		jw_obj_begin(w);
		jw_kstr(w, "kind", an_finding_name(f[i].kind));
		jw_ku64(w, "task_id", f[i].task_id);
		jw_ku64(w, "pid", f[i].pid);
		report_json_site_ref(w, f[i].site);
		report_finding_detail(&f[i], detail, sizeof(detail));
		report_uring_finding_text(a, &f[i], detail, sizeof(detail));
		report_wait_finding_text(a, m, &f[i], detail, sizeof(detail));
		jw_kstr(w, "detail", detail);
		if (m->flight)
			jw_kbool(w, "trigger", report_is_trigger(m, &f[i]));
		jw_ku64(w, "value_ns", f[i].value_ns);
		if (f[i].kind == AN_LONG_POLL) {
			jw_ku64(w, "preempted_ns", f[i].cpu_wait_ns);
			jw_ku64(w, "stolen_ns", f[i].stolen_ns);
		}
		if (f[i].kind == AN_SELF_WAKE) {
			jw_kdouble(w, "ratio", f[i].ratio);
			jw_kdouble(w, "threshold_ratio", o->self_wake_ratio);
			jw_ku64(w, "polls", f[i].polls);
		} else {
			jw_ku64(w, "threshold_ns", f[i].threshold_ns);
		}
		jw_ku64(w, "occurrences", f[i].occurrences);
		jw_kbool(w, "ongoing", f[i].ongoing);
		jw_ku64(w, "first_at_ns", rel(m, f[i].first_ts));
		if (f[i].kind == AN_STALLED || f[i].kind == AN_LOST_WAKER) {
			jw_key(w, "live_wakers");
			if (f[i].live_wakers >= 0)
				jw_i64(w, f[i].live_wakers);
			else
				jw_null(w);
		}
		if (f[i].kind == AN_LOST_WAKER)
			jw_kbool(w, "contradicted", f[i].contradicted);
		if (f[i].kind == AN_STARVATION)
			report_starvation_json(w, m, &f[i]);
		if (f[i].kind == AN_DEADLOCK)
			report_deadlock_json(w, m, &f[i]);
		report_uring_finding_json(w, a, m, &f[i]);
		report_finding_wait_json(w, a, m, &f[i]);
		if (m->why && i < m->why->nfindings)
			j_why_finding(w, &m->why->findings[i]);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	j_why(w, m->why);
	report_uring_json(w, a, m);
	jw_obj_end(w);
	if (jw_finish(w))
		return -EIO;
	return fputc('\n', out) == EOF ? -EIO : 0;
}
