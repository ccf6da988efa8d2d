// SPDX-License-Identifier: MIT
/* bpfutil.c — see bpfutil.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/bpf.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfutil.h"

int tet_att_link(struct tet_attachments *a, struct bpf_link *l)
{
	struct bpf_link **v = realloc(a->links, (a->nlinks + 1) * sizeof(*v));

	if (!v) {
		bpf_link__destroy(l);
		return -ENOMEM;
	}
	a->links = v;
	a->links[a->nlinks++] = l;
	return 0;
}

int tet_att_fd(struct tet_attachments *a, int fd)
{
	int *v = realloc(a->fds, (a->nfds + 1) * sizeof(*v));

	if (!v) {
		close(fd);
		return -ENOMEM;
	}
	a->fds = v;
	a->fds[a->nfds++] = fd;
	return 0;
}

void tet_att_release(struct tet_attachments *a)
{
	for (size_t i = 0; i < a->nlinks; i++)
		bpf_link__destroy(a->links[i]);
	for (size_t i = 0; i < a->nfds; i++)
		close(a->fds[i]);
	free(a->links);
	free(a->fds);
	memset(a, 0, sizeof(*a));
}

bool tet_prog_id(const struct bpf_program *p, uint32_t *id)
{
	struct bpf_prog_info info;
	uint32_t ilen = sizeof(info);
	int fd = bpf_program__fd(p);

	if (fd < 0)
		return false;
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &ilen))
		return false;
	*id = info.id;
	return true;
}

int tet_counters_sum(int map_fd, struct tet_counters *sum)
{
	int ncpus = libbpf_num_possible_cpus();
	struct tet_counters *percpu;
	uint32_t zero = 0;

	memset(sum, 0, sizeof(*sum));
	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	percpu = calloc((size_t)ncpus, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	if (bpf_map_lookup_elem(map_fd, &zero, percpu)) {
		int ret = -errno;

		free(percpu);
		return ret;
	}
	for (int c = 0; c < ncpus; c++) {
		for (int i = 0; i < TET_EV_COUNT; i++) {
			sum->seen[i] += percpu[c].seen[i];
			sum->drops[i] += percpu[c].drops[i];
		}
		sum->read_errors += percpu[c].read_errors;
		sum->arg_errors += percpu[c].arg_errors;
		sum->batches += percpu[c].batches;
		sum->batch_drops += percpu[c].batch_drops;
		sum->batch_bad += percpu[c].batch_bad;
		sum->batch_read_errors += percpu[c].batch_read_errors;
		for (int i = 0; i < TET_EV_COUNT; i++)
			sum->batch_lost[i] += percpu[c].batch_lost[i];
		sum->offcpu += percpu[c].offcpu;
		sum->offcpu_drops += percpu[c].offcpu_drops;
		sum->samples += percpu[c].samples;
		sum->exit_drops += percpu[c].exit_drops;
		sum->lost_untracked += percpu[c].lost_untracked;
		sum->uring += percpu[c].uring;
		sum->uring_drops += percpu[c].uring_drops;
		sum->uring_deep += percpu[c].uring_deep;
		sum->sample_drops += percpu[c].sample_drops;
		sum->stack_errors += percpu[c].stack_errors;
	}
	free(percpu);
	return 0;
}

#define F_UPROBE_MULTI_RETURN (1u << 0)

/* link_create.uprobe_multi of Linux 6.6's union bpf_attr (the installed uapi header is older) */
struct link_create_uprobe_multi {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 um_flags;
	__u32 pid;
};
_Static_assert(sizeof(struct link_create_uprobe_multi) <= sizeof(union bpf_attr),
	       "bpf_attr too small for uprobe_multi");

int tet_uprobe_multi(int prog_fd, const char *path, const uint64_t *offs,
		     const uint64_t *ref_ctr_offs, const uint64_t *cookies, size_t cnt, bool ret,
		     pid_t pid)
{
	union {
		union bpf_attr attr;
		struct link_create_uprobe_multi m;
	} a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.m.prog_fd = (__u32)prog_fd;
	a.m.attach_type = TET_TRACE_UPROBE_MULTI;
	a.m.path = (__u64)(uintptr_t)path;
	a.m.offsets = (__u64)(uintptr_t)offs;
	a.m.ref_ctr_offsets = (__u64)(uintptr_t)ref_ctr_offs;
	a.m.cookies = (__u64)(uintptr_t)cookies;
	a.m.cnt = (__u32)cnt;
	a.m.um_flags = ret ? F_UPROBE_MULTI_RETURN : 0;
	a.m.pid = pid > 0 ? (__u32)pid : 0;
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}

bool tet_uprobe_multi_works(const char *path, uint64_t off, pid_t pid, const char **why)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, po, .expected_attach_type = TET_TRACE_UPROBE_MULTI);
	int pfd, lfd;

	if (getenv("TET_NO_UPROBE_MULTI")) {
		*why = "TET_NO_UPROBE_MULTI is set";
		return false;
	}
	pfd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "tet_probe_multi", "Dual BSD/GPL", insns, 2, &po);
	if (pfd < 0) {
		*why = "kernel refuses uprobe_multi programs (needs Linux >= 6.6)";
		return false;
	}
	lfd = tet_uprobe_multi(pfd, path, &off, NULL, NULL, 1, false, pid);
	close(pfd);
	if (lfd < 0) {
		*why = "kernel without uprobe_multi links (needs Linux >= 6.6)";
		return false;
	}
	close(lfd);
	return true;
}
