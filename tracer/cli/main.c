// SPDX-License-Identifier: MIT
/*
 * main.c — tokio-ebpf-trace: command dispatch (bpftool style).
 *
 *   tokio-ebpf-trace COMMAND [ARGS]     list | check | trace | help
 *   tokio-ebpf-trace --pid PID …        any first argument starting with '-' (other than
 *                                       -h/--help/-V/--version) runs `trace`
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

static void usage(FILE *out)
{
	fprintf(out,
"Usage: %s COMMAND [ARGS]\n"
"       %s --pid PID | --binary FILE [TRACE OPTIONS]   (same as `trace`)\n"
"Trace Tokio tasks with eBPF: USDT probes of a patched Tokio, or uprobes on a stock one.\n"
"\n"
"Commands:\n"
"  list   FILE | -p PID [--json] [-v] [PROVIDER[:NAME]]\n"
"         list the SDT probes (.note.stapsdt) of a file or of every ELF a process maps\n"
"  check  FILE | -p PID [--json]\n"
"         tell whether tracing will work: Tokio probe dialect, missing probes, sites,\n"
"         semaphores, kernel features, permissions, and the attach mode\n"
"  trace  [OPTIONS]    trace a process (see `%s trace --help`)\n"
"  help   [COMMAND]    this text, or a command's\n"
"\n"
"Options:\n"
"  -h, --help     show this help\n"
"  -V, --version  show the version\n"
"\n"
"Exit status (every command; docs/cli.md):\n"
"  0  ok: done (check: ready, USDT probes)\n"
"  1  lacks probes: check: no usable Tokio probes, uprobe fallback only\n"
"  2  cannot trace: check: neither, or the kernel/permissions forbid it; trace: it failed\n"
"  3  usage error\n"
"  4  bad input: file, PID\n"
"\n"
"Examples:\n"
"  %s list /usr/bin/python3.11            # SDT probes of a binary, like readelf -n\n"
"  %s list -p 1234 --json 'tokio:task_*'  # Tokio probes of a running process, JSON\n"
"  %s check ./target/release/server       # will tracing work? (exit 0/1/2)\n"
"  %s check -p $(pidof server) --json\n"
"  %s --pid 1234                          # trace a process\n"
"See docs/cli.md.\n",
		TET_PROG, TET_PROG, TET_PROG, TET_PROG, TET_PROG, TET_PROG, TET_PROG, TET_PROG);
}

static int do_help(int argc, char **argv);

static const struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
} cmds[] = {
	{ "list", cmd_list },
	{ "check", cmd_check },
	{ "trace", cmd_trace },
	{ "help", do_help },
};

static const struct cmd *find_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(cmds[i].name, name) == 0)
			return &cmds[i];
	return NULL;
}

static int do_help(int argc, char **argv)
{
	const struct cmd *c;
	char *sub[3];

	if (argc < 2 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	c = find_cmd(argv[1]);
	if (!c) {
		p_err("unknown command '%s' (try '%s --help')", argv[1], TET_PROG);
		return TET_EXIT_USAGE;
	}
	sub[0] = argv[1];
	sub[1] = (char *)"--help";
	sub[2] = NULL;
	return c->fn(2, sub);
}

int main(int argc, char **argv)
{
	const struct cmd *c;
	const char *a;

	if (argc < 2) {
		usage(stderr);
		return TET_EXIT_USAGE;
	}
	a = argv[1];
	if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
		printf("%s %s\n", TET_PROG, TET_VERSION);
		return 0;
	}
	if (a[0] == '-')
		return cmd_trace(argc, argv);
	c = find_cmd(a);
	if (!c) {
		p_err("unknown command '%s' (try '%s --help')", a, TET_PROG);
		return TET_EXIT_USAGE;
	}
	return c->fn(argc - 1, argv + 1);
}
