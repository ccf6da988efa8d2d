// SPDX-License-Identifier: MIT
/* units.c — durations, counts, sizes and ratios parsed and formatted (see units.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

static const struct {
	const char *name;
	uint64_t ns;
} units[] = {
	{ "ns", 1 }, { "us", NSEC_PER_USEC }, { "\xc2\xb5s", NSEC_PER_USEC },
	{ "ms", NSEC_PER_MSEC }, { "s", NSEC_PER_SEC }, { "m", 60 * NSEC_PER_SEC },
	{ "h", 3600 * NSEC_PER_SEC },
};

int parse_duration(const char *s, uint64_t min_ns, uint64_t max_ns, uint64_t *out,
		   char *err, size_t errlen)
{
	uint64_t ipart = 0, frac = 0, frac_div = 1, mult = 0, ns;
	const char *p = s;
	char minb[32];
	int digits = 0;

	if (!s || !*s) {
		snprintf(err, errlen, "empty duration (use e.g. 30s, 500ms)");
		return -EINVAL;
	}
	if (*p == '-') {
		snprintf(err, errlen, "'%s': negative duration", s);
		return -ERANGE;
	}
	for (; *p >= '0' && *p <= '9'; p++, digits++) {
		if (ipart > (UINT64_MAX - 9) / 10) {
			snprintf(err, errlen, "'%s': duration overflows", s);
			return -ERANGE;
		}
		ipart = ipart * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		p++;
		for (; *p >= '0' && *p <= '9'; p++, digits++) {
			if (frac_div <= UINT64_MAX / 100) { /* keep 18 fractional digits at most */
				frac = frac * 10 + (uint64_t)(*p - '0');
				frac_div *= 10;
			}
		}
	}
	if (!digits) {
		snprintf(err, errlen, "'%s': not a duration (use a number and a unit, e.g. 30s, 500ms)", s);
		return -EINVAL;
	}
	if (!*p) {
		snprintf(err, errlen, "'%s': missing unit (ns, us, ms, s, m or h)", s);
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(p, units[i].name))
			mult = units[i].ns;
	if (!mult) {
		snprintf(err, errlen, "'%s': unknown unit '%s' (ns, us, ms, s, m or h)", s, p);
		return -EINVAL;
	}
	if (ipart > UINT64_MAX / mult) {
		snprintf(err, errlen, "'%s': duration overflows", s);
		return -ERANGE;
	}
	ns = ipart * mult;
	/* fraction: frac/frac_div × mult, rounded; frac_div ≤ 1e18 so compute in long double */
	if (frac) {
		long double f = (long double)frac / (long double)frac_div * (long double)mult + 0.5L;

		if ((long double)(UINT64_MAX - ns) < f) {
			snprintf(err, errlen, "'%s': duration overflows", s);
			return -ERANGE;
		}
		ns += (uint64_t)f;
	}
	if (ns < min_ns) {
		snprintf(err, errlen, "'%s': must be at least %s", s,
			 min_ns <= 1 ? "1ns" : fmt_duration(min_ns, minb, sizeof(minb)));
		return -ERANGE;
	}
	if (ns > max_ns) {
		snprintf(err, errlen, "'%s': must be at most %s", s,
			 fmt_duration(max_ns, minb, sizeof(minb)));
		return -ERANGE;
	}
	*out = ns;
	return 0;
}

const char *fmt_duration(uint64_t ns, char *buf, size_t len)
{
	static const struct {
		uint64_t div;
		const char *unit;
	} scale[] = {
		{ 3600 * NSEC_PER_SEC, "h" }, { 60 * NSEC_PER_SEC, "m" }, { NSEC_PER_SEC, "s" },
		{ NSEC_PER_MSEC, "ms" }, { NSEC_PER_USEC, "\xc2\xb5s" },
	};

	for (size_t i = 0; i < sizeof(scale) / sizeof(scale[0]); i++) {
		double v;

		if (ns < scale[i].div)
			continue;
		char num[32], *dot, *e;

		v = (double)ns / (double)scale[i].div;
		if (scale[i].div >= 60 * NSEC_PER_SEC && v < 100)
			snprintf(num, sizeof(num), "%.1f", v);
		else
			snprintf(num, sizeof(num), v < 10 ? "%.2f" : v < 100 ? "%.1f" : "%.0f", v);
		/* "10.0" → "10", "1.50" → "1.5" */
		dot = strchr(num, '.');
		if (dot) {
			for (e = num + strlen(num) - 1; e > dot && *e == '0'; e--)
				*e = 0;
			if (e == dot)
				*e = 0;
		}
		snprintf(buf, len, "%s%s", num, scale[i].unit);
		return buf;
	}
	snprintf(buf, len, "%lluns", (unsigned long long)ns);
	return buf;
}

int parse_whole(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err,
		size_t errlen)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (!*s || *s == '-' || *s == '+') {
		snprintf(err, errlen, "'%s': expected a whole number", s);
		return -EINVAL;
	}
	v = strtoull(s, &end, 10);
	if (*end || errno) {
		snprintf(err, errlen, "'%s': expected a whole number", s);
		return -EINVAL;
	}
	if (v < min || v > max) {
		snprintf(err, errlen, "'%s': must be between %llu and %llu", s,
			 (unsigned long long)min, (unsigned long long)max);
		return -ERANGE;
	}
	*out = v;
	return 0;
}

static const struct {
	const char *suffix;
	unsigned shift;
} size_units[] = { { "T", 40 }, { "G", 30 }, { "M", 20 }, { "K", 10 }, { "k", 10 } };

int parse_byte_size(const char *s, uint64_t *out, char *err, size_t errlen)
{
	unsigned long long v, mult = 1;
	char *end;

	errno = 0;
	v = *s >= '0' && *s <= '9' ? strtoull(s, &end, 10) : 0;
	if (*s < '0' || *s > '9' || errno) {
		snprintf(err, errlen, "'%s': expected a size such as 256M", s);
		return -EINVAL;
	}
	for (size_t i = 0; *end && i < sizeof(size_units) / sizeof(size_units[0]); i++)
		if (!strcmp(end, size_units[i].suffix))
			mult = 1ull << size_units[i].shift;
	if (*end && mult == 1) {
		snprintf(err, errlen, "'%s': unknown unit '%s' (K, M, G or T)", s, end);
		return -EINVAL;
	}
	*out = v > UINT64_MAX / mult ? UINT64_MAX : v * mult;
	return 0;
}

const char *fmt_byte_size(uint64_t n, char *buf, size_t len)
{
	for (size_t i = 0; n && i < sizeof(size_units) / sizeof(size_units[0]); i++) {
		uint64_t unit = 1ull << size_units[i].shift;

		if (n % unit == 0) {
			snprintf(buf, len, "%llu%s", (unsigned long long)(n / unit), size_units[i].suffix);
			return buf;
		}
	}
	snprintf(buf, len, "%llu", (unsigned long long)n);
	return buf;
}

int parse_ratio(const char *s, double min, double max, double *out, char *err, size_t errlen)
{
	char *end;
	double r;

	errno = 0;
	r = strtod(s, &end);
	if (!*s || *end || errno || !(r > min && r <= max)) {
		snprintf(err, errlen, "'%s': expected a number in (%g, %g]", s, min, max);
		return -EINVAL;
	}
	*out = r;
	return 0;
}
