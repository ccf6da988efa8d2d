/* SPDX-License-Identifier: MIT */
/*
 * vocab.h — the probe vocabulary of bpf/probes.def as lookups: names, argument counts, --probes
 * classes, code labels. Header-only (inline functions holding their tables), so the analyzer's
 * unit builds need no extra object.
 */
#ifndef TET_VOCAB_H
#define TET_VOCAB_H
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "events.h"

/* "task_poll_begin" for TET_EV_POLL_BEGIN; "?" out of range. */
static inline const char *tet_probe_name(unsigned ev)
{
	static const char *const names[TET_EV_COUNT] = {
#define TET_PROBE(name, e, argc, class, required) [TET_EV_##e] = #name,
#include "probes.def"
	};

	return ev < TET_EV_COUNT ? names[ev] : "?";
}

/* The enum tet_event of a probe name of this project's dialect, -1 if none. */
static inline int tet_probe_index(const char *name)
{
	for (unsigned i = 0; i < TET_EV_COUNT; i++)
		if (!strcmp(tet_probe_name(i), name))
			return (int)i;
	return -1;
}

static inline unsigned tet_probe_argc(unsigned ev)
{
	static const unsigned char argc_of[TET_EV_COUNT] = {
#define TET_PROBE(name, e, argc, class, required) [TET_EV_##e] = argc,
#include "probes.def"
	};

	return ev < TET_EV_COUNT ? argc_of[ev] : 0;
}

/* Every kit build has it (task_wait and task_meta came later: optional). */
static inline bool tet_probe_required(unsigned ev)
{
	static const bool req[TET_EV_COUNT] = {
#define TET_PROBE(name, e, argc, class, required) [TET_EV_##e] = required,
#include "probes.def"
	};

	return ev < TET_EV_COUNT && req[ev];
}

/* The batched-capture site names (event_batch, sample_rate): no events of their own. */
static inline bool tet_probe_is_site(const char *name)
{
	static const char *const sites[] = {
#define TET_SITE(name, argc, nsites) #name,
#include "probes.def"
	};

	for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++)
		if (!strcmp(sites[i], name))
			return true;
	return false;
}

/* The events (bits of enum tet_event) of a --probes class, 0 for no such class. */
static inline unsigned tet_class_mask(const char *class_name)
{
	static const struct { const char *class; unsigned ev; } member[] = {
#define TET_PROBE(name, e, argc, class, required) { #class, TET_EV_##e },
#include "probes.def"
	};
	unsigned mask = 0;

	for (size_t j = 0; j < sizeof(member) / sizeof(member[0]); j++)
		if (!strcmp(class_name, member[j].class))
			mask |= 1u << member[j].ev;
	return mask;
}

/* Probe classes of --probes, as bit masks over enum tet_event (bpf/probes.def TET_PROBE). */
#define TET_CLASS_SPAWN     tet_class_mask("spawn")
#define TET_CLASS_POLL      tet_class_mask("poll")
#define TET_CLASS_WAKER     tet_class_mask("waker")
#define TET_PROBES_ALL      ((1u << TET_EV_COUNT) - 1)

/* The --probes classes, in probes.def order: name and what they give. */
struct tet_class {
	const char *name;
	const char *what;
};

static inline size_t tet_classes(const struct tet_class **out)
{
	static const struct tet_class v[] = {
#define TET_CLASS(class, what) { #class, what },
#include "probes.def"
	};

	*out = v;
	return sizeof(v) / sizeof(v[0]);
}

/* The report label of a code ("pending", "mpsc_recv" …), NULL out of range. */
static inline const char *tet_code_label(enum tet_code_set set, unsigned value)
{
	static const char *const labels[TET_CODE_SETS][16] = {
#define TET_CODE(s, name, value, label) [TET_SET_##s][value] = label,
#include "probes.def"
	};

	return (unsigned)set < TET_CODE_SETS && value < 16 ? labels[set][value] : NULL;
}

#endif
