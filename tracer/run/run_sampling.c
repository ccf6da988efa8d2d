// SPDX-License-Identifier: MIT
/*
 * run_sampling.c — `trace --mode sampling` (see run_sampling.h): the run. It checks the process
 * (rs_preflight), opens its stacks' decoder (decode/sampstack.h: the poll functions, the
 * symbols) and the capture (capture/sampler.h, through the capture session: capture.h), keeps the
 * records as they come (bounded: RS_MAX_RECS), and at the end resolves each record's poll
 * function, runs the analysis (analyze/sampling.h: the attribution and long_poll rules) and
 * writes the outputs (report/sampling_report.h).
 *
 * While it runs (--metrics-addr, --remote-write, --interval): the analysis is pure, so it is run
 * on the records kept so far (each record's stack is resolved once, as it is met), the metrics
 * rendered from it and published to prom.c's server, pushed by remote_write.c's sender (queued:
 * the loop never waits for the network; a last push of the final figures at the end),
 * --interval's summary printed from it. Bounded in CPU: at most once a second for the metrics,
 * and never sooner than 9 times its own last run time after it (at most a tenth of one CPU
 * however many records); a push or a summary due sooner gives the last analysis's figures (its
 * tokio_trace_capture_seconds, its span say how old).
 *
 * --flight-recorder: the records are not kept in the arrays but in the flight recorder's window
 * (analyze/flight.h: as the ring hands them over, dropped as the window rolls, bounded by its
 * memory), nothing analysed until a trigger (SIGUSR1, the process's exit or crash) queues a
 * dump (run/flight_rt.h) — with --trigger long_poll the last seconds' records are analysed as
 * they come too (flight_live) and its findings fire; a forked child (run/run_dump.h) replays
 * the dump's window through the same intake (on_rec: its bounds and refusals) and analysis,
 * and writes the JSON, report.html and the trace into --dump-dir, named as the other modes'
 * dumps.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "analyzer.h"
#include "capture.h"
#include "discover.h"
#include "events.h"
#include "report.h"
#include "reporters.h"
#include "run_dump.h"
#include "run_sampling.h"
#include "sampling.h"
#include "sampling_prom.h"
#include "sampprof.h"
#include "sampling_report.h"
#include "sampstack.h"
#include "seterr.h"
#include "symbols.h"
#include "text.h"
#include "tlsctx.h"
#include "units.h"

/* Samples kept, and sleeps kept: 2^19 each of 88 B and 96 B (sampling.h's asserts) = 44 + 48 MiB,
 * 92 MiB at most (114 MiB for a moment while realloc doubles an array: the old half and the new) */
#define RS_MAX_RECS (1u << 19)
#define RS_BLOCKING 4096   /* a power of two */
#define RS_BLK_SLEEPS 32   /* sleeps on one thread, none with a poll frame: a BlockingTask's */
/* --flight-recorder --trigger long_poll: the records of the last FR_LIVE_SPAN_NS analysed, at
 * most every FR_LIVE_EVERY_NS and never sooner than 9 times the last analysis's run time after
 * it; the findings fired, by thread and first stamp (a poll still running is met again) */
#define FR_LIVE_SPAN_NS (10 * 1000000000ull)
#define FR_LIVE_EVERY_NS (250 * 1000000ull)
#define FR_FIRED_MAX 64

_Static_assert(SA_KFRAME == SST_KFRAME, "a kernel frame's name: one size from decode to the model");
_Static_assert(SP_FRAME == SST_FRAME_MAX, "a user frame's name: one size from decode to the profile");

struct rs {
	const struct rs_opts *o;
	struct tlsctx tls;
	struct sst *sst;
	struct tet_session *cap;
	struct sa_sample *s;
	size_t ns, caps;
	struct sa_sleep *z;
	size_t nz, capz;
	uint64_t kept_out, noread, bad;
	uint64_t t0, t1;
	int64_t wall0;
	uint64_t scan_hits;
	size_t resolved_s, resolved_z;  /* records whose poll function is set */
	size_t kwarm_z;                 /* sleeps looked at for a kernel stack (live_step) */
	/* what learn_blocking knows of the task ids it met: an open-addressing table */
	struct rs_blk {
		uint64_t id;
		uint32_t tid;       /* the thread of its first sleep without a poll frame */
		uint16_t nsleeps;   /* its sleeps without a poll frame, all on thread tid */
		uint8_t async;      /* slept in an async poll's frame, or on two threads */
		uint8_t told;
	} blk[RS_BLOCKING];
	size_t nblk;
	uint64_t blk_told, blk_by_sleeps, blk_errors, blk_sleeps;
	/* the live outputs (--metrics-addr, --interval) */
	FILE *summary;
	struct prom_server *prom;
	struct rw *rw;                  /* --remote-write's sender */
	struct rw_stats rw_stats;       /* its figures, as of the rendering (sampling_meta) */
	struct sp_labels *labels;       /* the future_type labels of both */
	struct sa_model live;           /* the last live analysis (live_ok: made) */
	struct sampling_meta live_mt;
	bool live_ok, kwarm;
	uint64_t next_metrics, next_interval, next_analysis, next_rw;
	struct sa_input in;
	char comm[64];
	/* --flight-recorder (store: NULL without it) */
	struct fr_store *store;
	struct fr_rt fl;
	struct fr_dumper dump;
	uint64_t fr_bad;               /* records the window did not take: malformed */
	bool fr_live;                  /* --trigger long_poll: the recent records analysed live */
	uint64_t fr_seen;              /* … the newest record stamp of the last analysis */
	struct { uint32_t tid; uint64_t first; } fr_fired[FR_FIRED_MAX]; /* … its findings fired */
	size_t fr_nfired;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int on_rec(void *ctx, void *data, size_t size)
{
	struct rs *r = ctx;
	const struct tet_hdr *h = data;

	if (size < sizeof(*h)) {
		r->bad++;
		return 0;
	}
	if (h->type == TET_REC_TSAMPLE && size >= sizeof(struct tet_tsample_rec)) {
		const struct tet_tsample_rec *x = data;

		if (r->ns == r->caps) {
			size_t cap = r->caps ? r->caps * 2 : 4096;
			void *p;

			if (cap > RS_MAX_RECS || !(p = realloc(r->s, cap * sizeof(*r->s)))) {
				r->kept_out++;
				return 0;
			}
			r->s = p;
			r->caps = cap;
		}
		if (x->flags & TET_TS_NOREAD)
			r->noread++;
		r->s[r->ns++] = (struct sa_sample){ .ts = h->ts, .task = x->task, .tid = h->tid,
			.ustack = x->ustack, .kstack = x->kstack, .flags = x->flags, .nvcsw = x->nvcsw, .ptype = -1,
			.type = -1, .poll = -1 };
		memcpy(r->s[r->ns - 1].polls, x->polls, sizeof(x->polls));

	} else if (h->type == TET_REC_TOFFCPU && size >= sizeof(struct tet_toffcpu_rec)) {
		const struct tet_toffcpu_rec *x = data;

		/* stamps out of order would underflow the durations (sampling.c sleeps()): refused, counted */
		if (x->o.since > h->ts || (x->o.woken && (x->o.woken < x->o.since || x->o.woken > h->ts))) {
			r->bad++;
			return 0;
		}
		if (r->nz == r->capz) {
			size_t cap = r->capz ? r->capz * 2 : 1024;
			void *p;

			if (cap > RS_MAX_RECS || !(p = realloc(r->z, cap * sizeof(*r->z)))) {
				r->kept_out++;
				return 0;
			}
			r->z = p;
			r->capz = cap;
		}
		r->blk_sleeps += !!(x->flags & TET_TS_BLOCKING);
		r->z[r->nz++] = (struct sa_sleep){ .since = x->o.since, .ts = h->ts,
			.woken = x->o.woken, .task = x->task, .syscall = x->o.syscall, .tid = h->tid,
			.flags = x->flags, .ustack = x->o.ustack, .kstack = x->o.kstack, .poll = -1,
			.ptype = -1 };
		memcpy(r->z[r->nz - 1].polls, x->polls, sizeof(x->polls));
	} else if (h->type != TET_REC_EXIT) {
		r->bad++;
	}
	return 0;
}
/* ---- the analysis's view of the stacks (sampstack.h) ---- */

static int stack_lookup(void *ctx, int32_t id, uint64_t *ips)
{
	return bpf_map_lookup_elem(*(int *)ctx, &id, ips);
}

static const char *stack_frame(void *ctx, int32_t ustack)
{
	return sst_frame(ctx, ustack);
}

static size_t stack_kframes(void *ctx, int32_t kstack, char (*out)[SA_KFRAME], size_t max)
{
	return sst_kframes(ctx, kstack, out, max);
}

static bool stack_blocking(void *ctx, int type)
{
	return sst_type_blocking(ctx, type);
}

/* Each sleep's poll function and its future type, from its stack (or the stack scan's words). */
static void resolve_sleeps(struct rs *r)
{
	for (size_t i = r->resolved_z; i < r->nz; i++) {
		struct sa_sleep *z = &r->z[i];
		bool by_scan;

		z->poll = sst_poll(r->sst, z->ustack, z->polls, &by_scan);
		z->ptype = sst_poll_type(r->sst, z->poll);
	}
	r->resolved_z = r->nz;
}

/* Each record's poll function and its future type (the samples', then resolve_sleeps). */
static void resolve(struct rs *r)
{
	for (size_t i = r->resolved_s; i < r->ns; i++) {
		struct sa_sample *s = &r->s[i];
		bool by_scan;

		s->poll = sst_poll(r->sst, s->ustack, s->polls, &by_scan);
		s->ptype = sst_poll_type(r->sst, s->poll);
		r->scan_hits += by_scan;
	}
	r->resolved_s = r->ns;
	resolve_sleeps(r);
}

/* The entry of task id `id` (not 0), made when new; a table half full is emptied first (what
 * is forgotten is learnt again; telling the BPF side twice is harmless). */
static size_t blk_slot(uint64_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 52) & (RS_BLOCKING - 1);
}

static struct rs_blk *blk_get(struct rs *r, uint64_t id)
{
	size_t k = blk_slot(id);

	for (;; k = (k + 1) & (RS_BLOCKING - 1)) {
		if (r->blk[k].id == id)
			return &r->blk[k];
		if (!r->blk[k].id)
			break;
	}
	if (r->nblk >= RS_BLOCKING / 2) {
		memset(r->blk, 0, sizeof(r->blk));
		r->nblk = 0;
		k = blk_slot(id);
	}
	r->nblk++;
	r->blk[k].id = id;
	return &r->blk[k];
}

static void tell_blocking(struct rs *r, struct rs_blk *b, bool by_sleeps)
{
	if (b->told)
		return;
	b->told = 1;
	if (tet_session_blocking_id(r->cap, b->id)) {
		r->blk_errors++;
		return;
	}
	r->blk_told++;
	r->blk_by_sleeps += by_sleeps;
}

/* The sleeps read since the last call resolved (what the end does anyway; the samples wait for
 * it: resolving them costs the tracer a stack lookup and reads of the file per sample, and
 * while the service runs), and the task ids of BlockingTasks told to the BPF side: a
 * multi-thread worker parks in its loop's blocking task, thousands of times a second on a busy
 * service, and each park's stack scan and stacks cost microseconds of the service's CPU
 * (bpf/sched.bpf.h blocking_ids). An id is a BlockingTask's when a sleep's poll frame is a
 * BlockingTask's (the rule analyze/sampling.c reads), or when it has slept RS_BLK_SLEEPS times
 * without a poll frame, all on one thread, and never in an async poll's frame: the scan keeps
 * the first TET_SCAN_CANDS words in the poll functions' address range, and in some releases
 * (1.43) those are all other functions' before a parked worker's BlockingTask frame. A
 * blocking task never moves between threads; an async task whose sleeps the scan never places
 * in its poll would lose no finding by it (a sleep without a poll frame is none). Samples are
 * not asked: on CPU in a worker's loop their scan often finds a frame left over from an earlier
 * poll (1.43's loop ids showed one in 1 run of 2). A sleep recorded in a known blocking task
 * (TET_TS_BLOCKING) has no stack to resolve: after the first parks this costs next to nothing. */
static void learn_sleep(struct rs *r, uint64_t task, uint32_t tid, uint32_t flags, int ptype)
{
	struct rs_blk *b;

	if (!task || (flags & TET_TS_BLOCKING))
		return;
	b = blk_get(r, task);
	if (sst_type_blocking(r->sst, ptype)) {
		tell_blocking(r, b, false);
	} else if (ptype >= 0 || (b->nsleeps && b->tid != tid)) {
		b->async = 1;
	} else if (!b->async) {
		b->tid = tid;
		if (++b->nsleeps >= RS_BLK_SLEEPS)
			tell_blocking(r, b, true);
	}
}

static void learn_blocking(struct rs *r)
{
	size_t z0 = r->resolved_z;

	resolve_sleeps(r);
	for (size_t i = z0; i < r->nz; i++)
		learn_sleep(r, r->z[i].task, r->z[i].tid, r->z[i].flags, r->z[i].ptype);
}

static int analyze(struct rs *r, struct sa_model *m)
{
	const char *e = getenv("TET_TEST_SAMPLING_CAP");  /* the tests lower every cap to it */
	struct sa_input *in = &r->in;

	*in = (struct sa_input){ .s = r->s, .ns = r->ns, .z = r->z, .nz = r->nz,
			       .profile_hz = r->o->profile_hz, .long_poll_ns = r->o->long_poll_ns,
			       .stacks = { stack_frame, stack_kframes, stack_blocking, r->sst },
			       .window_from = r->t0, .window_to = r->t1 };
	in->type_names = sst_types(r->sst, &in->ntypes);
	sa_caps_init(&in->caps, e && *e ? strtoul(e, NULL, 10) : 0);
	resolve(r);
	return sa_analyze(m, in);
}

/* ---- --stacks, --pprof, --trace: the profile (analyze/sampprof.h) and its names ---- */

static size_t prof_user(void *ctx, int32_t ustack, char (*out)[SP_FRAME], size_t max, bool *cut)
{
	return sst_ustack_frames(((struct rs *)ctx)->sst, ustack, out, max, cut);
}

static size_t prof_kernel(void *ctx, int32_t kstack, char (*out)[SA_KFRAME], size_t max)
{
	return sst_kframes(((struct rs *)ctx)->sst, kstack, out, max);
}

/* The thread's comm now (/proc/PID/task/TID/comm), NULL when it is gone */
static const char *prof_thread(void *ctx, uint32_t tid)
{
	struct rs *r = ctx;
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", (int)r->o->pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, r->comm, sizeof(r->comm) - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	r->comm[n] = 0;
	r->comm[strcspn(r->comm, "\n")] = 0;
	return r->comm;
}

static int write_output(FILE *fp, enum out_format fmt, void *ctx)
{
	struct perfetto_stats st;

	switch (fmt) {
	case OUT_STACKS:
		return report_sampling_folded(fp, ctx);
	case OUT_PPROF:
		return report_sampling_pprof(fp, ctx);
	case OUT_PERFETTO:
		return report_sampling_perfetto(fp, ctx, &st);
	default:
		return -EINVAL;  /* refused before the run (trace.c) */
	}
}

static int write_outputs(struct rs *r, struct outputs *outs, const struct sa_model *m, char *err,
			 size_t len)
{
	struct sp_profile p;

	if (sp_build(&p, m, &r->in)) {
		sp_free(&p);
		seterr(err, len, "--mode sampling: out of memory building the profile: --stacks, --pprof and --trace not written");
		return -ENOMEM;
	}
	p.pid = (int)r->o->pid;
	p.exe = sst_exe(r->sst);
	p.start_ns = r->t0;
	p.end_ns = r->t1;
	p.wall_start_ns = r->wall0;
	p.names = (struct sp_names){ prof_user, prof_kernel, prof_thread, r };
	if (outputs_write_with(outs, write_output, &p, r->o->msgs)) {
		sp_free(&p);
		if (len)
			err[0] = 0;   /* the file's error is said (msgs) */
		return -EIO;
	}
	sp_free(&p);
	return 0;
}

/* The heat map's threads named by their comm at the end (untrusted: at most SA_COMM bytes; the
 * reports escape them); a thread gone by then stays "" (unknown). */
static void name_threads(pid_t pid, struct sa_heat *h)
{
	for (size_t i = 0; i < h->nrows; i++) {
		char path[64];
		ssize_t n;
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", (int)pid, h->rows[i].tid);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		n = read(fd, h->rows[i].name, SA_COMM);
		close(fd);
		if (n <= 0)
			n = 0;
		h->rows[i].name[n] = 0;
		h->rows[i].name[strcspn(h->rows[i].name, "\n")] = 0;
	}
}

static void meta(const struct rs *r, const struct tet_counters *c, struct sampling_meta *mt)
{
	const struct tet_sched_info *si = tet_session_sched(r->cap);
	uint64_t lo, hi;

	*mt = (struct sampling_meta){
		.pid = (int)r->o->pid, .exe = sst_exe(r->sst),
		.slot_method = tlsctx_method_name(r->tls.method),
		.slot_layout = tlsctx_layout_name(r->tls.layout), .id_off = r->tls.id_off,
		.tag_off = r->tls.tag_off, .tagged = r->tls.layout == TLSCTX_TAGGED,
		.profile_hz = r->o->profile_hz, .duration_ns = r->t1 - r->t0,
		.stack_scan = sst_stack_scan(r->sst, &lo, &hi), .perf_events = si->perf_events,
		.sched_tracepoints = si->on, .samples = r->ns, .sleeps = r->nz,
		.slot_read_failures = r->noread, .sample_drops = c->sample_drops,
		.sleep_drops = c->offcpu_drops, .stack_errors = c->stack_errors,
		.over_memory_bound = r->kept_out, .malformed = r->bad, .scan_hits = r->scan_hits,
		.blocking_ids_told = r->blk_told, .blocking_ids_by_sleeps = r->blk_by_sleeps,
		.blocking_id_errors = r->blk_errors,
		.blocking_sleeps = r->blk_sleeps,
		.remote_write = r->rw ? &r->rw_stats : NULL,
	};
}

/* ---- the live outputs ---- */
/* The metrics' text (sampling_prom.c), malloc'd; NULL when out of memory. */
static char *metrics_text(struct rs *r, const struct sa_model *m, const struct sampling_meta *mt,
			  size_t *len)
{
	char *buf = NULL;
	FILE *f;
	int ret;

	if (r->rw)  /* mt->remote_write: the sender's figures, as of now */
		rw_get_stats(r->rw, &r->rw_stats);
	*len = 0;
	f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	ret = report_sampling_prom(f, m, mt, r->labels);
	if (fclose(f) || ret) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void publish_metrics(struct rs *r, const struct sa_model *m, const struct sampling_meta *mt)
{
	size_t len;
	char *buf = metrics_text(r, m, mt, &len);

	if (buf)  /* out of memory: the last text stays served */
		prom_publish(r->prom, buf, len);
}

/* Queued for the sender (never waits for the network). The run's labels: docs/reports.md. */
static void push_metrics(struct rs *r, const struct sa_model *m, const struct sampling_meta *mt)
{
	const struct report_meta rm = { .pid = mt->pid, .executable = mt->exe, .mode = "sampling",
					.capture = "perf-event" };
	size_t len;
	char *buf = metrics_text(r, m, mt, &len);

	if (buf)  /* out of memory: this push is skipped */
		rw_push_text(r->rw, buf, len, &rm);
}

/* The analysis of the records so far, when the metrics or a summary is due (see the top). */
static void live_step(struct rs *r, uint64_t now)
{
	const struct rs_opts *o = r->o;
	bool metrics = r->prom && now >= r->next_metrics;
	bool summary = o->interval_ns && now >= r->next_interval;
	bool push = r->rw && now >= r->next_rw;
	struct tet_counters c = { 0 };

	if (!metrics && !summary && !push)
		return;
	if (now >= r->next_analysis) {
		uint64_t t0, t;

		/* each record's stack once, and its name (sampstack.c keeps it; the first names load
		 * the symbols, the first kernel frame kallsyms): not in the budget */
		size_t s0 = r->resolved_s;

		resolve(r);
		for (size_t i = s0; i < r->ns; i++)
			sst_frame(r->sst, r->s[i].ustack);
		for (; r->kwarm_z < r->nz && !r->kwarm; r->kwarm_z++) {
			char k[1][SA_KFRAME];

			r->kwarm = r->z[r->kwarm_z].kstack >= 0 &&
				   sst_kframes(r->sst, r->z[r->kwarm_z].kstack, k, 1);
		}
		t0 = mono_ns();
		sa_free(&r->live);
		r->live_ok = !analyze(r, &r->live);
		tet_session_counters(r->cap, &c);
		r->t1 = now;
		meta(r, &c, &r->live_mt);
		t = mono_ns();
		r->next_analysis = t + 9 * (t - t0);
		if (r->live_ok && r->prom)
			publish_metrics(r, &r->live, &r->live_mt);
	}
	if (metrics)
		r->next_metrics = now + 1000000000ull;
	if (push) {
		if (r->live_ok)
			push_metrics(r, &r->live, &r->live_mt);
		r->next_rw = now + o->rw->interval_ns;
	}
	if (summary) {
		if (r->live_ok && !o->quiet)
			report_sampling_interval(r->summary, &r->live, &r->live_mt);
		r->next_interval += o->interval_ns;
		if (r->next_interval <= now)
			r->next_interval = now + o->interval_ns;
	}
}

int rs_sampling_file(const char *path, const char *what, char *err, size_t len)
{
	struct tsym_table t = { 0 };
	struct tlsctx tls;
	int ret;

#if !defined(__x86_64__)
	(void)path;
	(void)what;
	seterr(err, len, "it reads the thread pointer of x86-64 only");
	return -EOPNOTSUPP;
#endif
	ret = tsym_load(path, &t, err, len);
	if (ret)
		return ret;
	if (!t.has_symtab) {
		seterr(err, len, "%s is stripped (no symbol table): neither the task id slot nor the future types of the polls can be found", what);
		ret = -ENODATA;
	} else if (!t.tokio || !t.count[TSYM_POLL]) {
		seterr(err, len, "%s has no Tokio task functions (raw::poll): nothing to charge samples to", what);
		ret = -ENODATA;
	}
	tsym_free(&t);
	if (ret)
		return ret;
	ret = tlsctx_find(path, &tls);
	if (ret < 0) {
		seterr(err, len, "%s", tls.why);
		return ret;
	}
	if (tls.method == TLSCTX_NONE) {
		seterr(err, len, "Tokio's thread-local task id was not found: %s", tls.why);
		return -ENODATA;
	}
	return 0;
}

int rs_preflight(pid_t pid, char *err, size_t len)
{
	char path[64], what[64], why[TET_ERR_LEN];
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	snprintf(what, sizeof(what), "the executable of pid %d", (int)pid);
	ret = rs_sampling_file(path, what, why, sizeof(why));
	if (ret)
		seterr(err, len, "--mode sampling: %s", why);
	return ret;
}

/* --remote-write: the URL's host resolves and the sender runs, before anything is attached. */
static int start_remote_write(struct rs *r, const char *exe, char *err, size_t len)
{
	struct rw_opts ro = *r->o->rw;
	char rel[64], d[32];
	int ret;

	ro.max_sites = r->o->metrics_sites;
	ro.tokio_release = tsym_tokio_release(exe, rel, sizeof(rel)) ? NULL : rel;
	ret = rw_start(&r->rw, &ro, r->o->msgs, err, len);
	if (ret)
		return ret;
	rw_get_stats(r->rw, &r->rw_stats);
	tet_say(r->o->msgs, TET_MSG_INFO, "pushing the metrics to %s every %s (Prometheus remote write)",
		r->rw_stats.url, fmt_duration(ro.interval_ns, d, sizeof(d)));
	return 0;
}

/* ---- --flight-recorder (see the top) ---- */
static void flight_fire(struct rs *r, const struct report_trigger *t, bool throttled, bool exit)
{
	uint64_t now = mono_ns();
	char post[32];

	if (fr_rt_fire(&r->fl, t, now, 0, (uint32_t)r->o->pid, throttled, exit) != FR_QUEUED)
		return;
	tet_say(r->o->msgs, TET_MSG_INFO, "flight recorder: trigger %s: %s; dumping in %s", t->spec,
		t->detail, fmt_duration(r->fl.q[r->fl.nq - 1].due - now, post, sizeof(post)));
}

/* The ring's records into the window as they come (the intake judges them at a dump); the
 * process's end fires its trigger. */
static int on_rec_flight(void *ctx, void *data, size_t size)
{
	struct rs *r = ctx;
	const struct tet_hdr *h = data;
	struct report_trigger t;
	char sn[32];

	if (size < sizeof(*h)) {
		r->fr_bad++;
	} else if (h->type == TET_REC_TSAMPLE || h->type == TET_REC_TOFFCPU) {
		fr_store_add(r->store, data, size); /* -ENOMEM: counted by the store (evicted) */
		if (r->fr_live)
			on_rec(r, data, size);
		if (h->type == TET_REC_TOFFCPU && size >= sizeof(struct tet_toffcpu_rec)) {
			/* the blocking task ids, learnt here as learn_blocking does without the recorder */
			const struct tet_toffcpu_rec *x = data;
			uint64_t polls[TET_SCAN_CANDS];  /* __u64 is another type than uint64_t */
			bool by_scan;

			if (x->task && !(x->flags & TET_TS_BLOCKING)) {
				memcpy(polls, x->polls, sizeof(polls));
				learn_sleep(r, x->task, h->tid, x->flags, sst_poll_type(r->sst,
					    sst_poll(r->sst, x->o.ustack, polls, &by_scan)));
			}
		}
	} else if (h->type == TET_REC_EXIT && size >= sizeof(struct tet_exit_rec)) {
		const struct tet_exit_rec *x = data;

		if (fr_rt_exit_trigger(&r->fl, x, report_signal_name((int)(x->code & 0x7f), sn, sizeof(sn)),
				       &t))
			flight_fire(r, &t, false, true);
	} else {
		r->fr_bad++;
	}
	return 0;
}

/* A long_poll of the live analysis: its trigger (fr_rt_match_detect: the cooldown's), once. */
static void flight_detect(struct rs *r, const struct sa_model *m, const struct sa_finding *f)
{
	struct an_detect d = { .what = AN_LONG_POLL, .pid = (uint32_t)r->o->pid, .tid = f->tid,
			       .task_id = f->task, .ts = f->first, .at = f->last,
			       .value_ns = f->last - f->first, .threshold_ns = r->o->long_poll_ns };
	struct report_trigger t;
	const char *ty = sa_type_name(m, f->type);
	char loc[256];

	for (size_t i = 0; i < r->fr_nfired && i < FR_FIRED_MAX; i++)
		if (r->fr_fired[i].tid == f->tid && r->fr_fired[i].first == f->first)
			return;
	r->fr_fired[r->fr_nfired % FR_FIRED_MAX].tid = f->tid;
	r->fr_fired[r->fr_nfired % FR_FIRED_MAX].first = f->first;
	r->fr_nfired++;
	/* a name from the traced binary: printable, bounded, in the line and the dump */
	text_sanitize(ty ? ty : "unknown future type", ty ? strnlen(ty, SR_NAME_MAX) : 19, 120, loc,
		      sizeof(loc));
	if (fr_rt_match_detect(&r->fl, &d, loc, &t))
		flight_fire(r, &t, true, false);
}

/* --trigger long_poll: the analysis of the recent records (see FR_LIVE_SPAN_NS); the findings
 * that end after the last analysis's newest record (less a margin for records late in the
 * ring) fire, each once. */
static void flight_live(struct rs *r, uint64_t now)
{
	uint64_t from = now > FR_LIVE_SPAN_NS ? now - FR_LIVE_SPAN_NS : 0, seen = r->fr_seen, t0, t;
	struct sa_model m = { 0 };
	size_t n = 0, res = 0;

	if (!r->fr_live || now < r->next_analysis)
		return;
	for (size_t i = 0; i < r->ns; i++)  /* the older records go (the order kept) */
		if (r->s[i].ts >= from) {
			res += i < r->resolved_s;
			r->s[n++] = r->s[i];
		}
	r->ns = n;
	r->resolved_s = res;
	n = res = 0;
	for (size_t i = 0; i < r->nz; i++)
		if (r->z[i].ts >= from) {
			res += i < r->resolved_z;
			r->z[n++] = r->z[i];
		}
	r->nz = n;
	r->resolved_z = res;
	for (size_t i = 0; i < r->ns; i++)
		r->fr_seen = r->s[i].ts > r->fr_seen ? r->s[i].ts : r->fr_seen;
	for (size_t i = 0; i < r->nz; i++)
		r->fr_seen = r->z[i].ts > r->fr_seen ? r->z[i].ts : r->fr_seen;
	t0 = mono_ns();
	if (!analyze(r, &m))
		for (size_t i = 0; i < m.nf; i++)
			if (m.f[i].last + FR_LIVE_EVERY_NS > seen) /* a late record's: the ring dedups */
				flight_detect(r, &m, &m.f[i]);
	sa_free(&m);
	t = mono_ns();
	r->next_analysis = t + (9 * (t - t0) > FR_LIVE_EVERY_NS ? 9 * (t - t0) : FR_LIVE_EVERY_NS);
}

/* Each drain: SIGUSR1's dump, the window rolled on, the counters' snapshot, a dump due. */
static void flight_step(struct rs *r, uint64_t now)
{
	struct tet_counters c;

	if (r->o->usr1 && *r->o->usr1) {
		struct report_trigger t = { 0 };

		*r->o->usr1 = 0;
		t.kind = t.spec = "sigusr1";
		t.ts = t.at_ns = now;
		snprintf(t.detail, sizeof(t.detail), "SIGUSR1 received");
		flight_fire(r, &t, false, false);
	}
	flight_live(r, now);
	fr_store_trim(r->store, fr_rt_keep_from(&r->fl, now));
	if (fr_rt_snap_due(&r->fl, now) && !tet_session_counters(r->cap, &c))
		fr_rt_snap_add(&r->fl, now, &c, NULL);
	fr_dump_poll(&r->dump, false);
}

static void replay_rec(void *ctx, const void *rec, size_t size)
{
	on_rec(ctx, (void *)rec, size);
}

/* The window's records (this child's copy of the run) through the intake and the analysis. */
static int flight_analyze(struct rs *r, const struct fr_pending *p, struct report_flight *rf,
			  struct sa_model *m, struct sampling_meta *mt)
{
	const struct flight_opts *fo = r->o->fl;
	struct tet_counters c = { 0 };
	const struct fr_snap *base;
	struct timespec wall_start, wall_trig;
	struct fr_stats st;
	struct fr_plan plan;
	uint64_t spawns_before;

	fr_store_stats(r->store, &st);
	fr_rt_plan(fo, &st, p, &plan);
	*rf = (struct report_flight){ .window_ns = fo->window_ns, .window_bytes = fo->window_bytes,
		.from_ns = plan.from, .to_ns = plan.to, .post_ns = fo->post_ns, .bytes = st.bytes,
		.cut_by_memory = plan.cut_by_memory, .dump_index = r->fl.dump_index,
		.triggers_suppressed = r->fl.suppressed, .trigger = p->t, .on_dump = fo->on_dump != NULL,
		.hooks_run = r->fl.hooks_run, .hooks_failed = r->fl.hooks_failed,
		.hooks_skipped = r->fl.hooks_skipped };
	r->s = NULL, r->z = NULL;
	r->ns = r->caps = r->nz = r->capz = r->resolved_s = r->resolved_z = 0;
	r->kept_out = r->noread = r->bad = r->scan_hits = r->blk_sleeps = 0;
	rf->records = fr_store_replay(r->store, plan.from, plan.to, 0, replay_rec, r, &spawns_before);
	r->t0 = plan.from;
	r->t1 = plan.to;
	fr_dump_wall(plan.from, p->t.at_ns, &wall_start, &wall_trig);
	r->wall0 = (int64_t)wall_start.tv_sec * 1000000000 + wall_start.tv_nsec;
	/* the drops of the window: the counters now less those at its start */
	if (!tet_session_counters(r->cap, &c) && (base = fr_rt_snap_base(&r->fl, plan.from)))
		fr_counters_since(&c, &base->c);
	if (analyze(r, m))
		return -ENOMEM;
	name_threads(r->o->pid, &m->heat);
	meta(r, &c, mt);
	mt->flight = rf;
	return 0;
}

/* The dump (in the child, fr_dumper.write): the JSON, report.html and the trace of the window;
 * one failed: none of them left. */
static int flight_write(void *ctx, const struct fr_pending *p, const char *name)
{
	struct rs *r = ctx;
	struct report_flight rf;
	struct sa_model m = { 0 };
	struct sampling_meta mt;
	struct outputs outs = { 0 };
	char *paths[FR_DUMP_FILES] = { 0 }, err[TET_ERR_LEN] = "";
	int status = 1;

	for (int i = 0; i < FR_DUMP_FILES; i++)
		if (asprintf(&paths[i], "%s/%s.%s", r->o->fl->dir, name, fr_dump_ext[i]) < 0) {
			paths[i] = NULL;
			seterr(err, sizeof(err), "out of memory");
			goto out;
		}
	if (flight_analyze(r, p, &rf, &m, &mt)) {
		seterr(err, sizeof(err), "out of memory analysing the window");
		goto out;
	}
	rf.basename = name; /* fr_dump_poll named it, before the fork */
	tet_say(r->o->msgs, TET_MSG_INFO, "flight recorder: dump %llu (%s): %llu records from the window (%llu samples, %llu sleeps kept)%s",
		(unsigned long long)rf.dump_index, p->t.detail, (unsigned long long)rf.records,
		(unsigned long long)r->ns, (unsigned long long)r->nz,
		rf.cut_by_memory ? " (the memory bound cut the window short)" : "");
	if (report_sampling_write_json(paths[0], &m, &mt, err, sizeof(err)) ||
	    report_sampling_write_html(paths[1], &m, &mt, err, sizeof(err)) ||
	    outputs_add(&outs, paths[2], OUT_PERFETTO, err, sizeof(err)) ||
	    outputs_open(&outs, err, sizeof(err)) || write_outputs(r, &outs, &m, err, sizeof(err)))
		goto out;
	status = 0;
	fr_dump_budget(&r->dump, name);
out:
	if (status) {
		tet_say(r->o->msgs, TET_MSG_ERROR, "flight recorder: dump %llu: %s",
			(unsigned long long)r->fl.dump_index, *err ? err : "a file failed (above)");
		for (int i = 0; i < FR_DUMP_FILES && paths[i]; i++)
			unlink(paths[i]);
	}
	outputs_abort(&outs);
	for (int i = 0; i < FR_DUMP_FILES; i++)
		free(paths[i]);
	sa_free(&m);
	free(r->s);
	free(r->z);
	return status;
}

static int flight_start(struct rs *r, char *err, size_t len)
{
	const struct flight_opts *fo = r->o->fl;

	if (fr_rt_init(&r->fl, fo) || !(r->store = fr_store_new(fo->window_ns, fo->window_bytes))) {
		seterr(err, len, "--flight-recorder: out of memory");
		return -ENOMEM;
	}
	r->fr_live = r->fl.detectors & (1u << AN_LONG_POLL);
	r->dump = (struct fr_dumper){ .fo = fo, .fl = &r->fl, .msgs = r->o->msgs,
				      .exe = sst_exe(r->sst), .write = flight_write, .ctx = r };
	fr_dump_announce(&r->dump);
	return 0;
}

/* The end: what is queued is written now, then waited for. */
static void flight_end(struct rs *r)
{
	struct fr_stats fs;

	fr_dump_poll(&r->dump, true);
	fr_store_stats(r->store, &fs);
	tet_say(r->o->msgs, TET_MSG_INFO, "flight recorder: %llu dump%s written, %llu failed; %llu records held in %llu MiB at the end, %llu evicted (%s), %llu malformed not kept",
		(unsigned long long)r->fl.dumps, r->fl.dumps == 1 ? "" : "s",
		(unsigned long long)r->fl.failed, (unsigned long long)fs.records,
		(unsigned long long)(fs.bytes >> 20), (unsigned long long)fs.evicted,
		fs.evicted_by_size ? "some by the memory bound" : "by the window",
		(unsigned long long)r->fr_bad);
	if (r->o->fl->on_dump)
		tet_say(r->o->msgs, TET_MSG_INFO, "flight recorder: --on-dump: %llu run, %llu failed, %llu skipped (one at a time)",
			(unsigned long long)r->fl.hooks_run, (unsigned long long)r->fl.hooks_failed,
			(unsigned long long)r->fl.hooks_skipped);
}

/* Attaches the sampler, drains it until stopped, the duration is over or the process ended. */
static int capture(struct rs *r, int *stacks_fd, char *err, size_t len)
{
	const struct rs_opts *o = r->o;
	uint64_t poll_lo, poll_hi;
	int ret;

	sst_stack_scan(r->sst, &poll_lo, &poll_hi);
	ret = tet_session_open(&r->cap, &(struct tet_session_opts){ .pid = o->pid,
			       .ringbuf_bytes = o->ringbuf_bytes,
			       .on_event = r->store ? on_rec_flight : on_rec, .ctx = r,
			       .sampling = true, .sampler = { .profile_hz = o->profile_hz,
			       .id_off = r->tls.id_off, .tagged = r->tls.layout == TLSCTX_TAGGED,
			       .poll_lo = poll_lo, .poll_hi = poll_hi } }, NULL, err, len);
	if (ret)
		return ret;
	*stacks_fd = tet_session_stacks_fd(r->cap);
	/* with -q too, as the other modes' attach line: what waits for the tracer waits for it */
	fprintf(stderr, "tokio-ebpf-trace: sampling pid %d at %u Hz: attached (%zu perf events, sched tracepoints %s; no uprobe)\n",
		(int)o->pid, o->profile_hz, tet_session_sched(r->cap)->perf_events,
		tet_session_sched(r->cap)->on ? "on" : "off");
	r->t0 = mono_ns();
	r->next_metrics = r->t0;
	r->next_rw = r->t0;  /* a first push at the start, as the other modes */
	r->next_interval = r->t0 + o->interval_ns;
	{
		struct timespec w;

		clock_gettime(CLOCK_REALTIME, &w);
		r->wall0 = (int64_t)w.tv_sec * 1000000000 + w.tv_nsec;
	}
	for (;;) {
		struct timespec ts = { 0, 100000000 };

		if (tet_session_drain(r->cap) < 0)
			break;
		if (!r->store)  /* the recorder learns as the records come (on_rec_flight) */
			learn_blocking(r);
		live_step(r, mono_ns());
		if (r->store)
			flight_step(r, mono_ns());
		if (o->stop && *o->stop)
			break;
		if (o->duration_ns && mono_ns() - r->t0 >= o->duration_ns)
			break;
		if (kill(o->pid, 0) && errno == ESRCH)
			break;
		nanosleep(&ts, NULL);
	}
	r->t1 = mono_ns();
	tet_session_end(r->cap, r->t1);
	tet_session_drain(r->cap);
	return 0;
}

int rs_run(const struct rs_opts *o, FILE *summary, char *err, size_t len)
{
	struct rs r = { .o = o, .summary = summary };
	struct sa_model model = { 0 };
	struct sampling_meta mt;
	struct tet_counters c = { 0 };
	int stacks_fd = -1;
	char path[64];
	int ret;

	ret = sst_open(&r.sst, o->pid, err, len);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)o->pid);
	if (tlsctx_find(path, &r.tls) < 0 || r.tls.method == TLSCTX_NONE) {
		seterr(err, len, "--mode sampling: Tokio's thread-local task id was not found: %s", r.tls.why);
		ret = -ENODATA;
		goto out;
	}
	sst_set_lookup(r.sst, stack_lookup, &stacks_fd);
	if ((o->metrics_addr || o->rw) && !(r.labels = sp_labels_new(o->metrics_sites))) {
		ret = -ENOMEM;
		seterr(err, len, "out of memory");
		goto out;
	}
	if (o->metrics_addr) {
		ret = prom_start(&r.prom, o->metrics_addr, o->metrics_sites, err, len);
		if (ret)
			goto out;
		if (!o->quiet)
			fprintf(stderr, "tokio-ebpf-trace: serving Prometheus metrics at %s\n",
				prom_url(r.prom));
	}
	if (o->rw) {
		ret = start_remote_write(&r, path, err, len);
		if (ret)
			goto out;
	}
	if (o->fl && (ret = flight_start(&r, err, len)))
		goto out;
	ret = capture(&r, &stacks_fd, err, len);
	if (ret)
		goto out;
	if (r.store) { /* the dumps are its reports */
		flight_end(&r);
		goto out;
	}
	sa_free(&r.live);  /* its memory, before the final analysis's */
	r.live_ok = false;
	tet_session_counters(r.cap, &c);
	if (analyze(&r, &model)) {
		ret = -ENOMEM;
		seterr(err, len, "--mode sampling: out of memory analysing the samples: no report written");
		goto out;
	}
	name_threads(o->pid, &model.heat);
	meta(&r, &c, &mt);
	if (r.rw) {  /* the final figures, waited for at most RW_FINAL_WAIT_NS */
		push_metrics(&r, &model, &mt);
		rw_finish(r.rw, RW_FINAL_WAIT_NS);
		rw_get_stats(r.rw, &r.rw_stats);
	}
	if (r.prom)
		publish_metrics(&r, &model, &mt);
	if (!o->quiet)
		report_sampling_terminal(summary, &model, &mt);
	if (o->json_path)
		ret = report_sampling_write_json(o->json_path, &model, &mt, err, len);
	if (!ret && o->outs && o->outs->n)
		ret = write_outputs(&r, o->outs, &model, err, len);
	if (!ret && o->html_path)
		ret = report_sampling_write_html(o->html_path, &model, &mt, err, len);
out:
	fr_dump_wait(&r.dump);
	fr_store_free(r.store);
	fr_rt_free(&r.fl);
	prom_stop(r.prom);
	rw_stop(r.rw);
	sp_labels_free(r.labels);
	sa_free(&r.live);
	tet_session_close(r.cap);
	sa_free(&model);
	free(r.s);
	free(r.z);
	sst_close(r.sst);
	return ret;
}
