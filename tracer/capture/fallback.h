/* SPDX-License-Identifier: MIT */
/*
 * fallback.h — the uprobe fallback session: bpf/tokio_uprobe.bpf.c attached to the Tokio task
 * functions tracer/discover/symbols.c found in a stock binary. A backend of capture.h
 * (capture_ops.h), like the USDT ones; the records are the same (bpf/events.h).
 */
#ifndef TET_FALLBACK_H
#define TET_FALLBACK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "events.h"
#include "capture_ops.h"
#include "ksched.h"
#include "kuring.h"
#include "symbols.h"

typedef int (*tet_fb_event_fn)(void *ctx, void *data, size_t size);

struct tet_fb_opts {
	pid_t pid;               /* > 0: only this process; 0: every process running the file */
	unsigned probes;         /* bits of enum tet_event to attach (limited to what exists) */
	size_t ringbuf_bytes;
	struct tet_sched_opts sched;
	bool no_uring;
	tet_fb_event_fn on_event;
	void *ctx;
};

/* How the fallback attached (for the report and the bench). */
struct tet_fb_info {
	bool multi;              /* one BPF_TRACE_UPROBE_MULTI link per program (Linux 6.6) */
	const char *why_single;  /* when not multi: why ("kernel without uprobe_multi", …) */
	size_t uprobes;          /* functions probed (a uretprobe counts once more) */
	size_t links;            /* kernel links made */
	uint64_t attach_ns, detach_ns;
	/* measured at start: extra ns per call of a probed function (0 = not measured) */
	double uprobe_ns;        /* entry uprobe */
	double uretprobe_ns;     /* entry uprobe + uretprobe (what a raw::poll pays) */
};

struct tet_fb;

int tet_fb_open(struct tet_fb **out, const struct tet_fb_opts *o, const char *attach_path,
		const struct tsym_table *syms, char *err, size_t len);
unsigned tet_fb_probes(const struct tet_fb *s);

/* TET_NO_UPROBE_MULTI=1 in the environment forces one uprobe per function (tests, bench). */
extern const struct tet_capture_ops tet_fb_ops;

#endif
