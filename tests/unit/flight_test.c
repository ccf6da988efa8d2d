// SPDX-License-Identifier: MIT
/*
 * flight_test — unit tests of the flight recorder (tracer/analyze/flight.c) and of the analyzer's
 * on_detect hook that fires it (tracer/analyze/analyzer.c), without BPF, on synthetic records:
 *   store   a time window keeps every record newer than the window and at most one chunk
 *           older, its memory follows the window; a size window stays under its bound and
 *           keeps the newest record; a time window cut by the memory bound says so; replay
 *           filters exactly by [from, to] and pid; a spawn record round-trips byte-exact
 *           (hostile bytes, over-long copy counts clamped) whether it comes from the window or
 *           from the spawns kept; spawns of tasks alive at a window's start are replayed first
 *           (not those of tasks ended before it), ended tasks' spawns are purged once their end
 *           leaves the window; the spawns kept are bounded.
 *   raw     batches kept as the ring hands them over and decoded at dump time: the window's
 *           events only, the spawns of tasks alive from before it (site, type, name, thread,
 *           time; not those of ended tasks, also when the end came first), strings sent before
 *           it, ~16 B an event, malformed batches refused; random records within bounds; a quiet
 *           spawner's sweep puts its spawns before its tasks' polls, kept once.
 *   names   --trigger specifications parsed or refused (with an error); dump names reduced to
 *           a safe alphabet, bounded per part, "process" for an unusable executable name.
 *   dir     the dump budget removes the oldest dumps' files only (never the one kept, never
 *           other files, never symlinks); the dump directory check and its probe file.
 *   detect  on_detect is called once per new occurrence of a finding kind (long_poll, stalled,
 *           lost_waker, never_yields), for every poll / scheduling delay above its threshold
 *           (strictly), with the occurrence's start, value and identity, only for kinds in
 *           `detect`, and also when the findings list is full.
 *   runtime the recorder's decisions (tracer/run/flight_rt.c): the cooldown holds detector and
 *           threshold triggers on the events' clock either way round, never SIGUSR1 or exits,
 *           a full queue suppresses; a dump is due --post-trigger later (100 ms at most after
 *           an exit); queued dumps keep their window in the store; detections pick the
 *           matching trigger with the lowest threshold; a crash always dumps, an exit only
 *           with --trigger exit; the window plan (time window, memory cut, a poll older than
 *           the window kept whole, size window); snapshots as a ring, the base of a window,
 *           counters subtracted without wrapping.
 * Prints "ok - …" / "not ok - …"; exits 1 on a failure.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer.h"
#include "batch.h"
#include "flight.h"
#include "flight_rt.h"
#include "units.h"

#include "check.h"

#define MS NSEC_PER_MSEC
#define SEC NSEC_PER_SEC
#define PID 100
#define PID2 200
#define W0 201 /* worker 0's thread */
#define W1 202
#define OUT 300 /* a thread outside the runtime */

/* ---- records ---- */
static struct tet_event_rec event(uint32_t type, uint64_t ts, uint32_t pid, uint64_t id)
{
	struct tet_event_rec r;

	memset(&r, 0, sizeof(r));
	r.h = (struct tet_hdr){ ts, type, pid, W0, 1 };
	r.task_id = id;
	r.header_ptr = 0x1000 + id;
	r.a = ~id;   /* a check word: replay must hand the record back whole */
	r.b = ts ^ 0x5555;
	return r;
}

static struct tet_spawn_rec spawn_rec(uint64_t ts, uint32_t pid, uint64_t id)
{
	struct tet_spawn_rec r;

	memset(&r, 0, sizeof(r));
	r.h = (struct tet_hdr){ ts, TET_EV_SPAWN, pid, OUT, 2 };
	r.task_id = id;
	r.header_ptr = 0x1000 + id;
	return r;
}

static int add_ev(struct fr_store *s, uint32_t type, uint64_t ts, uint32_t pid, uint64_t id)
{
	struct tet_event_rec r = event(type, ts, pid, id);

	return fr_store_add(s, &r, sizeof(r));
}

/* what replay hands over */
struct seen {
	uint64_t n, bad;           /* records; records not handed back as they were added */
	uint64_t first_ts, last_ts, min_ts, max_ts, first_id, last_id;
	uint64_t not_contiguous;   /* event records whose id is not the previous one + 1 */
	uint64_t at_or_after;      /* records with ts >= mark */
	uint64_t mark;
	uint32_t pid_seen_mask;    /* 1: PID, 2: PID2, 4: another */
	size_t nkeep;
	struct tet_spawn_rec keep[8]; /* the first records, whole */
	size_t keep_size[8];
	uint64_t spawns_of[8];     /* spawn records by task id (< 8) */
};

static void seen_init(struct seen *v, uint64_t mark)
{
	memset(v, 0, sizeof(*v));
	v->min_ts = UINT64_MAX;
	v->mark = mark;
}

static void collect(void *ctx, const void *rec, size_t size)
{
	struct seen *v = ctx;
	const struct tet_hdr *h = rec;
	uint64_t id;

	if (v->nkeep < 8) {
		memcpy(&v->keep[v->nkeep], rec, size < sizeof(v->keep[0]) ? size : sizeof(v->keep[0]));
		v->keep_size[v->nkeep++] = size;
	}
	if (h->type == TET_EV_SPAWN) {
		const struct tet_spawn_rec *s = rec;

		id = s->task_id;
		if (size != sizeof(*s))
			v->bad++;
		if (id < 8)
			v->spawns_of[id]++;
	} else {
		const struct tet_event_rec *e = rec;

		id = e->task_id;
		if (size != sizeof(*e) || e->a != ~id || e->b != (h->ts ^ 0x5555))
			v->bad++;
		if (v->n && v->last_id + 1 != id)
			v->not_contiguous++;
	}
	if (!v->n) {
		v->first_ts = h->ts;
		v->first_id = id;
	}
	v->last_ts = h->ts;
	v->last_id = id;
	if (h->ts < v->min_ts)
		v->min_ts = h->ts;
	if (h->ts > v->max_ts)
		v->max_ts = h->ts;
	if (h->ts >= v->mark)
		v->at_or_after++;
	v->pid_seen_mask |= h->pid == PID ? 1 : h->pid == PID2 ? 2 : 4;
	v->n++;
}

static uint64_t replay(const struct fr_store *s, uint64_t from, uint64_t to, uint32_t pid,
		       struct seen *v, uint64_t mark, uint64_t *before)
{
	uint64_t b;

	seen_init(v, mark);
	return fr_store_replay(s, from, to, pid, collect, v, before ? before : &b);
}

/* records of `bytes` (8-byte entry word + record) a chunk holds at least / at most */
#define REC_BYTES (8 + sizeof(struct tet_event_rec))
#define PER_CHUNK_MAX (FR_CHUNK_BYTES / REC_BYTES)
#define PER_CHUNK_MIN ((FR_CHUNK_BYTES - 4096) / REC_BYTES)

/*
 * Intent: a time window keeps every record newer than now − window and at most one chunk's
 * worth older; the memory held is what the window needs (+ one chunk straddling its edge), not
 * the 70 MiB that went through; records come back whole, in order, none missing.
 */
static void test_time_window(void)
{
	const uint64_t win = 2 * SEC, step = 10000, n = 1000000; /* 10 s at 100k records/s */
	const uint64_t span = PER_CHUNK_MAX * step;              /* time one chunk spans, at most */
	struct fr_store *s = fr_store_new(win, 256ull << 20);
	uint64_t now = n * step, edge = now - win, nwin = win / step + 1, fails = 0, bound;
	struct fr_stats st;
	struct seen v;

	if (!CHECK(s != NULL, "time window: store created"))
		return;
	for (uint64_t i = 1; i <= n; i++) {
		fails += add_ev(s, TET_EV_POLL_BEGIN, i * step, PID, i) != 0;
		if (i % 1000 == 0)
			fr_store_trim(s, i * step);
		if (i == n / 2) { /* mid-way: the window as of 5 s is whole */
			uint64_t got = replay(s, i * step - win, i * step, 0, &v, 0, NULL);

			CHECK_U64(got, nwin, "time window: at 5 s the last 2 s replay whole");
			CHECK(v.bad == 0 && v.not_contiguous == 0 && v.first_ts == i * step - win &&
			      v.last_ts == i * step, "time window: … in order, intact, [3 s, 5 s]");
		}
	}
	CHECK_U64(fails, 0, "time window: every add succeeded");
	fr_store_trim(s, now);
	fr_store_stats(s, &st);
	replay(s, 0, UINT64_MAX, 0, &v, edge, NULL);
	CHECK(v.first_ts >= edge - span, "time window: oldest replayed %llu ns ≥ now − window − one chunk (%llu)",
	      (unsigned long long)v.first_ts, (unsigned long long)(edge - span));
	CHECK_U64(v.at_or_after, nwin, "time window: every record of the last 2 s is there");
	CHECK(v.last_ts == now && v.last_id == n, "time window: … up to the newest");
	CHECK(v.bad == 0 && v.not_contiguous == 0, "time window: records intact, in order, no gap");
	CHECK_U64(st.records, v.n, "time window: stats.records = records replayed");
	CHECK(st.oldest_ts == v.first_ts && st.newest_ts == now,
	      "time window: stats oldest/newest = replay's first/last");
	CHECK(st.added == n && st.evicted == n - st.records, "time window: added %llu, evicted = added − held",
	      (unsigned long long)st.added);
	bound = ((nwin + PER_CHUNK_MIN - 1) / PER_CHUNK_MIN + 1) * FR_CHUNK_BYTES;
	CHECK(st.bytes <= bound, "time window: %llu bytes held ≤ %llu (the window's chunks + 1)",
	      (unsigned long long)st.bytes, (unsigned long long)bound);
	CHECK(!st.evicted_by_size && st.evicted_by_size_until == 0,
	      "time window: nothing lost to the memory bound");

	/* a later trim with no new records: the newest chunk stays (the store never empties) */
	fr_store_trim(s, now + 60 * SEC);
	fr_store_stats(s, &st);
	CHECK(st.records > 0 && st.records <= PER_CHUNK_MAX && st.newest_ts == now &&
	      st.bytes == FR_CHUNK_BYTES, "time window: long after, one chunk (%llu records) kept",
	      (unsigned long long)st.records);
	fr_store_free(s);
}

/* Intent: replay passes exactly the records with from ≤ ts ≤ to, of the pid asked (0: all). */
static void test_replay_filter(void)
{
	struct fr_store *s = fr_store_new(0, 64ull << 20);
	struct seen v;
	uint64_t got;

	if (!CHECK(s != NULL, "replay: store created"))
		return;
	for (uint64_t i = 1; i <= 1000; i++) /* ts i µs; odd i: PID, even: PID2 */
		add_ev(s, TET_EV_POLL_BEGIN, i * 1000, i % 2 ? PID : PID2, i);
	got = replay(s, 250000, 750000, 0, &v, 0, NULL);
	CHECK(got == 501 && v.n == 501 && v.first_id == 250 && v.last_id == 750 &&
	      v.not_contiguous == 0 && v.bad == 0 && v.pid_seen_mask == 3,
	      "replay: [250 µs, 750 µs] both bounds included: %llu records %llu..%llu",
	      (unsigned long long)got, (unsigned long long)v.first_id, (unsigned long long)v.last_id);
	got = replay(s, 250001, 750999, 0, &v, 0, NULL);
	CHECK(got == 500 && v.first_id == 251 && v.last_id == 750,
	      "replay: [250.001 µs, 750.999 µs] → 251..750 (%llu records)", (unsigned long long)got);
	got = replay(s, 250000, 750000, PID, &v, 0, NULL);
	CHECK(got == 250 && v.n == 250 && v.pid_seen_mask == 1 && v.first_id == 251 && v.last_id == 749,
	      "replay: pid %d: the 250 odd ones (%llu)", PID, (unsigned long long)got);
	got = replay(s, 250000, 750000, PID2, &v, 0, NULL);
	CHECK(got == 251 && v.n == 251 && v.pid_seen_mask == 2 && v.first_id == 250 && v.last_id == 750,
	      "replay: pid %d: the 251 even ones (%llu)", PID2, (unsigned long long)got);
	got = replay(s, 0, UINT64_MAX, 999, &v, 0, NULL);
	CHECK(got == 0 && v.n == 0, "replay: another pid: nothing");
	got = replay(s, 500000, 500000, 0, &v, 0, NULL);
	CHECK(got == 1 && v.first_id == 500, "replay: from = to: the one record at that ts");
	got = replay(s, 600000, 500000, 0, &v, 0, NULL);
	CHECK(got == 0 && v.n == 0, "replay: from > to: nothing");
	got = replay(s, 1000001, UINT64_MAX, 0, &v, 0, NULL);
	CHECK(got == 0 && v.n == 0, "replay: after the newest: nothing");
	fr_store_free(s);
}

/*
 * Intent: a size window holds at most max_bytes whatever goes through and keeps the newest
 * records (a contiguous run up to the last added); a time window whose memory bound is hit
 * says so, and until when (the newest record it lost); a bound below FR_MIN_BYTES is raised.
 */
static void test_size_window(void)
{
	const uint64_t max = 8ull << 20, n = (50ull << 20) / sizeof(struct tet_event_rec);
	struct fr_store *s = fr_store_new(0, max);
	uint64_t over = 0, newest_wrong = 0, got;
	struct fr_stats st;
	struct seen v;

	if (!CHECK(s != NULL, "size window: store created"))
		return;
	for (uint64_t i = 1; i <= n; i++) {
		add_ev(s, TET_EV_POLL_END, i * 1000, PID, i);
		if (i % 4096 == 0 || i == n) {
			fr_store_stats(s, &st);
			over += st.bytes > max;
			newest_wrong += st.newest_ts != i * 1000;
		}
	}
	fr_store_stats(s, &st);
	CHECK(over == 0, "size window: 50 MiB through an 8 MiB window: never above (%llu bytes now)",
	      (unsigned long long)st.bytes);
	CHECK(st.bytes > max - FR_CHUNK_BYTES, "size window: … and uses its budget");
	CHECK(st.evicted > 0 && st.added == n && st.records + st.evicted == n,
	      "size window: evicted %llu, held %llu, added %llu", (unsigned long long)st.evicted,
	      (unsigned long long)st.records, (unsigned long long)st.added);
	CHECK_U64(newest_wrong, 0, "size window: the newest record is always held");
	got = replay(s, n * 1000, n * 1000, 0, &v, 0, NULL);
	CHECK(got == 1 && v.first_id == n && v.bad == 0, "size window: the last record replays");
	got = replay(s, 0, UINT64_MAX, 0, &v, 0, NULL);
	CHECK(got == st.records && v.last_id == n && v.not_contiguous == 0 && v.bad == 0 &&
	      v.first_ts == st.oldest_ts, "size window: what is held is the newest %llu, no gap",
	      (unsigned long long)got);
	CHECK(!st.evicted_by_size, "size window: evicted_by_size is for time windows only");
	fr_store_trim(s, n * 1000 + 10 * SEC);
	fr_store_stats(s, &st);
	CHECK(st.bytes <= max && st.records == got, "size window: a trim drops nothing by time");
	fr_store_free(s);

	/* a 60 s window with a memory bound of 1 byte (raised to FR_MIN_BYTES), 10 MiB in 1 s */
	s = fr_store_new(60 * SEC, 1);
	if (!CHECK(s != NULL, "time window, small memory: store created"))
		return;
	for (uint64_t i = 1; i <= (10ull << 20) / sizeof(struct tet_event_rec); i++)
		add_ev(s, TET_EV_POLL_END, SEC + i * 6000, PID, i);
	fr_store_trim(s, 2 * SEC);
	fr_store_stats(s, &st);
	CHECK(st.bytes <= FR_MIN_BYTES && st.bytes > FR_MIN_BYTES - FR_CHUNK_BYTES,
	      "time window, small memory: held %llu bytes: the bound, raised to FR_MIN_BYTES",
	      (unsigned long long)st.bytes);
	CHECK(st.evicted_by_size && st.evicted > 0, "time window, small memory: evicted_by_size set");
	CHECK_U64(st.evicted_by_size_until, st.oldest_ts - 6000,
		  "time window, small memory: … until the newest record lost (the one before the oldest held)");
	fr_store_free(s);
}

/* Intent: a spawn record is stored packed and comes back byte-exact as a full-size record,
 * from the window and from the spawns kept; what was not copied comes back zero; copy counts
 * beyond the buffers are clamped. */
static bool spawn_same(const struct tet_spawn_rec *got, size_t size, const struct tet_spawn_rec *want,
		       size_t f, size_t t)
{
	size_t fixed = offsetof(struct tet_spawn_rec, data);

	if (size != sizeof(*want) || memcmp(got, want, fixed) ||
	    memcmp(got->data, want->data, f) ||
	    memcmp(got->data + TET_FILE_MAX, want->data + TET_FILE_MAX, t))
		return false;
	for (size_t i = f; i < TET_FILE_MAX; i++)
		if (got->data[i])
			return false;
	for (size_t i = TET_FILE_MAX + t; i < sizeof(got->data); i++)
		if (got->data[i])
			return false;
	return true;
}

static void test_spawn_packing(void)
{
	static const char file[20] = { 's', 'r', 'c', '/', 0x00, (char)0xff, '\n', 'm', '.', 'r',
				       's', '"', '<', '\\', 0x01, (char)0x80, ':', 0x00, 0x00, 'z' };
	struct fr_store *s = fr_store_new(0, 64ull << 20);
	struct tet_spawn_rec r = spawn_rec(5 * SEC, PID, 7), big;
	uint64_t before = 99, got;
	struct seen v;

	if (!CHECK(s != NULL, "spawn: store created"))
		return;
	r.file_ptr = 0x7f0011223344;
	r.type_ptr = 0x7f0055667788;
	r.file_len = 400;
	r.type_len = 30;
	r.line = 0xdeadbeef;
	r.col = 77;
	r.kind = 2;
	r.file_copied = 20;
	r.type_copied = 30;
	memset(r.data, 0x5a, sizeof(r.data)); /* beyond the copied bytes: not part of the record */
	memcpy(r.data, file, sizeof(file));
	for (int i = 0; i < 30; i++)
		r.data[TET_FILE_MAX + i] = (char)(i % 3 == 0 ? 0x00 : i % 3 == 1 ? 0xff : '\n');
	CHECK(fr_store_add(s, &r, sizeof(r)) == 0, "spawn: added");
	add_ev(s, TET_EV_POLL_BEGIN, 6 * SEC, PID, 7);

	got = replay(s, 0, UINT64_MAX, 0, &v, 0, &before);
	CHECK(got == 2 && before == 0 && v.keep_size[0] == sizeof(struct tet_spawn_rec),
	      "spawn: from the window: a full-size record (%zu bytes)", v.keep_size[0]);
	CHECK(spawn_same(&v.keep[0], v.keep_size[0], &r, 20, 30),
	      "spawn: … byte-exact: header, 20 file bytes, 30 type bytes (0x00, 0xff, \\n), the rest zero");
	CHECK(v.keep_size[1] == sizeof(struct tet_event_rec) && v.bad == 0,
	      "spawn: … the record after it intact");

	got = replay(s, 5 * SEC + 1, UINT64_MAX, 0, &v, 0, &before);
	CHECK(got == 2 && before == 1 && v.keep[0].h.type == TET_EV_SPAWN,
	      "spawn: from the spawns kept (window starts after it): spawns_before 1");
	CHECK(spawn_same(&v.keep[0], v.keep_size[0], &r, 20, 30), "spawn: … byte-exact too");

	/* copy counts beyond the buffers (a hostile or corrupt record): clamped, no overrun */
	big = spawn_rec(7 * SEC, PID2, 6);
	for (size_t i = 0; i < sizeof(big.data); i++)
		big.data[i] = (char)(i * 7 + 1);
	big.file_copied = 300;
	big.type_copied = 65535;
	CHECK(fr_store_add(s, &big, sizeof(big)) == 0, "spawn: copy counts 300/65535 accepted");
	got = replay(s, 7 * SEC, 7 * SEC, PID2, &v, 0, &before);
	CHECK(got == 1 && before == 0 && spawn_same(&v.keep[0], v.keep_size[0], &big, TET_FILE_MAX, TET_TYPE_MAX),
	      "spawn: … replayed with %d file and %d type bytes, the header as it was", TET_FILE_MAX,
	      TET_TYPE_MAX);
	fr_store_free(s);
}

/*
 * Intent: a window's replay starts with the spawns of tasks spawned before it and alive at its
 * start (their own timestamps), oldest first, not those of tasks that ended before it; then the
 * window, where a spawn inside it comes once. Once an ended task's end leaves the window, its
 * spawn is purged; the spawns kept are bounded (by bytes: max_bytes / 8).
 */
static void test_spawns_before(void)
{
	struct fr_store *s = fr_store_new(10 * SEC, 64ull << 20);
	struct tet_spawn_rec a = spawn_rec(1 * SEC, PID, 1), b = spawn_rec(1 * SEC, PID, 2),
			     c = spawn_rec(5 * SEC, PID, 3);
	uint64_t before, got, in_window = 0, kept_before;
	struct fr_stats st;
	struct seen v;

	if (!CHECK(s != NULL, "spawns: store created"))
		return;
	a.file_copied = 4;
	memcpy(a.data, "a.rs", 4);
	fr_store_add(s, &a, sizeof(a));
	fr_store_add(s, &b, sizeof(b));
	for (uint64_t t = 1100 * MS; t <= 6000 * MS; t += 100 * MS) {
		if (t == 2000 * MS) {
			struct tet_event_rec e = event(TET_EV_TERMINATE, t, PID, 2);

			fr_store_add(s, &e, sizeof(e));
		}
		if (t == 5000 * MS) {
			fr_store_add(s, &c, sizeof(c));
			in_window++;
		}
		add_ev(s, TET_EV_POLL_BEGIN, t, PID, 1);
		in_window += t >= 4 * SEC;
	}
	got = replay(s, 4 * SEC, UINT64_MAX, 0, &v, 4 * SEC, &before);
	CHECK(before == 1 && v.keep[0].h.type == TET_EV_SPAWN && v.keep[0].task_id == 1 &&
	      v.keep[0].h.ts == 1 * SEC && v.keep_size[0] == sizeof(struct tet_spawn_rec),
	      "spawns: window from 4 s: first A's spawn (1 s), spawns_before %llu",
	      (unsigned long long)before);
	CHECK(!memcmp(v.keep[0].data, "a.rs", 4), "spawns: … with its strings");
	CHECK(v.spawns_of[2] == 0, "spawns: … not B's (ended at 2 s)");
	CHECK(v.spawns_of[3] == 1 && v.spawns_of[1] == 1, "spawns: … C's (5 s, in the window) once");
	CHECK(got == 1 + in_window && v.at_or_after == in_window && v.bad == 0,
	      "spawns: … then the %llu records from 4 s on (got %llu)", (unsigned long long)in_window,
	      (unsigned long long)got);
	replay(s, 1500 * MS, UINT64_MAX, 0, &v, 0, &before);
	CHECK(before == 2 && v.spawns_of[1] == 1 && v.spawns_of[2] == 1 && v.keep[0].h.ts == SEC &&
	      v.keep[1].h.ts == SEC, "spawns: window from 1.5 s: A and B (alive then) first");
	replay(s, 2000 * MS, UINT64_MAX, 0, &v, 0, &before);
	CHECK(before == 2, "spawns: window from 2 s: B ended at its start: still given");
	replay(s, 2000 * MS + 1, UINT64_MAX, 0, &v, 0, &before);
	CHECK(before == 1 && v.spawns_of[2] == 0, "spawns: window from 2 s + 1 ns: B not given");
	replay(s, 4 * SEC, UINT64_MAX, PID2, &v, 0, &before);
	CHECK(before == 0 && v.n == 0, "spawns: another pid's window: none");

	fr_store_trim(s, 11 * SEC); /* B's end (2 s) still in the window [1 s, 11 s] */
	fr_store_stats(s, &st);
	CHECK_U64(st.spawns_kept, 3, "spawns: at 11 s A, B, C kept");
	kept_before = st.bytes;
	fr_store_trim(s, 20 * SEC); /* B's end left the window [10 s, 20 s] */
	fr_store_stats(s, &st);
	CHECK_U64(st.spawns_kept, 2, "spawns: at 20 s B's spawn purged (A and C alive)");
	CHECK(st.bytes < kept_before, "spawns: … its bytes given back");
	replay(s, 1500 * MS, UINT64_MAX, 0, &v, 0, &before);
	CHECK(before == 1 && v.spawns_of[1] == 1 && v.spawns_of[2] == 0,
	      "spawns: … a window from 1.5 s now starts with A only");
	fr_store_free(s);

	/* bound: 20000 live tasks in a 4 MiB store (spawns get an eighth of it) */
	s = fr_store_new(0, FR_MIN_BYTES);
	if (!CHECK(s != NULL, "spawns bound: store created"))
		return;
	for (uint64_t i = 1; i <= 20000; i++) {
		struct tet_spawn_rec r = spawn_rec(i * 1000, PID, i);

		r.file_copied = 100;
		memset(r.data, 'f', 100);
		fr_store_add(s, &r, sizeof(r));
	}
	fr_store_stats(s, &st);
	CHECK(st.spawns_not_kept > 0 && st.spawns_kept + st.spawns_not_kept == 20000,
	      "spawns bound: %llu kept, %llu not", (unsigned long long)st.spawns_kept,
	      (unsigned long long)st.spawns_not_kept);
	CHECK(st.bytes <= FR_MIN_BYTES, "spawns bound: held %llu ≤ the store's bound",
	      (unsigned long long)st.bytes);
	fr_store_free(s);
}

/* Intent: a task's task_meta travels with its kept spawn: a window that starts after both gets
 * the spawn, then its meta (name, size) before the window's own records; a task without meta
 * gets its spawn alone. */
struct metaseen {
	uint32_t types[16];
	char name[TET_NAME_MAX + 1];
	uint64_t size;
	size_t n;
};

static void collect_meta(void *ctx, const void *rec, size_t size)
{
	struct metaseen *m = ctx;
	const struct tet_hdr *h = rec;

	if (m->n < 16)
		m->types[m->n] = h->type;
	m->n++;
	if (h->type == TET_EV_META && size == sizeof(struct tet_meta_rec)) {
		const struct tet_meta_rec *r = rec;

		memcpy(m->name, r->name, r->name_copied);
		m->size = r->size;
	}
}

static void test_spawn_meta(void)
{
	struct fr_store *s = fr_store_new(10 * SEC, 64ull << 20);
	struct tet_spawn_rec a = spawn_rec(1 * SEC, PID, 1), b = spawn_rec(1500 * MS, PID, 2);
	struct tet_meta_rec m;
	struct metaseen seen = { { 0 }, "", 0, 0 };
	uint64_t before;

	if (!CHECK(s != NULL, "spawn meta: store created"))
		return;
	memset(&m, 0, sizeof(m));
	m.h = (struct tet_hdr){ 1 * SEC, TET_EV_META, PID, OUT, 2 };
	m.task_id = 1;
	m.size = 20000;
	m.name_len = m.name_copied = 4;
	memcpy(m.name, "conn", 4);
	fr_store_add(s, &a, sizeof(a));
	fr_store_add(s, &m, sizeof(m));
	fr_store_add(s, &b, sizeof(b));
	add_ev(s, TET_EV_POLL_BEGIN, 5 * SEC, PID, 1);
	fr_store_replay(s, 4 * SEC, UINT64_MAX, 0, collect_meta, &seen, &before);
	CHECK(before == 2 && seen.n == 4 && seen.types[0] == TET_EV_SPAWN &&
	      seen.types[1] == TET_EV_META && seen.types[2] == TET_EV_SPAWN &&
	      seen.types[3] == TET_EV_POLL_BEGIN,
	      "spawn meta: spawn A, its meta, spawn B (no meta), then the window (%zu records)", seen.n);
	CHECK(!strcmp(seen.name, "conn") && seen.size == 20000, "spawn meta: its name and size");
	fr_store_free(s);
}

/* Intent: --trigger values are parsed to their kind and threshold, or refused with an error. */
static void test_triggers(void)
{
	static const struct { const char *s; unsigned k; } det[] = {
		{ "long_poll", AN_LONG_POLL }, { "stalled", AN_STALLED },
		{ "lost_waker", AN_LOST_WAKER }, { "never_yields", AN_NEVER_YIELDS },
		{ "self_wake", AN_SELF_WAKE },
	};
	static const struct { const char *s; enum fr_trigger_kind k; uint64_t ns; } thr[] = {
		{ "poll>100ms", FR_TRIG_POLL, 100000000 }, { "sched_delay>1.5ms", FR_TRIG_SCHED, 1500000 },
		{ "poll>1ns", FR_TRIG_POLL, 1 }, { "poll>1h", FR_TRIG_POLL, 3600 * SEC },
		{ "sched_delay>250us", FR_TRIG_SCHED, 250000 },
	};
	static const char *const bad[] = {
		"", "poll>", "poll>x", "wakes>1ms", "long_pol", "poll>0ns", "poll>2h", "poll>10",
		"Poll>1ms", "long_poll ", "poll >1ms", ">1ms", "poll>>1ms", "poll>-1ms", "exit>1ms",
		"sched>1ms", "crashed", "sigusr1",
	};
	struct fr_trigger t;
	char err[1024];
	int rc;

	for (size_t i = 0; i < sizeof(det) / sizeof(det[0]); i++) {
		memset(&t, 0xff, sizeof(t));
		err[0] = 0;
		rc = fr_trigger_parse(det[i].s, &t, err, sizeof(err));
		CHECK(rc == 0 && t.kind == FR_TRIG_DETECTOR &&
		      t.detector == det[i].k && t.threshold_ns == 0 && t.spec == det[i].s && !err[0],
		      "trigger %s: detector %u", det[i].s, det[i].k);
	}
	for (size_t i = 0; i < sizeof(thr) / sizeof(thr[0]); i++) {
		err[0] = 0;
		rc = fr_trigger_parse(thr[i].s, &t, err, sizeof(err));
		CHECK(rc == 0 && t.kind == thr[i].k &&
		      t.threshold_ns == thr[i].ns && t.spec == thr[i].s && !err[0],
		      "trigger %s: kind %d, %llu ns (got %d, %llu)", thr[i].s, (int)thr[i].k,
		      (unsigned long long)thr[i].ns, (int)t.kind, (unsigned long long)t.threshold_ns);
	}
	err[0] = 0;
	rc = fr_trigger_parse("exit", &t, err, sizeof(err));
	CHECK(rc == 0 && t.kind == FR_TRIG_EXIT && !err[0], "trigger exit");
	rc = fr_trigger_parse("crash", &t, err, sizeof(err));
	CHECK(rc == 0 && t.kind == FR_TRIG_CRASH && !err[0], "trigger crash");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		rc = fr_trigger_parse(bad[i], &t, err, sizeof(err));
		CHECK(rc == -EINVAL && !strncmp(err, "--trigger ", 10) &&
		      !strncmp(err + 10, bad[i], strlen(bad[i])),
		      "trigger '%s' refused: -EINVAL and the error in err (%d: %s)", bad[i], rc, err);
	}
	fr_trigger_parse("wakes>1ms", &t, err, sizeof(err));
	CHECK(!strcmp(err, "--trigger wakes>1ms: no such figure (poll>D, sched_delay>D)"),
	      "unknown figure: the message (%s)", err);
	fr_trigger_parse("crashed", &t, err, sizeof(err));
	CHECK(!strcmp(err, "--trigger crashed: not a trigger (long_poll, stalled, lost_waker, never_yields, self_wake, starvation, deadlock, poll>D, sched_delay>D, exit, crash)"),
	      "not a trigger: the message (%s)", err);
	rc = fr_trigger_parse("crashed", &t, err, 12);
	CHECK(rc == -EINVAL && !strcmp(err, "--trigger c"), "a short buffer: truncated (%s)", err);
}

/* Intent: dump names are <exe>-<pid>-<UTC ms>-<trigger>, each part in [A-Za-z0-9._+-] and at
 * most 64 characters, "process" when the executable's name is unusable; the buffer bounds. */
static void test_dump_name(void)
{
	const struct timespec wall = { 1796008502, 118999999 }; /* 2026-11-30 03:15:02.118999999 UTC */
	char buf[300], longs[201], want[300];
	static const char *const unusable[] = { "..", "", ".", "/usr/bin/", "/", "/x/..", NULL };

	fr_dump_name(buf, sizeof(buf), "/usr/bin/my server;rm -rf", 42, &wall, "poll>100ms");
	CHECK(!strcmp(buf, "my_server_rm_-rf-42-20261130T031502.118Z-poll+100ms"),
	      "dump name: %s", buf);
	fr_dump_name(buf, sizeof(buf), "svc", 4294967295u, &(struct timespec){ 0, 0 }, "sigusr1");
	CHECK(!strcmp(buf, "svc-4294967295-19700101T000000.000Z-sigusr1"), "dump name: %s", buf);
	fr_dump_name(buf, sizeof(buf), "a\xc3\xa9\x01\n\"<>/b", 1, &wall, "x/../y\\z");
	CHECK(!strcmp(buf, "b-1-20261130T031502.118Z-x_.._y_z"), "dump name: last component, '/' in the trigger: %s",
	      buf);
	fr_dump_name(buf, sizeof(buf), "\xc3\xa9t\xc3\xa9", 1, &wall, "exit");
	CHECK(!strcmp(buf, "__t__-1-20261130T031502.118Z-exit"), "dump name: non-ASCII bytes → '_': %s",
	      buf);
	for (size_t i = 0; i < sizeof(unusable) / sizeof(unusable[0]); i++) {
		fr_dump_name(buf, sizeof(buf), unusable[i], 7, &wall, "crash");
		CHECK(!strcmp(buf, "process-7-20261130T031502.118Z-crash"), "dump name: exe %s%s%s → %s",
		      unusable[i] ? "'" : "", unusable[i] ? unusable[i] : "NULL", unusable[i] ? "'" : "",
		      buf);
	}
	memset(longs, 'a', 200);
	longs[200] = 0;
	fr_dump_name(buf, sizeof(buf), longs, 7, &wall, longs);
	snprintf(want, sizeof(want), "%.64s-7-20261130T031502.118Z-%.64s", longs, longs);
	CHECK(!strcmp(buf, want) && strlen(buf) == 64 + 24 + 64,
	      "dump name: 200-character parts cut to 64 (%zu characters)", strlen(buf));
	memset(buf, 'X', sizeof(buf));
	fr_dump_name(buf, 16, "svc", 7, &wall, "crash");
	CHECK(!strcmp(buf, "svc-7-20261130T") && buf[16] == 'X', "dump name: a 16-byte buffer: %s", buf);
}

/* ---- the dump directory ---- */
static char tmpdir[64];

static bool make_file(const char *dir, const char *name, size_t size, time_t mtime)
{
	char path[PATH_MAX];
	int fd;
	bool ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return false;
	ok = !ftruncate(fd, (off_t)size);
	close(fd);
	return ok && !utimensat(AT_FDCWD, path, (struct timespec[2]){ { mtime, 0 }, { mtime, 0 } }, 0);
}

static long file_size(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, &st) ? -1 : (long)st.st_size;
}

static size_t dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return SIZE_MAX;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

#define DUMP(k) "svc-1-20261130T00000" #k ".000Z-sigusr1"
static const char *const dump_ext[3] = { ".json", ".html", ".trace.json" };

static bool dump_present(const char *dir, const char *base, bool all)
{
	char name[256];
	size_t n = 0;

	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "%s%s", base, dump_ext[i]);
		n += file_size(dir, name) == 1000;
	}
	return all ? n == 3 : n == 0;
}

/*
 * Intent: the dump budget removes the oldest dumps' files first until the total is within it,
 * never the dumps being kept (the new one; the one whose --on-dump command still reads it), never
 * files that are not dumps (notes.txt), never symlinks or directories named like dumps; returns
 * the bytes and files removed.
 */
static void test_dir_enforce(void)
{
	const char *bases[3] = { DUMP(1), DUMP(2), DUMP(3) };
	const char *k3[1] = { DUMP(3) }, *k13[3] = { DUMP(1), NULL, DUMP(3) };
	char name[256], dir[128];
	size_t nrm = 99;
	uint64_t rm;
	bool made = true;

	snprintf(dir, sizeof(dir), "%s/enforce", tmpdir);
	if (!CHECK(!mkdir(dir, 0700), "enforce: directory made"))
		return;
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < 3; i++) {
			snprintf(name, sizeof(name), "%s%s", bases[k], dump_ext[i]);
			made &= make_file(dir, name, 1000, 1000000 + k * 1000 + i);
		}
	made &= make_file(dir, "notes.txt", 100000, 100); /* older than every dump */
	snprintf(name, sizeof(name), "%s/svc-1-20261130T000000.000Z-link.json", dir);
	made &= !symlink("notes.txt", name);
	snprintf(name, sizeof(name), "%s/svc-1-20261130T000000.000Z-dir.json", dir);
	made &= !mkdir(name, 0700);
	if (!CHECK(made, "enforce: 3 dumps × 3 files of 1000 bytes, notes.txt, a symlink, a directory"))
		return;

	rm = fr_dir_enforce(dir, 0, k13, 3, &nrm);
	CHECK(rm == 3000 && nrm == 3 && dump_present(dir, DUMP(1), true) &&
	      dump_present(dir, DUMP(2), false) && dump_present(dir, DUMP(3), true),
	      "enforce: max 0, keep the oldest (its --on-dump runs) and the newest: only the middle dump goes (%llu bytes, %zu files)",
	      (unsigned long long)rm, nrm);
	for (int i = 0; i < 3; i++) { /* dump 2 again */
		snprintf(name, sizeof(name), "%s%s", bases[1], dump_ext[i]);
		made &= make_file(dir, name, 1000, 1000000 + 1000 + i);
	}
	if (!CHECK(made, "enforce: dump 2 made again"))
		return;
	rm = fr_dir_enforce(dir, 100000, k3, 1, &nrm);
	CHECK(rm == 0 && nrm == 0, "enforce: 9000 bytes within 100000: nothing removed");
	rm = fr_dir_enforce(dir, 6500, k3, 1, &nrm);
	CHECK(rm == 3000 && nrm == 3, "enforce: max 6500: %llu bytes, %zu files removed",
	      (unsigned long long)rm, nrm);
	CHECK(dump_present(dir, DUMP(1), false) && dump_present(dir, DUMP(2), true) &&
	      dump_present(dir, DUMP(3), true), "enforce: … the oldest dump's files");
	CHECK(file_size(dir, "notes.txt") == 100000, "enforce: … notes.txt untouched");
	rm = fr_dir_enforce(dir, 0, k3, 1, &nrm);
	CHECK(rm == 3000 && nrm == 3, "enforce: max 0, keep the newest: %llu bytes, %zu files removed",
	      (unsigned long long)rm, nrm);
	CHECK(dump_present(dir, DUMP(2), false) && dump_present(dir, DUMP(3), true),
	      "enforce: … only the newest dump remains");
	CHECK(file_size(dir, "notes.txt") == 100000 &&
	      file_size(dir, "svc-1-20261130T000000.000Z-link.json") >= 0 &&
	      file_size(dir, "svc-1-20261130T000000.000Z-dir.json") >= 0,
	      "enforce: … notes.txt, the symlink and the directory still there");
	rm = fr_dir_enforce(dir, 0, NULL, 0, &nrm);
	CHECK(rm == 3000 && nrm == 3 && dump_present(dir, DUMP(3), false) &&
	      file_size(dir, "notes.txt") == 100000, "enforce: max 0, keep none: the last dump goes");
	snprintf(name, sizeof(name), "%s/missing", tmpdir);
	nrm = 99;
	rm = fr_dir_enforce(name, 0, NULL, 0, &nrm);
	CHECK(rm == 0 && nrm == 0, "enforce: a missing directory: nothing, no crash");
}

/* Intent: the dump directory must exist, be a directory and take a new file; the probe file
 * that proves it is not left behind. */
static void test_dir_check(void)
{
	char path[PATH_MAX], err[512];
	int rc;

	snprintf(path, sizeof(path), "%s/nope", tmpdir);
	err[0] = 0;
	rc = fr_dir_check(path, err, sizeof(err));
	CHECK(rc == -ENOENT && strstr(err, path), "dir check: missing → -ENOENT (%s)", err);
	snprintf(path, sizeof(path), "%s/plain", tmpdir);
	make_file(tmpdir, "plain", 10, 1000);
	err[0] = 0;
	rc = fr_dir_check(path, err, sizeof(err));
	CHECK(rc == -ENOTDIR && strstr(err, path), "dir check: a regular file → -ENOTDIR (%s)", err);
	snprintf(path, sizeof(path), "%s/good", tmpdir);
	mkdir(path, 0700);
	rc = fr_dir_check(path, err, sizeof(err));
	CHECK(rc == 0 && dir_entries(path) == 0, "dir check: a good directory → 0, left empty (%d)", rc);
	if (geteuid() != 0) {
		snprintf(path, sizeof(path), "%s/ro", tmpdir);
		mkdir(path, 0500);
		rc = fr_dir_check(path, err, sizeof(err));
		CHECK(rc == -EACCES, "dir check: a read-only directory → -EACCES (%d: %s)", rc, err);
	} else {
		printf("# dir check: read-only directory not tried (root passes access checks)\n");
	}
}

/* ---- the analyzer's on_detect ---- */
#define MAXD 64
static struct an_detect det[MAXD];
static size_t ndet;
static struct analyzer *A;

static void on_detect(void *ctx, const struct an_detect *d)
{
	(void)ctx;
	if (ndet < MAXD)
		det[ndet] = *d;
	ndet++;
}

static struct analyzer *fresh(struct an_opts *o)
{
	o->on_detect = on_detect;
	o->detect_ctx = NULL;
	ndet = 0;
	memset(det, 0, sizeof(det));
	an_free(A);
	A = an_new(o);
	return A;
}

static void ev_cw(uint32_t type, uint64_t ts, uint32_t tid, uint64_t id, uint64_t a,
		  uint64_t cpu_wait)
{
	struct tet_event_rec r = { { ts, type, PID, tid, 0 }, id, 0x1000 + id, a, 0, cpu_wait };

	an_event(A, &r, sizeof(r));
}

static void ev(uint32_t type, uint64_t ts, uint32_t tid, uint64_t id, uint64_t a)
{
	ev_cw(type, ts, tid, id, a, 0);
}

static void spawn(uint64_t ts, uint64_t id, uint32_t kind, uint32_t line)
{
	struct tet_spawn_rec r = spawn_rec(ts, PID, id);

	r.kind = kind;
	r.line = line;
	r.file_len = r.file_copied = 7;
	memcpy(r.data, "main.rs", 7);
	an_event(A, &r, sizeof(r));
}

#define BEGIN(ts, tid, id, w) ev(TET_EV_POLL_BEGIN, ts, tid, id, (uint32_t)(w))
#define END(ts, tid, id, res) ev(TET_EV_POLL_END, ts, tid, id, res)
#define WAKE(ts, tid, id, byref) ev(TET_EV_WAKE, ts, tid, id, byref)
#define CLONE(ts, tid, id) ev(TET_EV_WAKER_CLONE, ts, tid, id, 0)

static size_t count_what(unsigned what)
{
	size_t n = 0;

	for (size_t i = 0; i < ndet && i < MAXD; i++)
		n += det[i].what == what;
	return n;
}

static bool det_is(size_t i, unsigned what, uint64_t id, uint64_t ts, uint64_t at, uint64_t value,
		   uint64_t threshold, uint32_t tid)
{
	const struct an_detect *d = &det[i];
	bool ok = i < ndet && d->what == what && d->pid == PID && d->task_id == id &&
		  d->header_ptr == 0x1000 + id && d->ts == ts && d->at == at && d->value_ns == value &&
		  d->threshold_ns == threshold && d->tid == tid;

	if (!ok && i < ndet)
		printf("#   detection %zu: what %u pid %u tid %u task %llu hdr 0x%llx ts %llu at %llu value %llu threshold %llu\n",
		       i, d->what, d->pid, d->tid, (unsigned long long)d->task_id,
		       (unsigned long long)d->header_ptr, (unsigned long long)d->ts,
		       (unsigned long long)d->at, (unsigned long long)d->value_ns,
		       (unsigned long long)d->threshold_ns);
	return ok;
}

/*
 * Intent: long_poll is told at each new occurrence (each poll over the threshold), with the
 * poll's begin, its time, the task and its site; short polls and the kinds left out of
 * `detect` are not told.
 */
static void test_detect_long_poll(void)
{
	struct an_opts o;
	const struct an_finding *f;

	an_opts_default(&o);
	if (!CHECK(fresh(&o) != NULL, "detect: analyzer"))
		return;
	spawn(1000 * MS, 1, TET_KIND_SPAWN, 42);
	BEGIN(1001 * MS, W0, 1, 0);
	END(1051 * MS, W0, 1, TET_POLL_PENDING);
	CHECK(ndet == 1 && det_is(0, AN_LONG_POLL, 1, 1001 * MS, 1051 * MS, 50 * MS, 10 * MS, W0),
	      "detect: a 50 ms poll → one long_poll: begin, value 50 ms, threshold 10 ms, task 1, tid (%zu told)",
	      ndet);
	CHECK(det[0].site && det[0].site->line == 42 && det[0].site->file_len == 7,
	      "detect: … with the task's spawn site");
	WAKE(1100 * MS, OUT, 1, 1);
	BEGIN(1101 * MS, W1, 1, 1);
	END(1106 * MS, W1, 1, TET_POLL_PENDING);
	CHECK_U64(ndet, 1, "detect: a 5 ms poll: nothing told");
	WAKE(1200 * MS, OUT, 1, 1);
	BEGIN(1201 * MS, W1, 1, 1);
	END(1231 * MS, W1, 1, TET_POLL_PENDING);
	CHECK(ndet == 2 && det_is(1, AN_LONG_POLL, 1, 1201 * MS, 1231 * MS, 30 * MS, 10 * MS, W1),
	      "detect: the same task's second long poll → told again (a new occurrence)");
	CHECK(an_findings(A, &f) == 1 && f[0].occurrences == 2, "detect: … one finding, 2 occurrences");
	WAKE(1300 * MS, OUT, 1, 1);
	BEGIN(1301 * MS, W0, 1, 0);
	END(1311 * MS, W0, 1, TET_POLL_PENDING);
	CHECK_U64(ndet, 2, "detect: a poll of exactly long_poll_ns (10 ms): not told");

	/* spawn_blocking tasks are exempt from long_poll */
	spawn(2000 * MS, 2, TET_KIND_BLOCKING, 43);
	BEGIN(2001 * MS, W0, 2, -1);
	END(2101 * MS, W0, 2, TET_POLL_READY);
	CHECK_U64(ndet, 2, "detect: a blocking task's 100 ms poll: no long_poll");

	/* the time the poll's thread sat preempted (cpu_wait) is not the task's: long_poll is
	 * judged on the rest; poll>D on the wall time */
	an_opts_default(&o);
	o.trig_poll_ns = 20 * MS;
	if (!fresh(&o))
		return;
	spawn(1000 * MS, 3, TET_KIND_SPAWN, 42);
	ev_cw(TET_EV_POLL_BEGIN, 1001 * MS, W0, 3, 0, 1000);
	ev_cw(TET_EV_POLL_END, 1051 * MS, W0, 3, TET_POLL_PENDING, 1000 + 30 * MS);
	CHECK(ndet == 2 && det_is(0, AN_DETECT_POLL, 3, 1001 * MS, 1051 * MS, 50 * MS, 20 * MS, W0) &&
	      det_is(1, AN_LONG_POLL, 3, 1001 * MS, 1051 * MS, 20 * MS, 10 * MS, W0),
	      "detect: a 50 ms poll, 30 ms of it preempted: poll>20ms told 50 ms, long_poll 20 ms");
	WAKE(1100 * MS, OUT, 3, 1);
	ev_cw(TET_EV_POLL_BEGIN, 1101 * MS, W0, 3, 0, 1000);
	ev_cw(TET_EV_POLL_END, 1151 * MS, W0, 3, TET_POLL_PENDING, 1000 + 45 * MS);
	CHECK(ndet == 3 && det[2].what == AN_DETECT_POLL && count_what(AN_LONG_POLL) == 1,
	      "detect: … 45 ms preempted: 5 ms left, no long_poll (poll>20ms still told)");

	/* kinds not in `detect` are not told */
	an_opts_default(&o);
	o.detect = AN_DETECT_ALL & ~(1u << AN_LONG_POLL);
	if (!fresh(&o))
		return;
	spawn(1000 * MS, 1, TET_KIND_SPAWN, 42);
	BEGIN(1001 * MS, W0, 1, 0);
	END(1051 * MS, W0, 1, TET_POLL_PENDING);
	CHECK_U64(ndet, 0, "detect: long_poll left out of `detect`: not told");
}

/* Intent: poll>D and sched_delay>D fire at every poll / scheduling delay strictly above D,
 * independently of `detect`, with the figure the reports show. */
static void test_detect_thresholds(void)
{
	struct an_opts o;

	an_opts_default(&o);
	o.detect = 0; /* only the thresholds */
	o.trig_poll_ns = 20 * MS;
	if (!CHECK(fresh(&o) != NULL, "thresholds: analyzer"))
		return;
	spawn(1000 * MS, 1, TET_KIND_SPAWN, 42);
	BEGIN(1001 * MS, W0, 1, 0);
	END(1031 * MS, W0, 1, TET_POLL_PENDING);
	CHECK(ndet == 1 && det_is(0, AN_DETECT_POLL, 1, 1001 * MS, 1031 * MS, 30 * MS, 20 * MS, W0),
	      "thresholds: poll>20ms: a 30 ms poll told (begin, 30 ms, threshold 20 ms)");
	WAKE(1100 * MS, OUT, 1, 1);
	BEGIN(1101 * MS, W0, 1, 0);
	END(1111 * MS, W0, 1, TET_POLL_PENDING);
	CHECK_U64(ndet, 1, "thresholds: … a 10 ms poll not");
	WAKE(1200 * MS, OUT, 1, 1);
	BEGIN(1201 * MS, W0, 1, 0);
	END(1221 * MS, W0, 1, TET_POLL_PENDING);
	CHECK_U64(ndet, 1, "thresholds: … a poll of exactly 20 ms not (longer than)");
	WAKE(1300 * MS, OUT, 1, 1);
	BEGIN(1301 * MS, W0, 1, 0);
	END(1321 * MS + 1, W0, 1, TET_POLL_PENDING);
	CHECK(ndet == 2 && det[1].what == AN_DETECT_POLL && det[1].value_ns == 20 * MS + 1,
	      "thresholds: … 20 ms + 1 ns told");
	WAKE(1400 * MS, OUT, 1, 1);
	BEGIN(1401 * MS, W0, 1, 0);
	END(1441 * MS, W0, 1, TET_POLL_PENDING);
	CHECK(ndet == 3 && det_is(2, AN_DETECT_POLL, 1, 1401 * MS, 1441 * MS, 40 * MS, 20 * MS, W0),
	      "thresholds: … every such poll, not once per task");
	CHECK_U64(count_what(AN_LONG_POLL), 0, "thresholds: detect 0: no long_poll told");

	an_opts_default(&o);
	o.detect = 0;
	o.trig_sched_ns = 5 * MS;
	if (!fresh(&o))
		return;
	spawn(1000 * MS, 1, TET_KIND_SPAWN, 42);
	BEGIN(1002 * MS, W0, 1, 0); /* spawn → poll: 2 ms */
	END(1003 * MS, W0, 1, TET_POLL_PENDING);
	CHECK_U64(ndet, 0, "thresholds: sched_delay>5ms: a 2 ms delay not told");
	WAKE(1100 * MS, OUT, 1, 1);
	BEGIN(1108 * MS, W1, 1, 1);
	END(1109 * MS, W1, 1, TET_POLL_PENDING);
	CHECK(ndet == 1 && det_is(0, AN_DETECT_SCHED, 1, 1100 * MS, 1108 * MS, 8 * MS, 5 * MS, W1),
	      "thresholds: … wake → poll 8 ms told: ts = the wake, value 8 ms, the polling thread");
	WAKE(1200 * MS, OUT, 1, 1);
	BEGIN(1203 * MS, W1, 1, 1);
	END(1204 * MS, W1, 1, TET_POLL_PENDING);
	CHECK_U64(ndet, 1, "thresholds: … a 3 ms one not");
	spawn(2000 * MS, 2, TET_KIND_SPAWN, 43);
	BEGIN(2006 * MS, W0, 2, 0);
	END(2007 * MS, W0, 2, TET_POLL_READY);
	CHECK(ndet == 2 && det_is(1, AN_DETECT_SCHED, 2, 2000 * MS, 2006 * MS, 6 * MS, 5 * MS, W0),
	      "thresholds: … spawn → first poll 6 ms told (ts = the spawn)");
}

/* Intent: the time-based kinds are told once per occurrence at the tick that finds them, not
 * at every later tick nor at the late wake; a new pending period is a new occurrence. */
static void test_detect_ticks(void)
{
	struct an_opts o;

	an_opts_default(&o);
	if (!CHECK(fresh(&o) != NULL, "ticks: analyzer"))
		return;
	/* stalled: a live waker exists (cloned), no wake for 2 s */
	spawn(10000 * MS, 5, TET_KIND_SPAWN, 42);
	BEGIN(10001 * MS, W0, 5, 0);
	CLONE(10002 * MS, W0, 5);
	END(10003 * MS, W0, 5, TET_POLL_PENDING);
	an_tick(A, 10500 * MS);
	CHECK_U64(ndet, 0, "ticks: pending 0.5 s: nothing");
	an_tick(A, 11003 * MS);
	CHECK(ndet == 1 && det_is(0, AN_STALLED, 5, 10003 * MS, 11003 * MS, 1000 * MS, 1000 * MS, W0),
	      "ticks: pending 1 s with a waker alive → one stalled (pending since, 1 s)");
	an_tick(A, 11500 * MS);
	an_tick(A, 12003 * MS);
	CHECK_U64(ndet, 1, "ticks: … pending 2 s, later ticks: not told again");
	WAKE(12100 * MS, OUT, 5, 1);
	CHECK_U64(ndet, 1, "ticks: … nor at its late wake");
	BEGIN(12101 * MS, W0, 5, 0);
	END(12102 * MS, W0, 5, TET_POLL_PENDING);
	an_tick(A, 13200 * MS);
	CHECK(ndet == 2 && det_is(1, AN_STALLED, 5, 12102 * MS, 13200 * MS, 1098 * MS, 1000 * MS, W0),
	      "ticks: a second pending period → told again");

	/* lost_waker: pending with no waker alive */
	spawn(20000 * MS, 6, TET_KIND_SPAWN, 44);
	BEGIN(20001 * MS, W1, 6, 1);
	END(20002 * MS, W1, 6, TET_POLL_PENDING);
	an_tick(A, 20302 * MS);
	CHECK(ndet == 3 && det_is(2, AN_LOST_WAKER, 6, 20002 * MS, 20302 * MS, 300 * MS, 250 * MS, W1),
	      "ticks: pending 300 ms, no waker → lost_waker");
	an_tick(A, 21500 * MS);
	CHECK(ndet == 3 && count_what(AN_STALLED) == 2, "ticks: … not told again, and not as stalled");

	/* never_yields: inside one poll for 1 s, then its end is a long poll */
	spawn(30000 * MS, 7, TET_KIND_SPAWN, 45);
	BEGIN(30001 * MS, W0, 7, 0);
	an_tick(A, 31001 * MS);
	CHECK(ndet == 4 && det_is(3, AN_NEVER_YIELDS, 7, 30001 * MS, 31001 * MS, 1000 * MS, 1000 * MS, W0),
	      "ticks: in a poll for 1 s → never_yields (poll begin)");
	an_tick(A, 31200 * MS);
	CHECK_U64(ndet, 4, "ticks: … not told again");
	END(31501 * MS, W0, 7, TET_POLL_READY);
	CHECK(ndet == 5 && det_is(4, AN_LONG_POLL, 7, 30001 * MS, 31501 * MS, 1500 * MS, 10 * MS, W0),
	      "ticks: … its end: long_poll of 1.5 s");
}

/* Intent: self_wake is told once per task, when its ratio of wakes is passed with the minimum
 * of self-wakes; its value is the count of self-waking polls. */
static void test_detect_self_wake(void)
{
	struct an_opts o;
	uint64_t ts = 1000 * MS;

	an_opts_default(&o);
	if (!CHECK(fresh(&o) != NULL, "self_wake: analyzer"))
		return;
	spawn(ts, 9, TET_KIND_SPAWN, 46);
	for (int i = 1; i <= 150; i++) {
		BEGIN(ts + 1000, W0, 9, 0);
		WAKE(ts + 2000, W0, 9, 1); /* by the polling thread, no yield: unexplained */
		END(ts + 3000, W0, 9, TET_POLL_NOTIFIED);
		if (i == 2)
			CHECK_U64(ndet, 0, "self_wake: 2 self-waking polls (below the minimum 3): nothing");
		if (i == 3)
			CHECK(ndet == 1 && det_is(0, AN_SELF_WAKE, 9, ts + 3000, ts + 3000, 3, 0, W0),
			      "self_wake: the 3rd → told (value: 3 self-waking polls)");
		ts += 10000;
	}
	CHECK_U64(ndet, 1, "self_wake: 50 more: told once per task");
}

/* Intent: on_detect does not depend on the findings list: with max_findings 1 a second task's
 * long poll is still told though its finding is omitted. */
static void test_detect_full_list(void)
{
	struct an_opts o;
	const struct an_finding *f;

	an_opts_default(&o);
	o.max_findings = 1;
	if (!CHECK(fresh(&o) != NULL, "full list: analyzer"))
		return;
	spawn(1000 * MS, 1, TET_KIND_SPAWN, 42);
	spawn(1000 * MS, 2, TET_KIND_SPAWN, 42);
	BEGIN(1001 * MS, W0, 1, 0);
	END(1051 * MS, W0, 1, TET_POLL_PENDING);
	BEGIN(1052 * MS, W0, 2, 0);
	END(1092 * MS, W0, 2, TET_POLL_PENDING);
	CHECK(an_findings(A, &f) == 1 && an_totals(A)->findings_omitted == 1,
	      "full list: one finding, one omitted");
	CHECK(ndet == 2 && det_is(1, AN_LONG_POLL, 2, 1052 * MS, 1092 * MS, 40 * MS, 10 * MS, W0),
	      "full list: … task 2's long poll still told");
	WAKE(1100 * MS, OUT, 2, 1);
	BEGIN(1101 * MS, W0, 2, 0);
	END(1131 * MS, W0, 2, TET_POLL_PENDING);
	CHECK(ndet == 3 && det_is(2, AN_LONG_POLL, 2, 1101 * MS, 1131 * MS, 30 * MS, 10 * MS, W0),
	      "full list: … and its next occurrence");
	an_free(A);
	A = NULL;
}

/* ---- the recorder's decisions (flight_rt.c) ---- */
static struct report_trigger trig(const char *kind, uint64_t ts, uint64_t at)
{
	struct report_trigger t = { 0 };

	t.kind = t.spec = kind;
	t.ts = ts;
	t.at_ns = at;
	return t;
}

/* Intent: detector and threshold triggers within the cooldown of the last one taken are
 * suppressed, measured on the events' clock (at_ns), in either direction; SIGUSR1 and exits are
 * never held; a full queue suppresses; due = now + post (an exit: at most 100 ms). */
static void test_rt_cooldown(void)
{
	struct flight_opts o = { 0 };
	struct fr_rt fl;
	struct report_trigger t;
	struct fr_pending p;

	o.on = true;
	o.post_ns = 500 * MS;
	o.cooldown_ns = 3 * SEC;
	if (!CHECK(fr_rt_init(&fl, &o) == 0, "fr_rt_init"))
		return;
	t = trig("long_poll", 10 * SEC, 10 * SEC);
	CHECK(fr_rt_fire(&fl, &t, 11 * SEC, PID, PID, true, false) == FR_QUEUED, "first detector trigger queued");
	CHECK_U64(fl.q[0].due, 11 * SEC + 500 * MS, "due --post-trigger after the fire");
	t = trig("long_poll", 12 * SEC, 12 * SEC + 999 * MS);
	CHECK(fr_rt_fire(&fl, &t, 14 * SEC, PID, PID, true, false) == FR_SUPPRESSED,
	      "2.999 s later on the events' clock (4 s later by the wall): suppressed");
	t = trig("long_poll", 7 * SEC, 7 * SEC + 1);
	CHECK(fr_rt_fire(&fl, &t, 14 * SEC, PID, PID, true, false) == FR_SUPPRESSED,
	      "an earlier event within the cooldown (out of order): suppressed");
	t = trig("long_poll", 7 * SEC, 7 * SEC);
	CHECK(fr_rt_fire(&fl, &t, 14 * SEC, PID, PID, true, false) == FR_QUEUED,
	      "exactly the cooldown before: taken");
	t = trig("sigusr1", 7 * SEC, 7 * SEC + 1);
	CHECK(fr_rt_fire(&fl, &t, 14 * SEC, 0, PID, false, false) == FR_QUEUED,
	      "SIGUSR1 within the cooldown: taken");
	t = trig("process_exit", 7 * SEC, 7 * SEC + 1);
	CHECK(fr_rt_fire(&fl, &t, 14 * SEC, PID, PID, false, true) == FR_QUEUED, "an exit: taken");
	CHECK_U64(fl.q[fl.nq - 1].due, 14 * SEC + 100 * MS, "an exit's dump is due 100 ms later, not 500");
	CHECK_U64(fl.suppressed, 2, "two suppressed");
	CHECK_U64(fr_rt_keep_from(&fl, 20 * SEC), 7 * SEC, "the store keeps the oldest queued trigger's time");
	while (fl.nq < FR_PENDING_MAX) {
		t = trig("sigusr1", 15 * SEC, 15 * SEC);
		fr_rt_fire(&fl, &t, 15 * SEC, 0, PID, false, false);
	}
	t = trig("sigusr1", 16 * SEC, 16 * SEC);
	CHECK(fr_rt_fire(&fl, &t, 16 * SEC, 0, PID, false, false) == FR_SUPPRESSED &&
	      fl.suppressed == 3, "a full queue suppresses (and counts)");
	CHECK(!fr_rt_take_due(&fl, 11 * SEC + 499 * MS, false, &p), "not due before --post-trigger");
	CHECK(fr_rt_take_due(&fl, 11 * SEC + 500 * MS, false, &p) && p.t.at_ns == 10 * SEC &&
	      fl.dump_index == 1 && fl.nq == FR_PENDING_MAX - 1, "due at --post-trigger: the first queued");
	CHECK(fr_rt_take_due(&fl, 0, true, &p) && p.t.at_ns == 7 * SEC && fl.dump_index == 2,
	      "anyway: the next one, whatever the time");
	t = trig("poll", 0, 0);
	fl.nq = 0;
	fr_rt_fire(&fl, &t, 30 * SEC, PID, PID, false, false);
	CHECK_U64(fl.q[0].t.at_ns, 30 * SEC, "a trigger with no time is stamped now");
	fr_rt_free(&fl);
}

/* Intent: a detection fires the matching trigger with the lowest threshold (a poll above a
 * poll> threshold strictly, sched_delay likewise, a detector by kind), the detail names the
 * task, its site, the figure and the threshold; nothing matches → no trigger. */
static void test_rt_match(void)
{
	struct flight_opts o = { 0 };
	struct fr_rt fl;
	struct an_detect d = { 0 };
	struct report_trigger t;
	char err[256];

	fr_trigger_parse("poll>100ms", &o.trig[o.ntrig++], err, sizeof(err));
	fr_trigger_parse("poll>40ms", &o.trig[o.ntrig++], err, sizeof(err));
	fr_trigger_parse("long_poll", &o.trig[o.ntrig++], err, sizeof(err));
	fr_trigger_parse("sched_delay>5ms", &o.trig[o.ntrig++], err, sizeof(err));
	if (!CHECK(fr_rt_init(&fl, &o) == 0, "fr_rt_init"))
		return;
	CHECK(fl.trig_poll_ns == 40 * MS && fl.trig_sched_ns == 5 * MS &&
	      fl.detectors == 1u << AN_LONG_POLL && fr_rt_needs_live(&fl),
	      "the live analyzer gets the lowest thresholds and the detector kinds");
	d.what = AN_DETECT_POLL;
	d.pid = PID;
	d.task_id = 7;
	d.value_ns = 150 * MS;
	d.ts = 1 * SEC;
	d.at = 2 * SEC;
	CHECK(fr_rt_match_detect(&fl, &d, "src/main.rs:3:5", &t) && !strcmp(t.spec, "poll>40ms") &&
	      t.threshold_ns == 40 * MS && t.ts == 1 * SEC && t.at_ns == 2 * SEC && t.task_id == 7,
	      "a 150 ms poll: the 40 ms trigger (the lowest of those it crosses)");
	CHECK(!strcmp(t.detail, "poll: task 7 (src/main.rs:3:5) of PID 100: 150ms, over 40ms"),
	      "the detail (%s)", t.detail);
	d.value_ns = 40 * MS;
	CHECK(!fr_rt_match_detect(&fl, &d, "x", &t), "a poll of exactly the threshold: none");
	d.what = AN_DETECT_SCHED;
	d.value_ns = 6 * MS;
	CHECK(fr_rt_match_detect(&fl, &d, "x", &t) && !strcmp(t.kind, "sched_delay"),
	      "a 6 ms scheduling delay: sched_delay>5ms");
	d.what = AN_LONG_POLL;
	d.threshold_ns = 10 * MS;
	CHECK(fr_rt_match_detect(&fl, &d, "x", &t) && !strcmp(t.kind, "long_poll") &&
	      t.threshold_ns == 10 * MS, "a long_poll finding: the detector, its own threshold");
	d.what = AN_STALLED;
	CHECK(!fr_rt_match_detect(&fl, &d, "x", &t), "a kind no trigger names: none");
	fr_rt_free(&fl);
}

/* Intent: a crash always fires (its signal in the detail), an exit only with --trigger exit. */
static void test_rt_exit(void)
{
	struct flight_opts o = { 0 };
	struct tet_exit_rec r = { 0 };
	struct report_trigger t;
	struct fr_rt fl;
	char err[256];

	if (!CHECK(fr_rt_init(&fl, &o) == 0, "fr_rt_init"))
		return;
	r.h.pid = PID;
	r.h.ts = 5 * SEC;
	r.code = 3 << 8;
	CHECK(!fr_rt_exit_trigger(&fl, &r, "", &t), "an exit without --trigger exit: none");
	r.code = 11 | 0x80;
	CHECK(fr_rt_exit_trigger(&fl, &r, "SIGSEGV", &t) && !strcmp(t.kind, "process_crash") &&
	      t.signal == 11 && t.core_dumped && t.exit_status == -1 && t.at_ns == 5 * SEC &&
	      !strcmp(t.detail, "process 100 killed by SIGSEGV (core dumped)"),
	      "a crash always: process_crash, SIGSEGV, core dumped (%s)", t.detail);
	fr_rt_free(&fl);
	fr_trigger_parse("exit", &o.trig[o.ntrig++], err, sizeof(err));
	if (!CHECK(fr_rt_init(&fl, &o) == 0, "fr_rt_init"))
		return;
	r.code = 3 << 8;
	CHECK(fr_rt_exit_trigger(&fl, &r, "", &t) && !strcmp(t.kind, "process_exit") &&
	      t.exit_status == 3 && !strcmp(t.detail, "process 100 exited with status 3"),
	      "--trigger exit: process_exit, status 3 (%s)", t.detail);
	CHECK(!fr_rt_needs_live(&fl), "exit triggers need no live analyzer");
	fr_rt_free(&fl);
}

/* Intent: the window a dump replays: [trigger - window, due]; the store's oldest record when
 * it holds less, cut_by_memory only when the size bound evicted that part; a poll that began
 * before the window kept whole when the store still has it; a size window: all of the store. */
static void test_rt_plan(void)
{
	struct flight_opts o = { 0 };
	struct fr_stats st = { 0 };
	struct fr_pending p = { 0 };
	struct fr_plan pl;

	o.window_ns = 10 * SEC;
	p.t.at_ns = 100 * SEC;
	p.due = 100 * SEC + 500 * MS;
	st.oldest_ts = 80 * SEC;
	fr_rt_plan(&o, &st, &p, &pl);
	CHECK(pl.from == 90 * SEC && pl.to == p.due && !pl.cut_by_memory, "time window: [at - 10 s, due]");
	st.oldest_ts = 95 * SEC;
	st.evicted_by_size = 1;
	st.evicted_by_size_until = 94 * SEC;
	fr_rt_plan(&o, &st, &p, &pl);
	CHECK(pl.from == 95 * SEC && pl.cut_by_memory, "the store holds less, the size bound evicted it: cut_by_memory");
	st.evicted_by_size_until = 89 * SEC;
	fr_rt_plan(&o, &st, &p, &pl);
	CHECK(pl.from == 95 * SEC && !pl.cut_by_memory, "evicted by size before the window only: not cut");
	st.oldest_ts = 50 * SEC;
	p.t.ts = 70 * SEC;
	fr_rt_plan(&o, &st, &p, &pl);
	CHECK_U64(pl.from, 70 * SEC, "a poll begun before the window: from its start");
	p.t.ts = 40 * SEC;
	fr_rt_plan(&o, &st, &p, &pl);
	CHECK_U64(pl.from, 90 * SEC, "… unless the store no longer has it");
	o.window_ns = 0;
	p.t.ts = 0;
	fr_rt_plan(&o, &st, &p, &pl);
	CHECK_U64(pl.from, 50 * SEC, "size window: from the store's oldest record");
	st.oldest_ts = 0;
	fr_rt_plan(&o, &st, &p, &pl);
	CHECK_U64(pl.from, pl.to, "an empty store: an empty window at the end");
}

/* Intent: snapshots are taken every max(window / 4096, 1 s), kept in a ring of 4096 read oldest
 * first; the base of a window is the newest at or before its start; subtraction never wraps. */
static void test_rt_snaps(void)
{
	struct flight_opts o = { 0 };
	struct tet_counters c = { 0 }, now = { 0 };
	uint64_t exact[TET_EV_COUNT] = { 0 };
	const struct fr_snap *b;
	struct fr_rt fl;
	size_t n = FR_SNAPS_MAX + 10;

	o.window_ns = 8192 * SEC;
	if (!CHECK(fr_rt_init(&fl, &o) == 0, "fr_rt_init"))
		return;
	CHECK_U64(fl.snap_every, 2 * SEC, "a 8192 s window: a snapshot every 2 s");
	CHECK(fr_rt_snap_due(&fl, 1) && !fr_rt_snap_due(&fl, 2 * SEC) && fr_rt_snap_due(&fl, 2 * SEC + 1),
	      "due once per period");
	for (size_t i = 0; i < n; i++) {
		c.drops[0] = i;
		exact[1] = 10 * i;
		fr_rt_snap_add(&fl, (i + 1) * SEC, &c, exact);
	}
	CHECK(fl.nsnaps == FR_SNAPS_MAX && fr_rt_snap_at(&fl, 0)->ts == 11 * SEC &&
	      fr_rt_snap_at(&fl, FR_SNAPS_MAX - 1)->ts == n * SEC, "a ring: the oldest 10 overwritten, read oldest first");
	b = fr_rt_snap_base(&fl, 100 * SEC + 500 * MS);
	CHECK(b && b->ts == 100 * SEC && b->c.drops[0] == 99 && b->exact[1] == 990,
	      "the base of a window: the newest snapshot at or before its start");
	CHECK(fr_rt_snap_base(&fl, 10 * SEC) == NULL, "none before the oldest kept");
	now.drops[0] = 150;
	now.drops[1] = 5;
	c = (struct tet_counters){ 0 };
	c.drops[0] = 99;
	c.drops[1] = 7;
	fr_counters_since(&now, &c);
	CHECK(now.drops[0] == 51 && now.drops[1] == 0, "counters since the base (a lower counter: 0)");
	fr_rt_free(&fl);
	o.window_ns = 60 * SEC;
	fr_rt_init(&fl, &o);
	CHECK_U64(fl.snap_every, SEC, "a short window: every second");
	fr_rt_free(&fl);
}

/* ---- raw batches (fr_store_add_raw, fr_store_decode) ----
 * Batches built as the patched Tokio writes them (PROBES.md "Batch format"), on a TSC at 3 GHz
 * (tsc = 3 × ns) that the clock pairs describe. */
#define TSC(ns) (3 * (ns))
struct rb {
	size_t nw;
	unsigned char rec[sizeof(struct tet_batch_rec) + sizeof(struct tet_batch_head) +
			  TET_BATCH_DATA_MAX];
};

static uint64_t *rb_words(struct rb *b)
{
	return (uint64_t *)(b->rec + sizeof(struct tet_batch_rec) + sizeof(struct tet_batch_head));
}

static void rb_put(struct rb *b, const uint64_t *w, size_t n)
{
	memcpy(rb_words(b) + b->nw, w, n * 8);
	b->nw += n;
}

static void rb_string(struct rb *b, uint64_t addr, const char *str)
{
	uint64_t w[2 + 32] = { strlen(str) | (uint64_t)TET_BREC_STRING << 56, addr };

	memcpy(&w[2], str, strlen(str));
	rb_put(b, w, 2 + (strlen(str) + 7) / 8);
}

static void rb_spawn(struct rb *b, uint64_t id, uint64_t ns, uint64_t file, uint64_t type,
		     const char *fname, const char *tname)
{
	uint64_t w[7] = { id | (uint64_t)TET_BREC_SPAWN << 56, 0x1000 + id, TSC(ns), file,
			  strlen(fname) | 7ull << 32, type, strlen(tname) | 3ull << 32 };

	rb_put(b, w, 7);
}

static void rb_poll(struct rb *b, uint64_t id, uint64_t begin, uint64_t end)
{
	uint64_t w[4] = { id | (uint64_t)TET_BREC_POLL << 56 |
			  (uint64_t)TET_POLL_PENDING << 60, TSC(begin), TSC(end), 0 };

	rb_put(b, w, 4);
}

/* The ring record of thread tid's batch seq, flushed at ns. Returns its size. */
static size_t rb_seal(struct rb *b, uint32_t tid, uint64_t seq, uint64_t ns, uint64_t prev_ns)
{
	struct tet_batch_rec *r = (void *)b->rec;
	struct tet_batch_head *h = (void *)r->data;

	memset(r, 0, sizeof(*r) + sizeof(*h));
	r->h = (struct tet_hdr){ ns, TET_REC_BATCH, PID, tid, 0 };
	r->buf = 0xa000 + tid;
	r->seq = h->seq = seq;
	r->len = h->len = (uint32_t)(b->nw * 8);
	r->copied = (uint32_t)(sizeof(*h) + b->nw * 8);
	r->clock = h->flush_clock = h->last_clock = TSC(ns);
	r->mono_ns = h->flush_ns = ns;
	h->window_clock = TSC(prev_ns);
	h->magic = TET_BATCH_MAGIC;
	h->version = TET_BATCH_VERSION;
	h->head_bytes = sizeof(*h);
	h->data_cap = TET_BATCH_DATA_MAX;
	h->tid = tid;
	h->clock = TET_BATCH_CLOCK_TSC;
	h->reason = TET_BATCH_REASON_FULL;
	h->open_max = TET_BATCH_OPEN_MAX;
	h->rate = 1;
	b->nw = 0;
	return sizeof(*r) + r->copied;
}

/* what a follower hands over */
struct fseen {
	uint64_t entries, recs, pairs, batches, sweeps, bad;
	uint64_t last_seq;          /* the last batch's seq */
	uint64_t seq_jumps;         /* batches whose seq is not the previous one + 1 */
	uint64_t jump_to;           /* … the seq after the last jump */
	uint64_t pair_before_jump;  /* a clock pair came right before that batch */
	bool last_was_pair;
	uint64_t spawn_ok;          /* spawn records handed back whole (unpacked) */
	uint64_t last_rec_ts;
};

static void fcollect(void *ctx, enum fr_raw_kind kind, const void *rec, size_t size)
{
	struct fseen *v = ctx;

	v->entries++;
	if (kind == FR_RAW_PAIR) {
		v->pairs++;
		v->last_was_pair = size == 16;
		return;
	}
	if (kind == FR_RAW_BATCH) {
		const struct tet_batch_rec *r = rec;

		if (size < sizeof(*r) || r->h.type != TET_REC_BATCH) {
			v->bad++;
		} else {
			if (v->batches && r->seq != v->last_seq + 1) {
				v->seq_jumps++;
				v->jump_to = r->seq;
				v->pair_before_jump += v->last_was_pair;
			}
			v->last_seq = r->seq;
			v->batches++;
		}
	} else if (kind == FR_RAW_SWEEP) {
		v->sweeps++;
	} else if (kind == FR_RAW_REC) {
		const struct tet_hdr *h = rec;

		v->recs++;
		if (size < sizeof(*h) || h->ts < v->last_rec_ts)
			v->bad++;
		else
			v->last_rec_ts = h->ts;
		if (h->type == TET_EV_SPAWN) {
			const struct tet_spawn_rec *r = rec;

			v->spawn_ok += size == sizeof(*r) && r->task_id == 77 && r->file_copied == 5 &&
				       !memcmp(r->data, "a.rs!", 5);
		}
	}
	v->last_was_pair = false;
}

/*
 * Intent: the window's follower (the live analysis's second stage) reads every entry once, in
 * arrival order, as the window grows — batches, clock pairs, other records (a spawn unpacked
 * whole) — and says when it has read all; one that keeps up is never counted as skipping
 * while the window rotates; when the window drops a chunk it has not read, it goes on at the
 * oldest chunk held, that chunk's clock pairs first, and what it missed is counted.
 */
static void test_follow(void)
{
	struct fr_store *s = fr_store_new(0, 8ull << 20); /* the last 8 MiB: 4 chunks */
	struct rb *b = calloc(1, sizeof(*b));
	struct fseen v = { 0 };
	struct fr_follow_stats fs;
	struct tet_spawn_rec sp = spawn_rec(5 * MS, PID, 77);
	uint64_t pair[2], seq = 1, ns = 10 * MS, fails = 0, added = 0, done_wrong = 0, seq_behind;
	size_t size;

	if (!CHECK(s && b, "follow: store created"))
		goto out;
	CHECK(fr_store_follow_done(s) && fr_store_follow(s, 100, fcollect, &v) == 0,
	      "follow: an empty window: done, nothing handed");
	pair[0] = TSC(MS);
	pair[1] = MS;
	fails += fr_store_add_raw(s, FR_RAW_PAIR, pair, 16) != 0;
	memcpy(sp.data, "a.rs!", 5);
	sp.file_copied = 5;
	fails += fr_store_add(s, &sp, sizeof(sp)) != 0;
	/* keeps up: ~20 batches of 200 polls (~6.5 KiB each) between reads, for ~40 chunks */
	for (int round = 0; round < 600; round++) {
		for (int i = 0; i < 20; i++, seq++, ns += MS) {
			for (int k = 0; k < 200; k++)
				rb_poll(b, 1 + k % 8, ns - MS + 4 * (uint64_t)k * 1000, ns - MS + 4 * (uint64_t)k * 1000 + 100);
			size = rb_seal(b, W0, seq, ns, ns - MS);
			fails += fr_store_add_raw(s, FR_RAW_BATCH, b->rec, size) != 0;
			added++;
			if (i == 10)
				fails += add_ev(s, TET_EV_WAKE, ns, PID, 3) != 0;
		}
		pair[0] = TSC(ns);
		pair[1] = ns;
		fails += fr_store_add_raw(s, FR_RAW_PAIR, pair, 16) != 0;
		done_wrong += fr_store_follow_done(s);
		while (fr_store_follow(s, 7, fcollect, &v))
			;
		done_wrong += !fr_store_follow_done(s);
	}
	CHECK_U64(done_wrong, 0, "follow: not done while entries wait, done once all are read");
	fr_store_follow_stats(s, &fs);
	CHECK_U64(fails, 0, "follow: every entry taken");
	CHECK(v.batches == added && v.seq_jumps == 0 && v.recs == 601 && v.pairs == 601 &&
	      v.bad == 0 && v.spawn_ok == 1,
	      "follow: keeping up, every entry once in order (%llu of %llu batches, %llu jumps, "
	      "%llu records, %llu pairs, spawn whole %llu)",
	      (unsigned long long)v.batches, (unsigned long long)added,
	      (unsigned long long)v.seq_jumps, (unsigned long long)v.recs,
	      (unsigned long long)v.pairs, (unsigned long long)v.spawn_ok);
	CHECK(fs.skipped_chunks == 0 && fs.skipped_bytes == 0 && fs.skipped_batches == 0 &&
	      fs.behind_bytes == 0 && fs.entries == v.entries,
	      "follow: a follower that keeps up skips nothing while the window rotates (%llu chunks skipped)",
	      (unsigned long long)fs.skipped_chunks);
	/* falls behind: 16 MiB more (twice the window), the first batch read */
	seq_behind = seq;
	for (int i = 0; i < 2600; i++, seq++, ns += MS) {
		for (int k = 0; k < 200; k++)
			rb_poll(b, 1 + k % 8, ns - MS + 4 * (uint64_t)k * 1000, ns - MS + 4 * (uint64_t)k * 1000 + 100);
		size = rb_seal(b, W0, seq, ns, ns - MS);
		fails += fr_store_add_raw(s, FR_RAW_BATCH, b->rec, size) != 0;
		if (!i)
			fr_store_follow(s, 1, fcollect, &v);
		if (i % 100 == 0) {
			pair[0] = TSC(ns);
			pair[1] = ns;
			fails += fr_store_add_raw(s, FR_RAW_PAIR, pair, 16) != 0;
		}
	}
	fr_store_follow_stats(s, &fs);
	CHECK(fs.skipped_chunks >= 4 && fs.skipped_bytes >= (8ull << 20) && fs.behind_bytes > (4ull << 20) &&
	      fs.skipped_until > 10 * MS,
	      "follow: behind by twice the window: the chunks dropped unread are counted (%llu chunks, %llu KiB, %llu KiB behind)",
	      (unsigned long long)fs.skipped_chunks, (unsigned long long)(fs.skipped_bytes >> 10),
	      (unsigned long long)(fs.behind_bytes >> 10));
	v.seq_jumps = v.pair_before_jump = 0;
	v.last_was_pair = false; /* a pair must come in what it reads now */
	while (fr_store_follow(s, 64, fcollect, &v))
		;
	CHECK(v.seq_jumps == 1 && v.pair_before_jump == 1 && v.last_seq == seq - 1 && v.bad == 0,
	      "follow: it goes on at the oldest chunk held, its clock pairs first, to the newest batch "
	      "(%llu jumps, to seq %llu, pair first %llu, last %llu of %llu)",
	      (unsigned long long)v.seq_jumps, (unsigned long long)v.jump_to,
	      (unsigned long long)v.pair_before_jump, (unsigned long long)v.last_seq,
	      (unsigned long long)(seq - 1));
	fr_store_follow_stats(s, &fs);
	CHECK(fr_store_follow_done(s) && fs.behind_bytes == 0, "follow: done again, nothing behind");
	CHECK(v.seq_jumps == 1 && fs.skipped_batches == v.jump_to - seq_behind - 1,
	      "follow: the batches skipped are counted, each (%llu; the jump skipped %llu)",
	      (unsigned long long)fs.skipped_batches,
	      (unsigned long long)(v.jump_to - seq_behind - 1));
out:
	free(b);
	fr_store_free(s);
}

/* what a decoded window hands over */
struct rseen {
	uint64_t n, spawns, metas, begins, ends, others, outside, min_ts, max_ts;
	uint64_t from, to;
	struct tet_spawn_rec sp[8];  /* by task id (1..4) */
	struct tet_meta_rec meta;
};

static void rcollect(void *ctx, const void *rec, size_t size)
{
	struct rseen *v = ctx;
	const struct tet_hdr *h = rec;

	v->n++;
	if (h->ts < v->min_ts)
		v->min_ts = h->ts;
	if (h->ts > v->max_ts)
		v->max_ts = h->ts;
	if (h->type == TET_EV_SPAWN && size == sizeof(struct tet_spawn_rec)) {
		const struct tet_spawn_rec *r = rec;

		v->spawns++;
		if (r->task_id < 8)
			v->sp[r->task_id] = *r;
		return;
	}
	if (h->type == TET_EV_META && size == sizeof(struct tet_meta_rec)) {
		v->metas++;
		v->meta = *(const struct tet_meta_rec *)rec;
		return;
	}
	if (h->ts < v->from || h->ts > v->to)
		v->outside++;
	if (h->type == TET_EV_POLL_BEGIN)
		v->begins++;
	else if (h->type == TET_EV_POLL_END)
		v->ends++;
	else
		v->others++;
}

static bool spawn_is(const struct tet_spawn_rec *r, uint64_t ts, const char *f, const char *t)
{
	return r->h.ts == ts && r->h.tid == W0 && r->line == 7 && r->col == 3 &&
	       r->file_copied == strlen(f) && !memcmp(r->data, f, strlen(f)) &&
	       r->type_copied == strlen(t) && !memcmp(r->data + TET_FILE_MAX, t, strlen(t));
}

/*
 * Intent: a window of raw batches decodes, at dump time, into what the batches hold: the
 * events of the window and only those, the spawn (site, type, name, thread, time) of a task
 * spawned long before the window and alive in it, not that of a task that ended before it,
 * the strings of a spawn inside the window whose string records fell out of it; no loss seen
 * where none was; ~16 bytes held per event; a malformed batch refused and counted.
 */
static void test_raw_window(void)
{
	const uint64_t polls = 400, step = 10 * MS, nb = 300; /* 3 s, 40k polls/s */
	struct fr_store *s = fr_store_new(SEC, 256ull << 20);
	struct rb *b = calloc(1, sizeof(*b));
	uint64_t fails = 0, pair[2], want_begins = 0, want_ends = 0, from, to;
	struct fr_decoded dd = { 0 };
	struct fr_stats st;
	struct rseen v;
	size_t n;

	if (!CHECK(s && b, "raw: store created"))
		goto out;
	for (uint64_t ns = 0; ns < 2 * step; ns += step) { /* the tracer's pairs: 2 at start */
		pair[0] = TSC(ns + MS);
		pair[1] = ns + MS;
		fails += fr_store_add_raw(s, FR_RAW_PAIR, pair, 16) != 0;
	}
	/* batch 0 at 10 ms: task 1 spawned (alive all along), task 2 spawned and ended */
	rb_string(b, 0x5000, "src/alive.rs");
	rb_string(b, 0x6000, "Alive");
	rb_spawn(b, 1, 9 * MS, 0x5000, 0x6000, "src/alive.rs", "Alive");
	{
		uint64_t m[4] = { 1 | (uint64_t)TET_BREC_META << 56, 64, 5, 0 };

		memcpy(&m[3], "alpha", 5);
		rb_put(b, m, 4);
	}
	rb_spawn(b, 2, 9 * MS + 500, 0x5000, 0x6000, "src/alive.rs", "Alive");
	{
		uint64_t t[3] = { 2 | (uint64_t)TET_BREC_TERMINATE << 56, 0x1002, TSC(9 * MS + 900) };

		rb_put(b, t, 3);
		/* task 4 ends here, before the batch of the thread that spawned it comes */
		t[0] = 4 | (uint64_t)TET_BREC_TERMINATE << 56;
		t[1] = 0x1004;
		rb_put(b, t, 3);
	}
	n = rb_seal(b, W0, 0, step, 0);
	fails += fr_store_add_raw(s, FR_RAW_BATCH, b->rec, n) != 0;
	rb_spawn(b, 4, 9 * MS + 100, 0x5000, 0x6000, "src/alive.rs", "Alive");
	n = rb_seal(b, W1, 0, step + 1000, 0);
	fails += fr_store_add_raw(s, FR_RAW_BATCH, b->rec, n) != 0;
	for (uint64_t k = 1; k <= nb; k++) {
		uint64_t t0 = k * step, flush = t0 + step;

		for (uint64_t i = 0; i < polls; i++)
			rb_poll(b, 1, t0 + i * 20000, t0 + i * 20000 + 5000);
		if (k == nb - 10) /* task 3, in the window: its strings were sent at 10 ms only */
			rb_spawn(b, 3, flush - 1000, 0x5000, 0x6000, "src/alive.rs", "Alive");
		n = rb_seal(b, W0, k, flush, t0);
		fails += fr_store_add_raw(s, FR_RAW_BATCH, b->rec, n) != 0;
		pair[0] = TSC(flush + MS); /* … then one per drain */
		pair[1] = flush + MS;
		fails += fr_store_add_raw(s, FR_RAW_PAIR, pair, 16) != 0;
		fr_store_trim(s, flush);
	}
	CHECK_U64(fails, 0, "raw: every pair and batch taken");
	fr_store_stats(s, &st);
	from = st.oldest_ts;
	to = (nb + 1) * step;
	CHECK(from > 1500 * MS, "raw: the window kept the last second or so (from %llu ms), not the first batch",
	      (unsigned long long)(from / MS));
	for (uint64_t k = 1; k <= nb; k++)
		for (uint64_t i = 0; i < polls; i++) {
			want_begins += k * step + i * 20000 >= from;
			want_ends += k * step + i * 20000 + 5000 >= from;
		}
	CHECK(st.bytes <= 17 * st.records + FR_CHUNK_BYTES && st.records >= want_begins + want_ends,
	      "raw: %llu bytes for %llu events held: %.1f bytes an event (≤ 17, + a chunk)",
	      (unsigned long long)st.bytes, (unsigned long long)st.records,
	      (double)st.bytes / (double)(st.records ? st.records : 1));

	memset(&v, 0, sizeof(v));
	v.min_ts = UINT64_MAX;
	v.from = from;
	v.to = to;
	if (!CHECK(!fr_store_decode(s, from, to, 0, 1, NULL, false, rcollect, &v, &dd),
		   "raw: the window decodes"))
		goto out;
	CHECK(v.begins == want_begins && v.ends == want_ends && v.outside == 0 && v.others == 0,
	      "raw: polls of the window: %llu begins, %llu ends (want %llu, %llu), %llu outside it, %llu others",
	      (unsigned long long)v.begins, (unsigned long long)v.ends,
	      (unsigned long long)want_begins, (unsigned long long)want_ends,
	      (unsigned long long)v.outside, (unsigned long long)v.others);
	CHECK(v.spawns == 2 && spawn_is(&v.sp[1], 9 * MS, "src/alive.rs", "Alive") &&
	      v.sp[2].task_id == 0 && v.sp[4].task_id == 0, "raw: task 1 spawned before the window (site, type, thread, time), tasks 2 and 4 (ended before it; 4's end came before its spawn) not: %llu spawns",
	      (unsigned long long)v.spawns);
	CHECK(dd.spawns_before == 1, "raw: one spawn from before the window (%llu)",
	      (unsigned long long)dd.spawns_before);
	CHECK(v.metas == 1 && v.meta.task_id == 1 && v.meta.name_copied == 5 &&
	      !memcmp(v.meta.name, "alpha", 5) && v.meta.size == 64,
	      "raw: task 1's name and size come with it");
	CHECK(spawn_is(&v.sp[3], (nb - 9) * step - 1000, "src/alive.rs", "Alive"),
	      "raw: task 3, spawned in the window, gets the strings sent before it");
	CHECK(tb_stats(dd.win)->lost_batches == 0 && tb_stats(dd.win)->bad_batches == 0,
	      "raw: no batch lost or refused in the window's decoding");
	CHECK_U64(dd.records, v.n, "raw: records counted = records given");
	/* what reached the probes in the window (a dump's probe_hits): its events only */
	CHECK(dd.by_type[TET_EV_POLL_BEGIN] == want_begins && dd.by_type[TET_EV_POLL_END] == want_ends &&
	      dd.by_type[TET_EV_SPAWN] == 1,
	      "raw: the window's events by probe: %llu begins, %llu ends, %llu spawns (the older task's not)",
	      (unsigned long long)dd.by_type[TET_EV_POLL_BEGIN],
	      (unsigned long long)dd.by_type[TET_EV_POLL_END],
	      (unsigned long long)dd.by_type[TET_EV_SPAWN]);
	tb_free(dd.win);
	{ /* the strings kept, for a live analysis that missed their batch */
		char str[64];
		ssize_t got = fr_store_string(s, PID, 0x5000, str, sizeof(str));

		CHECK(got == 12 && !memcmp(str, "src/alive.rs", 12) &&
		      fr_store_string(s, PID, 0x5000, str, 3) == 3 &&
		      fr_store_string(s, PID2, 0x5000, str, sizeof(str)) == -ENOENT &&
		      fr_store_string(s, PID, 0x7000, str, sizeof(str)) == -ENOENT,
		      "raw: a kept string by process and address, cut to the room given (%zd)", got);
	}

	/* another process: nothing */
	memset(&v, 0, sizeof(v));
	v.min_ts = UINT64_MAX;
	fr_store_decode(s, from, to, PID2, 1, NULL, false, rcollect, &v, &dd);
	CHECK(v.n == 0, "raw: pid %d: nothing (%llu)", PID2, (unsigned long long)v.n);
	tb_free(dd.win);

	/* malformed: refused, counted, not kept */
	rb_poll(b, 1, 0, 1);
	n = rb_seal(b, W0, nb + 1, to, to);
	((struct tet_batch_head *)((struct tet_batch_rec *)b->rec)->data)->len = 12;
	CHECK(fr_store_add_raw(s, FR_RAW_BATCH, b->rec, n) == -EINVAL,
	      "raw: a batch whose length is no multiple of 8 is refused");
	CHECK(fr_store_add_raw(s, FR_RAW_BATCH, b->rec, 40) == -EINVAL,
	      "raw: a truncated ring record is refused");
	fr_store_stats(s, &st);
	CHECK_U64(st.raw_refused, 2, "raw: … and counted");
out:
	free(b);
	fr_store_free(s);
}

/* the order task 1's records come in */
struct order {
	uint64_t spawns, polls, polls_before_spawn;
	uint64_t spawns2, ends2; /* task 2's */
	uint64_t spawns3;
};

static void order_rec(void *ctx, const void *rec, size_t size)
{
	struct order *o = ctx;
	const struct tet_hdr *h = rec;

	if (h->type == TET_EV_SPAWN && ((const struct tet_spawn_rec *)rec)->task_id == 1)
		o->spawns++;
	if (h->type == TET_EV_SPAWN && ((const struct tet_spawn_rec *)rec)->task_id == 2)
		o->spawns2++;
	if (h->type == TET_EV_SPAWN && ((const struct tet_spawn_rec *)rec)->task_id == 3)
		o->spawns3++;
	if (h->type == TET_EV_TERMINATE && ((const struct tet_event_rec *)rec)->task_id == 2)
		o->ends2++;
	if (h->type == TET_EV_POLL_BEGIN && ((const struct tet_event_rec *)rec)->task_id == 1) {
		o->polls++;
		o->polls_before_spawn += !o->spawns;
	}
}

/*
 * Intent: a thread that spawns and then stays quiet (a spawner blocked in block_on: its batch
 * comes seconds later) is swept by the recorder, and a dump meets its spawns, once, before the
 * polls of its tasks on other threads; a sweep of a buffer that has moved on, or that holds
 * nothing new, is not kept.
 */
static void test_raw_sweep(void)
{
	const uint32_t SP = 300; /* the spawner's thread */
	struct fr_store *s = fr_store_new(0, 64ull << 20);
	struct rb *b = calloc(1, sizeof(*b)), *sw = calloc(1, sizeof(*sw));
	struct tet_batch_rec *r;
	struct fr_sweep v[4];
	struct fr_decoded dd = { 0 };
	struct fr_stats st;
	struct order o = { 0 };
	uint64_t pair[2] = { TSC(MS), MS }, seq = 0;
	size_t n, nv, swn;

	if (!CHECK(s && b && sw, "sweep: store created"))
		goto out;
	fr_store_add_raw(s, FR_RAW_PAIR, pair, 16);
	pair[0] = TSC(2 * MS);
	pair[1] = 2 * MS;
	fr_store_add_raw(s, FR_RAW_PAIR, pair, 16);
	/* the spawner's first batch (no records: here is my buffer), then it spawns task 1 */
	n = rb_seal(b, SP, 0, 3 * MS, 0);
	fr_store_add_raw(s, FR_RAW_BATCH, b->rec, n);
	rb_string(sw, 0x5000, "src/main.rs");
	rb_string(sw, 0x6000, "Main");
	rb_spawn(sw, 1, 4 * MS, 0x5000, 0x6000, "src/main.rs", "Main");
	rb_spawn(sw, 2, 4 * MS + 500, 0x5000, 0x6000, "src/main.rs", "Main");
	/* 40 ms of polls of task 1 on a worker, then the recorder's sweeps */
	for (uint64_t k = 0; k < 4; k++, seq++) {
		for (uint64_t i = 0; i < 100; i++)
			rb_poll(b, 1, 5 * MS + k * 10 * MS + i * 50000, 5 * MS + k * 10 * MS + i * 50000 + 1000);
		fr_store_add_raw(s, FR_RAW_BATCH, b->rec, rb_seal(b, W0, seq, 15 * MS + k * 10 * MS, 0));
	}
	nv = fr_store_sweeps_due(s, 45 * MS, 30 * MS, v, 4);
	CHECK(nv == 1 && v[0].tid == SP && v[0].next_seq == 1,
	      "sweep: the spawner, silent for 42 ms, is due (%zu due); the worker is not", nv);
	r = (struct tet_batch_rec *)sw->rec;
	swn = sw->nw;
	rb_seal(sw, SP, 1, 45 * MS, 3 * MS); /* what its buffer holds: batch 1, unflushed */
	CHECK(nv == 1 && fr_sweep_read_ok(&v[0], r->data, r->data) &&
	      !fr_store_add_sweep(s, &v[0], 45 * MS, r->data, r->data + sizeof(struct tet_batch_head), r->len),
	      "sweep: the read is kept");
	CHECK(fr_store_sweeps_due(s, 50 * MS, 30 * MS, v, 4) == 0, "sweep: not due again at once");
	nv = fr_store_sweeps_due(s, 80 * MS, 30 * MS, v, 4); /* the worker too, now */
	for (size_t i = 0; i < nv; i++)
		if (v[i].tid == SP)
			fr_store_add_sweep(s, &v[i], 80 * MS, r->data,
					   r->data + sizeof(struct tet_batch_head), r->len);
	fr_store_stats(s, &st);
	CHECK(nv == 2 && st.sweeps_kept == 1, "sweep: the same buffer again is not kept (%llu kept)",
	      (unsigned long long)st.sweeps_kept);
	for (size_t i = 0; i < nv; i++)
		if (v[i].tid == SP)
			CHECK(!fr_sweep_news(&v[i], r->data),
			      "sweep: … and its head alone says so (no more reads)");
	v[0] = (struct fr_sweep){ .pid = PID, .tid = SP, .buf = 0xa000 + SP, .next_seq = 1 };
	((struct tet_batch_head *)r->data)->seq = 2;
	CHECK(!fr_sweep_read_ok(&v[0], r->data, r->data), "sweep: a buffer past its unflushed batch is refused");
	((struct tet_batch_head *)r->data)->seq = 1;
	/* 3 s more of the worker's polls, then the spawner's batch 1; task 2 ends at 99 ms, in
	 * the worker's batch flushed at 105 ms */
	for (uint64_t k = 4; k < 300; k++, seq++) {
		for (uint64_t i = 0; i < 100; i++)
			rb_poll(b, 1, 5 * MS + k * 10 * MS + i * 50000, 5 * MS + k * 10 * MS + i * 50000 + 1000);
		if (k == 9) {
			uint64_t t[3] = { 2 | (uint64_t)TET_BREC_TERMINATE << 56, 0x1002, TSC(99 * MS) };

			rb_put(b, t, 3);
			/* task 3: spawned at 99.5 ms by the worker, its batch flushed at 105 ms */
			rb_spawn(b, 3, 99 * MS + 500000, 0x5000, 0x6000, "src/main.rs", "Main");
		}
		fr_store_add_raw(s, FR_RAW_BATCH, b->rec, rb_seal(b, W0, seq, 15 * MS + k * 10 * MS, 0));
	}
	sw->nw = swn; /* the same records, flushed at 3 s */
	fr_store_add_raw(s, FR_RAW_BATCH, sw->rec, rb_seal(sw, SP, 1, 3000 * MS, 3 * MS));
	if (!CHECK(!fr_store_decode(s, 0, UINT64_MAX, 0, 0, NULL, false, order_rec, &o, &dd),
		   "sweep: the window decodes"))
		goto out;
	CHECK(o.spawns == 1 && o.polls == 30000 && o.polls_before_spawn == 0,
	      "sweep: task 1's spawn comes once, before its 30000 polls (%llu spawns, %llu polls, %llu before it)",
	      (unsigned long long)o.spawns, (unsigned long long)o.polls,
	      (unsigned long long)o.polls_before_spawn);
	tb_free(dd.win);
	/* a window [100 ms, 2 s]: the spawns (4 ms) were flushed at 3 s, after it: the sweep at
	 * 45 ms saw them */
	memset(&o, 0, sizeof(o));
	if (!CHECK(!fr_store_decode(s, 100 * MS, 2000 * MS, 0, 0, NULL, false, order_rec, &o, &dd),
		   "sweep: a window [100 ms, 2 s] decodes"))
		goto out;
	CHECK(o.spawns == 1 && o.polls == 19000 && o.polls_before_spawn == 0 && dd.spawns_before == 3,
	      "sweep: in [100 ms, 2 s], task 1's spawn (4 ms, its batch at 3 s) comes first, as a task older than the window (%llu spawns, %llu polls, %llu before it, %llu older)",
	      (unsigned long long)o.spawns, (unsigned long long)o.polls,
	      (unsigned long long)o.polls_before_spawn, (unsigned long long)dd.spawns_before);
	CHECK(o.spawns3 == 1, "sweep: task 3, spawned at 99.5 ms in a batch flushed at 105 ms, comes as older than the window (%llu)",
	      (unsigned long long)o.spawns3);
	CHECK(o.spawns2 == 1 && o.ends2 == 1,
	      "sweep: task 2, ended at 99 ms in a batch flushed at 105 ms, comes with its end (%llu spawns, %llu ends)",
	      (unsigned long long)o.spawns2, (unsigned long long)o.ends2);
	tb_free(dd.win);
out:
	free(b);
	free(sw);
	fr_store_free(s);
}

static void count_rec(void *ctx, const void *rec, size_t size)
{
	(*(uint64_t *)ctx)++;
}

/*
 * Intent: raw batches whose records are anything a hostile process can write (random words,
 * kinds and lengths, under heads that pass) are kept, walked and decoded without a crash or an
 * unbounded table: the spawns kept and the ends waiting for their spawn stay within their bounds,
 * the memory within the window's.
 */
static void test_raw_hostile(void)
{
	struct fr_store *s = fr_store_new(0, 16ull << 20);
	struct rb *b = calloc(1, sizeof(*b));
	uint64_t x = 0x9e3779b97f4a7c15ull, pair[2], got = 0, fails = 0;
	struct fr_decoded dd = { 0 };
	int ret;
	struct fr_stats st;

	if (!CHECK(s && b, "hostile: store created"))
		goto out;
	for (uint64_t k = 0; k < 3000; k++) {
		size_t nw = (size_t)(x % (TET_BATCH_DATA_MAX / 8));

		pair[0] = TSC(k * MS + 500);
		pair[1] = k * MS + 500;
		fr_store_add_raw(s, FR_RAW_PAIR, pair, 16);
		for (size_t i = 0; i < nw; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			/* mostly records of known kinds with random payloads, some pure noise */
			rb_words(b)[i] = i % 5 ? (x & ~(0xfull << 56)) | (x % 13) << 56 : x;
		}
		b->nw = nw;
		fails += fr_store_add_raw(s, FR_RAW_BATCH, b->rec,
					  rb_seal(b, W0 + (uint32_t)(k % 7), k / 7, (k + 1) * MS, k * MS)) != 0;
		if (k % 100 == 0)
			fr_store_trim(s, (k + 1) * MS);
	}
	fr_store_stats(s, &st);
	CHECK_U64(fails, 0, "hostile: every batch with a valid head is kept");
	CHECK(st.spawns_kept <= FR_SPAWNS_MAX && st.bytes <= (16ull << 20) + (16ull << 20) / 8 + (16ull << 20) / 16,
	      "hostile: %llu spawns kept, %llu bytes held: within the bounds",
	      (unsigned long long)st.spawns_kept, (unsigned long long)st.bytes);
	ret = fr_store_decode(s, 1500 * MS, UINT64_MAX, 0, 0, NULL, false, count_rec, &got, &dd);
	CHECK(!ret, "hostile: the window decodes (%llu records, %llu batches refused by the decoder)",
	      (unsigned long long)got, (unsigned long long)(dd.win ? tb_stats(dd.win)->bad_batches : 0));
	tb_free(dd.win);
out:
	free(b);
	fr_store_free(s);
}

int main(void)
{
	char tmpl[] = "/tmp/flight_test.XXXXXX";

	test_time_window();
	test_replay_filter();
	test_size_window();
	test_spawn_packing();
	test_spawns_before();
	test_spawn_meta();
	test_raw_window();
	test_raw_hostile();
	test_raw_sweep();
	test_follow();
	test_triggers();
	test_dump_name();
	if (CHECK(mkdtemp(tmpl) != NULL, "a temporary directory")) {
		snprintf(tmpdir, sizeof(tmpdir), "%s", tmpl);
		test_dir_enforce();
		test_dir_check();
		if (nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS))
			printf("# could not remove %s\n", tmpdir);
	}
	test_detect_long_poll();
	test_detect_thresholds();
	test_detect_ticks();
	test_detect_self_wake();
	test_detect_full_list();
	test_rt_cooldown();
	test_rt_match();
	test_rt_exit();
	test_rt_plan();
	test_rt_snaps();
	printf("# %d checks, %d failed\n", run, failed);
	return failed ? 1 : 0;
}
