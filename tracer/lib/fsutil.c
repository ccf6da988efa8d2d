// SPDX-License-Identifier: MIT
/* fsutil.c — small file-system helpers (fsutil.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fsutil.h"

int fs_can_create(const char *dir, size_t dirlen)
{
	char *probe;
	int fd, e;

	if (asprintf(&probe, "%.*s.tokio-ebpf-trace-probe.%d", (int)dirlen, dir, (int)getpid()) < 0)
		return -ENOMEM;
	fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	e = errno;
	if (fd >= 0) {
		close(fd);
		unlink(probe);
	}
	free(probe);
	return fd < 0 ? -e : 0;
}
