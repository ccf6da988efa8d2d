// SPDX-License-Identifier: MIT
/* trace.c — placeholder until the tracer core lands (it replaces this file). */
#include <stdio.h>

#include "commands.h"

int cmd_trace(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "%s: tracing is not built yet\n", TET_PROG);
	return 2;
}
