// SPDX-License-Identifier: MIT
/*
 * sampling_report.c — the JSON report and the terminal summary of `trace --mode sampling`
 * (see sampling_report.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "jsonparts.h"
#include "sampling_report.h"
#include "seterr.h"
#include "text.h"

const char *const sr_not_seen[SR_NOT_SEEN][2] = {
	{ "wakes", "no probe on the waker functions: who woke a task is not seen" },
	{ "waker_counts", "no probe on waker clone/drop: waker counts are not seen" },
	{ "spawn_sites", "no probe on spawn: where a task was spawned is not seen" },
	{ "scheduling_delay", "no probe at a task's wake and its poll's start: the delay between is not seen" },
	{ "pending_times", "no probe at a poll's end: how long a task waited between polls is not seen" },
	{ "poll_counts", "polls are not counted: samples see a poll only while it runs on a CPU" },
};

/* A name from the traced binary: its first SR_NAME_MAX bytes, escaped by the writer (as the other
 * modes' type_name: jsonparts.c) */
static void jw_kname(struct jw *w, const char *key, const char *s)
{
	jw_key(w, key);
	if (s)
		jw_strn(w, s, strnlen(s, SR_NAME_MAX));
	else
		jw_null(w);
}

static void jw_heat_col(struct jw *w, const char *key, const struct sa_model *o,
			const struct sa_heat_row *r, int what)
{
	jw_key(w, key);
	jw_arr_begin(w);
	for (size_t c = 0; c < o->heat.ncols; c++) {
		unsigned v[3];

		switch (what) {
		case 0: jw_u64(w, r->cells[c].poll); break;
		case 1: jw_u64(w, r->cells[c].other); break;
		case 2: jw_u64(w, r->cells[c].off_ns); break;
		default:
			sa_heat_share(&o->heat, o->period_ns, r, c, &v[0], &v[1], &v[2]);
			jw_u64(w, v[what - 3]);
		}
	}
	jw_arr_end(w);
}

/* "worker_heat" (docs/sampling-mode.md "Worker heat map") */
static void jw_heat(struct jw *w, const struct sa_model *o)
{
	const struct sa_heat *h = &o->heat;

	jw_key(w, "worker_heat");
	jw_obj_begin(w);
	jw_kstr(w, "rule", "per thread and bucket: CPU samples in async polls and outside them (each put whole in the bucket of its stamp; samples x period_ns estimates the time on CPU, off by up to a period or two per bucket: cpu-clock samples fire only on CPU), and the exact time off CPU in the sleeps the sampler recorded (sched_switch out to back in, cut at the buckets' edges; none is recorded for a preemption or while the thread's task id slot is None); the *_permille shares of a bucket's width, the estimate cut so that with the exact off-CPU time it never exceeds the width; the rest of a bucket is not seen");
	jw_ku64(w, "start_ns", h->from);
	jw_ku64(w, "end_ns", h->to);
	jw_ku64(w, "bucket_ns", h->width);
	jw_ku64(w, "buckets", h->ncols);
	jw_ku64(w, "period_ns", o->period_ns);
	jw_ku64(w, "threads_omitted", h->rows_refused);
	jw_key(w, "rows");
	jw_arr_begin(w);
	for (size_t i = 0; i < h->nrows; i++) {
		const struct sa_heat_row *r = &h->rows[i];

		jw_obj_begin(w);
		jw_ku64(w, "tid", r->tid);
		jw_key(w, "name");   /* untrusted: the thread's comm, at most SA_COMM bytes */
		if (r->name[0])
			jw_strn(w, r->name, strnlen(r->name, sizeof(r->name)));
		else
			jw_null(w);
		jw_ku64(w, "samples", r->samples);
		jw_ku64(w, "in_async_poll", r->in_poll);
		jw_ku64(w, "off_cpu_ns", r->off_ns);
		jw_heat_col(w, "async_poll_samples", o, r, 0);
		jw_heat_col(w, "other_samples", o, r, 1);
		jw_heat_col(w, "off_cpu_ns_by_bucket", o, r, 2);
		jw_heat_col(w, "async_poll_permille", o, r, 3);
		jw_heat_col(w, "other_cpu_permille", o, r, 4);
		jw_heat_col(w, "off_cpu_permille", o, r, 5);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

int report_sampling_json(FILE *out, const struct sa_model *o, const struct sampling_meta *mt)
{
	struct jw *w = jw_new(out, true);

	jw_obj_begin(w);
	jw_kstr(w, "mode", "sampling");
	jw_key(w, "target");
	jw_obj_begin(w);
	jw_ku64(w, "pid", (uint64_t)mt->pid);
	jw_kname(w, "executable", mt->exe);
	jw_obj_end(w);
	if (mt->flight) { /* a dump: its times from the window's start, as the other modes' */
		struct report_meta rm = { .start_ns = mt->flight->from_ns, .flight = mt->flight };

		report_json_flight(w, &rm);
	}
	jw_key(w, "task_id_slot");
	jw_obj_begin(w);
	jw_kstr(w, "method", mt->slot_method);
	jw_kstr(w, "layout", mt->slot_layout);
	jw_ki64(w, "id_offset", mt->id_off);
	if (mt->tagged)
		jw_ki64(w, "tag_offset", mt->tag_off);
	jw_obj_end(w);
	jw_key(w, "capture");
	jw_obj_begin(w);
	jw_ku64(w, "profile_hz", mt->profile_hz);
	jw_ku64(w, "period_ns", o->period_ns);
	jw_ku64(w, "duration_ns", mt->duration_ns);
	jw_ku64(w, "uprobes", 0);
	jw_kbool(w, "stack_scan", mt->stack_scan);
	jw_ku64(w, "perf_events", mt->perf_events);
	jw_kbool(w, "sched_tracepoints", mt->sched_tracepoints);
	jw_ku64(w, "samples", mt->samples);
	jw_ku64(w, "sleeps", mt->sleeps);
	jw_ku64(w, "slot_read_failures", mt->slot_read_failures);
	jw_ku64(w, "sample_drops", mt->sample_drops);
	jw_ku64(w, "sleep_drops", mt->sleep_drops);
	jw_ku64(w, "blocking_task_ids", mt->blocking_ids_told);
	jw_ku64(w, "blocking_task_ids_by_sleeps", mt->blocking_ids_by_sleeps);
	jw_ku64(w, "blocking_task_id_errors", mt->blocking_id_errors);
	jw_ku64(w, "sleeps_in_blocking_tasks", mt->blocking_sleeps);
	jw_ku64(w, "stack_errors", mt->stack_errors);
	jw_ku64(w, "records_over_memory_bound", mt->over_memory_bound);
	jw_ku64(w, "records_malformed", mt->malformed);
	jw_obj_end(w);
	jw_key(w, "refused");
	jw_obj_begin(w);
	jw_ku64(w, "tasks", o->refused.tasks);
	jw_ku64(w, "threads", o->refused.threads);
	jw_ku64(w, "future_types", o->refused.types);
	jw_ku64(w, "frames", o->refused.frames);
	jw_ku64(w, "findings", o->refused.findings);
	jw_ku64(w, "task_ids", o->refused.ids);
	jw_obj_end(w);
	jw_key(w, "attribution");
	jw_obj_begin(w);
	jw_kstr(w, "rule", "the innermost poll frame (a raw::poll<T, S> instance or the Harness<T, S>::poll it jumps to; from the frame-pointer walk, else from the scan of the stack's words for return addresses) gives the future type T (a BlockingTask's: not an async poll); Tokio's thread-local task id gives the task. A sample or sleep is in the poll's body only when that id is a polled task's: None, or a worker loop's blocking-task id, means outside it (before TaskIdGuard is set or after it is restored, or a poll frame left over in the stack), charged to no task or type and in no long_poll");
	jw_ku64(w, "in_async_poll", o->in_poll);
	jw_ku64(w, "outside_poll_body", o->outside_body);
	jw_ku64(w, "sleeps_outside_poll_body", o->outside_body_sleeps);
	jw_ku64(w, "no_poll_frame", o->no_poll_frame);
	jw_ku64(w, "poll_frame_by_stack_scan", mt->scan_hits);
	jw_ku64(w, "id_type_conflicts", o->conflicts);
	jw_obj_end(w);
	jw_key(w, "future_types");
	jw_arr_begin(w);
	for (size_t t = 0; t < o->ntypes; t++) {
		const struct sa_type *ty = &o->types[t];

		if (!ty->samples)
			continue;
		jw_obj_begin(w);
		jw_kname(w, "type", o->type_names[t]);
		jw_ku64(w, "samples", ty->samples);
		jw_ku64(w, "cpu_ns_estimate", ty->samples * o->period_ns);
		jw_ku64(w, "tasks_seen", ty->ntasks);
		jw_key(w, "hottest_frames");
		jw_arr_begin(w);
		for (size_t k = 0; k < ty->nhot && k < SA_TOP; k++) {
			jw_obj_begin(w);
			jw_kname(w, "frame", ty->hot[k].key);
			jw_ku64(w, "samples", ty->hot[k].n);
			jw_obj_end(w);
		}
		jw_arr_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "tasks");
	jw_arr_begin(w);
	for (size_t i = 0; i < o->ntasks; i++) {
		jw_obj_begin(w);
		jw_ku64(w, "id", o->tasks[i].id);
		jw_kname(w, "type", sa_type_name(o, o->tasks[i].type));
		jw_ku64(w, "samples", o->tasks[i].samples);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "threads");
	jw_arr_begin(w);
	for (size_t i = 0; i < o->nthreads; i++) {
		jw_obj_begin(w);
		jw_ku64(w, "tid", o->threads[i].tid);
		jw_ku64(w, "samples", o->threads[i].samples);
		jw_ku64(w, "in_async_poll", o->threads[i].in_poll);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_heat(w, o);
	jw_key(w, "findings");
	jw_arr_begin(w);
	for (size_t i = 0; i < o->nf; i++) {
		const struct sa_finding *f = &o->f[i];

		jw_obj_begin(w);
		jw_kstr(w, "kind", "long_poll");
		jw_kstr(w, "seen_as", f->blocked ? "blocked" : "on_cpu");
		jw_kname(w, "future_type", sa_type_name(o, f->type));
		jw_ku64(w, "task", f->task);
		jw_ku64(w, "tid", f->tid);
		jw_kname(w, "hottest_frame", f->hot);
		if (f->blocked) {
			jw_ku64(w, "off_cpu_ns", f->last - f->first);
			jw_ku64(w, "blocked_ns", f->blocked_ns);
			jw_kstr(w, "syscall", f->syscall);
			jw_key(w, "kernel_stack");
			jw_arr_begin(w);
			for (int k = 0; k < 3 && f->kframes[k][0]; k++)
				jw_strn(w, f->kframes[k], strnlen(f->kframes[k], sizeof(f->kframes[k])));
			jw_arr_end(w);
			jw_kstr(w, "duration_note", "measured at the thread's switch out and back in (sched_switch): exact");
		} else {
			jw_ku64(w, "samples", f->n);
			jw_ku64(w, "min_ns", (f->n - 1) * o->period_ns);
			jw_ku64(w, "max_ns", (f->n + 1) * o->period_ns);
			jw_kstr(w, "duration_note", "bounded by the sample period: n consecutive samples mean the poll ran on CPU between (n-1) and (n+1) periods");
		}
		jw_obj_end(w);
	}
	jw_arr_end(w);
	if (mt->remote_write)
		report_json_remote_write(w, mt->remote_write);
	jw_key(w, "not_seen");
	jw_obj_begin(w);
	for (size_t i = 0; i < SR_NOT_SEEN; i++)
		jw_kstr(w, sr_not_seen[i][0], sr_not_seen[i][1]);
	jw_obj_end(w);
	jw_obj_end(w);
	return jw_finish(w);
}

/* Names from the traced binary, made printable (text.h); two buffers a line at most. */
static const char *san(const char *p, char *buf, size_t len)
{
	return p ? text_sanitize(p, strnlen(p, SR_NAME_MAX), 0, buf, len) : "-";
}

#define SR_HEAT_TERM_ROWS 16   /* threads the terminal's heat map shows (the JSON has them all) */

/* A bucket as one ASCII character: the level of its on-CPU share (".:+#" when more of it was in
 * async polls, "-=oO" when more was outside them: up to 25, 50, 75, 100 %), "_" when it has no
 * sample but sleeps for at least half of it, " " otherwise. */
static char heat_glyph(const struct sa_model *o, const struct sa_heat_row *r, size_t c)
{
	unsigned p, x, z, on;

	sa_heat_share(&o->heat, o->period_ns, r, c, &p, &x, &z);
	on = p + x;
	if (!r->cells[c].poll && !r->cells[c].other)
		return z >= 500 ? '_' : ' ';
	if (on > 1000)
		on = 1000;
	return (r->cells[c].poll >= r->cells[c].other ? ".:+#" : "-=oO")[on ? (on - 1) / 250 : 0];
}

static void heat_terminal(FILE *out, const struct sa_model *o)
{
	const struct sa_heat *h = &o->heat;
	double span = (double)(h->to - h->from);
	char b1[1400], line[SA_HEAT_COLS + 1];

	if (!h->nrows)
		return;
	fprintf(out, "Threads busy / idle over time (%zu columns of %.0f ms over %.1f s; on CPU = samples x %.1f ms, an estimate bounded by the period; off CPU = the recorded sleeps, exact)\n",
		h->ncols, (double)h->width / 1e6, span / 1e9, (double)o->period_ns / 1e6);
	fprintf(out, "  on CPU up to 25/50/75/100 %%: . : + # mostly in async polls, - = o O mostly outside them; _ asleep; blank: nothing seen\n");
	fprintf(out, "  %-8s %-16s %5s %5s %5s  %s\n", "TID", "NAME", "POLL%", "CPU%", "OFF%", "over time");
	for (size_t i = 0; i < h->nrows && i < SR_HEAT_TERM_ROWS; i++) {
		const struct sa_heat_row *r = &h->rows[i];
		double pe = (double)o->period_ns;
		double pp = 100 * (double)r->in_poll * pe / span, op = 100 * (double)(r->samples - r->in_poll) * pe / span;
		size_t c;

		for (c = 0; c < h->ncols; c++)
			line[c] = heat_glyph(o, r, c);
		line[c] = 0;
		fprintf(out, "  %-8u %-16s %5.1f %5.1f %5.1f  |%s|\n", r->tid,
			r->name[0] ? text_sanitize(r->name, strnlen(r->name, sizeof(r->name)), 0, b1, sizeof(b1)) : "?", pp > 100 ? 100 : pp, op > 100 ? 100 : op,
			100 * (double)r->off_ns / span, line);
	}
	if (h->nrows > SR_HEAT_TERM_ROWS)
		fprintf(out, "  … %zu more threads in the JSON report\n", h->nrows - SR_HEAT_TERM_ROWS);
	if (h->rows_refused)
		fprintf(out, "  … %llu threads past the heat map's cap (worker_heat.threads_omitted)\n",
			(unsigned long long)h->rows_refused);
}

void report_sampling_terminal(FILE *out, const struct sa_model *o, const struct sampling_meta *mt)
{
	char b1[1400], b2[1400];

	fprintf(out, "tokio-ebpf-trace: sampling mode, pid %d, %u Hz, no uprobe; task id slot: %s, %s, tp%+lld\n",
		mt->pid, mt->profile_hz, mt->slot_method,
		mt->slot_layout, (long long)mt->id_off);
	fprintf(out, "  %llu samples (%llu in async polls' bodies; %llu in a poll frame outside its body), %llu sleeps\n",
		(unsigned long long)mt->samples, (unsigned long long)o->in_poll, (unsigned long long)o->outside_body,
		(unsigned long long)mt->sleeps);
	fprintf(out, "Future types by CPU samples:\n");
	for (size_t t = 0; t < o->ntypes; t++) {
		const struct sa_type *ty = &o->types[t];

		if (!ty->samples)
			continue;
		fprintf(out, "  %6llu  %s  (hottest: %s)\n", (unsigned long long)ty->samples,
			san(o->type_names[t], b1, sizeof(b1)), san(ty->nhot ? ty->hot[0].key : NULL, b2, sizeof(b2)));
	}
	fprintf(out, "Findings:\n");
	if (!o->nf)
		fprintf(out, "  none\n");
	for (size_t i = 0; i < o->nf; i++) {
		const struct sa_finding *f = &o->f[i];

		if (f->blocked)
			fprintf(out, "  long_poll: blocked %.1f ms until woken (off CPU %.1f ms: the figure held to the threshold) in %s inside a poll of %s (task %llu, thread %u; %s)\n",
				(double)f->blocked_ns / 1e6, (double)(f->last - f->first) / 1e6,
				f->syscall ? f->syscall : "an unknown system call",
				san(sa_type_name(o, f->type), b1, sizeof(b1)), (unsigned long long)f->task, f->tid,
				san(f->hot, b2, sizeof(b2)));
		else
			fprintf(out, "  long_poll: on CPU %llu consecutive samples (%.1f-%.1f ms, bounded by the sample period) in a poll of %s (task %llu, thread %u; hottest %s)\n",
				(unsigned long long)f->n, (double)(f->n - 1) * o->period_ns / 1e6,
				(double)(f->n + 1) * o->period_ns / 1e6, san(sa_type_name(o, f->type), b1, sizeof(b1)),
				(unsigned long long)f->task, f->tid, san(f->hot, b2, sizeof(b2)));
	}
	heat_terminal(out, o);
	if (o->refused.tasks || o->refused.threads || o->refused.types || o->refused.frames ||
	    o->refused.findings || o->refused.ids)
		fprintf(out, "Not kept (tables full or out of memory): %llu task samples, %llu threads, %llu future types, %llu frame samples, %llu findings, %llu task ids\n",
			(unsigned long long)o->refused.tasks, (unsigned long long)o->refused.threads,
			(unsigned long long)o->refused.types, (unsigned long long)o->refused.frames,
			(unsigned long long)o->refused.findings, (unsigned long long)o->refused.ids);
	fprintf(out, "Not seen in this mode:");
	for (size_t i = 0; i < SR_NOT_SEEN; i++)
		fprintf(out, " %s", sr_not_seen[i][0]);
	fprintf(out, " (no uprobe: see the JSON's not_seen)\n");
	if (mt->remote_write)
		fprintf(out, "%s\n", report_remote_write_line(mt->remote_write, b1, sizeof(b1)));
}

/* -o FILE: written to FILE.tmp.PID by write and renamed into place when complete (as
 * report/outputs.c): a failed run leaves no half-written report. The JSON's and report.html's. */
int report_sampling_write_file(const char *path, int (*write)(FILE *, const struct sa_model *,
							      const struct sampling_meta *),
			       const struct sa_model *o, const struct sampling_meta *mt, char *err, size_t len)
{
	char tmp[PATH_MAX];
	FILE *f;
	int ret = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp)) {
		seterr(err, len, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	f = fopen(tmp, "we");
	if (!f) {
		ret = -errno;
		seterr(err, len, "%s: %s", tmp, strerror(errno));
		return ret;
	}
	if (write(f, o, mt) | fclose(f)) {
		ret = -EIO;
		seterr(err, len, "%s: write failed", path);
	} else if (rename(tmp, path)) {
		ret = -errno;
		seterr(err, len, "%s: %s", path, strerror(errno));
	}
	if (ret)
		unlink(tmp);
	return ret;
}

int report_sampling_write_json(const char *path, const struct sa_model *o,
			       const struct sampling_meta *mt, char *err, size_t len)
{
	if (!strcmp(path, "-")) {
		if (report_sampling_json(stdout, o, mt)) {
			seterr(err, len, "standard output: write failed");
			return -EIO;
		}
		return 0;
	}
	return report_sampling_write_file(path, report_sampling_json, o, mt, err, len);
}

/* --interval's summary (as report_terminal's non-final one: "--" and the span so far, the
 * counts, the 5 future types with most samples, the first 2 findings). */
void report_sampling_interval(FILE *out, const struct sa_model *o, const struct sampling_meta *mt)
{
	char b1[1400], b2[1400];
	size_t top[5], ntop = 0;

	fprintf(out, "\n-- sampling pid %d, %.1fs so far, %llu samples (%llu in async polls, %llu dropped), %llu sleeps (%llu in async polls), %zu long_poll\n",
		mt->pid, (double)mt->duration_ns / 1e9, (unsigned long long)mt->samples,
		(unsigned long long)o->in_poll, (unsigned long long)mt->sample_drops,
		(unsigned long long)mt->sleeps, (unsigned long long)o->poll_sleeps, o->nf);
	for (size_t t = 0; t < o->ntypes; t++) {  /* the 5 with most samples, first seen first */
		size_t k;

		if (!o->types[t].samples)
			continue;
		for (k = ntop; k > 0 && o->types[top[k - 1]].samples < o->types[t].samples; k--)
			if (k < 5)
				top[k] = top[k - 1];
		if (k < 5) {
			top[k] = t;
			ntop += ntop < 5;
		}
	}
	for (size_t k = 0; k < ntop; k++)
		fprintf(out, "  %6llu  %s\n", (unsigned long long)o->types[top[k]].samples,
			san(o->type_names[top[k]], b1, sizeof(b1)));
	for (size_t i = 0; i < o->nf && i < 2; i++) {
		const struct sa_finding *f = &o->f[i];

		fprintf(out, "  long_poll %s: %s (task %llu, thread %u; %s)\n",
			f->blocked ? "blocked" : "on_cpu", san(sa_type_name(o, f->type), b1, sizeof(b1)),
			(unsigned long long)f->task, f->tid, san(f->hot, b2, sizeof(b2)));
	}
	fflush(out);
}
