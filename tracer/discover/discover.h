/* SPDX-License-Identifier: MIT */
/*
 * discover.h — can this process or file be traced here, and how: kernel and privileges
 * preflight, the files with tokio probes (of any known dialect: dialect.h), else the uprobe
 * fallback's Tokio symbols. One decision for `check` and `trace` (tet_discover). Every
 * function returns 0 or a negative errno and writes one line into err.
 */
#ifndef TET_DISCOVER_H
#define TET_DISCOVER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dialect.h"
#include "events.h"

#define TET_ERR_LEN 640
#define TET_PROBE_BIT(ev) (1u << (ev))

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
	const struct tet_dialect *dialect;
	const struct tet_dprobe *dprobe[TET_EV_COUNT]; /* the probe giving each event */
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
	const struct tet_dialect *dialect; /* the main file's (else the first file's) */
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
 * probes (usdt); only the fallback, even when probes exist (uprobe); no probe at all, the CPU
 * sampler reading Tokio's thread-local task id (sampling: run/run_sampling.h, which finds what it
 * needs itself; tet_discover() is not called with it). */
enum tet_mode { TET_MODE_AUTO, TET_MODE_USDT, TET_MODE_UPROBE, TET_MODE_SAMPLING };

/* Finds the files with tokio probes: every ELF file PID maps, or the one binary.
 * Errors: -ESRCH no such process (or it exited), -ENOENT no such file, -EACCES,
 * -ENODATA nothing to attach (the message says whether Tokio is there without probes),
 * others from the note reader. */
int tet_targets_find(pid_t pid, const char *binary, struct tet_targets *t, char *err, size_t len);
int tet_targets_find_mode(pid_t pid, const char *binary, enum tet_mode mode,
			  struct tet_targets *t, char *err, size_t len);
void tet_targets_free(struct tet_targets *t);

/* The machine's half of it: tet_check_kernel under sysfs_root, then tet_check_privileges. */
int tet_preflight(const char *sysfs_root, char *err, size_t len);
/* The one decision `check` and `trace` share: the kernel (tet_check_kernel under sysfs_root),
 * the privileges, then the targets. 0: traceable, in mode usdt (t->n files) or uprobe
 * (t->fallback); else -EOPNOTSUPP / -EPERM (kernel, privileges: nothing about the target),
 * or tet_targets_find_mode's error; err says why. */
int tet_discover(pid_t pid, const char *binary, enum tet_mode mode, const char *sysfs_root,
		 struct tet_targets *t, char *err, size_t len);

/* The traced binary for the io_uring side's process filter: the main file, attached by path
 * (NULL when attached to a PID). */
const char *tet_targets_exe_path(const struct tet_targets *t, pid_t pid);

#endif
