// SPDX-License-Identifier: MIT
/*
 * ratectl.c — adaptive sampling's rule (ratectl.h).
 */
#include "events.h"
#include "ratectl.h"

void rc_init(struct rc *c, uint32_t floor, double max_cpu)
{
	*c = (struct rc){ 0 };
	c->floor = floor ? floor : 1;
	c->max_cpu = max_cpu > 0 ? max_cpu : 0; /* 0: no budget */
	c->rate = c->floor;
}

/* The rate k times as strict, in the 2^j − 1 series (ratectl.h). */
static uint32_t times(uint32_t rate, uint64_t k)
{
	uint64_t r = ((uint64_t)rate + 1) * k - 1;

	return r > RC_RATE_MAX ? (rate > RC_RATE_MAX ? rate : RC_RATE_MAX) : (uint32_t)r;
}

static uint32_t change(struct rc *c, uint64_t now, uint32_t rate, uint32_t why_code, uint32_t *why)
{
	if (rate == c->rate)
		return c->rate;
	if (rate > c->rate)
		c->last_raise_ns = now;
	else
		c->last_lower_ns = now;
	c->rate = rate;
	c->last_change_ns = now;
	c->calm_since_ns = 0;
	*why = why_code;
	return rate;
}

/* The oldest look taken at or after `since` (the newest when none is). */
static const struct rc_look *look_since(const struct rc *c, uint64_t since)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct rc_look *l = &c->looks[(c->head + i) % RC_LOOKS];

		if (l->ns >= since)
			return l;
	}
	return &c->looks[(c->head + c->n - 1) % RC_LOOKS];
}

/* The factor that keeps the ring from filling within RC_HORIZON_NS at the input measured at
 * the rate in force (1: it will not, or not measured yet). */
static uint64_t shortfall(const struct rc *c, const struct rc_look *l)
{
	const struct rc_look *a = look_since(c, c->last_change_ns + (c->last_change_ns ? RC_SWITCH_NS : 0));
	const struct rc_look *b = look_since(c, l->ns > RC_DRAIN_WINDOW_NS ? l->ns - RC_DRAIN_WINDOW_NS : 0);
	double in, out, room;
	uint64_t k = 1, used = l->in > l->out ? l->in - l->out : 0;

	if (l->ns < a->ns + RC_MEASURE_NS || l->in < a->in || l->ns <= b->ns || l->out < b->out)
		return 1;
	in = (double)(l->in - a->in) / (double)(l->ns - a->ns);      /* bytes per ns */
	out = (double)(l->out - b->out) / (double)(l->ns - b->ns);
	room = l->size > used ? (double)(l->size - used) / (double)RC_HORIZON_NS : 0;
	if (in <= out + room)
		return 1;
	while (k < 64 && in / (double)k > out + room)
		k *= 2;
	return k < 2 ? 2 : k;
}

uint32_t rc_step(struct rc *c, const struct rc_look *l, uint32_t *why)
{
	const struct rc_look *prev = c->n ? &c->looks[(c->head + c->n - 1) % RC_LOOKS] : NULL;
	uint64_t now = l->ns, lost = prev && l->lost > prev->lost ? l->lost - prev->lost : 0;
	double fill = l->size && l->in > l->out ? (double)(l->in - l->out) / (double)l->size : 0;
	uint32_t r = c->rate;
	bool settled, calm;

	if (c->n == RC_LOOKS) {
		c->head = (c->head + 1) % RC_LOOKS;
		c->n--;
	}
	c->looks[(c->head + c->n++) % RC_LOOKS] = *l;
	if (!prev) {
		c->win_start_ns = c->last_change_ns = now;
		c->win_cpu_ns = l->cpu_ns;
		return c->rate;
	}
	if (now - c->win_start_ns >= RC_CPU_WINDOW_NS) {
		c->cpu = l->cpu_ns > c->win_cpu_ns ?
			 (double)(l->cpu_ns - c->win_cpu_ns) / (double)(now - c->win_start_ns) : 0;
		c->win_start_ns = now;
		c->win_cpu_ns = l->cpu_ns;
	}
	settled = !c->last_lower_ns || now - c->last_lower_ns >= RC_SETTLE_NS;
	if (settled && (fill >= RC_FILL_ACT || lost)) {
		uint64_t k = shortfall(c, l);

		if (k > 1)
			return change(c, now, times(c->rate, k), lost ? TET_RATE_LOSS : TET_RATE_RING,
				      why);
	}
	if (settled && c->max_cpu > 0 && c->cpu > c->max_cpu &&
	    (!c->last_raise_ns || now - c->last_raise_ns >= RC_CPU_WINDOW_NS)) {
		c->cpu = 0; /* judged again on a window after this raise */
		return change(c, now, times(c->rate, 2), TET_RATE_CPU, why);
	}
	calm = !lost && fill < 0.05 && (c->max_cpu <= 0 || c->cpu < c->max_cpu / 3);
	if (!calm) {
		c->calm_since_ns = 0;
		return c->rate;
	}
	if (!c->calm_since_ns)
		c->calm_since_ns = now;
	if (c->rate > c->floor && now - c->calm_since_ns >= RC_CALM_NS &&
	    now - c->last_change_ns >= RC_CALM_NS) {
		r = (c->rate + 1) / 2 - 1;
		return change(c, now, r < c->floor ? c->floor : r, TET_RATE_CALM, why);
	}
	return c->rate;
}
