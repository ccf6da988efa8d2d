/* SPDX-License-Identifier: MIT */
/*
 * sampstack.h — what the stacks of `trace --mode sampling` say (issue 27): the functions of the
 * traced executable that poll one future type (a raw::poll<T, S> instance, or the
 * Harness<T, S>::poll it jumps to), which of them a sample's or a sleep's user stack is in (the
 * frame-pointer walk, else the BPF side's scan of the stack's words), its future type, and the
 * frame names the report shows. Stacks are read through the caller's lookup (the capture's BPF
 * stack map) and resolved once each. See sampstack.c for the design.
 */
#ifndef TET_SAMPSTACK_H
#define TET_SAMPSTACK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "events.h"

#define SST_STACKS   32768   /* the BPF stack map's entries (sched.bpf.h): ids 0 .. SST_STACKS-1 */
#define SST_NAME_MAX 256     /* bytes of a name from the traced binary kept (report-schema.md) */
#define SST_KFRAME   128     /* bytes of a kernel frame's name kept */
#define SST_FRAME_MAX 512    /* bytes of a frame's display name (sst_ustack_frames) */

struct sst;
struct tsym_table;

/* Fills ips (TET_STACK_DEPTH addresses, innermost first, 0 after the last) with stack id's
 * addresses: 0, or nonzero when there is no such stack (bpf_map_lookup_elem on the stack map). */
typedef int (*sst_lookup_fn)(void *ctx, int32_t id, uint64_t *ips);

/* Reads the executable of pid (/proc/PID/exe: its symbols, its poll functions, its mappings)
 * and learns the process's mappings for the symbolizer: call while it runs. 0 or -errno with
 * one line in err. */
int sst_open(struct sst **out, pid_t pid, char *err, size_t len);
void sst_close(struct sst *s);
/* Where the stacks come from (before the first sst_poll / sst_frame / sst_kframes). */
void sst_set_lookup(struct sst *s, sst_lookup_fn fn, void *ctx);

const char *sst_exe(const struct sst *s);            /* the executable's path, as /proc says */
const struct tsym_table *sst_syms(const struct sst *s);
/* The future types' names (index = type), owned by s. */
const char *const *sst_types(const struct sst *s, size_t *n);
/* No frame pointers in the executable: the BPF side must scan the stacks for poll functions'
 * return addresses; then [*lo, *hi) is those functions' runtime address range (0, 0: none). */
bool sst_stack_scan(const struct sst *s, uint64_t *lo, uint64_t *hi);

/* The innermost poll function of a user stack (id ustack, -1: none) — from the frame walk, else
 * from the scan's candidates (cand: TET_SCAN_CANDS words, 0 after the last; the innermost that is
 * a return address right after a call) — as an index (equal: the same function), -1 none.
 * *by_scan: it came from the scan. */
int sst_poll(struct sst *s, int32_t ustack, const uint64_t *cand, bool *by_scan);
/* The future type that poll function polls (an index into sst_types), -1 for poll < 0. */
int sst_poll_type(const struct sst *s, int poll);
/* Tokio's BlockingTask: a worker loop or a spawn_blocking closure, not an async poll. */
bool sst_type_blocking(const struct sst *s, int type);
/* The frame a user stack is charged to: its innermost frame of the program's own code above the
 * poll frame, else its innermost frame; NULL unknown. Owned by s (SST_NAME_MAX bytes at most). */
const char *sst_frame(struct sst *s, int32_t ustack);
/* The names of the up to max innermost named frames of kernel stack kstack: the count. */
size_t sst_kframes(struct sst *s, int32_t kstack, char (*out)[SST_KFRAME], size_t max);
/* The frames of user stack ustack, LEAF FIRST, up to max into out, named as the other modes'
 * stacks (why.c: "function (file:line)" for the program's own code with line info, else
 * "function"; inlined calls expanded; printable UTF-8). A program with frame pointers: the whole
 * walk (past a frame only when its code keeps them, why.c's rule); without (*cut set): the leaf
 * address's frames only, the frames between it and the poll frame are not known. The count. */
size_t sst_ustack_frames(struct sst *s, int32_t ustack, char (*out)[SST_FRAME_MAX], size_t max,
			 bool *cut);

#endif
