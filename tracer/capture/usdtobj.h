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

/* The last warning libbpf printed (for error messages), "" if none. */
const char *tet_libbpf_last_error(void);
/* libbpf's messages: kept for errors; printed on stderr with verbose. */
void tet_libbpf_setup(bool verbose);

#endif
