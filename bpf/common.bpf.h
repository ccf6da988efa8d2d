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

/* The capture's end (CLOCK_MONOTONIC ns), set by user space (.bss, mmapped) before it detaches
 * the probes one by one: from then on nothing is recorded nor counted, so the ring does not
 * fill with events after the end while the detach takes its time (~0.1 s per probe). 0: running. */
__u64 stop_ns = 0;

static __always_inline bool stopped(void)
{
	__u64 stop = *(volatile __u64 *)&stop_ns;

	return stop && bpf_ktime_get_ns() > stop;
}

/* Returns the tgid when this hit is for us, else 0. */
static __always_inline __u32 filter_pid(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (target_tgid && tgid != target_tgid)
		return 0;
	return tgid;
}

/* … and the capture has not ended. */
static __always_inline __u32 filter(void)
{
	return stopped() ? 0 : filter_pid();
}

/* Tasks an event of which was lost (the ring was full): user space leaves out the findings such
 * a loss could explain — a lost wake makes a false stall, a lost poll end a false never_yields.
 * Key: the process and the task id (per-event capture) or header pointer (uprobe fallback);
 * value: the types of the events lost (bit 1 << enum tet_event). A full map counts in
 * lost_untracked (user space then judges by time instead). */
struct lost_key {
	__u32 tgid;
	__u32 pad;
	__u64 task;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct lost_key);
	__type(value, __u64);
} lost_tasks SEC(".maps");

static __always_inline void note_lost(struct tet_counters *c, __u32 tgid, __u32 type, __u64 task)
{
	struct lost_key k = { .tgid = tgid, .pad = 0, .task = task };
	__u64 bit = 1ull << (type & 63), *n;

	if (!task)
		return;
	n = bpf_map_lookup_elem(&lost_tasks, &k);
	if (!n && !bpf_map_update_elem(&lost_tasks, &k, &bit, BPF_NOEXIST))
		return;
	if (!n) /* inserted by another CPU meanwhile, or the map is full */
		n = bpf_map_lookup_elem(&lost_tasks, &k);
	if (n)
		__sync_fetch_and_or(n, bit);
	else if (c)
		__sync_fetch_and_add(&c->lost_untracked, 1);
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
