// SPDX-License-Identifier: MIT
/*
 * decode.c — ring records → events, what every capture mode does alike (decode.h).
 */
#include <sys/uio.h>

#include "decode.h"
#include "pmem.h"

bool tet_decode_late(uint64_t cutoff_ns, const void *data, size_t size,
		     uint64_t late[TET_EV_COUNT])
{
	const struct tet_hdr *h = data;

	if (size < sizeof(*h) || !cutoff_ns || h->ts <= cutoff_ns)
		return false;
	if (h->type == TET_REC_EXIT) /* how a process ended: whenever it is read */
		return false;
	if (h->type < TET_EV_COUNT && late)
		late[h->type]++;
	return true;
}

/* Reads len bytes of process pid at addr (faulting pages in, unlike bpf_probe_read_user()),
 * with process_vm_readv: ptrace permission only (root, CAP_SYS_PTRACE), where opening another
 * user's /proc/PID/mem needs CAP_DAC_READ_SEARCH too; bounded in time (pmem.h). */
static size_t read_process(uint32_t pid, uint64_t addr, char *buf, size_t len)
{
	ssize_t n = pmem_read(pid, addr, buf, len);

	return n > 0 ? (size_t)n : 0;
}

/* A spawn whose strings BPF could not read: read them from the process, which is still
 * there (the record is at most one drain interval old) and whose strings are static. */
const struct tet_spawn_rec *tet_decode_spawn(const struct tet_spawn_rec *r, struct tet_spawn_rec *copy)
{
	size_t fwant = r->file_len < TET_FILE_MAX ? (size_t)r->file_len : TET_FILE_MAX;
	size_t twant = r->type_len < TET_TYPE_MAX ? (size_t)r->type_len : TET_TYPE_MAX;

	if ((r->file_copied >= fwant || !r->file_ptr) && (r->type_copied >= twant || !r->type_ptr))
		return r;
	*copy = *r;
	if (copy->file_copied < fwant && copy->file_ptr)
		copy->file_copied = (uint16_t)read_process(r->h.pid, r->file_ptr, copy->data, fwant);
	if (copy->type_copied < twant && copy->type_ptr)
		copy->type_copied = (uint16_t)read_process(r->h.pid, r->type_ptr,
							   copy->data + TET_FILE_MAX, twant);
	return copy;
}

