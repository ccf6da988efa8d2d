/* SPDX-License-Identifier: MIT */
/*
 * flight.h — the flight recorder's memory (--flight-recorder WINDOW): the most recent records
 * of the capture, bounded by time or by size, replayed into a fresh analyzer when a trigger
 * fires; the trigger specifications; the dump directory and its budget.
 *
 * Records are kept as the analyzer receives them (after the batch decoder), in chunks mapped
 * from the kernel and returned to it whole when they fall out of the window: the memory held
 * follows the window, not its high-water mark. Spawn records of tasks still alive (or that
 * ended inside the window) are kept apart, so a dump names the spawn site of a task spawned
 * long before its window began; they are bounded by count and bytes.
 */
#ifndef TET_FLIGHT_H
#define TET_FLIGHT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "events.h"

#define FR_CHUNK_BYTES (1u << 20)
#define FR_DEFAULT_MEMORY (256ull << 20)  /* bound of a time window's memory */
#define FR_MIN_BYTES (4ull << 20)
#define FR_SPAWNS_MAX 65536               /* spawn records kept for tasks alive */

struct fr_store;

struct fr_stats {
	uint64_t bytes;            /* memory held: chunks mapped + spawn records */
	uint64_t records;          /* records in the window now */
	uint64_t added, evicted;   /* since the start */
	uint64_t oldest_ts, newest_ts;   /* of the records held (0: none) */
	uint64_t spawns_kept, spawns_not_kept;
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
 * oldest first, removed until their total size is at most max_bytes; `keep` (a dump's base
 * name) is never removed. Returns the bytes removed; *nremoved the files. */
uint64_t fr_dir_enforce(const char *dir, uint64_t max_bytes, const char *keep, size_t *nremoved);
/* "<executable>-<pid>-<UTC time>-<trigger>": exe's last path component and the trigger's
 * spec, each reduced to [A-Za-z0-9._+-] (others: '_'); the time with milliseconds. */
void fr_dump_name(char *buf, size_t len, const char *exe, uint32_t pid,
		  const struct timespec *wall, const char *trigger);

#endif
