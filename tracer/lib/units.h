/* SPDX-License-Identifier: MIT */
/* units.h — durations on the command line and in human output. */
#ifndef TET_UNITS_H
#define TET_UNITS_H
#include <stddef.h>
#include <stdint.h>

#define NSEC_PER_USEC 1000ull
#define NSEC_PER_MSEC 1000000ull
#define NSEC_PER_SEC  1000000000ull

/*
 * Parses "<number><unit>": a decimal number (fraction allowed: "1.5s", "0.25ms") followed by
 * one of ns, us, µs, ms, s, m (minutes), h. No sign, no spaces, no exponent, unit required.
 * The result must lie in [min_ns, max_ns] after rounding to whole nanoseconds.
 * Returns 0, or -EINVAL with a reason in err ("missing unit", "not a number", …) or -ERANGE
 * ("must be at least 1ms", "overflows").
 */
int parse_duration(const char *s, uint64_t min_ns, uint64_t max_ns, uint64_t *out,
		   char *err, size_t errlen);

/* "1.52s", "830µs", "12ns": three significant digits, for terminal output. */
const char *fmt_duration(uint64_t ns, char *buf, size_t len);

#endif
