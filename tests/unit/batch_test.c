// SPDX-License-Identifier: MIT
/*
 * batch_test — unit tests of batched capture's decode stage (tracer/decode/batch.c) on synthetic
 * batches, laid out as probes-patch/PROBES.md "Batch format" says the patched Tokio writes
 * them: records become the per-event records the analyzer eats, in time order across threads;
 * a poll seen in progress gets its begin once; waker clones and drops land on the safe side of
 * their thread's stamps; batches of an earlier capture and records after the cutoff are left
 * out; sequence gaps, malformed batches and records are counted; spawn strings come from the
 * batch, else from the process, else count as missing; a sweep's records are not decoded twice;
 * a thread found gone is declared so only once the ring has been read past that moment; TSC
 * stamps convert through clock pairs. Prints "ok - …" / "not ok - …"; exits 1 on a failure.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"

#include "check.h"

/* ---- what the decoder emits ---- */
#define MAXEV 4096
struct got {
	uint32_t type, tid;
	uint64_t ts, id, a, b, cpu_wait;
	char file[TET_FILE_MAX + 1], type_name[TET_TYPE_MAX + 1];
	char name[TET_NAME_MAX + 1];
	uint64_t hdr;
};
static struct got ev[MAXEV];
static size_t nev;

static int emit(void *ctx, const void *rec, size_t size)
{
	const struct tet_hdr *h = rec;
	struct got *g = &ev[nev < MAXEV ? nev++ : MAXEV - 1];

	memset(g, 0, sizeof(*g));
	g->type = h->type;
	g->tid = h->tid;
	g->ts = h->ts;
	if (h->type == TET_EV_SPAWN && size >= sizeof(struct tet_spawn_rec)) {
		const struct tet_spawn_rec *r = rec;

		g->id = r->task_id;
		g->a = r->kind;
		memcpy(g->file, r->data, r->file_copied);
		memcpy(g->type_name, r->data + TET_FILE_MAX, r->type_copied);
	} else if (h->type == TET_EV_META && size >= sizeof(struct tet_meta_rec)) {
		const struct tet_meta_rec *r = rec;

		g->id = r->task_id;
		g->a = r->size;
		g->b = r->flags;
		memcpy(g->name, r->name, r->name_copied <= TET_NAME_MAX ? r->name_copied : 0);
	} else if (h->type == TET_REC_RATE && size >= sizeof(struct tet_rate_rec)) {
		const struct tet_rate_rec *r = rec;

		g->id = r->rate;
		g->a = r->why;
	} else {
		const struct tet_event_rec *r = rec;

		g->id = r->task_id;
		g->a = r->a;
		g->b = r->b;
		g->hdr = r->header_ptr;
		g->cpu_wait = r->cpu_wait;
	}
	return 0;
}

/* "type:id@ts" of every emitted event, for order checks */
static const char *trail_of(bool controls)
{
	static char buf[8192];
	size_t o = 0;

	buf[0] = 0;
	for (size_t i = 0; i < nev && o < sizeof(buf) - 64; i++) {
		if (!controls && (ev[i].type == TET_REC_RATE || ev[i].type == TET_REC_GAP))
			continue;
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%u:%llu@%llu", o ? " " : "",
				      ev[i].type, (unsigned long long)ev[i].id,
				      (unsigned long long)ev[i].ts);
	}
	return buf;
}

/* the events only (the tracer's own rate and gap records left out) */
static const char *trail(void)
{
	return trail_of(false);
}

/* ---- building batches ---- */
struct batch {
	uint32_t pid, tid;
	uint64_t buf;
	struct tet_batch_head h;
	uint64_t w[4096];
	size_t nw;
};

static void b_init(struct batch *b, uint32_t tid, uint64_t seq, uint64_t window, uint64_t flush)
{
	memset(b, 0, sizeof(*b));
	b->pid = 100;
	b->tid = tid;
	b->buf = 0x10000 * tid;
	b->h.magic = TET_BATCH_MAGIC;
	b->h.version = TET_BATCH_VERSION;
	b->h.head_bytes = sizeof(b->h);
	b->h.data_cap = TET_BATCH_DATA_MAX;
	b->h.tid = tid;
	b->h.seq = seq;
	b->h.clock = TET_BATCH_CLOCK_MONO; /* stamps in ns: no conversion */
	b->h.reason = TET_BATCH_REASON_FULL;
	b->h.open_max = TET_BATCH_OPEN_MAX;
	b->h.window_clock = window;
	b->h.flush_clock = flush;
	b->h.flush_ns = flush;
	b->h.rate = 1;
}

static uint64_t w0(unsigned kind, unsigned code, uint64_t payload)
{
	return (payload & ((1ull << 56) - 1)) | (uint64_t)kind << 56 | (uint64_t)code << 60;
}

static void put(struct batch *b, size_t n, ...)
{
	va_list ap;

	va_start(ap, n);
	for (size_t i = 0; i < n; i++)
		b->w[b->nw++] = va_arg(ap, uint64_t);
	va_end(ap);
}

static void poll_rec(struct batch *b, uint64_t id, uint64_t begin, uint64_t end, unsigned result,
		     int32_t worker, unsigned yields_now, unsigned yields_coop)
{
	put(b, 4, w0(TET_BREC_POLL, result, id), begin, end,
	    (uint64_t)(uint32_t)worker | (uint64_t)(yields_now | yields_coop << 16) << 32);
	b->h.counts[TET_EV_POLL_BEGIN]++;
	b->h.counts[TET_EV_POLL_END]++;
}

static void wake_rec(struct batch *b, uint64_t id, uint64_t ts)
{
	put(b, 2, w0(TET_BREC_WAKE, 0, id), ts);
	b->h.counts[TET_EV_WAKE]++;
}

/* The ring record of a batch; ts: when BPF saw the flush. */
static int feed(struct tb *t, struct batch *b, uint64_t ts)
{
	static unsigned char rec[sizeof(struct tet_batch_rec) + sizeof(struct tet_batch_head) +
				 sizeof(b->w)];
	struct tet_batch_rec *r = (void *)rec;

	b->h.len = (uint32_t)(b->nw * 8);
	memset(r, 0, sizeof(*r));
	r->h.ts = ts;
	r->h.type = TET_REC_BATCH;
	r->h.pid = b->pid;
	r->h.tid = b->tid;
	r->buf = b->buf;
	r->seq = b->h.seq;
	r->clock = b->h.flush_clock;
	r->mono_ns = b->h.flush_ns;
	r->len = b->h.len;
	r->copied = (uint32_t)(sizeof(b->h) + b->h.len);
	memcpy(r->data, &b->h, sizeof(b->h));
	memcpy(r->data + sizeof(b->h), b->w, b->h.len);
	return tb_feed(t, r, sizeof(*r) + r->copied);
}


/* ---- process memory for sweeps and strings ---- */
static unsigned char mem[1 << 17];     /* the fake process's memory at address 0x10000… */
static bool mem_gone, tid_alive = true;

static ssize_t read_mem(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	if (mem_gone)
		return -ESRCH;
	if (addr < 0x10000 || addr - 0x10000 + len > sizeof(mem))
		return -EIO;
	memcpy(buf, mem + (addr - 0x10000), len);
	return (ssize_t)len;
}

static bool with_alive;               /* the test's capture tells a gone thread */
static size_t reads_served;

/* The capture's side: the reads the decoder asks for, answered from mem. */
static void serve(struct tb *t, uint64_t now)
{
	struct tb_read rq;

	while (tb_next_read(t, now, &rq)) {
		ssize_t n;

		if (rq.kind == TB_READ_THREAD)
			n = !with_alive || tid_alive ? 0 : -ESRCH;
		else
			n = read_mem(rq.pid, rq.addr, rq.buf, rq.len);
		reads_served++;
		tb_read_done(t, n);
	}
}

/* tb_advance and tb_finish as the capture calls them: the reads first */
static void adv(struct tb *t, uint64_t now)
{
	serve(t, now);
	tb_advance(t, now);
}

static void fin(struct tb *t)
{
	serve(t, 0);
	tb_finish(t);
}

static struct tb *fresh(bool reads, bool alive)
{
	struct tb_opts o = { .emit = emit, .reads = reads, .start_ns = 1000 };

	nev = 0;
	with_alive = alive;
	return tb_new(&o);
}

/* writes a batch's head and records where read_mem finds thread 1's buffer (0x10000) */
static void to_mem(struct batch *b)
{
	b->h.len = (uint32_t)(b->nw * 8);
	memcpy(mem, &b->h, sizeof(b->h));
	memcpy(mem + sizeof(b->h), b->w, b->h.len);
}

/* ---- tests ---- */
static void test_poll(void)
{
	struct tb *t = fresh(false, false);
	struct batch b;

	/* intent: one poll record → begin, then end carrying the poll's yields (yield_now in bits
	 * 0-15, coop in 16-31); result 2 adds the notified yield after the end */
	b_init(&b, 1, 0, 2000, 9000);
	poll_rec(&b, 7, 3000, 4000, 0, 1, 2, 1);
	poll_rec(&b, 7, 5000, 6000, 2, 1, 0, 0);
	CHECK(feed(t, &b, 9000) == 0, "poll: a well-formed batch is accepted");
	fin(t);
	CHECK(!strcmp(trail(), "1:7@3000 2:7@4000 1:7@5000 2:7@6000 3:7@6000"),
	      "poll: begin, end, begin, end, notified yield (%s)", trail());
	CHECK_U64(ev[1].b, 2 | 1 << 16, "poll: the end carries 2 yield_now and 1 coop yield");
	CHECK_U64(ev[1].a, 0, "poll: result 0 (pending)");
	CHECK_U64(ev[4].a, 2, "poll: result 2 is followed by yield reason 2");
	CHECK_U64(tb_stats(t)->by_type[TET_EV_YIELD], 4, "poll: 4 yields counted");
	CHECK_U64((uint64_t)(int32_t)ev[0].a, 1, "poll: the worker index rides on the begin");
	CHECK_U64(tb_stats(t)->recorded[TET_EV_POLL_BEGIN], 2, "poll: the window's counts are kept");
	tb_free(t);
}

static void test_order(void)
{
	struct tb *t = fresh(false, false);
	struct batch a, c;

	/* intent: a wake on thread 1 at 3000 and the poll it causes on thread 2 at 3500 come out
	 * in time order, though thread 2 flushed first; nothing goes out before both threads are
	 * complete past it */
	b_init(&c, 2, 0, 2000, 5000);
	poll_rec(&c, 9, 3500, 3600, 1, 0, 0, 0);
	b_init(&a, 1, 0, 2000, 8000);
	wake_rec(&a, 9, 3000);
	feed(t, &c, 5000);
	adv(t, 5000);
	CHECK_U64(nev, 0, "order: thread 2's poll is held while thread 1 may still send earlier events");
	feed(t, &a, 8000);
	tb_ring_drained(t, 10000000);
	adv(t, 10000000);
	CHECK(!strcmp(trail(), "4:9@3000 1:9@3500 2:9@3600"), "order: wake, then begin and end (%s)", trail());
	CHECK_U64(tb_stats(t)->late, 0, "order: nothing late");
	tb_free(t);
}

static void test_open_poll(void)
{
	struct tb *t = fresh(false, false);
	struct batch b;

	/* intent: a poll listed in progress in a head gets its begin right away, once; its record
	 * later brings only the end */
	b_init(&b, 1, 0, 2000, 9000);
	b.h.depth = 1;
	b.h.open[0] = (struct tet_batch_open){ 42, 4000, 0 };
	feed(t, &b, 9000);
	b_init(&b, 1, 1, 9000, 12000);
	b.h.depth = 1;
	b.h.open[0] = (struct tet_batch_open){ 42, 4000, 0 };
	feed(t, &b, 12000);
	tb_ring_drained(t, 20000000);
	adv(t, 20000000);
	CHECK(!strcmp(trail(), "1:42@4000"), "open poll: its begin goes out while it runs (%s)", trail());
	b_init(&b, 1, 2, 12000, 15000);
	poll_rec(&b, 42, 4000, 14000, 1, 0, 0, 0);
	feed(t, &b, 15000);
	fin(t);
	CHECK(!strcmp(trail(), "1:42@4000 2:42@14000"), "open poll: its record adds only the end (%s)", trail());
	CHECK_U64(tb_stats(t)->open_polls_seen, 1, "open poll: counted once");
	tb_free(t);
}

static void test_waker_stamps(void)
{
	struct tb *t = fresh(false, false);
	struct batch b;

	/* intent: a clone takes the previous stamp of its thread (not before the window), a drop
	 * the next one, or the flush when none follows */
	b_init(&b, 1, 0, 2000, 9000);
	put(&b, 1, w0(TET_BREC_CLONE, 0, 5));     /* no stamp yet: the window's start */
	wake_rec(&b, 6, 3000);
	put(&b, 1, w0(TET_BREC_CLONE, 0, 5));     /* after the wake: 3000 */
	put(&b, 1, w0(TET_BREC_DROP, 0, 5));      /* before the next stamp: 4000 */
	wake_rec(&b, 6, 4000);
	put(&b, 1, w0(TET_BREC_DROP, 0, 5));      /* last: the flush, 9000 */
	feed(t, &b, 9000);
	fin(t);
	CHECK(!strcmp(trail(), "5:5@2000 4:6@3000 5:5@3000 6:5@4000 4:6@4000 6:5@9000"),
	      "waker stamps: clone ≤ its time ≤ drop (%s)", trail());
	tb_free(t);
}

static void test_window(void)
{
	struct tb *t = fresh(false, false);
	struct batch b;

	/* intent: a batch left by an earlier capture (stamped before the start, 1000) is left out
	 * with its counts; records after the cutoff too */
	b_init(&b, 1, 0, 100, 900);
	poll_rec(&b, 1, 200, 300, 0, 0, 0, 0);
	feed(t, &b, 5000);
	b_init(&b, 1, 1, 900, 9000);
	poll_rec(&b, 2, 2000, 2100, 0, 0, 0, 0);
	poll_rec(&b, 3, 7000, 7100, 0, 0, 0, 0);
	tb_set_cutoff(t, 5000);
	feed(t, &b, 9000);
	fin(t);
	CHECK(!strcmp(trail(), "1:2@2000 2:2@2100"), "window: only the capture's records (%s)", trail());
	CHECK_U64(tb_stats(t)->before_start, 2, "window: 2 events before the start");
	CHECK_U64(tb_stats(t)->after_cutoff, 2, "window: 2 events after the cutoff");
	CHECK_U64(tb_stats(t)->recorded[TET_EV_POLL_BEGIN], 2, "window: the earlier capture's counts are not kept");
	tb_free(t);
}

static void test_seq(void)
{
	struct tb *t = fresh(false, false);
	struct batch b;

	/* intent: a gap in a thread's sequence numbers is counted as lost batches; a batch seen
	 * again is ignored */
	b_init(&b, 1, 0, 2000, 3000);
	poll_rec(&b, 1, 2100, 2200, 0, 0, 0, 0);
	feed(t, &b, 3000);
	b_init(&b, 1, 3, 5000, 6000);
	poll_rec(&b, 2, 5100, 5200, 0, 0, 0, 0);
	feed(t, &b, 6000);
	feed(t, &b, 6000);
	fin(t);
	CHECK_U64(tb_stats(t)->lost_batches, 2, "seq: batches 1 and 2 lost");
	CHECK_U64(nev, 5, "seq: the duplicate adds nothing (4 events, 1 gap)");
	/* the gap: from the thread's last flush (3000) to the window of the batch after it (5000),
	 * delivered before the events after it (its from_ns in the id's place) */
	CHECK(!strcmp(trail_of(true), "1:1@2100 2:1@2200 73:3000@5000 1:2@5100 2:2@5200"),
	      "seq: one gap record, in time order (%s)", trail_of(true));
	CHECK_U64(tb_stats(t)->gaps, 1, "seq: counted");
	tb_free(t);
}

static void test_controls(void)
{
	struct tb *t = fresh(false, false);
	struct batch b;

	/* intent: a rate change goes out in time order with the events, after every event before
	 * it and before every event after it, whichever batch they came in; a first batch whose
	 * predecessor was flushed during the capture is a gap from the capture's start */
	tb_set_start(t, 1000);
	tb_rate(t, 1000, 1, TET_RATE_START);
	tb_rate(t, 4000, 8, TET_RATE_RING);
	b_init(&b, 1, 0, 2000, 3000);
	poll_rec(&b, 1, 2100, 2200, 0, 0, 0, 0);
	feed(t, &b, 3000);
	b_init(&b, 1, 1, 3000, 6000);
	poll_rec(&b, 2, 3500, 3600, 0, 0, 0, 0);
	poll_rec(&b, 3, 5100, 5200, 0, 0, 0, 0);
	feed(t, &b, 6000);
	b_init(&b, 2, 4, 2500, 7000);
	poll_rec(&b, 4, 6100, 6200, 0, 0, 0, 0);
	feed(t, &b, 7000);
	fin(t);
	CHECK(!strcmp(trail_of(true), "72:1@1000 1:1@2100 2:1@2200 73:1000@2500 1:2@3500 2:2@3600 72:8@4000 1:3@5100 2:3@5200 1:4@6100 2:4@6200"),
	      "controls: rates and the gap in time order (%s)", trail_of(true));
	CHECK(nev == 11 && ev[6].a == TET_RATE_RING, "controls: the rate's cause goes with it");
	tb_free(t);
}

static void test_malformed(void)
{
	struct tb *t = fresh(false, false);
	struct batch b;

	/* intent: a batch with a bad magic, version, tid, reason, open_max, data_cap or rate, or a
	 * length beyond what was copied is refused;
	 * a record running past the end, or of an unknown kind, stops its batch (counted) */
	b_init(&b, 1, 0, 2000, 3000);
	b.h.magic = 0;
	CHECK(feed(t, &b, 3000) == -EINVAL, "malformed: bad magic refused");
	b_init(&b, 1, 0, 2000, 3000);
	b.h.version = 9;
	CHECK(feed(t, &b, 3000) == -EINVAL, "malformed: unknown version refused");
	b_init(&b, 1, 0, 2000, 3000);
	b.h.tid = 99;
	CHECK(feed(t, &b, 3000) == -EINVAL, "malformed: head of another thread refused");
	b_init(&b, 1, 0, 2000, 3000);
	b.h.reason = TET_BATCH_REASONS;
	CHECK(feed(t, &b, 3000) == -EINVAL, "malformed: unknown reason refused");
	b_init(&b, 1, 0, 2000, 3000);
	b.h.open_max = 200;
	CHECK(feed(t, &b, 3000) == -EINVAL, "malformed: open_max not 8 refused");
	b_init(&b, 1, 0, 2000, 3000);
	b.h.data_cap = 1u << 30;
	CHECK(feed(t, &b, 3000) == -EINVAL, "malformed: data_cap over 32 KiB refused");
	b_init(&b, 1, 0, 2000, 3000);
	b.h.rate = 1ull << 40;
	CHECK(feed(t, &b, 3000) == -EINVAL, "malformed: rate over 65535 refused");
	CHECK_U64(tb_stats(t)->bad_batches, 7, "malformed: refusals counted");
	b_init(&b, 1, 0, 2000, 3000);
	poll_rec(&b, 1, 2100, 2200, 0, 0, 0, 0);
	put(&b, 1, w0(15, 0, 1));
	poll_rec(&b, 2, 2300, 2400, 0, 0, 0, 0);
	CHECK(feed(t, &b, 3000) == -EINVAL, "malformed: unknown record kind reported");
	put(&b, 2, w0(TET_BREC_POLL, 0, 3), 1);   /* cut short */
	CHECK_U64(tb_stats(t)->bad_records, 1, "malformed: the bad record counted");
	b_init(&b, 1, 1, 3000, 4000);
	put(&b, 2, w0(TET_BREC_POLL, 0, 3), 3100);
	CHECK(feed(t, &b, 4000) == -EINVAL, "malformed: a record past the end is reported");
	fin(t);
	CHECK(!strcmp(trail(), "1:1@2100 2:1@2200"), "malformed: records before the bad one kept (%s)", trail());
	tb_free(t);
}

static void test_strings(void)
{
	struct tb *t = fresh(true, false);
	struct batch b;
	const char file[] = "src/main.rs", type[] = "app::Handler";
	uint64_t fw[2] = { 0 }, tw[2] = { 0 };

	/* intent: a spawn's file comes from a STRING record of the batch; its type name, not sent,
	 * is read from the process; a third string nobody can give counts as missing */
	memcpy(fw, file, sizeof(file) - 1);
	memcpy(mem + 0x100, type, sizeof(type) - 1);
	b_init(&b, 1, 0, 2000, 9000);
	put(&b, 4, w0(TET_BREC_STRING, 0, sizeof(file) - 1), 0x7000ull, fw[0], fw[1]);
	put(&b, 7, w0(TET_BREC_SPAWN, 1, 77), 0xabcull, 3000ull, 0x7000ull,
	    (uint64_t)(sizeof(file) - 1) | 12ull << 32, 0x10100ull, (uint64_t)(sizeof(type) - 1) | 5ull << 32);
	put(&b, 7, w0(TET_BREC_SPAWN, 0, 78), 0xabdull, 3500ull, 0x99999999ull,
	    4ull | 1ull << 32, 0ull, 0ull);
	(void)tw;
	feed(t, &b, 9000);
	fin(t);
	CHECK_U64(nev, 2, "strings: two spawns");
	CHECK(!strcmp(ev[0].file, file), "strings: file from the batch (%s)", ev[0].file);
	CHECK(!strcmp(ev[0].type_name, type), "strings: type name read from the process (%s)", ev[0].type_name);
	CHECK_U64(ev[0].a, 1, "strings: spawn kind 1 kept");
	CHECK_U64(tb_stats(t)->strings_read, 1, "strings: one read from the process");
	CHECK_U64(tb_stats(t)->string_misses, 1, "strings: one missing");
	tb_free(t);
}

static void test_waits(void)
{
	struct tb *t = fresh(false, false);
	struct batch b;
	const char name[] = "conn-\xff-worker"; /* untrusted bytes pass through */
	uint64_t nw[2] = { 0 }; /* 13 bytes: 2 words */

	/* intent: wait records come before their poll's record; they go out inside that poll
	 * (after its begin, before its end), with kind, object and arg; a wait of an enclosing
	 * poll stays until that poll's record; a meta record follows its spawn, name bytes as
	 * sent; a meta claiming more than 128 name bytes is a bad record */
	memcpy(nw, name, sizeof(name) - 1);
	b_init(&b, 1, 0, 2000, 9000);
	put(&b, 7, w0(TET_BREC_SPAWN, 0, 5), 0xabcull, 2500ull, 0ull, 0ull, 0ull, 0ull);
	put(&b, 5, w0(TET_BREC_META, 3, 5), 20000ull, (uint64_t)(sizeof(name) - 1), nw[0], nw[1]);
	put(&b, 3, w0(TET_BREC_WAIT, 0, 9), 0x7000ull, 5000000ull);  /* the outer poll's */
	put(&b, 3, w0(TET_BREC_WAIT, 1, 5), 0x5500ull, 1ull);
	put(&b, 3, w0(TET_BREC_WAIT, 6, 5), 44ull, 0ull);
	poll_rec(&b, 5, 3000, 3200, 0, 0, 0, 0);
	poll_rec(&b, 9, 2800, 3500, 0, 0, 0, 0);
	feed(t, &b, 9000);
	fin(t);
	CHECK(!strcmp(trail(), "0:5@2500 11:5@2500 1:9@2800 1:5@3000 10:5@3199 10:5@3199 2:5@3200 10:9@3499 2:9@3500"),
	      "waits: inside their polls, meta after its spawn: %s", trail());
	CHECK(nev == 9 && ev[1].a == 20000 && ev[1].b == 3 && !strcmp(ev[1].name, name),
	      "waits: meta size 20000, flags 3, name bytes as sent");
	CHECK(nev == 9 && ev[4].a == 1 && ev[4].hdr == 0x5500 && ev[4].b == 1 &&
	      ev[5].a == 6 && ev[5].hdr == 44 && ev[7].a == 0 && ev[7].b == 5000000,
	      "waits: kind in a, object in header_ptr, arg in b");
	tb_free(t);

	/* intent: a waker clone inside its task's poll is placed at that poll's begin when the
	 * thread's previous stamp is older (the task was spawned elsewhere since: at the older
	 * stamp the clone would come before the spawn); a clone of another task's waker keeps
	 * the previous stamp */
	t = fresh(false, false);
	b_init(&b, 1, 0, 2000, 9000);
	wake_rec(&b, 7, 2200);
	put(&b, 1, w0(TET_BREC_CLONE, 0, 5));
	put(&b, 1, w0(TET_BREC_CLONE, 0, 8));
	poll_rec(&b, 5, 3000, 3200, 0, 0, 0, 0);
	feed(t, &b, 9000);
	fin(t);
	CHECK(!strcmp(trail(), "4:7@2200 5:8@2200 5:5@3000 1:5@3000 2:5@3200"),
	      "clones: inside its task's poll at the poll's begin: %s", trail());
	tb_free(t);

	t = fresh(false, false);
	b_init(&b, 1, 0, 2000, 9000);
	put(&b, 3, w0(TET_BREC_META, 0, 5), 64ull, 129ull);
	feed(t, &b, 9000);
	fin(t);
	CHECK_U64(tb_stats(t)->bad_records, 1, "waits: a meta with 129 name bytes is refused");
	tb_free(t);
}

static void test_locks(void)
{
	struct tb *t = fresh(false, false);
	struct batch b;
	size_t locks = 0;

	/* intent: lock records go out inside their poll like waits (op in a, object in
	 * header_ptr, permits in b); a poll that takes and gives back the same lock many times
	 * (an uncontended Mutex in a loop) leaves only what it still holds, so the held list
	 * does not overflow: nothing counted as not kept */
	b_init(&b, 1, 0, 2000, 9000);
	for (int i = 0; i < 100; i++) {
		put(&b, 3, w0(TET_BREC_LOCK, TET_LOCK_MUTEX, 5), 0x8100ull, 1ull);
		put(&b, 3, w0(TET_BREC_LOCK, TET_LOCK_RELEASE, 5), 0x8100ull, 1ull);
	}
	put(&b, 3, w0(TET_BREC_LOCK, TET_LOCK_WRITE, 5), 0x8200ull, 7ull);
	put(&b, 3, w0(TET_BREC_LOCK, TET_LOCK_RELEASE, 5), 0x8200ull, 6ull); /* downgrade */
	put(&b, 3, w0(TET_BREC_WAIT, TET_WAIT_SEMAPHORE, 5), 0x8300ull, 1ull);
	poll_rec(&b, 5, 3000, 3200, 0, 0, 0, 0);
	feed(t, &b, 9000);
	fin(t);
	CHECK(!strcmp(trail(), "1:5@3000 12:5@3199 10:5@3199 2:5@3200"),
	      "locks: 100 take-and-give-back pairs leave the lock still held: %s", trail());
	CHECK(nev == 4 && ev[1].a == TET_LOCK_WRITE && ev[1].hdr == 0x8200 && ev[1].b == 1,
	      "locks: a write lock downgraded in the poll is held with 1 permit (op %llu, %llu permits)",
	      (unsigned long long)ev[1].a, (unsigned long long)ev[1].b);
	CHECK_U64(tb_stats(t)->locks_dropped, 0, "locks: none counted as not kept");
	tb_free(t);

	/* intent: more distinct locks in one poll than a thread holds (32) are counted; a
	 * release of a lock taken in an earlier poll is sent as it is */
	t = fresh(false, false);
	b_init(&b, 1, 0, 2000, 9000);
	put(&b, 3, w0(TET_BREC_LOCK, TET_LOCK_SEMAPHORE, 6), 0x9000ull, 2ull);
	poll_rec(&b, 6, 2500, 2600, 0, 0, 0, 0);
	for (uint64_t i = 0; i < 40; i++)
		put(&b, 3, w0(TET_BREC_LOCK, TET_LOCK_MUTEX, 7), 0xa000ull + 64 * i, 1ull);
	poll_rec(&b, 7, 3000, 3200, 0, 0, 0, 0);
	put(&b, 3, w0(TET_BREC_LOCK, TET_LOCK_RELEASE, 6), 0x9000ull, 2ull);
	poll_rec(&b, 6, 3300, 3400, 0, 0, 0, 0);
	feed(t, &b, 9000);
	fin(t);
	for (size_t i = 0; i < nev; i++)
		locks += ev[i].type == TET_EV_LOCK;
	CHECK(locks == 2 + 32, "locks: 32 of a poll's 40 kept, the other poll's two sent (%zu)", locks);
	CHECK_U64(tb_stats(t)->locks_dropped, 8, "locks: the 8 beyond counted");
	CHECK(nev && ev[nev - 2].type == TET_EV_LOCK && ev[nev - 2].a == TET_LOCK_RELEASE &&
	      ev[nev - 2].id == 6 && ev[nev - 2].b == 2,
	      "locks: the later poll's release goes out with its permits");
	tb_free(t);
}

/* thread 1 registered (seq 0), its batch 1 in progress holding poll 5 (not in memory yet) */
static void registered(struct tb *t, struct batch *b)
{
	mem_gone = false;
	tid_alive = true;
	b_init(b, 1, 0, 1500, 2000);
	b->buf = 0x10000;
	b->h.reason = TET_BATCH_REASON_NEW;
	feed(t, b, 2000);                                   /* registration: seq 0, nothing */
	b_init(b, 1, 1, 2000, 0);
	b->buf = 0x10000;
	poll_rec(b, 5, 2500, 2600, 0, 0, 0, 0);
}

static void test_sweep(void)
{
	struct tb *t = fresh(true, true);
	struct batch b;

	/* intent: a quiet thread's buffer is read in place: its records go out without waiting
	 * for its flush, and the flush then adds only what came after */
	registered(t, &b);
	to_mem(&b);                                         /* seq 1 in progress, one poll */
	tb_ring_drained(t, 100000000);
	adv(t, 100000000);                           /* quiet for long: swept */
	CHECK(!strcmp(trail(), "1:5@2500 2:5@2600"), "sweep: the poll out before any flush (%s)", trail());
	CHECK_U64(tb_stats(t)->sweep_records, 4, "sweep: 4 words read in place");
	poll_rec(&b, 6, 2700, 2800, 0, 0, 0, 0);
	b.h.flush_clock = b.h.flush_ns = 100000100;
	feed(t, &b, 100000100);                             /* the flush of seq 1: both polls */
	fin(t);
	CHECK(!strcmp(trail(), "1:5@2500 2:5@2600 1:6@2700 2:6@2800"), "sweep: nothing decoded twice (%s)", trail());
	tb_free(t);

	/* intent: a thread found gone is declared gone (its last window lost) only once the ring
	 * has been read past that moment: its last batch may still be on its way */
	t = fresh(true, true);
	b_init(&b, 1, 0, 1500, 2000);
	b.buf = 0x10000;
	feed(t, &b, 2000);
	mem_gone = true;
	adv(t, 50000000);
	CHECK_U64(tb_stats(t)->threads_vanished, 0, "gone: not declared while the ring may hold its batches");
	tb_ring_drained(t, 60000000);
	adv(t, 60000000);
	CHECK_U64(tb_stats(t)->threads_vanished, 0,
		  "gone: not declared within 100 ms of ring reading past it (a record not committed yet stops the reader)");
	tb_ring_drained(t, 160000000);
	adv(t, 160000000);
	CHECK_U64(tb_stats(t)->threads_vanished, 1, "gone: declared once the ring is read 100 ms past it");
	mem_gone = false;
	tb_free(t);

	/* intent: a final batch that comes after the verdict takes it back: not vanished, its
	 * unflushed counts withdrawn, what a sweep read of it not decoded twice (the CI once had
	 * every task of a worker polled twice too often after such a verdict) */
	t = fresh(true, true);
	registered(t, &b);
	to_mem(&b);
	tb_ring_drained(t, 100000000);
	adv(t, 100000000);                           /* swept: poll 5 out */
	mem_gone = true;
	tid_alive = false;
	adv(t, 200000000);                           /* found gone */
	tb_ring_drained(t, 400000000);
	adv(t, 400000000);
	CHECK_U64(tb_stats(t)->threads_vanished, 1, "late final: first judged vanished");
	poll_rec(&b, 6, 2700, 2800, 0, 0, 0, 0);
	b.h.reason = TET_BATCH_REASON_EXIT;
	b.h.flush_clock = b.h.flush_ns = 190000000;
	CHECK(feed(t, &b, 190000000) == 0, "late final: its batch taken");
	fin(t);
	CHECK_U64(tb_stats(t)->threads_vanished, 0, "late final: the verdict taken back");
	CHECK_U64(tb_stats(t)->threads_revived, 1, "late final: counted as such");
	CHECK_U64(tb_stats(t)->unflushed[TET_EV_POLL_BEGIN], 0, "late final: no unflushed events left");
	CHECK(!strcmp(trail(), "1:5@2500 2:5@2600 1:6@2700 2:6@2800"),
	      "late final: nothing decoded twice (%s)", trail());
	mem_gone = false;
	tid_alive = true;
	tb_free(t);
}

static void test_reads(void)
{
	struct tb *t = fresh(true, true);
	struct batch b;
	struct tb_read rq, again;
	const char type[] = "app::Handler";

	/* intent: the decoder reads nothing itself: a sweep is three reads it asks for one at a
	 * time (head, the records not decoded yet, head again), each asked again until answered;
	 * nothing is decoded before the last one */
	registered(t, &b);
	to_mem(&b);
	tb_ring_drained(t, 100000000);
	CHECK(tb_next_read(t, 100000000, &rq) && rq.kind == TB_READ_MEM && rq.addr == 0x10000 &&
	      rq.len == sizeof(struct tet_batch_head), "reads: a quiet thread's head first");
	CHECK(tb_next_read(t, 100000000, &again) && again.addr == rq.addr && again.buf == rq.buf,
	      "reads: an unanswered read is asked again");
	tb_read_done(t, read_mem(rq.pid, rq.addr, rq.buf, rq.len));
	CHECK(tb_next_read(t, 100000000, &rq) && rq.addr == 0x10000 + sizeof(struct tet_batch_head) &&
	      rq.len == 32, "reads: then its 4 record words");
	tb_read_done(t, read_mem(rq.pid, rq.addr, rq.buf, rq.len));
	CHECK(tb_next_read(t, 100000000, &rq) && rq.addr == 0x10000 &&
	      rq.len == sizeof(struct tet_batch_head), "reads: then its head again");
	CHECK_U64(tb_stats(t)->sweep_records, 0, "reads: nothing decoded before the last read");
	tb_read_done(t, read_mem(rq.pid, rq.addr, rq.buf, rq.len));
	CHECK(!tb_next_read(t, 100000000, &rq), "reads: then nothing more at that time");
	CHECK_U64(tb_stats(t)->sweep_records, 4, "reads: the sweep decoded");
	tb_free(t);

	/* intent: any other call drops a sweep half read: a batch fed meanwhile decoded what the
	 * sweep had begun to read, and the rest of the sweep would decode it again */
	t = fresh(true, true);
	registered(t, &b);
	to_mem(&b);
	tb_ring_drained(t, 100000000);
	CHECK(tb_next_read(t, 100000000, &rq), "dropped: a sweep begins");
	tb_read_done(t, read_mem(rq.pid, rq.addr, rq.buf, rq.len));
	b.h.flush_clock = b.h.flush_ns = 99000000;
	feed(t, &b, 99000000);                              /* its flush comes meanwhile */
	adv(t, 100000000);
	fin(t);
	CHECK_U64(tb_stats(t)->sweep_records, 0, "dropped: the sweep half read decodes nothing");
	CHECK(!strcmp(trail(), "1:5@2500 2:5@2600"), "dropped: the poll once (%s)", trail());
	tb_free(t);

	/* intent: a spawn whose string record was lost asks for the string once, however many
	 * spawns name it; a string whose record comes before the read is not read */
	t = fresh(true, false);
	memcpy(mem + 0x100, type, sizeof(type) - 1);
	b_init(&b, 1, 0, 2000, 9000);
	for (uint64_t id = 1; id <= 3; id++)
		put(&b, 7, w0(TET_BREC_SPAWN, 0, id), 0xabcull, 3000ull + id, 0ull, 0ull, 0x10100ull,
		    (uint64_t)(sizeof(type) - 1));
	put(&b, 7, w0(TET_BREC_SPAWN, 0, 4), 0xabcull, 3004ull, 0ull, 0ull, 0x10200ull, 3ull);
	put(&b, 3, w0(TET_BREC_STRING, 0, 3), 0x10200ull, 0x636261ull);   /* "abc", after its spawn */
	feed(t, &b, 9000);
	reads_served = 0;
	fin(t);
	CHECK_U64(reads_served, 1, "strings asked: one read for three spawns, none for a string that came");
	CHECK_U64(tb_stats(t)->strings_read, 1, "strings asked: counted once");
	CHECK_U64(nev, 4, "strings asked: four spawns");
	CHECK(!strcmp(ev[2].type_name, type), "strings asked: the third spawn has it too (%s)", ev[2].type_name);
	CHECK(!strcmp(ev[3].type_name, "abc"), "strings asked: the inline one (%s)", ev[3].type_name);
	tb_free(t);

	/* intent: a capture that cannot read (reads false) is asked nothing */
	t = fresh(false, false);
	registered(t, &b);
	feed(t, &b, 9000);
	CHECK(!tb_next_read(t, 100000000, &rq), "no reads: nothing asked");
	tb_free(t);
}

static void test_torn(void)
{
	struct tb *t = fresh(true, true);
	struct batch b;
	uint64_t pending;

	/* intent: a head whose len shrinks below what a sweep already read of the same batch
	 * (PROBES.md: records below len stay until the next flush) is refused in O(1) and counted:
	 * no wrapped length, no allocation for it, nothing decoded twice, the next batch decoded */
	registered(t, &b);
	poll_rec(&b, 6, 2700, 2800, 0, 0, 0, 0);
	to_mem(&b);                                         /* 8 words in place */
	tb_ring_drained(t, 100000000);
	adv(t, 100000000);
	CHECK_U64(tb_stats(t)->sweep_records, 8, "torn: 8 words read in place");
	b.nw = 4;                                           /* the same seq, now 4 words */
	to_mem(&b);
	tb_ring_drained(t, 200000000);
	adv(t, 200000000);                           /* a sweep sees it shrink: refused */
	CHECK_U64(tb_stats(t)->sweep_failures, 1, "torn: a shrunk head is a failed sweep");
	b.h.flush_clock = b.h.flush_ns = 200000100;
	pending = tb_stats(t)->pending_max;
	CHECK(feed(t, &b, 200000100) == 0, "torn: the shrunk flush itself is taken (seq, counts)");
	CHECK_U64(tb_stats(t)->torn_batches, 1, "torn: counted");
	CHECK_U64(tb_stats(t)->pending_max, pending, "torn: nothing staged for it");
	b_init(&b, 1, 2, 200000100, 300000000);
	b.buf = 0x10000;
	poll_rec(&b, 7, 250000000, 250000100, 0, 0, 0, 0);
	CHECK(feed(t, &b, 300000000) == 0, "torn: the next batch is decoded");
	fin(t);
	CHECK(!strcmp(trail(), "1:5@2500 2:5@2600 1:6@2700 2:6@2800 1:7@250000000 2:7@250000100"),
	      "torn: every poll once (%s)", trail());
	tb_free(t);
}

static void test_strings_bound(void)
{
	struct tb *t = fresh(false, false);
	struct batch b;
	uint64_t seq = 0, addr = 0x100000;
	unsigned want = 65536 + 100;

	/* intent: distinct strings past the bound (65536) are refused and counted, one O(1) check
	 * each (no table grown for them), and a string already held is still updated */
	for (unsigned done = 0; done < want;) {
		b_init(&b, 1, seq++, 1500, 2000);
		while (done < want && b.nw + 3 <= 4096) {
			put(&b, 3, w0(TET_BREC_STRING, 0, 1), addr++, (uint64_t)'x');
			done++;
		}
		feed(t, &b, 2000);
	}
	CHECK_U64(tb_stats(t)->strings, want, "bound: every string record decoded");
	CHECK_U64(tb_stats(t)->strings_refused, 100, "bound: the 100 past 65536 refused and counted");
	b_init(&b, 1, seq++, 1500, 2000);
	put(&b, 3, w0(TET_BREC_STRING, 0, 1), (uint64_t)0x100000, (uint64_t)'y');
	feed(t, &b, 2000);
	CHECK_U64(tb_stats(t)->strings_refused, 100, "bound: a held string is updated, not refused");
	tb_free(t);
}

static void test_implausible(void)
{
	struct tb *t = fresh(false, false);
	struct batch b;

	/* intent: a head's figures are the process's: a window count over 2^24 is clamped and a
	 * seq jump over 2^20 is not taken as that many lost batches; both counted */
	b_init(&b, 1, 0, 1500, 2000);
	b.h.counts[TET_EV_POLL_BEGIN] = 1ull << 62;
	b.h.counts[TET_EV_WAKE] = 5;
	feed(t, &b, 2000);
	CHECK_U64(tb_stats(t)->recorded[TET_EV_POLL_BEGIN], TET_BATCH_COUNT_MAX, "implausible: count clamped");
	CHECK_U64(tb_stats(t)->recorded[TET_EV_WAKE], 5, "implausible: a plausible count kept");
	b_init(&b, 1, 1ull << 40, 2000, 3000);
	feed(t, &b, 3000);
	CHECK_U64(tb_stats(t)->lost_batches, 0, "implausible: a seq jump of 2^40 is no loss");
	b_init(&b, 1, (1ull << 40) + 3, 3000, 4000);
	feed(t, &b, 4000);
	CHECK_U64(tb_stats(t)->lost_batches, 2, "implausible: a gap of 2 after it is");
	CHECK_U64(tb_stats(t)->implausible, 2, "implausible: counted");
	tb_free(t);
}

static void test_threads_bound(void)
{
	struct tb *t = fresh(false, false);
	struct batch b;
	int refused = 0;

	/* intent: threads are the process's to make: past the 16384 followed, a new thread's batch
	 * is refused and counted (not fatal), one O(1) check; known threads still decode, also
	 * after others exited and were pruned (the index rebuilt) */
	for (uint32_t tid = 1; tid <= 16384 + 10; tid++) {
		b_init(&b, tid, 0, 1500, 2000);
		b.buf = 0x10000ull * tid;
		refused += feed(t, &b, 2000) == -EINVAL;
	}
	CHECK(refused == 10 && tb_stats(t)->threads_refused == 10,
	      "threads: 10 past the bound refused and counted (%d)", refused);
	b_init(&b, 16384, 1, 2000, 3000);
	b.buf = 0x10000ull * 16384;
	poll_rec(&b, 9, 2500, 2600, 0, 0, 0, 0);
	CHECK(feed(t, &b, 3000) == 0, "threads: a followed thread still decodes");
	for (uint32_t tid = 1; tid <= 100; tid++) { /* 100 exit: pruned at the next advance */
		b_init(&b, tid, 1, 2000, 3000);
		b.buf = 0x10000ull * tid;
		b.h.reason = TET_BATCH_REASON_EXIT;
		feed(t, &b, 3000);
	}
	tb_ring_drained(t, 4000);
	adv(t, 4000);
	b_init(&b, 20000, 0, 3000, 4000);
	b.buf = 0x10000ull * 20000;
	CHECK(feed(t, &b, 4000) == 0, "threads: room again once exited threads are pruned");
	for (uint32_t tid = 101; tid <= 16384; tid++) {
		b_init(&b, tid, tid == 16384 ? 2 : 1, 2000, 5000);
		b.buf = 0x10000ull * tid;
		feed(t, &b, 5000);
	}
	CHECK(tb_stats(t)->lost_batches == 0 && tb_stats(t)->threads == 16384 + 1,
	      "threads: the index finds every thread after the prune (%llu seq gaps, %llu threads)",
	      (unsigned long long)tb_stats(t)->lost_batches, (unsigned long long)tb_stats(t)->threads);
	tb_free(t);
}

static void test_clock(void)
{
	struct tb *t = fresh(false, false);
	struct batch b;

	/* intent: TSC stamps convert by interpolation between pairs (3 ticks per ns here), and a
	 * TSC batch's events come out in CLOCK_MONOTONIC ns */
	tb_clock_pair(t, 3000000, 1000000);
	tb_clock_pair(t, 6000000, 2000000);
	tb_clock_pair(t, 9000000, 3000000);
	CHECK_U64(tb_tsc_to_ns(t, 4500000), 1500000, "clock: between pairs");
	CHECK_U64(tb_tsc_to_ns(t, 12000000), 4000000, "clock: after the last pair (its rate)");
	b_init(&b, 1, 0, 3000000, 9000000);
	b.h.clock = TET_BATCH_CLOCK_TSC;
	b.h.flush_ns = 3000000;
	poll_rec(&b, 1, 4500000, 7500000, 0, 0, 0, 0);
	feed(t, &b, 3000000);
	fin(t);
	CHECK(!strcmp(trail(), "1:1@1500000 2:1@2500000"), "clock: TSC poll converted (%s)", trail());
	/* intent: a flush_ns the process made up (here 2^63 ns off) is not a clock error */
	b_init(&b, 1, 1, 3000000, 12000000);
	b.h.clock = TET_BATCH_CLOCK_TSC;
	b.h.flush_ns = 1ull << 63;
	feed(t, &b, 4000000);
	CHECK(tb_stats(t)->clock_error_ns < 1000000 && tb_stats(t)->implausible == 1,
	      "clock: a made-up flush_ns is implausible, not an error of %lld ns",
	      (long long)tb_stats(t)->clock_error_ns);
	tb_free(t);
}

int main(void)
{
	test_poll();
	test_order();
	test_open_poll();
	test_waker_stamps();
	test_window();
	test_seq();
	test_controls();
	test_malformed();
	test_strings();
	test_reads();
	test_waits();
	test_locks();
	test_sweep();
	test_torn();
	test_strings_bound();
	test_implausible();
	test_threads_bound();
	test_clock();
	printf("# %d checks, %d failed\n", run, failed);
	return failed ? 1 : 0;
}
