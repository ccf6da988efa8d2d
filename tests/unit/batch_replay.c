// SPDX-License-Identifier: MIT
/*
 * batch_replay — feeds a dump of batched-capture ring records (TET_BATCH_DUMP=FILE
 * tokio-ebpf-trace …) through the decode stage (tracer/decode/batch.c) and the analyzer, on one core,
 * and reports the consumer's speed and what came out:
 *
 *   batch_replay DUMP [ROUNDS]   → one JSON line: events, ns_per_event, events_per_s, …
 *
 * The consumer's cost without the traced process competing for the CPU: `make bench` uses it
 * for "the consumer sustains N events/s on one core". Decoding is repeated ROUNDS times (3)
 * from a copy in memory; the fastest round is reported (ns_per_event, events_per_s: the
 * steady state, memory the earlier rounds touched reused as a running tracer reuses its own),
 * and the first round on its own (first_round_ns_per_event: memory touched for the first
 * time, as in a tracer's first seconds). Records are fed in place, as the ring hands them.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyzer.h"
#include "batch.h"

struct rec {
	uint32_t size, kind;
	const unsigned char *data;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int emit(void *ctx, const void *rec, size_t size)
{
	return an_event(ctx, rec, size);
}

int main(int argc, char **argv)
{
	FILE *f;
	unsigned char *buf = NULL;
	size_t len = 0, cap = 0, n = 0, ncap = 0;
	struct rec *recs = NULL;
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	uint64_t best = UINT64_MAX, first = 0, events = 0, batches = 0;
	const struct tb_stats *st = NULL;
	struct an_opts ao;

	/* what a round frees stays in the process for the next one: the first round pays the
	 * first touch of the decoder's queues and the analyzer's tables (a tracer pays it once,
	 * in its first seconds), the others run as a tracer does when it has been running */
	mallopt(M_MMAP_THRESHOLD, 1 << 30);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	if (argc < 2) {
		fprintf(stderr, "usage: batch_replay DUMP [ROUNDS]\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f) {
		fprintf(stderr, "batch_replay: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (;;) {
		size_t got;

		if (len + (1 << 20) > cap) {
			cap = cap ? cap * 2 : 1 << 24;
			buf = realloc(buf, cap);
			if (!buf)
				return 1;
		}
		got = fread(buf + len, 1, cap - len, f);
		if (!got)
			break;
		len += got;
	}
	fclose(f);
	for (size_t off = 0; off + 8 <= len;) {
		struct rec r;

		memcpy(&r.size, buf + off, 4);
		memcpy(&r.kind, buf + off + 4, 4);
		if (off + 8 + r.size > len) {
			fprintf(stderr, "batch_replay: %s: truncated record at offset %zu\n", argv[1], off);
			return 1;
		}
		r.data = buf + off + 8;
		off += 8 + r.size;
		if (n == ncap) {
			ncap = ncap ? ncap * 2 : 4096;
			recs = realloc(recs, ncap * sizeof(*recs));
			if (!recs)
				return 1;
		}
		recs[n++] = r;
	}
	/* each record 8-byte aligned (the dump packs them back to back), copied once, untimed */
	{
		size_t total = 0, at = 0;
		unsigned char *al;

		for (size_t i = 0; i < n; i++)
			total += (recs[i].size + 7) & ~(size_t)7;
		al = malloc(total ? total : 8);
		if (!al)
			return 1;
		for (size_t i = 0; i < n; i++) {
			memcpy(al + at, recs[i].data, recs[i].size);
			recs[i].data = al + at;
			at += (recs[i].size + 7) & ~(size_t)7;
		}
		free(buf);
		buf = al;
	}
	for (int round = 0; round < (rounds > 0 ? rounds : 1); round++) {
		struct tb_opts o = { 0 };
		struct analyzer *an;
		struct tb *b;
		uint64_t t0, t;

		an_opts_default(&ao);
		an = an_new(&ao);
		o.emit = emit;
		o.emit_ctx = an;
		/* no process to read quiet threads from: stop waiting for them after what the live
		 * tracer's sweeps take (30 ms) */
		o.max_delay_ns = 30000000ull;
		b = tb_new(&o);
		if (!an || !b)
			return 1;
		t0 = now_ns();
		for (size_t i = 0; i < n; i++) {
			const struct rec *r = &recs[i];

			if (r->kind == 1) {
				const struct tet_hdr *h = (const void *)r->data;

				tb_feed(b, r->data, r->size);
				if (++batches % 16 == 0)
					tb_advance(b, h->ts);
			} else if (r->kind == 2 && r->size == 16) {
				uint64_t pair[2];

				memcpy(pair, r->data, 16);
				tb_clock_pair(b, pair[0], pair[1]);
			} else if (r->kind == 3 && r->size == 8) {
				uint64_t start;

				memcpy(&start, r->data, 8);
				tb_set_start(b, start);
			}
		}
		tb_finish(b);
		an_finish(an, UINT64_MAX / 2);
		t = now_ns() - t0;
		if (t < best)
			best = t;
		if (!round)
			first = t;
		events = an_totals(an)->events;
		st = tb_stats(b);
		if (round + 1 == rounds || rounds <= 1)
			printf("{\"records\":%zu,\"batches\":%llu,\"events\":%llu,\"ns_per_event\":%.1f,\"events_per_s\":%.0f,\"first_round_ns_per_event\":%.1f,\"late\":%llu,\"forced\":%llu,\"lost_batches\":%llu,\"polls\":%llu}\n",
			       n, (unsigned long long)st->batches, (unsigned long long)events,
			       (double)best / (double)(events ? events : 1),
			       events ? (double)events * 1e9 / (double)best : 0.0,
			       (double)first / (double)(events ? events : 1),
			       (unsigned long long)st->late, (unsigned long long)st->forced,
			       (unsigned long long)st->lost_batches,
			       (unsigned long long)an_totals(an)->polls);
		tb_free(b);
		an_free(an);
		batches = 0;
	}
	free(recs);
	free(buf);
	return 0;
}
