/* SPDX-License-Identifier: MIT */
/*
 * batch.h — batched capture's decode stage: tokio:event_batch ring records (bpf/events.h
 * struct tet_batch_rec) → the per-event records the analyzer eats (struct tet_event_rec,
 * struct tet_spawn_rec), in timestamp order across threads. Pure computation: it reads no
 * process memory and calls nothing of the capture. What it needs read (the buffers of quiet
 * threads, a spawn's strings whose record was lost) it asks for with tb_next_read; the capture
 * reads and hands back the outcome with tb_read_done. Tests answer with synthetic memory.
 * Design at the top of batch.c.
 */
#ifndef TET_BATCH_H
#define TET_BATCH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "batch_stats.h"
#include "events.h"

/* Receives one record in the per-event layout (the analyzer's an_event). */
typedef int (*tb_emit_fn)(void *ctx, const void *rec, size_t size);

struct tb_opts {
	tb_emit_fn emit;
	void *emit_ctx;
	bool reads;                 /* the capture answers tb_next_read (false: no sweeps, no
				     * strings read from the process) */
	uint64_t start_ns;          /* the capture's start: earlier records are left out */
	uint64_t sweep_after_ns;    /* read the buffer of a thread silent this long (30 ms) */
	uint64_t max_delay_ns;      /* hold no event longer than this for ordering (2 s) */
	size_t max_pending;         /* events held for ordering at most (512k; beyond: released) */
};


struct tb;

struct tb *tb_new(const struct tb_opts *o);
void tb_free(struct tb *b);
/* A (TSC, CLOCK_MONOTONIC ns) pair read back to back by the tracer: TSC stamps are converted
 * by interpolating between such pairs. Call at start (twice, a few ms apart) and on every
 * drain. */
void tb_clock_pair(struct tb *b, uint64_t tsc, uint64_t ns);
/* A ring record of type TET_REC_BATCH, in ring order. Returns 0, or -EINVAL for a malformed
 * batch (counted, ignored), -ENOMEM. */
int tb_feed(struct tb *b, const void *rec, size_t size);
/* A sweep made elsewhere (a flight recorder's, replayed): thread tid's buffer at buf read in
 * place at now_ns (CLOCK_MONOTONIC) — its head, then its len bytes of records from the first —
 * decoded as the decoder's own sweep would (records already decoded skipped; nothing when the
 * buffer has moved on to a batch not fed yet). A thread unknown so far is met this way. Returns
 * 0, -EINVAL (a head that does not pass: counted) or -ENOMEM. */
int tb_feed_sweep(struct tb *b, uint32_t pid, uint32_t tid, uint64_t buf, uint64_t now_ns,
		  const void *head, const void *recs, size_t len);
/* The ring was read empty by a consume that began at before_ns (CLOCK_MONOTONIC): every
 * record submitted before that has been fed. */
void tb_ring_drained(struct tb *b, uint64_t before_ns);
/* What the decoder asks the capture to read from the traced process. */
enum tb_read_kind {
	TB_READ_MEM,                /* len bytes at addr into buf */
	TB_READ_THREAD,             /* does thread tid of process pid still exist? (len 0) */
};
struct tb_read {
	enum tb_read_kind kind;
	uint32_t pid, tid;
	uint64_t addr;
	void *buf;                  /* the decoder's memory, len bytes */
	size_t len;
};
/* The next read the decoder needs at now_ns (the tracer's CLOCK_MONOTONIC): a step of the
 * sweep of a thread silent for sweep_after_ns (head, records, head again), or a spawn's
 * string its record did not bring. False: nothing more now. now_ns 0: no sweep is due, only
 * the strings. Answer each with tb_read_done before any other call. */
bool tb_next_read(struct tb *b, uint64_t now_ns, struct tb_read *rq);
/* The outcome of the read tb_next_read asked for: TB_READ_MEM the count read or a negative
 * errno (-ESRCH: the process or thread is gone); TB_READ_THREAD 0 (it exists) or -ESRCH. */
void tb_read_done(struct tb *b, ssize_t n);
/* Delivers every event no thread can still precede. now_ns: the tracer's CLOCK_MONOTONIC.
 * Call after each drain, once tb_next_read has nothing more. */
void tb_advance(struct tb *b, uint64_t now_ns);
/* The capture starts at start_ns: earlier records (an earlier capture's) are left out. */
void tb_set_start(struct tb *b, uint64_t start_ns);
/* The capture ends at cutoff_ns: later records are left out (counted). */
void tb_set_cutoff(struct tb *b, uint64_t cutoff_ns);
/* Every thread's buffer is to be read one last time, by the next tb_next_read (call after
 * tb_set_cutoff, before detaching), so what the threads still hold is not lost. */
void tb_sweep_all(struct tb *b);
/* Delivers everything still held (call after the last drain, and after tb_next_read with
 * now_ns 0 has nothing more). */
void tb_finish(struct tb *b);
const struct tb_stats *tb_stats(const struct tb *b);
/* The time up to which every event has been delivered (the watermark of the last tb_advance,
 * behind the tracer's clock by a sweep or more): a judgement of "nothing happened since"
 * (a stall, a poll that never yields) made later than this would take events still held
 * for ordering, or still in a thread's buffer, for events that did not happen. */
uint64_t tb_delivered_ns(const struct tb *b);
/* From ts on (CLOCK_MONOTONIC) the process records one task in `rate` (why: enum
 * tet_rate_why): a TET_REC_RATE record goes to the analyzer once every event before ts has.
 * Gaps (lost batches, a thread gone without its last one) go the same way, as TET_REC_GAP. */
void tb_rate(struct tb *b, uint64_t ts, uint32_t rate, uint32_t why);
/* Is the event stream sampled (a batch said rate > 1)? */
bool tb_sampled(const struct tb *b);
/* Per probe: events the threads counted (tb_stats.recorded) plus the counts of windows not
 * flushed yet, as last read by a sweep: the live total. */
void tb_totals(const struct tb *b, uint64_t out[TET_EV_COUNT]);

/* Words of the batch record at w[i] of n (PROBES.md "Batch format"), 0 when it is malformed or
 * truncated. */
size_t tb_rec_words(const uint64_t *w, size_t i, size_t n);

/* Converts a stamp on the TSC to CLOCK_MONOTONIC ns with the pairs given so far (exposed for
 * tests). */
uint64_t tb_tsc_to_ns(const struct tb *b, uint64_t tsc);

#endif
