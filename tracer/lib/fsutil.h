/* SPDX-License-Identifier: MIT */
/* fsutil.h — small file-system helpers shared by the report writers and the flight recorder. */
#ifndef TET_FSUTIL_H
#define TET_FSUTIL_H
#include <stddef.h>

/* Whether a file can be created in a directory, tried (root passes access(); a read-only file
 * system, a full disk or procfs still refuse): `dir` is the directory's path including its
 * final '/' — its first dirlen bytes (0: the current directory). Creates and removes
 * DIR.tokio-ebpf-trace-probe.PID. Returns 0 or -errno. */
int fs_can_create(const char *dir, size_t dirlen);

#endif
