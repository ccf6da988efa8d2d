// SPDX-License-Identifier: MIT
/*
 * run_meta.c — what the live run (run.c) and a flight-recorder dump (run_dump.c) both need:
 * the clock, the fd table's answer for io_uring requests, the losses (drops seen at each
 * reading of the counters, the tasks that lost events) and the kernel side's figures.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "run_int.h"
#include "seterr.h"

uint64_t run_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* What fd `fd` of process `pid` is, as its fd table says (io_uring requests in flight). */
int run_fd_target(void *ctx, uint32_t pid, int32_t fd, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	(void)ctx;
	if (fd < 0 || len < 2)
		return -1;
	snprintf(path, sizeof(path), "/proc/%u/fd/%d", pid, fd);
	n = readlink(path, buf, len - 1);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return 0;
}

/* The kernel side's answer for the reports (before the BPF objects are closed). */
void run_why_meta(struct run *r, struct why_report *w, const struct analyzer *an,
		  const struct tet_counters *c)
{
	const struct tet_sched_info *si = tet_session_sched(r->sess);

	w->sched = si->on;
	w->why_no_sched = si->why_no_sched;
	w->profile_hz = si->profile_hz;
	w->why_no_profile = si->why_no_profile;
	w->steal = si->steal;
	w->why_no_steal = si->why_no_steal;
	if ((si->on || si->profile_hz) &&
	    why_build(w, an, tet_session_stacks_fd(r->sess), r->ss, c))
		tet_say(r->msgs, TET_MSG_WARN, "out of memory: the stacks of the report are incomplete");
}

/* ---- lost events: the findings they could explain are set aside (an_lost_task) ---- */
uint64_t run_drops_total(const struct tet_counters *c)
{
	uint64_t n = 0;

	for (int i = 0; i < TET_EV_COUNT; i++)
		n += c->drops[i];
	return n;
}

void run_loss_track(struct loss_track *lt, struct analyzer *an, const struct tet_counters *c,
		    uint64_t now)
{
	uint64_t d = run_drops_total(c);

	if (d > lt->drops && an)
		an_loss_window(an, lt->since > lt->margin ? lt->since - lt->margin : 0, now);
	lt->drops = d;
	lt->since = now;
}

/* The tasks that lost events (BPF lost_tasks), when the capture can tell them; else, or when
 * the map overflowed, the windows decide. */
void run_lost_tasks_to(struct analyzer *an, struct tet_session *sess, const struct tet_counters *c)
{
	struct { uint32_t tgid, pad; uint64_t task; } k, next;
	int fd = tet_session_lost_fd(sess);
	bool first = true;
	uint64_t types;

	while (fd >= 0 && !bpf_map_get_next_key(fd, first ? NULL : &k, &next)) {
		if (!bpf_map_lookup_elem(fd, &next, &types))
			an_lost_task(an, next.tgid, next.task, types);
		k = next;
		first = false;
	}
	if (fd < 0 || !c || c->lost_untracked)
		an_lost_by_task(an, false);
}
