// SPDX-License-Identifier: MIT
/*
 * batch.c — batched capture's decode stage (see batch.h; the format is PROBES.md "Batch
 * format", the writer probes-patch/common/usdt.rs).
 *
 * Input. Each thread of the traced process appends records to a buffer of its own and flushes
 * it through tokio:event_batch: one ring record holds the buffer's head (sequence number,
 * counts, the polls in progress) and its records. A thread that has gone quiet with records
 * still in its buffer (a worker inside a long poll, a blocking-pool thread waiting for work)
 * is "swept": its buffer is read in place, like a seqlock reader — head, records, head again;
 * the copy is kept only if the sequence number and the polls in progress did not change in
 * between. Records already decoded by a sweep are skipped when the batch arrives (`consumed`).
 * The decoder reads nothing itself: tb_next_read says which read comes next (a state machine
 * per sweep, one read at a time), the capture performs it (process_vm_readv) and hands the
 * outcome to tb_read_done. A spawn whose strings are not in the table (their record lost)
 * asks for them the same way, before the spawn is delivered.
 *
 * Records → events. A poll is one record written at its end (begin and end stamps); it becomes
 * task_poll_begin at its begin, its yields, and task_poll_end at its end — unless its
 * task_poll_begin went out earlier, from a head that listed it in progress: a poll blocked for
 * seconds is seen while it runs. Waker clones and drops carry no stamp: a clone takes the
 * previous stamp of its thread, a drop the next one (or the flush), so neither can come before
 * the wake it pairs with in another thread. Stamps on the TSC are converted to CLOCK_MONOTONIC
 * by interpolating between (TSC, CLOCK_MONOTONIC) pairs the tracer reads back to back.
 *
 * Order. The analyzer wants events in time order (a wake before the poll it causes, on another
 * thread). Each thread's events go to a queue sorted by (time, decode order); the queues are
 * merged through a heap, and an event is delivered once no thread can still send an earlier
 * one: up to the watermark, the smallest "complete up to" of the live threads (a flush
 * completes its thread up to the flush; a sweep up to the moment of the read). A thread silent
 * for longer than max_delay_ns stops holding the others back; an event that arrives behind
 * the watermark anyway is delivered at once and counted as late.
 *
 * Preemption is not this stage's: the analyzer charges the off-CPU periods sched_switch sends
 * (bpf/sched.bpf.h) to the polls they fall in, whatever the capture mode; polls leave here
 * with cpu_wait 0 (unknown).
 *
 * Capture window. Records stamped before the start (left in a buffer by an earlier capture)
 * or after the cutoff are dropped and counted; so are the counts of windows wholly outside.
 * Loss. A gap in a thread's sequence numbers is a lost batch; a thread that vanished without
 * its final batch lost its last window (its counts as last swept are reported).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "decode.h"

#define HEAD_BYTES sizeof(struct tet_batch_head)
#define OPEN_MAX TET_BATCH_OPEN_MAX
#define STRING_MAX 256
#define THREADS_MAX 16384u             /* threads followed (~2.5 KiB each, and their queues) */
#define STRINGS_MAX 65536u             /* strings kept (spawn sites' files and types, task names): ~18 MiB */
#define SWEEP_MARGIN_NS 1000000ull     /* a record stamped this close to a sweep may be missing */
#define RING_MARGIN_NS 1000000ull      /* reservation → timestamp, across CPUs */
/* A thread found gone is judged to have vanished without its final batch only once the ring
 * has been read this far past that moment: a record reserved before the final batch and not
 * committed yet (its CPU preempted inside the BPF program, a host stall) stops the reader
 * before it, and a drain then says nothing of what follows. */
#define VANISH_GRACE_NS 100000000ull
#define PAIRS_MAX 8192
#define CLOCK_ERROR_MAX_NS 1000000000ull /* |TSC converted - the head's flush_ns| beyond: made up */
#define MASK56 ((1ull << 56) - 1)

struct ev {            /* 64 bytes: one cache line's worth (a queue can hold ~30 ms of them) */
	uint64_t ts;        /* CLOCK_MONOTONIC ns */
	uint32_t order;     /* decode order within the thread: breaks ties (compared modulo 2^32:
			     * a thread's queue holds far fewer than 2^31 events) */
	uint16_t type;      /* enum tet_event */
	uint16_t code;      /* poll result, by_ref, spawn kind, reason (4 bits) */
	uint64_t w[6];      /* id, header, … (see deliver()) */
};
_Static_assert(sizeof(struct ev) == 64, "struct ev: one cache line");

struct opened {
	uint64_t id, begin;
};

#define CTL_MAX 4096u                  /* tracer records held for ordering */
struct ctl {
	uint64_t ts;
	union {
		struct tet_rate_rec rate;
		struct tet_gap_rec gap;
	} u;
};

/* A wait record comes before the record of its poll (written at the poll's end): held until
 * then, and sent just before the poll's end. */
#define WAITS_MAX 16
#define LOCKS_MAX 32
struct waitrec {
	uint64_t id, object, arg;
	unsigned kind;
	unsigned type;              /* TET_EV_WAIT or TET_EV_LOCK */
};
#define NAME_KEY (1ull << 63)  /* task names in the string table: (pid, NAME_KEY | task id) —
				* no user-space address has bit 63 set */
#define NAME_MAX_BYTES 128

struct thread {
	uint32_t pid, tid;
	uint64_t buf;               /* its buffer; 0 until its first batch */
	uint8_t clock;
	bool exited, dead;
	uint64_t next_seq;          /* the batch expected next */
	uint32_t consumed;          /* bytes of batch next_seq decoded already (by sweeps) */
	uint64_t last_ts;           /* latest stamp decoded */
	uint64_t complete_ns;       /* every record stamped up to here is decoded */
	uint64_t last_seen;         /* its last batch (BPF time) or sweep */
	uint64_t last_try;          /* tracer time of its last batch fed or sweep tried */
	uint64_t gone_ns;           /* found gone at this time, not confirmed yet (0: no) */
	bool sweep_now;             /* tb_sweep_all: read it whatever its last try */
	uint64_t order;
	int32_t worker;             /* from its latest poll or park record */
	struct opened opened[OPEN_MAX]; /* polls whose begin went out before their record came */
	size_t nopened;
	struct waitrec waits[WAITS_MAX + OPEN_MAX]; /* wait records of polls whose record has not
				     * come yet; past WAITS_MAX, one TET_WAIT_CUT per task */
	size_t nwaits;
	struct waitrec locks[LOCKS_MAX]; /* lock records of such polls */
	size_t nlocks;
	uint64_t window[TET_EV_COUNT]; /* counts of the window not flushed yet, as last swept */
	uint64_t unflushed[TET_EV_COUNT]; /* what its vanishing added to the stats' unflushed */
	struct ev *q;               /* sorted, q[qhead, qhead + qlen) */
	size_t qhead, qlen, qcap;
};

enum string_state { STR_OK, STR_WANTED, STR_FAILED };

struct string {
	uint64_t pid, ptr;
	uint16_t len;
	uint8_t state;              /* STR_WANTED: asked of the capture, STR_FAILED: it could not */
	char bytes[STRING_MAX];
};

/* the reads asked of the capture (tb_next_read / tb_read_done): one at a time */
enum rd_stage { RD_NONE, RD_STRING, RD_HEAD, RD_ALIVE, RD_RECS, RD_HEAD2 };
#define STRQ_MAX 1024                  /* strings waiting to be read (beyond: missed) */

struct strq {
	uint64_t pid, ptr;
	uint16_t len;
};

struct pair {
	uint64_t tsc, ns;
};

struct tb {
	struct tb_opts o;
	struct { uint64_t tsc0, tsc1; double slope, ns0; bool valid; } seg; /* last segment used */
	uint64_t seg_base;          /* TSC of the segment's first pair */
	struct tb_stats s;
	uint64_t cutoff;            /* 0 = none */
	uint64_t ring_ns;           /* every ring record submitted before this has been fed */
	uint64_t now;               /* the tracer's time at the last tb_advance */
	uint64_t delivered_ns;      /* every event stamped up to here has been delivered */
	uint64_t released;          /* largest timestamp delivered */
	struct thread **threads;
	size_t nthreads, threads_cap;
	struct thread **tix;        /* threads by (pid, tid) */
	size_t tix_cap;
	struct string **strings;    /* open addressing on (pid, ptr) */
	size_t strings_cap, nstrings;
	struct pair pairs[PAIRS_MAX];
	size_t npairs, pairs_head;  /* ring, oldest at pairs_head */
	/* one batch's events, decoded in place after the end of their thread's queue */
	struct thread *stage;
	struct ev *tmp;
	size_t ntmp, tmp_cap;
	uint64_t stage_lo, stage_hi; /* the staged events' times span at most this */
	struct ev *scratch;         /* for the rare merge of a batch into earlier held events */
	size_t scratch_cap;
	size_t drops[64];           /* tmp indices of drops waiting for the next stamp */
	size_t ndrops;
	struct thread **heap;
	size_t heap_cap;
	/* the tracer's own records (rates, gaps), delivered in time order with the events */
	struct ctl *ctl;            /* ring, oldest at ctl_head, sorted by ts */
	size_t nctl, ctl_head;
	struct {
		enum rd_stage stage;    /* the read asked for, or prepared to be */
		struct tb_read rq;
		struct thread *t;       /* the thread being swept */
		uint64_t now;
		struct tet_batch_head h, h2;
		uint64_t *recs;
		size_t scan;            /* threads looked at for a due sweep, at scan_now */
		uint64_t scan_now;
		struct strq q[STRQ_MAX]; /* ring */
		size_t qhead, qlen;
		char str[STRING_MAX];   /* RD_STRING: the string at rq.addr of process rq.pid */
	} rd;
};

/* ---- clock ---- */
void tb_clock_pair(struct tb *b, uint64_t tsc, uint64_t ns)
{
	size_t last = (b->pairs_head + b->npairs - 1) % PAIRS_MAX;

	if (b->npairs && (tsc <= b->pairs[last].tsc || ns <= b->pairs[last].ns))
		return;
	b->seg.valid = false;
	if (b->npairs == PAIRS_MAX) {
		b->pairs[b->pairs_head] = (struct pair){ tsc, ns };
		b->pairs_head = (b->pairs_head + 1) % PAIRS_MAX;
	} else {
		b->pairs[(b->pairs_head + b->npairs) % PAIRS_MAX] = (struct pair){ tsc, ns };
		b->npairs++;
	}
}

static const struct pair *pair_at(const struct tb *b, size_t i)
{
	return &b->pairs[(b->pairs_head + i) % PAIRS_MAX];
}

/* tsc in ns by the segment in use (its rate from its first pair): one formula for both paths */
static inline double seg_convert(const struct tb *b, uint64_t tsc)
{
	return (double)(int64_t)(tsc - b->seg_base) * b->seg.slope + b->seg.ns0;
}

/* Linear between the two pairs around tsc (beyond the first or last pair: the nearest
 * segment's rate). The segment is kept: consecutive stamps mostly share it. */
static uint64_t tsc_to_ns_slow(struct tb *b, uint64_t tsc)
{
	const struct pair *p0, *p1;
	size_t lo = 0, hi;
	double d;

	if (b->seg.valid && tsc >= b->seg.tsc0 && tsc < b->seg.tsc1)
		goto convert;
	if (!b->npairs)
		return 0;
	if (b->npairs == 1) /* no rate yet: 1 GHz */
		return pair_at(b, 0)->ns + (tsc - pair_at(b, 0)->tsc);
	hi = b->npairs - 1;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (pair_at(b, mid)->tsc <= tsc)
			lo = mid;
		else
			hi = mid;
	}
	p0 = pair_at(b, lo);
	p1 = pair_at(b, lo + 1);
	b->seg.tsc0 = lo == 0 ? 0 : p0->tsc;
	b->seg.tsc1 = lo + 2 == b->npairs ? UINT64_MAX : p1->tsc;
	b->seg.ns0 = (double)p0->ns;
	b->seg.slope = (double)(p1->ns - p0->ns) / (double)(p1->tsc - p0->tsc);
	b->seg.valid = true;
	/* seg.tsc0 is the segment's start for the lookup; the conversion is from p0 */
	if (lo == 0)
		b->seg.tsc0 = 0;
	b->seg_base = p0->tsc;
convert:
	d = seg_convert(b, tsc);
	/* a stamp the process made up converts to anything: clamp (0x1p64 is past UINT64_MAX) */
	return d < 0 ? 0 : d >= 0x1p64 ? UINT64_MAX : (uint64_t)d;
}

/* The common case inline: tsc in the segment used last, converting to less than 2^63 ns (where
 * the signed conversion is the slow path's unsigned one). */
static inline uint64_t tsc_to_ns(struct tb *b, uint64_t tsc)
{
	if (b->seg.valid && tsc >= b->seg.tsc0 && tsc < b->seg.tsc1) {
		double d = seg_convert(b, tsc);

		if (d >= 0 && d < 0x1p63)
			return (uint64_t)(int64_t)d;
	}
	return tsc_to_ns_slow(b, tsc);
}

uint64_t tb_tsc_to_ns(const struct tb *b, uint64_t tsc)
{
	return tsc_to_ns((struct tb *)b, tsc);
}

static uint64_t to_ns(struct tb *b, const struct thread *t, uint64_t stamp)
{
	return t->clock == TET_BATCH_CLOCK_TSC ? tsc_to_ns(b, stamp) : stamp;
}

/* ---- threads ----
 * b->threads lists them; b->tix indexes them by (pid, tid), open addressing at most half full,
 * rebuilt when threads are pruned. A retired thread (tid 0: its tid went to a new thread) stays
 * in the index as a slot that matches nothing until then. */
static uint64_t mix(uint64_t a, uint64_t b);
static void thread_revive(struct tb *b, struct thread *t);
static void reads_reset(struct tb *b);
static void gap(struct tb *b, const struct thread *t, uint64_t from_ns, uint64_t to_ns,
		uint64_t batches);

static struct thread **thread_slot(struct tb *b, uint32_t pid, uint32_t tid)
{
	size_t m = b->tix_cap - 1;

	for (size_t i = mix(pid, tid) & m;; i = (i + 1) & m)
		if (!b->tix[i] || (b->tix[i]->pid == pid && b->tix[i]->tid == tid))
			return &b->tix[i];
}

static struct thread *thread_find(struct tb *b, uint32_t pid, uint32_t tid)
{
	return b->tix_cap ? *thread_slot(b, pid, tid) : NULL;
}

/* The index, larger: cap slots (a power of two). */
static int threads_index(struct tb *b, size_t cap)
{
	struct thread **v = calloc(cap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	free(b->tix);
	b->tix = v;
	b->tix_cap = cap;
	for (size_t i = 0; i < b->nthreads; i++)
		if (b->threads[i]->tid)
			*thread_slot(b, b->threads[i]->pid, b->threads[i]->tid) = b->threads[i];
	return 0;
}

static void thread_free(struct thread *t)
{
	if (t) {
		free(t->q);
	}
	free(t);
}

static struct thread *thread_new(struct tb *b, uint32_t pid, uint32_t tid)
{
	struct thread *t;

	if ((b->nthreads + 1) * 2 > b->tix_cap && threads_index(b, b->tix_cap ? b->tix_cap * 2 : 64))
		return NULL;
	if (b->nthreads == b->threads_cap) {
		size_t cap = b->threads_cap ? b->threads_cap * 2 : 16;
		struct thread **v = realloc(b->threads, cap * sizeof(*v));

		if (!v)
			return NULL;
		b->threads = v;
		b->threads_cap = cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->pid = pid;
	t->tid = tid;
	t->worker = -1;
	b->threads[b->nthreads++] = t;
	*thread_slot(b, pid, tid) = t;
	b->s.threads++;
	return t;
}

/* Forgets exited threads with nothing left to deliver. */
static void threads_prune(struct tb *b)
{
	size_t j = 0;

	for (size_t i = 0; i < b->nthreads; i++) {
		struct thread *t = b->threads[i];

		if (!t->qlen && (t->exited || (t->dead && b->ring_ns >= t->gone_ns + b->o.max_delay_ns)))
			thread_free(t);
		else
			b->threads[j++] = t;
	}
	if (j < b->nthreads) { /* the index anew, in place */
		b->nthreads = j;
		memset(b->tix, 0, b->tix_cap * sizeof(*b->tix));
		for (size_t i = 0; i < b->nthreads; i++)
			if (b->threads[i]->tid)
				*thread_slot(b, b->threads[i]->pid, b->threads[i]->tid) = b->threads[i];
	}
}

static int queue_reserve(struct thread *t, size_t more)
{
	if (t->qhead + t->qlen + more <= t->qcap)
		return 0;
	/* compact when the free space at the front is at least what is held */
	if (t->qhead && t->qhead >= t->qlen) {
		memmove(t->q, t->q + t->qhead, t->qlen * sizeof(*t->q));
		t->qhead = 0;
	}
	if (t->qhead + t->qlen + more > t->qcap) {
		size_t cap = t->qcap ? t->qcap : 256;
		struct ev *q;

		while (cap < t->qhead + t->qlen + more)
			cap *= 2;
		q = realloc(t->q, cap * sizeof(*q));
		if (!q)
			return -ENOMEM;
		t->q = q;
		t->qcap = cap;
	}
	return 0;
}

static int ev_cmp(const void *x, const void *y)
{
	const struct ev *a = x, *b = y;

	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->order == b->order ? 0 : (int32_t)(a->order - b->order) < 0 ? -1 : 1;
}

/* Staging: a batch's events are decoded right after the end of their thread's queue (room for
 * `expect` of them), then sorted and taken into it (queue_merge). */
static int stage_begin(struct tb *b, struct thread *t, size_t expect)
{
	if (queue_reserve(t, expect))
		return -ENOMEM;
	b->stage = t;
	b->tmp = t->q + t->qhead + t->qlen;
	b->tmp_cap = t->qcap - t->qhead - t->qlen;
	b->ntmp = 0;
	b->stage_lo = UINT64_MAX;
	b->stage_hi = 0;
	return 0;
}

static int stage_grow(struct tb *b)
{
	struct thread *t = b->stage;
	int ret;

	t->qlen += b->ntmp; /* the staged events move with the queue */
	ret = queue_reserve(t, 256);
	t->qlen -= b->ntmp;
	if (ret)
		return ret;
	b->tmp = t->q + t->qhead + t->qlen;
	b->tmp_cap = t->qcap - t->qhead - t->qlen;
	return 0;
}

/* Takes the staged events (any order) into the thread's sorted queue. */
static int queue_merge(struct tb *b, struct thread *t)
{
	struct ev *q = t->q + t->qhead, *nw = b->tmp;
	size_t i, n = b->ntmp;

	b->ntmp = 0;
	if (!n)
		return 0;
	/* nearly sorted: a poll's begin moves back over the few events inside it (a long poll
	 * seen in progress further, once) */
	for (i = 1; i < n; i++) {
		struct ev x;
		size_t j = i;

		if (ev_cmp(&nw[i - 1], &nw[i]) <= 0)
			continue;
		x = nw[i];
		while (j > 0 && ev_cmp(&nw[j - 1], &x) > 0) {
			nw[j] = nw[j - 1];
			j--;
		}
		nw[j] = x;
	}
	if (t->qlen && ev_cmp(&q[t->qlen - 1], &nw[0]) > 0) {
		/* an event earlier than some held ones: merge from the back through a copy */
		size_t a = t->qlen, c = n, k = t->qlen + n;

		if (b->scratch_cap < n) {
			struct ev *sc = realloc(b->scratch, n * sizeof(*sc));

			if (!sc)
				return -ENOMEM;
			b->scratch = sc;
			b->scratch_cap = n;
		}
		memcpy(b->scratch, nw, n * sizeof(*nw));
		while (c) {
			if (a && ev_cmp(&q[a - 1], &b->scratch[c - 1]) > 0)
				q[--k] = q[--a];
			else
				q[--k] = b->scratch[--c];
		}
	}
	for (i = 0; i < n; i++)
		if (q[t->qlen + i].ts < b->released)
			b->s.late++;
	t->qlen += n;
	b->s.pending += n;
	if (b->s.pending > b->s.pending_max)
		b->s.pending_max = b->s.pending;
	return 0;
}

/* ---- strings ---- */
static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	return x ^ (x >> 29);
}

static struct string **string_slot(struct tb *b, uint64_t pid, uint64_t ptr)
{
	size_t m = b->strings_cap - 1;

	for (size_t i = mix(pid, ptr) & m;; i = (i + 1) & m)
		if (!b->strings[i] || (b->strings[i]->pid == pid && b->strings[i]->ptr == ptr))
			return &b->strings[i];
}

static struct string *string_get(struct tb *b, uint64_t pid, uint64_t ptr)
{
	return b->strings_cap ? *string_slot(b, pid, ptr) : NULL;
}

static void string_put(struct tb *b, uint64_t pid, uint64_t ptr, const void *bytes, size_t n)
{
	struct string **slot, *s;

	if (b->nstrings >= STRINGS_MAX && !string_get(b, pid, ptr)) {
		b->s.strings_refused++; /* the bound, checked before any allocation: O(1) */
		return;
	}
	if ((b->nstrings + 1) * 2 > b->strings_cap) {
		size_t cap = b->strings_cap ? b->strings_cap * 2 : 256;
		struct string **old = b->strings, **v = calloc(cap, sizeof(*v));
		size_t oldcap = b->strings_cap;

		if (!v) {
			b->s.strings_refused++;
			return;
		}
		b->strings = v;
		b->strings_cap = cap;
		for (size_t i = 0; i < oldcap; i++)
			if (old[i])
				*string_slot(b, old[i]->pid, old[i]->ptr) = old[i];
		free(old);
	}
	slot = string_slot(b, pid, ptr);
	s = *slot;
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return;
		*slot = s;
		b->nstrings++;
	}
	s->pid = pid;
	s->ptr = ptr;
	s->state = STR_OK;
	s->len = (uint16_t)(n > STRING_MAX ? STRING_MAX : n);
	if (s->len)
		memcpy(s->bytes, bytes, s->len);
}

/* A spawn names the string at ptr (len bytes): not in the table, it is asked of the capture
 * (tb_next_read), once while the ask is open. */
static void string_want(struct tb *b, uint32_t pid, uint64_t ptr, uint64_t len)
{
	struct string *s;
	struct strq *q;

	if (!b->o.reads || !ptr || !len)
		return;
	s = string_get(b, pid, ptr);
	if (s && s->state != STR_FAILED)
		return;
	if (b->rd.qlen == STRQ_MAX)
		return; /* missed when delivered */
	string_put(b, pid, ptr, NULL, 0);
	s = string_get(b, pid, ptr);
	if (!s)
		return; /* refused (the bound) or out of memory */
	s->state = STR_WANTED;
	q = &b->rd.q[(b->rd.qhead + b->rd.qlen++) % STRQ_MAX];
	*q = (struct strq){ .pid = pid, .ptr = ptr, .len = len < STRING_MAX ? (uint16_t)len : STRING_MAX };
}

/* Copies the string at ptr (len bytes, as the spawn said) into dst[max]; returns the count. */
static uint16_t string_fill(struct tb *b, uint32_t pid, uint64_t ptr, uint64_t len, char *dst)
{
	const struct string *s;
	size_t want = len < STRING_MAX ? (size_t)len : STRING_MAX;

	if (!ptr || !want)
		return 0;
	s = string_get(b, pid, ptr);
	if (!s || s->state != STR_OK) {
		b->s.string_misses++;
		return 0;
	}
	if (want > s->len)
		want = s->len;
	memcpy(dst, s->bytes, want);
	return (uint16_t)want;
}

/* ---- decoding ---- */
static inline struct ev *push(struct tb *b, struct thread *t, uint32_t type, uint64_t ts)
{
	struct ev *e;

	if (b->ntmp == b->tmp_cap && stage_grow(b))
		return NULL;
	e = &b->tmp[b->ntmp++];
	memset(e->w, 0, sizeof(e->w));
	e->code = 0;
	if (ts < b->stage_lo)
		b->stage_lo = ts;
	if (ts > b->stage_hi)
		b->stage_hi = ts;
	e->type = type;
	e->ts = ts;
	e->order = t->order++;
	return e;
}

/* A stamped record at ts: drops recorded before it take its time. */
static inline void stamp_seen(struct tb *b, struct thread *t, uint64_t ts)
{
	for (size_t i = 0; i < b->ndrops; i++)
		b->tmp[b->drops[i]].ts = ts;
	b->ndrops = 0;
	if (ts > t->last_ts)
		t->last_ts = ts;
}

static bool opened_take(struct thread *t, uint64_t id, uint64_t begin)
{
	for (size_t i = 0; i < t->nopened; i++) {
		if (t->opened[i].id == id && t->opened[i].begin == begin) {
			t->opened[i] = t->opened[--t->nopened];
			return true;
		}
	}
	return false;
}

static bool opened_has(const struct thread *t, uint64_t id, uint64_t begin)
{
	for (size_t i = 0; i < t->nopened; i++)
		if (t->opened[i].id == id && t->opened[i].begin == begin)
			return true;
	return false;
}

/* task_poll_begin for the polls a head lists in progress, once each. */
static int open_polls(struct tb *b, struct thread *t, const struct tet_batch_head *h)
{
	unsigned depth = h->depth < OPEN_MAX ? h->depth : OPEN_MAX;

	for (unsigned i = 0; i < depth; i++) {
		const struct tet_batch_open *o = &h->open[i];
		struct ev *e;

		if (!o->task_id || opened_has(t, o->task_id, o->begin))
			continue;
		if (t->nopened == OPEN_MAX) /* a stale entry (its end was lost): forget the oldest */
			t->opened[0] = t->opened[--t->nopened];
		t->opened[t->nopened++] = (struct opened){ o->task_id, o->begin };
		e = push(b, t, TET_EV_POLL_BEGIN, to_ns(b, t, o->begin));
		if (!e)
			return -ENOMEM;
		e->w[0] = o->task_id;
		e->w[2] = (uint64_t)(int64_t)t->worker;
		b->s.open_polls_seen++;
	}
	return 0;
}

static bool in_window(struct tb *b, uint64_t ts)
{
	if (ts < b->o.start_ns) {
		b->s.before_start++;
		return false;
	}
	if (b->cutoff && ts > b->cutoff) {
		b->s.after_cutoff++;
		return false;
	}
	return true;
}

static inline size_t rec_words(const uint64_t *w, size_t i, size_t n)
{
	uint64_t id = w[i] & MASK56;
	size_t need = 0;

	switch ((unsigned)(w[i] >> 56) & 0xf) {
	case TET_BREC_POLL: need = 4; break;
	case TET_BREC_WAKE: need = 2; break;
	case TET_BREC_CLONE: case TET_BREC_DROP: need = 1; break;
	case TET_BREC_SPAWN: need = 7; break;
	case TET_BREC_TERMINATE: case TET_BREC_PARK: case TET_BREC_UNPARK: need = 3; break;
	case TET_BREC_STRING:
		need = id <= STRING_MAX ? 2 + (size_t)(id + 7) / 8 : 0;
		break;
	case TET_BREC_WAIT: case TET_BREC_LOCK: need = 3; break;
	case TET_BREC_META:
		need = i + 2 < n && w[i + 2] <= NAME_MAX_BYTES ? 3 + (size_t)(w[i + 2] + 7) / 8 : 0;
		break;
	}
	return i + need <= n ? need : 0;
}

size_t tb_rec_words(const uint64_t *w, size_t i, size_t n)
{
	return rec_words(w, i, n);
}

#define CLONE_LOOKAHEAD 512 /* words searched for the poll a clone happened in */

/* The time of a waker clone (a record without a stamp). Most are made inside the poll of the
 * task whose waker it is (a resource keeps the polled task's waker): then after that poll
 * began, which may be after this thread's previous stamp — a task spawned on another thread
 * since, polled here first; placed at the previous stamp, the clone would come before the
 * task's spawn. That poll's record comes later in the buffer (or it is still open). */
static uint64_t clone_stamp(struct tb *b, const struct thread *t, const uint64_t *w, size_t i,
			    size_t n, uint64_t id)
{
	uint64_t begin = 0;
	size_t k;

	for (size_t j = i + 1; j < n && j < i + CLONE_LOOKAHEAD && (k = rec_words(w, j, n)); j += k)
		if (((w[j] >> 56) & 0xf) == TET_BREC_POLL && (w[j] & MASK56) == id) {
			begin = to_ns(b, t, w[j + 1]);
			break;
		}
	for (k = 0; !begin && k < t->nopened; k++)
		if (t->opened[k].id == id)
			begin = to_ns(b, t, t->opened[k].begin);
	return begin > t->last_ts ? begin : t->last_ts;
}

/* A lock record held until its poll's end, like a wait record. A poll that takes and gives
 * back the same permits many times (a loop over an uncontended Mutex) must not overflow the
 * list: a release cancels the same task's acquire of the object still held here, so the list
 * keeps one entry per object at most twice over. What still does not fit is counted: the
 * analyzer then knows its holders may be wrong (locks_dropped). */
static void lock_hold(struct tb *b, struct thread *t, uint64_t id, uint64_t object,
		      uint64_t permits, unsigned op)
{
	if (op == TET_LOCK_RELEASE || op == TET_LOCK_FORGET) {
		for (size_t k = t->nlocks; k-- > 0;) {
			struct waitrec *x = &t->locks[k];

			if (x->id != id || x->object != object || x->kind >= TET_LOCK_RELEASE)
				continue;
			if (x->arg > permits) {
				x->arg -= permits;
				b->s.releases_folded++;
				return;
			}
			if (x->arg == permits) {
				memmove(x, x + 1, (t->nlocks - k - 1) * sizeof(*x));
				t->nlocks--;
				b->s.acquires_folded++;
				b->s.releases_folded++;
				return;
			}
			break;
		}
	}
	if (t->nlocks < LOCKS_MAX)
		t->locks[t->nlocks++] = (struct waitrec){ id, object, permits, op, TET_EV_LOCK };
	else
		b->s.locks_dropped++;
}

/* A wait record held until its poll's end; beyond WAITS_MAX counted, and the poll gets one
 * TET_WAIT_CUT so that the analyzer knows its wait list is partial. */
static void wait_hold(struct tb *b, struct thread *t, uint64_t id, uint64_t object, uint64_t arg,
		      unsigned kind)
{
	if (t->nwaits < WAITS_MAX) {
		t->waits[t->nwaits++] = (struct waitrec){ id, object, arg, kind, TET_EV_WAIT };
		return;
	}
	b->s.waits_dropped++;
	for (size_t k = WAITS_MAX; k < t->nwaits; k++)
		if (t->waits[k].id == id)
			return;
	if (t->nwaits < WAITS_MAX + OPEN_MAX)
		t->waits[t->nwaits++] = (struct waitrec){ id, 0, 0, TET_WAIT_CUT, TET_EV_WAIT };
}

/* Sends the held wait records of the poll of task id ending now (at ts). Records of other
 * tasks stay (a poll nested inside theirs). */
static int held_out(struct tb *b, struct thread *t, struct waitrec *v, size_t *n, uint64_t id,
		    uint64_t ts)
{
	size_t j = 0;

	for (size_t k = 0; k < *n; k++) {
		const struct waitrec *x = &v[k];
		struct ev *e;

		if (x->id != id) {
			v[j++] = *x;
			continue;
		}
		e = push(b, t, x->type, ts);
		if (!e)
			return -ENOMEM;
		e->w[0] = x->id;
		e->w[1] = x->object;
		e->w[2] = x->kind;
		e->w[3] = x->arg;
	}
	*n = j;
	return 0;
}

static inline int waits_out(struct tb *b, struct thread *t, uint64_t id, uint64_t ts)
{
	if (!t->nlocks && !t->nwaits) /* most polls: nothing held */
		return 0;
	/* kept wait records first, then a cut marker (the regular slots come before it) */
	return held_out(b, t, t->locks, &t->nlocks, id, ts) ?: held_out(b, t, t->waits, &t->nwaits, id, ts);
}

/* Decodes records [from, len) of a buffer (words at w, bytes counted from the records' start).
 * tail_ns: the time of the flush or sweep, for drops at the end. Returns 0, -EINVAL (a bad
 * record: the rest is skipped, counted), -ENOMEM. */
static int decode(struct tb *b, struct thread *t, const uint64_t *w, uint32_t from, uint32_t len,
		  uint64_t tail_ns)
{
	size_t i = from / 8, n = len / 8;
	int ret = 0;

	/* records decoded now were written after what completed the thread so far (a flush, a
	 * read): a clone's inherited stamp is at least that */
	if (t->last_ts < t->complete_ns)
		t->last_ts = t->complete_ns;
	b->ndrops = 0;
	while (i < n) {
		uint64_t w0 = w[i], id = w0 & MASK56;
		unsigned kind = (unsigned)(w0 >> 56) & 0xf, code = (unsigned)(w0 >> 60);
		size_t need = 0;
		struct ev *e = NULL;

		need = rec_words(w, i, n);
		if (!need) {
			b->s.bad_records++;
			ret = -EINVAL;
			break;
		}
		b->s.records++;
		switch (kind) {
		case TET_BREC_POLL: {
			uint64_t bts = to_ns(b, t, w[i + 1]), ets = to_ns(b, t, w[i + 2]);
			uint64_t meta = w[i + 3];
			unsigned yn = (unsigned)(meta >> 32) & 0xffff, yc = (unsigned)(meta >> 48) & 0xffff;

			t->worker = (int32_t)(uint32_t)meta;
			if (!opened_take(t, id, w[i + 1])) {
				e = push(b, t, TET_EV_POLL_BEGIN, bts);
				if (!e)
					return -ENOMEM;
				e->w[0] = id;
				e->w[2] = (uint64_t)(int64_t)t->worker;
			}
			/* its waits, just before its end */
			ret = waits_out(b, t, id, ets > bts ? ets - 1 : ets);
			if (ret)
				return ret;
			/* the yields ride on the end (the analyzer's per-event records allow it) */
			e = push(b, t, TET_EV_POLL_END, ets);
			if (!e)
				return -ENOMEM;
			e->w[0] = id;
			e->w[2] = code;
			e->w[3] = yn | yc << 16;
			if (code == 2) { /* notified during the poll: the yield that follows */
				e = push(b, t, TET_EV_YIELD, ets);
				if (!e)
					return -ENOMEM;
				e->w[0] = id;
				e->w[2] = 2;
			}
			stamp_seen(b, t, ets);
			break;
		}
		case TET_BREC_WAKE:
			e = push(b, t, TET_EV_WAKE, to_ns(b, t, w[i + 1]));
			if (!e)
				return -ENOMEM;
			e->w[0] = id;
			e->w[2] = code & 1;
			stamp_seen(b, t, e->ts);
			break;
		case TET_BREC_CLONE:
			e = push(b, t, TET_EV_WAKER_CLONE, clone_stamp(b, t, w, i, n, id));
			if (!e)
				return -ENOMEM;
			e->w[0] = id;
			break;
		case TET_BREC_DROP:
			e = push(b, t, TET_EV_WAKER_DROP, tail_ns); /* or the next stamp: within the span */
			if (!e)
				return -ENOMEM;
			e->w[0] = id;
			if (b->ndrops < sizeof(b->drops) / sizeof(b->drops[0]))
				b->drops[b->ndrops++] = b->ntmp - 1;
			break;
		case TET_BREC_SPAWN:
			e = push(b, t, TET_EV_SPAWN, to_ns(b, t, w[i + 2]));
			if (!e)
				return -ENOMEM;
			e->code = code;
			e->w[0] = id;
			e->w[1] = w[i + 1];
			e->w[2] = w[i + 3];
			e->w[3] = w[i + 4];
			e->w[4] = w[i + 5];
			e->w[5] = w[i + 6];
			stamp_seen(b, t, e->ts);
			/* their string records come first (PROBES.md): missing, they were lost */
			string_want(b, t->pid, w[i + 3], w[i + 4] & 0xffffffffu);
			string_want(b, t->pid, w[i + 5], w[i + 6] & 0xffffffffu);
			break;
		case TET_BREC_TERMINATE:
			e = push(b, t, TET_EV_TERMINATE, to_ns(b, t, w[i + 2]));
			if (!e)
				return -ENOMEM;
			e->w[0] = id;
			e->w[1] = w[i + 1];
			e->w[2] = code;
			stamp_seen(b, t, e->ts);
			break;
		case TET_BREC_PARK:
		case TET_BREC_UNPARK:
			e = push(b, t, kind == TET_BREC_PARK ? TET_EV_PARK : TET_EV_UNPARK,
				 to_ns(b, t, w[i + 1]));
			if (!e)
				return -ENOMEM;
			t->worker = (int32_t)(uint32_t)id;
			e->w[2] = (uint64_t)(int64_t)t->worker;
			e->w[3] = w[i + 2];
			stamp_seen(b, t, e->ts);
			break;
		case TET_BREC_STRING:
			string_put(b, t->pid, w[i + 1], &w[i + 2], (size_t)id);
			b->s.strings++;
			break;
		case TET_BREC_WAIT:
			wait_hold(b, t, id, w[i + 1], w[i + 2], code);
			break;
		case TET_BREC_LOCK:
			lock_hold(b, t, id, w[i + 1], w[i + 2], code);
			break;
		case TET_BREC_META:
			/* right after its spawn record: at that stamp, after it */
			e = push(b, t, TET_EV_META, t->last_ts);
			if (!e)
				return -ENOMEM;
			e->code = code;
			e->w[0] = id;
			e->w[1] = w[i + 1];
			e->w[2] = w[i + 2];
			if (w[i + 2])
				string_put(b, t->pid, NAME_KEY | id, &w[i + 3], (size_t)w[i + 2]);
			break;
		}
		i += need;
	}
	b->ndrops = 0;
	return ret;
}

/* Drops the staged events outside the capture window (no pass when their span lies inside). */
static void tmp_window(struct tb *b)
{
	size_t j = 0;

	if (b->stage_lo >= b->o.start_ns && (!b->cutoff || b->stage_hi <= b->cutoff))
		return;
	for (size_t i = 0; i < b->ntmp; i++)
		if (in_window(b, b->tmp[i].ts))
			b->tmp[j++] = b->tmp[i];
	b->ntmp = j;
}

static bool head_ok(const struct tet_batch_head *h, uint32_t tid, size_t avail)
{
	return h->magic == TET_BATCH_MAGIC && h->version == TET_BATCH_VERSION &&
	       h->head_bytes == HEAD_BYTES && h->tid == tid && h->len % 8 == 0 &&
	       h->data_cap <= TET_BATCH_DATA_MAX && h->len <= h->data_cap &&
	       HEAD_BYTES + h->len <= avail && h->open_max == OPEN_MAX &&
	       h->reason < TET_BATCH_REASONS && h->rate <= TET_BATCH_RATE_MAX &&
	       (h->clock == TET_BATCH_CLOCK_TSC || h->clock == TET_BATCH_CLOCK_MONO);
}

/* src: a head's counts (TET_BATCH_COUNTS probes; the others are not counted by the threads) */
static void add_counts(uint64_t *dst, const uint64_t *src)
{
	for (int i = 0; i < TET_BATCH_COUNTS; i++)
		dst[i] += src[i];
}

/* A head's window counts, each clamped to TET_BATCH_COUNT_MAX (counted when `count`: a flush,
 * not the sweeps that read the same window before it). */
static void head_counts(struct tb *b, uint64_t *dst, const uint64_t *src, bool count)
{
	for (int i = 0; i < TET_BATCH_COUNTS; i++) {
		dst[i] = src[i];
		if (dst[i] > TET_BATCH_COUNT_MAX) {
			dst[i] = TET_BATCH_COUNT_MAX;
			b->s.implausible += count;
		}
	}
}

int tb_feed(struct tb *b, const void *rec, size_t size)
{
	const struct tet_batch_rec *r = rec;
	struct tet_batch_head h;
	struct thread *t;
	uint64_t flush_ns, window_ns, counts[TET_BATCH_COUNTS], lost = 0;
	uint32_t from;
	bool first = false;
	int ret;

	reads_reset(b);
	if (size < sizeof(*r) || r->h.type != TET_REC_BATCH || r->copied < HEAD_BYTES ||
	    r->copied > size - sizeof(*r)) {
		b->s.bad_batches++;
		return -EINVAL;
	}
	memcpy(&h, r->data, sizeof(h));
	if (!head_ok(&h, r->h.tid, r->copied) || h.seq != r->seq || h.len != r->len) {
		b->s.bad_batches++;
		return -EINVAL;
	}
	b->s.batches++;
	/* ring order is submission order, give or take a reservation made just before */
	if (r->h.ts > RING_MARGIN_NS && r->h.ts - RING_MARGIN_NS > b->ring_ns)
		b->ring_ns = r->h.ts - RING_MARGIN_NS;
	t = thread_find(b, r->h.pid, r->h.tid);
	if (t && t->dead && t->buf == r->buf) /* its final batch after all, later than the grace */
		thread_revive(b, t);
	if (t && t->buf && t->buf != r->buf) { /* a new buffer: the tid was reused by a new thread */
		t->exited = true;
		t->tid = 0;
		t = NULL;
	}
	if (!t) {
		if (b->nthreads >= THREADS_MAX) { /* threads the process made: refused, O(1) */
			b->s.threads_refused++;
			return -EINVAL;
		}
		t = thread_new(b, r->h.pid, r->h.tid);
		if (!t)
			return -ENOMEM;
	}
	if (!t->buf) { /* its first batch */
		t->buf = r->buf;
		t->next_seq = h.seq;
		t->clock = h.clock;
		first = h.seq > 0; /* the ones before: an earlier capture's, or lost (below) */
	}
	if (h.seq < t->next_seq)
		return 0; /* a duplicate */
	if (h.seq > t->next_seq) {
		if (h.seq - t->next_seq <= TET_BATCH_SEQ_GAP_MAX) {
			b->s.lost_batches += h.seq - t->next_seq;
			lost = h.seq - t->next_seq;
		} else {
			b->s.implausible++; /* no thread flushes that often: not taken as losses */
		}
		t->consumed = 0;
	}
	head_counts(b, counts, (const uint64_t *)h.counts, true);
	from = h.seq == t->next_seq ? t->consumed : 0;
	if (from > h.len) { /* a sweep read more of this batch than it now holds: torn */
		b->s.torn_batches++;
		from = h.len;
	}
	b->s.rate = h.rate ? h.rate : 1;
	b->s.clock = h.clock;
	flush_ns = to_ns(b, t, h.flush_clock);
	window_ns = to_ns(b, t, h.window_clock);
	if (h.clock == TET_BATCH_CLOCK_TSC && b->npairs >= 2) {
		uint64_t err = flush_ns > h.flush_ns ? flush_ns - h.flush_ns : h.flush_ns - flush_ns;

		if (err > CLOCK_ERROR_MAX_NS)
			b->s.implausible++; /* the process's CLOCK_MONOTONIC reading, made up */
		else if ((int64_t)err > b->s.clock_error_ns)
			b->s.clock_error_ns = (int64_t)err;
	}
	/* the batches before this one that never came, from the thread's last known point (a
	 * first batch whose predecessor was flushed during the capture: from its start) */
	if (lost)
		gap(b, t, t->complete_ns, window_ns, lost);
	else if (first && b->o.start_ns && window_ns >= b->o.start_ns)
		gap(b, t, b->o.start_ns, window_ns, 0);
	/* the records are from after the previous flush: a clone before any stamp takes that */
	if (t->last_ts < window_ns)
		t->last_ts = window_ns;
	if (stage_begin(b, t, (h.len - from) / 8 + OPEN_MAX))
		return -ENOMEM;
	ret = decode(b, t, (const uint64_t *)(r->data + HEAD_BYTES), from, h.len, flush_ns);
	if (ret == -ENOMEM)
		return ret;
	if (open_polls(b, t, &h))
		return -ENOMEM;
	tmp_window(b);
	if (queue_merge(b, t))
		return -ENOMEM;
	/* the window's counts, unless it lies wholly outside the capture */
	if (flush_ns >= b->o.start_ns && (!b->cutoff || window_ns <= b->cutoff))
		add_counts(b->s.recorded, counts);
	memset(t->window, 0, sizeof(t->window));
	t->next_seq = h.seq + 1;
	t->consumed = 0;
	if (flush_ns > t->complete_ns)
		t->complete_ns = flush_ns;
	t->last_seen = r->h.ts;
	t->last_try = b->now;
	if (h.reason == TET_BATCH_REASON_EXIT) {
		t->exited = true;
		b->s.threads_exited++;
	}
	return ret;
}

/* ---- sweeps ---- */
static bool heads_agree(const struct tet_batch_head *a, const struct tet_batch_head *c)
{
	unsigned depth = a->depth < OPEN_MAX ? a->depth : OPEN_MAX;

	return a->seq == c->seq && a->depth == c->depth &&
	       !memcmp(a->open, c->open, depth * sizeof(a->open[0]));
}

/* The thread is gone. Its last batches may still be in the ring: the verdict waits until the
 * ring has been read past this moment (tb_advance). */
static void thread_gone(struct thread *t, uint64_t now_ns)
{
	if (!t->gone_ns)
		t->gone_ns = now_ns;
}

/* Gone without its final batch: what it recorded after its last batch or sweep is lost. The
 * counts of its window as last swept were decoded with that sweep, unless more came since. */
static void thread_vanished(struct tb *b, struct thread *t)
{
	t->dead = true;
	b->s.threads_vanished++;
	gap(b, t, t->complete_ns, t->gone_ns > t->complete_ns ? t->gone_ns : t->complete_ns, 1);
	if (t->consumed)
		memset(t->unflushed, 0, sizeof(t->unflushed));
	else
		memcpy(t->unflushed, t->window, sizeof(t->unflushed));
	add_counts(b->s.unflushed, t->unflushed);
	memset(t->window, 0, sizeof(t->window));
}

/* A batch of a thread judged vanished came after all (kept dead for max_delay for this): the
 * verdict is taken back and the batch decoded as it would have been (its events late). */
static void thread_revive(struct tb *b, struct thread *t)
{
	t->dead = false;
	t->gone_ns = 0;
	b->s.threads_vanished--;
	b->s.threads_revived++;
	for (int i = 0; i < TET_BATCH_COUNTS; i++) /* what add_counts added */
		b->s.unflushed[i] -= t->unflushed[i];
	memset(t->unflushed, 0, sizeof(t->unflushed));
}

/* The sweep of thread t begins: its head first. */
static void sweep_begin(struct tb *b, struct thread *t, uint64_t now_ns)
{
	t->last_try = now_ns;
	t->sweep_now = false;
	b->s.sweeps++;
	b->rd.t = t;
	b->rd.now = now_ns;
	b->rd.stage = RD_HEAD;
	b->rd.rq = (struct tb_read){ .kind = TB_READ_MEM, .pid = t->pid, .tid = t->tid,
				     .addr = t->buf, .buf = &b->rd.h, .len = sizeof(b->rd.h) };
}

static void sweep_end(struct tb *b)
{
	b->rd.stage = RD_NONE;
	b->rd.t = NULL;
	b->ntmp = 0;
	free(b->rd.recs);
	b->rd.recs = NULL;
}

/* The head came: the records not decoded yet, or the head again. */
static void sweep_head(struct tb *b, ssize_t n)
{
	struct thread *t = b->rd.t;
	const struct tet_batch_head *h = &b->rd.h;

	if (n != (ssize_t)sizeof(*h) || !head_ok(h, t->tid, HEAD_BYTES + TET_BATCH_DATA_MAX)) {
		/* gone, exiting (the buffer freed: its last batch is on its way) or unreadable */
		if (n == -ESRCH) {
			thread_gone(t, b->rd.now);
		} else { /* is it still there? */
			b->rd.stage = RD_ALIVE;
			b->rd.rq = (struct tb_read){ .kind = TB_READ_THREAD, .pid = t->pid, .tid = t->tid };
			return;
		}
		sweep_end(b);
		return;
	}
	if (h->seq != t->next_seq || h->len < t->consumed) {
		if (h->seq == t->next_seq) /* records read before are gone: torn (its flush counts it) */
			b->s.sweep_failures++;
		sweep_end(b); /* else batches in flight: the ring has them, wait */
		return;
	}
	b->rd.stage = RD_HEAD2;
	b->rd.rq.buf = &b->rd.h2;
	if (h->len > t->consumed) {
		b->rd.recs = malloc(h->len);
		if (!b->rd.recs) {
			sweep_end(b);
			return;
		}
		b->rd.stage = RD_RECS;
		b->rd.rq.addr = t->buf + HEAD_BYTES + t->consumed;
		b->rd.rq.buf = (char *)b->rd.recs + t->consumed;
		b->rd.rq.len = h->len - t->consumed;
	}
}

/* Head, records and head again agree: what was read is decoded. */
static void sweep_decode(struct tb *b)
{
	struct thread *t = b->rd.t;
	const struct tet_batch_head *h = &b->rd.h;
	uint64_t now_ns = b->rd.now;

	if (stage_begin(b, t, (h->len - t->consumed) / 8 + OPEN_MAX))
		return;
	if (b->rd.recs) {
		if (decode(b, t, b->rd.recs, t->consumed, h->len, now_ns - SWEEP_MARGIN_NS) == -ENOMEM)
			return;
		b->s.sweep_records += (h->len - t->consumed) / 8;
		t->consumed = h->len;
	}
	if (open_polls(b, t, h))
		return;
	tmp_window(b);
	if (queue_merge(b, t))
		return;
	head_counts(b, t->window, (const uint64_t *)h->counts, false);
	if (now_ns - SWEEP_MARGIN_NS > t->complete_ns)
		t->complete_ns = now_ns - SWEEP_MARGIN_NS;
	t->last_seen = now_ns;
}

int tb_feed_sweep(struct tb *b, uint32_t pid, uint32_t tid, uint64_t buf, uint64_t now_ns,
		  const void *head, const void *recs, size_t len)
{
	const struct tet_batch_head *h = head;
	struct thread *t;

	reads_reset(b);
	if (!head_ok(h, tid, HEAD_BYTES + TET_BATCH_DATA_MAX) || h->len != len) {
		b->s.bad_batches++;
		return -EINVAL;
	}
	t = thread_find(b, pid, tid);
	if (t && t->buf && t->buf != buf)
		return 0; /* another thread's buffer: the tid was reused */
	if (!t) { /* met through a sweep first: its batches before were not seen */
		if (b->nthreads >= THREADS_MAX) {
			b->s.threads_refused++;
			return -EINVAL;
		}
		t = thread_new(b, pid, tid);
		if (!t)
			return -ENOMEM;
	}
	if (!t->buf) {
		t->buf = buf;
		t->next_seq = h->seq;
		t->clock = h->clock;
	}
	if (t->exited || t->dead || h->seq != t->next_seq || h->len < t->consumed)
		return 0; /* batches in flight, or records gone: as a live sweep, nothing */
	b->s.sweeps++;
	b->rd.t = t;
	b->rd.now = now_ns;
	b->rd.h = *h;
	if (len > t->consumed) {
		b->rd.recs = malloc(len);
		if (!b->rd.recs) {
			sweep_end(b);
			return -ENOMEM;
		}
		memcpy(b->rd.recs, recs, len);
	}
	sweep_decode(b);
	sweep_end(b);
	return 0;
}

static bool sweep_due(const struct tb *b, const struct thread *t, uint64_t now_ns)
{
	return t->buf && !t->exited && !t->dead && !t->gone_ns &&
	       (t->sweep_now || (now_ns && t->last_try + b->o.sweep_after_ns <= now_ns));
}

/* Any call but tb_next_read/tb_read_done: an unanswered read is dropped, the scan restarts. */
static void reads_reset(struct tb *b)
{
	if (b->rd.stage == RD_STRING) {
		struct string *s = string_get(b, b->rd.rq.pid, b->rd.rq.addr);

		if (s && s->state == STR_WANTED)
			s->state = STR_FAILED;
	}
	sweep_end(b);
	b->rd.scan = 0;
}

bool tb_next_read(struct tb *b, uint64_t now_ns, struct tb_read *rq)
{
	if (b->rd.stage != RD_NONE) { /* the next step of a sweep, or a read asked again */
		*rq = b->rd.rq;
		return true;
	}
	if (!b->o.reads)
		return false;
	if (now_ns != b->rd.scan_now) {
		b->rd.scan = 0;
		b->rd.scan_now = now_ns;
	}
	while (b->rd.scan < b->nthreads) {
		struct thread *t = b->threads[b->rd.scan++];

		if (sweep_due(b, t, now_ns)) {
			sweep_begin(b, t, now_ns);
			*rq = b->rd.rq;
			return true;
		}
	}
	while (b->rd.qlen) {
		struct strq q = b->rd.q[b->rd.qhead];
		const struct string *s = string_get(b, q.pid, q.ptr);

		b->rd.qhead = (b->rd.qhead + 1) % STRQ_MAX;
		b->rd.qlen--;
		if (!s || s->state != STR_WANTED)
			continue; /* its record came after all */
		b->rd.stage = RD_STRING;
		b->rd.rq = (struct tb_read){ .kind = TB_READ_MEM, .pid = (uint32_t)q.pid,
					     .addr = q.ptr, .buf = b->rd.str, .len = q.len };
		*rq = b->rd.rq;
		return true;
	}
	return false;
}

void tb_read_done(struct tb *b, ssize_t n)
{
	struct string *s;

	switch (b->rd.stage) {
	case RD_NONE:
		return;
	case RD_STRING:
		b->rd.stage = RD_NONE;
		s = string_get(b, b->rd.rq.pid, b->rd.rq.addr);
		if (!s || s->state != STR_WANTED)
			return;
		if (n > 0) {
			string_put(b, b->rd.rq.pid, b->rd.rq.addr, b->rd.str, (size_t)n);
			b->s.strings_read++;
		} else {
			s->state = STR_FAILED;
		}
		return;
	case RD_HEAD:
		sweep_head(b, n);
		return;
	case RD_ALIVE:
		if (n == -ESRCH)
			thread_gone(b->rd.t, b->rd.now);
		else
			b->s.sweep_failures++;
		break;
	case RD_RECS:
		if (n != (ssize_t)b->rd.rq.len) {
			b->s.sweep_failures++;
			break;
		}
		b->rd.stage = RD_HEAD2;
		b->rd.rq.addr = b->rd.t->buf;
		b->rd.rq.buf = &b->rd.h2;
		b->rd.rq.len = sizeof(b->rd.h2);
		return;
	case RD_HEAD2:
		if (n != (ssize_t)sizeof(b->rd.h2) || !heads_agree(&b->rd.h, &b->rd.h2))
			b->s.sweep_failures++; /* it flushed or moved on meanwhile: next time */
		else
			sweep_decode(b);
		break;
	}
	sweep_end(b);
}

/* ---- delivery ---- */
/* ---- the tracer's own records ----
 * A rate change (tb_rate) or a gap in a thread's batches waits here until the events before
 * it have been delivered. Kept sorted by time; past CTL_MAX held, a gap widens the latest gap
 * and a rate replaces the latest rate (counted). */
static void ctl_add(struct tb *b, const struct ctl *c)
{
	size_t i, n;

	if (!b->ctl && !(b->ctl = calloc(CTL_MAX, sizeof(*b->ctl))))
		b->nctl = CTL_MAX; /* out of memory: every record merges (below) */
	if (b->nctl == CTL_MAX) {
		b->s.controls_merged++;
		for (n = b->ctl ? b->nctl : 0; n-- > 0;) {
			struct ctl *l = &b->ctl[(b->ctl_head + n) % CTL_MAX];

			if (l->u.rate.h.type != c->u.rate.h.type)
				continue;
			if (c->u.rate.h.type == TET_REC_GAP) {
				if (c->u.gap.from_ns < l->u.gap.from_ns)
					l->u.gap.from_ns = c->u.gap.from_ns;
				l->u.gap.batches += c->u.gap.batches;
				l->u.gap.h.tid = 0; /* several threads */
			} else if (c->u.rate.rate > l->u.rate.rate) {
				l->u.rate.rate = c->u.rate.rate;
			}
			if (c->ts > l->ts) /* delivered after both */
				l->ts = l->u.rate.h.ts = c->ts;
			return;
		}
		return;
	}
	/* insert sorted (controls come nearly in time order: from the tail) */
	for (i = b->nctl; i > 0 && b->ctl[(b->ctl_head + i - 1) % CTL_MAX].ts > c->ts; i--)
		b->ctl[(b->ctl_head + i) % CTL_MAX] = b->ctl[(b->ctl_head + i - 1) % CTL_MAX];
	b->ctl[(b->ctl_head + i) % CTL_MAX] = *c;
	b->nctl++;
}

/* Delivers the held records stamped up to ts. */
static void ctl_release(struct tb *b, uint64_t ts)
{
	while (b->nctl && b->ctl && b->ctl[b->ctl_head].ts <= ts) {
		struct ctl *c = &b->ctl[b->ctl_head];

		if (c->u.rate.h.type == TET_REC_GAP)
			b->o.emit(b->o.emit_ctx, &c->u.gap, sizeof(c->u.gap));
		else
			b->o.emit(b->o.emit_ctx, &c->u.rate, sizeof(c->u.rate));
		b->ctl_head = (b->ctl_head + 1) % CTL_MAX;
		b->nctl--;
	}
}

void tb_rate(struct tb *b, uint64_t ts, uint32_t rate, uint32_t why)
{
	struct ctl c = { .ts = ts };

	c.u.rate.h = (struct tet_hdr){ .ts = ts, .type = TET_REC_RATE };
	c.u.rate.rate = rate ? rate : 1;
	c.u.rate.why = why;
	ctl_add(b, &c);
}

/* Thread t's batches between from_ns and to_ns are lost: the tasks alive then are unknown. */
static void gap(struct tb *b, const struct thread *t, uint64_t from_ns, uint64_t to_ns,
		uint64_t batches)
{
	struct ctl c = { .ts = to_ns > from_ns ? to_ns : from_ns };

	b->s.gaps++;
	c.u.gap.h = (struct tet_hdr){ .ts = c.ts, .type = TET_REC_GAP, .pid = t->pid, .tid = t->tid };
	c.u.gap.from_ns = from_ns;
	c.u.gap.batches = batches;
	ctl_add(b, &c);
}

static void deliver(struct tb *b, const struct thread *t, const struct ev *e)
{
	if (e->ts > b->released) /* an earlier one was counted as late when queued */
		b->released = e->ts;
	b->s.events++;
	if (e->type < TET_EV_COUNT)
		b->s.by_type[e->type]++;
	if (e->type == TET_EV_POLL_END)
		b->s.by_type[TET_EV_YIELD] += (e->w[3] & 0xffff) + ((e->w[3] >> 16) & 0xffff);
	if (e->type == TET_EV_SPAWN) {
		struct tet_spawn_rec r;

		memset(&r, 0, offsetof(struct tet_spawn_rec, data));
		r.h = (struct tet_hdr){ .ts = e->ts, .type = TET_EV_SPAWN, .pid = t->pid, .tid = t->tid };
		r.task_id = e->w[0];
		r.header_ptr = e->w[1];
		r.kind = e->code;
		r.file_ptr = e->w[2];
		r.file_len = e->w[3] & 0xffffffffu;
		r.line = (uint32_t)(e->w[3] >> 32);
		r.type_ptr = e->w[4];
		r.type_len = e->w[5] & 0xffffffffu;
		r.col = (uint32_t)(e->w[5] >> 32);
		r.file_copied = string_fill(b, t->pid, r.file_ptr, r.file_len, r.data);
		r.type_copied = string_fill(b, t->pid, r.type_ptr, r.type_len, r.data + TET_FILE_MAX);
		b->o.emit(b->o.emit_ctx, &r, sizeof(r));
	} else if (e->type == TET_EV_META) {
		struct tet_meta_rec r;

		memset(&r, 0, offsetof(struct tet_meta_rec, name));
		r.h = (struct tet_hdr){ .ts = e->ts, .type = TET_EV_META, .pid = t->pid, .tid = t->tid };
		r.task_id = e->w[0];
		r.size = e->w[1];
		r.name_len = e->w[2];
		r.flags = e->code;
		r.name_copied = r.name_len ? string_fill(b, t->pid, NAME_KEY | r.task_id,
							 r.name_len < TET_NAME_MAX ? r.name_len : TET_NAME_MAX,
							 r.name) : 0;
		b->o.emit(b->o.emit_ctx, &r, sizeof(r));
	} else {
		struct tet_event_rec r;

		memset(&r, 0, sizeof(r));
		r.h = (struct tet_hdr){ .ts = e->ts, .type = e->type, .pid = t->pid, .tid = t->tid };
		r.task_id = e->w[0];
		r.header_ptr = e->w[1];
		r.a = e->w[2];
		r.b = e->w[3];
		b->o.emit(b->o.emit_ctx, &r, sizeof(r));
	}
}

static bool heap_less(const struct thread *x, const struct thread *y)
{
	return ev_cmp(&x->q[x->qhead], &y->q[y->qhead]) < 0;
}

static void heap_down(struct thread **h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		struct thread *tmp;

		if (l < n && heap_less(h[l], h[m]))
			m = l;
		if (l + 1 < n && heap_less(h[l + 1], h[m]))
			m = l + 1;
		if (m == i)
			return;
		tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

/* Delivers, in time order, every held event up to `mark`, and beyond it the oldest ones
 * while more than max_pending are held. False when out of memory (nothing delivered). */
static bool release(struct tb *b, uint64_t mark)
{
	size_t n = 0;

	if (b->heap_cap < b->nthreads) {
		struct thread **h = realloc(b->heap, b->nthreads * sizeof(*h));

		if (!h)
			return false;
		b->heap = h;
		b->heap_cap = b->nthreads;
	}
	for (size_t i = 0; i < b->nthreads; i++)
		if (b->threads[i]->qlen)
			b->heap[n++] = b->threads[i];
	for (size_t i = n / 2; i-- > 0;)
		heap_down(b->heap, n, i);
	while (n) {
		struct thread *t = b->heap[0];
		/* the next thread's head: the top thread's events up to it go in a run, the heap
		 * put right once after (it keeps the top while no child is strictly less) */
		const struct ev *next = n < 2 ? NULL :
					n < 3 || !heap_less(b->heap[2], b->heap[1]) ?
					&b->heap[1]->q[b->heap[1]->qhead] : &b->heap[2]->q[b->heap[2]->qhead];
		bool stop = false;

		do {
			const struct ev *e = &t->q[t->qhead];

			if (e->ts > mark) {
				if (b->s.pending <= b->o.max_pending) {
					stop = true;
					break;
				}
				b->s.forced++;
			}
			if (b->nctl)
				ctl_release(b, e->ts);
			deliver(b, t, e);
			t->qhead++;
			t->qlen--;
			b->s.pending--;
		} while (t->qlen && (!next || ev_cmp(&t->q[t->qhead], next) <= 0));
		if (!t->qlen) {
			t->qhead = 0;
			b->heap[0] = b->heap[--n];
		}
		if (stop)
			break;
		heap_down(b->heap, n, 0);
	}
	ctl_release(b, mark);
	return true;
}

/* The time up to which no thread can still send an earlier event: the oldest "complete up
 * to" of the threads heard from lately, and the ring's own progress (a thread not heard of
 * yet registers through the ring). */
static uint64_t watermark(const struct tb *b)
{
	uint64_t mark = b->ring_ns;

	for (size_t i = 0; i < b->nthreads; i++) {
		const struct thread *t = b->threads[i];

		if (!t->buf || t->exited || t->dead || t->last_seen + b->o.max_delay_ns < b->ring_ns)
			continue;
		if (t->complete_ns < mark)
			mark = t->complete_ns;
	}
	/* a thread too quiet to wait for any longer (its buffer cannot be read): what is older
	 * than max_delay goes */
	if (b->ring_ns > b->o.max_delay_ns && mark < b->ring_ns - b->o.max_delay_ns)
		mark = b->ring_ns - b->o.max_delay_ns;
	return mark;
}

void tb_ring_drained(struct tb *b, uint64_t before_ns)
{
	if (before_ns > RING_MARGIN_NS && before_ns - RING_MARGIN_NS > b->ring_ns)
		b->ring_ns = before_ns - RING_MARGIN_NS;
}

void tb_advance(struct tb *b, uint64_t now_ns)
{
	uint64_t mark;

	reads_reset(b);
	b->now = now_ns;
	/* a sweep is safe whenever no batch of the thread is in flight (it checks), so quiet
	 * threads are read on the tracer's clock (tb_next_read), even while the ring has a
	 * backlog; the verdict on a thread found gone waits until the ring is read past that */
	for (size_t i = 0; i < b->nthreads; i++) {
		struct thread *t = b->threads[i];

		if (t->gone_ns && !t->dead && !t->exited && b->ring_ns >= t->gone_ns + VANISH_GRACE_NS)
			thread_vanished(b, t);
	}
	mark = watermark(b);
	if (release(b, mark) && mark > b->delivered_ns)
		b->delivered_ns = mark;
	threads_prune(b);
}

void tb_set_start(struct tb *b, uint64_t start_ns)
{
	b->o.start_ns = start_ns;
}

void tb_set_cutoff(struct tb *b, uint64_t cutoff_ns)
{
	b->cutoff = cutoff_ns;
}

void tb_sweep_all(struct tb *b)
{
	reads_reset(b);
	for (size_t i = 0; i < b->nthreads; i++)
		b->threads[i]->sweep_now = true;
}

void tb_finish(struct tb *b)
{
	reads_reset(b);
	for (size_t i = 0; i < b->nthreads; i++)
		if (b->threads[i]->gone_ns && !b->threads[i]->dead && !b->threads[i]->exited)
			thread_vanished(b, b->threads[i]);
	if (release(b, UINT64_MAX))
		b->delivered_ns = UINT64_MAX;
	/* the windows the threads had not flushed, as the last sweep read them */
	for (size_t i = 0; i < b->nthreads; i++) {
		add_counts(b->s.recorded, b->threads[i]->window);
		memset(b->threads[i]->window, 0, sizeof(b->threads[i]->window));
	}
}

const struct tb_stats *tb_stats(const struct tb *b)
{
	return &b->s;
}

uint64_t tb_delivered_ns(const struct tb *b)
{
	return b->delivered_ns;
}

bool tb_sampled(const struct tb *b)
{
	return b->s.rate > 1;
}

void tb_totals(const struct tb *b, uint64_t out[TET_EV_COUNT])
{
	memcpy(out, b->s.recorded, sizeof(b->s.recorded));
	for (size_t i = 0; i < b->nthreads; i++)
		add_counts(out, b->threads[i]->window);
}

struct tb *tb_new(const struct tb_opts *o)
{
	struct tb *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->o = *o;
	if (!b->o.sweep_after_ns)
		b->o.sweep_after_ns = 30000000ull;
	if (!b->o.max_delay_ns)
		b->o.max_delay_ns = 2000000000ull;
	if (!b->o.max_pending)
		b->o.max_pending = 512u << 10;
	b->s.rate = 1;
	return b;
}

void tb_free(struct tb *b)
{
	if (!b)
		return;
	free(b->ctl);
	for (size_t i = 0; i < b->nthreads; i++)
		thread_free(b->threads[i]);
	for (size_t i = 0; i < b->strings_cap; i++)
		free(b->strings[i]);
	free(b->strings);
	free(b->threads);
	free(b->tix);
	free(b->scratch);
	free(b->heap);
	free(b->rd.recs);
	free(b);
}
