/* SPDX-License-Identifier: MIT */
/* bpfutil.h — pieces the USDT session (attach.c) and the uprobe fallback (fallback.c) share. */
#ifndef TET_BPFUTIL_H
#define TET_BPFUTIL_H
#include <stdbool.h>
#include <stdint.h>

#include "events.h"

struct bpf_program;

/* The kernel's id of a loaded program; false if it is not loaded or the kernel won't say. */
bool tet_prog_id(const struct bpf_program *p, uint32_t *id);
/* Reads the per-CPU counters map (map_fd; percpu has room for ncpus entries) and sums it
 * into *sum. Returns 0 or -errno of the lookup (sum then zeroed). */
int tet_counters_sum(int map_fd, struct tet_counters *percpu, int ncpus, struct tet_counters *sum);

#endif
