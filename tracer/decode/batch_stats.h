/* SPDX-License-Identifier: MIT */
/*
 * batch_stats.h — the figures of batched capture's decode stage (batch.h), as data alone: the
 * reports read them without seeing the decoder.
 */
#ifndef TET_BATCH_STATS_H
#define TET_BATCH_STATS_H
#include <stdint.h>

#include "events.h"

struct tb_stats {
	uint64_t batches;           /* ring records decoded */
	uint64_t records;           /* records decoded (flushed or swept) */
	uint64_t events;            /* events delivered to the analyzer */
	uint64_t by_type[TET_EV_COUNT];
	uint64_t recorded[TET_EV_COUNT];  /* the threads' own counts of their windows */
	uint64_t lost_batches;      /* sequence gaps: batches that never arrived */
	uint64_t bad_batches;       /* refused: bad magic, version, sizes */
	uint64_t torn_batches;      /* flushed shorter than a sweep had read them (PROBES.md forbids) */
	uint64_t implausible;       /* head counts clamped (TET_BATCH_COUNT_MAX), seq gaps refused */
	uint64_t bad_records;       /* undecodable records (the rest of their batch skipped) */
	uint64_t before_start;      /* records stamped before the capture (an earlier capture's) */
	uint64_t after_cutoff;      /* records stamped after the capture's end */
	uint64_t late;              /* delivered after later events (out of order) */
	uint64_t forced;            /* delivered before their threads were complete (hold limit) */
	uint64_t sweeps, sweep_records, sweep_failures;
	uint64_t threads, threads_exited;
	uint64_t threads_refused;   /* batches of new threads past the 16384 followed (not decoded) */
	uint64_t threads_vanished;  /* ended without their final batch: their last records lost */
	uint64_t threads_revived;   /* judged vanished, then their final batch came (not counted above) */
	uint64_t unflushed[TET_EV_COUNT]; /* events of those threads' last windows (counts read) */
	uint64_t strings, strings_read, string_misses;
	uint64_t strings_refused;   /* new strings past the bound (65536): their spawns lack them */
	uint64_t waits_dropped;     /* wait records beyond what a thread holds for its open polls */
	uint64_t locks_dropped;     /* lock records beyond it (lock holders may be wrong) */
	uint64_t acquires_folded;   /* lock acquires a release in the same poll cancelled */
	uint64_t releases_folded;   /* … releases (whole, or part of an acquire's permits) */
	uint64_t gaps;              /* TET_REC_GAP records sent: lost batches, vanished threads */
	uint64_t controls_merged;   /* rate and gap records merged past the 4096 held */
	uint64_t open_polls_seen;   /* polls seen in progress (BEGIN sent before the poll ended) */
	uint64_t rate;              /* sampling rate of the latest batch (1 = every task) */
	int64_t clock_error_ns;     /* largest |converted TSC - process CLOCK_MONOTONIC| at flushes */
	uint8_t clock;              /* TET_BATCH_CLOCK_* of the latest batch, 0 none yet */
	uint64_t pending, pending_max;
};

#endif
