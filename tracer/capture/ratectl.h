/* SPDX-License-Identifier: MIT */
/*
 * ratectl.h — adaptive sampling for batched capture: the rate the tracer asks the process for
 * (PROBES.md "Sampling"), raised when the tracer falls behind (the ring fills, batches are
 * lost, its CPU goes over --max-overhead) and lowered again once it keeps up with room to
 * spare. Pure: the capture measures and applies (batchcap.c); tests drive it with numbers.
 *
 * The rule. Rates are 2^k − 1 (1, 3, 7, 15, …, up to RC_RATE_MAX): each has every bit of the
 * lower ones, so the process, which reads the rate bit by bit from the sample_rate semaphores,
 * never sees a mix stricter than the new rate and the old one while the tracer changes them. Every look gives the ring's positions
 * (what the process has put in, what the tracer has taken out: bytes, ever growing), the
 * batches lost and the tracer's CPU time. With the ring half full (RC_FILL_ACT: a burst it
 * absorbs, such as a program spawning 200 000 tasks at once, changes nothing) or batches lost, the
 * input (measured from RC_SWITCH_NS after the rate last changed, over RC_MEASURE_NS at least) is compared with
 * what the tracer takes out (over the last RC_DRAIN_WINDOW_NS) plus what the free room can
 * absorb over RC_HORIZON_NS: above it, the rate is multiplied by the power of two that brings
 * the input under it (×2 to ×64, on rate + 1). So a ring that drains, or fills slowly enough, is left
 * alone however full (what it holds from before drains at the tracer's pace, whatever the
 * rate), and a tracer that gets no CPU at all (nice 10 under a saturated service) still has
 * a rate that keeps the ring from overflowing for a while. With a CPU budget (--max-overhead),
 * the tracer's CPU over the last RC_CPU_WINDOW_NS above it: ×2, at most once per window. Lower ÷2 after RC_CALM_NS
 * without a loss, with the ring under 5 % and the CPU under a third of the budget (if any), not within
 * RC_CALM_NS of the last change. No raise within RC_SETTLE_NS of a lowering (the process may
 * not have taken the lower rate yet: the analyzer holds the stricter one until then).
 */
#ifndef TET_RATECTL_H
#define TET_RATECTL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RC_RATE_MAX 32767u
#define RC_MEASURE_NS 20000000ull       /* 20 ms of input at the rate in force … */
#define RC_SWITCH_NS 15000000ull        /* … from 15 ms after a change on: the process takes a
					 * rate at a flush (≤ 4 ms), and meanwhile records every
					 * task (the old sites go before the new come) */
#define RC_DRAIN_WINDOW_NS 250000000ull /* 250 ms of output */
#define RC_HORIZON_NS 1000000000ull    /* the ring must not fill within 1 s */
#define RC_FILL_ACT 0.5                 /* the ring half full: a burst it absorbed is not a trend */
#define RC_CPU_WINDOW_NS 500000000ull   /* 500 ms */
#define RC_CALM_NS 2000000000ull        /* 2 s */
#define RC_SETTLE_NS 50000000ull        /* 50 ms */
#define RC_LOOKS 128                    /* looks kept (5 ms apart: 640 ms) */

/* One look at the capture. */
struct rc_look {
	uint64_t ns;              /* CLOCK_MONOTONIC */
	uint64_t in, out;         /* the ring's producer and consumer positions (bytes) */
	uint64_t size;            /* the ring's size (bytes) */
	uint64_t lost;            /* batches lost so far */
	uint64_t cpu_ns;          /* the tracer's CPU time so far */
};

struct rc {
	uint32_t floor;           /* the lowest rate (1: every task; 2^k − 1) */
	double max_cpu;           /* the tracer's CPU budget, in CPUs (0.5: half of one; 0: none) */
	uint32_t rate;
	uint64_t last_change_ns, last_raise_ns, last_lower_ns;
	uint64_t calm_since_ns;   /* 0: not calm */
	uint64_t win_start_ns, win_cpu_ns; /* the CPU window */
	double cpu;               /* the tracer's CPU over the last full window, in CPUs */
	struct rc_look looks[RC_LOOKS]; /* ring, newest at (head + n - 1) */
	size_t head, n;
};

void rc_init(struct rc *c, uint32_t floor, double max_cpu);
/* One look. Returns the rate to set (c->rate when it stays); *why (enum tet_rate_why) says
 * what moved it. */
uint32_t rc_step(struct rc *c, const struct rc_look *l, uint32_t *why);

#endif
