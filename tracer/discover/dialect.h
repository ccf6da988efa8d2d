/* SPDX-License-Identifier: MIT */
/*
 * dialect.h — the tokio USDT dialects `check` recognises and `trace` attaches to, and how each
 * one's probes map onto the analyzer's events (bpf/events.h):
 *   tokio-ebpf-trace     this project's probes (bpf/probes.def, probes-patch/PROBES.md)
 *   tokio-upstream-usdt  Tokio's upstream USDT proposal (tokio-rs/tokio#7717)
 *   oxide-tokio-dtrace   oxide's tokio-dtrace runtime hooks
 * (docs/dialects.md: arguments, sources, what each cannot give). The other dialects' probes are
 * traced by one generic BPF program (bpf/tokio_usdt.bpf.c tet_dialect) told by the attach
 * cookie which argument is which (tet_dprobe_cookie).
 */
#ifndef TET_DIALECT_H
#define TET_DIALECT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"

/* Argument numbers of a dialect probe (0-11), or: */
#define TET_ARG_NONE  0xf   /* absent: 0 */
#define TET_ARG_CONST 0xe   /* the record's `a` is the entry's a_const */

struct tet_dprobe {
	const char *name;
	int ev;                 /* enum tet_event it becomes; -1: known, not traced */
	bool required;          /* a full build of the dialect has it */
	/* where the record's task_id, header_ptr, a, b come from; for TET_EV_SPAWN: task id,
	 * file (a NUL-terminated string), line, col */
	uint8_t task, hdr, a, b;
	uint32_t a_const;
};

struct tet_dialect {
	const char *id, *desc;
	const struct tet_dprobe *probes;  /* ends with a NULL name */
	bool native;                      /* this project's: one BPF program per probe */
	const char *poll_begin, *poll_end;
	const char *lacks;                /* what reports cannot give with it ("" for none) */
};

extern const struct tet_dialect tet_dialects[];
extern const size_t tet_ndialects;

/* The dialect of a set of provider "tokio" probe names: the one with the most known names
 * (ties: the first in tet_dialects), NULL when no name is known. `hits`: that count. */
const struct tet_dialect *tet_dialect_pick(const char *const *names, size_t n, int *hits);
const struct tet_dprobe *tet_dialect_probe(const struct tet_dialect *d, const char *name);
/* The BPF cookie of a non-native probe: ev | task << 8 | hdr << 12 | a << 16 | b << 20 |
 * a_const << 32 (bpf/tokio_usdt.bpf.c tet_dialect decodes it). */
uint64_t tet_dprobe_cookie(const struct tet_dprobe *p);

#endif
