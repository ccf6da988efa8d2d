// SPDX-License-Identifier: MIT
/* thresholds.c — thresholds.def's rows as data, their values parsed and written by unit (see
 * thresholds.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "seterr.h"
#include "thresholds.h"
#include "units.h"

/* a RATIO row's member is a double, every other one a uint64_t: what the offsets assume */
#define AN_THRESHOLD(kind, option, unit, field, def, min, max, help)                           \
	_Static_assert(AN_UNIT_##unit == AN_UNIT_RATIO                                           \
		       ? __builtin_types_compatible_p(__typeof__(((struct an_opts *)0)->field), double) \
		       : __builtin_types_compatible_p(__typeof__(((struct an_opts *)0)->field), uint64_t), \
		       #field ": a double for a RATIO, else a uint64_t");
#include "thresholds.def"

const struct an_threshold an_thresholds[AN_THRESHOLDS] = {
#define AN_THRESHOLD(kind, option, unit, field, def, min, max, help)                           \
	[AN_TH_##field] = { AN_##kind, option, AN_UNIT_##unit, #field,                           \
			    offsetof(struct an_opts, field), (uint64_t)(def), (uint64_t)(min),    \
			    (uint64_t)(max), (double)(def), (double)(min), (double)(max), help },
#include "thresholds.def"
};

const char *an_unit_metavar(enum an_unit u)
{
	static const char *const names[] = {
		[AN_UNIT_DURATION] = "D", [AN_UNIT_RATIO] = "R", [AN_UNIT_COUNT] = "N",
		[AN_UNIT_SIZE] = "SIZE",
	};

	return (unsigned)u < sizeof(names) / sizeof(names[0]) ? names[u] : "?";
}

int an_threshold_parse(const struct an_threshold *t, const char *s, struct an_opts *o,
		       char *err, size_t len)
{
	char why[256];
	uint64_t v = 0;
	double r = 0;
	int ret;

	switch (t->unit) {
	case AN_UNIT_DURATION:
		ret = parse_duration(s, t->min, t->max, &v, why, sizeof(why));
		break;
	case AN_UNIT_COUNT:
		ret = parse_whole(s, t->min, t->max, &v, why, sizeof(why));
		break;
	case AN_UNIT_SIZE:
		ret = parse_byte_size(s, &v, why, sizeof(why));
		if (!ret && (v < t->min || v > t->max)) {
			snprintf(why, sizeof(why), "'%s': must be between %llu and %llu bytes", s,
				 (unsigned long long)t->min, (unsigned long long)t->max);
			ret = -ERANGE;
		}
		break;
	case AN_UNIT_RATIO:
		ret = parse_ratio(s, t->rmin, t->rmax, &r, why, sizeof(why));
		break;
	default:
		snprintf(why, sizeof(why), "'%s': no unit %d", s, (int)t->unit);
		ret = -EINVAL;
	}
	if (ret) {
		seterr(err, len, "--%s %s", t->option, why);
		return ret;
	}
	if (t->unit == AN_UNIT_RATIO)
		*(double *)((char *)o + t->offset) = r;
	else
		*(uint64_t *)((char *)o + t->offset) = v;
	return 0;
}

const char *an_threshold_format(const struct an_threshold *t, const struct an_opts *o,
				char *buf, size_t len)
{
	const void *at = o ? (const char *)o + t->offset : NULL;
	uint64_t v = t->def;
	double r = t->rdef;

	if (at && t->unit == AN_UNIT_RATIO)
		r = *(const double *)at;
	else if (at)
		v = *(const uint64_t *)at;
	switch (t->unit) {
	case AN_UNIT_DURATION:
		return fmt_duration(v, buf, len);
	case AN_UNIT_SIZE:
		return fmt_byte_size(v, buf, len);
	case AN_UNIT_RATIO:
		snprintf(buf, len, "%g", r);
		if (strtod(buf, NULL) != r) /* "%g" keeps 6 digits: all of them then */
			snprintf(buf, len, "%.17g", r);
		return buf;
	default:
		snprintf(buf, len, "%llu", (unsigned long long)v);
		return buf;
	}
}
