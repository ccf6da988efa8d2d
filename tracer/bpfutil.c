// SPDX-License-Identifier: MIT
/* bpfutil.c — see bpfutil.h. */
#include <errno.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpfutil.h"

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

int tet_counters_sum(int map_fd, struct tet_counters *percpu, int ncpus, struct tet_counters *sum)
{
	uint32_t zero = 0;

	memset(sum, 0, sizeof(*sum));
	if (bpf_map_lookup_elem(map_fd, &zero, percpu))
		return -errno;
	for (int c = 0; c < ncpus; c++) {
		for (int i = 0; i < TET_EV_COUNT; i++) {
			sum->seen[i] += percpu[c].seen[i];
			sum->drops[i] += percpu[c].drops[i];
		}
		sum->read_errors += percpu[c].read_errors;
		sum->arg_errors += percpu[c].arg_errors;
	}
	return 0;
}
