/* SPDX-License-Identifier: MIT */
/*
 * attach.h — from "trace PID 1234" / "trace /usr/bin/server" to attached BPF programs and a
 * ring buffer: preflight checks (kernel, privileges), target discovery through the note
 * reader, skeleton open/configure/load, one USDT attachment per (file, probe), drain, counters
 * and detach. Every function returns 0 or a negative errno and writes one line into err.
 */
#ifndef TET_ATTACH_H
#define TET_ATTACH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "events.h"
#include "ksched.h"
#include "kuring.h"

#define TET_ERR_LEN 640

/* Probe classes of --probes, as bit masks over enum tet_event. */
#define TET_PROBE_BIT(ev) (1u << (ev))
#define TET_CLASS_SPAWN     TET_PROBE_BIT(TET_EV_SPAWN)
#define TET_CLASS_POLL      (TET_PROBE_BIT(TET_EV_POLL_BEGIN) | TET_PROBE_BIT(TET_EV_POLL_END))
#define TET_CLASS_YIELD     TET_PROBE_BIT(TET_EV_YIELD)
#define TET_CLASS_WAKE      TET_PROBE_BIT(TET_EV_WAKE)
#define TET_CLASS_WAKER     (TET_PROBE_BIT(TET_EV_WAKER_CLONE) | TET_PROBE_BIT(TET_EV_WAKER_DROP))
#define TET_CLASS_TERMINATE TET_PROBE_BIT(TET_EV_TERMINATE)
#define TET_CLASS_WORKER    (TET_PROBE_BIT(TET_EV_PARK) | TET_PROBE_BIT(TET_EV_UNPARK))
#define TET_CLASS_WAIT      (TET_PROBE_BIT(TET_EV_WAIT) | TET_PROBE_BIT(TET_EV_META))
#define TET_PROBES_ALL      ((1u << TET_EV_COUNT) - 1)

struct tet_class {
	const char *name;
	unsigned mask;
	const char *what;
};
extern const struct tet_class tet_classes[];
extern const size_t tet_nclasses;

/* Kernel features the tracer needs, looked up under `root` (normally "", tests point
 * TET_SYSFS_ROOT elsewhere): the perf uprobe PMU with ref_ctr_offset support (semaphores)
 * and kernel BTF. */
int tet_check_kernel(const char *root, char *err, size_t len);
/* Root, or CAP_BPF + CAP_PERFMON (or CAP_SYS_ADMIN) in the effective set. */
int tet_check_privileges(char *err, size_t len);

#define TET_BATCH_SITES_MAX 16  /* tokio:event_batch sites (4 per copy of the patched Tokio) */
#define TET_RATE_BITS 16        /* tokio:sample_rate sites: one per bit of the rate */

/* A file carrying tokio probes, in the traced process or given by path. */
struct tet_target {
	char *path;          /* as the user knows it (maps path, or --binary) */
	char *attach_path;   /* what libbpf opens and the kernel resolves */
	bool is_main;
	unsigned probes;     /* probes present (bits of enum tet_event) */
	unsigned sites[TET_EV_COUNT];
	/* batched capture: tokio:event_batch sites and tokio:sample_rate sites (bit k = the
	 * k-th by semaphore address), file offsets of the site and of its semaphore */
	size_t nbatch, nrate;
	uint64_t batch_off[TET_BATCH_SITES_MAX], batch_sema[TET_BATCH_SITES_MAX];
	uint64_t rate_off[TET_RATE_BITS], rate_sema[TET_RATE_BITS];
};

struct tsym_table;
struct tet_fb_info;
struct tet_bc_info;
struct tb_stats;
struct tb;

struct tet_targets {
	pid_t pid;           /* 0 for --binary */
	char *exe;           /* the process's executable, for messages */
	struct tet_target *v;
	size_t n;
	unsigned probes;     /* union over the files */
	bool batch;          /* some file has tokio:event_batch (batched capture possible) */
	bool uring_code;     /* some file has io_uring code (symbols naming io_uring): batched
			      * capture attaches the io_uring poll hooks from the start */
	/* uprobe fallback (stock Tokio: no tokio USDT notes, or --mode uprobe): v is empty */
	bool fallback;
	struct tsym_table *syms; /* tracer/discover/symbols.h: the functions found */
	char *fb_path;       /* the file with them, as the user knows it */
	char *fb_attach;     /* what the kernel resolves */
};

/* How to trace: the tokio USDT probes when present, else the uprobe fallback (auto); only the
 * probes (usdt); only the fallback, even when probes exist (uprobe). */
enum tet_mode { TET_MODE_AUTO, TET_MODE_USDT, TET_MODE_UPROBE };

/* Finds the files with tokio probes: every ELF file PID maps, or the one binary.
 * Errors: -ESRCH no such process (or it exited), -ENOENT no such file, -EACCES,
 * -ENODATA nothing to attach (the message says whether Tokio is there without probes),
 * others from the note reader. */
int tet_targets_find(pid_t pid, const char *binary, struct tet_targets *t, char *err, size_t len);
int tet_targets_find_mode(pid_t pid, const char *binary, enum tet_mode mode,
			  struct tet_targets *t, char *err, size_t len);
void tet_targets_free(struct tet_targets *t);

struct tet_session;
typedef int (*tet_event_fn)(void *ctx, void *data, size_t size);

struct tet_session_opts {
	pid_t pid;               /* > 0: only this process; 0: every process (binary path) */
	unsigned probes;         /* to attach (bits of enum tet_event), limited to those present */
	size_t ringbuf_bytes;    /* power of two ≥ page size */
	bool batched;            /* batched capture (tokio:event_batch) instead of per-event */
	uint32_t sample_rate;    /* batched: one task in N */
	struct tet_sched_opts sched; /* why a poll was slow: sched tracepoints, CPU profile */
	bool no_uring;           /* --no-io-uring: io_uring requests not followed */
	bool verbose;
	tet_event_fn on_event;
	void *ctx;
};

int tet_session_open(struct tet_session **s, const struct tet_session_opts *o,
		     const struct tet_targets *t, char *err, size_t len);
/* Probes actually attached (bits of enum tet_event) and the number of attachments. */
unsigned tet_session_probes(const struct tet_session *s);
size_t tet_session_links(const struct tet_session *s);
/* The uprobe fallback's attach figures, NULL for a USDT session. */
const struct tet_fb_info *tet_session_fallback(const struct tet_session *s);
/* The batched capture's attach figures and decode statistics, NULL for a per-event session. */
const struct tet_bc_info *tet_session_batch_info(const struct tet_session *s);
const struct tb_stats *tet_session_batch_stats(const struct tet_session *s);
struct tb *tet_session_decoder(struct tet_session *s);
/* IDs of the loaded BPF programs, for `bpftool prog show id N` (verbose output, tests). */
size_t tet_session_prog_ids(const struct tet_session *s, uint32_t *ids, const char **names,
			    size_t max);
/* What the kernel side of "why a poll was slow" runs with, and the BPF stack map's fd (stack
 * ids of TET_REC_OFFCPU / TET_REC_SAMPLE records; readable until tet_session_close). */
const struct tet_sched_info *tet_session_sched(const struct tet_session *s);
/* What io_uring tracing runs with (kuring.h). */
const struct tet_uring_info *tet_session_uring(const struct tet_session *s);
int tet_session_stacks_fd(const struct tet_session *s);
/* The BPF map of tasks that lost an event (bpf/common.bpf.h lost_tasks: struct lost_key →
 * count), -1 when the capture cannot tell them (batched). */
int tet_session_lost_fd(const struct tet_session *s);
/* Consumes every record in the ring buffer; returns the count or a negative errno. */
int tet_session_drain(struct tet_session *s);
/* Sums the per-CPU counters. */
int tet_session_counters(struct tet_session *s, struct tet_counters *sum);
/* Detaches every probe (the kernel resets the semaphores); the ring buffer stays readable.
 * The capture ends here: events stamped later are not analyzed and not counted as hits. */
void tet_session_detach(struct tet_session *s);
/* The same, the capture ending at cutoff_ns (CLOCK_MONOTONIC; 0: now) for every probe at once:
 * the BPF programs stop recording at that instant, before the links go one by one. */
void tet_session_end(struct tet_session *s, uint64_t cutoff_ns);
void tet_session_close(struct tet_session *s);

/* The traced binary for the io_uring side's process filter: the main file, attached by path
 * (NULL when attached to a PID). */
const char *tet_targets_exe_path(const struct tet_targets *t, pid_t pid);

/* The tokio_usdt BPF object, opened for pid (0: every process of the binary); the caller
 * picks what to load, then tet_usdt_load sizes the ring buffer and loads it. Both return 0 or
 * -errno with err set. */
struct tokio_usdt;
int tet_usdt_open(struct tokio_usdt **out, pid_t pid, char *err, size_t len);
int tet_usdt_load(struct tokio_usdt *skel, size_t ringbuf_bytes, char *err, size_t len);

/* The last warning libbpf printed (for error messages), "" if none. */
const char *tet_libbpf_last_error(void);
void tet_libbpf_setup(bool verbose);

#endif
