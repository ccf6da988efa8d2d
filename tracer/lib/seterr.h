/* SPDX-License-Identifier: MIT */
/* seterr.h — a message into the caller's error buffer (err, len), printf-style. */
#ifndef TET_SETERR_H
#define TET_SETERR_H
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Inline: symbols.c is also built on its own into build/tests/fallback_symbols. */
static inline void seterr(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline void seterr(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

#endif
