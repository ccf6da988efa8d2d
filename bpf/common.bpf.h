/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * common.bpf.h — what both BPF objects (tokio_usdt.bpf.c, tokio_uprobe.bpf.c) define alike:
 * the PID filter, the ring buffer and the per-CPU counters, and the reservation of a record
 * (counted in `seen`, a failed one in `drops`) with its header. Include after vmlinux.h,
 * bpf_helpers.h and events.h. Each object gets its own copies of the maps and the filter.
 */
#ifndef TET_COMMON_BPF_H
#define TET_COMMON_BPF_H

/* Set by user space between open and load. 0 = every process (attach by binary path). */
const volatile __u32 target_tgid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by user space before load */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tet_counters);
} counters SEC(".maps");

static __always_inline struct tet_counters *counters_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&counters, &zero);
}

/* Returns the tgid when this hit is for us, else 0. */
static __always_inline __u32 filter(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (target_tgid && tgid != target_tgid)
		return 0;
	return tgid;
}

/* Counts a hit of `type` in `seen` and reserves a record of `size` bytes (a constant) in the
 * ring buffer; a failed reservation counts in `drops` and returns NULL. */
static __always_inline void *rec_reserve(struct tet_counters *c, __u32 type, __u64 size)
{
	void *r;

	__sync_fetch_and_add(&c->seen[type], 1);
	r = bpf_ringbuf_reserve(&events, size, 0);
	if (!r)
		__sync_fetch_and_add(&c->drops[type], 1);
	return r;
}

/* The record header. Called after the reservation, so that ring order and timestamps agree. */
static __always_inline void hdr_fill(struct tet_hdr *h, __u32 type, __u32 tgid)
{
	h->ts = bpf_ktime_get_ns();
	h->type = type;
	h->pid = tgid;
	h->tid = (__u32)bpf_get_current_pid_tgid();
	h->cpu = bpf_get_smp_processor_id();
}

#endif
