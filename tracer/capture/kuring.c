// SPDX-License-Identifier: MIT
/* kuring.c — attaches the kernel side of io_uring tracing (kuring.h, bpf/uring.bpf.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <bpf/libbpf.h>

#include "ksched.h"
#include "kuring.h"

struct tet_uring {
	struct bpf_link *create, *submit, *complete;
	struct bpf_link **hooks;
	size_t nhooks;
};

bool tet_uring_prepare(const struct tet_uring_progs *p, bool off, const char *exe,
		       struct tet_uring_info *info)
{
	struct stat st;

	memset(info, 0, sizeof(*info));
	if (off)
		info->why_not = "turned off (--no-io-uring)";
	else if (getenv("TET_TEST_NO_URING_TP") || /* tests: a kernel without them */
		 tet_btf_tracepoint_args("btf_trace_io_uring_submit_req") != 1 ||
		 tet_btf_tracepoint_args("btf_trace_io_uring_create") != 5)
		info->why_not = "the kernel has no io_uring_submit_req/io_uring_create BTF tracepoints: io_uring requests are not followed";
	else if (tet_btf_tracepoint_args("btf_trace_io_uring_complete") != 3)
		info->why_not = "this kernel's io_uring_complete tracepoint is not (ctx, req, cqe) (Linux 6.2 or later): io_uring requests are not followed";
	info->on = !info->why_not;
	bpf_program__set_autoload(p->create, info->on);
	bpf_program__set_autoload(p->submit, info->on);
	bpf_program__set_autoload(p->complete, info->on);
	if (info->on && exe && p->exe_ino && !stat(exe, &st)) {
		/* the kernel's dev_t: major << 20 | minor */
		*p->exe_ino = st.st_ino;
		*p->exe_dev = (uint32_t)(major(st.st_dev) << 20 | minor(st.st_dev));
	}
	if (!info->on)
		info->why_no_hooks = info->why_not;
	return info->on;
}

struct tet_uring *tet_uring_attach(const struct tet_uring_progs *p, struct tet_uring_info *info)
{
	struct tet_uring *u = calloc(1, sizeof(*u));

	if (!u) {
		info->on = false;
		info->why_not = info->why_no_hooks = "out of memory";
		return NULL;
	}
	if (!info->on)
		return u;
	u->create = bpf_program__attach(p->create);
	u->submit = u->create ? bpf_program__attach(p->submit) : NULL;
	u->complete = u->submit ? bpf_program__attach(p->complete) : NULL;
	if (!u->complete) {
		bpf_link__destroy(u->submit);
		bpf_link__destroy(u->create);
		u->create = u->submit = NULL;
		info->on = false;
		info->hooks = false;
		info->why_not = info->why_no_hooks =
			"the kernel refused the io_uring tracepoint programs: io_uring requests are not followed";
	}
	return u;
}

int tet_uring_keep(struct tet_uring *u, struct bpf_link *l)
{
	struct bpf_link **v = realloc(u->hooks, (u->nhooks + 1) * sizeof(*v));

	if (!v) {
		bpf_link__destroy(l);
		return -ENOMEM;
	}
	u->hooks = v;
	u->hooks[u->nhooks++] = l;
	return 0;
}

void tet_uring_detach(struct tet_uring *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nhooks; i++)
		bpf_link__destroy(u->hooks[i]);
	free(u->hooks);
	bpf_link__destroy(u->complete);
	bpf_link__destroy(u->submit);
	bpf_link__destroy(u->create);
	free(u);
}
