// SPDX-License-Identifier: MIT
/*
 * outputs.c — the report files of a capture (--output, repeatable, and --trace).
 *
 * Each file is written to a temporary file next to it (FILE.tmp.PID), created before tracing
 * starts so that an unwritable path fails at once, and renamed into place when complete: a
 * reader never sees half a report, and a failed write leaves nothing behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "reporters.h"
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
	case OUT_TRACE:
		return "trace";
	case OUT_STACKS:
		return "folded stacks";
	default:
		return "report";
	}
}

int outputs_add(struct outputs *o, const char *path, enum out_format fmt)
{
	const char *flag = fmt == OUT_TRACE ? "--trace" : fmt == OUT_STACKS ? "--stacks" : "--output";

	if (!*path) {
		p_err("%s: empty file name", flag);
		return -EINVAL;
	}
	if (!strcmp(path, "-") && fmt != OUT_JSON) {
		p_err("%s -: only the JSON report can go to stdout", flag);
		return -EINVAL;
	}
	for (size_t i = 0; i < o->n; i++) {
		if (!strcmp(o->v[i].path, path)) {
			p_err("%s %s: that file is already an output", flag, path);
			return -EINVAL;
		}
	}
	if (o->n == OUT_MAX) {
		p_err("%s %s: at most %d output files", flag, path, OUT_MAX);
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
	f->fp = NULL;
	f->tmp = NULL;
}

int outputs_open(struct outputs *o)
{
	for (size_t i = 0; i < o->n; i++) {
		struct out_file *f = &o->v[i];
		int fd, e;

		struct stat st;

		if (!strcmp(f->path, "-")) {
			f->fp = stdout;
			continue;
		}
		if (!stat(f->path, &st) && S_ISDIR(st.st_mode)) { /* rename() would fail at the end */
			p_err("cannot write the %s %s: %s", out_format_name(f->fmt), f->path,
			      strerror(EISDIR));
			outputs_abort(o);
			return -EISDIR;
		}
		if (asprintf(&f->tmp, "%s.tmp.%d", f->path, (int)getpid()) < 0) {
			f->tmp = NULL;
			p_err("out of memory");
			outputs_abort(o);
			return -ENOMEM;
		}
		fd = open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0 && (f->fp = fdopen(fd, "w")))
			continue;
		e = errno;
		if (fd >= 0) {
			close(fd);
			unlink(f->tmp);
		}
		free(f->tmp);
		f->tmp = NULL;
		p_err("cannot write the %s %s: %s", out_format_name(f->fmt), f->path, strerror(e));
		outputs_abort(o);
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
	if (!ret && rename(f->tmp, f->path))
		ret = -errno;
	if (ret)
		unlink(f->tmp);
	free(f->tmp);
	f->tmp = NULL;
	return ret;
}

static void say_trace(const struct out_file *f, const struct trace_stats *st)
{
	char from[32];

	fprintf(stderr, "%s: trace written to %s (%llu events: %llu polls, %llu wakes with %llu flow arrows, %llu parks)\n",
		TET_PROG, f->path, (unsigned long long)st->events, (unsigned long long)st->polls,
		(unsigned long long)st->wakes, (unsigned long long)st->flows,
		(unsigned long long)st->parks);
	if (st->kept < st->total)
		fprintf(stderr, "%s: the trace was cut: it keeps the last %llu of %llu timeline events (from +%s); raise --timeline-events to keep more\n",
			TET_PROG, (unsigned long long)st->kept, (unsigned long long)st->total,
			fmt_duration(st->cut_before_ns, from, sizeof(from)));
}

int outputs_write(struct outputs *o, const struct analyzer *a, const struct report_meta *m)
{
	int status = 0;

	for (size_t i = 0; i < o->n; i++) {
		struct out_file *f = &o->v[i];
		struct trace_stats st = { 0 };
		int ret;

		if (!f->fp)
			continue;
		errno = 0;
		switch (f->fmt) {
		case OUT_HTML:
			ret = report_html(f->fp, a, m);
			break;
		case OUT_TRACE:
			ret = report_trace(f->fp, a, m, &st);
			break;
		case OUT_STACKS:
			ret = report_folded(f->fp, m);
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
			p_err("cannot write the %s %s: %s", out_format_name(f->fmt), f->path,
			      strerror(-ret));
			status = -1;
		} else if (f->fmt == OUT_TRACE) {
			say_trace(f, &st);
		} else if (strcmp(f->path, "-")) {
			fprintf(stderr, "%s: %s written to %s\n", TET_PROG, out_format_name(f->fmt),
				f->path);
		}
	}
	return status;
}

void outputs_abort(struct outputs *o)
{
	for (size_t i = 0; i < o->n; i++)
		file_abort(&o->v[i]);
}
