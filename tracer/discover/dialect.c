// SPDX-License-Identifier: MIT
/*
 * dialect.c — the tokio USDT dialects and their mapping onto events (dialect.h).
 */
#include <string.h>

#include "dialect.h"

#define N TET_ARG_NONE
#define K TET_ARG_CONST
#define NOT_A_WORKER 0xffffffffu   /* task_poll_begin.worker -1 */
#define UNKNOWN_CODE 255u          /* poll result / terminate reason the dialect does not say */

static const struct tet_dprobe native[] = {
#define TET_PROBE(name, e, argc, class, req) { #name, TET_EV_##e, req, N, N, N, N, 0 },
#include "probes.def"
#define TET_SITE(name, argc, sites) { #name, -1, false, N, N, N, N, 0 },
#include "probes.def"
	{ NULL, -1, false, N, N, N, N, 0 },
};

/* tokio-rs/tokio pull request #7717 ("feat: USDT probes for tokio task events", head 7075c2f2;
 * docs/dialects.md): task ids only, no header address, no poll result, no worker index. The
 * spawn location comes in task-details (C strings), after task-start (kind, sizes). Earlier
 * heads spelled the waker probes task-waker-*, and had no terminate reason (the argument is
 * then absent: 0, completed); the first had task-spawn / task-block_on. */
static const struct tet_dprobe upstream[] = {
	{ "task-start", -1, true, N, N, N, N, 0 },
	{ "task-details", TET_EV_SPAWN, true, 0, 2, 3, 4, 0 },
	{ "task-poll-start", TET_EV_POLL_BEGIN, true, 0, N, K, N, NOT_A_WORKER },
	{ "task-poll-end", TET_EV_POLL_END, true, 0, N, K, N, UNKNOWN_CODE },
	{ "task-terminate", TET_EV_TERMINATE, true, 0, N, 1, N, 0 },
	{ "waker-clone", TET_EV_WAKER_CLONE, true, 0, N, N, N, 0 },
	{ "waker-drop", TET_EV_WAKER_DROP, true, 0, N, N, N, 0 },
	{ "waker-wake", TET_EV_WAKE, true, 0, N, K, N, 0 },
	{ "trace-root", -1, false, N, N, N, N, 0 },
	{ "task-waker-clone", TET_EV_WAKER_CLONE, false, 0, N, N, N, 0 },
	{ "task-waker-drop", TET_EV_WAKER_DROP, false, 0, N, N, N, 0 },
	{ "task-waker-wake", TET_EV_WAKE, false, 0, N, K, N, 0 },
	{ "task-spawn", -1, false, N, N, N, N, 0 },
	{ "task-block_on", -1, false, N, N, N, N, 0 },
	{ NULL, -1, false, N, N, N, N, 0 },
};

/* oxidecomputer/tokio-dtrace src/lib.rs (usdt 0.6 on Linux; docs/dialects.md): probes fired from
 * Tokio's unstable runtime hooks, the task id and spawn location (C string) on every task
 * probe; task-terminate comes inside the last poll; no wakes, no worker index. */
static const struct tet_dprobe oxide[] = {
	{ "task-spawn", TET_EV_SPAWN, true, 0, 1, 2, 3, 0 },
	{ "task-poll-start", TET_EV_POLL_BEGIN, true, 0, N, K, N, NOT_A_WORKER },
	{ "task-poll-end", TET_EV_POLL_END, true, 0, N, K, N, UNKNOWN_CODE },
	{ "task-terminate", TET_EV_TERMINATE, true, 0, N, K, N, UNKNOWN_CODE },
	{ "worker-thread-start", -1, true, N, N, N, N, 0 },
	{ "worker-thread-stop", -1, true, N, N, N, N, 0 },
	{ "worker-thread-park", TET_EV_PARK, true, N, N, K, N, NOT_A_WORKER },
	{ "worker-thread-unpark", TET_EV_UNPARK, true, N, N, K, N, NOT_A_WORKER },
	{ NULL, -1, false, N, N, N, N, 0 },
};

const struct tet_dialect tet_dialects[] = {
	{ "tokio-ebpf-trace", "this project's probes (probes-patch/PROBES.md)", native, true,
	  "task_poll_begin", "task_poll_end", "" },
	{ "tokio-upstream-usdt", "Tokio's upstream USDT proposal (tokio-rs/tokio#7717)", upstream,
	  false, "task-poll-start", "task-poll-end",
	  "no poll results, yields, wait reasons, type names, worker indexes, park/unpark or "
	  "batched capture" },
	{ "oxide-tokio-dtrace", "oxide's tokio-dtrace runtime hooks", oxide, false,
	  "task-poll-start", "task-poll-end",
	  "no wakes (hence no scheduling delay, stalled, lost_waker or self_wake), no poll "
	  "results, yields, terminate reasons, wait reasons, names, sizes, worker indexes or "
	  "batched capture" },
};
const size_t tet_ndialects = sizeof(tet_dialects) / sizeof(tet_dialects[0]);

const struct tet_dprobe *tet_dialect_probe(const struct tet_dialect *d, const char *name)
{
	for (const struct tet_dprobe *p = d->probes; p->name; p++)
		if (!strcmp(p->name, name))
			return p;
	return NULL;
}

const struct tet_dialect *tet_dialect_pick(const char *const *names, size_t n, int *hits)
{
	const struct tet_dialect *best = NULL;
	int most = 0;

	for (size_t d = 0; d < tet_ndialects; d++) {
		int h = 0;

		for (size_t i = 0; i < n; i++)
			h += tet_dialect_probe(&tet_dialects[d], names[i]) != NULL;
		if (h > most) {
			most = h;
			best = &tet_dialects[d];
		}
	}
	if (hits)
		*hits = most;
	return best;
}

uint64_t tet_dprobe_cookie(const struct tet_dprobe *p)
{
	return (uint64_t)(p->ev & 0xff) | (uint64_t)(p->task & 0xf) << 8 |
	       (uint64_t)(p->hdr & 0xf) << 12 | (uint64_t)(p->a & 0xf) << 16 |
	       (uint64_t)(p->b & 0xf) << 20 | (uint64_t)p->a_const << 32;
}
