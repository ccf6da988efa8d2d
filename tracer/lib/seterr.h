/* SPDX-License-Identifier: MIT */
/*
 * seterr.h — how a library below the command layer tells what went wrong (libbpf style):
 *   - its error: a return of 0 or -errno, and one line in the caller's buffer (err, len);
 *   - anything else it must say (a warning, a file written, a second error while it carries
 *     on): a struct tet_msgs callback the command layer sets (tracer/cli/common.c: cli_msgs).
 * Only tracer/cli/ prints.
 */
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

enum tet_msg_level {
	TET_MSG_ERROR,   /* printed as the command's errors ("PROG: MESSAGE"; JSON too in -j) */
	TET_MSG_WARN,    /* "PROG: warning: MESSAGE" */
	TET_MSG_INFO,    /* "PROG: MESSAGE" on stderr */
};
struct tet_msgs {
	void (*say)(void *ctx, enum tet_msg_level level, const char *msg); /* NULL: silent */
	void *ctx;
};

/* One message to msgs (may be NULL), printf-style; at most TET_MSG_MAX bytes are kept. */
#define TET_MSG_MAX 4352 /* PATH_MAX and a sentence */
static inline void tet_say(const struct tet_msgs *msgs, enum tet_msg_level level,
			   const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline void tet_say(const struct tet_msgs *msgs, enum tet_msg_level level,
			   const char *fmt, ...)
{
	char msg[TET_MSG_MAX];
	va_list ap;

	if (!msgs || !msgs->say)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	msgs->say(msgs->ctx, level, msg);
}

#endif
