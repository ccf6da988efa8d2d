/* SPDX-License-Identifier: MIT */
/*
 * check.h — the C unit tests' checks: each prints "ok - …" or "not ok - …" (TAP-like) and
 * counts; CHECK_U64 also prints what it got and wanted. Include in one file per test binary.
 */
#ifndef TET_TEST_CHECK_H
#define TET_TEST_CHECK_H
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

static int failed, run;

#define CHECK(cond, ...) check_((cond), #cond, __VA_ARGS__)
static bool check_(bool ok, const char *expr, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static bool check_(bool ok, const char *expr, const char *fmt, ...)
{
	va_list ap;

	run++;
	printf("%s - ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (!ok) {
		printf(" [%s]", expr);
		failed++;
	}
	printf("\n");
	return ok;
}
#define CHECK_U64(got, want, ...) \
	do { uint64_t g_ = (got), w_ = (want); \
	     if (!CHECK(g_ == w_, __VA_ARGS__)) printf("#   got %llu, want %llu\n", \
		(unsigned long long)g_, (unsigned long long)w_); } while (0)

#endif
