// SPDX-License-Identifier: MIT
/*
 * sampling_html.c — report.html of `trace --mode sampling` (docs/sampling-mode.md "report.html"):
 * one static page, no script (its Content-Security-Policy allows none, and its inline style
 * only), from the analysis's model and the run's facts: how the mode traced (no uprobe, the task
 * id slot, the rate) and what it cannot see, the future types by CPU samples with their hottest
 * frames, the long_poll findings, the threads, and the worker heat map as a coloured grid.
 *
 * Every string from the traced process or its binary (type and frame names, the executable's
 * path, thread names) is made printable (text_sanitize: control and invalid bytes as \xNN) and
 * then HTML-escaped (& < > " '): a type name holding "<script>" shows as text. Sizes are
 * bounded: the busiest SH_TYPES types, the first SH_FINDINGS findings of each kind; the rest is
 * counted on the page and is in the JSON report.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report.h"
#include "sampling_report.h"
#include "seterr.h"
#include "text.h"

#define SH_TYPES    200    /* future types listed (the most samples) */
#define SH_FRAMES   5      /* hottest frames per type */
#define SH_FINDINGS 500    /* findings listed, each kind */

static void esc(FILE *out, const char *s)
{
	text_html_esc(out, s);
}

/* An untrusted name (NULL: dflt), its first SR_NAME_MAX bytes made printable, then escaped. */
static void name(FILE *out, const char *p, const char *dflt)
{
	char buf[4 * SR_NAME_MAX + 8];

	if (!p || !*p) {
		esc(out, dflt);
		return;
	}
	esc(out, text_sanitize(p, strnlen(p, SR_NAME_MAX), 0, buf, sizeof(buf)));
}

/* A thread's name (its comm, untrusted, SA_COMM bytes at most) */
static void comm(FILE *out, const struct sa_heat_row *r)
{
	char buf[4 * (SA_COMM + 1) + 8];

	if (!r || !r->name[0])
		fputc('?', out);
	else
		esc(out, text_sanitize(r->name, strnlen(r->name, sizeof(r->name)), 0, buf, sizeof(buf)));
}

static const char style[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}"
	"h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}"
	"table{border-collapse:collapse;margin:.4em 0}td,th{padding:2px 8px;text-align:left;vertical-align:top}"
	"tr:nth-child(even) td{background:#f6f6f6}td.n,th.n{text-align:right;white-space:nowrap}"
	"code,.name{font-family:ui-monospace,monospace;word-break:break-all}"
	".facts th{font-weight:normal;color:#555}"
	"table.heat{border-spacing:0}table.heat td{padding:0;width:9px;height:18px;border-right:1px solid #fff}"
	"table.heat th{font-weight:normal;white-space:nowrap;padding-right:10px}"
	".key span{display:inline-block;width:14px;height:12px;margin:0 4px 0 12px;vertical-align:middle;border:1px solid #999}"
	"p.note{color:#555;max-width:70em}"
	"p.flight{border-left:4px solid #c0392b;background:#fdecea;padding:6px 10px}";

static void fact(FILE *out, const char *k, const char *fmt, unsigned long long v)
{
	fprintf(out, "<tr><th>%s</th><td>", k);
	fprintf(out, fmt, v);
	fputs("</td></tr>\n", out);
}

static void facts(FILE *out, const struct sa_model *o, const struct sampling_meta *mt)
{
	fputs("<section id=\"mode\"><h2>How this was traced</h2>\n<table class=\"facts\">\n", out);
	fputs("<tr><th>mode</th><td>sampling: a cpu-clock perf event per CPU samples the target's threads, "
	      "the sched_switch / sched_wakeup tracepoints see them sleep; <b>no uprobe</b> (uprobes: 0)</td></tr>\n", out);
	fputs("<tr><th>executable</th><td class=\"name\">", out);
	name(out, mt->exe, "(unknown)");
	fputs("</td></tr>\n", out);
	fprintf(out, "<tr><th>task id slot</th><td>method <code>");
	esc(out, mt->slot_method ? mt->slot_method : "?");
	fputs("</code>, layout <code>", out);
	esc(out, mt->slot_layout ? mt->slot_layout : "?");
	fprintf(out, "</code>, id at the thread pointer %+lld", (long long)mt->id_off);
	if (mt->tagged)
		fprintf(out, ", tag at %+lld", (long long)mt->tag_off);
	fputs("</td></tr>\n", out);
	fprintf(out, "<tr><th>rate</th><td>%u Hz (a sample every %.2f ms of CPU time)</td></tr>\n",
		mt->profile_hz, (double)o->period_ns / 1e6);
	fprintf(out, "<tr><th>duration</th><td>%.2f s</td></tr>\n", (double)mt->duration_ns / 1e9);
	fact(out, "perf events", "%llu", mt->perf_events);
	fprintf(out, "<tr><th>sched tracepoints</th><td>%s</td></tr>\n", mt->sched_tracepoints ? "on" : "off");
	fprintf(out, "<tr><th>poll frames</th><td>%s</td></tr>\n", mt->stack_scan ?
		"no frame pointers: from the scan of each stack's words for return addresses" :
		"from the frame-pointer walk");
	fact(out, "samples", "%llu", mt->samples);
	fact(out, "… in async polls' bodies", "%llu", o->in_poll);
	fact(out, "… in a poll frame outside its body (charged to nothing)", "%llu", o->outside_body);
	fact(out, "… an id but no poll frame", "%llu", o->no_poll_frame);
	fact(out, "sleeps recorded", "%llu", mt->sleeps);
	fact(out, "samples / sleeps lost (ring full)", "%llu", mt->sample_drops + mt->sleep_drops);
	fact(out, "records over the memory bound / malformed", "%llu", mt->over_memory_bound + mt->malformed);
	fputs("</table>\n<h3>What this mode cannot see</h3>\n<ul id=\"not-seen\">\n", out);
	for (size_t i = 0; i < SR_NOT_SEEN; i++) {
		fputs("<li><code>", out);
		esc(out, sr_not_seen[i][0]);
		fputs("</code>: ", out);
		esc(out, sr_not_seen[i][1]);
		fputs("</li>\n", out);
	}
	fputs("</ul>\n<p class=\"note\">They are not in this report and are not shown as 0.</p></section>\n", out);
}

static const struct sa_model *cmp_m;

static int cmp_type(const void *a, const void *b)
{
	uint64_t x = cmp_m->types[*(const size_t *)a].samples, y = cmp_m->types[*(const size_t *)b].samples;

	return x > y ? -1 : x < y;
}

static int types(FILE *out, const struct sa_model *o)
{
	size_t *v = malloc((o->ntypes + 1) * sizeof(*v)), n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t t = 0; t < o->ntypes; t++)
		if (o->types[t].samples)
			v[n++] = t;
	cmp_m = o;
	qsort(v, n, sizeof(*v), cmp_type);
	fprintf(out, "<section id=\"types\"><h2>Future types by CPU samples</h2>\n"
		"<p class=\"note\">CPU time estimated as samples × the period (%.2f ms): cpu-clock samples fire only on CPU.</p>\n"
		"<table>\n<tr><th>future type</th><th class=\"n\">samples</th><th class=\"n\">CPU (est.)</th>"
		"<th class=\"n\">tasks</th><th>hottest frames (samples)</th></tr>\n", (double)o->period_ns / 1e6);
	for (size_t i = 0; i < n && i < SH_TYPES; i++) {
		const struct sa_type *ty = &o->types[v[i]];

		fputs("<tr><td class=\"name type\">", out);
		name(out, o->type_names[v[i]], "(unknown)");
		fprintf(out, "</td><td class=\"n\">%llu</td><td class=\"n\">%.1f ms</td><td class=\"n\">%zu</td><td><ol>",
			(unsigned long long)ty->samples, (double)(ty->samples * o->period_ns) / 1e6, ty->ntasks);
		for (size_t k = 0; k < ty->nhot && k < SH_FRAMES; k++) {
			fputs("<li><span class=\"name\">", out);
			name(out, ty->hot[k].key, "[unknown]");
			fprintf(out, "</span> (%llu)</li>", (unsigned long long)ty->hot[k].n);
		}
		fputs("</ol></td></tr>\n", out);
	}
	fputs("</table>\n", out);
	if (n > SH_TYPES)
		fprintf(out, "<p>… %zu more future types in the JSON report.</p>\n", n - SH_TYPES);
	if (!n)
		fputs("<p>No sample in an async poll.</p>\n", out);
	fputs("</section>\n", out);
	free(v);
	return 0;
}

static void findings(FILE *out, const struct sa_model *o)
{
	size_t ncpu = 0, nblk = 0;

	fputs("<section id=\"findings\"><h2>long_poll findings</h2>\n", out);
	for (size_t i = 0; i < o->nf; i++)
		if (o->f[i].blocked)
			nblk++;
		else
			ncpu++;
	fprintf(out, "<h3>On CPU (%zu)</h3>\n<p class=\"note\">n consecutive samples of one thread in one poll with no "
		"sleep between: the poll ran on CPU between (n-1) and (n+1) periods (%.2f ms each), bounded by the "
		"sample period.</p>\n", ncpu, (double)o->period_ns / 1e6);
	if (ncpu) {
		size_t k = 0;

		fputs("<table class=\"on-cpu\">\n<tr><th>future type</th><th class=\"n\">samples</th><th class=\"n\">on CPU</th>"
		      "<th class=\"n\">task</th><th class=\"n\">thread</th><th>hottest frame</th></tr>\n", out);
		for (size_t i = 0; i < o->nf && k < SH_FINDINGS; i++) {
			const struct sa_finding *f = &o->f[i];

			if (f->blocked)
				continue;
			k++;
			fputs("<tr><td class=\"name\">", out);
			name(out, sa_type_name(o, f->type), "(unknown)");
			fprintf(out, "</td><td class=\"n\">%llu</td><td class=\"n\">%.1f–%.1f ms</td><td class=\"n\">%llu</td>"
				"<td class=\"n\">%u</td><td class=\"name\">", (unsigned long long)f->n,
				(double)((f->n - 1) * o->period_ns) / 1e6, (double)((f->n + 1) * o->period_ns) / 1e6,
				(unsigned long long)f->task, f->tid);
			name(out, f->hot, "[unknown]");
			fputs("</td></tr>\n", out);
		}
		fputs("</table>\n", out);
		if (ncpu > SH_FINDINGS)
			fprintf(out, "<p>… %zu more in the JSON report.</p>\n", ncpu - SH_FINDINGS);
	}
	fprintf(out, "<h3>Blocked (%zu)</h3>\n<p class=\"note\">A sleep that began inside an async poll, measured "
		"exactly at the thread's switch out and back in (sched_switch); blocked: until the wake-up.</p>\n", nblk);
	if (nblk) {
		size_t k = 0;

		fputs("<table class=\"blocked\">\n<tr><th>future type</th><th class=\"n\">blocked</th><th class=\"n\">off CPU</th>"
		      "<th>system call</th><th>kernel frames</th><th>user frame</th><th class=\"n\">task</th><th class=\"n\">thread</th></tr>\n", out);
		for (size_t i = 0; i < o->nf && k < SH_FINDINGS; i++) {
			const struct sa_finding *f = &o->f[i];

			if (!f->blocked)
				continue;
			k++;
			fputs("<tr><td class=\"name\">", out);
			name(out, sa_type_name(o, f->type), "(unknown)");
			fprintf(out, "</td><td class=\"n\">%.1f ms</td><td class=\"n\">%.1f ms</td><td><code>",
				(double)f->blocked_ns / 1e6, (double)(f->last - f->first) / 1e6);
			esc(out, f->syscall ? f->syscall : "unknown");
			fputs("</code></td><td class=\"name\">", out);
			for (int j = 0; j < 3 && f->kframes[j][0]; j++) {
				char buf[4 * SA_KFRAME + 8];

				if (j)
					fputs(" ← ", out);
				esc(out, text_sanitize(f->kframes[j], strnlen(f->kframes[j], SA_KFRAME), 0, buf, sizeof(buf)));
			}
			fputs("</td><td class=\"name\">", out);
			name(out, f->hot, "[unknown]");
			fprintf(out, "</td><td class=\"n\">%llu</td><td class=\"n\">%u</td></tr>\n",
				(unsigned long long)f->task, f->tid);
		}
		fputs("</table>\n", out);
		if (nblk > SH_FINDINGS)
			fprintf(out, "<p>… %zu more in the JSON report.</p>\n", nblk - SH_FINDINGS);
	}
	if (o->refused.findings)
		fprintf(out, "<p>%llu findings not kept (the findings' cap).</p>\n", (unsigned long long)o->refused.findings);
	fputs("</section>\n", out);
}

static const struct sa_heat_row *heat_row(const struct sa_model *o, uint32_t tid)
{
	for (size_t i = 0; i < o->heat.nrows; i++)
		if (o->heat.rows[i].tid == tid)
			return &o->heat.rows[i];
	return NULL;
}

static void threads(FILE *out, const struct sa_model *o)
{
	fputs("<section id=\"threads\"><h2>Threads</h2>\n<table>\n<tr><th class=\"n\">tid</th><th>name</th>"
	      "<th class=\"n\">samples</th><th class=\"n\">in async polls</th><th class=\"n\">off CPU (recorded sleeps)</th></tr>\n", out);
	for (size_t i = 0; i < o->nthreads; i++) {
		const struct sa_heat_row *r = heat_row(o, o->threads[i].tid);

		fprintf(out, "<tr><td class=\"n\">%u</td><td class=\"name\">", o->threads[i].tid);
		comm(out, r);
		fprintf(out, "</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td><td class=\"n\">",
			(unsigned long long)o->threads[i].samples, (unsigned long long)o->threads[i].in_poll);
		if (r)
			fprintf(out, "%.1f ms", (double)r->off_ns / 1e6);
		fputs("</td></tr>\n", out);
	}
	fputs("</table>\n", out);
	if (o->refused.threads)
		fprintf(out, "<p>%llu threads not kept (the threads' cap).</p>\n", (unsigned long long)o->refused.threads);
	fputs("</section>\n", out);
}

/* A bucket's colour: white (not seen) mixed with blue (in async polls), orange (on CPU outside
 * them) and grey (off CPU) by their shares. */
static void cell(FILE *out, const struct sa_model *o, const struct sa_heat_row *r, size_t c)
{
	static const int col[3][3] = { { 31, 100, 190 }, { 245, 130, 20 }, { 150, 150, 150 } };
	const struct sa_heat *h = &o->heat;
	unsigned s[3];
	double rgb[3];

	sa_heat_share(h, o->period_ns, r, c, &s[0], &s[1], &s[2]);
	for (int k = 0; k < 3; k++) {
		rgb[k] = 255 * (1000 - s[0] - s[1] - s[2]) / 1000.0;
		for (int j = 0; j < 3; j++)
			rgb[k] += col[j][k] * s[j] / 1000.0;
	}
	fprintf(out, "<td style=\"background:#%02x%02x%02x\" title=\"%.2f s: in async polls %u%%, on CPU outside them %u%%, off CPU %u%%\"></td>",
		(unsigned)(rgb[0] + .5), (unsigned)(rgb[1] + .5), (unsigned)(rgb[2] + .5),
		(double)(c * h->width) / 1e9, (s[0] + 5) / 10, (s[1] + 5) / 10, (s[2] + 5) / 10);
}

static void heat(FILE *out, const struct sa_model *o)
{
	const struct sa_heat *h = &o->heat;

	fprintf(out, "<section id=\"heat\"><h2>Threads busy / idle over time</h2>\n"
		"<p class=\"note\">One row per thread, one column per %.0f ms (%zu columns over %.2f s). On CPU: samples × the "
		"period (%.2f ms), an estimate off by up to a period or two per column (cpu-clock samples fire only "
		"on CPU). Off CPU: the sleeps the sampler recorded, exact (none is recorded for a preemption or "
		"while the thread's task id slot is None). White: not seen.</p>\n"
		"<p class=\"key\"><span style=\"background:#1f64be\"></span>in async polls"
		"<span style=\"background:#f58214\"></span>on CPU outside polls"
		"<span style=\"background:#969696\"></span>off CPU (asleep)"
		"<span style=\"background:#ffffff\"></span>not seen</p>\n<table class=\"heat\">\n",
		(double)h->width / 1e6, h->ncols, (double)(h->to - h->from) / 1e9, (double)o->period_ns / 1e6);
	for (size_t i = 0; i < h->nrows; i++) {
		const struct sa_heat_row *r = &h->rows[i];

		fprintf(out, "<tr class=\"heat-row\" data-tid=\"%u\"><th class=\"name\">", r->tid);
		comm(out, r);
		fprintf(out, " %u</th>", r->tid);
		for (size_t c = 0; c < h->ncols; c++)
			cell(out, o, r, c);
		fputs("</tr>\n", out);
	}
	fputs("</table>\n", out);
	if (h->rows_refused)
		fprintf(out, "<p>%llu more threads past the heat map's cap.</p>\n", (unsigned long long)h->rows_refused);
	fputs("</section>\n", out);
}

int report_sampling_html(FILE *out, const struct sa_model *o, const struct sampling_meta *mt)
{
	int ret;

	fprintf(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
		"<title>tokio-ebpf-trace: sampling mode, pid %d</title>\n<style>%s</style>\n</head>\n<body>\n"
		"<h1>tokio-ebpf-trace: sampling mode, pid %d</h1>\n", mt->pid, style, mt->pid);
	if (mt->flight) { /* a dump: what fired it, worded as the other modes' page (printable) */
		struct report_meta rm = { .start_ns = mt->flight->from_ns, .flight = mt->flight };
		char line[2048];

		fputs("<p class=\"flight\" id=\"flight\"><b>Flight-recorder</b> ", out);
		esc(out, report_flight_line(&rm, line, sizeof(line)));
		fputs("</p>\n", out);
	}
	facts(out, o, mt);
	ret = types(out, o);
	findings(out, o);
	threads(out, o);
	heat(out, o);
	fputs("</body>\n</html>\n", out);
	return ret || ferror(out) ? -EIO : 0;
}

int report_sampling_write_html(const char *path, const struct sa_model *o,
			       const struct sampling_meta *mt, char *err, size_t len)
{
	return report_sampling_write_file(path, report_sampling_html, o, mt, err, len);
}
