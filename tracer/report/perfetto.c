// SPDX-License-Identifier: MIT
/*
 * perfetto.c — --trace FILE: the capture as Chrome trace-event JSON (JSON object format), for
 * the Perfetto UI and chrome://tracing (docs/reports.md).
 *
 *   process / thread names   "M" events: each thread that polled, parked, woke or spawned;
 *                            workers are named "worker N" and sorted first
 *   polls                    "X" slices on the polling thread, named by spawn site
 *                            (file:line:col; the future's type name in fallback mode)
 *   parks                    "X" slices "parked" on the worker thread
 *   wakes                    short "X" slices "wake task N" on the waking thread, and a flow
 *                            arrow ("s" → "f", bound to the enclosing slices) from each wake
 *                            to the poll it made happen: the first wake after a task's poll
 *                            began links to the task's next poll
 *   spawns, terminations     thread-scoped instants
 *   flight-recorder trigger  a global instant "trigger: SPEC" at the triggering moment (a dump
 *                            only), on the trigger's thread (named like any other); otherData
 *                            holds the dump's window
 *   deadlocks                a global instant "deadlock: task 5 → task 6 → task 5" where the
 *                            cycle closed (its last wait began), args: every member, what it
 *                            waits on and the finding's text
 *   io_uring requests        (a target that used io_uring only, uring.h) "X" slices from the
 *                            submission to the completion, named by opcode, on tracks
 *                            "io_uring ring N" of the target's process (rings numbered in
 *                            order: their address is the kernel's, kept out of the file) (thread tracks with
 *                            made-up tids, see UR_TID_BASE): requests overlap, so each ring
 *                            has as many tracks ("lanes") as it had requests in flight at once,
 *                            each request on the first lane free at its submission; a flow
 *                            arrow ("s" → "f") from each request to the poll of its task that
 *                            consumed the completion (ur_tl_rec.poll_ts on poll_tid). Requests
 *                            still in flight at the end: slices to the end of the capture,
 *                            named "OP (in flight)", args.in_flight true
 *
 * A wake slice lasts at most 1 µs and never overlaps the next slice of its thread (nor
 * outlives the poll it happens in), so slices nest properly; a flow is written only when both
 * of its slices are long enough to hold its end (2 ns), so every "s" has its "f".
 *
 * Bounded: the trace is the analyzer's timeline ring (--timeline-events records, oldest
 * overwritten). When the capture produced more, the file says what was cut (otherData, and a
 * global instant at the first kept event) and the caller says it on stderr. The io_uring
 * requests come from uring.c's own ring of finished requests (as many records); otherData
 * says how many it kept of how many, and how many did not fit in UR_LANES_MAX lanes.
 *
 * --mode sampling (report_sampling_perfetto), from its profile (analyze/sampprof.h): a track per
 * thread of the target that was sampled or slept in a poll, named "COMM (tid N)" (the thread's
 * name, untrusted: sanitized, then escaped by the writer); on it the on-CPU long_poll runs as
 * "X" slices (cat "long_poll") from their first to their last sample, named by the future type,
 * args: task, samples, min_ns / max_ns (the bounds the sample period gives), hottest_frame;
 * and every sleep that began inside an async poll as an "X" slice (cat "blocked") from the
 * switch out to the switch back in, named by the future type, args: task, syscall, off_cpu_ns,
 * blocked_ns (to the wake-up), long_poll (as long as the threshold: a blocked long_poll). The
 * two never overlap on a thread: a sleep ends a run. Bounded by the run's records (2^19 sleeps).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "vocab.h"
#include "reporters.h"
#include "sampprof.h"
#include "text.h"
#include "uring.h"

#define WAKE_SLICE_NS 1000
#define FLOW_MIN_NS   2
#define UR_LANES_MAX  64          /* tracks per ring; requests beyond are counted, not drawn */
#define UR_TID_BASE   0x40000000u /* tids of the ring tracks: above any real one (PID_MAX_LIMIT
				   * is 2^22), UR_LANES_MAX per ring */

struct ev {
	const struct an_tl_rec *r;
	uint32_t wake_dur;
	uint32_t flow;          /* id, 0 = none */
};

struct tinfo {
	uint32_t pid, tid;
	int32_t worker;         /* -1: not a worker thread */
	bool polls;             /* polled tasks (as a worker or on the blocking pool) */
};

/* The track of one lane of an io_uring ring. */
struct utrack {
	uint32_t pid, tid, lane;
	uint64_t ring;
	uint32_t ring_no;       /* rings numbered from 1 in order (the address is the kernel's) */
};

/* An io_uring request drawn: finished (r) or in flight at the end (f), as a slice [b, e] on
 * the lane track `tid` (0: no lane left, not drawn). */
struct ureq {
	const struct ur_tl_rec *r;
	const struct ur_inflight *f;
	uint64_t ring, b, e;
	uint32_t pid, tid;
	uint32_t flow;          /* id, 0 = none */
	const struct an_tl_rec *poll;  /* the poll the flow ends in */
};

struct tsite {
	uint32_t pid;
	uint64_t task_id;
	const struct an_site *site;
	char *name;             /* task_meta: its name (untrusted bytes), NULL when none */
	uint16_t name_len;
	bool meta;
	uint64_t future_size;
};

/* A task's identity: Tokio's task id, or its header address in the uprobe fallback (where the
 * task id is 0). Set by report_perfetto(). */
static bool by_header;

static uint64_t rkey(const struct an_tl_rec *r)
{
	return by_header ? r->header_ptr : r->task_id;
}

static int cmp_ev_ts(const void *x, const void *y)
{
	const struct ev *a = x, *b = y;

	if (a->r->ts != b->r->ts)
		return a->r->ts < b->r->ts ? -1 : 1;
	return a->r->type < b->r->type ? -1 : a->r->type > b->r->type;
}

static int cmp_tinfo(const void *x, const void *y)
{
	const struct tinfo *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

static int cmp_tsite(const void *x, const void *y)
{
	const struct tsite *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->task_id < b->task_id ? -1 : a->task_id > b->task_id;
}

/* Sort keys through an index array: by thread then time, by task then time. */
static const struct ev *g_ev;

static int cmp_by_thread(const void *x, const void *y)
{
	const struct an_tl_rec *a = g_ev[*(const size_t *)x].r, *b = g_ev[*(const size_t *)y].r;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return *(const size_t *)x < *(const size_t *)y ? -1 : 1;
}

static int cmp_by_task(const void *x, const void *y)
{
	const struct an_tl_rec *a = g_ev[*(const size_t *)x].r, *b = g_ev[*(const size_t *)y].r;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (rkey(a) != rkey(b))
		return rkey(a) < rkey(b) ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return *(const size_t *)x < *(const size_t *)y ? -1 : 1;
}

struct sites_ctx {
	struct tsite *v;
	size_t n, cap;
	bool oom;
};

static void collect_site(const struct an_task_summary *t, void *p)
{
	struct sites_ctx *c = p;

	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 1024;
		struct tsite *v = realloc(c->v, cap * sizeof(*v));

		if (!v) {
			c->oom = true;
			return;
		}
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n] = (struct tsite){ t->pid, by_header ? t->header_ptr : t->task_id, t->site,
				     NULL, 0, t->meta_seen, t->future_size };
	if (t->name_len && (c->v[c->n].name = malloc(t->name_len))) {
		memcpy(c->v[c->n].name, t->name, t->name_len);
		c->v[c->n].name_len = t->name_len;
	}
	c->n++;
}

/* "PREFIX 12" or, in the uprobe fallback, "PREFIX 0x7f…" (the header address). */
static size_t task_label(char *buf, size_t len, const char *prefix, uint64_t key)
{
	int n = snprintf(buf, len, by_header ? "%s 0x%llx" : "%s %llu", prefix,
			 (unsigned long long)key);

	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

struct tw {
	struct jw *w;
	uint64_t base;          /* ts of trace time 0 */
	uint64_t events;
	bool fallback;
	const struct tsite *sites;
	size_t nsites;
};

static void k_ts(struct tw *t, const char *key, uint64_t ts)
{
	jw_kdouble(t->w, key, ts >= t->base ? (double)(ts - t->base) / 1000.0 : 0.0);
}

static void k_dur(struct tw *t, uint64_t ns)
{
	jw_kdouble(t->w, "dur", (double)ns / 1000.0);
}

static void ev_begin(struct tw *t, const char *ph, uint64_t ts, uint32_t pid, uint32_t tid)
{
	jw_obj_begin(t->w);
	jw_kstr(t->w, "ph", ph);
	k_ts(t, "ts", ts);
	jw_ku64(t->w, "pid", pid);
	jw_ku64(t->w, "tid", tid);
	t->events++;
}

static const struct tsite *tsite_of(const struct tw *t, uint32_t pid, uint64_t id)
{
	struct tsite k = { pid, id, NULL, NULL, 0, false, 0 };

	return t->nsites ? bsearch(&k, t->sites, t->nsites, sizeof(k), cmp_tsite) : NULL;
}

static const struct an_site *site_of(const struct tw *t, uint32_t pid, uint64_t id)
{
	const struct tsite *f = tsite_of(t, pid, id);

	return f ? f->site : NULL;
}

static void k_site_name(struct tw *t, const struct an_site *s, uint64_t task_id)
{
	char buf[48];

	jw_key(t->w, "name");
	if (!s) {
		task_label(buf, sizeof(buf), "task", task_id);
		jw_str(t->w, buf);
	} else if (s->unknown) {
		jw_str(t->w, "(spawned before the trace)");
	} else if (s->other) {
		jw_str(t->w, "(other sites)");
	} else if (s->typed || (t->fallback && s->type_len)) {
		jw_strn(t->w, s->type_name, s->type_len);
	} else {
		jw_strn(t->w, s->location, s->location_len);
	}
}

static void metadata(struct tw *t, const char *what, uint32_t pid, uint32_t tid,
		     const char *name, int64_t sort)
{
	ev_begin(t, "M", t->base, pid, tid);
	jw_kstr(t->w, "name", what);
	jw_key(t->w, "args");
	jw_obj_begin(t->w);
	if (name)
		jw_kstr(t->w, "name", name);
	else
		jw_ki64(t->w, "sort_index", sort);
	jw_obj_end(t->w);
	jw_obj_end(t->w);
}

/* The thread a dump's trigger instant is drawn on: its own, else the target's main thread, else
 * the first thread of the trace (scope "g" draws it across every track anyway). */
static struct tinfo trigger_thread(const struct report_meta *m, const struct tinfo *th, size_t n)
{
	const struct report_trigger *tr = &m->flight->trigger;

	if (tr->pid)
		return (struct tinfo){ tr->pid, tr->tid ? tr->tid : tr->pid, -1, false };
	if (m->pid > 0)
		return (struct tinfo){ (uint32_t)m->pid, (uint32_t)m->pid, -1, false };
	if (n)
		return (struct tinfo){ th[0].pid, th[0].tid, -1, false };
	return (struct tinfo){ 0, 0, -1, false };
}

/* otherData: the dump's window and trigger, in trace time (µs from the trace's 0) */
static void flight_other(struct tw *t, const struct report_meta *m)
{
	const struct report_flight *fl = m->flight;
	char buf[1100];
	const char *spec = fl->trigger.spec ? fl->trigger.spec : fl->trigger.kind;

	jw_ku64(t->w, "flight_recorder_dump", fl->dump_index);
	jw_kstr(t->w, "flight_recorder_name", fl->basename);
	jw_kstr(t->w, "flight_recorder_trigger", spec);
	jw_kstr(t->w, "flight_recorder_trigger_kind", fl->trigger.kind);
	k_ts(t, "flight_recorder_trigger_us", fl->trigger.ts);
	jw_kdouble(t->w, "flight_recorder_window_start_us",
		   (double)(int64_t)(fl->from_ns - t->base) / 1000.0);
	jw_kdouble(t->w, "flight_recorder_window_end_us", (double)(int64_t)(fl->to_ns - t->base) / 1000.0);
	jw_key(t->w, "flight_recorder_window_ns"); /* null: a window by size */
	if (fl->window_ns)
		jw_u64(t->w, fl->window_ns);
	else
		jw_null(t->w);
	jw_ku64(t->w, "flight_recorder_window_bytes", fl->window_bytes);
	jw_ku64(t->w, "flight_recorder_post_trigger_ns", fl->post_ns);
	jw_ku64(t->w, "flight_recorder_records", fl->records);
	jw_kbool(t->w, "flight_recorder_cut_by_memory", fl->cut_by_memory);
	jw_kstr(t->w, "flight_recorder_detail",
		text_sanitize(fl->trigger.detail, strnlen(fl->trigger.detail, sizeof(fl->trigger.detail)),
				0, buf, sizeof(buf)));
}

/* The trigger: a global instant "trigger: SPEC" at its moment. */
static void flight_instant(struct tw *t, const struct report_meta *m, const struct tinfo *on)
{
	const struct report_trigger *tr = &m->flight->trigger;
	const char *spec = tr->spec ? tr->spec : tr->kind ? tr->kind : "?";
	char name[200], buf[1100];

	snprintf(name, sizeof(name), "trigger: %s", text_sanitize(spec, strlen(spec), 80, buf, sizeof(buf)));
	ev_begin(t, "i", tr->ts, on->pid, on->tid);
	jw_kstr(t->w, "name", name);
	jw_kstr(t->w, "cat", "flight_recorder");
	jw_kstr(t->w, "s", "g");
	jw_key(t->w, "args");
	jw_obj_begin(t->w);
	jw_kstr(t->w, "kind", tr->kind);
	jw_key(t->w, "pid");
	if (tr->pid)
		jw_u64(t->w, tr->pid);
	else
		jw_null(t->w);
	jw_key(t->w, "task_id");
	if (tr->has_task) {
		jw_u64(t->w, tr->task_id);
		jw_ku64(t->w, "task", by_header ? tr->header_ptr : tr->task_id); /* as other args */
	} else {
		jw_null(t->w);
	}
	jw_ku64(t->w, "value_ns", tr->value_ns);
	jw_kstr(t->w, "detail", text_sanitize(tr->detail, strnlen(tr->detail, sizeof(tr->detail)), 0,
						buf, sizeof(buf)));
	jw_obj_end(t->w);
	jw_obj_end(t->w);
}

/* Each deadlock finding: a global instant where its cycle closed. */
static void deadlock_instants(struct tw *t, const struct analyzer *a)
{
	const struct an_finding *f;
	size_t n = an_findings(a, &f);
	char name[400], detail[4096];

	for (size_t i = 0; i < n; i++) {
		size_t l;

		if (f[i].kind != AN_DEADLOCK || !f[i].nmembers)
			continue;
		l = (size_t)snprintf(name, sizeof(name), "deadlock:");
		for (unsigned j = 0; j < f[i].nmembers && j < AN_CYCLE_MAX && l < sizeof(name); j++)
			l += (size_t)snprintf(name + l, sizeof(name) - l, " task %llu →",
					      (unsigned long long)f[i].members[j].task_id);
		if (l < sizeof(name))
			snprintf(name + l, sizeof(name) - l, " task %llu",
				 (unsigned long long)f[i].members[0].task_id);
		ev_begin(t, "i", f[i].first_ts, f[i].pid, f[i].pid);
		jw_kstr(t->w, "name", name);
		jw_kstr(t->w, "cat", "finding");
		jw_kstr(t->w, "s", "g");
		jw_key(t->w, "args");
		jw_obj_begin(t->w);
		jw_kstr(t->w, "kind", "deadlock");
		jw_key(t->w, "tasks");
		jw_arr_begin(t->w);
		for (unsigned j = 0; j < f[i].nmembers && j < AN_CYCLE_MAX; j++)
			jw_u64(t->w, f[i].members[j].task_id);
		jw_arr_end(t->w);
		jw_ku64(t->w, "duration_ns", f[i].value_ns);
		jw_kbool(t->w, "ongoing", f[i].ongoing);
		report_finding_detail(&f[i], detail, sizeof(detail));
		jw_kstr(t->w, "detail", detail);
		jw_obj_end(t->w);
		jw_obj_end(t->w);
	}
}

static void process_name(struct tw *t, uint32_t pid, const char *exe)
{
	const char *base = exe ? strrchr(exe, '/') : NULL;
	char name[320];

	base = base ? base + 1 : exe ? exe : "?";
	snprintf(name, sizeof(name), "%s (PID %u)", base, pid);
	metadata(t, "process_name", pid, pid, name, 0);
}

static void thread_names(struct tw *t, const struct tinfo *th, size_t n, const char *exe)
{
	char name[320];

	for (size_t i = 0; i < n; i++) {
		if (!i || th[i].pid != th[i - 1].pid)
			process_name(t, th[i].pid, exe);
		if (th[i].worker >= 0)
			snprintf(name, sizeof(name), "worker %d (tid %u)", th[i].worker, th[i].tid);
		else if (th[i].polls)
			snprintf(name, sizeof(name), "blocking pool (tid %u)", th[i].tid);
		else
			snprintf(name, sizeof(name), "tid %u (outside the runtime)", th[i].tid);
		metadata(t, "thread_name", th[i].pid, th[i].tid, name, 0);
		metadata(t, "thread_sort_index", th[i].pid, th[i].tid, NULL,
			 th[i].worker >= 0 ? th[i].worker : th[i].polls ? 10000 : 20000);
	}
}

/* ---- io_uring requests ---- */
struct uctx {
	struct ureq *v;
	size_t n;
	struct utrack *tracks;       /* by pid, then tid */
	size_t ntracks;
	uint64_t finished;           /* requests finished during the capture (Σ per-opcode
				      * completed: each went into uring.c's ring once) */
	size_t kept, in_flight;      /* finished ones kept in the ring; in flight at the end */
	uint64_t not_drawn;          /* no lane left */
	uint64_t slices, flows;
};

static int cmp_ureq(const void *x, const void *y)
{
	const struct ureq *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->ring != b->ring)
		return a->ring < b->ring ? -1 : 1;
	if (a->b != b->b)
		return a->b < b->b ? -1 : 1;
	return a->e < b->e ? -1 : a->e > b->e;
}

static int cmp_poll_at(const void *x, const void *y)
{
	const struct an_tl_rec *a = *(const struct an_tl_rec *const *)x;
	const struct an_tl_rec *b = *(const struct an_tl_rec *const *)y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return a->ts < b->ts ? -1 : a->ts > b->ts;
}

/* The requests to draw (none when the target used no io_uring): the finished ones uring.c
 * kept, and those in flight at the end, as slices up to `end`. */
static int uring_collect(struct uctx *c, const struct ur *u, uint64_t end)
{
	const struct ur_tl_rec *s1, *s2;
	const struct ur_inflight *inf;
	const struct ur_opstats *ops;
	size_t n1, n2, nops;

	memset(c, 0, sizeof(*c));
	if (!ur_active(u))
		return 0;
	c->kept = ur_timeline(u, &s1, &n1, &s2, &n2);
	c->in_flight = ur_inflight(u, &inf);
	nops = ur_opcodes(u, &ops);
	for (size_t i = 0; i < nops; i++)
		c->finished += ops[i].completed;
	c->v = malloc((c->kept + c->in_flight + 1) * sizeof(*c->v));
	c->tracks = malloc((c->kept + c->in_flight + 1) * sizeof(*c->tracks));
	if (!c->v || !c->tracks)
		return -ENOMEM;
	for (size_t i = 0; i < n1 + n2; i++) {
		const struct ur_tl_rec *r = i < n1 ? &s1[i] : &s2[i - n1];

		c->v[c->n++] = (struct ureq){ .r = r, .ring = r->ring, .b = r->submit_ts,
			.e = r->done_ts > r->submit_ts ? r->done_ts : r->submit_ts, .pid = r->pid };
	}
	for (size_t i = 0; i < c->in_flight; i++)
		c->v[c->n++] = (struct ureq){ .f = &inf[i], .ring = inf[i].ring, .b = inf[i].submit_ts,
			.e = end > inf[i].submit_ts ? end : inf[i].submit_ts, .pid = inf[i].pid };
	return 0;
}

/* Lanes: per ring, each request (by submission) on the first track whose last request ended
 * by then — as few tracks as requests were in flight at once, slices never overlap on one. */
static void uring_lanes(struct uctx *c)
{
	uint64_t lane_end[UR_LANES_MAX];
	uint32_t nlanes = 0, ring_no = 0;

	if (!c->n)
		return;
	qsort(c->v, c->n, sizeof(*c->v), cmp_ureq);
	for (size_t i = 0; i < c->n; i++) {
		struct ureq *q = &c->v[i];
		uint32_t l;

		if (i && (q->pid != c->v[i - 1].pid || q->ring != c->v[i - 1].ring)) {
			ring_no++;
			nlanes = 0;
		}
		for (l = 0; l < nlanes && lane_end[l] > q->b; l++)
			;
		if (l == nlanes) {
			if (nlanes == UR_LANES_MAX) {
				c->not_drawn++;
				continue;
			}
			nlanes++;
			c->tracks[c->ntracks++] = (struct utrack){ q->pid,
				UR_TID_BASE + ring_no * UR_LANES_MAX + l, l, q->ring, ring_no + 1 };
		}
		lane_end[l] = q->e;
		q->tid = UR_TID_BASE + ring_no * UR_LANES_MAX + l;
	}
}

/* Flows: a finished request → the poll of its task that consumed it (the poll beginning at
 * poll_ts on poll_tid), when that poll is in the trace and both slices can hold an end. */
static int uring_flows(struct uctx *c, const struct ev *ev, size_t n, uint32_t *next_flow)
{
	const struct an_tl_rec **polls;
	size_t np = 0;

	if (!c->n)
		return 0;
	polls = malloc((n ? n : 1) * sizeof(*polls));
	if (!polls)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (ev[i].r->type == AN_TL_POLL)
			polls[np++] = ev[i].r;
	qsort(polls, np, sizeof(*polls), cmp_poll_at);
	for (size_t i = 0; i < c->n; i++) {
		struct ureq *q = &c->v[i];
		const struct ur_tl_rec *r = q->r;
		struct an_tl_rec k;
		const struct an_tl_rec *kp = &k, *const *p;

		if (!r || !q->tid || !r->linked || !r->poll_ts || !r->poll_tid ||
		    q->e - q->b < FLOW_MIN_NS)
			continue;
		k = (struct an_tl_rec){ .ts = r->poll_ts, .pid = r->pid, .tid = r->poll_tid };
		p = np ? bsearch(&kp, polls, np, sizeof(*polls), cmp_poll_at) : NULL;
		if (!p || rkey(*p) != r->task_key || (*p)->end < (*p)->ts + FLOW_MIN_NS)
			continue;
		q->poll = *p;
		q->flow = (*next_flow)++;
	}
	free(polls);
	return 0;
}

static void uring_track_names(struct tw *t, const struct uctx *c, const struct tinfo *th,
			      size_t nth, const char *exe)
{
	char name[80];

	for (size_t i = 0; i < c->ntracks; i++) {
		const struct utrack *k = &c->tracks[i];

		if (!i || k->pid != c->tracks[i - 1].pid) { /* a process without threads named yet */
			size_t j;

			for (j = 0; j < nth && th[j].pid != k->pid; j++)
				;
			if (j == nth)
				process_name(t, k->pid, exe);
		}
		if (k->lane)
			snprintf(name, sizeof(name), "io_uring ring %u (%u)", k->ring_no, k->lane + 1);
		else
			snprintf(name, sizeof(name), "io_uring ring %u", k->ring_no);
		metadata(t, "thread_name", k->pid, k->tid, name, 0);
		metadata(t, "thread_sort_index", k->pid, k->tid, NULL,
			 30000 + (int64_t)(k->tid - UR_TID_BASE));
	}
}

static void uring_other(struct tw *t, const struct uctx *c)
{
	char buf[200];

	jw_ku64(t->w, "io_uring_requests_finished", c->finished);
	jw_ku64(t->w, "io_uring_requests_finished_kept", c->kept);
	jw_ku64(t->w, "io_uring_requests_in_flight", c->in_flight);
	jw_ku64(t->w, "io_uring_requests_not_drawn", c->not_drawn);
	jw_ku64(t->w, "io_uring_lanes_max", UR_LANES_MAX);
	jw_kbool(t->w, "io_uring_cut", c->kept < c->finished);
	if (c->kept < c->finished) {
		snprintf(buf, sizeof(buf), "%llu io_uring requests finished; this trace keeps the last %llu (--timeline-events)",
			 (unsigned long long)c->finished, (unsigned long long)c->kept);
		jw_kstr(t->w, "io_uring_cut_note", buf);
	}
}

static void uring_slices(struct tw *t, struct uctx *c)
{
	char nb[24], name[48], hex[24], what[UR_FD_WHAT_MAX * 4 + 8];

	for (size_t i = 0; i < c->n; i++) {
		const struct ureq *q = &c->v[i];
		const struct ur_tl_rec *r = q->r;
		const struct ur_inflight *f = q->f;
		unsigned op = r ? r->opcode : f->opcode;
		const char *on = ur_opcode_str(op, nb, sizeof(nb));
		bool linked = r ? r->linked : f->linked;

		if (!q->tid)
			continue;
		snprintf(name, sizeof(name), f ? "%s (in flight)" : "%s", on);
		ev_begin(t, "X", q->b, q->pid, q->tid);
		jw_kstr(t->w, "name", name);
		jw_kstr(t->w, "cat", "io_uring");
		k_dur(t, q->e - q->b);
		jw_key(t->w, "args");
		jw_obj_begin(t->w);
		jw_kstr(t->w, "op", on);
		jw_ku64(t->w, "opcode", op);
		jw_ki64(t->w, "fd", r ? r->fd : f->fd);
		jw_key(t->w, "task");
		if (linked)
			jw_u64(t->w, r ? r->task_key : f->task_key);
		else
			jw_null(t->w);
		jw_ku64(t->w, "submit_tid", r ? r->tid : f->tid);
		jw_kbool(t->w, "in_flight", f != NULL);
		if (r) {
			jw_ki64(t->w, "res", r->res);
			jw_key(t->w, "complete_to_poll_ns");
			if (r->poll_ts >= r->done_ts && r->poll_ts)
				jw_u64(t->w, r->poll_ts - r->done_ts);
			else
				jw_null(t->w);
		} else {
			jw_kbool(t->w, "fixed_file", f->fixed_file);
			jw_key(t->w, "fd_target");
			if (*f->fd_what)
				jw_str(t->w, text_sanitize(f->fd_what, strnlen(f->fd_what, sizeof(f->fd_what)),
							     0, what, sizeof(what)));
			else
				jw_null(t->w);
		}
		snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)(r ? r->user_data : f->user_data));
		jw_kstr(t->w, "user_data", hex);
		jw_obj_end(t->w);
		jw_obj_end(t->w);
		c->slices++;
		if (!q->flow)
			continue;
		ev_begin(t, "s", q->b + (q->e - q->b) / 2, q->pid, q->tid);
		jw_kstr(t->w, "name", "io_uring");
		jw_kstr(t->w, "cat", "io_uring");
		jw_ku64(t->w, "id", q->flow);
		jw_obj_end(t->w);
		/* just inside the poll's start: a wake slice of that thread (inside the poll, later)
		 * cannot be the enclosing slice there */
		ev_begin(t, "f", q->poll->ts + 1, q->poll->pid, q->poll->tid);
		jw_kstr(t->w, "name", "io_uring");
		jw_kstr(t->w, "cat", "io_uring");
		jw_ku64(t->w, "id", q->flow);
		jw_kstr(t->w, "bp", "e");
		jw_obj_end(t->w);
		c->flows++;
	}
}

/* The trace's threads, one per (pid, tid), sorted: those of the timeline's records, the workers
 * parked at the end and the trigger's thread; a worker index and "it polls" merged per thread.
 * Returns how many (th has room for n + nworkers + 1). */
static size_t thread_table(struct tinfo *th, const struct ev *ev, size_t n,
			   const struct an_worker *const *workers, size_t nworkers,
			   const struct report_meta *m, struct tinfo *trig_on)
{
	size_t nth = 0, k = 0;

	for (size_t i = 0; i < n; i++) {
		const struct an_tl_rec *r = ev[i].r;

		th[nth++] = (struct tinfo){ r->pid, r->tid,
			r->type == AN_TL_POLL || r->type == AN_TL_PARK ? r->worker : -1,
			r->type == AN_TL_POLL };
	}
	for (size_t i = 0; i < nworkers; i++)
		if (workers[i]->parked)
			th[nth++] = (struct tinfo){ workers[i]->pid, workers[i]->tid, workers[i]->index,
						    false };
	if (m->flight) { /* the trigger's thread gets a name too (th has room for one more) */
		*trig_on = trigger_thread(m, th, nth);
		th[nth++] = *trig_on;
	}
	qsort(th, nth, sizeof(*th), cmp_tinfo);
	for (size_t i = 0; i < nth; i++) {
		if (k && !cmp_tinfo(&th[k - 1], &th[i])) {
			if (th[i].worker >= 0)
				th[k - 1].worker = th[i].worker;
			th[k - 1].polls |= th[i].polls;
		} else {
			th[k++] = th[i];
		}
	}
	return k;
}

/* Wake slices: at most WAKE_SLICE_NS, within the enclosing slice of their thread, and ending
 * before the thread's next event */
static void wake_slices(struct ev *ev, size_t *idx, size_t n)
{
	g_ev = ev;
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	qsort(idx, n, sizeof(*idx), cmp_by_thread);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		uint64_t open_end = 0;

		for (; j < n && ev[idx[j]].r->pid == ev[idx[i]].r->pid &&
		       ev[idx[j]].r->tid == ev[idx[i]].r->tid; j++) {
			struct ev *e = &ev[idx[j]];
			uint64_t room = WAKE_SLICE_NS;

			if (e->r->type == AN_TL_POLL || e->r->type == AN_TL_PARK) {
				if (e->r->end > open_end)
					open_end = e->r->end;
				continue;
			}
			if (e->r->type != AN_TL_WAKE)
				continue;
			if (open_end > e->r->ts && open_end - e->r->ts < room)
				room = open_end - e->r->ts;
			for (size_t k = j + 1; k < n && ev[idx[k]].r->pid == e->r->pid &&
			     ev[idx[k]].r->tid == e->r->tid; k++) {
				const struct an_tl_rec *nx = ev[idx[k]].r;

				if (nx->type == AN_TL_SPAWN || nx->type == AN_TL_TERMINATE)
					continue; /* instants do not nest */
				if (nx->ts - e->r->ts < room)
					room = nx->ts - e->r->ts;
				break;
			}
			e->wake_dur = (uint32_t)room;
		}
		i = j;
	}
}

/* Flows: the first bindable wake after a task's poll began → its next poll */
static void wake_flows(struct ev *ev, size_t *idx, size_t n, uint32_t *next_flow)
{
	qsort(idx, n, sizeof(*idx), cmp_by_task);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		struct ev *pending = NULL;

		for (; j < n && ev[idx[j]].r->pid == ev[idx[i]].r->pid &&
		       rkey(ev[idx[j]].r) == rkey(ev[idx[i]].r); j++) {
			struct ev *e = &ev[idx[j]];

			if (e->r->type == AN_TL_WAKE) {
				if (!pending && e->wake_dur >= FLOW_MIN_NS)
					pending = e;
			} else if (e->r->type == AN_TL_POLL) {
				if (pending && e->r->end - e->r->ts >= FLOW_MIN_NS) {
					pending->flow = *next_flow;
					e->flow = (*next_flow)++;
				}
				pending = NULL;
			}
		}
		i = j;
	}
}

/* "otherData": the capture, the cut, the dump, io_uring */
static void other_data(struct tw *t, const struct analyzer *a, const struct report_meta *m,
		       const struct uctx *uc, const struct perfetto_stats *st)
{
	char buf[160];

	jw_key(t->w, "otherData");
	jw_obj_begin(t->w);
	jw_kstr(t->w, "tool", "tokio-ebpf-trace");
	jw_kstr(t->w, "mode", m->mode);
	jw_kstr(t->w, "executable", m->executable ? m->executable : m->binary);
	jw_ku64(t->w, "capture_duration_ns", m->end_ns > m->start_ns ? m->end_ns - m->start_ns : 0);
	jw_ku64(t->w, "capture_start_offset_us", (m->start_ns - t->base) / 1000);
	jw_ku64(t->w, "timeline_events_total", st->total);
	jw_ku64(t->w, "timeline_events_kept", st->kept);
	jw_kbool(t->w, "cut", st->kept < st->total);
	if (st->kept < st->total) {
		snprintf(buf, sizeof(buf), "the capture produced %llu timeline events; this trace keeps the last %llu (--timeline-events)",
			 (unsigned long long)st->total, (unsigned long long)st->kept);
		jw_kstr(t->w, "cut_note", buf);
	}
	if (m->flight)
		flight_other(t, m);
	if (ur_active(an_uring(a)))
		uring_other(t, uc);
	jw_obj_end(t->w);
}

/* One record of the timeline: a poll (and its flow's end), a wake (and its flow's start), a
 * park, a spawn or a termination */
static void timeline_event(struct tw *t, const struct ev *e, struct perfetto_stats *st)
{
	const struct an_tl_rec *r = e->r;
	uint64_t dur = r->end >= r->ts ? r->end - r->ts : 0;
	char buf[160], res[16];

	switch (r->type) {
	case AN_TL_POLL:
		ev_begin(t, "X", r->ts, r->pid, r->tid);
		k_site_name(t, site_of(t, r->pid, rkey(r)), rkey(r));
		jw_kstr(t->w, "cat", "poll");
		k_dur(t, dur);
		jw_key(t->w, "args");
		jw_obj_begin(t->w);
		jw_ku64(t->w, "task", rkey(r));
		jw_kstr(t->w, "result", report_poll_result(r->code, res, sizeof(res)));
		jw_ki64(t->w, "worker", r->worker);
		{
			const struct tsite *ts = tsite_of(t, r->pid, rkey(r));

			if (ts && ts->name) {
				jw_key(t->w, "task_name");
				jw_strn(t->w, ts->name, ts->name_len);
			}
			if (ts && ts->meta)
				jw_ku64(t->w, "future_size", ts->future_size);
		}
		jw_obj_end(t->w);
		jw_obj_end(t->w);
		st->polls++;
		if (e->flow) {
			ev_begin(t, "f", r->ts + dur / 2, r->pid, r->tid);
			jw_kstr(t->w, "name", "wake");
			jw_kstr(t->w, "cat", "wake");
			jw_ku64(t->w, "id", e->flow);
			jw_kstr(t->w, "bp", "e");
			jw_obj_end(t->w);
		}
		break;
	case AN_TL_WAKE:
		ev_begin(t, "X", r->ts, r->pid, r->tid);
		task_label(buf, sizeof(buf), "wake task", rkey(r));
		jw_kstr(t->w, "name", buf);
		jw_kstr(t->w, "cat", "wake");
		k_dur(t, e->wake_dur);
		jw_key(t->w, "args");
		jw_obj_begin(t->w);
		jw_ku64(t->w, "task", rkey(r));
		jw_kbool(t->w, "by_ref", r->code);
		jw_obj_end(t->w);
		jw_obj_end(t->w);
		st->wakes++;
		if (e->flow) {
			ev_begin(t, "s", r->ts + e->wake_dur / 2, r->pid, r->tid);
			jw_kstr(t->w, "name", "wake");
			jw_kstr(t->w, "cat", "wake");
			jw_ku64(t->w, "id", e->flow);
			jw_obj_end(t->w);
			st->flows++;
		}
		break;
	case AN_TL_PARK:
		ev_begin(t, "X", r->ts, r->pid, r->tid);
		jw_kstr(t->w, "name", "parked");
		jw_kstr(t->w, "cat", "park");
		k_dur(t, dur);
		jw_key(t->w, "args");
		jw_obj_begin(t->w);
		jw_ki64(t->w, "worker", r->worker);
		jw_obj_end(t->w);
		jw_obj_end(t->w);
		st->parks++;
		break;
	case AN_TL_SPAWN:
	case AN_TL_TERMINATE: {
		const struct an_site *s = site_of(t, r->pid, rkey(r));

		ev_begin(t, "i", r->ts, r->pid, r->tid);
		if (r->type == AN_TL_SPAWN) {
			task_label(buf, sizeof(buf), "spawn task", rkey(r));
		} else {
			size_t l = task_label(buf, sizeof(buf), "task", rkey(r));

			snprintf(buf + l, sizeof(buf) - l, " %s",
				 tet_code_label(TET_SET_TERM, r->code) ? tet_code_label(TET_SET_TERM, r->code) : "terminated");
		}
		jw_kstr(t->w, "name", buf);
		jw_kstr(t->w, "cat", "task");
		jw_kstr(t->w, "s", "t");
		jw_key(t->w, "args");
		jw_obj_begin(t->w);
		jw_ku64(t->w, "task", rkey(r));
		if (s && !s->unknown && !s->other && !s->typed) {
			jw_key(t->w, "location");
			jw_strn(t->w, s->location, s->location_len);
			jw_key(t->w, "type_name");
			jw_strn(t->w, s->type_name, s->type_len);
		}
		jw_obj_end(t->w);
		jw_obj_end(t->w);
		break;
	}
	}
}

/* Workers still parked at the end */
static void parked_at_end(struct tw *t, const struct an_worker *const *workers, size_t nworkers,
			  uint64_t end, struct perfetto_stats *st)
{
	for (size_t i = 0; i < nworkers; i++) {
		const struct an_worker *w = workers[i];
		uint64_t b = w->park_since > t->base ? w->park_since : t->base;

		if (!w->parked || b >= end)
			continue;
		ev_begin(t, "X", b, w->pid, w->tid);
		jw_kstr(t->w, "name", "parked");
		jw_kstr(t->w, "cat", "park");
		k_dur(t, end - b);
		jw_key(t->w, "args");
		jw_obj_begin(t->w);
		jw_ki64(t->w, "worker", w->index);
		jw_kbool(t->w, "at_end", true);
		jw_obj_end(t->w);
		jw_obj_end(t->w);
		st->parks++;
	}
}

int report_perfetto(FILE *out, const struct analyzer *a, const struct report_meta *m,
		 struct perfetto_stats *st)
{
	const struct an_tl_rec *s1, *s2;
	size_t n1, n2, n = an_timeline(a, &s1, &n1, &s2, &n2), nth;
	const struct an_worker *const *workers;
	size_t nworkers = an_workers(a, &workers);
	struct ev *ev = malloc((n ? n : 1) * sizeof(*ev));
	size_t *idx = malloc((n ? n : 1) * sizeof(*idx));
	struct tinfo *th = malloc((n + nworkers + 1) * sizeof(*th));
	struct sites_ctx sc = { 0 };
	struct uctx uc = { 0 };
	struct tw t = { 0 };
	struct tinfo trig_on = { 0, 0, -1, false };
	uint64_t total = an_totals(a)->timeline_events, end = m->end_ns;
	uint32_t next_flow = 1;
	char buf[160];
	int ret = -ENOMEM;

	memset(st, 0, sizeof(*st));
	by_header = an_get_opts(a)->key_by_header;
	if (!ev || !idx || !th)
		goto out;
	an_for_each_task(a, collect_site, &sc);
	if (sc.oom)
		goto out;
	qsort(sc.v, sc.n, sizeof(*sc.v), cmp_tsite);
	for (size_t i = 0; i < n1; i++)
		ev[i] = (struct ev){ &s1[i], 0, 0 };
	for (size_t i = 0; i < n2; i++)
		ev[n1 + i] = (struct ev){ &s2[i], 0, 0 };
	qsort(ev, n, sizeof(*ev), cmp_ev_ts);
	if (uring_collect(&uc, an_uring(a), end))
		goto out;
	t.base = m->start_ns;
	if (n && ev[0].r->ts < t.base)
		t.base = ev[0].r->ts;
	for (size_t i = 0; i < uc.n; i++)
		if (uc.v[i].b < t.base)
			t.base = uc.v[i].b;
	if (m->flight && m->flight->trigger.ts && m->flight->trigger.ts < t.base)
		t.base = m->flight->trigger.ts;
	if (end < t.base)
		end = t.base;

	nth = thread_table(th, ev, n, workers, nworkers, m, &trig_on);
	wake_slices(ev, idx, n);
	wake_flows(ev, idx, n, &next_flow);
	uring_lanes(&uc);
	if (uring_flows(&uc, ev, n, &next_flow))
		goto out;

	t.w = jw_new(out, false);
	if (!t.w)
		goto out;
	t.fallback = m->mode && !strcmp(m->mode, "uprobe-fallback");
	t.sites = sc.v;
	t.nsites = sc.n;
	st->kept = n;
	st->total = total > n ? total : n;
	st->cut_before_ns = total > n && n && ev[0].r->ts > m->start_ns ? ev[0].r->ts - m->start_ns : 0;

	jw_obj_begin(t.w);
	jw_kstr(t.w, "displayTimeUnit", "ns");
	other_data(&t, a, m, &uc, st);
	jw_key(t.w, "traceEvents");
	jw_arr_begin(t.w);
	thread_names(&t, th, nth, m->executable ? m->executable : m->binary);
	uring_track_names(&t, &uc, th, nth, m->executable ? m->executable : m->binary);
	if (st->kept < st->total && n) {
		ev_begin(&t, "i", ev[0].r->ts, ev[0].r->pid, ev[0].r->tid);
		snprintf(buf, sizeof(buf), "trace cut: %llu earlier timeline events not kept",
			 (unsigned long long)(st->total - st->kept));
		jw_kstr(t.w, "name", buf);
		jw_kstr(t.w, "cat", "trace");
		jw_kstr(t.w, "s", "g");
		jw_obj_end(t.w);
	}
	if (m->flight)
		flight_instant(&t, m, &trig_on);
	deadlock_instants(&t, a);
	for (size_t i = 0; i < n; i++)
		timeline_event(&t, &ev[i], st);
	parked_at_end(&t, workers, nworkers, end, st);
	uring_slices(&t, &uc);
	jw_arr_end(t.w);
	jw_obj_end(t.w);
	st->events = t.events;
	ret = jw_finish(t.w) ? -EIO : 0;
out:
	free(ev);
	free(idx);
	free(th);
	for (size_t i = 0; i < sc.n; i++)
		free(sc.v[i].name);
	free(sc.v);
	free(uc.v);
	free(uc.tracks);
	return ret;
}

/* ---- --mode sampling ---- */

static void sampling_threads(struct tw *t, const struct sp_profile *p)
{
	const struct sa_model *m = p->m;
	char name[320], comm[200];
	size_t i = 0, j = 0;

	process_name(t, (uint32_t)p->pid, p->exe);
	while (i < m->nthreads || j < p->nsl) {   /* both by tid: merged */
		uint32_t tid = i < m->nthreads && (j >= p->nsl || m->threads[i].tid <= p->sl[j].z->tid) ?
			       m->threads[i].tid : p->sl[j].z->tid;
		const char *c = p->names.thread ? p->names.thread(p->names.ctx, tid) : NULL;

		while (i < m->nthreads && m->threads[i].tid == tid)
			i++;
		while (j < p->nsl && p->sl[j].z->tid == tid)
			j++;
		if (c)
			snprintf(name, sizeof(name), "%s (tid %u)",
				 text_sanitize(c, strnlen(c, 64), 64, comm, sizeof(comm)), tid);
		else
			snprintf(name, sizeof(name), "tid %u", tid);
		metadata(t, "thread_name", (uint32_t)p->pid, tid, name, 0);
		metadata(t, "thread_sort_index", (uint32_t)p->pid, tid, NULL, tid);
	}
}

static void k_type(struct tw *t, const struct sa_model *m, int type)
{
	const char *s = sa_type_name(m, type);

	jw_key(t->w, "name");
	jw_strn(t->w, s, strnlen(s, 256));
}

static void k_task(struct tw *t, uint64_t task)
{
	jw_key(t->w, "task");   /* null: unknown */
	if (task)
		jw_u64(t->w, task);
	else
		jw_null(t->w);
}

int report_sampling_perfetto(FILE *out, const struct sp_profile *p, struct perfetto_stats *st)
{
	const struct sa_model *m = p->m;
	struct tw t = { 0 };

	memset(st, 0, sizeof(*st));
	t.base = p->start_ns;
	for (size_t i = 0; i < m->nf; i++)
		if (m->f[i].first < t.base)
			t.base = m->f[i].first;
	for (size_t i = 0; i < p->nsl; i++)
		if (p->sl[i].z->since < t.base)
			t.base = p->sl[i].z->since;
	t.w = jw_new(out, false);
	if (!t.w)
		return -ENOMEM;
	jw_obj_begin(t.w);
	jw_kstr(t.w, "displayTimeUnit", "ns");
	jw_key(t.w, "otherData");
	jw_obj_begin(t.w);
	jw_kstr(t.w, "tool", "tokio-ebpf-trace");
	jw_kstr(t.w, "mode", "sampling");
	jw_key(t.w, "executable");
	if (p->exe)
		jw_strn(t.w, p->exe, strlen(p->exe));
	else
		jw_null(t.w);
	jw_ku64(t.w, "capture_duration_ns", p->end_ns > p->start_ns ? p->end_ns - p->start_ns : 0);
	jw_ku64(t.w, "capture_start_offset_us", (p->start_ns - t.base) / 1000);
	jw_ku64(t.w, "period_ns", m->period_ns);
	jw_kstr(t.w, "long_poll_note", "on-CPU long polls are drawn from their first to their last sample: they ran on CPU between min_ns and max_ns (the sample period's bounds); blocked slices are exact (the switches)");
	jw_obj_end(t.w);
	jw_key(t.w, "traceEvents");
	jw_arr_begin(t.w);
	sampling_threads(&t, p);
	for (size_t i = 0; i < m->nf; i++) {
		const struct sa_finding *f = &m->f[i];

		if (f->blocked)
			continue;
		ev_begin(&t, "X", f->first, (uint32_t)p->pid, f->tid);
		k_type(&t, m, f->type);
		jw_kstr(t.w, "cat", "long_poll");
		k_dur(&t, f->last - f->first);
		jw_key(t.w, "args");
		jw_obj_begin(t.w);
		jw_kstr(t.w, "seen_as", "on_cpu");
		k_task(&t, f->task);
		jw_ku64(t.w, "samples", f->n);
		jw_ku64(t.w, "min_ns", (f->n - 1) * m->period_ns);
		jw_ku64(t.w, "max_ns", (f->n + 1) * m->period_ns);
		jw_key(t.w, "hottest_frame");
		if (f->hot)
			jw_strn(t.w, f->hot, strnlen(f->hot, 256));
		else
			jw_null(t.w);
		jw_obj_end(t.w);
		jw_obj_end(t.w);
	}
	for (size_t i = 0; i < p->nsl; i++) {
		const struct sp_sleep *sl = &p->sl[i];
		const struct sa_sleep *z = sl->z;
		ev_begin(&t, "X", z->since, (uint32_t)p->pid, z->tid);
		k_type(&t, m, z->ptype);
		jw_kstr(t.w, "cat", "blocked");
		k_dur(&t, z->ts - z->since);
		jw_key(t.w, "args");
		jw_obj_begin(t.w);
		k_task(&t, sl->task);
		jw_kstr(t.w, "syscall", sl->sysname);
		jw_ku64(t.w, "off_cpu_ns", z->ts - z->since);
		jw_ku64(t.w, "blocked_ns", (z->woken ? z->woken : z->ts) - z->since);
		jw_kbool(t.w, "long_poll", sl->long_poll);
		jw_obj_end(t.w);
		jw_obj_end(t.w);
	}
	jw_arr_end(t.w);
	jw_obj_end(t.w);
	st->events = t.events;
	st->kept = st->total = t.events;
	return jw_finish(t.w) ? -EIO : 0;
}
