// SPDX-License-Identifier: MIT
/*
 * terminal.c — the terminal summary (report_terminal, reporters.h): the final one and the short
 * one printed every -i interval. Text read from the traced process is text_sanitize()d.
 */
#include <stdlib.h>
#include <string.h>

#include "batch_stats.h"
#include "reporters.h"
#include "text.h"
#include "units.h"
#include "uring_report.h"
#include "vocab.h"

static const char *site_type(const struct an_site *s, size_t max, char *buf, size_t len)
{
	if (!s || s->unknown || s->other)
		return snprintf(buf, len, "?"), buf;
	return text_sanitize(s->type_name, s->type_len, max, buf, len);
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
	if (report_batches_lost_otherwise(m) || m->counters.batch_drops || st->threads_vanished)
		fprintf(out, "BATCHES LOST: %llu (ring buffer full) + %llu (otherwise); %llu thread%s ended without its last batch (%llu events known lost)\n",
			(unsigned long long)m->counters.batch_drops,
			(unsigned long long)report_batches_lost_otherwise(m),
			(unsigned long long)st->threads_vanished, st->threads_vanished == 1 ? "" : "s",
			(unsigned long long)unflushed);
	if (m->batch->skipped_by_analysis)
		fprintf(out, "LIVE ANALYSIS BEHIND: %llu batches left the flight window before the live analysis read them (the window lost nothing; findings and metrics miss them)\n",
			(unsigned long long)m->batch->skipped_by_analysis);
	if (final && (st->late || st->forced))
		fprintf(out, "  %llu events arrived after later ones were analyzed (late), %llu were analyzed before their threads caught up (hold limit)\n",
			(unsigned long long)st->late, (unsigned long long)st->forced);
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
			f->uprobe_ns, f->uretprobe_ns, report_fallback_overhead_ns(f, t) / 1e6);
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
	text_sanitize(raw, strlen(raw), 0, target, sizeof(target));
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
	if (*report_sampling_line(m, a, raw, sizeof(raw)))
		fprintf(out, "%s\n", raw);
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
	if (final && m->remote_write) {
		char line[1024];

		fprintf(out, "\n%s\n", report_remote_write_line(m->remote_write, line, sizeof(line)));
	}
	fflush(out);
}
