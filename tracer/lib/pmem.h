/* SPDX-License-Identifier: MIT */
/*
 * pmem.h — reads of a traced process's memory that the process cannot turn into a hold on the
 * tracer.
 *
 * process_vm_readv(2) faults the target's pages in, and a fault can wait for as long as the
 * target likes: on a range registered with userfaultfd the read sleeps until the target's own
 * handler resolves it, on a FUSE-backed mapping until the FUSE server answers. The wait is
 * killable only (TASK_KILLABLE): SIGINT and --duration cannot end it. So every read runs on a
 * reader thread and the caller waits at most PMEM_TIMEOUT_MS; a read that does not come back by
 * then is abandoned (its thread stays behind until the target lets go, or dies with the tracer:
 * exit_group kills it) and counted, and after PMEM_STUCK_MAX abandoned readers the tracer reads
 * no more process memory for the rest of its run (counted as refused).
 */
#ifndef TET_PMEM_H
#define TET_PMEM_H
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define PMEM_TIMEOUT_MS 200      /* a page read from a slow disk takes tens of ms */
#define PMEM_STUCK_MAX 4         /* abandoned reader threads, then no more reads */
#define PMEM_CHUNK (64u << 10)   /* bytes one request moves (longer reads are split) */

struct pmem_stats {
	uint64_t reads;          /* requests made */
	uint64_t timed_out;      /* … abandoned after PMEM_TIMEOUT_MS */
	uint64_t refused;        /* … not tried: PMEM_STUCK_MAX readers were stuck */
	uint64_t failed;         /* … that the kernel refused (unmapped, no permission, gone) */
};

/* Reads up to len bytes of process pid at addr into buf. Returns the bytes read (possibly
 * fewer than len: the copy stopped at an unmapped page), or -errno: -ETIMEDOUT for a read
 * abandoned or refused as above, else what process_vm_readv(2) set. Thread-safe. */
ssize_t pmem_read(uint32_t pid, uint64_t addr, void *buf, size_t len);
void pmem_get_stats(struct pmem_stats *st);
/* Does thread tid of process pid still exist? (A decoder's TB_READ_THREAD.) */
bool pmem_thread_alive(uint32_t pid, uint32_t tid);
/* In a child just forked: the parent's reader thread is not there (its lock may be copied held);
 * the child's first read starts a reader of its own. */
void pmem_after_fork(void);
/* Tests: the timeout in ms (0: back to PMEM_TIMEOUT_MS). */
void pmem_set_timeout_ms(unsigned ms);

#endif
