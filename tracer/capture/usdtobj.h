/* SPDX-License-Identifier: MIT */
/*
 * usdtobj.h — what the USDT backends (perevent.c, batchcap.c) share below them: the
 * tokio_usdt BPF object's open and load, and libbpf's log.
 */
#ifndef TET_USDTOBJ_H
#define TET_USDTOBJ_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The tokio_usdt BPF object, opened for pid (0: every process of the binary); the caller
 * picks what to load, then tet_usdt_load sizes the ring buffer and loads it. Both return 0 or
 * -errno with err set. */
struct tokio_usdt;
int tet_usdt_open(struct tokio_usdt **out, pid_t pid, char *err, size_t len);
int tet_usdt_load(struct tokio_usdt *skel, size_t ringbuf_bytes, char *err, size_t len);

/* The kernel sides of the tokio_usdt object: the sched tracepoints and CPU profile of "why a
 * poll was slow" (ksched.h) and io_uring (kuring.h), prepared before the load (their answer:
 * whether they will run) and attached after it. */
struct tet_sched_opts;
struct tet_sched_info;
struct tet_uring_info;
bool tet_usdt_sched_prepare(struct tokio_usdt *skel, const struct tet_sched_opts *o,
			    struct tet_sched_info *info);
struct tet_sched *tet_usdt_sched_attach(struct tokio_usdt *skel, const struct tet_sched_opts *o,
					struct tet_sched_info *info);
bool tet_usdt_uring_prepare(struct tokio_usdt *skel, bool off, const char *exe,
			    struct tet_uring_info *info);
struct tet_uring *tet_usdt_uring_attach(struct tokio_usdt *skel, struct tet_uring_info *info);

/* The last warning libbpf printed (for error messages), "" if none. */
const char *tet_libbpf_last_error(void);
/* libbpf's messages: the last warning kept for errors; with verbose, every one said through
 * msgs (seterr.h) as "libbpf: …". */
struct tet_msgs;
void tet_libbpf_setup(bool verbose, const struct tet_msgs *msgs);

#endif
