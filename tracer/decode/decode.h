/* SPDX-License-Identifier: MIT */
/*
 * decode.h — the decode stage: ring records (bpf/events.h) → the events the analyzer takes,
 * alike in every capture mode (per-event USDT: capture/attach.c; uprobe fallback:
 * capture/fallback.c; batched: capture/batchcap.c, whose batch records decode/batch.c turns
 * into the same per-event records).
 */
#ifndef TET_DECODE_H
#define TET_DECODE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"

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
