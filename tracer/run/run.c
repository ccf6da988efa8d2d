// SPDX-License-Identifier: MIT
/*
 * run.c — one trace run (see run.h): the capture's records routed to the analyzer and the
 * flight recorder's store, exits and losses tracked, the live outputs kept up, the report's
 * metadata built. Nothing stays attached on any exit path: run_close destroys the links.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fdwhat.h"
#include "pmem.h"
#include "run_int.h"
#include "seterr.h"
#include "units.h"
#include "uring.h"

/* ---- /proc: what the reports ask of the traced processes ---- */
#define IOFD_REFRESH_NS (100 * NSEC_PER_MSEC)

static int io_fd(void *ctx, uint32_t pid, uint64_t token, char *what, size_t len,
		 const char **kind)
{
	struct iofd *c = ctx;
	uint64_t now = run_mono_ns();
	size_t i;
	int fd, k;

	for (i = 0; i < c->n && c->v[i].pid != pid; i++)
		;
	if (i == c->n) {
		if (c->n == IOFD_PIDS)
			return -1;
		c->v[i].pid = pid;
		c->v[i].refreshed = 0;
		fdw_new(pid, &c->v[i].w);
		c->n++;
	}
	if (!c->v[i].w)
		return -1;
	if (now - c->v[i].refreshed >= IOFD_REFRESH_NS) {
		fdw_refresh(c->v[i].w);
		c->v[i].refreshed = now;
	}
	if (fdw_token(c->v[i].w, token, &fd, NULL))
		return -1;
	k = fdw_describe(c->v[i].w, fd, what, len);
	*kind = fdw_kind_name(k > 0 ? (enum fdw_kind)k : FDW_UNKNOWN);
	return fd;
}

static void iofd_free(struct iofd *c)
{
	for (size_t i = 0; i < c->n; i++)
		fdw_free(c->v[i].w);
	c->n = 0;
}

/* The traced process is gone (or a zombie nobody reaped yet). Asked at every drain: a pidfd
 * (opened by run_open) answers with one poll(), where /proc/PID/stat cost an open, a read and a
 * close, half of an idle tracer's CPU; the /proc reading stays for a kernel without pidfds. */
static bool process_gone(const struct run *r, int pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	if (r->pidfd >= 0) {
		struct pollfd pf = { .fd = r->pidfd, .events = POLLIN };

		return poll(&pf, 1, 0) > 0; /* readable once the process has exited */
	}
	if (kill(pid, 0) && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* ---- the records ---- */
static void fire(struct run *r, const struct report_trigger *t, uint32_t pid_filter,
		 uint32_t name_pid, bool throttled, bool exit)
{
	uint64_t now = run_mono_ns();
	char post[32];

	if (fr_rt_fire(&r->fl, t, now, pid_filter, name_pid, throttled, exit) != FR_QUEUED)
		return;
	tet_say(r->msgs, TET_MSG_INFO, "flight recorder: trigger %s: %s; dumping in %s", t->spec,
		t->detail, fmt_duration(r->fl.q[r->fl.nq - 1].due - now, post, sizeof(post)));
}

/* The live analyzer saw a detection (an_opts.on_detect). */
static void on_detect(void *ctx, const struct an_detect *d)
{
	struct run *r = ctx;
	struct report_trigger t;
	char loc[160];

	if (d->site && d->site->location)
		text_sanitize(d->site->location, d->site->location_len, 120, loc, sizeof(loc));
	else if (d->site && d->site->type_name)
		text_sanitize(d->site->type_name, d->site->type_len, 120, loc, sizeof(loc));
	else
		snprintf(loc, sizeof(loc), "spawned before the trace");
	if (fr_rt_match_detect(&r->fl, d, loc, &t))
		fire(r, &t, d->pid, d->pid, true, false);
}

/* TET_REC_EXIT: a traced process ended. */
static void note_exit(struct run *r, const struct tet_exit_rec *rec)
{
	struct proc_exit *x = NULL;
	struct report_trigger t;
	char sn[32];

	for (size_t i = 0; i < r->nexits; i++)
		if (r->exits[i].pid == rec->h.pid)
			x = &r->exits[i];
	if (!x) {
		if (r->nexits == RUN_PIDS_MAX) { /* the oldest goes */
			memmove(r->exits, r->exits + 1, sizeof(r->exits) - sizeof(r->exits[0]));
			r->nexits--;
		}
		x = &r->exits[r->nexits++];
	}
	x->pid = rec->h.pid;
	x->code = rec->code;
	x->group = rec->group_exit;
	x->ts = rec->h.ts;
	if (r->store && fr_rt_exit_trigger(&r->fl, rec,
					   report_signal_name((int)(rec->code & 0x7f), sn, sizeof(sn)), &t))
		fire(r, &t, rec->h.pid, rec->h.pid, false, true);
}

static const struct proc_exit *exit_of(const struct run *r, uint32_t pid)
{
	for (size_t i = 0; i < r->nexits; i++)
		if (r->exits[i].pid == pid)
			return &r->exits[i];
	return NULL;
}

/* A process's first kernel-side record: the symbolizer learns its mappings while it runs. */
static void learn_pid(struct run *r, uint32_t pid)
{
	char err[256];
	size_t i;

	for (i = 0; i < r->npids && r->pids[i] != pid; i++)
		;
	if (i < r->npids || r->npids == RUN_PIDS_MAX)
		return;
	r->pids[r->npids++] = pid;
	if (ss_add_pid(r->ss, pid, err, sizeof(err)))
		tet_say(r->msgs, TET_MSG_WARN, "stacks of %s: %s", "the process", err);
}

/* TET_RECORD_DUMP=FILE: every record the analyzer gets, as (u32 size, u32 1, bytes), for
 * tests/unit/report_replay.c (a test aid, like batched capture's TET_BATCH_DUMP). */
static void record_dump(struct run *r, const void *data, size_t size)
{
	uint32_t h[2] = { (uint32_t)size, 1 };

	if (fwrite(h, sizeof(h), 1, r->rec_dump) != 1 || fwrite(data, size, 1, r->rec_dump) != 1) {
		tet_say(r->msgs, TET_MSG_INFO, "TET_RECORD_DUMP: write failed, dump stopped");
		fclose(r->rec_dump);
		r->rec_dump = NULL;
	}
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct run *r = ctx;
	const struct tet_hdr *h = data;

	if (r->ss && size >= sizeof(*h) && (h->type == TET_REC_OFFCPU || h->type == TET_REC_SAMPLE))
		learn_pid(r, h->pid);
	if (size >= sizeof(struct tet_exit_rec) && h->type == TET_REC_EXIT) {
		note_exit(r, data);
		return 0;
	}
	/* raw batches are the window: what the live decoder makes of them is not kept again (a
	 * dump's decoder finds the same, gaps included) */
	if (r->store && !(r->raw && size >= sizeof(*h) &&
			  (h->type < TET_EV_COUNT || h->type == TET_REC_GAP))) {
		int err = fr_store_add(r->store, data, size);

		if (size >= sizeof(*h))
			r->fl.last_pid = h->pid;
		if (r->s2 && !err) /* the analysis reads it from the window (s2_follow) */
			return 0;
	}
	if (r->rec_dump)
		record_dump(r, data, size);
	if (r->an)
		an_event(r->an, data, size);
	return 0;
}

/* ---- the live analysis of a raw window (flight.h, the follower) ----
 * The ring's consumer copies batches into the window and nothing more; the analysis decodes
 * them from there in slices of S2_SLICE_NS, at most one in S2_EVERY_NS while the ring has a
 * backlog (from on_raw) and one a step otherwise: a service that saturates the CPUs has its
 * analysis fall behind (the window keeps every batch), not its window lose batches at random.
 * Slices are bounded, and end when a sixteenth of the ring waits to be read, so the copy, and
 * the sweeps, never wait long behind them; while behind, a step's slice is followed by as long
 * a wait (run_wait_ns): the analysis takes at most half of a CPU from a busy service. */
#define S2_SLICE_NS (2 * NSEC_PER_MSEC)
#define S2_EVERY_NS (6 * NSEC_PER_MSEC)
#define S2_STEP_SLICE_NS (10 * NSEC_PER_MSEC)
#define S2_BACKLOG_MAX 0.0625 /* of the ring written and not read: the analysis waits */
#define S2_FINISH_NS (5 * NSEC_PER_SEC) /* at the end, for the rest of the window at most */

static int s2_emit(void *ctx, const void *rec, size_t size)
{
	struct run *r = ctx;

	if (r->rec_dump)
		record_dump(r, rec, size);
	an_event(r->an, rec, size);
	return 0;
}

/* The reads the decoder asks for: the strings it misses (those the window kept, else from the
 * process) and, once it has read the whole window (now_ns != 0), the sweeps of quiet threads (as the
 * capture's decoder does: a quiet thread's "complete up to", a thread gone without its last
 * batch). Behind the window, the recorder's sweeps in it are its sweeps. */
static void s2_serve(struct run *r, uint64_t now_ns)
{
	struct tb_read rq;

	while (tb_next_read(r->s2, now_ns, &rq)) {
		ssize_t n;

		if (rq.kind == TB_READ_THREAD) {
			n = pmem_thread_alive(rq.pid, rq.tid) ? 0 : -ESRCH;
		} else {
			/* a spawn's string the window kept (its batch skipped, the process gone) */
			n = fr_store_string(r->store, rq.pid, rq.addr, rq.buf, rq.len);
			if (n <= 0)
				n = r->sweep_off ? -EPERM : pmem_read(rq.pid, rq.addr, rq.buf, rq.len);
			if (n == -EACCES)
				n = -EPERM;
			else if (n <= 0 && n != -EPERM && n != -ESRCH)
				n = -EIO;
		}
		tb_read_done(r->s2, n);
	}
}

static void s2_in(void *ctx, enum fr_raw_kind kind, const void *rec, size_t size)
{
	struct run *r = ctx;
	const struct tet_hdr *h = rec;

	if (kind == FR_RAW_REC) {
		/* the sampling rate and the gaps: s2's own (the capture's decoder is idle) */
		if (size < sizeof(*h) || (h->type != TET_REC_RATE && h->type != TET_REC_GAP))
			s2_emit(r, rec, size);
		return;
	}
	/* a batch: the window's order is the ring's, the decoder takes its time for how far the
	 * ring has been read */
	if (!fr_raw_feed(r->s2, kind, rec, size))
		return;
	s2_serve(r, 0);
	if (++r->s2_batches % 16 == 0)
		tb_advance(r->s2, h->ts);
}

/* The ring is filling: the copy goes first. */
static bool s2_yield(struct run *r)
{
	return tet_session_backlog(r->sess) > S2_BACKLOG_MAX;
}

/* How a slice is called: from the ring's callback (the ring being read: no end of it to note),
 * after a drain (the ring was read empty by a drain that began at r->drained_before), at the
 * end (the ring is gone: nothing to yield to). */
enum s2_when { S2_IN_DRAIN, S2_AFTER_DRAIN, S2_AT_END };

/* Reads the window on for up to budget_ns, or until the ring fills; true when it has read all
 * of it. Entries are taken a few at a time (a batch holds up to ~2 000 events): the clock and
 * the ring are looked at every ~0.1–0.5 ms. */
static bool s2_follow(struct run *r, uint64_t budget_ns, enum s2_when when)
{
	uint64_t t0 = run_mono_ns(), now = t0;
	bool done = fr_store_follow_done(r->store);

	if (!done && (when == S2_AT_END || !s2_yield(r))) {
		do {
			fr_store_follow(r->store, 4, s2_in, r);
			now = run_mono_ns();
		} while (!(done = fr_store_follow_done(r->store)) && now - t0 < budget_ns &&
			 (when == S2_AT_END || !s2_yield(r)));
	}
	/* all read after a drain: what the ring held before it began is in (as the capture's
	 * decoder notes at each drain) — a quiet service's clock goes on without batches */
	if (done && when == S2_AFTER_DRAIN)
		tb_ring_drained(r->s2, r->drained_before);
	s2_serve(r, done && when != S2_IN_DRAIN ? now : 0);
	tb_advance(r->s2, now);
	r->s2_next = now + S2_EVERY_NS;
	return done;
}

/* Raw batches: the buffers of threads silent for 30 ms read in place, as the live decoder
 * does, and kept in the window (flight.h, sweeps): a dump then meets a quiet spawner's spawns
 * before its tasks' polls, and a poll blocked for long while it runs. */
#define SWEEP_QUIET_NS (30 * NSEC_PER_MSEC)
#define SWEEPS_MAX 64 /* threads read per step */
#define SWEEP_EVERY_NS (5 * NSEC_PER_MSEC) /* … looked for at least this often */
static void flight_sweep(struct run *r)
{
	struct fr_sweep v[SWEEPS_MAX];
	struct tet_batch_head h, h2;
	size_t n;

	if (!r->raw || r->sweep_off ||
	    (!r->sweep_buf && !(r->sweep_buf = malloc(TET_BATCH_DATA_MAX))))
		return;
	/* the clock now, not the step's: a saturated ring keeps the drain from returning */
	n = fr_store_sweeps_due(r->store, run_mono_ns(), SWEEP_QUIET_NS, v, SWEEPS_MAX);
	for (size_t i = 0; i < n; i++) {
		uint64_t now = run_mono_ns();
		ssize_t got = pmem_read(v[i].pid, v[i].buf, &h, sizeof(h));

		if (got == -EPERM || got == -EACCES) {
			r->sweep_off = true;
			tet_say(r->msgs, TET_MSG_WARN, "flight recorder: no permission to read the threads' buffers (needs root or CAP_SYS_PTRACE): a dump may meet a quiet thread's events late");
			return;
		}
		if (got == -ESRCH)
			fr_store_sweep_gone(r->store, &v[i]);
		if (got != (ssize_t)sizeof(h) || !fr_sweep_read_ok(&v[i], &h, &h) ||
		    !fr_sweep_news(&v[i], &h) || /* a quiet thread's head: one read */
		    (h.len && pmem_read(v[i].pid, v[i].buf + sizeof(h), r->sweep_buf, h.len) !=
			      (ssize_t)h.len) ||
		    pmem_read(v[i].pid, v[i].buf, &h2, sizeof(h2)) != (ssize_t)sizeof(h2) ||
		    !fr_sweep_read_ok(&v[i], &h, &h2))
			continue; /* gone, flushed meanwhile or moved on: its batch will come */
		fr_store_add_sweep(r->store, &v[i], now, &h, r->sweep_buf, h.len);
	}
}

/* The flight recorder with batched capture: the batches as the ring hands them over, and the
 * clock pairs that convert their stamps (flight.h), decoded by a dump. */
static int on_raw(void *ctx, unsigned kind, const void *data, size_t size)
{
	struct run *r = ctx;

	const struct tet_hdr *h = data;

	if (!fr_store_add_raw(r->store, (enum fr_raw_kind)kind, data, size) && kind == FR_RAW_BATCH)
		r->fl.last_pid = h->pid;
	/* the sweeps go on while a busy service keeps the ring from ever being empty */
	if (kind == FR_RAW_BATCH && size >= sizeof(*h) && h->ts >= r->next_sweep) {
		r->next_sweep = h->ts + SWEEP_EVERY_NS;
		flight_sweep(r);
		if (r->s2 && run_mono_ns() >= r->s2_next)
			s2_follow(r, S2_SLICE_NS, S2_IN_DRAIN);
	}
	return 0;
}

/* ---- the report's metadata ---- */
static const char *class_list(unsigned mask, char *buf, size_t len)
{
	const struct tet_class *classes;
	size_t nclasses = tet_classes(&classes), o = 0;

	buf[0] = 0;
	for (size_t i = 0; i < nclasses; i++)
		if ((mask & tet_class_mask(classes[i].name)) == tet_class_mask(classes[i].name))
			o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s%s", o ? "," : "",
					      classes[i].name);
	return buf;
}

/* ---- uprobe fallback: what it finds, what it cannot give ---- */
static const char *fallback_missing_impact(int kind)
{
	switch (kind) {
	case TSYM_POLL: return "no polls";
	case TSYM_WAKE_BY_VAL: case TSYM_WAKE_BY_REF: return "wakes through it are not seen";
	case TSYM_CLONE: case TSYM_DROP: return "waker clones/drops are not seen";
	case TSYM_COMPLETE: return "task ends come from raw::dealloc (header freed) instead, and poll results are unknown";
	case TSYM_SHUTDOWN: return "nothing lost (not probed)";
	default: return "";
	}
}

const char *const run_fallback_unavailable[RUN_FALLBACK_UNAVAILABLE] = {
	"spawn locations (tasks are named by their future type)",
	"task ids (tasks are told apart by header pointer)",
	"spawns, and the scheduling delay before a task's first poll",
	"poll results beyond ready/pending (notified, cancelled, panicked are not told apart)",
	"yields and their reasons (yield_now, coop budget)",
	"worker park/unpark and worker indices (polling threads are numbered as first seen)",
	"live waker counts, hence lost_waker (reported as stalled)",
};

static void fallback_verbose(const struct run *r)
{
	const struct tsym_table *s = r->t->syms;

	for (size_t i = 0; i < s->nfns; i++)
		if (s->fns[i].kind == TSYM_POLL)
			tet_say(r->msgs, TET_MSG_INFO, "raw::poll 0x%llx (offset 0x%llx): %s [%s]",
				(unsigned long long)s->fns[i].addr,
				(unsigned long long)s->fns[i].file_off,
				s->types[s->fns[i].type], tsym_src_name(s->fns[i].src));
}

static const struct report_fallback *fallback_meta(struct run *r)
{
	const struct tsym_table *s = r->t->syms;
	const struct tet_fb_info *info = tet_session_fallback(r->sess);
	struct fallback_meta_buf *b = &r->fbm;
	struct report_fallback *f = &b->f;

	memset(b, 0, sizeof(*b));
	f->file = r->t->fb_path;
	for (int k = 0; k < TSYM_KINDS; k++) {
		b->names[k] = tsym_kind_name(k);
		b->counts[k] = s->count[k];
	}
	f->fn_names = b->names;
	f->fn_counts = b->counts;
	f->nfns = TSYM_KINDS;
	f->unavailable = run_fallback_unavailable;
	f->nunavailable = RUN_FALLBACK_UNAVAILABLE;
	f->poll_instances = s->count[TSYM_POLL];
	f->types = s->ntypes;
	f->types_ambiguous = s->ambiguous;
	f->types_exact = s->count[TSYM_POLL] - s->ambiguous - s->by_src[TSYM_SRC_NONE];
	f->type_source = s->v0 ? "v0-mangling" : s->dwarf ? "dwarf" : "symbols";
	if (info) {
		f->multi = info->multi;
		f->why_single = info->why_single;
		f->uprobes = info->uprobes;
		f->links = info->links;
		f->attach_ns = info->attach_ns;
		f->uprobe_ns = info->uprobe_ns;
		f->uretprobe_ns = info->uretprobe_ns;
	}
	if (r->o->verbose)
		fallback_verbose(r);
	return f;
}

/* The decoder of the live analysis: the window's follower (s2) or the capture's own. */
static struct tb *live_decoder(struct run *r)
{
	return r->s2 ? r->s2 : tet_session_decoder(r->sess);
}

static const struct tb_stats *live_batch_stats(struct run *r)
{
	return r->s2 ? tb_stats(r->s2) : tet_session_batch_stats(r->sess);
}

/* The capture's counters; what was decoded (seen, read errors) as the live analysis has it. */
static int live_counters(struct run *r, struct tet_counters *c)
{
	int ret = tet_session_counters(r->sess, c);

	if (!ret && r->s2) {
		const struct tb_stats *st = tb_stats(r->s2);

		for (int i = 0; i < TET_EV_COUNT; i++)
			c->seen[i] = st->by_type[i] + c->drops[i];
		c->read_errors = st->string_misses;
	}
	return ret;
}

/* Batched capture: lock records a thread could not keep make lock holders partial (no
 * deadlock is judged from then on; a poll whose wait records were not all kept says so itself,
 * TET_WAIT_CUT). */
static void note_batch_loss(struct run *r)
{
	const struct tb_stats *st = live_batch_stats(r);

	if (st && st->locks_dropped)
		an_note_lock_loss(r->an);
}

/* The batched capture's figures for a report (live or final). */
static const struct report_batch *batch_meta(struct run *r)
{
	const struct tet_bc_info *bi = tet_session_batch_info(r->sess);
	struct report_batch *rb = &r->rbatch;

	if (!bi)
		return NULL;
	memset(rb, 0, sizeof(*rb));
	rb->stats = live_batch_stats(r);
	tb_totals(live_decoder(r), rb->exact);
	rb->sites = bi->sites;
	rb->rate_sites = bi->rate_sites;
	rb->multi = bi->multi;
	rb->why_single = bi->why_single;
	rb->sweeps = bi->sweeps;
	rb->why_no_sweeps = bi->why_no_sweeps;
	rb->preemption = bi->preemption;
	rb->why_no_preemption = bi->why_no_preemption;
	rb->adaptive = bi->adaptive;
	rb->why_fixed = bi->why_fixed;
	rb->rate = bi->rate;
	rb->max_overhead_pct = r->o->max_overhead_pct;
	rb->rate_failures = bi->rate_failures;
	if (r->s2) {
		struct fr_follow_stats f;

		fr_store_follow_stats(r->store, &f);
		rb->skipped_by_analysis = f.skipped_batches;
	}
	if (r->an && an_get_sampling(r->an)->rate_max > r->meta.sample_rate)
		r->meta.sample_rate = an_get_sampling(r->an)->rate_max;
	return rb;
}

/* The counters as they stand, for a live report. */
static void meta_now(struct run *r)
{
	r->meta.end_ns = r->now;
	r->meta.counters_valid = !live_counters(r, &r->meta.counters);
	pmem_get_stats(&r->meta.pmem);
	r->meta.batch = batch_meta(r);
}

/* ---- opening a run ---- */
static bool run_batched(const struct run_opts *o, const struct tet_targets *t)
{
	return !t->fallback && t->batch && o->capture != CAPTURE_PER_EVENT;
}

bool run_flight_raw(const struct run_opts *o, const struct tet_targets *t)
{
	return o->fl.on && run_batched(o, t);
}

int run_plan(struct run_opts *o, const struct tet_targets *t, const struct tet_msgs *msgs,
	     char *err, size_t len)
{
	bool batched = run_batched(o, t);

	if (!batched && (o->capture == CAPTURE_BATCHED || o->sample_rate > 1)) {
		seterr(err, len, "%s: %s", t->exe ? t->exe : "the target",
		       t->fallback ? "stock Tokio (traced through uprobes) has no batched capture, hence no --capture batched or --sample-rate: rebuild it with scripts/tokio-usdt-build" :
		       "no tokio:event_batch probe (built by an older kit?), hence no --capture batched or --sample-rate: rebuild it with scripts/tokio-usdt-build");
		return -EINVAL;
	}
	if (batched && o->probes_given)
		tet_say(msgs, TET_MSG_WARN, "--probes applies to per-event capture; batched capture records every probe class");
	if (batched) {
		o->probes = t->probes;
		o->probes_given = false;
	}
	if (!o->ringbuf)
		o->ringbuf = batched ? 64u << 20 : 16u << 20;
	if (o->probes_given && (o->probes & ~t->probes)) {
		unsigned missing = o->probes & ~t->probes;

		for (unsigned i = 0; i < TET_EV_COUNT; i++)
			if (missing & (1u << i))
				tet_say(msgs, TET_MSG_WARN, "tokio:%s is not in the target: %s",
					an_event_name(i), "its figures will be missing");
	}
	return 0;
}

/* What the analyzer is told of the probes it gets. */
static void plan_analysis(struct run *r, struct run_opts *o)
{
	const struct tet_targets *t = r->t;

	if (t->fallback) {
		/* no task ids (header pointers), no spawns: live waker counts are unknown, so
		 * waker_clone/drop (the most frequent calls of all) only when asked for */
		o->an.key_by_header = true;
		if (!o->probes_given)
			o->probes &= ~TET_CLASS_WAKER;
		for (int k = 0; k < TSYM_KINDS; k++)
			if (!t->syms->count[k] && k != TSYM_DEALLOC)
				tet_say(r->msgs, TET_MSG_WARN, "%s: %s not found (inlined?): %s",
					t->fb_path, tsym_kind_name(k), fallback_missing_impact(k));
	}
	o->an.no_wakes = !(o->probes & t->probes & TET_PROBE_BIT(TET_EV_WAKE));
	o->an.waker_events = (o->probes & t->probes & TET_CLASS_WAKER) == TET_CLASS_WAKER &&
			     (o->probes & t->probes & TET_CLASS_SPAWN);
	/* batched capture records every event whatever --probes says */
	o->an.wait_events = !t->fallback && (t->probes & TET_PROBE_BIT(TET_EV_WAIT)) &&
			    (r->batched || (o->probes & TET_PROBE_BIT(TET_EV_WAIT)));
}

/* The flight recorder's store, and the live analyzer when something needs it (detector and
 * threshold triggers, --metrics-addr, --interval), bounded for weeks: no timeline, no
 * terminated-task records. */
static int open_flight(struct run *r, struct run_opts *o)
{
	struct an_opts live = o->an;

	if (fr_rt_init(&r->fl, &o->fl))
		return -ENOMEM;
	if (r->fl.trig_poll_ns && (!live.trig_poll_ns || r->fl.trig_poll_ns < live.trig_poll_ns))
		live.trig_poll_ns = r->fl.trig_poll_ns;
	if (r->fl.trig_sched_ns && (!live.trig_sched_ns || r->fl.trig_sched_ns < live.trig_sched_ns))
		live.trig_sched_ns = r->fl.trig_sched_ns;
	/* the dumps find what the triggers fired on; the HTML and the trace are drawn */
	o->an.detect |= r->fl.detectors;
	o->an.timeline_cap = o->timeline_events;
	r->store = fr_store_new(o->fl.window_ns, o->fl.window_bytes);
	if (!r->store)
		return -ENOMEM;
	if (!o->metrics_addr && !o->rw.url && !o->interval_ns && !fr_rt_needs_live(&r->fl))
		return 0;
	live.detect |= r->fl.detectors;
	live.timeline_cap = 0;
	live.max_task_records = 0;
	live.on_detect = on_detect;
	live.detect_ctx = r;
	r->an = an_new(&live);
	/* a raw window's analysis reads it from its first entry (open_session) */
	if (r->batched)
		fr_store_follow_start(r->store);
	return r->an ? 0 : -ENOMEM;
}

static int open_analysis(struct run *r, struct run_opts *o)
{
	int ret = 0;

	if (o->fl.on)
		ret = open_flight(r, o);
	else if (!(r->an = an_new(&o->an)))
		ret = -ENOMEM;
	if (ret)
		return ret;
	if (r->an)
		ur_set_fd_fn(an_uring(r->an), run_fd_target, NULL);
	if (r->an && r->t->fallback &&
	    an_set_types(r->an, (const char *const *)r->t->syms->types, r->t->syms->ntypes))
		return -ENOMEM;
	return 0;
}

/* What the kernel side could not set up, said once attached. */
static void say_kernel_side(struct run *r)
{
	const struct tet_sched_info *si = tet_session_sched(r->sess);
	const struct run_opts *o = r->o;
	char err[TET_ERR_LEN];

	if (r->an)
		an_set_kernel(r->an, si->on, si->profile_hz > 0);
	if (!o->sched.off && !si->on)
		tet_say(r->msgs, TET_MSG_WARN, "%s", si->why_no_sched);
	if (!o->sched.off && o->sched.profile_hz && !si->profile_hz)
		tet_say(r->msgs, TET_MSG_WARN, "%s", si->why_no_profile);
	if (o->fl.on && !si->exits)
		tet_say(r->msgs, TET_MSG_WARN, "%s: a crash will not dump", si->why_no_exits);
	/* io_uring off on this kernel: worth a word when the target has io_uring code */
	if (!o->no_uring && r->t->uring_code && !tet_session_uring(r->sess)->on)
		tet_say(r->msgs, TET_MSG_WARN, "io_uring: %s", tet_session_uring(r->sess)->why_not);
	if (o->pid && (si->on || si->profile_hz)) {
		r->pids[r->npids++] = (uint32_t)o->pid;
		if (ss_add_pid(r->ss, (uint32_t)o->pid, err, sizeof(err)))
			tet_say(r->msgs, TET_MSG_WARN, "stacks of PID %d: %s", o->pid, err);
	}
}

static int open_session(struct run *r, char *err, size_t len)
{
	const struct run_opts *o = r->o;
	struct tet_session_opts so = { 0 };
	int ret;

	tet_libbpf_setup(o->verbose, r->msgs);
	so.pid = o->pid;
	so.probes = o->probes;
	so.ringbuf_bytes = o->ringbuf;
	so.batched = r->batched;
	so.sample_rate = o->sample_rate;
	/* the flight recorder keeps the rate it starts with (its window is not analysed live) */
	so.adaptive = r->batched && !o->sample_fixed && !o->fl.on;
	so.max_cpu = o->max_overhead_pct / 100.0;
	so.verbose = o->verbose;
	so.sched = o->sched;
	so.no_uring = o->no_uring;
	so.on_event = on_event;
	if (r->store && r->batched) {
		r->raw = true;
		so.on_raw = on_raw;
		so.no_decode = true; /* a live analysis reads the window (s2) */
	}
	so.ctx = r;
	so.msgs = r->msgs;
	r->ss = ss_new();
	if (!r->ss) {
		seterr(err, len, "out of memory");
		return -ENOMEM;
	}
	ret = tet_session_open(&r->sess, &so, r->t, err, len);
	if (ret)
		return ret;
	if (r->raw && r->an) {
		const struct tet_bc_info *bi = tet_session_batch_info(r->sess);
		struct tb_opts to = { .emit = s2_emit, .emit_ctx = r, .reads = true };

		r->s2 = tb_new(&to);
		if (!r->s2) {
			seterr(err, len, "out of memory");
			return -ENOMEM;
		}
		tb_set_start(r->s2, bi->start_ns);
		if (bi->adaptive || bi->rate > 1)
			tb_rate(r->s2, bi->start_ns, bi->rate, TET_RATE_START);
	}
	say_kernel_side(r);
	return 0;
}

/* The capture (and --duration) starts once every probe is attached: said, with what. */
static void capture_started(struct run *r)
{
	const struct run_opts *o = r->o;
	size_t links = tet_session_links(r->sess);
	char cls[160];

	clock_gettime(CLOCK_REALTIME, &r->meta.wall_start);
	r->start = run_mono_ns();
	if (r->batched) { /* the moment the event_batch sites began to be attached */
		const struct tet_bc_info *bi = tet_session_batch_info(r->sess);

		r->start = bi->start_ns;
		if (o->sample_rate > 1)
			snprintf(cls, sizeof(cls), "batched capture, %zu event_batch sites, 1 task in %u",
				 bi->sites, o->sample_rate);
		else if (bi->adaptive)
			snprintf(cls, sizeof(cls), "batched capture, %zu event_batch sites, every task while the tracer keeps up (adaptive sampling)",
				 bi->sites);
		else
			snprintf(cls, sizeof(cls), "batched capture, %zu event_batch sites, every task",
				 bi->sites);
		if (!bi->sweeps)
			tet_say(r->msgs, TET_MSG_WARN, "%s: threads' buffers are only seen when they flush (events may wait up to 2 s to be put in order)",
				bi->why_no_sweeps);
	} else {
		class_list(tet_session_probes(r->sess), cls, sizeof(cls));
	}
	if (o->pid)
		tet_say(r->msgs, TET_MSG_INFO, "attached %zu probe attachment%s (%s) to PID %d (%s); Ctrl-C to stop",
			links, links == 1 ? "" : "s", cls, o->pid, r->t->exe ? r->t->exe : "?");
	else
		tet_say(r->msgs, TET_MSG_INFO, "attached %zu probe attachment%s (%s) to %s, every process; Ctrl-C to stop",
			links, links == 1 ? "" : "s", cls, o->binary);
	if (o->verbose) {
		uint32_t ids[TET_EV_COUNT];
		const char *names[TET_EV_COUNT];
		size_t n = tet_session_prog_ids(r->sess, ids, names, TET_EV_COUNT);

		for (size_t i = 0; i < n; i++)
			tet_say(r->msgs, TET_MSG_INFO, "prog %s id %u", names[i], ids[i]);
	}
}

/* The files traced, for the report. */
static int meta_files(struct run *r)
{
	const struct tet_targets *t = r->t;

	r->rfiles = calloc(t->n ? t->n : 1, sizeof(*r->rfiles));
	if (!r->rfiles)
		return -ENOMEM;
	if (t->fallback) {
		r->rfiles[0].path = t->fb_path;
		r->rfiles[0].probes = t->probes;
		r->rfiles[0].sites = tet_session_links(r->sess);
		r->meta.nfiles = 1;
	}
	for (size_t i = 0; i < t->n; i++) {
		r->rfiles[i].path = t->v[i].path;
		r->rfiles[i].probes = t->v[i].probes;
		for (int e = 0; e < TET_EV_COUNT; e++)
			r->rfiles[i].sites += t->v[i].sites[e];
	}
	r->meta.files = r->rfiles;
	if (!t->fallback)
		r->meta.nfiles = t->n;
	return 0;
}

static int meta_init(struct run *r)
{
	const struct run_opts *o = r->o;
	const struct tet_targets *t = r->t;
	struct report_meta *m = &r->meta;

	m->mode = t->fallback ? "uprobe-fallback" : "usdt";
	if (!t->fallback && t->dialect) {
		m->dialect = t->dialect->id;
		m->dialect_lacks = t->dialect->lacks;
	}
	m->uring = tet_session_uring(r->sess);
	m->io_fd = io_fd;
	m->io_ctx = &r->iofd;
	m->capture = r->batched ? "batched" : "per-event";
	m->sample_rate = r->batched ? o->sample_rate : 1;
	m->batch = batch_meta(r);
	if (t->fallback)
		m->fallback = fallback_meta(r);
	m->pid = o->pid;
	m->binary = o->binary;
	m->executable = t->exe;
	m->probes = tet_session_probes(r->sess);
	m->requested_ns = o->duration_ns;
	m->start_ns = r->start;
	m->top = o->top;
	m->ringbuf = o->ringbuf;
	return meta_files(r);
}

/* The Tokio release the traced files were built from (the remote-write label), or NULL. */
static const char *tokio_release(const struct tet_targets *t, char *buf, size_t len)
{
	if (t->fallback)
		return t->fb_attach && !tsym_tokio_release(t->fb_attach, buf, len) ? buf : NULL;
	for (int main_first = 1; main_first >= 0; main_first--)
		for (size_t i = 0; i < t->n; i++)
			if (t->v[i].is_main == main_first &&
			    !tsym_tokio_release(t->v[i].attach_path, buf, len))
				return buf;
	return NULL;
}

/* --remote-write: the URL's host resolves and the sender runs, before anything is attached. */
static int open_remote_write(struct run *r, struct run_opts *o, char *err, size_t len)
{
	char rel[64];

	o->rw.max_sites = o->metrics_sites;
	o->rw.tokio_release = tokio_release(r->t, rel, sizeof(rel));
	return rw_start(&r->rw, &o->rw, r->msgs, err, len);
}

int run_open(struct run **out, struct run_opts *o, const struct tet_targets *t,
	     const struct tet_msgs *msgs, FILE *summary, char *err, size_t len)
{
	struct run *r = calloc(1, sizeof(*r));
	int ret;

	*out = r;
	if (!r) {
		seterr(err, len, "out of memory");
		return -ENOMEM;
	}
	r->o = o;
	r->t = t;
	r->msgs = msgs;
	r->summary = summary;
	r->batched = run_batched(o, t);
	r->pidfd = o->pid ? (int)syscall(SYS_pidfd_open, o->pid, 0) : -1;
	if (o->metrics_addr) {
		ret = prom_start(&r->metrics, o->metrics_addr, o->metrics_sites, err, len);
		if (ret)
			return ret;
	}
	if (o->rw.url) {
		ret = open_remote_write(r, o, err, len);
		if (ret)
			return ret;
	}
	plan_analysis(r, o);
	if (getenv("TET_RECORD_DUMP") && !(r->rec_dump = fopen(getenv("TET_RECORD_DUMP"), "we")))
		tet_say(msgs, TET_MSG_INFO, "TET_RECORD_DUMP %s: %s", getenv("TET_RECORD_DUMP"),
			strerror(errno));
	if (open_analysis(r, o)) {
		seterr(err, len, "out of memory");
		return -ENOMEM;
	}
	ret = open_session(r, err, len);
	if (ret)
		return ret;
	capture_started(r);
	if (meta_init(r)) {
		seterr(err, len, "out of memory");
		return -ENOMEM;
	}
	if (r->metrics) {
		r->meta.end_ns = r->start;
		prom_update(r->metrics, r->an, &r->meta);
		r->next_metrics = r->start + NSEC_PER_SEC;
		tet_say(msgs, TET_MSG_INFO, "serving Prometheus metrics at %s", prom_url(r->metrics));
	}
	if (r->rw) {
		char d[32];

		r->meta.end_ns = r->start;
		r->meta.remote_write = &r->rw_stats;
		rw_get_stats(r->rw, &r->rw_stats);
		rw_push(r->rw, r->an, &r->meta);
		r->next_rw = r->start + o->rw.interval_ns;
		tet_say(msgs, TET_MSG_INFO, "pushing the metrics to %s every %s (Prometheus remote write)",
			r->rw_stats.url, fmt_duration(o->rw.interval_ns, d, sizeof(d)));
	}
	if (o->fl.on) {
		run_dump_init(r);
		fr_dump_announce(&r->dump);
	}
	r->next_tick = r->start + DETECT_TICK_NS;
	r->lt.since = r->start;
	r->lt.margin = r->batched ? 2 * NSEC_PER_SEC : 0;
	if (o->interval_ns)
		r->next_interval = r->start + o->interval_ns;
	return 0;
}

uint64_t run_start_ns(const struct run *r)
{
	return r->start;
}

/* ---- the capture's steps ---- */
uint64_t run_wait_ns(const struct run *r, uint64_t now)
{
	uint64_t wait = r->o->drain_ns, d = r->o->duration_ns;

	/* an analysis behind the window: a step's slice, then as long a wait (half a CPU) */
	if (r->s2 && !fr_store_follow_done(r->store) && wait > S2_STEP_SLICE_NS)
		wait = S2_STEP_SLICE_NS;
	if (d && now - r->start + wait > d)
		wait = now - r->start >= d ? 0 : d - (now - r->start);
	return wait;
}

/* The time-based detectors and the loss windows. The detectors judge what did not happen
 * (no wake, no poll end) up to the time every event has been delivered: batched capture
 * holds a thread's records until it flushes or is swept, and orders them before delivery,
 * so the tracer's clock runs ahead of what the analyzer has seen (by a sweep, ~30 ms; by
 * seconds when the tracer itself was not scheduled, or when quiet threads cannot be read). */
static void step_tick(struct run *r)
{
	struct tb *dec = live_decoder(r);
	uint64_t at = r->now;

	if (dec && tb_delivered_ns(dec) < at)
		at = tb_delivered_ns(dec);
	if (!live_counters(r, &r->meta.counters)) {
		an_note_drops(r->an, r->meta.counters.drops);
		run_loss_track(&r->lt, r->an, &r->meta.counters, r->now);
	}
	note_batch_loss(r);
	an_tick(r->an, at);
	r->next_tick = r->now + DETECT_TICK_NS;
}

static void step_flight(struct run *r, bool usr1)
{
	flight_sweep(r);
	if (usr1) {
		struct report_trigger t = { 0 };

		t.kind = t.spec = "sigusr1";
		t.ts = t.at_ns = r->now;
		snprintf(t.detail, sizeof(t.detail), "SIGUSR1 received");
		fire(r, &t, 0, r->o->pid ? (uint32_t)r->o->pid : r->fl.last_pid, false, false);
	}
	fr_store_trim(r->store, fr_rt_keep_from(&r->fl, r->now));
	if (fr_rt_snap_due(&r->fl, r->now)) {
		struct tet_counters c;
		uint64_t exact[TET_EV_COUNT];
		struct tb *dec = tet_session_decoder(r->sess); /* raw: a dump counts its own */

		if (!tet_session_counters(r->sess, &c)) {
			if (dec)
				tb_totals(dec, exact);
			fr_rt_snap_add(&r->fl, r->now, &c, dec ? exact : NULL);
		}
	}
	run_dump_poll(r, false);
}

int run_step(struct run *r, bool stop, bool usr1, char *err, size_t len)
{
	const struct run_opts *o = r->o;
	uint64_t before = run_mono_ns();
	int ret = tet_session_drain(r->sess);

	if (ret < 0 && ret != -EINTR) {
		seterr(err, len, "reading the ring buffer failed: %s", strerror(-ret));
		return ret;
	}
	r->now = run_mono_ns();
	if (stop)
		return RUN_STOPPED;
	if (o->duration_ns && r->now - r->start >= o->duration_ns)
		return RUN_DURATION;
	if (o->pid && process_gone(r, o->pid)) {
		r->gone = true;
		return RUN_GONE;
	}
	if (r->s2) {
		r->drained_before = before;
		s2_follow(r, S2_STEP_SLICE_NS, S2_AFTER_DRAIN);
		r->now = run_mono_ns();
	}
	if (r->now >= r->next_tick && r->an)
		step_tick(r);
	if (r->store)
		step_flight(r, usr1);
	if (r->metrics && r->now >= r->next_metrics) {
		/* rendered here, served by the metrics thread: the drain never waits for it */
		meta_now(r);
		if (r->rw)
			rw_get_stats(r->rw, &r->rw_stats);
		prom_update(r->metrics, r->an, &r->meta);
		r->next_metrics = r->now + NSEC_PER_SEC;
	}
	if (r->rw && r->now >= r->next_rw) {
		/* rendered and queued here, sent by the sender thread: the drain never waits */
		meta_now(r);
		rw_get_stats(r->rw, &r->rw_stats);
		rw_push(r->rw, r->an, &r->meta);
		r->next_rw = r->now + o->rw.interval_ns;
	}
	if (o->interval_ns && r->now >= r->next_interval) {
		r->meta.ended_by = "running";
		meta_now(r);
		if (!o->quiet)
			report_terminal(r->summary, r->an, &r->meta, false);
		r->next_interval += o->interval_ns;
		if (r->next_interval <= r->now)
			r->next_interval = r->now + o->interval_ns;
	}
	return RUN_GOING;
}

/* ---- the end ---- */
/* How the traced process ended (TET_REC_EXIT, drained just now). */
static void note_gone(struct run *r)
{
	const struct proc_exit *x = exit_of(r, (uint32_t)r->o->pid);

	r->meta.exit_status = -1;
	if (x && (x->code & 0x7f)) {
		r->meta.exit_signal = (int)(x->code & 0x7f);
		r->meta.exit_core = x->code & 0x80;
	} else if (x) {
		r->meta.exit_status = (int)((x->code >> 8) & 0xff);
	}
}

static void say_ended(struct run *r, int stop_signal, const char *then)
{
	char sn[32];

	if (r->gone && r->meta.exit_signal)
		tet_say(r->msgs, TET_MSG_INFO, "process %d was killed by %s%s%s", r->o->pid,
			report_signal_name(r->meta.exit_signal, sn, sizeof(sn)),
			r->meta.exit_core ? " (core dumped)" : "", then);
	else if (r->gone)
		tet_say(r->msgs, TET_MSG_INFO, "process %d exited%s", r->o->pid, then);
	else if (stop_signal)
		tet_say(r->msgs, TET_MSG_INFO, "stopped by %s", strsignal(stop_signal));
}

/* The flight recorder's end: what is queued is written now, then waited for. */
static void finish_flight(struct run *r, int stop_signal)
{
	struct fr_stats fs;

	run_dump_poll(r, true);
	fr_store_stats(r->store, &fs);
	say_ended(r, stop_signal, "");
	tet_say(r->msgs, TET_MSG_INFO, "flight recorder: %llu dump%s written, %llu failed, %llu trigger%s suppressed (cooldown); %llu records held in %llu MiB at the end, %llu evicted",
		(unsigned long long)r->fl.dumps, r->fl.dumps == 1 ? "" : "s",
		(unsigned long long)r->fl.failed, (unsigned long long)r->fl.suppressed,
		r->fl.suppressed == 1 ? "" : "s", (unsigned long long)fs.records,
		(unsigned long long)(fs.bytes >> 20), (unsigned long long)fs.evicted);
	if (r->o->fl.on_dump)
		tet_say(r->msgs, TET_MSG_INFO, "flight recorder: --on-dump: %llu run, %llu failed, %llu skipped (one at a time)",
			(unsigned long long)r->fl.hooks_run, (unsigned long long)r->fl.hooks_failed,
			(unsigned long long)r->fl.hooks_skipped);
	if (fs.spawns_not_kept)
		tet_say(r->msgs, TET_MSG_INFO, "flight recorder: %llu spawns of tasks could not be kept beyond the window (%d tasks, 1/8 of the memory bound): dumps show those tasks as spawned before the trace",
			(unsigned long long)fs.spawns_not_kept, FR_SPAWNS_MAX);
	if (r->s2) {
		struct fr_follow_stats f;

		fr_store_follow_stats(r->store, &f);
		if (f.skipped_chunks || f.behind_bytes)
			tet_say(r->msgs, TET_MSG_WARN, "flight recorder: the live analysis fell behind the window: %.1f MiB of it dropped before it was analysed (%llu chunks, until %.3f s into the capture), %.1f MiB not analysed at the end; the window itself lost nothing to it",
				(double)f.skipped_bytes / 1048576.0, (unsigned long long)f.skipped_chunks,
				f.skipped_until > r->start ? (double)(f.skipped_until - r->start) / 1e9 : 0.0,
				(double)f.behind_bytes / 1048576.0);
		else
			tet_say(r->msgs, TET_MSG_INFO, "flight recorder: the live analysis read the whole window (%llu entries)",
				(unsigned long long)f.entries);
	}
	if (r->raw)
		tet_say(r->msgs, TET_MSG_INFO, "flight recorder: batches kept raw (%.1f bytes an event held); %llu refused as malformed, %llu strings not kept (table full), %llu sweeps of quiet threads kept",
			fs.records ? (double)fs.bytes / (double)fs.records : 0.0,
			(unsigned long long)fs.raw_refused, (unsigned long long)fs.strings_not_kept,
			(unsigned long long)fs.sweeps_kept);
}

/* The final figures pushed, waited for at most RW_FINAL_WAIT_NS; the reports get its figures. */
static void finish_remote_write(struct run *r)
{
	rw_get_stats(r->rw, &r->rw_stats);
	rw_push(r->rw, r->an, &r->meta);
	rw_finish(r->rw, RW_FINAL_WAIT_NS);
	rw_get_stats(r->rw, &r->rw_stats);
}

void run_finish(struct run *r, int stop_signal)
{
	struct report_meta *m = &r->meta;
	char raw[1024];
	int ret;

	/* Detach first (nothing new comes in; the semaphores go back to 0), then take what is
	 * still in the ring, then the counters — every event that was submitted is analyzed. The
	 * capture ends here; detaching takes ~0.1s per probe (an RCU grace period per uprobe in
	 * the kernel), not part of it. */
	r->now = run_mono_ns();
	tet_session_end(r->sess, r->now); /* the end, for every probe at once */
	while ((ret = tet_session_drain(r->sess)) > 0)
		;
	if (r->gone)
		note_gone(r);
	if (r->s2) { /* the analysis reads the rest of the window (its triggers may fire) */
		uint64_t t0 = run_mono_ns();
		bool all;

		tb_set_cutoff(r->s2, r->now);
		while (!(all = s2_follow(r, S2_STEP_SLICE_NS, S2_AT_END)) &&
		       run_mono_ns() - t0 < S2_FINISH_NS)
			;
		if (all) { /* then what the threads still hold, as the capture's decoder did */
			tb_sweep_all(r->s2);
			s2_serve(r, run_mono_ns());
		}
		tb_finish(r->s2);
	}
	if (r->store) {
		finish_flight(r, stop_signal);
		if (r->rw && r->an) {
			meta_now(r);
			finish_remote_write(r);
			tet_say(r->msgs, TET_MSG_INFO, "%s",
				report_remote_write_line(&r->rw_stats, raw, sizeof(raw)));
		}
		return;
	}
	m->counters_valid = !tet_session_counters(r->sess, &m->counters);
	pmem_get_stats(&m->pmem);
	if (m->counters_valid) {
		an_note_drops(r->an, m->counters.drops);
		run_loss_track(&r->lt, r->an, &m->counters, r->now);
	}
	note_batch_loss(r);
	run_lost_tasks_to(r->an, r->sess, m->counters_valid ? &m->counters : NULL);
	m->batch = batch_meta(r);
	an_finish(r->an, r->now);
	run_why_meta(r, &r->why, r->an, m->counters_valid ? &m->counters : NULL);
	m->why = &r->why;
	m->end_ns = r->now;
	m->ended_by = stop_signal ? "signal" : r->gone && m->exit_signal ? "process_crash" :
		      r->gone ? "process_exit" : "duration";
	say_ended(r, stop_signal, "; the report covers what was seen until then");
	if (r->rw)
		finish_remote_write(r);
	if (!r->o->quiet)
		report_terminal(r->summary, r->an, m, true);
	if (r->metrics)
		prom_update(r->metrics, r->an, m);
}

int run_write(struct run *r, struct outputs *outs)
{
	if (r->store) /* the dumps are its reports */
		return 0;
	return outputs_write(outs, r->an, &r->meta, r->msgs) ? -1 : 0;
}

void run_close(struct run *r)
{
	if (!r)
		return;
	fr_dump_wait(&r->dump);
	prom_stop(r->metrics);
	rw_stop(r->rw);
	tet_session_close(r->sess);
	tb_free(r->s2);
	an_free(r->an);
	iofd_free(&r->iofd);
	why_free(&r->why);
	ss_free(r->ss);
	free(r->sweep_buf);
	free(r->rfiles);
	fr_store_free(r->store);
	fr_rt_free(&r->fl);
	if (r->rec_dump)
		fclose(r->rec_dump);
	if (r->pidfd >= 0)
		close(r->pidfd);
	free(r);
}
