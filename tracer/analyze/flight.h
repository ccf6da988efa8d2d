/* SPDX-License-Identifier: MIT */
/*
 * flight.h — the flight recorder's memory (--flight-recorder WINDOW): the most recent records
 * of the capture, bounded by time or by size, replayed into a fresh analyzer when a trigger
 * fires; the trigger specifications; the dump directory and its budget.
 *
 * Records are kept in chunks mapped from the kernel and returned to it whole when they fall
 * out of the window: the memory held follows the window, not its high-water mark. Batched
 * capture's batches are kept raw, as the ring hands them over (fr_store_add_raw: ~16 bytes an
 * event, no decoding), with the tracer's (TSC, CLOCK_MONOTONIC) pairs; a dump decodes the
 * window then. Every other record is kept as the analyzer receives it. Spawn records of
 * tasks still alive (or that ended inside the window) are kept apart, so a dump names the
 * spawn site of a task spawned long before its window began (for raw batches, with the
 * strings they name); they are bounded by count and bytes.
 */
#ifndef TET_FLIGHT_H
#define TET_FLIGHT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "events.h"

#define FR_CHUNK_BYTES (2u << 20)  /* a transparent huge page */
#define FR_DEFAULT_MEMORY (256ull << 20)  /* bound of a time window's memory */
#define FR_MIN_BYTES (4ull << 20)
#define FR_SPAWNS_MAX 65536               /* spawn records kept for tasks alive */

struct fr_store;

struct fr_stats {
	uint64_t bytes;            /* memory held: chunks mapped + spawn records + strings */
	uint64_t records;          /* records in the window now */
	uint64_t added, evicted;   /* since the start */
	uint64_t oldest_ts, newest_ts;   /* of the records held (0: none) */
	uint64_t spawns_kept, spawns_not_kept;
	uint64_t raw_refused;      /* raw records refused as malformed (counted, not kept) */
	uint64_t sweeps_kept;      /* sweeps kept (fr_store_add_sweep) */
	uint64_t strings_not_kept; /* strings of raw batches past the table's bound */
	bool evicted_by_size;      /* a time window lost records to the memory bound */
	uint64_t evicted_by_size_until; /* … the newest of them */
};

/* window_ns > 0: keep the records of the last window_ns, at most max_bytes; window_ns 0: keep
 * the last max_bytes. NULL when out of memory. */
struct fr_store *fr_store_new(uint64_t window_ns, uint64_t max_bytes);
void fr_store_free(struct fr_store *s);
/* Takes a record (a struct tet_hdr first). Returns 0 or -ENOMEM (the record is then counted
 * as evicted). */
int fr_store_add(struct fr_store *s, const void *rec, size_t size);
/* Drops what fell out of the window as of `now` (CLOCK_MONOTONIC). */
void fr_store_trim(struct fr_store *s, uint64_t now);
void fr_store_stats(const struct fr_store *s, struct fr_stats *st);
/* Calls fn for the records with from <= ts <= to (of process pid; 0: every process), oldest
 * chunk first; first the kept spawns of tasks spawned before `from` that were still alive at
 * `from` (their own timestamps: before the window). Returns the records passed, and in
 * *spawns_before how many of them were such spawns. */
typedef void (*fr_replay_fn)(void *ctx, const void *rec, size_t size);
uint64_t fr_store_replay(const struct fr_store *s, uint64_t from, uint64_t to, uint32_t pid,
			 fr_replay_fn fn, void *ctx, uint64_t *spawns_before);

/* ---- raw batches (batched capture) ----
 * Kinds of raw entries, as TET_BATCH_DUMP writes them: a ring record of type TET_REC_BATCH;
 * a clock pair (u64 TSC, u64 CLOCK_MONOTONIC ns). */
enum fr_raw_kind { FR_RAW_REC = 0, FR_RAW_BATCH = 1, FR_RAW_PAIR = 2, FR_RAW_SWEEP = 3 };
/* Takes a raw entry; a batch's spawns, strings, task names and ends are noted for the spawns
 * kept. Returns 0, -EINVAL (a malformed batch: counted in raw_refused) or -ENOMEM. */
int fr_store_add_raw(struct fr_store *s, enum fr_raw_kind kind, const void *rec, size_t size);
/* Sweeps: a thread silent since its last batch has its buffer read in place (as the batch
 * decoder does live): a spawner blocked in block_on hands its spawns over only when it exits,
 * and a dump must not meet its tasks before their spawns. The recorder follows the threads of
 * the raw batches (at most FR_THREADS_MAX); fr_store_sweeps_due lists those silent for quiet_ns
 * (each again after quiet_ns more), the caller reads head, records, head
 * (fr_sweep_read_ok judges the pair of heads) and keeps what changed with fr_store_add_sweep
 * (an FR_RAW_SWEEP entry: a struct tet_batch_rec whose h.ts is the read's time, data the head
 * and the records). */
#define FR_THREADS_MAX 16384
struct fr_sweep {
	uint32_t pid, tid;
	uint64_t buf;              /* the thread's buffer (its batches' `buf`) */
	uint64_t next_seq;         /* the batch it has not flushed yet */
	uint64_t swept_open;       /* the last sweep kept of it (swept): its polls in progress, */
	uint32_t swept_len;        /* … its bytes of records */
	bool swept;
};
size_t fr_store_sweeps_due(struct fr_store *s, uint64_t now, uint64_t quiet_ns,
			   struct fr_sweep *v, size_t max);
/* head (struct tet_batch_head) as read before the records and head2 after: a read to keep
 * (the thread's unflushed batch, unchanged in between). */
bool fr_sweep_read_ok(const struct fr_sweep *w, const void *head, const void *head2);
/* The thread's process is gone (a read said ESRCH): no more sweeps of it. */
void fr_store_sweep_gone(struct fr_store *s, const struct fr_sweep *w);
/* Does head (read first) say more than the last sweep kept? (No: nothing else to read.) */
bool fr_sweep_news(const struct fr_sweep *w, const void *head);
/* Keeps the read (head, then len bytes of records) when it holds more than the last one;
 * returns 0, -EINVAL or -ENOMEM. */
int fr_store_add_sweep(struct fr_store *s, const struct fr_sweep *w, uint64_t now,
		       const void *head, const void *recs, size_t len);

/* A dump of raw entries, in two phases, each to be decoded by a fresh decoder of its own:
 * FR_PRELUDE, the kept spawns of tasks spawned before `from` and alive at `from` (of `pid`;
 * 0: every process), as synthetic batches of their threads (each thread's last one says it
 * exits), after the clock pairs they need; then FR_WINDOW, the clock pairs, a synthetic batch
 * of the strings kept per process (thread FR_STRINGS_TID), and the window's raw entries in
 * arrival order, while fn gets its other records (filtered as fr_store_replay does). Raw
 * entries are not filtered by time: the decoder's events are. Returns the records passed. */
enum fr_phase { FR_PRELUDE, FR_WINDOW };
#define FR_STRINGS_TID 0xfffffff0u /* no thread has this id (pid_max is at most 2^22) */
typedef void (*fr_raw_fn)(void *ctx, enum fr_phase phase, enum fr_raw_kind kind,
			  const void *rec, size_t size);
uint64_t fr_store_replay_raw(const struct fr_store *s, uint64_t from, uint64_t to, uint32_t pid,
			     fr_replay_fn fn, fr_raw_fn raw, void *ctx, uint64_t *spawns_before);

/* A window of raw batches decoded (fr_store_replay_raw's two phases, each by a decoder of its
 * own) and handed to fn with the window's other records: the spawns of tasks older than the
 * window (those stamped from `start`, the capture's start, on), then every event in
 * [from, to]. Strings the decoder misses are read with rd (NULL: none; a failed read is never
 * taken for a thread gone: a dump judges no thread whose last batch may still be on its way);
 * `sweep`: the threads' buffers are read last (a live process: what it has not flushed yet).
 * Returns 0 with *out filled (its decoder holds the window's figures: tb_stats, tb_totals;
 * free it with tb_free), or -ENOMEM. */
struct tb;
typedef ssize_t (*fr_read_fn)(uint32_t pid, uint64_t addr, void *buf, size_t len);
struct fr_decoded {
	struct tb *win;            /* the window's decoder */
	uint64_t records;          /* given to fn */
	uint64_t spawns_before;    /* … of them, spawns of tasks older than the window */
	uint64_t by_type[TET_EV_COUNT]; /* events of the window given to fn, by probe (yields:
				     * those the polls' ends carry) */
};
int fr_store_decode(const struct fr_store *s, uint64_t from, uint64_t to, uint32_t pid,
		    uint64_t start, fr_read_fn rd, bool sweep, fr_replay_fn fn, void *ctx,
		    struct fr_decoded *out);

/* The string of process pid at addr as the window's batches brought it (kept for the spawns
 * kept, flight.h above): up to len bytes into buf; their count, or -ENOENT. */
ssize_t fr_store_string(const struct fr_store *s, uint32_t pid, uint64_t addr, void *buf,
			size_t len);

/* ---- the follower: a second stage that reads the window as it grows ----
 * The live analysis of a recorder that keeps raw batches (detector and threshold triggers,
 * metrics) reads the window rather than the ring: the ring's consumer only copies, so a
 * saturated service loses nothing from the window when the analysis cannot keep up — the
 * analysis falls behind instead. fr_store_follow hands fn up to max entries past the
 * follower's position, in arrival order (kind FR_RAW_REC: any other record, a spawn unpacked);
 * when the window drops a chunk the follower has not finished (by time or by the memory
 * bound), it goes on at the oldest chunk held, after that chunk's clock pairs, and what it
 * missed is counted. fn must not change the store. One follower per store; it starts at the
 * oldest entry held (fr_store_follow_start, or its first call). */
struct fr_follow_stats {
	uint64_t entries;          /* handed over */
	uint64_t skipped_bytes, skipped_chunks; /* dropped by the window before it read them */
	uint64_t skipped_batches;  /* … the batches in them (the live analysis sees them as lost) */
	uint64_t skipped_until;    /* the newest record of those (CLOCK_MONOTONIC ns) */
	uint64_t behind_bytes;     /* held, not read yet (fr_store_follow_stats) */
};
typedef void (*fr_follow_fn)(void *ctx, enum fr_raw_kind kind, const void *rec, size_t size);
/* A raw entry into decoder b: a clock pair, a sweep (tb_feed_sweep, when its sizes hold) or a
 * batch (tb_feed: true, the caller then serves the decoder's reads). */
bool fr_raw_feed(struct tb *b, enum fr_raw_kind kind, const void *rec, size_t size);
/* From now on the window's drops count against the follower (before its first read too). */
void fr_store_follow_start(struct fr_store *s);
size_t fr_store_follow(struct fr_store *s, size_t max, fr_follow_fn fn, void *ctx);
/* Has the follower read everything held? */
bool fr_store_follow_done(const struct fr_store *s);
void fr_store_follow_stats(const struct fr_store *s, struct fr_follow_stats *st);

/* ---- triggers ---- */
enum fr_trigger_kind {
	FR_TRIG_DETECTOR,          /* a finding kind of the analyzer (detector) */
	FR_TRIG_POLL,              /* poll>D: a poll longer than D (wall time) */
	FR_TRIG_SCHED,             /* sched_delay>D: runnable → polled longer than D */
	FR_TRIG_EXIT,              /* the traced process exited (any way) */
	FR_TRIG_CRASH,             /* … died on a signal */
};
struct fr_trigger {
	enum fr_trigger_kind kind;
	unsigned detector;         /* FR_TRIG_DETECTOR: enum an_finding_kind */
	uint64_t threshold_ns;     /* POLL, SCHED */
	const char *spec;          /* as given */
};
/* Parses one --trigger value: a detector name (long_poll, stalled, lost_waker, never_yields,
 * self_wake), poll>D, sched_delay>D, exit or crash. Returns 0, or -EINVAL with err saying why. */
int fr_trigger_parse(const char *s, struct fr_trigger *t, char *err, size_t len);

/* ---- the dump directory ---- */
/* DIR exists, is a directory and a file can be created in it (tried: root passes access()
 * checks a read-only file system still refuses). Returns 0 or -errno; err says what. */
int fr_dir_check(const char *dir, char *err, size_t len);
/* Dump files in DIR (names this recorder writes: *-<pid>-<YYYYMMDDTHHMMSS.mmmZ>-<trigger>.*),
 * oldest first, removed until their total size is at most max_bytes; the dumps named in
 * keep[0..nkeep) (base names; NULL entries are none) are never removed, and still count in the
 * total. Returns the bytes removed; *nremoved the files. */
uint64_t fr_dir_enforce(const char *dir, uint64_t max_bytes, const char *const *keep, size_t nkeep,
			size_t *nremoved);
/* "<executable>-<pid>-<UTC time>-<trigger>": exe's last path component and the trigger's
 * spec, each reduced to [A-Za-z0-9._+-] (others: '_'); the time with milliseconds. */
void fr_dump_name(char *buf, size_t len, const char *exe, uint32_t pid,
		  const struct timespec *wall, const char *trigger);

#endif
