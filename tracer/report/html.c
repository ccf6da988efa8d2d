// SPDX-License-Identifier: MIT
/*
 * html.c — report.html: one self-contained page (docs/reports.md).
 *
 * The page is tracer/report/html/report.html with its style sheet and script inline (built into
 * html_assets.h by scripts/embed-html.py, with a Content-Security-Policy that allows only
 * them: nothing is fetched at view time). This file fills three holes:
 *   SUMMARY, FINDINGS  HTML written here, every untrusted string sanitized (report_sanitize)
 *                      and then HTML-escaped, so the findings read in plain language even
 *                      without the script;
 *   DATA               one JSON document inside <script type="application/json">, written by
 *                      the JSON writer, which escapes '<', '>' and '&' (so "</script>" cannot
 *                      end the element) and U+2028/2029; the script reads it with JSON.parse
 *                      and puts text on the page with textContent only.
 * Sizes are bounded: sites (histograms for the busiest), tasks (the busiest and every one with
 * a finding), findings, and the timeline (the busiest tasks over the kept part of the
 * analyzer's timeline ring, a fixed event budget).
 *
 * Why polls were slow (m->why, why.h; absent when not tracked): each finding's split of its
 * worst poll (on CPU, preempted, blocked), where it blocked and its hottest frames, as HTML under
 * the finding. In DATA "why": per spawn site (the busiest 30) its CPU samples by stack (the 200
 * biggest, ROOT FIRST, for the page's flame graph; 150000 frames in all, shared equally by the
 * sites, a share one does not use going to the next; the samples of the stacks left out counted
 * in "cpu_other") and its blocked stacks (the 10 longest, LEAF FIRST, as the page lists them),
 * each frame an index into one table of frame strings (a frame recurs in most stacks of a site);
 * per finding (in "findings") its split, blocked_top and hot.
 *
 * io_uring (uring.h): DATA "io_uring" is null for a target that used no io_uring (the page
 * then has no io_uring section); else its totals, the figures per opcode and per spawn site,
 * and the requests in flight at the end (the oldest HTML_UR_INFLIGHT), each with what its fd
 * was (untrusted bytes from /proc: made printable with report_sanitize, then JSON-escaped;
 * the script puts them on the page as text).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "html_assets.h"
#include "htab.h"
#include "json.h"
#include "jsonparts.h"
#include "reporters.h"
#include "text.h"
#include "units.h"
#include "uring.h"
#include "uring_report.h"
#include "vocab.h"

#define HTML_SITES        2000   /* sites listed */
#define HTML_SITE_HISTS   100    /* … of which with histogram buckets (the busiest) */
#define HTML_TASKS        3000   /* tasks listed (the busiest), plus those with findings */
#define HTML_FINDINGS     2000
#define HTML_FINDINGS_TOP 100    /* groups of findings (kind, site) written out as HTML */
#define HTML_TL_TASKS     30     /* tasks in the timeline */
#define HTML_TL_FINDING_TASKS 12 /* … of which chosen for their findings first */
#define HTML_TL_BUDGET    40000  /* polls + wakes in the timeline */
#define HTML_HEAT_BINS    120
#define HTML_HEAT_ROWS    64
#define HTML_WHY_SITES    30     /* sites with their stacks (why.h: busiest first) */
#define HTML_WHY_CPU      200    /* CPU stacks per site (the most samples) */
#define HTML_WHY_BLOCKED  10     /* blocked stacks per site (the most time) */
#define HTML_WHY_REFS     150000 /* frames in the CPU stacks of all sites together (~1 MB) */
#define HTML_WHY_FRAMES   8      /* frames of a finding's blocking stack */
#define HTML_FRAME_BYTES  300    /* a frame quoted in a finding, cut beyond (HTML part only) */
#define HTML_UR_INFLIGHT  1000   /* io_uring requests in flight listed (the oldest) */
#define BINS_PER_DECADE   5
#define NBINS             70     /* 10^0 … 10^14 ns */

/* A task's identity: Tokio's task id, or its header address in the uprobe fallback (where the
 * task id is 0). Set by report_html(). */
static bool by_header;

static uint64_t key_of(uint64_t task_id, uint64_t header_ptr)
{
	return by_header ? header_ptr : task_id;
}

static uint64_t rkey(const struct an_tl_rec *r)
{
	return key_of(r->task_id, r->header_ptr);
}

static const char *task_name(uint64_t key, char *buf, size_t len)
{
	snprintf(buf, len, by_header ? "task 0x%llx" : "task %llu", (unsigned long long)key);
	return buf;
}

static const char *const kind_title[AN_FINDING_KINDS] = {
#define AN_FINDING(e, name, title, one, many, rank, trigger, advice) [AN_##e] = title,
#include "findings.def"
#undef AN_FINDING
};

/* ---- HTML text ---- */
static void escn(FILE *out, const char *s, size_t n)
{
	text_html_escn(out, s, n);
}

static void esc(FILE *out, const char *s)
{
	text_html_esc(out, s);
}

/* Untrusted bytes: printable UTF-8 first (control and invalid bytes as \xNN), then escaped. */
static void esc_untrusted(FILE *out, const char *p, size_t n, size_t max_chars)
{
	char buf[4 * 1024 + 8];

	esc(out, text_sanitize(p, n, max_chars, buf, sizeof(buf)));
}

static void esc_site(FILE *out, const struct an_site *s)
{
	if (!s || s->unknown)
		fputs("(spawned before the trace)", out);
	else if (s->other)
		fputs("(other sites)", out);
	else if (s->typed) { /* uprobe fallback: the future type stands for the location */
		fputs("future ", out);
		esc_untrusted(out, s->type_name, s->type_len, 400);
	} else
		esc_untrusted(out, s->location, s->location_len, 400);
}

/* ---- why polls were slow (why.h): a finding's lines ---- */
static const struct why_finding *why_finding_at(const struct why_report *why, size_t i)
{
	if (!why || !why->findings || i >= why->nfindings || !why->findings[i].known)
		return NULL;
	return &why->findings[i];
}

/* A frame (printable UTF-8 already: why.c sanitized it), escaped, cut at a character boundary. */
static void esc_frame(FILE *out, const char *f)
{
	size_t n = f ? strlen(f) : 0;

	if (!f) {
		fputs("?", out);
		return;
	}
	if (n <= HTML_FRAME_BYTES) {
		escn(out, f, n);
		return;
	}
	for (n = HTML_FRAME_BYTES; n && ((unsigned char)f[n] & 0xc0) == 0x80; n--)
		;
	escn(out, f, n);
	fputs("…", out);
}

/* Worded as why_finding_line (why.c) words it for the terminal and the JSON, one line each,
 * frames as code:
 * "on CPU 2.1ms · preempted 0ns · blocked 49.9ms", "blocked 49.9ms in clock_nanosleep ←
 * std::thread::sleep ← …" (the innermost frames first), "hottest of 120 CPU samples: f (62 %)" */
static void why_finding_html(FILE *out, const struct why_finding *wf)
{
	const struct why_stack *b = wf ? wf->blocked_top : NULL;
	char x[32], y[32], z[32];

	if (!wf)
		return;
	if (wf->on_cpu_ns || wf->preempted_ns || wf->blocked_ns) {
		fprintf(out, "<div class=\"why\">on CPU %s · preempted %s",
			fmt_duration(wf->on_cpu_ns, x, sizeof(x)),
			fmt_duration(wf->preempted_ns, y, sizeof(y)));
		if (wf->stolen_ns)
			fprintf(out, " (%s by the hypervisor)", fmt_duration(wf->stolen_ns, x, sizeof(x)));
		fprintf(out, " · blocked %s%s</div>", fmt_duration(wf->blocked_ns, z, sizeof(z)),
			wf->doubtful ? WHY_DOUBT_WORDS : "");
	}
	if (b && (b->syscall || b->nframes)) {
		fprintf(out, "<div class=\"why\">blocked %s in <code>", fmt_duration(b->ns, x, sizeof(x)));
		esc(out, b->syscall ? b->syscall : "the kernel");
		for (uint32_t k = 0; k < b->nframes && k < HTML_WHY_FRAMES; k++) {
			fputs(" ← ", out);
			esc_frame(out, b->frames[k]);
		}
		fputs(b->nframes > HTML_WHY_FRAMES ? " ← …</code></div>" : "</code></div>", out);
	}
	for (size_t k = 0; k < wf->nhot && k < WHY_HOT_MAX; k++) {
		if (!k)
			fprintf(out, "<div class=\"why\">hottest of %llu CPU samples: ",
				(unsigned long long)wf->samples);
		fputs(k ? ", <code>" : "<code>", out);
		esc_frame(out, wf->hot[k].frame);
		fprintf(out, "</code> (%.0f %%)", wf->hot[k].share * 100);
	}
	if (wf->nhot)
		fputs("</div>", out);
}

static const char *fmt_bytes(uint64_t b, char *buf, size_t len)
{
	if (b >= 1024 * 1024)
		snprintf(buf, len, "%.1f MiB", (double)b / (1024.0 * 1024.0));
	else if (b >= 1024)
		snprintf(buf, len, "%.1f KiB", (double)b / 1024.0);
	else
		snprintf(buf, len, "%llu bytes", (unsigned long long)b);
	return buf;
}

/* A flight-recorder dump: what fired it and the window, worded as the terminal says it
 * (report_flight_line: printable already, then escaped); how the process ended if it crashed. */
static void flight_banner(FILE *out, const struct report_meta *m)
{
	const struct report_flight *fl = m->flight;
	char line[2400], b[32];

	if (fl) {
		fputs("<div class=\"flight\" id=\"flight\"><b>Flight-recorder</b> ", out);
		esc(out, report_flight_line(m, line, sizeof(line)));
		fprintf(out, "<div class=\"flight-more\">%llu records replayed (%s in memory)",
			(unsigned long long)fl->records, fmt_bytes(fl->bytes, b, sizeof(b)));
		if (fl->cut_by_memory)
			fputs("; the memory bound cut the window short", out);
		if (fl->triggers_suppressed)
			fprintf(out, "; %llu trigger%s suppressed (cooldown)",
				(unsigned long long)fl->triggers_suppressed,
				fl->triggers_suppressed == 1 ? "" : "s");
		if (fl->basename) {
			fputs(" · <code>", out);
			esc_untrusted(out, fl->basename, strlen(fl->basename), 200);
			fputs("</code>", out);
		}
		fputs("</div></div>\n", out);
	}
	if (m->ended_by && !strcmp(m->ended_by, "process_crash"))
		fprintf(out, "<p class=\"warning\" id=\"exit-crash\">The process was killed by %s%s.</p>\n",
			report_signal_name(m->exit_signal, b, sizeof(b)),
			m->exit_core ? " (core dumped)" : "");
}

static void summary(FILE *out, const struct analyzer *a, const struct report_meta *m)
{
	const struct an_totals *t = an_totals(a);
	uint64_t span = m->end_ns > m->start_ns ? m->end_ns - m->start_ns : 0;
	uint64_t drops = report_total_drops(m);
	const char *exe = m->executable ? m->executable : m->binary ? m->binary : "?";
	char b[32], iso[64];
	struct tm tm;

	gmtime_r(&m->wall_start.tv_sec, &tm);
	strftime(iso, sizeof(iso), "%Y-%m-%d %H:%M:%S UTC", &tm);
	fputs("<p class=\"target\">", out);
	if (m->pid)
		fprintf(out, "PID %d · ", m->pid);
	else
		fputs("every process running ", out);
	fputs("<code>", out);
	esc_untrusted(out, exe, strlen(exe), 0);
	fprintf(out, "</code> · mode %s · %s capture", m->mode ? m->mode : "?",
		m->capture ? m->capture : "per-event");
	if (m->sample_rate > 1)
		fprintf(out, " (1 task in %u: per-site and per-task figures from the sampled tasks)",
			m->sample_rate);
	fprintf(out, " · started %s · %s", iso, fmt_duration(span, b, sizeof(b)));
	fprintf(out, " (ended by %s)</p>\n", m->ended_by ? m->ended_by : "?");
	{
		char sl[600];

		if (*report_sampling_line(m, a, sl, sizeof(sl))) {
			fputs("<p class=\"sampling\">", out);
			esc(out, sl);
			fputs("</p>\n", out);
		}
	}
	if (m->dialect && m->dialect_lacks && *m->dialect_lacks) {
		fputs("<p class=\"dialect\">Probes of the <code>", out);
		esc(out, m->dialect);
		fputs("</code> dialect: ", out);
		esc(out, m->dialect_lacks);
		fputs(".</p>\n", out);
	}
	flight_banner(out, m);
	fputs("<div class=\"summary\">", out);
#define STAT(v, label) fprintf(out, "<div><b>%llu</b> %s</div>", (unsigned long long)(v), label)
	STAT(t->events, "events");
	STAT(report_total(m, t, TET_EV_POLL_BEGIN), "polls");
	STAT(report_total(m, t, TET_EV_WAKE), "wakes");
	STAT(report_total(m, t, TET_EV_SPAWN), "spawns");
	STAT(t->tasks_seen, "tasks seen");
	STAT(t->tasks_live, "live at the end");
	STAT(an_findings(a, &(const struct an_finding *){ NULL }), "findings");
	STAT(drops, "events dropped");
#undef STAT
	fputs("</div>\n", out);
	if (!m->counters_valid)
		fputs("<p class=\"warning\">The drop counters could not be read: events may have been lost unnoticed.</p>\n", out);
	if (drops) {
		fprintf(out, "<div class=\"warning\"><b>%llu events were dropped</b> (the ring buffer was full); these figures are incomplete:<ul>",
			(unsigned long long)drops);
		for (unsigned i = 0; i < TET_EV_COUNT; i++)
			if (m->counters.drops[i]) {
				fprintf(out, "<li>%s: %llu lost — ", an_event_name(i),
					(unsigned long long)m->counters.drops[i]);
				esc(out, report_drop_impact(i));
				fputs("</li>", out);
			}
		fputs("</ul></div>\n", out);
	}
	if (t->timeline_events > an_get_opts(a)->timeline_cap)
		fprintf(out, "<p class=\"warning\">The timeline and the worker heat map cover the end of the capture only: the last %llu of %llu timeline events were kept (--timeline-events).</p>\n",
			(unsigned long long)an_get_opts(a)->timeline_cap,
			(unsigned long long)t->timeline_events);
}

/* Findings grouped by kind and spawn site, the worst first: one entry per group, worded
 * by its worst finding, with the other tasks listed after it. */
static const int kind_rank[AN_FINDING_KINDS] = {
#define AN_FINDING(e, name, title, one, many, rank, trigger, advice) [AN_##e] = rank,
#include "findings.def"
#undef AN_FINDING
};
static const struct an_finding *g_findings;

static int cmp_finding(const void *x, const void *y)
{
	const struct an_finding *a = &g_findings[*(const size_t *)x];
	const struct an_finding *b = &g_findings[*(const size_t *)y];
	uint32_t sa = a->site ? a->site->index : UINT32_MAX, sb = b->site ? b->site->index : UINT32_MAX;

	if (a->kind != b->kind)
		return kind_rank[a->kind] < kind_rank[b->kind] ? -1 : 1;
	if (sa != sb)
		return sa < sb ? -1 : 1;
	if (a->kind == AN_SELF_WAKE && a->ratio != b->ratio)
		return a->ratio > b->ratio ? -1 : 1;
	if (a->value_ns != b->value_ns)
		return a->value_ns > b->value_ns ? -1 : 1;
	return a->task_id < b->task_id ? -1 : a->task_id > b->task_id;
}

static int cmp_uptr(const void *x, const void *y)
{
	uintptr_t a = *(const uintptr_t *)x, b = *(const uintptr_t *)y;

	return a < b ? -1 : a > b;
}

static void findings_html(FILE *out, const struct analyzer *a, const struct report_meta *m)
{
	const struct an_finding *f;
	size_t n = an_findings(a, &f), *ix, groups = 0, shown = 0, sites = 0;
	unsigned per[AN_FINDING_KINDS] = { 0 };
	static const char *const names[AN_FINDING_KINDS][2] = {
#define AN_FINDING(e, name, title, one, many, rank, trigger, advice) [AN_##e] = { one, many },
#include "findings.def"
#undef AN_FINDING
	};
	char detail[4096], v[32], tn[48];
	bool first = true;

	if (!n) {
		fputs("<p class=\"verdict\">No findings: no poll over the long-poll threshold, no task stalled or without a waker, none that never yields or keeps waking itself.</p>\n",
		      out);
		return;
	}
	ix = malloc(n * sizeof(*ix));
	if (!ix)
		return;
	for (size_t i = 0; i < n; i++) {
		ix[i] = i;
		if ((unsigned)f[i].kind < AN_FINDING_KINDS)
			per[f[i].kind]++;
	}
	g_findings = f;
	qsort(ix, n, sizeof(*ix), cmp_finding);
	for (size_t i = 0; i < n; i++)
		groups += !i || f[ix[i]].kind != f[ix[i - 1]].kind || f[ix[i]].site != f[ix[i - 1]].site;
	{
		uintptr_t *sv = malloc(n * sizeof(*sv));

		if (sv) {
			for (size_t i = 0; i < n; i++)
				sv[i] = (uintptr_t)f[i].site;
			qsort(sv, n, sizeof(*sv), cmp_uptr);
			for (size_t i = 0; i < n; i++)
				sites += !i || sv[i] != sv[i - 1];
			free(sv);
		}
	}
	fprintf(out, "<p class=\"verdict\"><b>%zu finding%s</b> at %zu spawn site%s: ", n,
		n == 1 ? "" : "s", sites, sites == 1 ? "" : "s");
	for (int r = 0; r < AN_FINDING_KINDS; r++) {
		for (int k = 0; k < AN_FINDING_KINDS; k++) {
			if (kind_rank[k] != r || !per[k])
				continue;
			fprintf(out, "%s%u %s", first ? "" : ", ", per[k], names[k][per[k] != 1]);
			first = false;
		}
	}
	fputs(".</p>\n<ol class=\"findings\">\n", out);
	for (size_t i = 0; i < n && shown < HTML_FINDINGS_TOP;) {
		const struct an_finding *w = &f[ix[i]];
		const struct an_site *s = w->site;
		size_t j = i + 1, listed = 0;
		const struct an_finding *trig = NULL; /* the one that fired a flight-recorder dump */

		while (j < n && f[ix[j]].kind == w->kind && f[ix[j]].site == s)
			j++;
		for (size_t k = i; k < j && !trig; k++)
			if (report_is_trigger(m, &f[ix[k]]))
				trig = &f[ix[k]];
		shown++;
		fprintf(out, "<li class=\"k-%s%s\"><span class=\"kind\">%s</span><span class=\"where\"><code>",
			an_finding_name(w->kind), trig ? " trigger" : "", kind_title[w->kind]);
		esc_site(out, s);
		fputs("</code>", out);
		if (s && !s->unknown && !s->other && !s->typed) {
			fputs(" <span class=\"muted\">", out);
			esc_untrusted(out, s->type_name, s->type_len, 160);
			fputs("</span>", out);
		}
		report_finding_detail(w, detail, sizeof(detail));
		report_uring_finding_text(a, w, detail, sizeof(detail));
		report_wait_finding_text(a, m, w, detail, sizeof(detail));
		fputs("</span><div class=\"detail\">", out);
		esc(out, detail);
		fputs("</div>", out);
		why_finding_html(out, why_finding_at(m->why, ix[i]));
		if (trig)
			fprintf(out, "<div class=\"trigger-note\">%s fired the flight-recorder dump.</div>",
				task_name(key_of(trig->task_id, trig->header_ptr), tn, sizeof(tn)));
		if (j - i > 1) {
			fprintf(out, "<div class=\"more\">The same at this site in %zu more task%s:", j - i - 1,
				j - i - 1 == 1 ? "" : "s");
			for (size_t k = i + 1; k < j && listed < 12; k++, listed++) {
				if (f[ix[k]].kind == AN_SELF_WAKE)
					snprintf(v, sizeof(v), "%.0f%%", f[ix[k]].ratio * 100);
				else if (f[ix[k]].kind == AN_LARGE_FUTURE)
					snprintf(v, sizeof(v), "%llu bytes", (unsigned long long)f[ix[k]].size);
				else
					fmt_duration(f[ix[k]].value_ns, v, sizeof(v));
				fprintf(out, "%s %s (%s)", listed ? "," : "",
					task_name(key_of(f[ix[k]].task_id, f[ix[k]].header_ptr), tn, sizeof(tn)), v);
			}
			fprintf(out, "%s</div>", j - i - 1 > listed ? ", …" : ".");
		}
		fputs("</li>\n", out);
		i = j;
	}
	fputs("</ol>\n", out);
	if (groups > shown)
		fprintf(out, "<p class=\"muted\">… %zu more in the JSON report.</p>\n", groups - shown);
	free(ix);
}

/* ---- data: histograms ---- */
static uint64_t bin_lo[NBINS];

static void bins_init(void)
{
	double v = 1, step = 1.5848931924611136; /* 10^(1/5) */

	for (int i = 0; i < NBINS; i++, v *= step)
		bin_lo[i] = (uint64_t)(v + 0.5);
}

static int bin_of(uint64_t v)
{
	int lo = 0, hi = NBINS - 1;

	while (lo < hi) { /* last bin whose lower bound is <= v */
		int mid = (lo + hi + 1) / 2;

		if (bin_lo[mid] <= v)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

static void bucket_to_bins(uint64_t lo, uint64_t hi, uint64_t count, void *ctx)
{
	((uint64_t *)ctx)[bin_of(lo + (hi - lo) / 2)] += count;
}

static void j_summary(struct jw *w, const struct hist_summary *s)
{
	jw_ku64(w, "n", s->count);
	if (!s->count)
		return;
	jw_ku64(w, "p50", s->p50);
	jw_ku64(w, "p90", s->p90);
	jw_ku64(w, "p99", s->p99);
	jw_ku64(w, "max", s->max);
	jw_ku64(w, "sum", s->sum);
}

static void j_hist(struct jw *w, const char *key, const struct hist *h, bool buckets)
{
	struct hist_summary s;
	uint64_t bins[NBINS] = { 0 };

	hist_summarize(h, &s);
	jw_key(w, key);
	jw_obj_begin(w);
	j_summary(w, &s);
	if (buckets && s.count) {
		hist_for_each_bucket(h, bucket_to_bins, bins);
		jw_key(w, "b");
		jw_arr_begin(w);
		for (int i = 0; i < NBINS; i++)
			if (bins[i]) {
				jw_u64(w, (uint64_t)i);
				jw_u64(w, bins[i]);
			}
		jw_arr_end(w);
	}
	jw_obj_end(w);
}

static void j_site_strings(struct jw *w, const struct an_site *s)
{
	bool real = s && !s->unknown && !s->other;

	jw_key(w, "loc");
	if (real && s->typed) { /* uprobe fallback: the future type stands for the location */
		char *loc = malloc(s->type_len + 8);

		if (loc) {
			memcpy(loc, "future ", 7);
			memcpy(loc + 7, s->type_name, s->type_len);
		}
		jw_strn(w, loc, loc ? s->type_len + 7 : 0);
		free(loc);
	} else if (real)
		jw_strn(w, s->location, s->location_len);
	else
		jw_str(w, !s || s->unknown ? "(spawned before the trace)" : "(other sites)");
	jw_key(w, "type");
	if (real)
		jw_strn(w, s->type_name, s->type_len);
	else
		jw_null(w);
}

static int cmp_site_busy(const void *x, const void *y)
{
	const struct an_site *a = *(const struct an_site *const *)x;
	const struct an_site *b = *(const struct an_site *const *)y;

	if (a->runtime != b->runtime) /* Tokio's own sites after the program's (report.c) */
		return a->runtime ? 1 : -1;
	if (a->busy_ns != b->busy_ns)
		return a->busy_ns < b->busy_ns ? 1 : -1;
	if (a->polls != b->polls)
		return a->polls < b->polls ? 1 : -1;
	return a->index < b->index ? -1 : a->index > b->index;
}

static int j_sites(struct jw *w, const struct analyzer *a, const uint64_t *pend_now, size_t npend)
{
	const struct an_site *const *sites;
	size_t n = an_sites(a, &sites);
	const struct an_site **v = malloc((n ? n : 1) * sizeof(*v));
	struct hist all_poll, all_sched, all_pend;

	if (!v)
		return -ENOMEM;
	memcpy(v, sites, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp_site_busy);
	hist_init_outside(&all_poll);
	hist_init_outside(&all_sched);
	hist_init_outside(&all_pend);
	for (size_t i = 0; i < n; i++) {
		hist_merge(&all_poll, &v[i]->poll_ns);
		hist_merge(&all_sched, &v[i]->sched_ns);
		hist_merge(&all_pend, &v[i]->pending_ns);
	}
	jw_key(w, "all");
	jw_obj_begin(w);
	j_hist(w, "poll", &all_poll, true);
	j_hist(w, "sched", &all_sched, true);
	j_hist(w, "pending", &all_pend, true);
	jw_obj_end(w);
	hist_free(&all_poll);
	hist_free(&all_sched);
	hist_free(&all_pend);

	jw_ku64(w, "sites_total", n);
	jw_key(w, "sites");
	jw_arr_begin(w);
	for (size_t i = 0; i < n && i < HTML_SITES; i++) {
		const struct an_site *s = v[i];

		jw_obj_begin(w);
		jw_ku64(w, "id", s->index);
		j_site_strings(w, s);
		jw_kstr(w, "kind", s->unknown || s->other ? NULL : an_kind_name(s->kind));
		jw_kbool(w, "runtime", s->runtime);
		jw_ku64(w, "tasks", s->tasks);
		jw_ku64(w, "live", s->tasks - s->tasks_terminated);
		jw_ku64(w, "polls", s->polls);
		jw_ku64(w, "busy_ns", s->busy_ns);
		jw_ku64(w, "wakes", s->wakes);
		jw_ku64(w, "self_wakes", s->self_wakes);
		jw_ku64(w, "outside_wakes", s->outside_wakes);
		jw_ku64(w, "pending_now_ns", s->index < npend ? pend_now[s->index] : 0);
		j_hist(w, "poll", &s->poll_ns, i < HTML_SITE_HISTS);
		j_hist(w, "sched", &s->sched_ns, i < HTML_SITE_HISTS);
		j_hist(w, "pending", &s->pending_ns, i < HTML_SITE_HISTS);
		jw_key(w, "findings");
		jw_arr_begin(w);
		for (int k = 0; k < AN_FINDING_KINDS; k++)
			jw_u64(w, s->findings[k]);
		jw_arr_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	free(v);
	return 0;
}

/* ---- data: tasks ---- */
struct trow {
	uint64_t task_id;           /* the task's key (key_of) */
	uint64_t busy, pend, pend_now, sched_sum, sched_p99, poll_p99, polls, wakes, lifetime;
	int64_t live_wakers;        /* INT64_MIN: unknown */
	uint32_t pid, site;
	uint8_t state;
	unsigned findings;          /* bit per kind */
	uint64_t future_size;       /* UINT64_MAX: unknown */
	uint16_t name_len;
	uint8_t nwaits;             /* pending: its waits (wait_events) */
	struct an_wait wait;        /* the first */
	char name[TET_NAME_MAX];
};

struct tkey {
	uint32_t pid;
	uint64_t task_id;
	unsigned kinds;
};

/* The kinds of finding of each task: sorted by (pid, task_id), one entry per task. */
struct findex {
	struct tkey *v;
	size_t n;
};

static int cmp_tkey(const void *x, const void *y)
{
	const struct tkey *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->task_id < b->task_id ? -1 : a->task_id > b->task_id;
}

static int findex_build(struct findex *fx, const struct analyzer *a)
{
	const struct an_finding *f;
	size_t nf = an_findings(a, &f);

	fx->n = 0;
	fx->v = malloc((nf ? nf : 1) * sizeof(*fx->v));
	if (!fx->v)
		return -ENOMEM;
	for (size_t i = 0; i < nf; i++)
		fx->v[i] = (struct tkey){ f[i].pid, key_of(f[i].task_id, f[i].header_ptr), 1u << f[i].kind };
	qsort(fx->v, nf, sizeof(*fx->v), cmp_tkey);
	for (size_t i = 0; i < nf; i++) { /* merge the kinds of one task */
		if (fx->n && !cmp_tkey(&fx->v[fx->n - 1], &fx->v[i]))
			fx->v[fx->n - 1].kinds |= fx->v[i].kinds;
		else
			fx->v[fx->n++] = fx->v[i];
	}
	return 0;
}

static unsigned finding_kinds(const struct findex *fx, uint32_t pid, uint64_t id)
{
	struct tkey k = { pid, id, 0 };
	const struct tkey *f = fx->n ? bsearch(&k, fx->v, fx->n, sizeof(k), cmp_tkey) : NULL;

	return f ? f->kinds : 0;
}

struct tasks_ctx {
	struct trow *v;
	size_t n, cap;
	uint64_t now;
	const struct findex *fx;
	bool oom;
};

static void collect_task(const struct an_task_summary *t, void *p)
{
	struct tasks_ctx *c = p;
	struct trow *r;
	uint64_t end = t->end_ts ? t->end_ts : c->now;

	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 1024;
		struct trow *v = realloc(c->v, cap * sizeof(*v));

		if (!v) {
			c->oom = true;
			return;
		}
		c->v = v;
		c->cap = cap;
	}
	r = &c->v[c->n++];
	r->task_id = key_of(t->task_id, t->header_ptr);
	r->pid = t->pid;
	r->site = t->site ? t->site->index : UINT32_MAX;
	r->state = t->state;
	r->polls = t->polls;
	r->busy = t->busy_ns;
	r->pend_now = t->state == AN_PENDING ? t->pending_now_ns : 0;
	r->pend = t->pending_ns.sum + r->pend_now;
	r->sched_sum = t->sched_ns.sum;
	r->sched_p99 = t->sched_ns.count ? t->sched_ns.p99 : 0;
	r->poll_p99 = t->poll_ns.count ? t->poll_ns.p99 : 0;
	r->wakes = t->wakes;
	r->lifetime = t->spawn_seen && end >= t->spawn_ts ? end - t->spawn_ts : UINT64_MAX;
	r->live_wakers = t->wakers_known ? t->live_wakers : INT64_MIN;
	r->findings = finding_kinds(c->fx, t->pid, r->task_id);
	r->future_size = t->meta_seen ? t->future_size : UINT64_MAX;
	r->name_len = t->name_len;
	memcpy(r->name, t->name, t->name_len);
	r->nwaits = t->state == AN_PENDING ? t->nwaits : 0;
	if (r->nwaits)
		r->wait = t->waits[t->waits[0].kind == TET_WAIT_TIMER && t->nwaits > 1];
}

static int cmp_trow(const void *x, const void *y)
{
	const struct trow *a = x, *b = y;

	if (!a->findings != !b->findings)
		return a->findings ? -1 : 1;
	if (a->busy != b->busy)
		return a->busy < b->busy ? 1 : -1;
	return a->polls < b->polls ? 1 : a->polls > b->polls ? -1 : 0;
}

static int tasks_collect(struct tasks_ctx *c, const struct analyzer *a, const struct findex *fx)
{
	memset(c, 0, sizeof(*c));
	c->fx = fx;
	c->now = an_now(a);
	an_for_each_listed_task(a, collect_task, c);
	if (c->oom) {
		free(c->v);
		c->v = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void j_tasks(struct jw *w, const struct analyzer *a, const struct report_meta *m,
		    struct tasks_ctx *tc)
{
	static const char *const cols[] = { "id", "pid", "site", "state", "polls", "busy_ns",
		"pending_ns", "sched_ns", "sched_p99_ns", "poll_p99_ns", "wakes", "lifetime_ns",
		"live_wakers", "findings", "name", "future_size", "waits_for" };
	bool waits = an_get_opts(a)->wait_events;
	char wt[600];
	size_t shown = 0;
	struct tasks_ctx c = *tc;

	qsort(c.v, c.n, sizeof(*c.v), cmp_trow);
	jw_ku64(w, "tasks_total", c.n + an_totals(a)->task_records_omitted);
	jw_key(w, "task_cols");
	jw_arr_begin(w);
	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
		jw_str(w, cols[i]);
	jw_arr_end(w);
	jw_key(w, "tasks");
	jw_arr_begin(w);
	for (size_t i = 0; i < c.n; i++) {
		const struct trow *r = &c.v[i];

		if (shown >= HTML_TASKS && !r->findings)
			break;
		shown++;
		jw_arr_begin(w);
		jw_u64(w, r->task_id);
		jw_u64(w, r->pid);
		if (r->site == UINT32_MAX)
			jw_null(w);
		else
			jw_u64(w, r->site);
		jw_str(w, an_state_name(r->state));
		jw_u64(w, r->polls);
		jw_u64(w, r->busy);
		jw_u64(w, r->pend);
		jw_u64(w, r->sched_sum);
		jw_u64(w, r->sched_p99);
		jw_u64(w, r->poll_p99);
		jw_u64(w, r->wakes);
		if (r->lifetime == UINT64_MAX)
			jw_null(w);
		else
			jw_u64(w, r->lifetime);
		if (r->live_wakers == INT64_MIN)
			jw_null(w);
		else
			jw_i64(w, r->live_wakers);
		jw_u64(w, r->findings);
		if (r->name_len)
			jw_strn(w, r->name, r->name_len);
		else
			jw_null(w);
		if (r->future_size == UINT64_MAX)
			jw_null(w);
		else
			jw_u64(w, r->future_size);
		if (r->state != AN_PENDING || !waits)
			jw_null(w);
		else if (!r->nwaits)
			jw_str(w, "nothing Tokio's probes name");
		else
			jw_str(w, report_wait_text(&r->wait, r->pid, tc->now, m, wt, sizeof(wt)));
		jw_arr_end(w);
	}
	jw_arr_end(w);
}

/* ---- data: why polls were slow (why.h) ---- */
/* "why" of a finding: its worst poll split, where it blocked longest (the innermost frames
 * first), its hottest frames. */
static void j_finding_why(struct jw *w, const struct why_finding *wf)
{
	const struct why_stack *b = wf ? wf->blocked_top : NULL;

	if (!wf)
		return;
	jw_key(w, "why");
	jw_obj_begin(w);
	jw_ku64(w, "on_cpu_ns", wf->on_cpu_ns);
	jw_ku64(w, "preempted_ns", wf->preempted_ns);
	jw_ku64(w, "stolen_ns", wf->stolen_ns);
	jw_ku64(w, "blocked_ns", wf->blocked_ns);
	jw_ku64(w, "samples", wf->samples);
	jw_key(w, "blocked_top");
	if (b) {
		jw_obj_begin(w);
		jw_kstr(w, "syscall", b->syscall);
		jw_ku64(w, "ns", b->ns);
		jw_ku64(w, "count", b->count);
		jw_ku64(w, "frames_total", b->nframes);
		jw_key(w, "frames");
		jw_arr_begin(w);
		for (uint32_t k = 0; k < b->nframes && k < HTML_WHY_FRAMES; k++)
			jw_str(w, b->frames[k] ? b->frames[k] : "?");
		jw_arr_end(w);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
	jw_key(w, "hot");
	jw_arr_begin(w);
	for (size_t k = 0; k < wf->nhot && k < WHY_HOT_MAX; k++) {
		jw_obj_begin(w);
		jw_kstr(w, "frame", wf->hot[k].frame ? wf->hot[k].frame : "?");
		jw_ku64(w, "samples", wf->hot[k].samples);
		jw_kdouble(w, "share", wf->hot[k].share);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

/* Frame strings, each written once ("why.frames") and named by index in the stacks. */
struct ftab {
	const char **v;           /* in first-seen order */
	size_t n;
	uint32_t *slot;           /* open addressing: index + 1, 0 = empty */
	size_t nslot;             /* a power of two, at least 2 n */
};

static size_t fhash(const char *s, size_t mask)
{
	return (size_t)fnv1a_str(s) & mask;
}

static int ftab_grow(struct ftab *t)
{
	size_t nslot = t->nslot ? t->nslot * 2 : 1024;
	uint32_t *slot = calloc(nslot, sizeof(*slot));
	const char **v = realloc(t->v, nslot / 2 * sizeof(*v));

	if (v)
		t->v = v;
	if (!slot || !v) {
		free(slot);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->n; i++) {
		size_t h = fhash(t->v[i], nslot - 1);

		while (slot[h])
			h = (h + 1) & (nslot - 1);
		slot[h] = (uint32_t)i + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->nslot = nslot;
	return 0;
}

/* The index of frame f, added when new. Returns it, or -ENOMEM. */
static int64_t ftab_index(struct ftab *t, const char *f)
{
	size_t h;

	if (!f)
		f = "?";
	if (2 * (t->n + 1) > t->nslot && ftab_grow(t))
		return -ENOMEM;
	for (h = fhash(f, t->nslot - 1); t->slot[h]; h = (h + 1) & (t->nslot - 1))
		if (!strcmp(t->v[t->slot[h] - 1], f))
			return t->slot[h] - 1;
	t->v[t->n] = f;
	t->slot[h] = (uint32_t)++t->n;
	return (int64_t)t->n - 1;
}

/* What a site's entry lists: its stacks sorted, the first ncpu / nblocked of them. */
struct why_sel {
	const struct why_stack **cpu, **blocked;
	size_t ncpu, nblocked;
	uint64_t cpu_other;       /* samples of the CPU stacks not listed */
};

static int cmp_stack_samples(const void *x, const void *y)
{
	const struct why_stack *a = *(const struct why_stack *const *)x;
	const struct why_stack *b = *(const struct why_stack *const *)y;

	if (a->count != b->count)
		return a->count < b->count ? 1 : -1;
	return a < b ? -1 : a > b;
}

static int cmp_stack_time(const void *x, const void *y)
{
	const struct why_stack *a = *(const struct why_stack *const *)x;
	const struct why_stack *b = *(const struct why_stack *const *)y;

	if (a->ns != b->ns)
		return a->ns < b->ns ? 1 : -1;
	return cmp_stack_samples(x, y);
}

static const struct why_stack **why_sorted(const struct why_stack *v, size_t n, size_t max,
					   int (*cmp)(const void *, const void *), size_t *shown)
{
	const struct why_stack **p = malloc((n ? n : 1) * sizeof(*p));

	if (!p)
		return NULL;
	for (size_t i = 0; i < n; i++)
		p[i] = &v[i];
	qsort(p, n, sizeof(*p), cmp);
	*shown = n < max ? n : max;
	return p;
}

/* The stacks a site lists, their frames added to ft; the CPU stacks spend at most `share` of
 * the frame budget *refs. */
static int why_select(struct why_sel *sel, const struct why_site *s, struct ftab *ft,
		      size_t *refs, size_t share)
{
	sel->cpu = why_sorted(s->cpu, s->ncpu, HTML_WHY_CPU, cmp_stack_samples, &sel->ncpu);
	sel->blocked = why_sorted(s->blocked, s->nblocked, HTML_WHY_BLOCKED, cmp_stack_time,
				  &sel->nblocked);
	if (!sel->cpu || !sel->blocked)
		return -ENOMEM;
	for (size_t i = 0; i < sel->ncpu; i++) {
		if (sel->cpu[i]->nframes > share) {
			sel->ncpu = i;
			break;
		}
		share -= sel->cpu[i]->nframes;
		*refs -= sel->cpu[i]->nframes;
	}
	for (size_t i = sel->ncpu; i < s->ncpu; i++)
		sel->cpu_other += sel->cpu[i]->count;
	for (size_t i = 0; i < sel->ncpu; i++)
		for (uint32_t k = 0; k < sel->cpu[i]->nframes; k++)
			if (ftab_index(ft, sel->cpu[i]->frames[k]) < 0)
				return -ENOMEM;
	for (size_t i = 0; i < sel->nblocked; i++)
		for (uint32_t k = 0; k < sel->blocked[i]->nframes; k++)
			if (ftab_index(ft, sel->blocked[i]->frames[k]) < 0)
				return -ENOMEM;
	return 0;
}

/* A stack's frames as indices into "why.frames" (every frame is in it: why_select). */
static void j_stack_frames(struct jw *w, struct ftab *ft, const struct why_stack *s,
			   bool root_first)
{
	jw_arr_begin(w);
	for (uint32_t k = 0; k < s->nframes; k++)
		jw_u64(w, (uint64_t)ftab_index(ft, s->frames[root_first ? s->nframes - 1 - k : k]));
	jw_arr_end(w);
}

static void j_why_site(struct jw *w, const struct why_site *s, const struct why_sel *sel,
		       struct ftab *ft)
{
	jw_obj_begin(w);
	jw_key(w, "site");
	if (s->site)
		jw_u64(w, s->site->index);
	else
		jw_null(w);
	j_site_strings(w, s->site);
	jw_ku64(w, "samples", s->samples);
	jw_ku64(w, "on_cpu_ns", s->on_cpu_ns);
	jw_ku64(w, "preempted_ns", s->preempted_ns);
	jw_ku64(w, "stolen_ns", s->stolen_ns);
	jw_ku64(w, "blocked_ns", s->blocked_ns);
	jw_ku64(w, "cpu_stacks", s->ncpu);
	jw_ku64(w, "cpu_other", sel->cpu_other);
	jw_key(w, "cpu"); /* [samples, [frame, … ROOT FIRST]] */
	jw_arr_begin(w);
	for (size_t i = 0; i < sel->ncpu; i++) {
		jw_arr_begin(w);
		jw_u64(w, sel->cpu[i]->count);
		j_stack_frames(w, ft, sel->cpu[i], true);
		jw_arr_end(w);
	}
	jw_arr_end(w);
	jw_ku64(w, "blocked_stacks", s->nblocked);
	jw_key(w, "blocked");
	jw_arr_begin(w);
	for (size_t i = 0; i < sel->nblocked; i++) {
		jw_obj_begin(w);
		jw_kstr(w, "syscall", sel->blocked[i]->syscall);
		jw_ku64(w, "ns", sel->blocked[i]->ns);
		jw_ku64(w, "count", sel->blocked[i]->count);
		jw_key(w, "frames"); /* LEAF FIRST */
		j_stack_frames(w, ft, sel->blocked[i], false);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

static void j_why_head(struct jw *w, const struct why_report *why)
{
	report_json_why_head(w, why);
	jw_ku64(w, "sites_total", why->nsites);
}

static int j_why(struct jw *w, const struct why_report *why)
{
	size_t n = why->sites ? why->nsites : 0;
	struct why_sel sel[HTML_WHY_SITES];
	struct ftab ft = { 0 };
	size_t refs = HTML_WHY_REFS, profiled = 0;
	int ret = 0;

	if (n > HTML_WHY_SITES)
		n = HTML_WHY_SITES;
	memset(sel, 0, sizeof(sel));
	for (size_t i = 0; i < n; i++)
		profiled += why->sites[i].ncpu > 0;
	/* each site with CPU stacks gets an equal share of the frames left (what a site does not
	 * use goes to the next ones) */
	for (size_t i = 0; i < n && !ret; i++) {
		size_t share = why->sites[i].ncpu ? refs / profiled-- : 0;

		ret = why_select(&sel[i], &why->sites[i], &ft, &refs, share);
	}
	if (!ret) {
		jw_key(w, "why");
		jw_obj_begin(w);
		j_why_head(w, why);
		jw_key(w, "frames");
		jw_arr_begin(w);
		for (size_t i = 0; i < ft.n; i++)
			jw_str(w, ft.v[i]);
		jw_arr_end(w);
		jw_key(w, "sites");
		jw_arr_begin(w);
		for (size_t i = 0; i < n; i++)
			j_why_site(w, &why->sites[i], &sel[i], &ft);
		jw_arr_end(w);
		jw_obj_end(w);
	}
	for (size_t i = 0; i < n; i++) {
		free(sel[i].cpu);
		free(sel[i].blocked);
	}
	free(ft.v);
	free(ft.slot);
	return ret;
}

/* ---- data: findings, workers ---- */
static void j_findings(struct jw *w, const struct analyzer *a, const struct report_meta *m)
{
	const struct an_finding *f;
	size_t n = an_findings(a, &f);
	char detail[2048];

	jw_key(w, "findings");
	jw_arr_begin(w);
	for (size_t i = 0; i < n && i < HTML_FINDINGS; i++) {
		jw_obj_begin(w);
		jw_kstr(w, "kind", an_finding_name(f[i].kind));
		jw_ku64(w, "task", key_of(f[i].task_id, f[i].header_ptr));
		jw_ku64(w, "pid", f[i].pid);
		jw_key(w, "site");
		if (f[i].site)
			jw_u64(w, f[i].site->index);
		else
			jw_null(w);
		j_site_strings(w, f[i].site);
		report_finding_detail(&f[i], detail, sizeof(detail));
		report_uring_finding_text(a, &f[i], detail, sizeof(detail));
		report_wait_finding_text(a, m, &f[i], detail, sizeof(detail));
		jw_kstr(w, "detail", detail);
		if (m->flight)
			jw_kbool(w, "trigger", report_is_trigger(m, &f[i]));
		jw_ku64(w, "value_ns", f[i].value_ns);
		jw_ku64(w, "threshold_ns", f[i].threshold_ns);
		jw_ku64(w, "occurrences", f[i].occurrences);
		jw_kbool(w, "ongoing", f[i].ongoing);
		jw_ki64(w, "first_at_ns", (int64_t)(f[i].first_ts - m->start_ns));
		jw_key(w, "live_wakers");
		if (f[i].live_wakers >= 0)
			jw_i64(w, f[i].live_wakers);
		else
			jw_null(w);
		jw_kbool(w, "contradicted", f[i].contradicted);
		j_finding_why(w, why_finding_at(m->why, i));
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/* ---- data: timeline and heat map ---- */
struct tid_worker {
	uint32_t pid, tid;
	int32_t worker;
};

static int cmp_tid(const void *x, const void *y)
{
	const struct tid_worker *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

/* Task records (poll, wake, spawn, terminate) ordered by task, then time. */
static int cmp_task_rec(const void *x, const void *y)
{
	const struct an_tl_rec *a = *(const struct an_tl_rec *const *)x;
	const struct an_tl_rec *b = *(const struct an_tl_rec *const *)y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (rkey(a) != rkey(b))
		return rkey(a) < rkey(b) ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->type < b->type ? -1 : a->type > b->type;
}

struct tgroup {
	size_t first, n;            /* in the sorted record pointers */
	uint64_t busy, polls;
	unsigned findings;
	uint32_t site;              /* index, UINT32_MAX unknown */
	size_t chosen;              /* 0 not shown, else its row + 1 */
};

static int cmp_group_busy(const void *x, const void *y)
{
	const struct tgroup *a = *(const struct tgroup *const *)x;
	const struct tgroup *b = *(const struct tgroup *const *)y;

	if (a->busy != b->busy)
		return a->busy < b->busy ? 1 : -1;
	return a->polls < b->polls ? 1 : a->polls > b->polls ? -1 : 0;
}

struct tl_ctx {
	const struct an_tl_rec **rec;   /* every kept record */
	size_t n;
	struct tid_worker *tw;          /* runtime threads */
	size_t ntw;
	uint64_t t0;                    /* the capture start (offsets are from here) */
};

static int32_t worker_of_tid(const struct tl_ctx *c, uint32_t pid, uint32_t tid)
{
	struct tid_worker k = { pid, tid, 0 };
	const struct tid_worker *f = c->ntw ? bsearch(&k, c->tw, c->ntw, sizeof(k), cmp_tid) : NULL;

	return f ? f->worker : -1;
}

static int64_t off(const struct tl_ctx *c, uint64_t ts)
{
	return (int64_t)(ts - c->t0);
}

static void j_task_timeline(struct jw *w, const struct tl_ctx *c, const struct an_tl_rec **r,
			    size_t n, size_t cap, uint32_t site)
{
	const struct an_tl_rec *last_poll = NULL;
	size_t npw = 0, skip = 0, from;

	for (size_t i = 0; i < n; i++)
		npw += r[i]->type == AN_TL_POLL || r[i]->type == AN_TL_WAKE;
	if (npw > cap)
		skip = npw - cap;
	/* keep the latest `cap` polls and wakes: find where they start */
	for (from = 0; from < n && skip; from++)
		if (r[from]->type == AN_TL_POLL || r[from]->type == AN_TL_WAKE)
			skip--;
	jw_obj_begin(w);
	jw_ku64(w, "id", rkey(r[0]));
	jw_ku64(w, "pid", r[0]->pid);
	jw_key(w, "site");
	if (site == UINT32_MAX)
		jw_null(w);
	else
		jw_u64(w, site);
	jw_ku64(w, "events", npw);
	jw_ku64(w, "kept", npw > cap ? cap : npw);
	if (from)
		jw_ki64(w, "kept_from_ns", off(c, r[from]->ts));
	for (size_t i = 0; i < n; i++) {
		if (r[i]->type == AN_TL_SPAWN)
			jw_ki64(w, "spawn_ns", off(c, r[i]->ts));
		else if (r[i]->type == AN_TL_TERMINATE)
			jw_ki64(w, "end_ns", off(c, r[i]->ts));
	}
	/* polls: start, duration, result, worker */
	jw_key(w, "p");
	jw_arr_begin(w);
	for (size_t i = from; i < n; i++) {
		if (r[i]->type != AN_TL_POLL)
			continue;
		jw_i64(w, off(c, r[i]->ts));
		jw_u64(w, r[i]->end >= r[i]->ts ? r[i]->end - r[i]->ts : 0);
		jw_u64(w, r[i]->code);
		jw_i64(w, r[i]->worker);
	}
	jw_arr_end(w);
	/* wakes: time, source (0 another runtime thread, 1 itself during its poll, 2 outside the
	 * runtime), the waker's worker index (-1 none), by_ref */
	jw_key(w, "w");
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		if (r[i]->type == AN_TL_POLL) {
			last_poll = r[i];
			continue;
		}
		if (r[i]->type != AN_TL_WAKE || i < from)
			continue;
		int32_t ww = worker_of_tid(c, r[i]->pid, r[i]->tid);
		bool self = last_poll && r[i]->ts >= last_poll->ts && r[i]->ts <= last_poll->end &&
			    r[i]->tid == last_poll->tid;

		jw_i64(w, off(c, r[i]->ts));
		jw_u64(w, self ? 1 : ww >= 0 ? 0 : 2);
		jw_i64(w, ww);
		jw_u64(w, r[i]->code);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

static int cmp_trow_id(const void *x, const void *y)
{
	const struct trow *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->task_id < b->task_id ? -1 : a->task_id > b->task_id;
}

/* Picks up to `max` more rows among the groups (busiest first) that pass `want`, at most
 * `per_site` rows per spawn site (counting those picked before). */
static void pick_rows(struct tgroup **order, size_t ng, size_t *chosen, size_t max,
		      unsigned *site_rows, size_t nsite_rows, unsigned per_site,
		      bool (*want)(const struct tgroup *))
{
	for (size_t i = 0; i < ng && *chosen < max; i++) {
		struct tgroup *g = order[i];
		unsigned *sr = g->site < nsite_rows ? &site_rows[g->site] : NULL;

		if (g->chosen || !g->polls || !want(g) || (sr && *sr >= per_site))
			continue;
		g->chosen = ++*chosen;
		if (sr)
			++*sr;
	}
}

static bool want_waiting(const struct tgroup *g)
{
	return g->findings & ~(1u << AN_LONG_POLL);
}

static bool want_finding(const struct tgroup *g)
{
	return g->findings;
}

static bool want_any(const struct tgroup *g)
{
	return true;
}

/* Adds [b, e) to a heat-map row, bin by bin (bins of width ns from w0). */
/* One worker's row of the heat map: each bin's share of its width, in thousandths. */
static void heat_row(struct jw *w, const char *key, const double *bins, double width)
{
	jw_key(w, key);
	jw_arr_begin(w);
	for (int b = 0; b < HTML_HEAT_BINS; b++) {
		double v = width > 0 ? bins[b] / width * 1000 : 0;

		jw_u64(w, v > 1000 ? 1000 : (uint64_t)(v + 0.5));
	}
	jw_arr_end(w);
}

static void heat_add(double *row, uint64_t w0, double width, uint64_t b, uint64_t e)
{
	for (uint64_t t = b; t < e;) {
		size_t bin = (size_t)((double)(t - w0) / width);
		uint64_t bin_end;

		if (bin >= HTML_HEAT_BINS)
			break;
		bin_end = w0 + (uint64_t)((double)(bin + 1) * width);
		if (bin_end <= t)
			bin_end = t + 1;
		if (bin_end > e)
			bin_end = e;
		row[bin] += (double)(bin_end - t);
		t = bin_end;
	}
}

/* "heat": per worker and time slice of [w0, w1], the fraction spent in polls and parked */
static int j_heat(struct jw *w, const struct tl_ctx *c, const struct an_worker **workers,
		  size_t nworkers, uint64_t w0, uint64_t w1)
{
	size_t rows = nworkers < HTML_HEAT_ROWS ? nworkers : HTML_HEAT_ROWS;
	double width = (double)(w1 - w0) / HTML_HEAT_BINS;
	double (*busy)[HTML_HEAT_BINS] = calloc(rows ? rows : 1, sizeof(*busy));
	double (*parked)[HTML_HEAT_BINS] = calloc(rows ? rows : 1, sizeof(*parked));

	if (!busy || !parked) {
		free(busy);
		free(parked);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->n; i++) {
		const struct an_tl_rec *r = c->rec[i];
		uint64_t b = r->ts, e = r->end;
		size_t row = rows;

		if ((r->type != AN_TL_POLL && r->type != AN_TL_PARK) || r->worker < 0)
			continue;
		for (size_t k = 0; k < rows; k++)
			if (workers[k]->pid == r->pid && workers[k]->index == r->worker)
				row = k;
		if (row == rows)
			continue;
		if (b < w0)
			b = w0;
		if (e > w1)
			e = w1;
		heat_add((r->type == AN_TL_POLL ? busy : parked)[row], w0, width, b, e);
	}
	for (size_t k = 0; k < rows; k++) /* parks still going on at the end */
		if (workers[k]->parked)
			heat_add(parked[k], w0, width,
				 workers[k]->park_since > w0 ? workers[k]->park_since : w0, w1);
	jw_key(w, "heat");
	jw_obj_begin(w);
	jw_ki64(w, "from_ns", off(c, w0));
	jw_ki64(w, "to_ns", off(c, w1));
	jw_ku64(w, "bins", HTML_HEAT_BINS);
	jw_ku64(w, "workers_total", nworkers);
	jw_key(w, "rows");
	jw_arr_begin(w);
	for (size_t k = 0; k < rows; k++) {
		jw_obj_begin(w);
		jw_ku64(w, "pid", workers[k]->pid);
		jw_ki64(w, "worker", workers[k]->index);
		jw_ku64(w, "tid", workers[k]->tid);
		heat_row(w, "busy", busy[k], width);
		heat_row(w, "parked", parked[k], width);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	free(busy);
	free(parked);
	return 0;
}

static int j_timeline(struct jw *w, const struct analyzer *a, const struct report_meta *m,
		      const struct an_worker **workers, size_t nworkers, const struct findex *fx,
		      const struct tasks_ctx *tc, size_t nsites)
{
	const struct an_tl_rec *s1, *s2;
	size_t n1, n2, n = an_timeline(a, &s1, &n1, &s2, &n2), nt = 0, ng = 0, ntw = 0;
	struct tl_ctx c = { 0 };
	const struct an_tl_rec **task_recs = NULL;
	struct tgroup *groups = NULL, **order = NULL, *row_of[HTML_TL_TASKS];
	struct trow *by_id = NULL;
	unsigned *site_rows = NULL;
	uint64_t w0 = m->start_ns, w1 = m->end_ns > m->start_ns ? m->end_ns : m->start_ns + 1;
	int ret = -ENOMEM;

	c.t0 = m->start_ns;
	c.rec = malloc((n ? n : 1) * sizeof(*c.rec));
	c.tw = malloc((n ? n : 1) * sizeof(*c.tw));
	task_recs = malloc((n ? n : 1) * sizeof(*task_recs));
	if (!c.rec || !c.tw || !task_recs)
		goto out;
	for (size_t i = 0; i < n1; i++)
		c.rec[c.n++] = &s1[i];
	for (size_t i = 0; i < n2; i++)
		c.rec[c.n++] = &s2[i];
	/* the kept window: from the oldest record when the ring overflowed */
	if (an_totals(a)->timeline_events > n && n) {
		uint64_t oldest = UINT64_MAX;

		for (size_t i = 0; i < n; i++)
			if (c.rec[i]->ts < oldest)
				oldest = c.rec[i]->ts;
		if (oldest > w0)
			w0 = oldest;
	}
	for (size_t i = 0; i < n; i++) {
		const struct an_tl_rec *r = c.rec[i];

		if ((r->type == AN_TL_POLL || r->type == AN_TL_PARK) && r->worker >= 0)
			c.tw[ntw++] = (struct tid_worker){ r->pid, r->tid, r->worker };
		if (r->type != AN_TL_PARK)
			task_recs[nt++] = r;
	}
	qsort(c.tw, ntw, sizeof(*c.tw), cmp_tid);
	for (size_t i = 0; i < ntw; i++) /* dedupe: one worker per thread (the last seen wins) */
		if (!c.ntw || cmp_tid(&c.tw[c.ntw - 1], &c.tw[i]))
			c.tw[c.ntw++] = c.tw[i];
	qsort(task_recs, nt, sizeof(*task_recs), cmp_task_rec);
	groups = malloc((nt ? nt : 1) * sizeof(*groups));
	order = malloc((nt ? nt : 1) * sizeof(*order));
	by_id = malloc((tc->n ? tc->n : 1) * sizeof(*by_id));
	site_rows = calloc(nsites ? nsites : 1, sizeof(*site_rows));
	if (!groups || !order || !by_id || !site_rows)
		goto out;
	memcpy(by_id, tc->v, tc->n * sizeof(*by_id));
	qsort(by_id, tc->n, sizeof(*by_id), cmp_trow_id);
	for (size_t i = 0; i < nt;) {
		struct tgroup *g = &groups[ng++];
		size_t j = i;

		memset(g, 0, sizeof(*g));
		g->first = i;
		for (; j < nt && task_recs[j]->pid == task_recs[i]->pid &&
		       rkey(task_recs[j]) == rkey(task_recs[i]); j++) {
			if (task_recs[j]->type == AN_TL_POLL) {
				g->polls++;
				g->busy += task_recs[j]->end - task_recs[j]->ts;
			}
		}
		g->n = j - i;
		g->findings = finding_kinds(fx, task_recs[i]->pid, rkey(task_recs[i]));
		{
			struct trow k = { .pid = task_recs[i]->pid, .task_id = rkey(task_recs[i]) };
			const struct trow *t = tc->n ? bsearch(&k, by_id, tc->n, sizeof(k), cmp_trow_id) : NULL;

			g->site = t ? t->site : UINT32_MAX;
		}
		i = j;
	}
	for (size_t i = 0; i < ng; i++)
		order[i] = &groups[i];
	qsort(order, ng, sizeof(*order), cmp_group_busy);
	/* tasks with findings first (a stalled task is idle: not among the busiest): the
	 * stalled, lost-waker, never-yielding and self-waking ones, two per site; one long poll
	 * per site; then the busiest, a few per site; then any */
	size_t chosen = 0;

	if (m->flight && m->flight->trigger.has_task) { /* the dump's trigger first */
		const struct report_trigger *tr = &m->flight->trigger;

		for (size_t i = 0; i < ng && !chosen; i++) {
			const struct an_tl_rec *r = task_recs[groups[i].first];

			if (r->pid != tr->pid || rkey(r) != key_of(tr->task_id, tr->header_ptr))
				continue;
			groups[i].chosen = ++chosen;
			if (groups[i].site < nsites)
				site_rows[groups[i].site]++;
		}
	}
	pick_rows(order, ng, &chosen, HTML_TL_FINDING_TASKS - 4, site_rows, nsites, 2, want_waiting);
	pick_rows(order, ng, &chosen, HTML_TL_FINDING_TASKS, site_rows, nsites, 3, want_finding);
	pick_rows(order, ng, &chosen, HTML_TL_TASKS, site_rows, nsites, 5, want_any);
	pick_rows(order, ng, &chosen, HTML_TL_TASKS, NULL, 0, 0, want_any);
	/* rows in the order chosen */
	for (size_t i = 0; i < ng; i++)
		if (order[i]->chosen)
			row_of[order[i]->chosen - 1] = order[i];

	jw_key(w, "timeline");
	jw_obj_begin(w);
	jw_ki64(w, "from_ns", off(&c, w0));
	jw_ki64(w, "to_ns", off(&c, w1));
	jw_ku64(w, "kept", n);
	jw_ku64(w, "total", an_totals(a)->timeline_events);
	jw_ku64(w, "tasks_in_window", ng);
	jw_key(w, "tasks");
	jw_arr_begin(w);
	for (size_t i = 0; i < chosen; i++)
		j_task_timeline(w, &c, task_recs + row_of[i]->first, row_of[i]->n,
				HTML_TL_BUDGET / chosen, row_of[i]->site);
	jw_arr_end(w);
	jw_obj_end(w);

	ret = j_heat(w, &c, workers, nworkers, w0, w1);
out:
	free(c.rec);
	free(c.tw);
	free(task_recs);
	free(groups);
	free(order);
	free(by_id);
	free(site_rows);
	return ret;
}

/* The dump's trigger for the script: the timeline marks its moment (offsets from the capture
 * start, as the timeline's) and the row of its task; strings made printable as in the banner. */
static void j_flight(struct jw *w, const struct report_meta *m)
{
	const struct report_flight *fl = m->flight;
	const struct report_trigger *tr = &fl->trigger;
	const char *spec = tr->spec ? tr->spec : tr->kind ? tr->kind : "?";
	char buf[1100];

	jw_key(w, "flight");
	jw_obj_begin(w);
	jw_ku64(w, "dump", fl->dump_index);
	jw_kstr(w, "kind", tr->kind);
	jw_kstr(w, "spec", text_sanitize(spec, strlen(spec), 80, buf, sizeof(buf)));
	jw_kstr(w, "detail", text_sanitize(tr->detail, strnlen(tr->detail, sizeof(tr->detail)), 0,
					      buf, sizeof(buf)));
	jw_ki64(w, "at_ns", (int64_t)(tr->ts - m->start_ns));
	jw_ki64(w, "detected_at_ns", (int64_t)(tr->at_ns - m->start_ns));
	jw_ki64(w, "window_from_ns", (int64_t)(fl->from_ns - m->start_ns));
	jw_ki64(w, "window_to_ns", (int64_t)(fl->to_ns - m->start_ns));
	jw_ku64(w, "pid", tr->pid);
	jw_key(w, "task");
	if (tr->has_task)
		jw_u64(w, key_of(tr->task_id, tr->header_ptr));
	else
		jw_null(w);
	jw_ku64(w, "value_ns", tr->value_ns);
	jw_ku64(w, "threshold_ns", tr->threshold_ns);
	jw_obj_end(w);
}

/* ---- data: io_uring ---- */
static void j_ur_ops(struct jw *w, const struct ur_opstats *v, size_t n)
{
	struct hist_summary s;
	char nb[24];

	jw_key(w, "ops");
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		jw_obj_begin(w);
		jw_kstr(w, "op", ur_opcode_str(v[i].opcode, nb, sizeof(nb)));
		jw_ku64(w, "opcode", v[i].opcode);
		jw_ku64(w, "submitted", v[i].submitted);
		jw_ku64(w, "completed", v[i].completed);
		jw_ku64(w, "errors", v[i].errors);
		jw_ku64(w, "in_flight", v[i].in_flight);
		hist_summarize(&v[i].lat_ns, &s);
		jw_key(w, "lat");
		jw_obj_begin(w);
		j_summary(w, &s);
		jw_obj_end(w);
		hist_summarize(&v[i].consume_ns, &s);
		jw_key(w, "to_poll");
		jw_obj_begin(w);
		j_summary(w, &s);
		jw_obj_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/* A request's spawn site: its index and strings; "no task known" when it was not linked. */
static void j_ur_site(struct jw *w, const struct an_site *s, bool linked)
{
	jw_key(w, "site");
	if (s)
		jw_u64(w, s->index);
	else
		jw_null(w);
	if (s || linked) {
		j_site_strings(w, s);
	} else {
		jw_kstr(w, "loc", "(no task known)");
		jw_kstr(w, "type", NULL);
	}
}

static void j_uring(struct jw *w, const struct analyzer *a, const struct report_meta *m)
{
	const struct ur *u = an_uring(a);
	const struct ur_opstats *ops;
	struct ur_site_stats *const *sites;
	const struct ur_inflight *inf;
	size_t n;
	uint64_t now = an_now(a);
	char what[UR_FD_WHAT_MAX * 4 + 8], nb[24];

	jw_key(w, "io_uring");
	if (!ur_active(u)) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w);
	report_uring_totals_json(w, ur_totals(u), m);
	jw_kstr(w, "why_not_linked", m->uring && !m->uring->hooks ? m->uring->why_no_hooks : NULL);
	n = ur_opcodes(u, &ops);
	j_ur_ops(w, ops, n);
	n = ur_sites(u, &sites);
	jw_key(w, "sites");
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		jw_obj_begin(w);
		j_ur_site(w, sites[i]->site, false);
		jw_ku64(w, "tasks", sites[i]->tasks);
		j_ur_ops(w, sites[i]->ops, sites[i]->nops);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	n = ur_inflight(u, &inf);
	jw_key(w, "in_flight_requests");
	jw_arr_begin(w);
	for (size_t i = 0; i < n && i < HTML_UR_INFLIGHT; i++) {
		const struct ur_inflight *f = &inf[i];

		jw_obj_begin(w);
		jw_kstr(w, "op", ur_opcode_str(f->opcode, nb, sizeof(nb)));
		jw_ku64(w, "opcode", f->opcode);
		jw_ki64(w, "fd", f->fd);
		jw_kbool(w, "fixed_file", f->fixed_file);
		jw_key(w, "fd_target");
		if (*f->fd_what)
			jw_str(w, text_sanitize(f->fd_what, strnlen(f->fd_what, sizeof(f->fd_what)), 0,
						  what, sizeof(what)));
		else
			jw_null(w);
		jw_ku64(w, "pid", f->pid);
		jw_key(w, "task");
		if (f->linked)
			jw_u64(w, f->task_key);
		else
			jw_null(w);
		j_ur_site(w, f->site, f->linked);
		jw_ki64(w, "submitted_at_ns", (int64_t)(f->submit_ts - m->start_ns));
		jw_ku64(w, "age_ns", now > f->submit_ts ? now - f->submit_ts : 0);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_ku64(w, "in_flight_omitted", n > HTML_UR_INFLIGHT ? n - HTML_UR_INFLIGHT : 0);
	jw_obj_end(w);
}

/* The vocabularies report.js names things with, so that it spells none itself: the finding
 * kinds by enum value (findings.def), the poll results by code (probes.def). */
static void j_vocab(struct jw *w)
{
	char buf[32];

	jw_key(w, "kinds");
	jw_arr_begin(w);
	for (int k = 0; k < AN_FINDING_KINDS; k++)
		jw_str(w, an_finding_name(k));
	jw_arr_end(w);
	jw_key(w, "poll_results");
	jw_arr_begin(w);
	for (unsigned c = 0; c < TET_POLL_CODES; c++)
		jw_str(w, report_poll_result(c, buf, sizeof(buf)));
	jw_arr_end(w);
}

static int data_json(FILE *out, const struct analyzer *a, const struct report_meta *m)
{
	const struct an_totals *t = an_totals(a);
	const struct an_opts *o = an_get_opts(a);
	const struct an_worker **workers;
	size_t nw;
	struct jw *w = jw_new(out, false);
	struct findex fx = { 0 };
	struct tasks_ctx tc = { 0 };
	const struct an_site *const *sites;
	size_t nsites = an_sites(a, &sites), npend = 0;
	uint64_t *pend_now = NULL;
	int ret = 0;

	if (!w)
		return -ENOMEM;
	workers = report_sorted_workers(a, &nw);
	for (size_t i = 0; i < nsites; i++)
		if (sites[i]->index >= npend)
			npend = sites[i]->index + 1;
	pend_now = calloc(npend ? npend : 1, sizeof(*pend_now));
	if (!workers || !pend_now || findex_build(&fx, a) || tasks_collect(&tc, a, &fx)) {
		free(workers);
		free(pend_now);
		free(fx.v);
		jw_finish(w);
		return -ENOMEM;
	}
	/* pending time of the tasks still pending at the end (not in the sites' histograms) */
	for (size_t i = 0; i < tc.n; i++)
		if (tc.v[i].state == AN_PENDING && tc.v[i].site < npend)
			pend_now[tc.v[i].site] += tc.v[i].pend_now;

	jw_obj_begin(w);
	jw_ku64(w, "v", 1);
	j_vocab(w);
	jw_key(w, "capture");
	jw_obj_begin(w);
	jw_kstr(w, "mode", m->mode);
	jw_ku64(w, "pid", m->pid > 0 ? (uint64_t)m->pid : 0);
	jw_kstr(w, "executable", m->executable ? m->executable : m->binary);
	report_json_started(w, m);
	jw_kstr(w, "ended_by", m->ended_by);
	jw_obj_end(w);
	if (m->flight)
		j_flight(w, m);
	jw_key(w, "thresholds");
	jw_obj_begin(w);
	report_json_thresholds(w, o, false);
	jw_obj_end(w);
	jw_key(w, "totals");
	jw_obj_begin(w);
	report_json_totals_head(w, t, m);
	jw_ku64(w, "tasks_seen", t->tasks_seen);
	jw_ku64(w, "tasks_live", t->tasks_live);
	jw_obj_end(w);
	jw_ku64(w, "bins_per_decade", BINS_PER_DECADE);
	jw_kstr(w, "task_key", by_header ? "header_ptr" : "task_id");
	j_findings(w, a, m);
	ret = j_sites(w, a, pend_now, npend);
	if (!ret)
		j_tasks(w, a, m, &tc);
	jw_key(w, "workers");
	jw_arr_begin(w);
	for (size_t i = 0; i < nw; i++) {
		jw_obj_begin(w);
		report_json_worker_counts(w, workers[i]);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	if (!ret)
		ret = j_timeline(w, a, m, workers, nw, &fx, &tc, npend);
	if (!ret && m->why)
		ret = j_why(w, m->why);
	j_uring(w, a, m);
	jw_obj_end(w);
	free(workers);
	free(fx.v);
	free(tc.v);
	free(pend_now);
	if (jw_finish(w) && !ret)
		ret = -EIO;
	return ret;
}

int report_html(FILE *out, const struct analyzer *a, const struct report_meta *m)
{
	int ret;

	bins_init();
	by_header = an_get_opts(a)->key_by_header;
	fputs(html_parts[0], out);
	summary(out, a, m);
	fputs(html_parts[1], out);
	findings_html(out, a, m);
	fputs(html_parts[2], out);
	ret = data_json(out, a, m);
	fputs(html_parts[3], out);
	if (fflush(out) || ferror(out))
		return ret ? ret : -EIO;
	return ret;
}
