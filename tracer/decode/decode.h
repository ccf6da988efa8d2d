/* SPDX-License-Identifier: MIT */
/*
 * decode.h — the decode stage: ring records (bpf/events.h) → the events the analyzer takes,
 * alike in every capture mode (per-event USDT: capture/perevent.c; uprobe fallback:
 * capture/fallback.c; batched: capture/batchcap.c, whose batch records decode/batch.c turns
 * into the same per-event records).
 */
#ifndef TET_DECODE_H
#define TET_DECODE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"

/* A TET_EV_WAIT "kind" beyond the probes' codes: the decoder could not keep every wait record
 * of this poll (batched capture), so the task's wait list is partial. */
#define TET_WAIT_CUT 0xff

/* The smallest size of a record of this type (bpf/events.h), 0 for a type no capture writes:
 * the one size rule every consumer of records applies. */
static inline size_t tet_decode_min_size(uint32_t type)
{
	if (type < TET_EV_COUNT && type != TET_EV_SPAWN && type != TET_EV_META)
		return sizeof(struct tet_event_rec); /* most records: one look */
	switch (type) {
	case TET_EV_SPAWN: return sizeof(struct tet_spawn_rec);
	case TET_EV_META: return sizeof(struct tet_meta_rec);
	case TET_REC_OFFCPU: return sizeof(struct tet_offcpu_rec);
	case TET_REC_SAMPLE: return sizeof(struct tet_sample_rec);
	case TET_REC_TSAMPLE: return sizeof(struct tet_tsample_rec);
	case TET_REC_TOFFCPU: return sizeof(struct tet_toffcpu_rec);
	case TET_REC_EXIT: return sizeof(struct tet_exit_rec);
	case TET_REC_URING_RING: case TET_REC_URING_SUBMIT: case TET_REC_URING_DONE:
		return sizeof(struct tet_uring_rec);
	case TET_REC_URING_PUSH: return sizeof(struct tet_uring_push_rec);
	case TET_REC_BATCH: return sizeof(struct tet_batch_rec);
	case TET_REC_RATE: return sizeof(struct tet_rate_rec);
	case TET_REC_GAP: return sizeof(struct tet_gap_rec);
	default: return 0;
	}
}
_Static_assert(TET_EV_COUNT <= TET_REC_BATCH, "record types (64 and up) follow the event types");

/* A record is whole: a known type, at least its size. */
static inline bool tet_decode_valid(const void *data, size_t size)
{
	const struct tet_hdr *h = data;
	size_t min;

	if (size < sizeof(*h))
		return false;
	min = tet_decode_min_size(h->type);
	return min && size >= min;
}

/* The capture's end (cutoff_ns, CLOCK_MONOTONIC; 0 = still running): a record stamped later
 * is not analyzed (true: drop it) and, if it is an event, counts in late[type] (NULL: not
 * counted). A process's exit record is kept whenever it comes. */
bool tet_decode_late(uint64_t cutoff_ns, const void *data, size_t size,
		     uint64_t late[TET_EV_COUNT]);

/* A spawn whose strings BPF could not read (a page the process never touched, or a dialect
 * probe's string): r itself when complete, else copy, with the strings read from the process
 * (process_vm_readv), which is still there. */
const struct tet_spawn_rec *tet_decode_spawn(const struct tet_spawn_rec *r,
					     struct tet_spawn_rec *copy);

#endif
