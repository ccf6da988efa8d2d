/* SPDX-License-Identifier: MIT */
/* bpfutil.h — pieces the capture backends (perevent.c, batchcap.c, fallback.c) share. */
#ifndef TET_BPFUTIL_H
#define TET_BPFUTIL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "events.h"

struct bpf_program;

struct bpf_link;

/* What a session attached: libbpf links and raw link fds (uprobe_multi), released together
 * (the kernel detaches on destroy/close). */
struct tet_attachments {
	struct bpf_link **links;
	int *fds;
	size_t nlinks, nfds;
};
/* Keeps a link / a link fd; returns 0, or -ENOMEM after destroying / closing it. */
int tet_att_link(struct tet_attachments *a, struct bpf_link *l);
int tet_att_fd(struct tet_attachments *a, int fd);
/* Destroys every link, closes every fd, frees the arrays. */
void tet_att_release(struct tet_attachments *a);

/* The kernel's id of a loaded program; false if it is not loaded or the kernel won't say. */
bool tet_prog_id(const struct bpf_program *p, uint32_t *id);
/* Reads the per-CPU counters map (map_fd) and sums it into *sum. Returns 0 or -errno (sum
 * then zeroed). */
int tet_counters_sum(int map_fd, struct tet_counters *sum);

#define TET_TRACE_UPROBE_MULTI 48  /* enum bpf_attach_type, Linux 6.6 */

/* A multi-uprobe link (Linux 6.6, 89ae89f53d20 "bpf: Add multi uprobe link"): prog_fd on every
 * offset of one file, each with its ref_ctr_offset (the USDT semaphore the kernel raises while
 * the probe is installed; NULL for none) and BPF cookie (NULL for none), uretprobes if ret,
 * limited to pid (0: every process). libbpf 1.1 has no API for it (bpf_program__attach_uprobe_
 * multi came in libbpf 1.3): the raw bpf(2) command. Returns the link fd (closing it detaches
 * all, one RCU grace period where single uprobes pay one each) or -errno. */
int tet_uprobe_multi(int prog_fd, const char *path, const uint64_t *offs,
		     const uint64_t *ref_ctr_offs, const uint64_t *cookies, size_t cnt, bool ret,
		     pid_t pid);
/* Can this kernel make uprobe_multi links? Tried with a throwaway program on one real offset
 * of path; *why says why not. TET_NO_UPROBE_MULTI=1 in the environment answers no (tests). */
bool tet_uprobe_multi_works(const char *path, uint64_t off, pid_t pid, const char **why);

#endif
