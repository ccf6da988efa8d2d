/* SPDX-License-Identifier: MIT */
/*
 * kuring.h — the kernel side of io_uring tracing (bpf/uring.bpf.h), for every capture session:
 * the BTF tracepoints io_uring_create, io_uring_submit_req and io_uring_complete, and the
 * target binary's identity for processes started after the attach. The poll hooks that tell
 * which poll filled which SQE run in the capture's own poll programs (per-event capture, the
 * uprobe fallback) or, in batched capture, in two extra programs on tokio:task_poll_begin/end
 * attached only once a ring of the target is seen (tet_uring_hooks): a target without io_uring
 * pays nothing. Whatever the kernel refuses is left out with a reason; the capture goes on.
 */
#ifndef TET_KURING_H
#define TET_KURING_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct bpf_program;
struct bpf_link;

struct tet_uring_info {
	bool on;                   /* the io_uring tracepoints are attached */
	const char *why_not;
	bool hooks;                /* polls report the SQ ranges they fill */
	bool hooks_lazy;           /* … through programs attached once a ring is seen (batched) */
	const char *why_no_hooks;
};

struct tet_uring_progs {
	struct bpf_program *create, *submit, *complete;
	/* the object's rodata (before the load): the traced binary by inode, attached by path */
	uint64_t *exe_ino;
	uint32_t *exe_dev;
};

/* Before the load: can the kernel run them? Sets the programs' autoload and the binary's
 * identity (exe: the traced file, or NULL when attached to a PID). Returns info->on. */
bool tet_uring_prepare(const struct tet_uring_progs *p, bool off, const char *exe,
		       struct tet_uring_info *info);
struct tet_uring;
/* After the load: attaches what was prepared; never fails the capture. */
struct tet_uring *tet_uring_attach(const struct tet_uring_progs *p, struct tet_uring_info *info);
/* Batched capture: keeps links of the lazily attached poll hooks, to release with the rest. */
int tet_uring_keep(struct tet_uring *u, struct bpf_link *l);
void tet_uring_detach(struct tet_uring *u);

#endif
