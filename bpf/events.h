/* SPDX-License-Identifier: MIT */
/*
 * events.h — every type that crosses the BPF ↔ user-space boundary, included by both sides.
 * Fixed-width types only (__u8/__u32/__u64); no pointers, no enums in structs, no padding
 * holes (each struct is laid out so the compiler adds none, checked by _Static_assert on the
 * user side).
 *
 * One ring-buffer record per probe hit. All records start with struct tet_hdr, whose `type`
 * (enum tet_event) says which layout follows. Probe codes (kind, result, reason) are passed
 * through unchanged; their meaning is in probes-patch/PROBES.md.
 */
#ifndef TET_EVENTS_H
#define TET_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Event types, in PROBES.md order. Values index counters and are part of no stable format. */
enum tet_event {
	TET_EV_SPAWN = 0,
	TET_EV_POLL_BEGIN,
	TET_EV_POLL_END,
	TET_EV_YIELD,
	TET_EV_WAKE,
	TET_EV_WAKER_CLONE,
	TET_EV_WAKER_DROP,
	TET_EV_TERMINATE,
	TET_EV_PARK,
	TET_EV_UNPARK,
	TET_EV_COUNT,
};

/* Bounds of the strings copied at spawn. A longer string is truncated to this many bytes and
 * the record says how long it really was. */
#define TET_FILE_MAX 256
#define TET_TYPE_MAX 256

struct tet_hdr {
	__u64 ts;        /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) */
	__u32 type;      /* enum tet_event */
	__u32 pid;       /* tgid of the traced process */
	__u32 tid;       /* thread that hit the probe */
	__u32 cpu;
};

/* Every probe except task_spawn. Field use by type:
 *   POLL_BEGIN   task_id header_ptr  a = worker (s32 sign-extended; -1 = not a worker)
 *   POLL_END     task_id header_ptr  a = poll result code
 *   YIELD        task_id             a = yield reason code
 *   WAKE         task_id header_ptr  a = by_ref
 *   WAKER_CLONE  task_id header_ptr
 *   WAKER_DROP   task_id header_ptr
 *   TERMINATE    task_id header_ptr  a = terminate reason code
 *   PARK/UNPARK                      a = worker (s32 sign-extended), b = timeout_ns
 * In the uprobe fallback (bpf/tokio_uprobe.bpf.c) task_id is 0 and header_ptr identifies the
 * task; POLL_BEGIN's b is the index of the polled future's type (the raw::poll instance's
 * attach cookie), a is -1 (user space numbers the polling threads). */
struct tet_event_rec {
	struct tet_hdr h;
	__u64 task_id;
	__u64 header_ptr;
	__u64 a;
	__u64 b;
	__u64 cpu_wait;  /* POLL_BEGIN/POLL_END: the thread's run-queue wait so far
			  * (task_struct.sched_info.run_delay, ns); 0 = unknown */
};

/* task_spawn: the strings follow in `data`: file bytes [0, file_copied), type-name bytes
 * [TET_FILE_MAX, TET_FILE_MAX + type_copied). Bytes are as read from the traced process:
 * untrusted, not NUL-terminated, maybe not UTF-8. */
struct tet_spawn_rec {
	struct tet_hdr h;
	__u64 task_id;
	__u64 header_ptr;
	__u64 file_ptr;     /* where the strings are in the process (for a retry from user space) */
	__u64 type_ptr;
	__u64 file_len;     /* length the probe reported */
	__u64 type_len;     /* length the probe reported */
	__u32 line;
	__u32 col;
	__u32 kind;         /* spawn kind code */
	__u16 file_copied;  /* bytes in data (0 when the read failed) */
	__u16 type_copied;
	char data[TET_FILE_MAX + TET_TYPE_MAX];
};

/* Per-CPU counters (PERCPU_ARRAY, one entry, summed over CPUs by user space). */
struct tet_counters {
	__u64 seen[TET_EV_COUNT];   /* probe hits that passed the PID filter */
	__u64 drops[TET_EV_COUNT];  /* ring-buffer reservations that failed: events lost */
	__u64 read_errors;          /* spawn strings that could not be read */
	__u64 arg_errors;           /* USDT arguments libbpf could not fetch */
};

#endif
