/* SPDX-License-Identifier: MIT */
/*
 * events.h — every type that crosses the BPF ↔ user-space boundary, included by both sides.
 * Fixed-width types only (__u8/__u32/__u64); no pointers, no enums in structs, no padding
 * holes (each struct is laid out so the compiler adds none; the _Static_asserts at the end pin
 * every field's offset and every struct's size, in the BPF and the user-space compiles alike).
 *
 * Per-event capture: one ring-buffer record per probe hit. All records start with struct
 * tet_hdr, whose `type` (enum tet_event, or TET_REC_BATCH) says which layout follows. Probe
 * codes (kind, result, reason) are passed through unchanged; their meaning is in
 * probes-patch/PROBES.md.
 *
 * Batched capture: one ring-buffer record per tokio:event_batch hit, holding the flushing
 * thread's buffer head (struct tet_batch_head, written by the process) and its records, as
 * PROBES.md "Batch format" describes; tracer/decode/batch.c turns them into the events above.
 */
#ifndef TET_EVENTS_H
#define TET_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Event types, in PROBES.md order (bpf/probes.def). Values index counters and are part of no
 * stable format. */
enum tet_event {
#define TET_PROBE(name, ev, argc, class, required) TET_EV_##ev,
#include "probes.def"
	TET_EV_COUNT,
};
/* The codes probe arguments carry (probes.def TET_CODE): TET_POLL_PENDING …, and per set its
 * count (TET_POLL_CODES) and index (TET_SET_POLL, for the labels in discover/vocab.c). */
enum {
#define TET_CODE(set, name, value, label) TET_##set##_##name = value,
#define TET_CODES(set, count, what) TET_##set##_CODES = count,
#include "probes.def"
};
enum tet_code_set {
#define TET_CODES(set, count, what) TET_SET_##set,
#include "probes.def"
	TET_CODE_SETS,
};
/* The probes a batch head counts (its counts[]: task_spawn … worker_unpark). */
#define TET_BATCH_COUNTS 10

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
 *   POLL_END     task_id header_ptr  a = poll result code, b = the poll's yields when
 *                                    they are not separate YIELD records (batched capture:
 *                                    yield_now count bits 0-15, coop budget bits 16-31)
 *   YIELD        task_id             a = yield reason code
 *   WAKE         task_id header_ptr  a = by_ref
 *   WAKER_CLONE  task_id header_ptr
 *   WAKER_DROP   task_id header_ptr
 *   TERMINATE    task_id header_ptr  a = terminate reason code
 *   PARK/UNPARK                      a = worker (s32 sign-extended), b = timeout_ns
 *   WAIT         task_id             header_ptr = object, a = wait kind, b = arg (task_wait)
 *   LOCK         task_id             header_ptr = object, a = lock op, b = permits (task_lock)
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

/* task_meta: the name's bytes follow in `name` [0, name_copied) (untrusted, as task_spawn's
 * strings). */
#define TET_NAME_MAX 128
struct tet_meta_rec {
	struct tet_hdr h;
	__u64 task_id;
	__u64 size;         /* the future's size in bytes */
	__u64 name_len;     /* length the probe reported (0: unnamed) */
	__u32 flags;        /* meta flags (PROBES.md) */
	__u16 name_copied;  /* bytes in name (0 when the read failed) */
	__u16 pad;
	char name[TET_NAME_MAX];
};

/* ---- batched capture (tokio:event_batch) ---- */

/* Ring record type of a batch (no event type: tracer/decode/batch.c expands it into events). */
#define TET_REC_BATCH 64

/* Layout of a thread's batch buffer head, as the patched Tokio writes it
 * (probes-patch/common/usdt.rs, struct Head; PROBES.md "Batch format"). The records follow
 * the head in the process's memory and in the ring record. */
#define TET_BATCH_MAGIC      0x31424b54u  /* "TKB1" */
#define TET_BATCH_VERSION    1
#define TET_BATCH_OPEN_MAX   8
#define TET_BATCH_DATA_MAX   (32u << 10)  /* the largest records area the BPF side copies */
/* Plausibility bounds on what a head says (the process writes it): a window's count of one probe
 * (a window spans ~4 ms of activity: 2^24 events is one every 0.25 ns), and a gap in a thread's
 * batch sequence numbers. Past them a figure is clamped or refused, and counted. */
#define TET_BATCH_COUNT_MAX  (1ull << 24)
#define TET_BATCH_SEQ_GAP_MAX (1ull << 20)
#define TET_BATCH_RATE_MAX   65535u        /* sample_rate: 16 semaphore bits */

struct tet_batch_open {     /* a poll in progress on the thread */
	__u64 task_id;
	__u64 begin;        /* batch clock */
	__u64 yields;       /* yield_now count (bits 0-15), coop-budget yields (16-31) */
};

struct tet_batch_head {
	__u32 magic;
	__u16 version;
	__u16 head_bytes;   /* sizeof(struct tet_batch_head) */
	__u32 data_cap;     /* capacity of the records area, bytes */
	__u32 tid;
	__u64 seq;          /* the records are batch `seq` of this thread (0, 1, 2, …) */
	__u32 len;          /* bytes of records */
	__u8 clock;         /* TET_BATCH_CLOCK_* */
	__u8 reason;        /* why it was flushed: TET_BATCH_REASON_* */
	__u8 depth;         /* entries of open[] in use */
	__u8 open_max;
	__u64 flush_clock;  /* flush time, batch clock */
	__u64 flush_ns;     /* flush time, CLOCK_MONOTONIC */
	__u64 window_clock; /* the previous flush: the records and counts are from after it */
	__u64 last_clock;   /* the thread's latest stamp */
	__u64 counts[TET_BATCH_COUNTS]; /* events of the window by probe (PROBES.md: which are exact) */
	__u64 rate;         /* sampling: one task in `rate` */
	struct tet_batch_open open[TET_BATCH_OPEN_MAX];
};

enum { TET_BATCH_CLOCK_TSC = 1, TET_BATCH_CLOCK_MONO = 2 };
enum {
	TET_BATCH_REASON_NEW, TET_BATCH_REASON_FULL, TET_BATCH_REASON_PARK, TET_BATCH_REASON_AGE,
	TET_BATCH_REASON_STALE, TET_BATCH_REASON_LEAVE, TET_BATCH_REASON_EXIT,
	TET_BATCH_REASONS,
};

/* Record kinds (bits 56-59 of a record's first word; bits 60-63 are its code, bits 0-55 the
 * task id or another payload) and their sizes in 8-byte words (STRING: 2 + payload bytes). */
enum {
	TET_BREC_POLL = 1,      /* 4 words: id; begin; end; worker (s32) | yields << 32 */
	TET_BREC_WAKE = 2,      /* 2 words: id (code bit 0 by_ref, bit 1 shared stamp); stamp */
	TET_BREC_CLONE = 3,     /* 1 word: id (no stamp) */
	TET_BREC_DROP = 4,      /* 1 word: id (no stamp) */
	TET_BREC_SPAWN = 5,     /* 7 words: id (code kind); header; stamp; file; file_len | line << 32;
				 * type; type_len | col << 32 */
	TET_BREC_TERMINATE = 6, /* 3 words: id (code reason); header; stamp */
	TET_BREC_PARK = 7,      /* 3 words: worker (u32); stamp; timeout_ns */
	TET_BREC_UNPARK = 8,    /* 3 words: worker (u32); stamp; timeout_ns */
	TET_BREC_STRING = 9,    /* 2 + ceil(n / 8) words: n (≤ 256); address; n bytes */
	TET_BREC_WAIT = 10,     /* 3 words: id (code wait kind); object; arg — inside the task's
				 * poll, before its poll record (no stamp) */
	TET_BREC_META = 11,     /* 3 + ceil(n / 8) words: id (code flags); size; n (≤ 128); n bytes */
	TET_BREC_LOCK = 12,     /* 3 words: id (code lock op); object; permits — as TET_BREC_WAIT */
};

/* Why a poll was slow (bpf/sched.bpf.h). An off-CPU period of a target thread that began
 * inside a poll: switched out at `since`, back on a CPU at h.ts. Preempted (flags
 * TET_OFFCPU_PREEMPTED): runnable all along. Otherwise blocked: asleep until `woken` (0 = the
 * wakeup was not seen: asleep until h.ts), then runnable until h.ts; `syscall` is the system call
 * it slept in (-1 = none known), ustack/kstack its stacks at the switch (ids in the stack map,
 * negative = not captured). */
#define TET_REC_OFFCPU 65
#define TET_OFFCPU_PREEMPTED 1u
/* With TET_OFFCPU_PREEMPTED: not a switch but time the hypervisor kept the thread's virtual CPU
 * from running (KVM's steal clock grew while the thread was on it): [since, h.ts] is where the
 * stolen time is placed (it ends there), syscall -1, no stacks. A reader that does not know the
 * flag counts it as preempted, which it is. */
#define TET_OFFCPU_STOLEN 2u
struct tet_offcpu_rec {
	struct tet_hdr h;   /* type TET_REC_OFFCPU; tid: the thread; ts: when it ran again */
	__u64 since;
	__u64 woken;
	__s64 syscall;
	__s32 ustack, kstack;
	__u32 flags;
	__u32 pad;
};

/* A CPU sample (cpu-clock perf event) of a target thread at h.ts, with its stacks. */
#define TET_REC_SAMPLE 66
struct tet_sample_rec {
	struct tet_hdr h;
	__s32 ustack, kstack;
};

/* --mode sampling (no uprobe; bpf/sched.bpf.h with tls_slot set): a CPU sample of a target
 * thread, like TET_REC_SAMPLE, with the value of Tokio's thread-local current task id read
 * at that instant (`task`: 0 = None; TET_TS_NOREAD: the slot could not be read). A new type:
 * TET_REC_SAMPLE's layout is held by recorded fixtures. */
#define TET_REC_TSAMPLE 74
#define TET_TS_NOREAD 1u
/* TET_REC_TOFFCPU: the slot held a task id user space had said is a BlockingTask's (a worker
 * loop parking, a spawn_blocking closure): not an async poll's, so no stack scan and no stacks
 * were taken (polls 0, ustack and kstack -1) */
#define TET_TS_BLOCKING 2u
/* A build without frame pointers gives a user stack of its leaf only: the BPF side also scans
 * the thread's user stack from its stack pointer up (TET_SCAN_BYTES) for words inside the
 * address range of the raw::poll instances, and sends the first TET_SCAN_CANDS, innermost first
 * (0: none); user space keeps those that are return addresses (a call before them) inside an
 * instance, and the innermost of them names the poll's future type. */
#define TET_SCAN_CANDS 4
_Static_assert((TET_SCAN_CANDS & (TET_SCAN_CANDS - 1)) == 0 && TET_SCAN_CANDS > 0,
	       "TET_SCAN_CANDS: a power of two (sched.bpf.h scan_polls masks its index with it - 1)");
/* The BlockingTask ids user space tells the BPF side (sched.bpf.h blocking_ids, LRU). */
#define TET_BLOCKING_IDS 1024
#define TET_SCAN_WORDS 64      /* per read */
#define TET_SCAN_READS 16      /* 8 KiB */
struct tet_tsample_rec {
	struct tet_hdr h;
	__u64 task;
	__s32 ustack, kstack;
	__u32 flags;        /* TET_TS_* */
	__u32 nvcsw;        /* the thread's voluntary context switches (task_struct), low 32 bits:
			     * unchanged between two samples: it did not sleep between */
	__u64 polls[TET_SCAN_CANDS];
};
/* --mode sampling: a target thread that went to sleep (not preempted) while its task id slot
 * held a task: the TET_REC_OFFCPU fields (never TET_OFFCPU_PREEMPTED), then that task id
 * (user space tells a poll from a parked worker by the user stack). */
#define TET_REC_TOFFCPU 75
struct tet_toffcpu_rec {
	struct tet_offcpu_rec o;   /* o.h.type TET_REC_TOFFCPU */
	__u64 task;
	__u32 flags;               /* TET_TS_* */
	__u32 pad;
	__u64 polls[TET_SCAN_CANDS];  /* as TET_REC_TSAMPLE's, at the switch out */
};

/* The traced process ended (sched_process_exit of its last thread): how. `code` is a wait
 * status: the fatal signal in bits 0-6 (0: it exited), bit 7 a core dump, the exit status in
 * bits 8-15. */
#define TET_REC_EXIT 67
struct tet_exit_rec {
	struct tet_hdr h;   /* type TET_REC_EXIT; tid: the last thread to exit */
	__u32 code;
	__u32 group_exit;   /* 1: a group exit (exit_group, a fatal signal), code from it */
};

/* io_uring (bpf/uring.bpf.h): the target's rings, their requests and which poll filled them.
 * A ring is known by its kernel context address (identity only). The submission queue's tail
 * counts the SQEs user space has filled (u32, wrapping); the kernel consumes them in that order,
 * so an SQE's position — the count when it was filled — names it on both sides:
 *   TET_REC_URING_RING    a ring of a target process: created (fd ≥ 0), or first met at a
 *                         submission (fd -1); flags: its setup flags (IORING_SETUP_*)
 *   TET_REC_URING_SUBMIT  io_uring_submit_req: the SQE at `pos` became a request (opcode,
 *                         user_data, fd — with IOSQE_FIXED_FILE in flags an index)
 *   TET_REC_URING_DONE    io_uring_complete: a CQE was posted (user_data, res, CQE flags;
 *                         opcode 255 when the kernel posted it without a request)
 *   TET_REC_URING_PUSH    a poll of `task` filled SQ positions [from, to) of ring `ctx` (its
 *                         thread's ring: the one it created or last submitted to); h.ts is the
 *                         poll's end, or the start of a poll nested in it */
#define TET_REC_URING_RING   68
#define TET_REC_URING_SUBMIT 69
#define TET_REC_URING_DONE   70
#define TET_REC_URING_PUSH   71
#define TET_URING_NO_REQ     255
struct tet_uring_rec {
	struct tet_hdr h;
	__u64 ctx;
	__u64 user_data;
	__s32 fd;           /* SUBMIT: the SQE's fd field (OPENAT: its dirfd; with
			     * IOSQE_FIXED_FILE an index); RING: the ring's fd (-1: not known) */
	__s32 res;          /* DONE */
	__u32 pos;          /* SUBMIT */
	__u32 flags;        /* SUBMIT: request flags (low bits: IOSQE_*); DONE: CQE flags; RING */
	__u8 opcode;        /* SUBMIT, DONE */
	__u8 pad[7];
};
struct tet_uring_push_rec {
	struct tet_hdr h;
	__u64 ctx;
	__u64 task_id;      /* 0 in the uprobe fallback */
	__u64 header_ptr;
	__u32 from, to;
};

/* Records of the tracer itself, never of BPF: batched capture's decoder hands them to the
 * analyzer in time order with the events (tracer/decode/batch.c).
 *   TET_REC_RATE  from h.ts on, the process records only the tasks one in `rate` picks
 *                 (PROBES.md "Sampling": task_id × 0x9e3779b97f4a7c15 ≤ 2^64 / rate); `why`
 *                 TET_RATE_* says what moved it. A lowered rate is announced once the process
 *                 has surely taken it (the stricter one holds until h.ts).
 *   TET_REC_GAP   thread h.tid's batches from `from_ns` to h.ts never arrived (`batches` of
 *                 them: the ring was full): which tasks they held is unknown */
#define TET_REC_RATE 72
#define TET_REC_GAP  73
enum tet_rate_why {
	TET_RATE_START,     /* the capture's rate (--sample-rate, 1 adaptive) */
	TET_RATE_RING,      /* raised: the ring was filling faster than the tracer read it */
	TET_RATE_CPU,       /* raised: the tracer's CPU went over --max-overhead */
	TET_RATE_LOSS,      /* raised: batches were lost */
	TET_RATE_CALM,      /* lowered: the tracer kept up with room to spare */
	TET_RATE_WHYS,
};
struct tet_rate_rec {
	struct tet_hdr h;   /* type TET_REC_RATE; pid, tid, cpu 0 */
	__u32 rate;
	__u32 why;          /* enum tet_rate_why */
};
struct tet_gap_rec {
	struct tet_hdr h;   /* type TET_REC_GAP; tid: the thread */
	__u64 from_ns;
	__u64 batches;
};

/* Frames per stack in the stack map (frame pointers: physical frames; a Tokio worker's stack is
 * ~30 deep). Deeper stacks keep their innermost frames. */
#define TET_STACK_DEPTH 64

/* The ring record of one batch. */
struct tet_batch_rec {
	struct tet_hdr h;   /* type TET_REC_BATCH; ts = bpf_ktime_get_ns() at the flush */
	__u64 buf;          /* the thread's buffer (where a sweep reads it) */
	__u64 seq;          /* the probe's arguments */
	__u64 clock;
	__u64 mono_ns;
	__u32 len;          /* bytes of records the probe announced */
	__u32 copied;       /* bytes in data (head + records); 0 when the copy failed */
	__u8 data[];        /* struct tet_batch_head, then the records */
};

/* Per-CPU counters (PERCPU_ARRAY, one entry, summed over CPUs by user space). */
struct tet_counters {
	__u64 seen[TET_EV_COUNT];   /* probe hits that passed the PID filter */
	__u64 drops[TET_EV_COUNT];  /* ring-buffer reservations that failed: events lost */
	__u64 read_errors;          /* spawn strings that could not be read */
	__u64 arg_errors;           /* USDT arguments libbpf could not fetch */
	/* batched capture */
	__u64 batches;              /* event_batch hits that passed the PID filter */
	__u64 batch_drops;          /* batches the ring had no room for */
	__u64 batch_bad;            /* batches refused: length beyond TET_BATCH_DATA_MAX */
	__u64 batch_read_errors;    /* batches whose buffer could not be read */
	__u64 batch_lost[TET_EV_COUNT]; /* events in the batches lost above (their head counts) */
	/* why a poll was slow (bpf/sched.bpf.h) */
	__u64 offcpu;               /* off-CPU periods inside polls sent */
	__u64 offcpu_drops;         /* … the ring had no room for */
	__u64 samples;              /* CPU samples of target threads sent */
	__u64 sample_drops;         /* … the ring had no room for */
	__u64 stack_errors;         /* stacks not captured (stack map full or a walk that failed) */
	__u64 exit_drops;           /* process exits the ring had no room for */
	__u64 lost_untracked;       /* events lost whose task lost_tasks had no room for */
	/* io_uring (bpf/uring.bpf.h) */
	__u64 uring;                /* io_uring records sent (rings, submissions, completions,
				     * SQ ranges of polls) */
	__u64 uring_drops;          /* … the ring had no room for */
	__u64 uring_deep;           /* polls nested deeper than the SQ tracking follows */
};

/*
 * Layout checks, compiled on both sides: user space (gcc/clang, x86-64 or arm64) and BPF
 * (clang -target bpf, with vmlinux.h and no <stddef.h>: hence __builtin_offsetof). Every
 * field's offset and every struct's size is pinned, so both compilers must agree with each
 * other and with this list, and a struct with a hole cannot pass (each offset is the previous
 * field's end). A record or field added means a line added here. Values as printed by offsetof
 * and sizeof from a test program, and by `bpftool btf dump` of the BPF objects.
 */
#define TET_LAYOUT_SIZE(s, n) _Static_assert(sizeof(struct s) == (n), "sizeof(struct " #s ")")
#define TET_LAYOUT_AT(s, f, off) \
	_Static_assert(__builtin_offsetof(struct s, f) == (off), "offset of " #s "." #f)

TET_LAYOUT_SIZE(tet_hdr, 24);
TET_LAYOUT_SIZE(tet_tsample_rec, 80);
TET_LAYOUT_SIZE(tet_toffcpu_rec, 112);
TET_LAYOUT_AT(tet_hdr, ts, 0); TET_LAYOUT_AT(tet_hdr, type, 8); TET_LAYOUT_AT(tet_hdr, pid, 12);
TET_LAYOUT_AT(tet_hdr, tid, 16); TET_LAYOUT_AT(tet_hdr, cpu, 20);

TET_LAYOUT_SIZE(tet_event_rec, 64);
TET_LAYOUT_AT(tet_event_rec, h, 0); TET_LAYOUT_AT(tet_event_rec, task_id, 24);
TET_LAYOUT_AT(tet_event_rec, header_ptr, 32); TET_LAYOUT_AT(tet_event_rec, a, 40);
TET_LAYOUT_AT(tet_event_rec, b, 48); TET_LAYOUT_AT(tet_event_rec, cpu_wait, 56);

TET_LAYOUT_SIZE(tet_spawn_rec, 88 + TET_FILE_MAX + TET_TYPE_MAX);
TET_LAYOUT_AT(tet_spawn_rec, h, 0); TET_LAYOUT_AT(tet_spawn_rec, task_id, 24);
TET_LAYOUT_AT(tet_spawn_rec, header_ptr, 32); TET_LAYOUT_AT(tet_spawn_rec, file_ptr, 40);
TET_LAYOUT_AT(tet_spawn_rec, type_ptr, 48); TET_LAYOUT_AT(tet_spawn_rec, file_len, 56);
TET_LAYOUT_AT(tet_spawn_rec, type_len, 64); TET_LAYOUT_AT(tet_spawn_rec, line, 72);
TET_LAYOUT_AT(tet_spawn_rec, col, 76); TET_LAYOUT_AT(tet_spawn_rec, kind, 80);
TET_LAYOUT_AT(tet_spawn_rec, file_copied, 84); TET_LAYOUT_AT(tet_spawn_rec, type_copied, 86);
TET_LAYOUT_AT(tet_spawn_rec, data, 88);

TET_LAYOUT_SIZE(tet_meta_rec, 56 + TET_NAME_MAX);
TET_LAYOUT_AT(tet_meta_rec, h, 0); TET_LAYOUT_AT(tet_meta_rec, task_id, 24);
TET_LAYOUT_AT(tet_meta_rec, size, 32); TET_LAYOUT_AT(tet_meta_rec, name_len, 40);
TET_LAYOUT_AT(tet_meta_rec, flags, 48); TET_LAYOUT_AT(tet_meta_rec, name_copied, 52);
TET_LAYOUT_AT(tet_meta_rec, pad, 54); TET_LAYOUT_AT(tet_meta_rec, name, 56);

TET_LAYOUT_SIZE(tet_batch_open, 24);
TET_LAYOUT_AT(tet_batch_open, task_id, 0); TET_LAYOUT_AT(tet_batch_open, begin, 8);
TET_LAYOUT_AT(tet_batch_open, yields, 16);

TET_LAYOUT_SIZE(tet_batch_head, 344); /* usdt.rs Head */
TET_LAYOUT_AT(tet_batch_head, magic, 0); TET_LAYOUT_AT(tet_batch_head, version, 4);
TET_LAYOUT_AT(tet_batch_head, head_bytes, 6); TET_LAYOUT_AT(tet_batch_head, data_cap, 8);
TET_LAYOUT_AT(tet_batch_head, tid, 12); TET_LAYOUT_AT(tet_batch_head, seq, 16);
TET_LAYOUT_AT(tet_batch_head, len, 24); TET_LAYOUT_AT(tet_batch_head, clock, 28);
TET_LAYOUT_AT(tet_batch_head, reason, 29); TET_LAYOUT_AT(tet_batch_head, depth, 30);
TET_LAYOUT_AT(tet_batch_head, open_max, 31); TET_LAYOUT_AT(tet_batch_head, flush_clock, 32);
TET_LAYOUT_AT(tet_batch_head, flush_ns, 40); TET_LAYOUT_AT(tet_batch_head, window_clock, 48);
TET_LAYOUT_AT(tet_batch_head, last_clock, 56); TET_LAYOUT_AT(tet_batch_head, counts, 64);
TET_LAYOUT_AT(tet_batch_head, rate, 144); TET_LAYOUT_AT(tet_batch_head, open, 152);

TET_LAYOUT_SIZE(tet_offcpu_rec, 64);
TET_LAYOUT_AT(tet_offcpu_rec, h, 0); TET_LAYOUT_AT(tet_offcpu_rec, since, 24);
TET_LAYOUT_AT(tet_offcpu_rec, woken, 32); TET_LAYOUT_AT(tet_offcpu_rec, syscall, 40);
TET_LAYOUT_AT(tet_offcpu_rec, ustack, 48); TET_LAYOUT_AT(tet_offcpu_rec, kstack, 52);
TET_LAYOUT_AT(tet_offcpu_rec, flags, 56); TET_LAYOUT_AT(tet_offcpu_rec, pad, 60);

TET_LAYOUT_SIZE(tet_sample_rec, 32);
TET_LAYOUT_AT(tet_sample_rec, h, 0); TET_LAYOUT_AT(tet_sample_rec, ustack, 24);
TET_LAYOUT_AT(tet_sample_rec, kstack, 28);

TET_LAYOUT_SIZE(tet_exit_rec, 32);
TET_LAYOUT_AT(tet_exit_rec, h, 0); TET_LAYOUT_AT(tet_exit_rec, code, 24);
TET_LAYOUT_AT(tet_exit_rec, group_exit, 28);

TET_LAYOUT_SIZE(tet_uring_rec, 64);
TET_LAYOUT_AT(tet_uring_rec, h, 0); TET_LAYOUT_AT(tet_uring_rec, ctx, 24);
TET_LAYOUT_AT(tet_uring_rec, user_data, 32); TET_LAYOUT_AT(tet_uring_rec, fd, 40);
TET_LAYOUT_AT(tet_uring_rec, res, 44); TET_LAYOUT_AT(tet_uring_rec, pos, 48);
TET_LAYOUT_AT(tet_uring_rec, flags, 52); TET_LAYOUT_AT(tet_uring_rec, opcode, 56);
TET_LAYOUT_AT(tet_uring_rec, pad, 57);

TET_LAYOUT_SIZE(tet_uring_push_rec, 56);
TET_LAYOUT_AT(tet_uring_push_rec, h, 0); TET_LAYOUT_AT(tet_uring_push_rec, ctx, 24);
TET_LAYOUT_AT(tet_uring_push_rec, task_id, 32); TET_LAYOUT_AT(tet_uring_push_rec, header_ptr, 40);
TET_LAYOUT_AT(tet_uring_push_rec, from, 48); TET_LAYOUT_AT(tet_uring_push_rec, to, 52);

TET_LAYOUT_SIZE(tet_batch_rec, 64);
TET_LAYOUT_AT(tet_batch_rec, h, 0); TET_LAYOUT_AT(tet_batch_rec, buf, 24);
TET_LAYOUT_AT(tet_batch_rec, seq, 32); TET_LAYOUT_AT(tet_batch_rec, clock, 40);
TET_LAYOUT_AT(tet_batch_rec, mono_ns, 48); TET_LAYOUT_AT(tet_batch_rec, len, 56);
TET_LAYOUT_AT(tet_batch_rec, copied, 60); TET_LAYOUT_AT(tet_batch_rec, data, 64);

/* TET_LAYOUT_E: one array of per-event counters */
#define TET_LAYOUT_E (8 * TET_EV_COUNT)
TET_LAYOUT_SIZE(tet_counters, 3 * TET_LAYOUT_E + 128);
TET_LAYOUT_AT(tet_counters, seen, 0);
TET_LAYOUT_AT(tet_counters, drops, TET_LAYOUT_E);
TET_LAYOUT_AT(tet_counters, read_errors, 2 * TET_LAYOUT_E);
TET_LAYOUT_AT(tet_counters, arg_errors, 2 * TET_LAYOUT_E + 8);
TET_LAYOUT_AT(tet_counters, batches, 2 * TET_LAYOUT_E + 16);
TET_LAYOUT_AT(tet_counters, batch_drops, 2 * TET_LAYOUT_E + 24);
TET_LAYOUT_AT(tet_counters, batch_bad, 2 * TET_LAYOUT_E + 32);
TET_LAYOUT_AT(tet_counters, batch_read_errors, 2 * TET_LAYOUT_E + 40);
TET_LAYOUT_AT(tet_counters, batch_lost, 2 * TET_LAYOUT_E + 48);
TET_LAYOUT_AT(tet_counters, offcpu, 3 * TET_LAYOUT_E + 48);
TET_LAYOUT_AT(tet_counters, offcpu_drops, 3 * TET_LAYOUT_E + 56);
TET_LAYOUT_AT(tet_counters, samples, 3 * TET_LAYOUT_E + 64);
TET_LAYOUT_AT(tet_counters, sample_drops, 3 * TET_LAYOUT_E + 72);
TET_LAYOUT_AT(tet_counters, stack_errors, 3 * TET_LAYOUT_E + 80);
TET_LAYOUT_AT(tet_counters, exit_drops, 3 * TET_LAYOUT_E + 88);
TET_LAYOUT_AT(tet_counters, lost_untracked, 3 * TET_LAYOUT_E + 96);
TET_LAYOUT_AT(tet_counters, uring, 3 * TET_LAYOUT_E + 104);
TET_LAYOUT_AT(tet_counters, uring_drops, 3 * TET_LAYOUT_E + 112);
TET_LAYOUT_AT(tet_counters, uring_deep, 3 * TET_LAYOUT_E + 120);
#undef TET_LAYOUT_E

#undef TET_LAYOUT_AT
#undef TET_LAYOUT_SIZE

#endif
