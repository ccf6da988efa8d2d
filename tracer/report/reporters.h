/* SPDX-License-Identifier: MIT */
/*
 * reporters.h — the format writers (docs/reports.md), drawn from report.h's model:
 *   terminal.c  the terminal summary
 *   jsonreport.c the JSON report (docs/report-schema.md)
 *   folded.c    --stacks: folded CPU stacks
 *   pprof.c     --pprof: the CPU profile and off-CPU time as a gzipped pprof profile
 *   html.c      report.html: one self-contained file (styles, script and data inline)
 *   perfetto.c  a Chrome trace-event JSON file (Perfetto UI, chrome://tracing)
 *   prom.c      a Prometheus /metrics endpoint served while tracing
 *   remote_write.c the same figures pushed by Prometheus remote write (--remote-write)
 *   outputs.c   the report files of a capture: format by suffix, written atomically
 * The HTML and the trace are drawn from the analyzer's bounded timeline (an_timeline), which
 * the caller turns on (an_opts.timeline_cap) when they are wanted.
 */
#ifndef TET_REPORTERS_H
#define TET_REPORTERS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer.h"
#include "report.h"

/* ---- terminal.c ---- */
/* Full summary (final) or the short one printed every -i interval. */
void report_terminal(FILE *out, const struct analyzer *a, const struct report_meta *m,
		     bool final);

/* ---- jsonreport.c ---- */
/* The JSON report (docs/report-schema.md). Returns 0 or -EIO / -ENOMEM. */
int report_json(FILE *out, const struct analyzer *a, const struct report_meta *m);

/* ---- folded.c ---- */
/* --stacks FILE: the CPU samples as folded stacks, one line per distinct stack, root first:
 * "SITE;frame;…;frame COUNT" (flamegraph.pl, inferno, speedscope). Returns 0 or -EIO. */
int report_folded(FILE *out, const struct report_meta *m);
struct sp_profile;
/* --mode sampling's (analyze/sampprof.h): "TYPE;frame;…;frame COUNT", the future type first;
 * without frame pointers "TYPE;[no frame pointers: …];leaf frames". 0 or -EIO / -ENOMEM. */
int report_sampling_folded(FILE *out, const struct sp_profile *p);

/* ---- pprof.c ---- */
/* --pprof FILE: the CPU samples (the --stacks ones) and the polls' blocked time as a gzipped
 * pprof profile.proto, labelled per sample (spawn_site, future_type, task_name, worker,
 * long_poll, syscall; docs/reports.md). Returns 0 or -EIO / -ENOMEM. */
int report_pprof(FILE *out, const struct analyzer *a, const struct report_meta *m);
/* --mode sampling's: its CPU samples in async polls and sleeps inside polls, labelled
 * future_type, thread, long_poll, syscall (docs/sampling-mode.md). 0 or -EIO / -ENOMEM. */
int report_sampling_pprof(FILE *out, const struct sp_profile *p);

/* ---- html.c ---- */
/* Returns 0 or -EIO / -ENOMEM. */
int report_html(FILE *out, const struct analyzer *a, const struct report_meta *m);

/* ---- perfetto.c ---- */
struct perfetto_stats {
	uint64_t events;          /* trace events written */
	uint64_t polls, wakes, flows, parks;
	uint64_t kept, total;     /* timeline records kept / produced during the capture */
	uint64_t cut_before_ns;   /* records before this offset (from the capture start) were cut */
};
int report_perfetto(FILE *out, const struct analyzer *a, const struct report_meta *m,
		 struct perfetto_stats *st);
/* --mode sampling's: a track per thread, its on-CPU long_poll runs and the sleeps inside polls
 * as slices (perfetto.c). st->events only. 0 or -EIO / -ENOMEM. */
int report_sampling_perfetto(FILE *out, const struct sp_profile *p, struct perfetto_stats *st);

/* ---- prom.c ---- */
#define PROM_DEFAULT_SITES 50
struct prom_server;
struct tet_msgs;
/* Parses ADDR (HOST:PORT, [V6]:PORT, :PORT or PORT; no host = 127.0.0.1), binds, listens and
 * starts the serving thread. Returns 0, -EINVAL (unparseable: err says why), or another
 * negative errno (resolution, bind); err holds one line. */
int prom_start(struct prom_server **ps, const char *addr, size_t max_sites, char *err,
	       size_t errlen);
/* Syntax check only (for option parsing). */
bool prom_addr_valid(const char *addr, char *err, size_t errlen);
/* "http://127.0.0.1:9464/metrics" — the address actually bound (port 0 → the chosen one). */
const char *prom_url(const struct prom_server *ps);
/* Renders a new snapshot from the analyzer (main thread) and publishes it to the server. */
int prom_update(struct prom_server *ps, const struct analyzer *a, const struct report_meta *m);
/* Publishes an exposition text rendered elsewhere (--mode sampling: sampling_prom.c); takes
 * buf (malloc'd, len bytes). */
void prom_publish(struct prom_server *ps, char *buf, size_t len);
void prom_stop(struct prom_server *ps);
/* --remote-write's own families (as of the last push before this rendering; nothing when w is
 * NULL), for the other renderings (sampling_prom.c) too. */
void prom_remote_write_metrics(FILE *out, const struct rw_stats *w);
/* The exposition text itself (tests, the snapshot). Returns 0 or -EIO. */
int prom_render(FILE *out, const struct analyzer *a, const struct report_meta *m,
		size_t max_sites);

/* The text for another sender of the same figures (remote_write.c): site labels kept from
 * one rendering to the next, as the server does (a series never changes its label). */
struct prom_labels;
struct prom_labels *prom_labels_new(size_t max_sites);
void prom_labels_free(struct prom_labels *p);
int prom_render_labels(FILE *out, const struct analyzer *a, const struct report_meta *m,
		       struct prom_labels *p);
/* Untrusted bytes as a label value of the text format: valid UTF-8, cut at 160 characters,
 * escaped (\\, \", \n). malloc'd; NULL when out of memory. */
char *prom_label_value(const char *s, size_t n);

/* ---- remote_write.c: --remote-write URL (docs/reports.md) ---- */
#define RW_HEADERS_MAX 16
#define RW_DEFAULT_INTERVAL_NS (15 * 1000000000ull)
#define RW_FINAL_WAIT_NS (5 * 1000000000ull)
struct rw_opts {
	const char *url;
	uint64_t interval_ns;
	const char *headers[RW_HEADERS_MAX]; /* "Name: value", checked by rw_header_check */
	size_t nheaders;
	size_t max_sites;          /* --metrics-sites */
	const char *tokio_release; /* "1.53.2", or NULL: unknown (no label) */
};
struct rw;
/* Syntax checks for option parsing: an http:// or https:// URL with a host; a header
 * "Name: value" (a token, no line breaks; the tracer's own headers cannot be replaced). The
 * message never holds a header's value nor the URL's credentials. Return 0 or -EINVAL. */
int rw_url_check(const char *url, char *err, size_t len);
int rw_header_check(const char *h, char *err, size_t len);
/* Resolves the URL's host and starts the sender thread (nothing is sent before rw_push).
 * Warnings (the first failure of each kind, a return) go to msgs, from the sender thread.
 * Returns 0 or -errno with one line in err. */
int rw_start(struct rw **out, const struct rw_opts *o, const struct tet_msgs *msgs, char *err,
	     size_t len);
/* Main thread: renders the figures now and queues them (never waits for the network; a full
 * queue drops its oldest push, counted). */
int rw_push(struct rw *w, const struct analyzer *a, const struct report_meta *m);
/* The same for an exposition text rendered elsewhere (--mode sampling: sampling_prom.c): takes
 * text (malloc'd, len bytes; freed on error too). m gives the run's labels (the first push's). */
int rw_push_text(struct rw *w, char *text, size_t len, const struct report_meta *m);
/* After the final push (rw_push or rw_push_text): waits for the queue to empty, at most wait_ns
 * (a push in backoff is tried at once; after a failed attempt older pushes give way to the
 * final one); what is given up or left then is dropped and counted (dropped_exit). The sender
 * stops. */
void rw_finish(struct rw *w, uint64_t wait_ns);
void rw_get_stats(struct rw *w, struct rw_stats *st);
void rw_stop(struct rw *w);
/* Pure (the sender's encoder; tests): the exposition text [text, text + len) as a snappy-
 * compressed WriteRequest, one series a sample line, each with __name__, its labels and the
 * pairs of extra_pairs (text-format `a="x",b="y"`; a line's own label of that name wins; empty
 * values are no label), sorted by name, one sample at ts_ms. *out is malloc'd; *series the
 * series written (lines that are not samples are skipped). Returns 0 or -ENOMEM. */
int rw_encode(const char *text, size_t len, const char *extra_pairs, int64_t ts_ms, char **out,
	      size_t *outlen, uint64_t *series);

/* ---- outputs.c ---- */
enum out_format { OUT_JSON, OUT_HTML, OUT_PERFETTO, OUT_STACKS, OUT_PPROF };
#define OUT_MAX 8

struct out_file {
	const char *path;         /* as given; "-": stdout (JSON only) */
	enum out_format fmt;
	char *real;               /* the path written (symlinks resolved); set by outputs_open */
	bool stream;              /* a FIFO or a character device: written in place */
	FILE *fp;
	char *tmp;                /* while writing a regular file */
};

struct outputs {
	struct out_file v[OUT_MAX];
	size_t n;
};

/* The format of an --output FILE: .html/.htm → HTML, anything else → JSON. */
enum out_format out_format_of(const char *path);
const char *out_format_name(enum out_format f);
/* Adds a file; a usage error (too many, the same path twice, "-" for a non-JSON file)
 * returns -EINVAL, err saying which. */
int outputs_add(struct outputs *o, const char *path, enum out_format fmt, char *err, size_t len);
bool outputs_want(const struct outputs *o, enum out_format fmt);
bool outputs_stdout(const struct outputs *o);
/* Checks every path before tracing (what sits there, whether it can be written: see
 * outputs.c), creating nothing. Returns 0 or -errno, err naming the path as given and the
 * reason. */
int outputs_open(struct outputs *o, char *err, size_t len);
/* Writes each report — a regular file through a temporary renamed into place, a FIFO or a
 * character device as a stream — and tells msgs where (TET_MSG_INFO, one line per file).
 * A file that cannot be written leaves nothing behind; its error goes to msgs too
 * (TET_MSG_ERROR) and the others are still written. Returns 0 or -1 (some file failed). */
int outputs_write(struct outputs *o, const struct analyzer *a, const struct report_meta *m,
		  const struct tet_msgs *msgs);
/* As outputs_write, each file's report written by write(fp, its format, ctx) (another mode's
 * model: --mode sampling). Returns 0 or -1 (some file failed). */
int outputs_write_with(struct outputs *o, int (*write)(FILE *fp, enum out_format fmt, void *ctx),
		       void *ctx, const struct tet_msgs *msgs);
void outputs_abort(struct outputs *o);

#endif
