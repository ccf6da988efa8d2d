// SPDX-License-Identifier: MIT
/*
 * common.c — what every command shares (commands.h), as bpftool keeps it in common.c: the
 * error and warning lines (JSON on stdout too in JSON mode), the messages of the libraries
 * below (seterr.h's tet_msgs), PID parsing.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "json.h"
#include "seterr.h"

bool json_output;

void p_err(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", TET_PROG, msg);
	if (json_output) {
		struct jw *w = jw_new(stdout, false);

		jw_obj_begin(w);
		jw_kstr(w, "error", msg);
		jw_obj_end(w);
		jw_finish(w);
	}
}

void p_warn(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: warning: ", TET_PROG);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* What a library says besides its error return (seterr.h), printed as the commands' own. */
static void cli_say(void *ctx, enum tet_msg_level level, const char *msg)
{
	switch (level) {
	case TET_MSG_ERROR:
		p_err("%s", msg);
		break;
	case TET_MSG_WARN:
		p_warn("%s", msg);
		break;
	default:
		fprintf(stderr, "%s: %s\n", TET_PROG, msg);
	}
}

const struct tet_msgs cli_msgs = { .say = cli_say };

void json_mode_prescan(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j") ||
		    !strcmp(argv[i], "--pretty"))
			json_output = true;
}

bool parse_pid(const char *s, int *pid)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || *end || errno || v <= 0 || v > INT_MAX) {
		p_err("invalid PID '%s'", s);
		return false;
	}
	*pid = (int)v;
	return true;
}
