/* SPDX-License-Identifier: MIT */
/*
 * run_dump.h — how a flight-recorder dump is written, whatever the mode (run_dump.c): a forked
 * child writes the files from a copy-on-write snapshot of the recorder while it goes on
 * capturing; the dump's name (flight.h's fr_dump_name), --dump-max-bytes after it, and its
 * hand-over to --on-dump's command. What the child writes is the mode's (fr_dumper.write):
 * run_dump.c's own for the analyzer's modes, run_sampling.c's for --mode sampling.
 */
#ifndef TET_RUN_DUMP_H
#define TET_RUN_DUMP_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "flight_rt.h"

struct tet_msgs;

/* A dump's files: NAME.json, NAME.html, NAME.trace.json (--on-dump's "$@", in this order) */
#define FR_DUMP_FILES 3
extern const char *const fr_dump_ext[FR_DUMP_FILES];

struct fr_dumper {
	const struct flight_opts *fo;
	struct fr_rt *fl;
	const struct tet_msgs *msgs;
	const char *exe;             /* names the dumps (its last path component) */
	/* In the child: writes the dump p into fo->dir as name.{fr_dump_ext} (each through a
	 * temporary file), then calls fr_dump_budget; returns the child's exit status. */
	int (*write)(void *ctx, const struct fr_pending *p, const char *name);
	void *ctx;
	pid_t child;                 /* the dump being written */
	char name[300];              /* … its name (made before the fork: --on-dump's paths) */
	pid_t hook;                  /* --on-dump's command running (its process group) */
	uint64_t hook_dump;          /* … for that dump */
	char hook_name[300];         /* … that dump's name: the budget does not remove it */
	char hook_trigger[128];      /* TET_DUMP_TRIGGER of the dump being written */
};

/* Starts the first queued dump when it is due and no other is being written (now_anyway: any
 * queued one, and waits for it); reaps the dump and --on-dump's command that ended. */
void fr_dump_poll(struct fr_dumper *d, bool now_anyway);
/* In the child, after its files: the dump directory held to --dump-max-bytes (never removing
 * the dump just written nor the one --on-dump's command reads). */
void fr_dump_budget(const struct fr_dumper *d, const char *name);
/* The wall clock of two CLOCK_MONOTONIC times (the window's start, the trigger). */
void fr_dump_wall(uint64_t from, uint64_t trig_at, struct timespec *start, struct timespec *trig);
/* The recorder's first line: the window, where and on what it dumps. */
void fr_dump_announce(const struct fr_dumper *d);
/* The recorder's end: waits for the dump being written. */
void fr_dump_wait(struct fr_dumper *d);

#endif
