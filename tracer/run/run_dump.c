// SPDX-License-Identifier: MIT
/*
 * run_dump.c — a flight-recorder dump: a forked child replays the planned window
 * (flight_rt.h) of a copy-on-write snapshot of the store into a fresh analyzer and writes the
 * reports next to each other, while the recorder goes on draining. One child at a time.
 *
 * --on-dump CMD: once a dump's child exited 0 (every file written and renamed into place), the
 * recorder starts `/bin/sh -c CMD <name> FILE...` with the dump's three files as "$@", in a
 * process group of its own (posix_spawn: no copy of the recorder's page tables), stdin from
 * /dev/null, stdout onto stderr. One at a time: a dump that completes while the previous
 * one's command still runs is not handed over (counted as skipped, said in one line). Reaped
 * without waiting at every step; a non-zero exit, a signal or a failed start is a one-line
 * warning, counted (fr_rt.hooks_*, the next dumps' flight_recorder.on_dump, the recorder's last
 * line). While it runs, --dump-max-bytes does not remove its dump (the next dump's child keeps
 * that name too). At the end the last dump is handed over after the running command ended (or
 * was stopped); the recorder waits up to HOOK_END_WAIT_NS for each, then stops its group
 * (SIGTERM, then SIGKILL) and counts it failed. A child whose status waitpid cannot give
 * (ECHILD: SIGCHLD ignored, the tracer resets it at start) counts as ended and failed, and its
 * process group is never signalled after that: the pid may be another process's by then.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "pmem.h"
#include "run_dump.h"
#include "run_int.h"
#include "seterr.h"
#include "uring.h"

struct feed {
	struct analyzer *an;
	uint64_t next_tick;
};

static void feed_rec(void *ctx, const void *rec, size_t size)
{
	struct feed *f = ctx;
	const struct tet_hdr *h = rec;

	if (h->ts >= f->next_tick) { /* the time-based detectors, as the live capture ticks */
		if (f->next_tick)
			an_tick(f->an, h->ts);
		f->next_tick = h->ts + DETECT_TICK_NS;
	}
	an_event(f->an, rec, size);
}

/* The decoder's reads: a failed one is never taken for a thread gone (flight.h) */
static ssize_t dump_read(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	return pmem_read(pid, addr, buf, len);
}

/* Wall clock of the window's start and of the trigger: the two clocks read back to back (this
 * child runs at nice 10 or more; a preemption between reads far apart would shift the
 * names). */
void fr_dump_wall(uint64_t from, uint64_t trig_at, struct timespec *start, struct timespec *trig)
{
	struct timespec wall_now;
	uint64_t m = run_mono_ns();
	int64_t back, tback, ns;

	clock_gettime(CLOCK_REALTIME, &wall_now);
	back = (int64_t)(m - from);
	tback = (int64_t)(m - trig_at);
	ns = (int64_t)wall_now.tv_sec * (int64_t)NSEC_PER_SEC + wall_now.tv_nsec;
	start->tv_sec = (time_t)((ns - back) / (int64_t)NSEC_PER_SEC);
	start->tv_nsec = (long)((ns - back) % (int64_t)NSEC_PER_SEC);
	trig->tv_sec = (time_t)((ns - tback) / (int64_t)NSEC_PER_SEC);
	trig->tv_nsec = (long)((ns - tback) % (int64_t)NSEC_PER_SEC);
}

/* The loss windows of the snapshots (oldest first), then since the last one. */
static void dump_loss_windows(struct run *r, struct analyzer *an, bool batched, uint64_t mono)
{
	struct loss_track lt = { 0, 0, batched ? 2 * NSEC_PER_SEC : 0 };
	struct tet_counters cur;

	for (size_t i = 0; i < r->fl.nsnaps; i++) {
		const struct fr_snap *sn = fr_rt_snap_at(&r->fl, i);

		if (!i) {
			lt.since = sn->ts;
			lt.drops = run_drops_total(&sn->c);
			continue;
		}
		run_loss_track(&lt, an, &sn->c, sn->ts);
	}
	if (r->fl.nsnaps && !tet_session_counters(r->sess, &cur))
		run_loss_track(&lt, an, &cur, mono);
}

/* The drops of the window: the counters now, less those of its start; with batched capture,
 * the exact totals of a sampled capture likewise. */
static void dump_counters(struct run *r, struct analyzer *an, struct report_meta *meta,
			  struct report_batch *rb, uint64_t from, uint64_t mono, const struct tb *win,
			  const uint64_t *win_types)
{
	struct tet_counters now_c;
	const struct fr_snap *base;

	meta->counters_valid = !tet_session_counters(r->sess, &now_c);
	pmem_get_stats(&meta->pmem);
	if (!meta->counters_valid)
		return;
	base = fr_rt_snap_base(&r->fl, from);
	if (meta->batch && win) { /* raw: the window's own figures, as its decoder found them */
		*rb = *meta->batch;
		rb->stats = tb_stats(win);
		tb_totals(win, rb->exact);
		meta->batch = rb;
	} else if (meta->batch) {
		*rb = *meta->batch;
		tb_totals(tet_session_decoder(r->sess), rb->exact);
		for (int i = 0; base && i < TET_EV_COUNT; i++)
			rb->exact[i] = rb->exact[i] >= base->exact[i] ? rb->exact[i] - base->exact[i] : 0;
		meta->batch = rb;
	}
	if (meta->batch) /* the live analysis's skipped batches are not the dump's */
		rb->skipped_by_analysis = 0;
	if (base)
		fr_counters_since(&now_c, &base->c);
	if (win) { /* raw: the capture decoded nothing; what reached the probes is the window's */
		for (int i = 0; i < TET_EV_COUNT; i++)
			now_c.seen[i] = win_types[i] + now_c.drops[i];
		now_c.read_errors = tb_stats(win)->string_misses;
	}
	meta->counters = now_c;
	an_note_drops(an, now_c.drops);
	dump_loss_windows(r, an, meta->batch != NULL, mono);
	run_lost_tasks_to(an, r->sess, &now_c);
}

static struct analyzer *dump_analyzer(struct run *r)
{
	struct an_opts ao = r->o->an;
	struct analyzer *an;

	ao.timeline_cap = r->o->timeline_events;
	ao.on_detect = NULL;
	an = an_new(&ao);
	if (!an)
		return NULL;
	ur_set_fd_fn(an_uring(an), run_fd_target, NULL);
	if (r->t->fallback &&
	    an_set_types(an, (const char *const *)r->t->syms->types, r->t->syms->ntypes)) {
		an_free(an);
		return NULL;
	}
	an_set_kernel(an, tet_session_sched(r->sess)->on, tet_session_sched(r->sess)->profile_hz > 0);
	return an;
}

/* The JSON, the HTML and the trace of a dump, then the directory held to its budget. */
static int dump_outputs(struct run *r, struct analyzer *an, const struct report_meta *meta,
			const char *name)
{
	const struct flight_opts *fo = &r->o->fl;
	struct outputs outs = { 0 };
	char *paths[FR_DUMP_FILES] = { 0 }, errbuf[1024];
	int status = 1;

	for (int i = 0; i < FR_DUMP_FILES; i++) {
		if (asprintf(&paths[i], "%s/%s.%s", fo->dir, name, fr_dump_ext[i]) < 0) {
			paths[i] = NULL;
			tet_say(r->msgs, TET_MSG_ERROR, "out of memory");
			goto out;
		}
		outputs_add(&outs, paths[i], i == 0 ? OUT_JSON : i == 1 ? OUT_HTML : OUT_PERFETTO, NULL,
			    0);
	}
	if (outputs_open(&outs, errbuf, sizeof(errbuf))) {
		tet_say(r->msgs, TET_MSG_ERROR, "%s", errbuf);
		goto out;
	}
	status = outputs_write(&outs, an, meta, r->msgs) ? 1 : 0;
	fr_dump_budget(&r->dump, name);
out:
	outputs_abort(&outs);
	for (int i = 0; i < FR_DUMP_FILES; i++)
		free(paths[i]);
	return status;
}

const char *const fr_dump_ext[FR_DUMP_FILES] = { "json", "html", "trace.json" };

void fr_dump_budget(const struct fr_dumper *d, const char *name)
{
	/* the forked copy's d->hook: the command that ran when this dump began still reads its own */
	const char *keep[2] = { name, d->hook > 0 ? d->hook_name : NULL };
	size_t nrm;
	uint64_t rm = fr_dir_enforce(d->fo->dir, d->fo->dump_max_bytes, keep, 2, &nrm);

	if (nrm)
		tet_say(d->msgs, TET_MSG_INFO, "flight recorder: removed %zu old dump file%s (%llu bytes): --dump-max-bytes %llu",
			nrm, nrm == 1 ? "" : "s", (unsigned long long)rm,
			(unsigned long long)d->fo->dump_max_bytes);
}

void fr_dump_announce(const struct fr_dumper *d)
{
	const struct flight_opts *fo = d->fo;
	char w[32], trig[400] = "SIGUSR1, crash";
	size_t n = strlen(trig);

	for (size_t i = 0; i < fo->ntrig && n < sizeof(trig); i++)
		if (fo->trig[i].kind != FR_TRIG_CRASH)
			n += (size_t)snprintf(trig + n, sizeof(trig) - n, ", %s", fo->trig[i].spec);
	if (fo->window_ns)
		tet_say(d->msgs, TET_MSG_INFO, "flight recorder: keeping the last %s of events (at most %llu MiB); dumps into %s on: %s",
			fmt_duration(fo->window_ns, w, sizeof(w)),
			(unsigned long long)(fo->window_bytes >> 20), fo->dir, trig);
	else
		tet_say(d->msgs, TET_MSG_INFO, "flight recorder: keeping the last %llu MiB of events; dumps into %s on: %s",
			(unsigned long long)(fo->window_bytes >> 20), fo->dir, trig);
}

/* Events the ring could not take since the capture began. */
static uint64_t lost_since_start(struct run *r)
{
	struct tet_counters c;

	return tet_session_counters(r->sess, &c) ? 0 : run_drops_total(&c);
}

/* The dump itself (in the child). Returns the exit status. */
static int dump_write(void *ctx, const struct fr_pending *p, const char *name)
{
	struct run *r = ctx;
	const struct flight_opts *fo = &r->o->fl;
	struct report_meta meta = r->meta;
	struct report_batch rb;
	struct report_flight rf = { 0 };
	struct why_report why = { 0 };
	struct fr_stats st;
	struct fr_plan plan;
	struct feed f = { 0 };
	struct tb *win = NULL;
	uint64_t win_types[TET_EV_COUNT] = { 0 }; /* raw: the window's events by probe */
	struct timespec wall_trig;
	uint64_t mono = run_mono_ns(), spawns_before = 0;
	int status = 1;

	meta.remote_write = NULL; /* the sender's figures are the live run's, not the window's */
	fr_store_stats(r->store, &st);
	fr_rt_plan(fo, &st, p, &plan);
	rf.window_ns = fo->window_ns;
	rf.window_bytes = fo->window_bytes;
	rf.post_ns = fo->post_ns;
	rf.to_ns = plan.to;
	rf.from_ns = plan.from;
	rf.cut_by_memory = plan.cut_by_memory;
	rf.dump_index = r->fl.dump_index;
	rf.triggers_suppressed = r->fl.suppressed;
	rf.trigger = p->t;
	rf.on_dump = fo->on_dump != NULL;
	rf.hooks_run = r->fl.hooks_run;
	rf.hooks_failed = r->fl.hooks_failed;
	rf.hooks_skipped = r->fl.hooks_skipped;
	fr_dump_wall(plan.from, p->t.at_ns, &meta.wall_start, &wall_trig);
	rf.basename = name; /* fr_dump_poll named it, before the fork */
	f.an = dump_analyzer(r);
	if (!f.an) {
		tet_say(r->msgs, TET_MSG_ERROR, "flight recorder: dump %llu: out of memory",
			(unsigned long long)rf.dump_index);
		return 1;
	}
	if (r->raw) {
		const struct tet_bc_info *bi = tet_session_batch_info(r->sess);
		struct fr_decoded dd;

		/* a SIGUSR1 or a trigger on a live process: what its threads hold is read last */
		if (!fr_store_decode(r->store, plan.from, plan.to, p->pid_filter,
				     bi ? bi->start_ns : 0, dump_read, !p->exit, feed_rec, &f, &dd)) {
			win = dd.win;
			rf.records = dd.records;
			spawns_before = dd.spawns_before;
			memcpy(win_types, dd.by_type, sizeof(win_types));
		}
	} else
		rf.records = fr_store_replay(r->store, plan.from, plan.to, p->pid_filter, feed_rec,
					     &f, &spawns_before);
	if (r->raw && !win) {
		tet_say(r->msgs, TET_MSG_ERROR, "flight recorder: dump %llu: out of memory",
			(unsigned long long)rf.dump_index);
		an_free(f.an);
		return 1;
	}
	rf.bytes = st.bytes;
	dump_counters(r, f.an, &meta, &rb, plan.from, mono, win, win_types);
	an_finish(f.an, rf.to_ns);
	run_why_meta(r, &why, f.an, meta.counters_valid ? &meta.counters : NULL);
	meta.why = &why;
	meta.start_ns = plan.from;
	meta.end_ns = rf.to_ns;
	meta.requested_ns = 0;
	meta.flight = &rf;
	meta.pid = p->pid_filter ? (int)p->pid_filter : r->o->pid;
	meta.ended_by = "flight_recorder";
	if (p->exit) {
		meta.ended_by = p->t.signal ? "process_crash" : "process_exit";
		meta.exit_signal = p->t.signal;
		meta.exit_core = p->t.core_dumped;
		meta.exit_status = p->t.exit_status;
	}
	tet_say(r->msgs, TET_MSG_INFO, "flight recorder: dump %llu (%s): %llu records from %s%s; since the start: %llu recorded, %llu lost to a full ring",
		(unsigned long long)rf.dump_index, p->t.detail, (unsigned long long)rf.records,
		spawns_before ? "the window and the spawns of older tasks alive in it" : "the window",
		rf.cut_by_memory ? " (the memory bound cut the window short)" : "",
		(unsigned long long)st.added, (unsigned long long)lost_since_start(r));
	status = dump_outputs(r, f.an, &meta, name);
	why_free(&why);
	an_free(f.an);
	tb_free(win);
	return status;
}

#define HOOK_END_WAIT_NS (10 * NSEC_PER_SEC)

/* waitpid, again after a signal: 1 the child ended (*st), 0 it still runs, or -errno: its
 * status is lost (ECHILD: reaped by the kernel when SIGCHLD is ignored). */
static int reap(pid_t pid, int *st, bool block)
{
	pid_t got;

	do
		got = waitpid(pid, st, block ? 0 : WNOHANG);
	while (got < 0 && errno == EINTR);
	if (got == pid)
		return 1;
	return got < 0 ? -errno : 0;
}

/* --on-dump's command that ended: counted, and said when it failed. */
static void hook_ended(struct fr_dumper *d, int st)
{
	d->hook = 0;
	if (WIFEXITED(st) && !WEXITSTATUS(st))
		return;
	d->fl->hooks_failed++;
	if (WIFEXITED(st))
		tet_say(d->msgs, TET_MSG_WARN, "flight recorder: --on-dump for dump %llu exited with status %d (%llu failed so far): the recorder keeps running",
			(unsigned long long)d->hook_dump, WEXITSTATUS(st),
			(unsigned long long)d->fl->hooks_failed);
	else
		tet_say(d->msgs, TET_MSG_WARN, "flight recorder: --on-dump for dump %llu was killed by %s (%llu failed so far): the recorder keeps running",
			(unsigned long long)d->hook_dump,
			WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "a signal",
			(unsigned long long)d->fl->hooks_failed);
}

/* Reaps the command if it ended (true: d->hook is clear; a lost status counts as failed). */
static bool hook_done(struct fr_dumper *d, bool block)
{
	int st, ret = reap(d->hook, &st, block);

	if (ret > 0) {
		hook_ended(d, st);
	} else if (ret < 0) {
		d->hook = 0; /* never signalled again: the pid may be another process's now */
		d->fl->hooks_failed++;
		tet_say(d->msgs, TET_MSG_WARN, "flight recorder: --on-dump for dump %llu: its exit status is lost (waitpid: %s), counted failed (%llu failed so far): the recorder keeps running",
			(unsigned long long)d->hook_dump, strerror(-ret),
			(unsigned long long)d->fl->hooks_failed);
	}
	return ret != 0;
}

/* Reaps the command if it ended; at the end (`end`), waits for it, bounded. */
static void hook_reap(struct fr_dumper *d, bool end)
{
	uint64_t from;

	if (d->hook <= 0 || hook_done(d, false) || !end)
		return;
	/* counted from the end's wait, not the command's start: one that began just before the
	 * end gets its 10 s too (and a loaded machine's slow dumps do not eat them) */
	from = run_mono_ns();
	while (run_mono_ns() - from < HOOK_END_WAIT_NS) {
		struct timespec ts = { 0, 20 * NSEC_PER_MSEC };

		nanosleep(&ts, NULL);
		if (hook_done(d, false))
			return;
	}
	tet_say(d->msgs, TET_MSG_WARN, "flight recorder: --on-dump for dump %llu still runs %llu s after the recorder began to wait for it: stopping it (SIGTERM to its process group)",
		(unsigned long long)d->hook_dump,
		(unsigned long long)(HOOK_END_WAIT_NS / NSEC_PER_SEC));
	kill(-d->hook, SIGTERM);
	for (int i = 0; i < 100; i++) { /* 2 s, then SIGKILL */
		struct timespec ts = { 0, 20 * NSEC_PER_MSEC };

		if (hook_done(d, false))
			return;
		nanosleep(&ts, NULL);
	}
	kill(-d->hook, SIGKILL);
	if (!hook_done(d, true))
		d->hook = 0;
}

/* Hands the dump just written (d->name) to --on-dump's command. */
static void hook_start(struct fr_dumper *d)
{
	const struct flight_opts *fo = d->fo;
	char *paths[FR_DUMP_FILES] = { 0 }, *env[4] = { 0 }, **envp = NULL;
	char *argv[8] = { "sh", "-c", (char *)fo->on_dump, "tokio-ebpf-trace-on-dump" }; /* + 3 files, NULL */
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	size_t nenv = 0;
	pid_t pid;
	int ret = -ENOMEM;

	if (!fo->on_dump)
		return;
	if (d->hook > 0) {
		d->fl->hooks_skipped++;
		tet_say(d->msgs, TET_MSG_WARN, "flight recorder: --on-dump not run for dump %llu: the one for dump %llu still runs (%llu skipped so far)",
			(unsigned long long)d->fl->dump_index, (unsigned long long)d->hook_dump,
			(unsigned long long)d->fl->hooks_skipped);
		return;
	}
	for (char **e = environ; *e; e++)
		nenv++;
	envp = calloc(nenv + 5, sizeof(*envp));
	for (int i = 0; i < FR_DUMP_FILES; i++)
		if (asprintf(&paths[i], "%s/%s.%s", fo->dir, d->name, fr_dump_ext[i]) < 0)
			paths[i] = NULL;
	if (asprintf(&env[0], "TET_DUMP_DIR=%s", fo->dir) < 0)
		env[0] = NULL;
	if (asprintf(&env[1], "TET_DUMP_NAME=%s", d->name) < 0)
		env[1] = NULL;
	if (asprintf(&env[2], "TET_DUMP_INDEX=%llu", (unsigned long long)d->fl->dump_index) < 0)
		env[2] = NULL;
	if (asprintf(&env[3], "TET_DUMP_TRIGGER=%s", d->hook_trigger) < 0)
		env[3] = NULL;
	if (envp && paths[0] && paths[1] && paths[2] && env[0] && env[1] && env[2] && env[3]) {
		size_t n = 0;

		for (char **e = environ; *e; e++)
			if (strncmp(*e, "TET_DUMP_", 9))
				envp[n++] = *e;
		for (int i = 0; i < 4; i++)
			envp[n++] = env[i];
		for (int i = 0; i < 3; i++)
			argv[4 + i] = paths[i];
		posix_spawn_file_actions_init(&fa);
		posix_spawnattr_init(&at);
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
		posix_spawn_file_actions_adddup2(&fa, 2, 1);
		posix_spawnattr_setpgroup(&at, 0);
		{ /* the recorder ignores or blocks some; the command starts with the defaults */
			sigset_t none, dfl;

			sigemptyset(&none);
			sigemptyset(&dfl);
			sigaddset(&dfl, SIGINT);
			sigaddset(&dfl, SIGTERM);
			sigaddset(&dfl, SIGUSR1);
			sigaddset(&dfl, SIGPIPE);
			posix_spawnattr_setsigmask(&at, &none);
			posix_spawnattr_setsigdefault(&at, &dfl);
		}
		posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
					 POSIX_SPAWN_SETSIGDEF);
		ret = -posix_spawn(&pid, "/bin/sh", &fa, &at, argv, envp);
		posix_spawn_file_actions_destroy(&fa);
		posix_spawnattr_destroy(&at);
	}
	if (!ret) {
		d->hook = pid;
		d->hook_dump = d->fl->dump_index;
		snprintf(d->hook_name, sizeof(d->hook_name), "%s", d->name);
		d->fl->hooks_run++;
	} else {
		d->fl->hooks_failed++;
		tet_say(d->msgs, TET_MSG_WARN, "flight recorder: --on-dump for dump %llu: cannot start /bin/sh: %s (%llu failed so far)",
			(unsigned long long)d->fl->dump_index, strerror(-ret),
			(unsigned long long)d->fl->hooks_failed);
	}
	for (int i = 0; i < 3; i++)
		free(paths[i]);
	for (int i = 0; i < 4; i++)
		free(env[i]);
	free(envp);
}

/* The dump that ended: counted, and said when it failed; a complete one goes to --on-dump.
 * At the end (`end`: waited for) the last dump waits for the command still running, bounded. */
static void dump_reap(struct fr_dumper *d, bool end)
{
	int st, ret;

	if (d->child <= 0)
		return;
	ret = reap(d->child, &st, end);
	if (!ret)
		return;
	d->child = 0;
	if (ret < 0) {
		d->fl->failed++;
		tet_say(d->msgs, TET_MSG_WARN, "flight recorder: dump %llu: its exit status is lost (waitpid: %s), counted failed and not handed to --on-dump: the recorder keeps running",
			(unsigned long long)d->fl->dump_index, strerror(-ret));
	} else if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		d->fl->failed++;
		tet_say(d->msgs, TET_MSG_WARN, "flight recorder: dump %llu failed (%s): the recorder keeps running",
			(unsigned long long)d->fl->dump_index,
			WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "see above");
	} else {
		d->fl->dumps++;
		hook_reap(d, false); /* the previous one may just have ended */
		if (end && !d->fl->nq && d->hook > 0 && d->fo->on_dump) {
			tet_say(d->msgs, TET_MSG_INFO, "flight recorder: ending: the last dump (%llu) goes to --on-dump once the one for dump %llu ended (waited for at most %llu s after it began)",
				(unsigned long long)d->fl->dump_index,
				(unsigned long long)d->hook_dump,
				(unsigned long long)(HOOK_END_WAIT_NS / NSEC_PER_SEC));
			hook_reap(d, true);
		}
		hook_start(d);
	}
}

/* The dump's name, in the recorder (--on-dump's paths) before the child writes it. */
static void dump_name(struct fr_dumper *d, const struct fr_pending *p)
{
	struct timespec wall_start, wall_trig;

	fr_dump_wall(p->t.at_ns, p->t.at_ns, &wall_start, &wall_trig);
	fr_dump_name(d->name, sizeof(d->name), d->exe,
		     p->name_pid, &wall_trig, p->t.spec);
	snprintf(d->hook_trigger, sizeof(d->hook_trigger), "%s", p->t.spec ? p->t.spec : p->t.kind);
}

void fr_dump_poll(struct fr_dumper *d, bool now_anyway)
{
	struct fr_pending p;

	dump_reap(d, now_anyway);
	hook_reap(d, false);
	if (d->child > 0 || !fr_rt_take_due(d->fl, run_mono_ns(), now_anyway, &p)) {
		if (now_anyway && d->child <= 0) /* the end: the last command, bounded */
			hook_reap(d, true);
		return;
	}
	dump_name(d, &p);
	fflush(stdout);
	fflush(stderr);
	d->child = fork();
	if (d->child < 0) {
		d->child = 0;
		d->fl->failed++;
		tet_say(d->msgs, TET_MSG_WARN, "flight recorder: cannot start dump %llu: %s",
			(unsigned long long)d->fl->dump_index, strerror(errno));
		return;
	}
	if (!d->child) {
		/* the child: a snapshot of the store; Ctrl-C is the recorder's, not the dump's */
		pmem_after_fork();
		signal(SIGINT, SIG_IGN);
		/* decoding a window takes seconds of CPU: the service's, not the recorder's priority */
		if (getpriority(PRIO_PROCESS, 0) < 10)
			setpriority(PRIO_PROCESS, 0, 10);
		signal(SIGTERM, SIG_IGN);
		signal(SIGUSR1, SIG_IGN);
		_exit(d->write(d->ctx, &p, d->name));
	}
	if (now_anyway)
		fr_dump_poll(d, true); /* waits for it */
}

void fr_dump_wait(struct fr_dumper *d)
{
	if (d->child > 0) /* a dump being written finishes */
		waitpid(d->child, NULL, 0);
	d->child = 0;
}

void run_dump_init(struct run *r)
{
	r->dump.fo = &r->o->fl;
	r->dump.fl = &r->fl;
	r->dump.msgs = r->msgs;
	r->dump.exe = r->t->exe ? r->t->exe : r->o->binary;
	r->dump.write = dump_write;
	r->dump.ctx = r;
}

void run_dump_poll(struct run *r, bool now_anyway)
{
	fr_dump_poll(&r->dump, now_anyway);
}
