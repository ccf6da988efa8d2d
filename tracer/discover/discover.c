// SPDX-License-Identifier: MIT
/*
 * discover.c — can this process or file be traced here, and how (discover.h): the kernel and
 * privileges preflight, then the files with tokio probes (any dialect, dialect.h) or, failing
 * that, the Tokio task functions for the uprobe fallback. `check` and `trace` both decide
 * through tet_discover(), so they cannot disagree.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "caps.h"
#include "discover.h"
#include "notes.h"
#include "seterr.h"
#include "symbols.h"
#include "vocab.h"

/* ---- preflight ---- */
int tet_check_kernel(const char *root, char *err, size_t len)
{
	char p[4096];

	if (!root)
		root = "";
	/* perf "uprobe" PMU: Linux 4.17 (e12f03d7031a "perf/core: Implement the 'perf_kprobe'
	 * PMU"); its ref_ctr_offset format attribute (semaphores): 4.20 (a6ca88b241d5) */
	snprintf(p, sizeof(p), "%s/sys/bus/event_source/devices/uprobe/type", root);
	if (access(p, R_OK)) {
		seterr(err, len, "kernel without uprobes: %s is missing (needs CONFIG_UPROBE_EVENTS=y)", p);
		return -EOPNOTSUPP;
	}
	snprintf(p, sizeof(p), "%s/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset", root);
	if (access(p, R_OK)) {
		seterr(err, len, "kernel uprobes cannot drive USDT semaphores: %s is missing (needs Linux >= 4.20)", p);
		return -EOPNOTSUPP;
	}
	snprintf(p, sizeof(p), "%s/sys/kernel/btf/vmlinux", root);
	if (access(p, R_OK)) {
		seterr(err, len, "kernel without BTF: %s is missing (needs CONFIG_DEBUG_INFO_BTF=y)", p);
		return -EOPNOTSUPP;
	}
	return 0;
}

int tet_check_privileges(char *err, size_t len)
{
	if (geteuid() == 0 || caps_allow_tracing(caps_effective()))
		return 0;
	seterr(err, len, "permission denied: tracing needs root, or CAP_BPF and CAP_PERFMON (running as uid %u without them)",
	       (unsigned)geteuid());
	return -EPERM;
}

/* ---- targets ---- */
/* tokio:event_batch and tokio:sample_rate sites (batched capture); sample_rate's by semaphore
 * address, which is the bit order. */
static void add_batch_site(struct tet_target *x, const struct sdt_note *n)
{
	if (!strcmp(n->name, "event_batch") && n->sema_off && x->nbatch < TET_BATCH_SITES_MAX) {
		x->batch_off[x->nbatch] = n->file_off;
		x->batch_sema[x->nbatch++] = n->sema_off;
	} else if (!strcmp(n->name, "sample_rate") && n->sema_off) {
		size_t i;

		if (x->nrate == TET_RATE_BITS) { /* more than one copy of the probes: no sampling */
			x->nrate = TET_RATE_BITS + 1;
			return;
		}
		if (x->nrate > TET_RATE_BITS)
			return;
		for (i = x->nrate; i > 0 && x->rate_sema[i - 1] > n->sema_off; i--) {
			x->rate_sema[i] = x->rate_sema[i - 1];
			x->rate_off[i] = x->rate_off[i - 1];
		}
		x->rate_sema[i] = n->sema_off;
		x->rate_off[i] = n->file_off;
		x->nrate++;
	}
}

/* The file's provider "tokio" probes, if they are a dialect's with its poll pair: its events,
 * sites, and for other dialects which probe gives each event. */
static int add_target(struct tet_targets *t, const struct sdt_file *f)
{
	const char **names = calloc(f->nnotes ? f->nnotes : 1, sizeof(*names));
	const struct tet_dialect *d;
	struct tet_target x = { 0 }, *v;
	size_t nn = 0;
	unsigned poll = TET_PROBE_BIT(TET_EV_POLL_BEGIN) | TET_PROBE_BIT(TET_EV_POLL_END);

	if (!names)
		return -ENOMEM;
	for (size_t i = 0; i < f->nnotes; i++)
		if (!strcmp(f->notes[i].provider, "tokio") && !f->notes[i].err)
			names[nn++] = f->notes[i].name;
	d = tet_dialect_pick(names, nn, NULL);
	free(names);
	if (!d)
		return 0;
	for (size_t i = 0; i < f->nnotes; i++) {
		const struct sdt_note *n = &f->notes[i];
		const struct tet_dprobe *dp;

		if (strcmp(n->provider, "tokio") || n->err)
			continue;
		dp = tet_dialect_probe(d, n->name);
		if (!dp || dp->ev < 0) {
			if (d->native)
				add_batch_site(&x, n);
			continue;
		}
		x.probes |= 1u << dp->ev;
		x.sites[dp->ev]++;
		x.dprobe[dp->ev] = dp;
	}
	/* no poll pair (nor batched capture, which records polls itself), no tasks */
	if ((x.probes & poll) != poll && !x.nbatch)
		return 0;
	x.dialect = d;
	v = realloc(t->v, (t->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	t->v = v;
	x.path = strdup(f->path);
	x.attach_path = strdup(f->open_path ? f->open_path : f->path);
	x.is_main = f->is_main;
	if (!x.path || !x.attach_path) {
		free(x.path);
		free(x.attach_path);
		return -ENOMEM;
	}
	t->v[t->n++] = x;
	t->probes |= x.probes;
	t->batch |= x.nbatch > 0;
	if (!t->dialect || x.is_main)
		t->dialect = d;
	return 0;
}

static int tokio_sym_cb(const char *name, uint64_t value, uint64_t size, int type, void *ctx)
{
	return strstr(name, "tokio") != NULL;
}

static bool has_tokio_symbols(struct sdt_file *f)
{
	return sdt_file_for_each_symbol(f, tokio_sym_cb, NULL) > 0;
}

static int uring_sym_cb(const char *name, uint64_t value, uint64_t size, int type, void *ctx)
{
	return strstr(name, "io_uring") != NULL;
}

/* Code that drives io_uring (the io-uring crate, liburing, tokio-uring): symbols naming it. */
static bool has_uring_code(struct sdt_file *f)
{
	return sdt_file_for_each_symbol(f, uring_sym_cb, NULL) > 0;
}

static void nothing_to_attach(const char *what, bool tokio, char *err, size_t len)
{
	if (tokio)
		seterr(err, len, "%s uses Tokio but carries no tokio USDT probes: rebuild it with scripts/tokio-usdt-build, or trace it through uprobes on its Tokio symbols (--mode auto or uprobe)",
		       what);
	else
		seterr(err, len, "%s is not a Tokio program: no tokio USDT probes and no Tokio symbols",
		       what);
}

/* The uprobe fallback on one file: 0 when its symbols can be traced, else -ENODATA and why. */
static int try_fallback(struct tet_targets *t, const char *path, const char *attach, enum tet_mode mode,
			char *err, size_t len)
{
	struct tsym_table *syms = calloc(1, sizeof(*syms));
	int ret;

	if (!syms)
		return -ENOMEM;
	ret = tsym_load(attach, syms, err, len);
	if (!ret)
		ret = tsym_usable(syms, err, len);
	if (ret) {
		if (ret == -ENODATA) {
			/* tsym_usable names the file as opened: say it as the user knows it */
			char *p = strstr(err, attach);

			if (p && strcmp(path, attach)) {
				char tmp[TET_ERR_LEN];

				snprintf(tmp, sizeof(tmp), "%.*s%s%s", (int)(p - err), err, path,
					 p + strlen(attach));
				snprintf(err, len, "%s", tmp);
			}
			if (mode == TET_MODE_AUTO && !strstr(err, "USDT") && strlen(err) + 40 < len)
				strcat(err, " (no tokio USDT probes either)");
		}
		tsym_free(syms);
		free(syms);
		return ret;
	}
	t->fallback = true;
	t->syms = syms;
	t->fb_path = strdup(path);
	t->fb_attach = strdup(attach);
	t->probes = tsym_probes(syms);
	return t->fb_path && t->fb_attach ? 0 : -ENOMEM;
}

int tet_targets_find(pid_t pid, const char *binary, struct tet_targets *t, char *err, size_t len)
{
	return tet_targets_find_mode(pid, binary, TET_MODE_AUTO, t, err, len);
}

int tet_targets_find_mode(pid_t pid, const char *binary, enum tet_mode mode,
			  struct tet_targets *t, char *err, size_t len)
{
	char nerr[SDT_ERR_LEN] = "", what[600];
	int ret;

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	if (binary) {
		struct sdt_file *f = NULL;
		struct stat st;

		if (stat(binary, &st)) {
			ret = -errno;
			seterr(err, len, "%s: %s", binary, strerror(errno));
			return ret;
		}
		if (!S_ISREG(st.st_mode)) {
			seterr(err, len, "%s: not a regular file", binary);
			return -EISDIR;
		}
		ret = sdt_file_open(binary, &f, nerr);
		if (ret) {
			seterr(err, len, "%s", nerr);
			return ret;
		}
		if (mode != TET_MODE_UPROBE)
			ret = add_target(t, f);
		t->uring_code = has_uring_code(f);
		if (!ret && !t->n && mode != TET_MODE_USDT) {
			ret = try_fallback(t, binary, binary, mode, err, len);
		} else if (!ret && !t->n) {
			snprintf(what, sizeof(what), "%s", binary);
			nothing_to_attach(what, has_tokio_symbols(f), err, len);
			ret = -ENODATA;
		}
		t->exe = strdup(binary);
		sdt_file_free(f);
		return ret;
	} else {
		struct sdt_file **files = NULL;
		struct sdt_file *main_exe = NULL;
		size_t n = 0;

		ret = sdt_proc_files(pid, &files, &n, nerr);
		if (ret == -ESRCH) {
			seterr(err, len, "no process with PID %d", (int)pid);
			return ret;
		}
		if (ret) { /* named by PID once (the walk's messages may name it already) */
			if (!strncmp(nerr, "PID ", 4) || !strncmp(nerr, "process ", 8))
				seterr(err, len, "%s", nerr);
			else
				seterr(err, len, "PID %d: %s", (int)pid, nerr);
			return ret;
		}
		for (size_t i = 0; i < n && !ret; i++) {
			if (mode != TET_MODE_UPROBE)
				ret = add_target(t, files[i]);
			if (files[i]->is_main)
				main_exe = files[i];
			if (!t->uring_code)
				t->uring_code = has_uring_code(files[i]);
		}
		t->exe = strdup(main_exe ? main_exe->path : "?");
		if (!ret && !t->n && mode != TET_MODE_USDT) {
			/* the executable first (Rust links Tokio statically), then libraries with
			 * Tokio symbols (a cdylib) */
			char ferr[TET_ERR_LEN] = "";

			ret = -ENODATA;
			if (main_exe)
				ret = try_fallback(t, main_exe->path, main_exe->open_path ?
						   main_exe->open_path : main_exe->path, mode, err, len);
			for (size_t i = 0; i < n && ret == -ENODATA; i++) {
				if (files[i] == main_exe || !has_tokio_symbols(files[i]))
					continue;
				ret = try_fallback(t, files[i]->path, files[i]->open_path ?
						   files[i]->open_path : files[i]->path, mode, ferr,
						   sizeof(ferr));
			}
			if (ret && main_exe) {
				/* the executable's reason stands; PID and name lead the message */
				snprintf(ferr, sizeof(ferr), "%s", err);
				seterr(err, len, "PID %d: %s", (int)pid, ferr);
			}
		} else if (!ret && !t->n) {
			bool tokio = false;

			for (size_t i = 0; i < n && !tokio; i++)
				tokio = has_tokio_symbols(files[i]);
			snprintf(what, sizeof(what), "PID %d (%s)", (int)pid, t->exe ? t->exe : "?");
			nothing_to_attach(what, tokio, err, len);
			ret = -ENODATA;
		}
		sdt_files_free(files, n);
		return ret;
	}
}

void tet_targets_free(struct tet_targets *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].path);
		free(t->v[i].attach_path);
	}
	free(t->v);
	free(t->exe);
	if (t->syms) {
		tsym_free(t->syms);
		free(t->syms);
	}
	free(t->fb_path);
	free(t->fb_attach);
	memset(t, 0, sizeof(*t));
}

const char *tet_targets_exe_path(const struct tet_targets *t, pid_t pid)
{
	if (pid > 0)
		return NULL;
	if (t->fallback)
		return t->fb_attach;
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].is_main)
			return t->v[i].attach_path;
	return t->n ? t->v[0].attach_path : NULL;
}

int tet_preflight(const char *sysfs_root, char *err, size_t len)
{
	int ret = tet_check_kernel(sysfs_root, err, len);

	return ret ? ret : tet_check_privileges(err, len);
}

int tet_discover(pid_t pid, const char *binary, enum tet_mode mode, const char *sysfs_root,
		 struct tet_targets *t, char *err, size_t len)
{
	int ret;

	memset(t, 0, sizeof(*t));
	ret = tet_preflight(sysfs_root, err, len);
	return ret ? ret : tet_targets_find_mode(pid, binary, mode, t, err, len);
}
