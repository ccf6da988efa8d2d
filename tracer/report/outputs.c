// SPDX-License-Identifier: MIT
/*
 * outputs.c — the report files of a capture (--output, repeatable, and --trace, --stacks,
 * --pprof; the flight recorder's dumps).
 *
 * What sits at the path decides how it is written, as a careful Unix tool does:
 *   nothing, or a regular file   written to a temporary file next to it (FILE.tmp.PID) and
 *                                renamed into place when complete: a reader never sees half a
 *                                report, a failed write leaves the old file as it was;
 *   a symlink                    followed: its target is what is written (the rules above and
 *                                below), the link itself is never replaced; a dangling one is
 *                                refused;
 *   a FIFO, a character device   opened and written as a stream (/dev/null, /dev/stdout, a
 *                                pipe someone reads);
 *   '-'                          stdout (JSON only);
 *   anything else                refused (a directory, a socket, a block device).
 * outputs_open() checks each path before tracing starts, so that an unwritable one fails at
 * once, but creates nothing: temporary files exist only while a report is written, and a
 * tracer killed during the capture leaves none behind. Errors name the path as given and the
 * reason the system gave for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "reporters.h"
#include "seterr.h"
#include "units.h"
#include "why.h"

enum out_format out_format_of(const char *path)
{
	const char *dot = strrchr(path, '.');

	if (dot && !strchr(dot, '/') && (!strcasecmp(dot, ".html") || !strcasecmp(dot, ".htm")))
		return OUT_HTML;
	return OUT_JSON;
}

const char *out_format_name(enum out_format f)
{
	switch (f) {
	case OUT_HTML:
		return "HTML report";
	case OUT_PERFETTO:
		return "trace";
	case OUT_STACKS:
		return "folded stacks";
	case OUT_PPROF:
		return "pprof profile";
	default:
		return "report";
	}
}

int outputs_add(struct outputs *o, const char *path, enum out_format fmt, char *err, size_t len)
{
	const char *flag = fmt == OUT_PERFETTO ? "--trace" : fmt == OUT_STACKS ? "--stacks" :
			   fmt == OUT_PPROF ? "--pprof" : "--output";

	if (!*path) {
		seterr(err, len, "%s: empty file name", flag);
		return -EINVAL;
	}
	if (!strcmp(path, "-") && fmt != OUT_JSON) {
		seterr(err, len, "%s -: only the JSON report can go to stdout", flag);
		return -EINVAL;
	}
	for (size_t i = 0; i < o->n; i++) {
		if (!strcmp(o->v[i].path, path)) {
			seterr(err, len, "%s %s: that file is already an output", flag, path);
			return -EINVAL;
		}
	}
	if (o->n == OUT_MAX) {
		seterr(err, len, "%s %s: at most %d output files", flag, path, OUT_MAX);
		return -EINVAL;
	}
	o->v[o->n].path = path;
	o->v[o->n].fmt = fmt;
	o->n++;
	return 0;
}

bool outputs_want(const struct outputs *o, enum out_format fmt)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->v[i].fmt == fmt)
			return true;
	return false;
}

bool outputs_stdout(const struct outputs *o)
{
	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->v[i].path, "-"))
			return true;
	return false;
}

static void file_abort(struct out_file *f)
{
	if (f->fp && f->fp != stdout)
		fclose(f->fp);
	if (f->tmp)
		unlink(f->tmp);
	free(f->tmp);
	free(f->real);
	f->fp = NULL;
	f->tmp = NULL;
	f->real = NULL;
}

/* Whether a file can be created in the directory of `path`. Returns 0 or -errno. */
static int dir_writable(const char *path)
{
	const char *slash = strrchr(path, '/');

	return fs_can_create(path, slash ? (size_t)(slash - path + 1) : 0);
}

/* Decides how f is written (see the top): f->stream, f->real (the path written, symlinks
 * resolved). Returns 0 or -errno, with *what saying more than strerror when it can. */
static int file_check(struct out_file *f, const char **what)
{
	struct stat st, lst;
	int fd, ret;

	*what = NULL;
	f->stream = false;
	if (lstat(f->path, &lst)) {
		if (errno != ENOENT)
			return -errno;
		f->real = strdup(f->path);             /* a new file */
		if (!f->real)
			return -ENOMEM;
		ret = dir_writable(f->real);
		if (ret == -ENOENT)
			*what = "its directory does not exist";
		return ret;
	}
	if (stat(f->path, &st)) {
		if (S_ISLNK(lst.st_mode) && errno == ENOENT) {
			*what = "a symlink to a missing file";
			return -ENOENT;
		}
		return -errno;
	}
	if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
		f->stream = true;
		f->real = strdup(f->path);
		return f->real ? 0 : -ENOMEM;
	}
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode)) {
		*what = "not a regular file, FIFO or character device";
		return -EINVAL;
	}
	f->real = realpath(f->path, NULL);     /* a symlink's target is replaced, not the link */
	if (!f->real)
		return -errno;
	fd = open(f->real, O_WRONLY | O_CLOEXEC); /* no truncation: only asks */
	if (fd < 0)
		return -errno;
	close(fd);
	ret = dir_writable(f->real);
	if (ret) { /* e.g. /proc/version: writable in place, but no file can be made next to it */
		static char why[PATH_MAX + 128];
		const char *slash = strrchr(f->real, '/');

		snprintf(why, sizeof(why), "it is replaced through a temporary file next to it, which %.*s/ does not allow (%s)",
			 slash ? (int)(slash - f->real) : 1, slash ? f->real : ".", strerror(-ret));
		*what = why;
	}
	return ret;
}

int outputs_open(struct outputs *o, char *err, size_t len)
{
	for (size_t i = 0; i < o->n; i++) {
		struct out_file *f = &o->v[i];
		const char *what;
		int ret;

		if (!strcmp(f->path, "-"))
			continue;
		ret = file_check(f, &what);
		if (ret) {
			seterr(err, len, "cannot write the %s %s: %s", out_format_name(f->fmt),
			       f->path, what ? what : strerror(-ret));
			outputs_abort(o);
			return ret;
		}
	}
	return 0;
}

/* At write time: the stream, or a new temporary file next to the file written. */
static int file_start(struct out_file *f)
{
	int fd;

	if (!strcmp(f->path, "-")) {
		f->fp = stdout;
		return 0;
	}
	if (!f->real) /* outputs_open() was not called */
		return -EINVAL;
	if (f->stream) {
		/* a FIFO nobody reads is an error (ENXIO), not a hang; then blocking writes */
		fd = open(f->real, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 && errno == ENXIO)
			return -ENXIO;
		if (fd >= 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)) {
			int e = errno;

			close(fd);
			return -e;
		}
	} else {
		if (asprintf(&f->tmp, "%s.tmp.%d", f->real, (int)getpid()) < 0) {
			f->tmp = NULL;
			return -ENOMEM;
		}
		fd = open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	}
	if (fd < 0)
		return -errno;
	f->fp = fdopen(fd, "w");
	if (!f->fp) {
		int e = errno;

		close(fd);
		return -e;
	}
	return 0;
}

static int file_commit(struct out_file *f)
{
	int ret = 0;

	if (f->fp == stdout) {
		f->fp = NULL;
		return fflush(stdout) ? -EIO : 0;
	}
	if (fclose(f->fp))
		ret = -errno;
	f->fp = NULL;
	if (!ret && f->tmp && rename(f->tmp, f->real))
		ret = -errno;
	if (f->tmp && ret)
		unlink(f->tmp);
	free(f->tmp);
	f->tmp = NULL;
	return ret;
}

static void say_perfetto(const struct out_file *f, const struct perfetto_stats *st,
		      const struct tet_msgs *msgs)
{
	char from[32];

	tet_say(msgs, TET_MSG_INFO, "trace written to %s (%llu events: %llu polls, %llu wakes with %llu flow arrows, %llu parks)",
		f->path, (unsigned long long)st->events, (unsigned long long)st->polls,
		(unsigned long long)st->wakes, (unsigned long long)st->flows,
		(unsigned long long)st->parks);
	if (st->kept < st->total)
		tet_say(msgs, TET_MSG_INFO, "the trace was cut: it keeps the last %llu of %llu timeline events (from +%s); raise --timeline-events to keep more",
			(unsigned long long)st->kept, (unsigned long long)st->total,
			fmt_duration(st->cut_before_ns, from, sizeof(from)));
}

int outputs_write(struct outputs *o, const struct analyzer *a, const struct report_meta *m,
		  const struct tet_msgs *msgs)
{
	int status = 0;

	for (size_t i = 0; i < o->n; i++) {
		struct out_file *f = &o->v[i];
		struct perfetto_stats st = { 0 };
		int ret;

		if (!f->real && strcmp(f->path, "-"))
			continue;
		ret = file_start(f);
		if (ret) {
			file_abort(f);
			tet_say(msgs, TET_MSG_ERROR, "cannot write the %s %s: %s",
				out_format_name(f->fmt), f->path,
				ret == -ENXIO ? "a FIFO nobody reads" : strerror(-ret));
			status = -1;
			continue;
		}
		errno = 0;
		switch (f->fmt) {
		case OUT_HTML:
			ret = report_html(f->fp, a, m);
			break;
		case OUT_PERFETTO:
			ret = report_perfetto(f->fp, a, m, &st);
			break;
		case OUT_STACKS:
			ret = report_folded(f->fp, m);
			break;
		case OUT_PPROF:
			ret = report_pprof(f->fp, a, m);
			break;
		default:
			ret = report_json(f->fp, a, m);
		}
		if (ret == -EIO && errno) /* the writers say -EIO; the failed write says why */
			ret = -errno;
		if (!ret)
			ret = file_commit(f);
		else
			file_abort(f);
		if (ret) {
			tet_say(msgs, TET_MSG_ERROR, "cannot write the %s %s: %s",
				out_format_name(f->fmt), f->path, strerror(-ret));
			status = -1;
		} else if (f->fmt == OUT_PERFETTO) {
			say_perfetto(f, &st, msgs);
		} else if (strcmp(f->path, "-")) {
			tet_say(msgs, TET_MSG_INFO, "%s written to %s", out_format_name(f->fmt),
				f->path);
		}
	}
	return status;
}

int outputs_write_with(struct outputs *o, int (*write)(FILE *fp, enum out_format fmt, void *ctx),
		       void *ctx, const struct tet_msgs *msgs)
{
	int status = 0;

	for (size_t i = 0; i < o->n; i++) {
		struct out_file *f = &o->v[i];
		int ret;

		if (!f->real && strcmp(f->path, "-"))
			continue;
		ret = file_start(f);
		if (!ret) {
			errno = 0;
			ret = write(f->fp, f->fmt, ctx);
			if (ret == -EIO && errno) /* the writers say -EIO; the failed write says why */
				ret = -errno;
			if (!ret)
				ret = file_commit(f);
		}
		if (ret) {
			file_abort(f);
			tet_say(msgs, TET_MSG_ERROR, "cannot write the %s %s: %s",
				out_format_name(f->fmt), f->path,
				ret == -ENXIO ? "a FIFO nobody reads" : strerror(-ret));
			status = -1;
		} else if (strcmp(f->path, "-")) {
			tet_say(msgs, TET_MSG_INFO, "%s written to %s", out_format_name(f->fmt), f->path);
		}
	}
	return status;
}

void outputs_abort(struct outputs *o)
{
	for (size_t i = 0; i < o->n; i++)
		file_abort(&o->v[i]);
}
