/* SPDX-License-Identifier: MIT */
/*
 * thresholds.h — thresholds.def as data: one row per option that sets a detector's threshold,
 * what a value of it looks like (its unit), and a value read or written in text. The command
 * line parses options with it, `--help` prints its defaults with it, a unit test
 * (tests/unit/thresholds_test.c) reads every default back through it.
 */
#ifndef TET_THRESHOLDS_H
#define TET_THRESHOLDS_H
#include <stddef.h>
#include <stdint.h>

#include "analyzer.h"

enum an_unit {
	AN_UNIT_DURATION, /* "10ms": parse_duration, in ns */
	AN_UNIT_RATIO,    /* "0.5": a number in (min, max] */
	AN_UNIT_COUNT,    /* "3": a whole number */
	AN_UNIT_SIZE,     /* "1K": bytes, K/M/G/T */
};

struct an_threshold {
	enum an_finding_kind kind;    /* the kind it judges */
	const char *option;           /* its long option, without "--" */
	enum an_unit unit;
	const char *field;            /* the struct an_opts member; the JSON key */
	size_t offset;                /* … its offset: uint64_t, double for AN_UNIT_RATIO */
	uint64_t def, min, max;       /* DURATION (ns), COUNT, SIZE (bytes) */
	double rdef, rmin, rmax;      /* RATIO */
	const char *help;             /* `--help`'s line, without the default */
};

enum { /* thresholds.def's rows, in order: AN_TH_<field> */
#define AN_THRESHOLD(kind, option, unit, field, def, min, max, help) AN_TH_##field,
#include "thresholds.def"
	AN_THRESHOLDS,
};
extern const struct an_threshold an_thresholds[AN_THRESHOLDS];

/* What `--help` calls a value of the unit: "D", "R", "N", "SIZE". */
const char *an_unit_metavar(enum an_unit u);
/* Sets t's member of o from the option value s. Returns 0, or -EINVAL / -ERANGE with the
 * whole message in err ("--stall-threshold '0.1us': must be at least 1ms"). */
int an_threshold_parse(const struct an_threshold *t, const char *s, struct an_opts *o,
		       char *err, size_t len);
/* t's member of o (NULL: its default) as an option value that parses back to it ("10ms",
 * "0.5", "3", "1K"). */
const char *an_threshold_format(const struct an_threshold *t, const struct an_opts *o,
				char *buf, size_t len);

#endif
