/* SPDX-License-Identifier: MIT */
/* units.h — durations, counts, sizes and ratios on the command line and in human output. The
 * parsers put a reason in err that the caller prefixes with the option ("--top '0': must be …"). */
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

/* A whole number in [min, max]: decimal digits only. -EINVAL "'S': expected a whole number",
 * -ERANGE "'S': must be between MIN and MAX". */
int parse_whole(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err,
		size_t errlen);

/* A byte count: a number and K, M, G or T (powers of 1024), or bytes without a unit; too large
 * saturates. The caller checks the range. -EINVAL with the reason. */
int parse_byte_size(const char *s, uint64_t *out, char *err, size_t errlen);

/* "1K", "256M", "1000": the largest unit that divides n exactly (parse_byte_size reads it back). */
const char *fmt_byte_size(uint64_t n, char *buf, size_t len);

/* A number in (min, max]. -EINVAL "'S': expected a number in (MIN, MAX]". */
int parse_ratio(const char *s, double min, double max, double *out, char *err, size_t errlen);

#endif
