// SPDX-License-Identifier: MIT
/*
 * fuzz_analyzer — libFuzzer target for the analyzer (tracer/analyze/: analyzer.c, starve.c,
 * locks.c, uring.c) fed records as per-event capture and the uprobe fallback hand them over:
 * every record type, whatever the traced process (task ids, header pointers, worker indexes,
 * codes, waits, locks, spawn strings and their lengths, io_uring requests) and the kernel side
 * (off-CPU periods, samples, stack ids) put in them — reused ids, impossible orders, extreme
 * values.
 *
 * Input: a byte of options (bit 0 sched, 1 profile, 2 key by header — the fallback —, 3 no
 * wake events, 4 a small live-task bound), then records: a byte that picks the type (modulo the
 * record types below), a byte for the thread (1-4), a u32 time step, then the record's bytes
 * after its header (zero-filled if the input ends); every 16th record an an_tick. At the end
 * an_finish, then the findings and tasks are walked as the reports walk them.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"

#define PID 4242

static const uint32_t types[] = {
	TET_EV_SPAWN, TET_EV_POLL_BEGIN, TET_EV_POLL_END, TET_EV_YIELD, TET_EV_WAKE,
	TET_EV_WAKER_CLONE, TET_EV_WAKER_DROP, TET_EV_TERMINATE, TET_EV_PARK, TET_EV_UNPARK,
	TET_EV_WAIT, TET_EV_META, TET_EV_LOCK, TET_REC_OFFCPU, TET_REC_SAMPLE,
	TET_REC_URING_RING, TET_REC_URING_SUBMIT, TET_REC_URING_DONE, TET_REC_URING_PUSH,
};

static size_t rec_size(uint32_t type)
{
	switch (type) {
	case TET_EV_SPAWN: return sizeof(struct tet_spawn_rec);
	case TET_EV_META: return sizeof(struct tet_meta_rec);
	case TET_REC_OFFCPU: return sizeof(struct tet_offcpu_rec);
	case TET_REC_SAMPLE: return sizeof(struct tet_sample_rec);
	case TET_REC_URING_RING: case TET_REC_URING_SUBMIT: case TET_REC_URING_DONE:
		return sizeof(struct tet_uring_rec);
	case TET_REC_URING_PUSH: return sizeof(struct tet_uring_push_rec);
	default: return sizeof(struct tet_event_rec);
	}
}

static void count_task(const struct an_task_summary *s, void *ctx)
{
	size_t *n = ctx;

	*n += s->polls + s->name_len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static union {
		struct tet_hdr h;
		unsigned char bytes[sizeof(struct tet_spawn_rec) + sizeof(struct tet_meta_rec) + 4096];
	} rec;
	const struct an_finding *f;
	struct an_opts o;
	struct analyzer *a;
	uint64_t now = 1000000000ull;
	size_t i = 1, nrec = 0, walked = 0;
	uint8_t opt;

	if (!size)
		return 0;
	opt = data[0];
	an_opts_default(&o);
	o.sched = opt & 1;
	o.profile = (opt >> 1) & 1;
	o.key_by_header = (opt >> 2) & 1;
	o.no_wakes = (opt >> 3) & 1;
	if (opt & 16)
		o.max_live_tasks = 8;
	a = an_new(&o);
	if (!a)
		return 0;
	while (i + 6 <= size) {
		uint32_t type = types[data[i] % (sizeof(types) / sizeof(types[0]))], step;
		uint32_t tid = 1 + data[i + 1] % 4;
		size_t n = rec_size(type), body = n - sizeof(struct tet_hdr), take;

		memcpy(&step, data + i + 2, 4);
		i += 6;
		now += step;
		memset(rec.bytes, 0, n);
		take = size - i < body ? size - i : body;
		memcpy(rec.bytes + sizeof(struct tet_hdr), data + i, take);
		i += take;
		rec.h = (struct tet_hdr){ .ts = now, .type = type, .pid = PID, .tid = tid };
		an_event(a, rec.bytes, n);
		if (++nrec % 16 == 0)
			an_tick(a, now);
	}
	an_finish(a, now + 2000000000ull);
	for (size_t k = 0, nf = an_findings(a, &f); k < nf; k++)
		walked += f[k].nmembers + (f[k].site != NULL);
	an_for_each_task(a, count_task, &walked);
	an_free(a);
	return walked == SIZE_MAX; /* keeps the walk */
}
