// SPDX-License-Identifier: MIT
/*
 * sampling_test — adaptive sampling's two pure parts (docs/sampling.md):
 *   rule     tracer/capture/ratectl.c on measured numbers: a ring half full and filling faster
 *            than the tracer empties it and its free room absorbs for a second raises the rate by the
 *            power of two that fits (×2 … ×64 on rate + 1: rates are 2^k − 1, capped at 32767); a ring that drains, or fills
 *            slowly enough, is left alone however full; lost batches raise (why: loss); the
 *            tracer's CPU over its budget (when there is one) raises ×2 once per window; 2 s calm lowers ÷2, never
 *            under the floor; no raise within 50 ms of a lowering.
 *   analyzer tracer/analyze/analyzer.c on TET_REC_RATE / TET_REC_GAP records: a raise sets aside
 *            exactly the followed tasks its rate leaves out (by the process's own hash, written
 *            again here), and they are not judged stalled later; a task met at its spawn is
 *            followed when the rate in force picks it, one met without its spawn only when every
 *            rate so far picks it and no gap came from its process; a gap sets aside every live
 *            task of its process and the records of those that ended after it began, not those
 *            that ended before, nor any task of another process (--binary follows several); the
 *            rate history is kept.
 * Prints "ok - …" / "not ok - …"; exits 1 on a failure.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "check.h"
#include "ratectl.h"

#define MS 1000000ull
#define MB 1000000ull
#define PID 7
#define PID2 8  /* another process of the same path (--binary) */
#define W0 201
static uint32_t Pid = PID; /* the process the records below come from */

/* ---- the rule ---- */
/* A look at t ms, in/out in MB so far, lost batches, CPU ms, on a 64 MB ring. */
static uint32_t look(struct rc *c, uint64_t t_ms, double in_mb, double out_mb, uint64_t lost,
		     uint64_t cpu_ms, uint32_t *why)
{
	struct rc_look l = { .ns = t_ms * MS, .in = (uint64_t)(in_mb * MB),
			     .out = (uint64_t)(out_mb * MB), .size = 64 * MB, .lost = lost,
			     .cpu_ns = cpu_ms * MS };

	*why = 99;
	return rc_step(c, &l, why);
}

static void test_rule(void)
{
	struct rc c;
	uint32_t why, r;

	/* 400 MB/s in, 10 MB/s out: the ring is half full after 85 ms */
	rc_init(&c, 1, 0.5);
	CHECK_U64(look(&c, 0, 0, 0, 0, 0, &why), 1, "rule: the first look only measures");
	CHECK_U64(look(&c, 45, 18, 0.45, 0, 1, &why), 1, "rule: 27 %% full and filling fast: a burst the ring absorbs, no change");
	r = look(&c, 90, 36, 0.9, 0, 2, &why);
	/* in 400 MB/s; out 10 MB/s; room (64 - 35.1) MB per s ≈ 29: ×16 brings 400 to 25 < 39 */
	CHECK_U64(r, 31, "rule: 55 %% full, filling at 400 MB/s against 10 out + 29 room: ×16 (1 → 31: rates are 2^k − 1)");
	CHECK_U64(why, TET_RATE_RING, "rule: … why ring");
	/* at rate 31 the input is ~13 MB/s: the ring still fills, but slower than out + room */
	look(&c, 110, 36.25, 1.1, 0, 3, &why);
	r = look(&c, 140, 36.625, 1.4, 0, 3, &why);
	CHECK_U64(r, 31, "rule: 56 %% full, 13 MB/s in against 10 out + 28 room: stays");
	/* a ring that drains is left alone, however full */
	rc_init(&c, 1, 0.5);
	look(&c, 0, 50, 10, 0, 0, &why);
	r = look(&c, 30, 51, 12, 0, 1, &why);
	CHECK_U64(r, 1, "rule: 61 %% full but draining (33 in, 67 out MB/s): stays");
	/* the tracer took nothing out at all: still a rate the room absorbs */
	rc_init(&c, 1, 0.5);
	look(&c, 0, 30, 0, 0, 0, &why);
	r = look(&c, 30, 36, 0, 0, 1, &why);
	CHECK_U64(r, 15, "rule: no output, 200 MB/s in, 28 MB/s of room: ×8 (15)");
	/* lost batches, with the ring barely filled: the input decides, why loss */
	rc_init(&c, 1, 0.5);
	look(&c, 0, 0, 0, 0, 0, &why);
	r = look(&c, 30, 3, 1, 5, 1, &why);
	CHECK(r > 1 && why == TET_RATE_LOSS, "rule: lost batches with 100 MB/s in, 33 out: raised (%u), why loss (%u)", r, why);
	/* the cap */
	rc_init(&c, 16383, 0.5);
	look(&c, 0, 40, 0, 0, 0, &why);
	CHECK_U64(look(&c, 30, 50, 0, 0, 1, &why), RC_RATE_MAX, "rule: capped at 32768");
	/* the CPU budget: 0.8 CPU over a 500 ms window with a budget of 0.5 → ×2, once a window */
	rc_init(&c, 1, 0.5);
	look(&c, 0, 0, 0, 0, 0, &why);
	CHECK_U64(look(&c, 250, 1, 1, 0, 200, &why), 1, "rule: CPU not judged before a full window");
	r = look(&c, 500, 2, 2, 0, 400, &why);
	CHECK(r == 3 && why == TET_RATE_CPU, "rule: 0.8 CPU over a 0.5 budget: ×2 (%u), why cpu (%u)", r, why);
	CHECK_U64(look(&c, 600, 2, 2, 0, 480, &why), 3, "rule: no second CPU raise within the window");
	rc_init(&c, 1, 0);
	look(&c, 0, 0, 0, 0, 0, &why);
	look(&c, 500, 2, 2, 0, 400, &why);
	CHECK_U64(look(&c, 1000, 2, 2, 0, 800, &why), 1, "rule: without a budget the CPU raises nothing");
	/* calm: 2 s under 5 %, no loss, CPU under a third of the budget → ÷2; never under the floor */
	rc_init(&c, 3, 0.5);
	c.rate = 15;
	look(&c, 0, 0, 0, 0, 0, &why);
	for (uint64_t t = 100; t < 2100; t += 100)
		r = look(&c, t, 0, 0, 0, 0, &why);
	CHECK_U64(look(&c, 2100, 0, 0, 0, 0, &why), 7, "rule: 2 s calm: ÷2 (15 → 7)");
	CHECK_U64(why, TET_RATE_CALM, "rule: … why calm");
	CHECK_U64(look(&c, 2120, 40, 0, 0, 0, &why), 7,
		  "rule: no raise within 50 ms of a lowering, however fast the ring fills");
	for (uint64_t t = 2200; t < 8000; t += 100)
		r = look(&c, t, 40, 40, 0, 0, &why);
	CHECK_U64(r, 3, "rule: calm for long: down to the floor (3), not under it");
	/* not calm: a loss resets the clock */
	rc_init(&c, 1, 0.5);
	c.rate = 7;
	look(&c, 0, 0, 0, 0, 0, &why);
	look(&c, 1900, 0, 0, 0, 0, &why);
	look(&c, 1950, 0, 0, 1, 0, &why);
	CHECK_U64(look(&c, 2100, 0, 0, 1, 0, &why), 7, "rule: a loss 150 ms ago: not lowered");
}

/* ---- the analyzer ---- */
static struct analyzer *A;

static void ev(uint32_t type, uint64_t ts, uint64_t id, uint64_t a, uint64_t b)
{
	struct tet_event_rec r = { { ts, type, Pid, W0, 0 }, id, 0x1000 + id, a, b, 0 };

	an_event(A, &r, sizeof(r));
}

static void spawn(uint64_t ts, uint64_t id)
{
	static const char file[] = "src/main.rs", type[] = "main::job";
	struct tet_spawn_rec r;

	memset(&r, 0, sizeof(r));
	r.h = (struct tet_hdr){ ts, TET_EV_SPAWN, Pid, W0, 0 };
	r.task_id = id;
	r.header_ptr = 0x1000 + id;
	r.line = 7;
	r.file_len = r.file_copied = sizeof(file) - 1;
	r.type_len = r.type_copied = sizeof(type) - 1;
	memcpy(r.data, file, sizeof(file) - 1);
	memcpy(r.data + TET_FILE_MAX, type, sizeof(type) - 1);
	an_event(A, &r, sizeof(r));
}

static void poll(uint64_t ts, uint64_t id)
{
	ev(TET_EV_POLL_BEGIN, ts, id, 0, 0);
	ev(TET_EV_POLL_END, ts + 1000, id, TET_POLL_PENDING, 0);
}

static void rate(uint64_t ts, uint32_t n, uint32_t why)
{
	struct tet_rate_rec r = { { ts, TET_REC_RATE, 0, 0, 0 }, n, why };

	an_event(A, &r, sizeof(r));
}

static void gap(uint64_t ts, uint64_t from)
{
	struct tet_gap_rec r = { { ts, TET_REC_GAP, Pid, W0, 0 }, from, 1 };

	an_event(A, &r, sizeof(r));
}

/* The process's rule (PROBES.md "Sampling"), written again. */
static bool picks(uint64_t id, uint32_t n)
{
	return id * 0x9e3779b97f4a7c15ull <= (n == 1 ? UINT64_MAX : UINT64_MAX / n);
}

struct seen { uint64_t ids[64]; size_t n; uint32_t pid; };

static void collect(const struct an_task_summary *t, void *ctx)
{
	struct seen *s = ctx;

	if (s->n < 64 && t->pid == s->pid)
		s->ids[s->n++] = t->task_id;
}

static bool followed(uint64_t id)
{
	struct seen s = { .n = 0, .pid = Pid };

	an_for_each_task(A, collect, &s);
	for (size_t i = 0; i < s.n; i++)
		if (s.ids[i] == id)
			return true;
	return false;
}

/* The first id ≥ from that rate a picks and rate b does not (b = 0: any rate a picks). */
static uint64_t id_with(uint64_t from, uint32_t a, uint32_t b)
{
	for (uint64_t id = from;; id++)
		if (picks(id, a) && (!b || !picks(id, b)))
			return id;
}

static void test_analyzer(void)
{
	struct an_opts o;
	const struct an_totals *t;
	const struct an_sampling *sm;
	const struct an_finding *f;
	uint64_t aside = 0, keep4, out4, in2, mid, ended, live;
	size_t nf;

	an_opts_default(&o);
	o.stall_ns = 100 * MS;
	A = an_new(&o);
	if (!A) {
		CHECK(false, "analyzer: an_new");
		return;
	}
	rate(1 * MS, 1, TET_RATE_START);
	for (uint64_t id = 1; id <= 40; id++) {
		spawn(2 * MS, id);
		poll(3 * MS, id);
	}
	CHECK_U64(an_totals(A)->tasks_live, 40, "analyzer: rate 1: all 40 tasks followed");
	for (uint64_t id = 1; id <= 40; id++)
		aside += !picks(id, 4);
	rate(10 * MS, 4, TET_RATE_RING);
	t = an_totals(A);
	CHECK_U64(t->tasks_set_aside_rate, aside, "analyzer: rate 4: the tasks it leaves out set aside (by the process's hash)");
	CHECK_U64(t->tasks_live, 40 - aside, "analyzer: … the others still followed");
	CHECK_U64(t->polls_set_aside, aside, "analyzer: … their polls counted");
	keep4 = id_with(1, 4, 0);
	out4 = id_with(1, 1, 4);
	CHECK(followed(keep4) && !followed(out4), "analyzer: task %llu (picked by 4) followed, %llu (not) gone",
	      (unsigned long long)keep4, (unsigned long long)out4);
	/* its later events are counted, not analysed; no stall is judged on its silence */
	poll(11 * MS, out4);
	CHECK(!followed(out4) && an_totals(A)->events_set_aside >= 2,
	      "analyzer: a poll of a task set aside is not analysed (events_set_aside %llu)",
	      (unsigned long long)an_totals(A)->events_set_aside);
	an_tick(A, 2000 * MS);
	nf = an_findings(A, &f);
	{
		size_t stalled_out = 0;

		for (size_t i = 0; i < nf; i++)
			stalled_out += f[i].task_id == out4;
		CHECK_U64(stalled_out, 0, "analyzer: no finding for a task set aside, 2 s after");
	}
	/* met at its spawn: the rate in force decides */
	spawn(20 * MS, 1001);
	spawn(20 * MS, id_with(1002, 4, 0));
	CHECK(followed(id_with(1002, 4, 0)) == true && followed(1001) == picks(1001, 4),
	      "analyzer: spawns after the raise: followed exactly when 4 picks them");
	/* lowered to 2: a spawn 2 picks and 4 does not is followed; a task met without its spawn
	 * only if every rate so far picks it */
	rate(30 * MS, 2, TET_RATE_CALM);
	in2 = id_with(2000, 2, 4);
	spawn(31 * MS, in2);
	CHECK(followed(in2), "analyzer: rate 2: a spawn 2 picks (4 does not) is followed");
	mid = id_with(3000, 2, 4);
	poll(32 * MS, mid);
	CHECK(!followed(mid), "analyzer: a task met without its spawn that rate 4 left out is not followed");
	mid = id_with(4000, 4, 0);
	poll(32 * MS, mid);
	CHECK(followed(mid), "analyzer: one every rate so far picks is (spawned before the capture)");
	/* a gap from 40 ms: a task that ended at 35 ms keeps its record, one that ended at 45 ms
	 * and every live task are set aside */
	ended = id_with(5000, 4, 0);
	spawn(33 * MS, ended);
	poll(34 * MS, ended);
	ev(TET_EV_TERMINATE, 35 * MS, ended, 0, 0);
	live = id_with(ended + 1, 4, 0);
	spawn(36 * MS, live);
	poll(37 * MS, live);
	ev(TET_EV_TERMINATE, 45 * MS, live, 0, 0);
	aside = an_totals(A)->tasks_live;
	/* another process of the path: a task live across the gap, one ended in it */
	Pid = PID2;
	spawn(36 * MS, live);
	poll(37 * MS, live);
	spawn(38 * MS, ended);
	poll(39 * MS, ended);
	ev(TET_EV_TERMINATE, 45 * MS, ended, 0, 0);
	Pid = PID;
	gap(50 * MS, 40 * MS);
	t = an_totals(A);
	CHECK_U64(t->tasks_live, 1, "analyzer: a gap: no live task of its process followed");
	CHECK_U64(t->tasks_set_aside_gap, aside + 1, "analyzer: … every live one and the one that ended in it set aside");
	CHECK(followed(ended) && !followed(live), "analyzer: … the task that ended before the gap keeps its record");
	Pid = PID2;
	CHECK(followed(live) && followed(ended),
	      "analyzer: … another process's tasks stay, live or ended in the gap (its batches held none of them)");
	poll(60 * MS, id_with(6000, 4, 0));
	CHECK(followed(id_with(6000, 4, 0)),
	      "analyzer: … and its tasks met without their spawn are followed as before");
	Pid = PID;
	mid = id_with(6000, 4, 0);
	poll(60 * MS, mid);
	CHECK(!followed(mid), "analyzer: after a gap a task of its process met without its spawn is not followed");
	spawn(61 * MS, mid + 100000);
	CHECK(followed(mid + 100000) == picks(mid + 100000, 2), "analyzer: after a gap a spawn is (the rate in force decides)");
	sm = an_get_sampling(A);
	CHECK(sm->known && sm->rate == 2 && sm->rate_max == 4 && sm->nchanges == 3 && sm->gaps == 1,
	      "analyzer: history: rate 2 now, 4 at most, 3 records, 1 gap");
	CHECK(sm->changes[1].rate == 4 && sm->changes[1].why == TET_RATE_RING &&
	      sm->changes[1].ts == 10 * MS, "analyzer: … the raise kept with its time and why");
	an_free(A);
	/* no rate record (per-event capture): nothing is set aside, every task followed */
	A = an_new(&o);
	for (uint64_t id = 1; id <= 8; id++)
		poll(1 * MS, id);
	CHECK_U64(an_totals(A)->tasks_live, 8, "analyzer: without rate records every task is followed");
	an_free(A);
}

int main(void)
{
	test_rule();
	test_analyzer();
	printf("# %d checks, %d failed\n", run, failed);
	return failed ? 1 : 0;
}
