/* SPDX-License-Identifier: MIT */
/*
 * ksched.h — the kernel side of "why a poll was slow" (bpf/sched.bpf.h), for every capture
 * session: sched_switch / sched_wakeup on the target's threads and a cpu-clock sampler, one
 * perf event per CPU. Whatever of it the kernel refuses is left out with a reason; the
 * capture goes on without it.
 */
#ifndef TET_SCHED_H
#define TET_SCHED_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bpf_program;

#define TET_PROFILE_HZ_DEFAULT 99   /* not a multiple of the usual timer rates (lockstep) */
#define TET_PROFILE_HZ_MAX 10000

struct tet_sched_opts {
	bool off;                 /* --no-sched: none of it */
	unsigned profile_hz;      /* 0: no CPU profile */
};

struct tet_sched_info {
	bool on;                  /* sched_switch/sched_wakeup attached */
	const char *why_no_sched;
	unsigned profile_hz;      /* 0: no CPU profile */
	const char *why_no_profile;
	size_t perf_events;       /* one per CPU */
	bool steal;               /* time the hypervisor takes from a poll is told apart (KVM's
				   * steal clock, sched.bpf.h); else it counts as on CPU */
	const char *why_no_steal;
	bool exits;               /* sched_process_exit attached: how the process ended is known
				   * (a fatal signal, a core dump, the exit status) */
	const char *why_no_exits;
};

struct tet_sched_progs {
	struct bpf_program *sw, *wk, *sample, *exit;
	bool *exit_group_dead_arg;    /* the object's rodata (before the load; NULL after) */
	bool *steal_clock;            /* … */
	int64_t *steal_rq_delta;      /* … */
};

/* Before the BPF object is loaded: can the kernel run the sched programs (BTF tracepoints
 * sched_switch and sched_wakeup; sched_process_exit, on even with --no-sched: it costs nothing
 * per event)? Sets the autoload of the four programs and returns whether any of them runs (the caller then sets its track_polls: the BPF side follows the polls open
 * per thread and, attached by path, the processes). */
bool tet_sched_prepare(const struct tet_sched_progs *p, const struct tet_sched_opts *o,
		       struct tet_sched_info *info);
/* After the load: attaches what was prepared. Never fails the capture: what cannot be attached
 * is off, with its reason in info. */
struct tet_sched;
struct tet_sched *tet_sched_attach(const struct tet_sched_progs *p, const struct tet_sched_opts *o,
				   struct tet_sched_info *info);
void tet_sched_detach(struct tet_sched *s);

/* The arguments of BTF tracepoint `name` (its btf_trace_* typedef), -1 when vmlinux BTF has
 * none. */
int tet_btf_tracepoint_args(const char *name);
/* Frees the vmlinux BTF the questions above parsed once (the next question parses it again). */
void tet_btf_release(void);

#endif
