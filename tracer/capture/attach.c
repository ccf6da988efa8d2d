// SPDX-License-Identifier: MIT
/*
 * attach.c — preflight, target discovery, skeleton lifecycle (see attach.h).
 *
 * One BPF object (bpf/tokio_usdt.bpf.c) holds one program per probe. Programs of probes that
 * are not requested, or present in no target file, get autoload off, so they are never
 * loaded. Each (file, probe) pair is one bpf_program__attach_usdt(): libbpf finds the probe's
 * sites in the file, decodes their argument specs, and creates one uprobe per site with the
 * semaphore's file offset as ref_ctr_offset, so the kernel raises the semaphore in every
 * process mapping the file (including processes started later, for pid -1) and lowers it
 * again when the uprobe goes away. The links are ours (not the skeleton's) because one
 * program may be attached to several files (executable + shared library).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "attach.h"
#include "batchcap.h"
#include "bpfutil.h"
#include "caps.h"
#include "fallback.h"
#include "notes.h"
#include "seterr.h"
#include "symbols.h"
#include "tokio_usdt.skel.h"

static const char *const probe_names[TET_EV_COUNT] = {
	[TET_EV_SPAWN] = "task_spawn",         [TET_EV_POLL_BEGIN] = "task_poll_begin",
	[TET_EV_POLL_END] = "task_poll_end",   [TET_EV_YIELD] = "task_yielded",
	[TET_EV_WAKE] = "waker_wake",          [TET_EV_WAKER_CLONE] = "waker_clone",
	[TET_EV_WAKER_DROP] = "waker_drop",    [TET_EV_TERMINATE] = "task_terminate",
	[TET_EV_PARK] = "worker_park",         [TET_EV_UNPARK] = "worker_unpark",
	[TET_EV_WAIT] = "task_wait",           [TET_EV_META] = "task_meta",
};

const struct tet_class tet_classes[] = {
	{ "spawn", TET_CLASS_SPAWN, "task_spawn: spawn sites, type names, lifetimes" },
	{ "poll", TET_CLASS_POLL, "task_poll_begin/end: polls, busy time, scheduling delay" },
	{ "yield", TET_CLASS_YIELD, "task_yielded: yields by reason" },
	{ "wake", TET_CLASS_WAKE, "waker_wake: wakes, pending time, scheduling delay" },
	{ "waker", TET_CLASS_WAKER, "waker_clone/drop: live wakers (lost_waker detection)" },
	{ "terminate", TET_CLASS_TERMINATE, "task_terminate: task ends, lifetimes" },
	{ "worker", TET_CLASS_WORKER, "worker_park/unpark: worker busy/parked time" },
	{ "wait", TET_CLASS_WAIT, "task_wait/task_meta: what pending tasks wait for, task names, future sizes" },
};
const size_t tet_nclasses = sizeof(tet_classes) / sizeof(tet_classes[0]);

/* ---- libbpf log ---- */
static bool libbpf_verbose;
static char libbpf_last[512];

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[512];
	size_t n;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	if (level == LIBBPF_WARN)
		snprintf(libbpf_last, sizeof(libbpf_last), "%s", buf);
	if (libbpf_verbose)
		fprintf(stderr, "libbpf: %s\n", buf);
	return 0;
}

void tet_libbpf_setup(bool verbose)
{
	libbpf_verbose = verbose;
	libbpf_set_print(libbpf_print);
}

const char *tet_libbpf_last_error(void)
{
	return libbpf_last;
}

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
static int probe_index(const char *name)
{
	for (int i = 0; i < TET_EV_COUNT; i++)
		if (!strcmp(probe_names[i], name))
			return i;
	return -1;
}

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

static int add_target(struct tet_targets *t, const struct sdt_file *f)
{
	struct tet_target x = { 0 }, *v;

	for (size_t i = 0; i < f->nnotes; i++) {
		const struct sdt_note *n = &f->notes[i];
		int p;

		if (strcmp(n->provider, "tokio") || n->err)
			continue;
		p = probe_index(n->name);
		if (p < 0) {
			add_batch_site(&x, n);
			continue;
		}
		x.probes |= 1u << p;
		x.sites[p]++;
	}
	if (!x.probes)
		return 0;
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
	t->probes = tet_fb_available(syms);
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

/* ---- session ---- */
struct tet_session {
	struct tet_fb *fb;           /* the uprobe fallback (then nothing below is used) */
	struct tet_bc *bc;           /* batched capture (then nothing below is used) */
	struct tokio_usdt *skel;
	struct ring_buffer *rb;
	struct bpf_link **links;
	size_t nlinks;
	unsigned probes;
	bool sleepable_spawn;        /* task_spawn through tet_spawn_s (bpf_copy_from_user) */
	struct tet_session_opts o;
	uint64_t cutoff_ns;          /* set at detach: later events are not analyzed */
	struct tet_sched *sched;
	struct tet_sched_info sched_info;
	struct tet_uring *uring;
	struct tet_uring_info uring_info;
	uint64_t late[TET_EV_COUNT]; /* events after the cutoff, by type */
};

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

/* Can a sleepable kprobe-type program (for uprobes) call bpf_copy_from_user()? Linux 6.0
 * ("bpf: Add sleepable uprobe programs", 2022). Probed by loading a 7-instruction program. */
static bool sleepable_uprobes(void)
{
	static int cached = -1;
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_1, .src_reg = BPF_REG_10 },
		{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_1, .imm = -8 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_2, .imm = 8 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_3, .imm = 0 },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_copy_from_user },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .prog_flags = BPF_F_SLEEPABLE);
	int fd;

	if (cached < 0 && getenv("TET_TEST_NO_SLEEPABLE")) /* tests: the user-space rescue path */
		cached = 0;
	if (cached < 0) {
		fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", insns,
				   sizeof(insns) / sizeof(insns[0]), &opts);
		cached = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
	return cached;
}

static struct bpf_program *prog_of(const struct tet_session *s, int ev)
{
	const struct tokio_usdt *skel = s->skel;

	switch (ev) {
	case TET_EV_SPAWN: return s->sleepable_spawn ? skel->progs.tet_spawn_s : skel->progs.tet_spawn;
	case TET_EV_POLL_BEGIN: return skel->progs.tet_poll_begin;
	case TET_EV_POLL_END: return skel->progs.tet_poll_end;
	case TET_EV_YIELD: return skel->progs.tet_yielded;
	case TET_EV_WAKE: return skel->progs.tet_wake;
	case TET_EV_WAKER_CLONE: return skel->progs.tet_waker_clone;
	case TET_EV_WAKER_DROP: return skel->progs.tet_waker_drop;
	case TET_EV_TERMINATE: return skel->progs.tet_terminate;
	case TET_EV_PARK: return skel->progs.tet_park;
	case TET_EV_UNPARK: return skel->progs.tet_unpark;
	case TET_EV_WAIT: return skel->progs.tet_wait;
	case TET_EV_META: return skel->progs.tet_meta;
	}
	return NULL;
}

/* Reads len bytes of process pid at addr (faulting pages in, unlike bpf_probe_read_user()),
 * with process_vm_readv: ptrace permission only (root, CAP_SYS_PTRACE), where opening another
 * user's /proc/PID/mem needs CAP_DAC_READ_SEARCH too. */
static size_t read_process(uint32_t pid, uint64_t addr, char *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0);

	return n > 0 ? (size_t)n : 0;
}

/* A spawn whose strings BPF could not read: read them from the process, which is still
 * there (the record is at most one drain interval old) and whose strings are static. */
static const void *rescue_strings(const struct tet_spawn_rec *r, struct tet_spawn_rec *copy)
{
	size_t fwant = r->file_len < TET_FILE_MAX ? (size_t)r->file_len : TET_FILE_MAX;
	size_t twant = r->type_len < TET_TYPE_MAX ? (size_t)r->type_len : TET_TYPE_MAX;

	if ((r->file_copied >= fwant || !r->file_ptr) && (r->type_copied >= twant || !r->type_ptr))
		return r;
	*copy = *r;
	if (copy->file_copied < fwant && copy->file_ptr)
		copy->file_copied = (uint16_t)read_process(r->h.pid, r->file_ptr, copy->data, fwant);
	if (copy->type_copied < twant && copy->type_ptr)
		copy->type_copied = (uint16_t)read_process(r->h.pid, r->type_ptr,
							   copy->data + TET_FILE_MAX, twant);
	return copy;
}

/* Detaching takes ~0.1 s per uprobe and goes probe by probe, so while it runs some probes
 * still fire and others no longer do (e.g. a task spawned after task_spawn was detached and
 * polled before task_poll_begin was): what happens after the capture's end is left out. */
static int ring_cb(void *ctx, void *data, size_t size)
{
	struct tet_session *s = ctx;
	const struct tet_hdr *h = data;
	struct tet_spawn_rec copy;

	if (size >= sizeof(*h) && s->cutoff_ns && h->ts > s->cutoff_ns) {
		if (h->type < TET_EV_COUNT)
			s->late[h->type]++;
		return 0;
	}
	if (size >= sizeof(struct tet_spawn_rec) && h->type == TET_EV_SPAWN)
		return s->o.on_event(s->o.ctx, (void *)rescue_strings(data, &copy), size);
	return s->o.on_event(s->o.ctx, data, size);
}

int tet_usdt_open(struct tokio_usdt **out, pid_t pid, char *err, size_t len)
{
	struct tokio_usdt *skel = tokio_usdt__open();

	if (!skel) {
		int ret = -errno;

		seterr(err, len, "cannot open the BPF object: %s", strerror(-ret));
		return ret;
	}
	skel->rodata->target_tgid = (uint32_t)(pid > 0 ? pid : 0);
	*out = skel;
	return 0;
}

int tet_usdt_load(struct tokio_usdt *skel, size_t ringbuf_bytes, char *err, size_t len)
{
	int ret = bpf_map__set_max_entries(skel->maps.events, (uint32_t)ringbuf_bytes);

	if (ret) {
		seterr(err, len, "ring buffer size %zu refused: %s", ringbuf_bytes, strerror(-ret));
		return ret;
	}
	ret = tokio_usdt__load(skel);
	if (ret)
		seterr(err, len, "cannot load the BPF programs: %s%s%s", strerror(-ret),
		       *libbpf_last ? " — libbpf: " : "", libbpf_last);
	return ret;
}

int tet_session_open(struct tet_session **out, const struct tet_session_opts *o,
		     const struct tet_targets *t, char *err, size_t len)
{
	struct tet_session *s;
	int ret;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (t->fallback) {
		struct tet_fb_opts fo = { .pid = o->pid, .probes = o->probes,
					  .ringbuf_bytes = o->ringbuf_bytes, .sched = o->sched,
					  .no_uring = o->no_uring, .on_event = o->on_event,
					  .ctx = o->ctx };

		ret = tet_fb_open(&s->fb, &fo, t->fb_attach, t->syms, err, len);
		if (ret) {
			free(s);
			return ret;
		}
		s->probes = tet_fb_probes(s->fb);
		*out = s;
		return 0;
	}
	if (o->batched) {
		struct tet_bc_opts bo = { .pid = o->pid, .ringbuf_bytes = o->ringbuf_bytes,
					  .sample_rate = o->sample_rate ? o->sample_rate : 1,
					  .sched = o->sched, .no_uring = o->no_uring,
					  .on_event = o->on_event, .ctx = o->ctx };

		ret = tet_bc_open(&s->bc, &bo, t, err, len);
		if (ret) {
			free(s);
			return ret;
		}
		/* every event of every task, whatever --probes says: the records are one stream */
		s->probes = t->probes;
		*out = s;
		return 0;
	}
	s->probes = o->probes & t->probes;
	if (!s->probes) {
		seterr(err, len, "none of the requested probes exists in %s", t->exe ? t->exe : "the target");
		free(s);
		return -ENODATA;
	}
	ret = tet_usdt_open(&s->skel, o->pid, err, len);
	if (ret)
		goto fail;
	s->sleepable_spawn = sleepable_uprobes();
	bpf_program__set_autoload(s->skel->progs.tet_spawn, false);
	bpf_program__set_autoload(s->skel->progs.tet_spawn_s, false);
	if (s->sleepable_spawn)
		bpf_program__set_flags(s->skel->progs.tet_spawn_s, BPF_F_SLEEPABLE);
	for (int ev = 0; ev < TET_EV_COUNT; ev++)
		bpf_program__set_autoload(prog_of(s, ev), !!(s->probes & (1u << ev)));
	bpf_program__set_autoload(s->skel->progs.tet_batch, false);
	bpf_program__set_autoload(s->skel->progs.tet_nop, false);
	bpf_program__set_autoload(s->skel->progs.tet_ur_poll_begin, false);
	bpf_program__set_autoload(s->skel->progs.tet_ur_poll_end, false);
	/* io_uring: the poll programs report the SQ ranges (only with both poll probes) */
	if (tet_uring_prepare(&(struct tet_uring_progs){ s->skel->progs.tet_ur_create,
			      s->skel->progs.tet_ur_submit, s->skel->progs.tet_ur_complete,
			      (uint64_t *)&s->skel->rodata->target_exe_ino,
			      (uint32_t *)&s->skel->rodata->target_exe_dev },
			      o->no_uring, tet_targets_exe_path(t, o->pid), &s->uring_info)) {
		s->uring_info.hooks = (s->probes & TET_CLASS_POLL) == TET_CLASS_POLL;
		if (!s->uring_info.hooks)
			s->uring_info.why_no_hooks = "the poll probes are not attached (--probes): io_uring requests are not linked to tasks";
	}
	/* polls open per thread: only with both poll probes */
	s->skel->rodata->track_polls =
		tet_sched_prepare(&(struct tet_sched_progs){ s->skel->progs.tet_switch,
				  s->skel->progs.tet_wakeup, s->skel->progs.tet_sample,
				  s->skel->progs.tet_exit,
				  &s->skel->rodata->exit_group_dead_arg },
				  &o->sched, &s->sched_info) &&
		(s->probes & TET_CLASS_POLL) == TET_CLASS_POLL;
	ret = tet_usdt_load(s->skel, o->ringbuf_bytes, err, len);
	if (ret)
		goto fail;
	for (size_t i = 0; i < t->n; i++) {
		for (int ev = 0; ev < TET_EV_COUNT; ev++) {
			struct bpf_link *l, **v;

			if (!(s->probes & t->v[i].probes & (1u << ev)))
				continue;
			l = bpf_program__attach_usdt(prog_of(s, ev), o->pid > 0 ? o->pid : -1,
						     t->v[i].attach_path, "tokio", probe_names[ev],
						     NULL);
			if (!l) {
				ret = -errno;
				seterr(err, len, "cannot attach tokio:%s in %s: %s%s%s", probe_names[ev],
				       t->v[i].path, strerror(-ret),
				       *libbpf_last ? " — libbpf: " : "", libbpf_last);
				goto fail;
			}
			v = realloc(s->links, (s->nlinks + 1) * sizeof(*v));
			if (!v) {
				bpf_link__destroy(l);
				ret = -ENOMEM;
				seterr(err, len, "out of memory");
				goto fail;
			}
			s->links = v;
			s->links[s->nlinks++] = l;
		}
	}
	s->o = *o;
	s->sched = tet_sched_attach(&(struct tet_sched_progs){ s->skel->progs.tet_switch,
				    s->skel->progs.tet_wakeup, s->skel->progs.tet_sample,
				  s->skel->progs.tet_exit, NULL },
				    &o->sched, &s->sched_info);
	s->uring = tet_uring_attach(&(struct tet_uring_progs){ s->skel->progs.tet_ur_create,
				    s->skel->progs.tet_ur_submit, s->skel->progs.tet_ur_complete,
				    NULL, NULL }, &s->uring_info);
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), ring_cb, s, NULL);
	if (!s->rb) {
		ret = -errno;
		seterr(err, len, "cannot open the ring buffer: %s", strerror(-ret));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	tet_session_close(s);
	return ret;
}

unsigned tet_session_probes(const struct tet_session *s)
{
	return s->probes;
}

size_t tet_session_links(const struct tet_session *s)
{
	if (s->bc)
		return tet_bc_info(s->bc)->sites + tet_bc_info(s->bc)->rate_sites;
	return s->fb ? tet_fb_info(s->fb)->uprobes : s->nlinks;
}

const struct tet_bc_info *tet_session_batch_info(const struct tet_session *s)
{
	return s->bc ? tet_bc_info(s->bc) : NULL;
}

const struct tb_stats *tet_session_batch_stats(const struct tet_session *s)
{
	return s->bc ? tet_bc_stats(s->bc) : NULL;
}

struct tb *tet_session_decoder(struct tet_session *s)
{
	return s->bc ? tet_bc_decoder(s->bc) : NULL;
}

const struct tet_fb_info *tet_session_fallback(const struct tet_session *s)
{
	return s->fb ? tet_fb_info(s->fb) : NULL;
}

size_t tet_session_prog_ids(const struct tet_session *s, uint32_t *ids, const char **names,
			    size_t max)
{
	size_t n = 0;

	if (s->fb)
		return tet_fb_prog_ids(s->fb, ids, names, max);
	if (s->bc)
		return tet_bc_prog_ids(s->bc, ids, names, max);
	for (int ev = 0; ev < TET_EV_COUNT && n < max; ev++) {
		struct bpf_program *p = prog_of(s, ev);

		if (!tet_prog_id(p, &ids[n]))
			continue;
		names[n] = bpf_program__name(p);
		n++;
	}
	return n;
}

const struct tet_sched_info *tet_session_sched(const struct tet_session *s)
{
	if (s->fb)
		return tet_fb_sched(s->fb);
	if (s->bc)
		return &tet_bc_info(s->bc)->sched;
	return &s->sched_info;
}

const struct tet_uring_info *tet_session_uring(const struct tet_session *s)
{
	if (s->fb)
		return tet_fb_uring(s->fb);
	if (s->bc)
		return tet_bc_uring(s->bc);
	return &s->uring_info;
}

int tet_session_stacks_fd(const struct tet_session *s)
{
	if (s->fb)
		return tet_fb_stacks_fd(s->fb);
	if (s->bc)
		return tet_bc_stacks_fd(s->bc);
	return s->skel ? bpf_map__fd(s->skel->maps.stacks) : -1;
}

int tet_session_lost_fd(const struct tet_session *s)
{
	if (s->fb)
		return tet_fb_lost_fd(s->fb);
	if (s->bc)
		return -1; /* a lost batch names no task */
	return s->skel ? bpf_map__fd(s->skel->maps.lost_tasks) : -1;
}

int tet_session_drain(struct tet_session *s)
{
	if (s->fb)
		return tet_fb_drain(s->fb);
	if (s->bc)
		return tet_bc_drain(s->bc);
	return s->rb ? ring_buffer__consume(s->rb) : 0;
}

int tet_session_counters(struct tet_session *s, struct tet_counters *sum)
{
	int ret;

	if (s->fb)
		return tet_fb_counters(s->fb, sum);
	if (s->bc)
		return tet_bc_counters(s->bc, sum);
	ret = tet_counters_sum(bpf_map__fd(s->skel->maps.counters), sum);
	if (ret)
		return ret;
	/* probe hits of the capture: those after its end were not analyzed */
	for (int i = 0; i < TET_EV_COUNT; i++)
		sum->seen[i] -= s->late[i] < sum->seen[i] ? s->late[i] : sum->seen[i];
	return 0;
}

void tet_session_end(struct tet_session *s, uint64_t cutoff_ns)
{
	if (s->fb) {
		tet_fb_detach(s->fb, cutoff_ns);
		return;
	}
	if (s->bc) {
		tet_bc_detach(s->bc, cutoff_ns);
		return;
	}
	if (!s->cutoff_ns)
		s->cutoff_ns = cutoff_ns;
	tet_session_detach(s);
}

void tet_session_detach(struct tet_session *s)
{
	if (s->fb) {
		tet_fb_detach(s->fb, 0);
		return;
	}
	if (s->bc) {
		tet_bc_detach(s->bc, 0);
		return;
	}
	if (!s->cutoff_ns) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts); /* bpf_ktime_get_ns()'s clock */
		s->cutoff_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	/* every program stops at the cutoff, before the links go one by one */
	if (s->skel && s->skel->bss)
		__atomic_store_n(&s->skel->bss->stop_ns, s->cutoff_ns, __ATOMIC_SEQ_CST);
	tet_sched_detach(s->sched);
	s->sched = NULL;
	tet_uring_detach(s->uring);
	s->uring = NULL;
	for (size_t i = 0; i < s->nlinks; i++)
		bpf_link__destroy(s->links[i]);
	free(s->links);
	s->links = NULL;
	s->nlinks = 0;
}

void tet_session_close(struct tet_session *s)
{
	if (!s)
		return;
	tet_fb_close(s->fb);
	s->fb = NULL;
	tet_bc_close(s->bc);
	s->bc = NULL;
	tet_session_detach(s);
	ring_buffer__free(s->rb);
	tokio_usdt__destroy(s->skel);
	free(s);
}
