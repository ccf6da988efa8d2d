// SPDX-License-Identifier: MIT
/*
 * prom.c — --metrics-addr HOST:PORT: a Prometheus /metrics endpoint while tracing
 * (docs/reports.md lists the metrics).
 *
 * Threads: the analyzer belongs to the main thread (the ring-buffer drain loop). Once a
 * second that loop renders the exposition text into a new buffer (prom_update) and swaps it
 * in under a mutex; the server thread answers each scrape with a copy of the current buffer,
 * taken under the mutex and sent without it. A slow or stuck client therefore never holds
 * the lock and never delays the drain (sockets have 2 s timeouts, one client at a time).
 *
 * Labels: `site` is the spawn location (file:line:col) read from the traced process:
 * untrusted, so it is made valid UTF-8 (U+FFFD for invalid bytes and control characters),
 * cut at PROM_LABEL_MAX characters ("…"), and escaped as the text format requires (\\, \",
 * \n). Sites that share a label (one location, several future types) are one series.
 * Cardinality is bounded: the first max_sites distinct labels, in order of first appearance,
 * get their own series — so a series never changes label — and every later site is counted
 * under site="(other)"; tasks spawned before the trace are under "(spawned before the trace)".
 *
 * Histograms use fixed `le` bounds (1µs … 60s); each of the analyzer's log-linear buckets
 * (relative width ≤ 1/32) is counted under the first bound at or above its upper end.
 *
 * io_uring (uring.h): once a ring of the target was seen, the tokio_io_uring_* families by
 * opcode (label op="READ", … or "opcode N"); nothing at all for a target without io_uring.
 * They are uring.c's global per-opcode figures, which move live: submissions and completions
 * (with their latency) as the records come, complete → poll as the task's poll begins. The
 * per-opcode in-flight count is only set at the end of the capture, so the gauge is
 * submitted − completed (a request beyond uring.c's tracking bound, UR_INFLIGHT_MAX, stays
 * counted in flight).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "reporters.h"
#include "text.h"
#include "units.h"
#include "uring.h"

#define PROM_LABEL_MAX 160
#define PROM_REQ_MAX   8192
#define PROM_WORKERS   64

static const uint64_t le_ns[] = {
	1000, 5000, 10000, 50000, 100000, 500000, 1000000, 5000000, 10000000, 50000000,
	100000000, 500000000, 1000000000, 5000000000ull, 10000000000ull, 60000000000ull,
};
static const char *const le_txt[] = {
	"1e-06", "5e-06", "1e-05", "5e-05", "0.0001", "0.0005", "0.001", "0.005", "0.01",
	"0.05", "0.1", "0.5", "1", "5", "10", "60",
};
#define NLE (sizeof(le_ns) / sizeof(le_ns[0]))

/* ---- labels ---- */
struct pgroup {
	char *label;                /* escaped, ready to print between quotes */
	uint64_t polls, busy_ns, wakes, spawns, live;
	uint64_t findings[AN_FINDING_KINDS];
	struct {
		uint64_t b[NLE], count, sum;
	} h[3];                     /* poll, sched, pending */
};

struct plabels {
	size_t max;                 /* labelled groups (besides the two pseudo ones) */
	int32_t *group_of;          /* by site index; -1 not assigned yet */
	size_t ngroup_of;
	struct pgroup *g;           /* [0] other, [1] spawned before the trace, then labels */
	size_t ng, cap;
};

enum { G_OTHER = 0, G_UNKNOWN = 1, G_FIRST = 2 };

/* Untrusted bytes → an escaped label value (malloc'd). */
static char *label_value(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	char *out = malloc(PROM_LABEL_MAX * 4 + 8), *o = out;
	size_t chars = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; chars++) {
		size_t l = utf8_seq_len(p + i, n - i, false);

		if (chars == PROM_LABEL_MAX) {
			memcpy(o, "\xe2\x80\xa6", 3);
			o += 3;
			break;
		}
		if (l == 1 && (p[i] < 0x20 || p[i] == 0x7f)) {
			if (p[i] == '\n') {
				memcpy(o, "\\n", 2), o += 2;
			} else {
				memcpy(o, "\xef\xbf\xbd", 3);
				o += 3;
			}
			i++;
		} else if (l == 1 && (p[i] == '\\' || p[i] == '"')) {
			*o++ = '\\';
			*o++ = (char)p[i++];
		} else if (l) {
			memcpy(o, p + i, l);
			o += l;
			i += l;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	*o = 0;
	return out;
}

static int group_new(struct plabels *L, char *label)
{
	if (L->ng == L->cap) {
		size_t cap = L->cap ? L->cap * 2 : 16;
		struct pgroup *g = realloc(L->g, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		L->g = g;
		L->cap = cap;
	}
	memset(&L->g[L->ng], 0, sizeof(L->g[0]));
	L->g[L->ng].label = label;
	return (int)L->ng++;
}

static int labels_init(struct plabels *L, size_t max)
{
	memset(L, 0, sizeof(*L));
	L->max = max;
	if (group_new(L, strdup("(other)")) < 0 || group_new(L, strdup("(spawned before the trace)")) < 0)
		return -ENOMEM;
	return L->g[0].label && L->g[1].label ? 0 : -ENOMEM;
}

static void labels_free(struct plabels *L)
{
	for (size_t i = 0; i < L->ng; i++)
		free(L->g[i].label);
	free(L->g);
	free(L->group_of);
	memset(L, 0, sizeof(*L));
}

/* The group of a label (taking ownership of it): an existing one, a new one while fewer than
 * L->max exist, else "(other)". Returns -ENOMEM when a new group cannot be made. */
static int assign_label(struct plabels *L, char *lab)
{
	int g;

	for (size_t i = G_FIRST; i < L->ng; i++)
		if (!strcmp(L->g[i].label, lab)) {
			free(lab);
			return (int)i;
		}
	if (L->ng - G_FIRST >= L->max) {
		free(lab);
		return G_OTHER;
	}
	g = group_new(L, lab);
	if (g < 0)
		free(lab);
	return g;
}

/* The group of a site: assigned once, on first sight, in order of appearance. */
static int group_of(struct plabels *L, const struct an_site *s)
{
	char *lab;
	int g;

	if (s->index >= L->ngroup_of) {
		size_t n = L->ngroup_of ? L->ngroup_of : 64;
		int32_t *v;

		while (n <= s->index)
			n *= 2;
		v = realloc(L->group_of, n * sizeof(*v));
		if (!v)
			return G_OTHER;
		for (size_t i = L->ngroup_of; i < n; i++)
			v[i] = -1;
		L->group_of = v;
		L->ngroup_of = n;
	}
	if (L->group_of[s->index] >= 0)
		return L->group_of[s->index];
	if (s->unknown) {
		g = G_UNKNOWN;
	} else if (s->other) {
		g = G_OTHER;
	} else if (s->typed) { /* uprobe fallback: the future type stands for the location */
		char *raw = malloc(s->type_len + 8);

		if (!raw)
			return G_OTHER; /* not remembered: tried again next time */
		memcpy(raw, "future ", 7);
		memcpy(raw + 7, s->type_name, s->type_len);
		lab = label_value(raw, s->type_len + 7);
		free(raw);
		g = lab ? assign_label(L, lab) : -ENOMEM;
	} else {
		lab = label_value(s->location, s->location_len);
		g = lab ? assign_label(L, lab) : -ENOMEM;
	}
	if (g < 0)
		return G_OTHER;
	L->group_of[s->index] = g;
	return g;
}

static void to_le(uint64_t lo, uint64_t hi, uint64_t count, void *ctx)
{
	uint64_t *b = ctx;

	(void)lo;
	for (size_t i = 0; i < NLE; i++)
		if (hi <= le_ns[i]) {
			b[i] += count;
			return;
		}
}

/* ---- exposition ---- */
static void head(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void secs(FILE *out, uint64_t ns)
{
	fprintf(out, "%llu.%09llu", (unsigned long long)(ns / NSEC_PER_SEC),
		(unsigned long long)(ns % NSEC_PER_SEC));
}

static void histogram(FILE *out, const struct plabels *L, int which, const char *name,
		      const char *help)
{
	head(out, name, "histogram", help);
	for (size_t g = 0; g < L->ng; g++) {
		const struct pgroup *p = &L->g[g];
		uint64_t cum = 0;

		if (!p->h[which].count && g < G_FIRST)
			continue;
		for (size_t i = 0; i < NLE; i++) {
			cum += p->h[which].b[i];
			if (cum > p->h[which].count)
				cum = p->h[which].count;
			fprintf(out, "%s_bucket{site=\"%s\",le=\"%s\"} %llu\n", name, p->label, le_txt[i],
				(unsigned long long)cum);
		}
		fprintf(out, "%s_bucket{site=\"%s\",le=\"+Inf\"} %llu\n", name, p->label,
			(unsigned long long)p->h[which].count);
		fprintf(out, "%s_sum{site=\"%s\"} ", name, p->label);
		secs(out, p->h[which].sum);
		fprintf(out, "\n%s_count{site=\"%s\"} %llu\n", name, p->label,
			(unsigned long long)p->h[which].count);
	}
}

static void per_site(FILE *out, const struct plabels *L, const char *name, const char *type,
		     const char *help, size_t field_off, bool seconds)
{
	head(out, name, type, help);
	for (size_t g = 0; g < L->ng; g++) {
		const struct pgroup *p = &L->g[g];
		uint64_t v = *(const uint64_t *)((const char *)p + field_off);

		if (g < G_FIRST && !p->polls && !p->spawns && !p->live && !p->wakes)
			continue;
		fprintf(out, "%s{site=\"%s\"} ", name, p->label);
		if (seconds)
			secs(out, v);
		else
			fprintf(out, "%llu", (unsigned long long)v);
		fputc('\n', out);
	}
}

/* ---- io_uring ---- */
static void ur_histogram(FILE *out, const struct ur_opstats *v, size_t n, size_t hist_off,
			 const char *name, const char *help)
{
	char nb[24];

	head(out, name, "histogram", help);
	for (size_t i = 0; i < n; i++) {
		const struct hist *h = (const struct hist *)((const char *)&v[i] + hist_off);
		const char *op = ur_opcode_str(v[i].opcode, nb, sizeof(nb));
		uint64_t b[NLE] = { 0 }, cum = 0;

		hist_for_each_bucket(h, to_le, b);
		for (size_t k = 0; k < NLE; k++) {
			cum += b[k];
			if (cum > h->count)
				cum = h->count;
			fprintf(out, "%s_bucket{op=\"%s\",le=\"%s\"} %llu\n", name, op, le_txt[k],
				(unsigned long long)cum);
		}
		fprintf(out, "%s_bucket{op=\"%s\",le=\"+Inf\"} %llu\n", name, op,
			(unsigned long long)h->count);
		fprintf(out, "%s_sum{op=\"%s\"} ", name, op);
		secs(out, h->sum);
		fprintf(out, "\n%s_count{op=\"%s\"} %llu\n", name, op, (unsigned long long)h->count);
	}
}

static void ur_counter(FILE *out, const struct ur_opstats *v, size_t n, size_t off,
		       const char *name, const char *type, const char *help)
{
	char nb[24];

	head(out, name, type, help);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s{op=\"%s\"} %llu\n", name, ur_opcode_str(v[i].opcode, nb, sizeof(nb)),
			(unsigned long long)*(const uint64_t *)((const char *)&v[i] + off));
}

static void uring_metrics(FILE *out, const struct analyzer *a)
{
	const struct ur *u = an_uring(a);
	const struct ur_opstats *v;
	size_t n;
	char nb[24];

	if (!ur_active(u))
		return;
	n = ur_opcodes(u, &v);
	head(out, "tokio_io_uring_rings", "gauge", "io_uring rings of the target seen.");
	fprintf(out, "tokio_io_uring_rings %llu\n", (unsigned long long)ur_totals(u)->rings);
	ur_counter(out, v, n, offsetof(struct ur_opstats, submitted),
		   "tokio_io_uring_requests_submitted_total", "counter",
		   "io_uring requests the kernel took from the target's rings, by opcode.");
	ur_counter(out, v, n, offsetof(struct ur_opstats, completed),
		   "tokio_io_uring_requests_completed_total", "counter",
		   "io_uring requests completed (of those submitted during the capture), by opcode.");
	ur_counter(out, v, n, offsetof(struct ur_opstats, errors),
		   "tokio_io_uring_request_errors_total", "counter",
		   "io_uring requests completed with an error (res < 0), by opcode.");
	head(out, "tokio_io_uring_requests_in_flight", "gauge",
	     "io_uring requests submitted and not completed yet, by opcode.");
	for (size_t i = 0; i < n; i++)
		fprintf(out, "tokio_io_uring_requests_in_flight{op=\"%s\"} %llu\n",
			ur_opcode_str(v[i].opcode, nb, sizeof(nb)),
			(unsigned long long)(v[i].submitted > v[i].completed ?
					     v[i].submitted - v[i].completed : 0));
	ur_histogram(out, v, n, offsetof(struct ur_opstats, lat_ns),
		     "tokio_io_uring_request_duration_seconds",
		     "io_uring request latency (the kernel's submission to its completion), by opcode.");
	ur_histogram(out, v, n, offsetof(struct ur_opstats, consume_ns),
		     "tokio_io_uring_complete_to_poll_seconds",
		     "Completion of an io_uring request to the next poll of the task that submitted it, by opcode.");
}

/* The sites' figures summed into their label groups (the counts recomputed from the analyzer) */
static void group_sites(struct plabels *L, const struct an_site *const *sites, size_t n)
{
	for (size_t g = 0; g < L->ng; g++) { /* counts are recomputed from the analyzer */
		char *lab = L->g[g].label;

		memset(&L->g[g], 0, sizeof(L->g[g]));
		L->g[g].label = lab;
	}
	for (size_t i = 0; i < n; i++) {
		const struct an_site *s = sites[i];
		int gi = group_of(L, s); /* may grow L->g: before taking its address */
		struct pgroup *p = &L->g[gi];
		const struct hist *h[3] = { &s->poll_ns, &s->sched_ns, &s->pending_ns };

		p->polls += s->polls;
		p->busy_ns += s->busy_ns;
		p->wakes += s->wakes;
		p->spawns += s->unknown ? 0 : s->tasks;
		p->live += s->tasks - s->tasks_terminated;
		for (int k = 0; k < AN_FINDING_KINDS; k++)
			p->findings[k] += s->findings[k];
		for (int k = 0; k < 3; k++) {
			p->h[k].count += h[k]->count;
			p->h[k].sum += h[k]->sum;
			hist_for_each_bucket(h[k], to_le, p->h[k].b);
		}
	}
}

/* Findings by detector, and by spawn site and detector */
static void findings_metrics(FILE *out, const struct analyzer *a, const struct plabels *L)
{
	const struct an_totals *t = an_totals(a);
	uint64_t per_kind[AN_FINDING_KINDS] = { 0 };
	const struct an_finding *f;
	size_t nf = an_findings(a, &f);

	for (size_t i = 0; i < nf; i++)
		if ((unsigned)f[i].kind < AN_FINDING_KINDS)
			per_kind[f[i].kind]++;
	head(out, "tokio_trace_findings_total", "counter",
	     "Findings by detector (each task is reported once per kind).");
	for (int k = 0; k < AN_FINDING_KINDS; k++)
		fprintf(out, "tokio_trace_findings_total{kind=\"%s\"} %llu\n", an_finding_name(k),
			(unsigned long long)per_kind[k]);
	fprintf(out, "tokio_trace_findings_total{kind=\"omitted\"} %llu\n",
		(unsigned long long)t->findings_omitted);
	head(out, "tokio_trace_site_findings_total", "counter",
	     "Findings by spawn site and detector (sites with findings only).");
	for (size_t g = 0; g < L->ng; g++)
		for (int k = 0; k < AN_FINDING_KINDS; k++)
			if (L->g[g].findings[k])
				fprintf(out, "tokio_trace_site_findings_total{site=\"%s\",kind=\"%s\"} %llu\n",
					L->g[g].label, an_finding_name(k),
					(unsigned long long)L->g[g].findings[k]);
}

/* Polls, busy and parked time by worker (index beyond PROM_WORKERS: "other") */
static void worker_metrics(FILE *out, const struct analyzer *a)
{
	const struct an_worker *const *workers;
	uint64_t wbusy[PROM_WORKERS + 1] = { 0 }, wparked[PROM_WORKERS + 1] = { 0 };
	uint64_t wpolls[PROM_WORKERS + 1] = { 0 };
	bool wseen[PROM_WORKERS + 1] = { false };
	size_t nw = an_workers(a, &workers);

	for (size_t i = 0; i < nw; i++) {
		size_t k = workers[i]->index >= 0 && workers[i]->index < PROM_WORKERS ?
			   (size_t)workers[i]->index : PROM_WORKERS;

		wseen[k] = true;
		wbusy[k] += workers[i]->busy_ns;
		wparked[k] += workers[i]->parked_ns;
		wpolls[k] += workers[i]->polls;
	}
	head(out, "tokio_trace_worker_polls_total", "counter", "Polls run by each worker thread.");
	for (size_t k = 0; k <= PROM_WORKERS; k++)
		if (wseen[k]) {
			if (k < PROM_WORKERS)
				fprintf(out, "tokio_trace_worker_polls_total{worker=\"%zu\"} %llu\n", k,
					(unsigned long long)wpolls[k]);
			else
				fprintf(out, "tokio_trace_worker_polls_total{worker=\"other\"} %llu\n",
					(unsigned long long)wpolls[k]);
		}
	head(out, "tokio_trace_worker_busy_seconds_total", "counter",
	     "Time each worker thread spent inside polls.");
	for (size_t k = 0; k <= PROM_WORKERS; k++)
		if (wseen[k]) {
			if (k < PROM_WORKERS)
				fprintf(out, "tokio_trace_worker_busy_seconds_total{worker=\"%zu\"} ", k);
			else
				fputs("tokio_trace_worker_busy_seconds_total{worker=\"other\"} ", out);
			secs(out, wbusy[k]);
			fputc('\n', out);
		}
	head(out, "tokio_trace_worker_parked_seconds_total", "counter",
	     "Time each worker thread spent parked (completed parks).");
	for (size_t k = 0; k <= PROM_WORKERS; k++)
		if (wseen[k]) {
			if (k < PROM_WORKERS)
				fprintf(out, "tokio_trace_worker_parked_seconds_total{worker=\"%zu\"} ", k);
			else
				fputs("tokio_trace_worker_parked_seconds_total{worker=\"other\"} ", out);
			secs(out, wparked[k]);
			fputc('\n', out);
		}
}

void prom_remote_write_metrics(FILE *out, const struct rw_stats *w)
{
	if (!w)
		return;
	head(out, "tokio_trace_remote_write_pushes_total", "counter",
	     "Remote-write requests the receiver accepted.");
	fprintf(out, "tokio_trace_remote_write_pushes_total %llu\n", (unsigned long long)w->pushes);
	head(out, "tokio_trace_remote_write_samples_total", "counter",
	     "Samples in the accepted remote-write requests.");
	fprintf(out, "tokio_trace_remote_write_samples_total %llu\n", (unsigned long long)w->samples);
	head(out, "tokio_trace_remote_write_retries_total", "counter",
	     "Remote-write requests sent again after a connection error or a 5xx.");
	fprintf(out, "tokio_trace_remote_write_retries_total %llu\n", (unsigned long long)w->retries);
	head(out, "tokio_trace_remote_write_failures_total", "counter",
	     "Remote-write requests that failed, by kind (connection; server: 5xx; client: 4xx).");
	fprintf(out, "tokio_trace_remote_write_failures_total{kind=\"connection\"} %llu\n"
		"tokio_trace_remote_write_failures_total{kind=\"server\"} %llu\n"
		"tokio_trace_remote_write_failures_total{kind=\"client\"} %llu\n",
		(unsigned long long)w->fail_connection, (unsigned long long)w->fail_server,
		(unsigned long long)w->fail_client);
	head(out, "tokio_trace_remote_write_dropped_samples_total", "counter",
	     "Samples never delivered, by reason (queue_full, rejected: 4xx, at_exit).");
	fprintf(out, "tokio_trace_remote_write_dropped_samples_total{reason=\"queue_full\"} %llu\n"
		"tokio_trace_remote_write_dropped_samples_total{reason=\"rejected\"} %llu\n"
		"tokio_trace_remote_write_dropped_samples_total{reason=\"at_exit\"} %llu\n",
		(unsigned long long)w->dropped_queue, (unsigned long long)w->dropped_rejected,
		(unsigned long long)w->dropped_exit);
}

static int render(FILE *out, const struct analyzer *a, const struct report_meta *m,
		  struct plabels *L)
{
	const struct an_site *const *sites;
	size_t n = an_sites(a, &sites);
	const struct an_totals *t = an_totals(a);
	char *exe;

	group_sites(L, sites, n);

	head(out, "tokio_trace_info", "gauge",
	     "The tracer's capture: attach mode and traced executable (value 1).");
	exe = label_value(m->executable ? m->executable : m->binary ? m->binary : "",
			  strlen(m->executable ? m->executable : m->binary ? m->binary : ""));
	fprintf(out, "tokio_trace_info{mode=\"%s\",executable=\"%s\",pid=\"%d\"} 1\n",
		m->mode ? m->mode : "", exe ? exe : "", m->pid);
	free(exe);
	head(out, "tokio_trace_capture_seconds", "gauge", "Time since the probes were attached.");
	fputs("tokio_trace_capture_seconds ", out);
	secs(out, m->end_ns > m->start_ns ? m->end_ns - m->start_ns : 0);
	fputc('\n', out);

	head(out, "tokio_trace_probe_hits_total", "counter",
	     "Probe hits that passed the PID filter, counted in BPF (events analyzed + dropped).");
	for (unsigned i = 0; i < TET_EV_COUNT; i++)
		if (m->probes & (1u << i))
			fprintf(out, "tokio_trace_probe_hits_total{probe=\"%s\"} %llu\n", an_event_name(i),
				(unsigned long long)m->counters.seen[i]);
	head(out, "tokio_trace_events_dropped_total", "counter",
	     "Events lost because the BPF ring buffer was full.");
	for (unsigned i = 0; i < TET_EV_COUNT; i++)
		if (m->probes & (1u << i))
			fprintf(out, "tokio_trace_events_dropped_total{probe=\"%s\"} %llu\n",
				an_event_name(i), (unsigned long long)m->counters.drops[i]);
	head(out, "tokio_trace_events_analyzed_total", "counter",
	     "Ring-buffer records analyzed.");
	fprintf(out, "tokio_trace_events_analyzed_total %llu\n", (unsigned long long)t->events);
	head(out, "tokio_trace_sample_rate", "gauge",
	     "One task in this many is traced (batched capture, --sample-rate); per-site figures come from them.");
	fprintf(out, "tokio_trace_sample_rate %u\n", m->sample_rate ? m->sample_rate : 1);
	head(out, "tokio_trace_tasks_polls_total", "counter",
	     "Polls begun, every task (exact also when sampled).");
	fprintf(out, "tokio_trace_tasks_polls_total %llu\n",
		(unsigned long long)report_total(m, t, TET_EV_POLL_BEGIN));

	per_site(out, L, "tokio_trace_polls_total", "counter", "Polls begun, by spawn site.",
		 offsetof(struct pgroup, polls), false);
	per_site(out, L, "tokio_trace_wakes_total", "counter", "Wakes of the site's tasks.",
		 offsetof(struct pgroup, wakes), false);
	per_site(out, L, "tokio_trace_spawns_total", "counter",
		 "Tasks spawned during the capture, by spawn site.", offsetof(struct pgroup, spawns),
		 false);
	per_site(out, L, "tokio_trace_busy_seconds_total", "counter",
		 "Time spent inside polls, by spawn site.", offsetof(struct pgroup, busy_ns), true);
	per_site(out, L, "tokio_trace_tasks_live", "gauge", "Tasks alive now, by spawn site.",
		 offsetof(struct pgroup, live), false);
	histogram(out, L, 0, "tokio_trace_poll_duration_seconds",
		  "Poll durations (poll begin to poll end), by spawn site.");
	histogram(out, L, 1, "tokio_trace_scheduling_delay_seconds",
		  "Scheduling delays (runnable to the next poll begin), by spawn site.");
	histogram(out, L, 2, "tokio_trace_pending_seconds",
		  "Pending times (a poll returned Pending to the wake), by spawn site.");
	findings_metrics(out, a, L);
	worker_metrics(out, a);
	head(out, "tokio_trace_spawn_sites", "gauge",
	     "Spawn sites seen (each beyond the label limit is counted under site=\"(other)\").");
	fprintf(out, "tokio_trace_spawn_sites %zu\n", n);
	head(out, "tokio_trace_site_label_limit", "gauge",
	     "Distinct site labels allowed (--metrics-sites).");
	fprintf(out, "tokio_trace_site_label_limit %zu\n", L->max);
	uring_metrics(out, a);
	prom_remote_write_metrics(out, m->remote_write);
	return fflush(out) || ferror(out) ? -EIO : 0;
}

int prom_render(FILE *out, const struct analyzer *a, const struct report_meta *m,
		size_t max_sites)
{
	struct plabels L;
	int ret = labels_init(&L, max_sites);

	if (!ret)
		ret = render(out, a, m, &L);
	labels_free(&L);
	return ret;
}

/* ---- the same figures for another sender (remote_write.c) ---- */
struct prom_labels {
	struct plabels L;
};

struct prom_labels *prom_labels_new(size_t max_sites)
{
	struct prom_labels *p = calloc(1, sizeof(*p));

	if (p && labels_init(&p->L, max_sites)) {
		labels_free(&p->L);
		free(p);
		return NULL;
	}
	return p;
}

void prom_labels_free(struct prom_labels *p)
{
	if (!p)
		return;
	labels_free(&p->L);
	free(p);
}

int prom_render_labels(FILE *out, const struct analyzer *a, const struct report_meta *m,
		       struct prom_labels *p)
{
	return render(out, a, m, &p->L);
}

char *prom_label_value(const char *s, size_t n)
{
	return label_value(s, n);
}

/* ---- address ---- */
/* Splits ADDR into host and port (host "" when none is given). */
static bool split_addr(const char *addr, char *host, size_t hlen, char *port, size_t plen,
		       char *err, size_t errlen)
{
	const char *colon, *p;
	size_t hl;
	char *end;
	unsigned long v;

	if (!*addr) {
		snprintf(err, errlen, "empty address (expected HOST:PORT)");
		return false;
	}
	if (addr[0] == '[') {
		const char *rb = strchr(addr, ']');

		if (!rb || rb[1] != ':') {
			snprintf(err, errlen, "'%s': expected [IPV6]:PORT", addr);
			return false;
		}
		hl = (size_t)(rb - addr - 1);
		p = rb + 2;
		addr++;
	} else if (!strchr(addr, ':')) {
		if (strspn(addr, "0123456789") != strlen(addr)) {
			snprintf(err, errlen, "'%s': expected HOST:PORT, [IPV6]:PORT or PORT", addr);
			return false;
		}
		hl = 0;
		p = addr;
	} else {
		colon = strrchr(addr, ':');
		if (strchr(addr, ':') != colon) {
			snprintf(err, errlen, "'%s': write IPv6 addresses in brackets, [::1]:PORT", addr);
			return false;
		}
		hl = (size_t)(colon - addr);
		p = colon + 1;
	}
	if (hl >= hlen) {
		snprintf(err, errlen, "'%s': host name too long", addr);
		return false;
	}
	memcpy(host, addr, hl);
	host[hl] = 0;
	errno = 0;
	v = *p >= '0' && *p <= '9' ? strtoul(p, &end, 10) : 0;
	if (!(*p >= '0' && *p <= '9') || *end || errno || v > 65535) {
		snprintf(err, errlen, "'%s': expected a port number 0-65535 after the host", p);
		return false;
	}
	snprintf(port, plen, "%lu", v);
	return true;
}

bool prom_addr_valid(const char *addr, char *err, size_t errlen)
{
	char host[256], port[8];

	return split_addr(addr, host, sizeof(host), port, sizeof(port), err, errlen);
}

/* ---- server ---- */
struct prom_server {
	int lfd;
	int stop[2];
	pthread_t thread;
	bool running;
	pthread_mutex_t mu;
	char *snap;
	size_t snap_len;
	struct plabels labels;      /* main thread only */
	char url[320];
};

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void respond(int fd, const char *status, const char *type, const char *body, size_t len,
		    bool head_only)
{
	char hdr[256];
	int n = snprintf(hdr, sizeof(hdr),
			 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			 status, type, len);

	send_all(fd, hdr, (size_t)n);
	if (!head_only)
		send_all(fd, body, len);
}

/* Answers the request in req[0, got) on fd (blocking from here on, 2 s send timeout: a client
 * that does not read its answer holds the server that long at most). */
static void answer(struct prom_server *ps, int fd, char *req, size_t got)
{
	struct timeval tv = { 2, 0 };
	char *sp, *path, *q;
	bool head;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	req[got] = 0;
	sp = strchr(req, ' ');
	if (!sp) {
		static const char msg[] = "bad request\n";

		respond(fd, "400 Bad Request", "text/plain; charset=utf-8", msg, sizeof(msg) - 1, false);
		return;
	}
	*sp = 0;
	path = sp + 1;
	sp = strpbrk(path, " \r\n");
	if (sp)
		*sp = 0;
	if ((q = strchr(path, '?')))
		*q = 0;
	head = !strcmp(req, "HEAD");
	if (strcmp(req, "GET") && !head) {
		static const char msg[] = "only GET and HEAD\n";

		respond(fd, "405 Method Not Allowed", "text/plain; charset=utf-8", msg, sizeof(msg) - 1,
			false);
	} else if (!strcmp(path, "/metrics")) {
		char *copy;
		size_t len;

		pthread_mutex_lock(&ps->mu);
		len = ps->snap_len;
		copy = malloc(len ? len : 1);
		if (copy && len)
			memcpy(copy, ps->snap, len);
		pthread_mutex_unlock(&ps->mu);
		if (!copy) {
			static const char msg[] = "out of memory\n";

			respond(fd, "503 Service Unavailable", "text/plain; charset=utf-8", msg,
				sizeof(msg) - 1, head);
			return;
		}
		respond(fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", copy, len, head);
		free(copy);
	} else if (!strcmp(path, "/")) {
		static const char msg[] = "tokio-ebpf-trace: Prometheus metrics at /metrics\n";

		respond(fd, "200 OK", "text/plain; charset=utf-8", msg, sizeof(msg) - 1, head);
	} else {
		static const char msg[] = "not found: the metrics are at /metrics\n";

		respond(fd, "404 Not Found", "text/plain; charset=utf-8", msg, sizeof(msg) - 1, head);
	}
}

/* A connection whose request is still coming in. Clients are served side by side: one that
 * connects and says nothing (a port scan, a stuck scraper) holds only its own slot, until its
 * PROM_REQ_TIMEOUT_MS run out; beyond PROM_CLIENTS at once, the oldest is dropped. */
#define PROM_CLIENTS 16
#define PROM_REQ_TIMEOUT_MS 2000

struct pclient {
	int fd;                     /* -1: free */
	size_t got;
	struct timespec since;
	char req[PROM_REQ_MAX + 1];
};

static long ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) * 1000 + (now.tv_nsec - t->tv_nsec) / 1000000;
}

static void pclient_close(struct pclient *c)
{
	shutdown(c->fd, SHUT_WR);
	close(c->fd);
	c->fd = -1;
}

/* Reads what the client sent; answers once the request is complete (a blank line), the buffer
 * full or the client done sending. */
static void pclient_read(struct prom_server *ps, struct pclient *c)
{
	for (;;) {
		ssize_t r = recv(c->fd, c->req + c->got, PROM_REQ_MAX - c->got, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r > 0) {
			c->got += (size_t)r;
			c->req[c->got] = 0;
			if (c->got < PROM_REQ_MAX && !strstr(c->req, "\r\n\r\n") &&
			    !strstr(c->req, "\n\n"))
				continue;
		}
		break;
	}
	c->req[c->got] = 0;
	answer(ps, c->fd, c->req, c->got);
	pclient_close(c);
}

static void *serve(void *p)
{
	struct prom_server *ps = p;
	struct pclient *cl = calloc(PROM_CLIENTS, sizeof(*cl));

	if (!cl)
		return NULL;
	for (int i = 0; i < PROM_CLIENTS; i++)
		cl[i].fd = -1;
	for (;;) {
		struct pollfd fds[2 + PROM_CLIENTS];
		int map[PROM_CLIENTS], n = 2, timeout = -1, fd;

		fds[0] = (struct pollfd){ ps->lfd, POLLIN, 0 };
		fds[1] = (struct pollfd){ ps->stop[0], POLLIN, 0 };
		for (int i = 0; i < PROM_CLIENTS; i++) {
			long left;

			if (cl[i].fd < 0)
				continue;
			left = PROM_REQ_TIMEOUT_MS - ms_since(&cl[i].since);
			if (left <= 0) { /* said nothing complete in time: answered with what it sent */
				answer(ps, cl[i].fd, cl[i].req, cl[i].got);
				pclient_close(&cl[i]);
				continue;
			}
			if (timeout < 0 || left < timeout)
				timeout = (int)left;
			map[n - 2] = i;
			fds[n++] = (struct pollfd){ cl[i].fd, POLLIN, 0 };
		}
		if (poll(fds, (nfds_t)n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (fds[1].revents)
			break;
		for (int k = 2; k < n; k++)
			if (fds[k].revents)
				pclient_read(ps, &cl[map[k - 2]]);
		if (!(fds[0].revents & POLLIN))
			continue;
		fd = accept4(ps->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			continue;
		{
			int slot = -1, oldest = -1;

			for (int i = 0; i < PROM_CLIENTS && slot < 0; i++)
				if (cl[i].fd < 0)
					slot = i;
				else if (oldest < 0 || ms_since(&cl[i].since) > ms_since(&cl[oldest].since))
					oldest = i;
			if (slot < 0) {
				pclient_close(&cl[oldest]);
				slot = oldest;
			}
			cl[slot].fd = fd;
			cl[slot].got = 0;
			cl[slot].req[0] = 0;
			clock_gettime(CLOCK_MONOTONIC, &cl[slot].since);
		}
	}
	for (int i = 0; i < PROM_CLIENTS; i++)
		if (cl[i].fd >= 0)
			close(cl[i].fd);
	free(cl);
	return NULL;
}

int prom_start(struct prom_server **out, const char *addr, size_t max_sites, char *err,
	       size_t errlen)
{
	struct addrinfo hints = { 0 }, *res = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[256], port[8], nhost[INET6_ADDRSTRLEN];
	struct prom_server *ps;
	int one = 1, rc, e;

	*out = NULL;
	if (!split_addr(addr, host, sizeof(host), port, sizeof(port), err, errlen))
		return -EINVAL;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG;
	rc = getaddrinfo(*host ? host : "127.0.0.1", port, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "--metrics-addr %s: cannot resolve '%s': %s", addr,
			 *host ? host : "127.0.0.1", gai_strerror(rc));
		return -EADDRNOTAVAIL;
	}
	ps = calloc(1, sizeof(*ps));
	if (!ps) {
		freeaddrinfo(res);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ps->lfd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
	if (ps->lfd < 0 ||
	    setsockopt(ps->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ps->lfd, res->ai_addr, res->ai_addrlen) || listen(ps->lfd, 16) ||
	    getsockname(ps->lfd, (struct sockaddr *)&ss, &sl)) {
		e = errno;
		snprintf(err, errlen, "--metrics-addr %s: cannot listen: %s", addr, strerror(e));
		if (ps->lfd >= 0)
			close(ps->lfd);
		free(ps);
		freeaddrinfo(res);
		return -e;
	}
	freeaddrinfo(res);
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, nhost, sizeof(nhost));
		snprintf(ps->url, sizeof(ps->url), "http://[%s]:%u/metrics", nhost,
			 (unsigned)ntohs(s6->sin6_port));
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &s4->sin_addr, nhost, sizeof(nhost));
		snprintf(ps->url, sizeof(ps->url), "http://%s:%u/metrics", nhost,
			 (unsigned)ntohs(s4->sin_port));
	}
	pthread_mutex_init(&ps->mu, NULL);
	if (labels_init(&ps->labels, max_sites) || pipe2(ps->stop, O_CLOEXEC)) {
		snprintf(err, errlen, "--metrics-addr: out of resources");
		labels_free(&ps->labels);
		close(ps->lfd);
		free(ps);
		return -ENOMEM;
	}
	rc = pthread_create(&ps->thread, NULL, serve, ps);
	if (rc) {
		snprintf(err, errlen, "--metrics-addr: cannot start the server thread: %s", strerror(rc));
		close(ps->stop[0]);
		close(ps->stop[1]);
		labels_free(&ps->labels);
		close(ps->lfd);
		free(ps);
		return -rc;
	}
	ps->running = true;
	*out = ps;
	return 0;
}

const char *prom_url(const struct prom_server *ps)
{
	return ps->url;
}

int prom_update(struct prom_server *ps, const struct analyzer *a, const struct report_meta *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int ret;

	if (!f)
		return -ENOMEM;
	ret = render(f, a, m, &ps->labels);
	if (fclose(f) && !ret)
		ret = -EIO;
	if (ret) {
		free(buf);
		return ret;
	}
	prom_publish(ps, buf, len);
	return 0;
}

void prom_publish(struct prom_server *ps, char *buf, size_t len)
{
	char *old;

	pthread_mutex_lock(&ps->mu);
	old = ps->snap;
	ps->snap = buf;
	ps->snap_len = len;
	pthread_mutex_unlock(&ps->mu);
	free(old);
}

void prom_stop(struct prom_server *ps)
{
	if (!ps)
		return;
	if (ps->running) {
		ssize_t w;

		do
			w = write(ps->stop[1], "x", 1);
		while (w < 0 && errno == EINTR);
		pthread_join(ps->thread, NULL);
	}
	close(ps->stop[0]);
	close(ps->stop[1]);
	close(ps->lfd);
	pthread_mutex_destroy(&ps->mu);
	labels_free(&ps->labels);
	free(ps->snap);
	free(ps);
}
