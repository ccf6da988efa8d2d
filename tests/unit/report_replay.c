// SPDX-License-Identifier: MIT
/*
 * report_replay — a recorded capture through the decode stage, the analyzer and the report
 * writers, with fixed metadata, so that the reports of one recording can be compared byte for
 * byte across changes of the code (tests/t_report_replay.sh):
 *
 *   report_replay batched DUMP.gz OUT    DUMP: TET_BATCH_DUMP=FILE tokio-ebpf-trace … (the
 *                                        batched ring's records, the clock pairs, the start)
 *   report_replay records DUMP.gz OUT    DUMP: TET_RECORD_DUMP=FILE tokio-ebpf-trace … (every
 *                                        record the capture handed to the analyzer)
 *
 * writes OUT.json, OUT.trace.json (Perfetto) and OUT.txt (the terminal summary). Both dumps are
 * records of (u32 size, u32 kind, size bytes), gzip-compressed or not. Exits 0, 1 (an
 * unreadable or malformed dump, a report not written) or 2 (usage).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "analyzer.h"
#include "batch.h"
#include "report.h"
#include "reporters.h"
#include "seterr.h"

#define MAX_REC (64u << 20)

struct replay {
	struct analyzer *an;
	struct tb *tb;
	uint64_t first_ts, last_ts, batches;
};

static int emit(void *ctx, const void *rec, size_t size)
{
	struct replay *r = ctx;
	const struct tet_hdr *h = rec;

	if (size >= sizeof(*h) && h->ts) {
		if (!r->first_ts || h->ts < r->first_ts)
			r->first_ts = h->ts;
		if (h->ts > r->last_ts)
			r->last_ts = h->ts;
	}
	return an_event(r->an, rec, size);
}

/* One record of the dump: 1 batch (batched) or record (records), 2 clock pair, 3 start. */
static void feed(struct replay *r, bool batched, uint32_t kind, void *p, uint32_t size)
{
	if (!batched) {
		emit(r, p, size);
	} else if (kind == 1 && size >= sizeof(struct tet_hdr)) {
		const struct tet_hdr *h = p;

		tb_feed(r->tb, p, size);
		if (++r->batches % 16 == 0)
			tb_advance(r->tb, h->ts);
	} else if (kind == 2 && size == 16) {
		uint64_t pair[2];

		memcpy(pair, p, 16);
		tb_clock_pair(r->tb, pair[0], pair[1]);
	} else if (kind == 3 && size == 8) {
		uint64_t start;

		memcpy(&start, p, 8);
		tb_set_start(r->tb, start);
	}
}

static int read_dump(struct replay *r, bool batched, const char *path)
{
	gzFile f = gzopen(path, "rb");
	void *p = NULL;
	int ret = 0;

	if (!f) {
		fprintf(stderr, "report_replay: %s: %s\n", path, strerror(errno ? errno : EIO));
		return 1;
	}
	for (;;) {
		uint32_t hdr[2];
		int got = gzread(f, hdr, sizeof(hdr));

		if (got == 0)
			break;
		if (got != (int)sizeof(hdr) || hdr[0] > MAX_REC || !(p = malloc(hdr[0] ? hdr[0] : 1)) ||
		    gzread(f, p, hdr[0]) != (int)hdr[0]) {
			fprintf(stderr, "report_replay: %s: truncated or malformed record\n", path);
			ret = 1;
			break;
		}
		feed(r, batched, hdr[1], p, hdr[0]);
		free(p);
		p = NULL;
	}
	free(p);
	gzclose(f);
	return ret;
}

static void say(void *ctx, enum tet_msg_level level, const char *msg)
{
	if (level != TET_MSG_INFO) /* "wrote FILE" lines name temporary paths: left out */
		fprintf(stderr, "report_replay: %s\n", msg);
}

static int write_reports(struct replay *r, bool batched, const char *out)
{
	static const struct tet_msgs msgs = { .say = say };
	struct report_meta m = { 0 };
	struct report_batch rb = { 0 };
	struct outputs outs = { 0 };
	char json[4096], trace[4096], txt[4096], err[1024];
	FILE *t;
	int ret;

	m.mode = "usdt";
	m.capture = batched ? "batched" : "per-event";
	m.sample_rate = 1;
	m.pid = 4242;
	m.executable = "/replay/sample-service";
	m.probes = (1u << TET_EV_COUNT) - 1;
	m.start_ns = r->first_ts;
	m.end_ns = r->last_ts + 1;
	m.wall_start.tv_sec = 1767225600; /* 2026-01-01T00:00:00Z */
	m.top = 10;
	m.ringbuf = 64u << 20;
	m.ended_by = "duration";
	if (batched) {
		rb.stats = tb_stats(r->tb);
		tb_totals(r->tb, rb.exact);
		rb.sites = 1;
		rb.sweeps = false;
		rb.why_no_sweeps = "a replay";
		m.batch = &rb;
	}
	snprintf(json, sizeof(json), "%s.json", out);
	snprintf(trace, sizeof(trace), "%s.trace.json", out);
	snprintf(txt, sizeof(txt), "%s.txt", out);
	outputs_add(&outs, json, OUT_JSON, NULL, 0);
	outputs_add(&outs, trace, OUT_PERFETTO, NULL, 0);
	if (outputs_open(&outs, err, sizeof(err))) {
		fprintf(stderr, "report_replay: %s\n", err);
		return 1;
	}
	ret = outputs_write(&outs, r->an, &m, &msgs) ? 1 : 0;
	outputs_abort(&outs);
	t = fopen(txt, "w");
	if (!t) {
		fprintf(stderr, "report_replay: %s: %s\n", txt, strerror(errno));
		return 1;
	}
	report_terminal(t, r->an, &m, true);
	return fclose(t) ? 1 : ret;
}

int main(int argc, char **argv)
{
	struct replay r = { 0 };
	struct tb_opts to = { 0 };
	struct an_opts ao;
	bool batched;
	int ret;

	if (argc != 4 || (strcmp(argv[1], "batched") && strcmp(argv[1], "records"))) {
		fprintf(stderr, "usage: report_replay batched|records DUMP OUT\n");
		return 2;
	}
	batched = !strcmp(argv[1], "batched");
	an_opts_default(&ao);
	ao.timeline_cap = 500000;
	ao.wait_events = true;
	ao.waker_events = true;
	r.an = an_new(&ao);
	to.emit = emit;
	to.emit_ctx = &r;
	/* no process to read quiet threads from: stop waiting for them after what the live
	 * tracer's sweeps take (30 ms) */
	to.max_delay_ns = 30000000ull;
	r.tb = batched ? tb_new(&to) : NULL;
	if (!r.an || (batched && !r.tb)) {
		fprintf(stderr, "report_replay: out of memory\n");
		return 1;
	}
	ret = read_dump(&r, batched, argv[2]);
	if (batched)
		tb_finish(r.tb);
	an_finish(r.an, r.last_ts + 1);
	if (!ret)
		ret = write_reports(&r, batched, argv[3]);
	tb_free(r.tb);
	an_free(r.an);
	return ret;
}
