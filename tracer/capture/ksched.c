// SPDX-License-Identifier: MIT
/*
 * ksched.c — attaches the kernel side of "why a poll was slow" (ksched.h, bpf/sched.bpf.h).
 *
 * The sampler is one software cpu-clock perf event per CPU (no hardware PMU needed, which
 * these VMs lack), pid -1: the BPF program keeps the target's threads. Per-thread events would
 * miss threads started later; per-CPU ones see them all.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "ksched.h"

struct tet_sched {
	struct bpf_link *sw, *wk, *exit;
	struct bpf_link **perf;
	size_t nperf;
};

/* vmlinux BTF, parsed once for the questions a capture's set-up asks of it (~40 ms a parse;
 * a batched capture asks seven): kept from the first question until tet_btf_release, which
 * the backends call before they load their object (libbpf parses its own copy then). */
static struct btf *vm_btf;
static bool vm_btf_tried;

static struct btf *vmlinux_btf(void)
{
	if (!vm_btf_tried) {
		vm_btf = btf__load_vmlinux_btf();
		vm_btf_tried = true;
	}
	return vm_btf;
}

void tet_btf_release(void)
{
	btf__free(vm_btf);
	vm_btf = NULL;
	vm_btf_tried = false;
}

/* The arguments of a BTF tracepoint (its btf_trace_* typedef: a pointer to a function whose
 * first parameter is the context), -1 when vmlinux BTF does not have it. */
int tet_btf_tracepoint_args(const char *name)
{
	const struct btf_type *t;
	struct btf *vm;
	int id, n = -1;

	vm = vmlinux_btf();
	if (!vm)
		return -1;
	id = btf__find_by_name_kind(vm, name, BTF_KIND_TYPEDEF);
	t = id > 0 ? btf__type_by_id(vm, (__u32)id) : NULL;
	if (t)
		t = btf__type_by_id(vm, t->type);                /* the pointer */
	if (t && btf_is_ptr(t))
		t = btf__type_by_id(vm, t->type);                /* the prototype */
	if (t && btf_is_func_proto(t))
		n = btf_vlen(t) - 1;
	return n;
}

static bool btf_has_tracepoint(const char *name)
{
	return tet_btf_tracepoint_args(name) >= 0;
}

/* Offset of per-CPU variable `name` in vmlinux BTF's .data..percpu, -1 if absent. */
static long long percpu_offset(const struct btf *vm, const char *name)
{
	int sec = btf__find_by_name_kind(vm, ".data..percpu", BTF_KIND_DATASEC);
	const struct btf_type *t = sec > 0 ? btf__type_by_id(vm, (__u32)sec) : NULL;
	const struct btf_var_secinfo *vs = t ? btf_var_secinfos(t) : NULL;

	for (int i = 0; t && i < btf_vlen(t); i++, vs++) {
		const struct btf_type *v = btf__type_by_id(vm, vs->type);

		if (v && btf_is_var(v) && !strcmp(btf__name_by_offset(vm, v->name_off), name))
			return vs->offset;
	}
	return -1;
}

/* KVM's per-CPU steal clock (struct kvm_steal_time steal_time, arch/x86/kernel/kvm.c), in any
 * kernel built as a KVM guest; the host fills it when it offers steal time (else it stays 0).
 * BPF reads it at its distance from the runqueue (sched.bpf.h): both variables' offsets, and
 * the cfs_rq → rq link the BPF side follows, must be in vmlinux BTF. */
static bool btf_steal_clock(int64_t *delta)
{
	long long st, rq;
	struct btf *vm;
	int cfs;

	if (getenv("TET_TEST_NO_STEAL_CLOCK")) /* tests: a kernel without it */
		return false;
	vm = vmlinux_btf();
	if (!vm)
		return false;
	st = percpu_offset(vm, "steal_time");
	rq = percpu_offset(vm, "runqueues");
	cfs = btf__find_by_name_kind(vm, "cfs_rq", BTF_KIND_STRUCT);
	if (cfs > 0) {
		const struct btf_type *t = btf__type_by_id(vm, (__u32)cfs);
		const struct btf_member *m = btf_members(t);
		int i;

		for (i = 0; i < btf_vlen(t); i++, m++)
			if (!strcmp(btf__name_by_offset(vm, m->name_off), "rq"))
				break;
		if (i == btf_vlen(t))
			cfs = -1;
	}
	if (st < 0 || rq < 0 || cfs <= 0)
		return false;
	*delta = st - rq;
	return true;
}

static bool btf_tracepoints(void)
{
	if (getenv("TET_TEST_NO_SCHED_TP")) /* tests: a kernel without them */
		return false;
	return btf_has_tracepoint("btf_trace_sched_switch") &&
	       btf_has_tracepoint("btf_trace_sched_wakeup");
}

bool tet_sched_prepare(const struct tet_sched_progs *p, const struct tet_sched_opts *o,
		       struct tet_sched_info *info)
{
	int exit_args = getenv("TET_TEST_NO_EXIT_TP") ? -1 : /* tests: a kernel without it */
			tet_btf_tracepoint_args("btf_trace_sched_process_exit");
	int64_t delta = 0;

	memset(info, 0, sizeof(*info));
	info->exits = exit_args >= 1;
	if (p->exit_group_dead_arg)
		*p->exit_group_dead_arg = exit_args >= 2;
	if (!info->exits)
		info->why_no_exits = "the kernel has no sched_process_exit BTF tracepoint: how the process ended (a crash, its signal) is not known";
	bpf_program__set_autoload(p->exit, info->exits);
	if (o->off)
		info->why_no_sched = "turned off (--no-sched)";
	else if (!btf_tracepoints())
		info->why_no_sched = "the kernel has no sched_switch/sched_wakeup BTF tracepoints: polls are not split into on-CPU, preempted and blocked time";
	info->on = !info->why_no_sched;
	bpf_program__set_autoload(p->sw, info->on);
	bpf_program__set_autoload(p->wk, info->on);
	bpf_program__set_autoload(p->sample, !o->off && o->profile_hz);
	if (o->off)
		info->why_no_steal = "turned off (--no-sched)";
	else if (!info->on)
		info->why_no_steal = "needs the sched tracepoints";
	else if (!btf_steal_clock(&delta))
		info->why_no_steal = "not a KVM guest (no steal clock): time a hypervisor takes from a poll counts as on CPU";
	info->steal = !info->why_no_steal;
	if (p->steal_clock) {
		*p->steal_clock = info->steal;
		*p->steal_rq_delta = info->steal ? delta : 0;
	}
	if (o->off)
		info->why_no_profile = "turned off (--no-sched)";
	else if (!o->profile_hz)
		info->why_no_profile = "turned off (--profile-hz 0)";
	return info->on || (!o->off && o->profile_hz) || info->exits;
}

static int perf_open(int cpu, unsigned hz)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.freq = 1;
	attr.sample_freq = hz;
	return (int)syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static void attach_sampler(struct tet_sched *s, const struct tet_sched_progs *p, unsigned hz,
			   struct tet_sched_info *info)
{
	int ncpu = libbpf_num_possible_cpus(), err = 0;

	if (ncpu <= 0 || !(s->perf = calloc((size_t)ncpu, sizeof(*s->perf)))) {
		info->why_no_profile = "out of memory";
		return;
	}
	for (int cpu = 0; cpu < ncpu; cpu++) {
		/* tests: a machine where perf_event_open is refused (perf_event_paranoid) */
		int fd = getenv("TET_TEST_NO_PERF") ? (errno = EACCES, -1) : perf_open(cpu, hz);
		struct bpf_link *l;

		if (fd < 0) {
			if (errno != ENODEV) /* an offline CPU */
				err = errno;
			continue;
		}
		l = bpf_program__attach_perf_event(p->sample, fd);
		if (!l) {
			err = errno;
			close(fd);
			continue;
		}
		s->perf[s->nperf++] = l;
	}
	if (!s->nperf) {
		info->why_no_profile = err == EACCES || err == EPERM ?
			"perf_event_open refused (perf_event_paranoid, CAP_PERFMON): no CPU profile" :
			"no cpu-clock perf event could be opened: no CPU profile";
		return;
	}
	info->profile_hz = hz;
	info->perf_events = s->nperf;
}

struct tet_sched *tet_sched_attach(const struct tet_sched_progs *p, const struct tet_sched_opts *o,
				   struct tet_sched_info *info)
{
	struct tet_sched *s = calloc(1, sizeof(*s));

	if (!s) {
		info->on = false;
		info->why_no_sched = info->why_no_profile = info->why_no_exits = "out of memory";
		info->why_no_steal = "out of memory";
		info->exits = info->steal = false;
		return NULL;
	}
	if (info->on) {
		s->sw = bpf_program__attach(p->sw);
		s->wk = s->sw ? bpf_program__attach(p->wk) : NULL;
		if (!s->sw || !s->wk) {
			bpf_link__destroy(s->sw);
			s->sw = NULL;
			info->on = false;
			info->why_no_sched = "the kernel refused the sched_switch/sched_wakeup programs: polls are not split into on-CPU, preempted and blocked time";
			info->steal = false;
			info->why_no_steal = "needs the sched tracepoints";
		}
	}
	if (!o->off && o->profile_hz)
		attach_sampler(s, p, o->profile_hz, info);
	if (info->exits && !(s->exit = bpf_program__attach(p->exit))) {
		info->exits = false;
		info->why_no_exits = "the kernel refused the sched_process_exit program: how the process ended (a crash, its signal) is not known";
	}
	return s;
}

void tet_sched_detach(struct tet_sched *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nperf; i++)
		bpf_link__destroy(s->perf[i]); /* closes the perf event too */
	free(s->perf);
	bpf_link__destroy(s->exit);
	bpf_link__destroy(s->wk);
	bpf_link__destroy(s->sw);
	free(s);
}
