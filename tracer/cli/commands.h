/* SPDX-License-Identifier: MIT */
/*
 * commands.h — the command table of tokio-ebpf-trace (bpftool style) and the few helpers
 * every command shares.
 *
 * A command gets an argv ready for getopt_long(): argv[0] is the command's name ("list"),
 * or the program's name when `tokio-ebpf-trace --pid …` runs `trace` implicitly. It returns
 * the process exit status (TET_EXIT_*).
 */
#ifndef TET_COMMANDS_H
#define TET_COMMANDS_H
#include <errno.h>
#include <stdbool.h>

/* Exit statuses, shared by every command, the preflight and the kit: exits.def (documented
 * in --help and docs/cli.md; scripts/tet-vocab.sh gives the scripts the same names). */
enum tet_exit {
#define TET_EXIT(name, code, label, what) TET_EXIT_##name = code,
#include "exits.def"
#undef TET_EXIT
};

/* The exit status of a failed tet_discover() (discover.h), the same for check and trace: bad
 * input (no such process or file, not ELF, malformed), or cannot trace. */
static inline int tet_discover_exit(int err)
{
	return err == -ESRCH || err == -ENOENT || err == -EISDIR || err == -ENOEXEC ||
	       err == -EBADMSG ? TET_EXIT_INPUT : TET_EXIT_CANNOT;
}

#define TET_PROG "tokio-ebpf-trace"
#define TET_VERSION "0.1.0"

int cmd_list(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_trace(int argc, char **argv);

/* Set by a command that writes JSON: errors then go to stdout as {"error": "…"} too. */
extern bool json_output;

/* One line "tokio-ebpf-trace: MESSAGE" on stderr; in JSON mode also {"error":"MESSAGE"} on
 * stdout (call it only before the command has written anything else to stdout). */
void p_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "tokio-ebpf-trace: warning: MESSAGE" on stderr. */
void p_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Where libraries' messages other than their error return go (seterr.h): TET_MSG_ERROR as
 * p_err, TET_MSG_WARN as p_warn, TET_MSG_INFO as "tokio-ebpf-trace: MESSAGE" on stderr. */
struct tet_msgs;
extern const struct tet_msgs cli_msgs;
/* Sets json_output if argv holds --json, -j or --pretty: called before parsing the rest, so
 * that even errors about other arguments come out as JSON. */
void json_mode_prescan(int argc, char **argv);
/* Parses a PID (decimal, > 0); prints the error itself. */
bool parse_pid(const char *s, int *pid);

#endif
