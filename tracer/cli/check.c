// SPDX-License-Identifier: MIT
/*
 * check.c — `tokio-ebpf-trace check FILE|-p PID [--json]`: will tracing work, and how?
 *
 * Three questions, then a verdict:
 *   1. Tokio probes: which dialect of `tokio` USDT probes the notes carry (this project's,
 *      Tokio's upstream proposal, oxide's tokio-dtrace), which are missing, how many sites,
 *      semaphores, what instruction each site is.
 *   2. Tokio symbols, for the uprobe fallback of a stock build: the task vtable functions
 *      (tokio::runtime::task::raw::poll, the waker functions) in .symtab/.dynsym.
 *   3. The kernel: uprobe PMU, ref_ctr_offset, optimized uprobes, BTF, permissions.
 * And, for sampling a stock build (issue 27), where the executable keeps Tokio's thread-local
 * task id (tracer/discover/tlsctx.c): reported only, it changes no verdict. For a build
 * without usable probes, the choice between --mode sampling (the same test trace makes,
 * rs_sampling_file) and the uprobe fallback: what each sees, their measured costs, and the
 * one recommended for this binary.
 * Verdict → exit status (exits.def): 0 ready (usdt), 1 lacks probes (uprobes on symbols),
 * 2 cannot. --json gives the facts and both halves of the machine's gate (kernel.ok,
 * kernel.permissions.ok) for the preflight and the kit, which decide nothing themselves.
 */
#include <errno.h>
#include <getopt.h>
#include <gelf.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caps.h"
#include "commands.h"
#include "discover.h"
#include "json.h"
#include "notes.h"
#include "run.h"
#include "run_sampling.h"
#include "sampling_report.h"
#include "tlsctx.h"

/* The dialects (this project's, Tokio's upstream proposal, oxide's tokio-dtrace) are
 * tracer/discover/dialect.h's, shared with trace. */
static bool known_probe(const struct tet_dialect *d, const char *name)
{
	return d && tet_dialect_probe(d, name) != NULL;
}

struct target;
static bool probe_usable(const struct target *t, const char *name);

/* A required probe of the dialect is missing when neither it nor another spelling of the
 * same event (upstream's task-waker-* for waker-*) is usable. */
static bool dprobe_missing(const struct target *t, const struct tet_dialect *d,
			   const struct tet_dprobe *e)
{
	if (!e->required || probe_usable(t, e->name))
		return false;
	for (const struct tet_dprobe *o = d->probes; e->ev >= 0 && o->name; o++)
		if (o != e && o->ev == e->ev && probe_usable(t, o->name))
			return false;
	return true;
}

/* ---------------------------------------------------------------------------------------
 * What the target offers
 */
#define MAX_PROBES 64

struct probe_info {
	const char *name;
	int sites;
	int with_sema;
	int bad;             /* notes with a bad site/semaphore/arguments */
	int kinds[SDT_SITE_OTHER + 1];
	const char *args;    /* of the first note */
	const char *errmsg;  /* of the first bad note */
};

/* Fallback symbols: the task vtable functions a stock build keeps. Matched as substrings of
 * the mangled names (legacy _ZN…E and v0 _R… both spell the path as length-prefixed
 * identifiers) or of already demangled names. */
static const struct fb_sym {
	const char *key, *mangled, *plain;
	int check;           /* tokio_fns.def: 0 not listed, 1 listed, 2 the fallback needs it */
} fb_syms[] = {
#define TOKIO_FN(kind, key, path, mangled, check) { #key, mangled, path, check },
#include "tokio_fns.def"
};
#define NFB (sizeof(fb_syms) / sizeof(fb_syms[0]))

struct target {
	struct sdt_file **files;
	size_t nfiles;
	int pid;
	const char *path;
	/* tokio probes */
	struct probe_info probes[MAX_PROBES];
	int nprobes;
	int tokio_notes;
	const struct tet_dialect *dialect;
	int dialect_hits;
	/* symbols */
	long fb_count[NFB];
	long tokio_syms;      /* any symbol of the tokio crate */
	bool any_symtab;
	bool tokio_strings;   /* "tokio-runtime-worker" in some file */
	/* the thread-local task id of the main executable (sampling a stock build) */
	struct tlsctx tls;
};

static void add_probe(struct target *t, const struct sdt_note *n)
{
	struct probe_info *p = NULL;
	int i;

	for (i = 0; i < t->nprobes; i++)
		if (strcmp(t->probes[i].name, n->name) == 0)
			p = &t->probes[i];
	if (!p) {
		if (t->nprobes == MAX_PROBES)
			return;
		p = &t->probes[t->nprobes++];
		memset(p, 0, sizeof(*p));
		p->name = n->name;
		p->args = n->args;
	}
	p->sites++;
	p->with_sema += n->sema != 0;
	p->kinds[n->site]++;
	if (n->err && n->err != -EOPNOTSUPP) {
		if (!p->bad)
			p->errmsg = n->errmsg;
		p->bad++;
	}
}

static const struct probe_info *find_probe(const struct target *t, const char *name)
{
	int i;

	for (i = 0; i < t->nprobes; i++)
		if (strcmp(t->probes[i].name, name) == 0)
			return &t->probes[i];
	return NULL;
}

static bool probe_usable(const struct target *t, const char *name)
{
	const struct probe_info *p = find_probe(t, name);

	return p && p->sites > p->bad;
}

static int sym_cb(const char *name, uint64_t value, uint64_t size, int type, void *ctx)
{
	struct target *t = ctx;
	size_t i;

	(void)value;
	(void)size;
	if (type != STT_FUNC && type != STT_NOTYPE && type != STT_GNU_IFUNC)
		return 0;
	if (!strstr(name, "5tokio") && !strstr(name, "tokio::"))
		return 0;
	t->tokio_syms++;
	for (i = 0; i < NFB; i++)
		if (strstr(name, fb_syms[i].mangled) || strstr(name, fb_syms[i].plain))
			t->fb_count[i]++;
	return 0;
}

static void scan(struct target *t)
{
	size_t i, k;
	int d;

	for (i = 0; i < t->nfiles; i++) {
		struct sdt_file *f = t->files[i];
		static const char marker[] = "tokio-runtime-worker";
		char buf[4096 + sizeof(marker)];
		uint64_t off = 0;
		size_t got;

		for (k = 0; k < f->nnotes; k++) {
			if (strcmp(f->notes[k].provider, "tokio") != 0)
				continue;
			t->tokio_notes++;
			add_probe(t, &f->notes[k]);
		}
		t->any_symtab |= sdt_file_has_symtab(f);
		sdt_file_for_each_symbol(f, sym_cb, t);
		/* the default worker thread name: a hint that a stripped binary is Tokio */
		while (!t->tokio_strings &&
		       (got = sdt_file_read(f, off, buf, sizeof(buf))) >= sizeof(marker) - 1) {
			if (memmem(buf, got, marker, sizeof(marker) - 1))
				t->tokio_strings = true;
			if (got < sizeof(buf))
				break;
			off += got - (sizeof(marker) - 1);
		}
	}
	for (i = 0; i < t->nfiles; i++)
		if (!t->pid || t->files[i]->is_main) {
			tlsctx_find(t->files[i]->open_path ? t->files[i]->open_path
							   : t->files[i]->path, &t->tls);
			break;
		}
	if (i == t->nfiles)
		snprintf(t->tls.why, sizeof(t->tls.why), "no main executable among the files");
	{
		const char *names[MAX_PROBES];

		for (d = 0; d < t->nprobes; d++)
			names[d] = t->probes[d].name;
		t->dialect = tet_dialect_pick(names, (size_t)t->nprobes, &t->dialect_hits);
	}
}

/* ---------------------------------------------------------------------------------------
 * The kernel
 */
struct kernel {
	struct utsname uts;
	int major, minor;
	bool uprobe_pmu;
	int uprobe_type;
	bool ref_ctr;
	bool opt_uprobes;
	char opt_how[160];
	bool btf;
	unsigned int euid;
	bool cap_bpf, cap_perfmon, cap_sys_admin;
	/* the two halves of trace's gate (tet_check_kernel, tet_check_privileges), and why not */
	bool ok, perms;
	char problem[TET_ERR_LEN], perm_problem[TET_ERR_LEN];
};

/* The uprobe syscall (x86_64 nr 336, Linux 6.18, "uprobes/x86: Add uprobe syscall to speed
 * up uprobe") is what optimized uprobes call from their trampoline; called from anywhere
 * else it fails with ENXIO, and with ENOSYS on kernels without it. Probed in a child in
 * case a kernel answers with a signal. */
static int probe_uprobe_syscall(void)
{
#if defined(__x86_64__)
	pid_t c = fork();
	int st;

	if (c < 0)
		return -1;
	if (c == 0) {
		long r = syscall(336);

		_exit(r == -1 && errno == ENXIO ? 0 : r == -1 && errno == ENOSYS ? 1 : 2);
	}
	if (waitpid(c, &st, 0) != c)
		return -1;
	if (WIFEXITED(st))
		return WEXITSTATUS(st) == 0 ? 1 : 0;
	return WIFSIGNALED(st) ? 1 : -1;
#else
	return 0;
#endif
}

/* The facts under sysfs_root ("" or NULL: the machine's; tests point TET_SYSFS_ROOT at a fake
 * tree), and the verdicts of the functions trace gates on. */
static void check_kernel(struct kernel *k, const char *sysfs_root)
{
	const char *root = sysfs_root ? sysfs_root : "";
	char p[4096];
	uint64_t eff;
	FILE *fp;

	memset(k, 0, sizeof(*k));
	uname(&k->uts);
	sscanf(k->uts.release, "%d.%d", &k->major, &k->minor);

	snprintf(p, sizeof(p), "%s/sys/bus/event_source/devices/uprobe/type", root);
	fp = fopen(p, "re");
	if (fp) {
		k->uprobe_pmu = fscanf(fp, "%d", &k->uprobe_type) == 1;
		fclose(fp);
	}
	/* perf uprobe PMU attribute, Linux 4.20 (a6ca88b241d5 "trace_uprobe: support reference
	 * counter in fd-based uprobe") */
	snprintf(p, sizeof(p), "%s/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset", root);
	k->ref_ctr = access(p, F_OK) == 0;
	snprintf(p, sizeof(p), "%s/sys/kernel/btf/vmlinux", root);
	k->btf = access(p, R_OK) == 0;
	k->ok = tet_check_kernel(root, k->problem, sizeof(k->problem)) == 0;

	if (strcmp(k->uts.machine, "x86_64") != 0) {
		snprintf(k->opt_how, sizeof(k->opt_how), "%s: optimized uprobes are x86_64 only",
			 k->uts.machine);
	} else {
		bool recent = k->major > 6 || (k->major == 6 && k->minor >= 18);
		int sc = probe_uprobe_syscall();

		k->opt_uprobes = recent && sc == 1;
		snprintf(k->opt_how, sizeof(k->opt_how),
			 "kernel %d.%d %s 6.18 on x86_64, uprobe syscall %s", k->major, k->minor,
			 recent ? ">=" : "<",
			 sc == 1 ? "present" : sc == 0 ? "absent" : "not probed");
	}

	k->euid = (unsigned int)geteuid();
	eff = caps_effective();
	k->cap_bpf = eff & (1ULL << CAP_BPF);
	k->cap_perfmon = eff & (1ULL << CAP_PERFMON);
	k->cap_sys_admin = eff & (1ULL << CAP_SYS_ADMIN);
	k->perms = tet_check_privileges(k->perm_problem, sizeof(k->perm_problem)) == 0;
}

/* ---------------------------------------------------------------------------------------
 * Verdict
 */
enum mode { MODE_USDT, MODE_FALLBACK, MODE_NONE };

struct verdict {
	enum mode binary_mode;  /* what the binary offers */
	enum mode mode;         /* what the tracer will do here, kernel included */
	char why[8][TET_ERR_LEN];
	int nwhy;
	char warn[8][TET_ERR_LEN];
	int nwarn;
};

static void why(struct verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why(struct verdict *v, const char *fmt, ...)
{
	va_list ap;

	if (v->nwhy == 8)
		return;
	va_start(ap, fmt);
	vsnprintf(v->why[v->nwhy++], sizeof(v->why[0]), fmt, ap);
	va_end(ap);
}

static void warn(struct verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct verdict *v, const char *fmt, ...)
{
	va_list ap;

	if (v->nwarn == 8)
		return;
	va_start(ap, fmt);
	vsnprintf(v->warn[v->nwarn++], sizeof(v->warn[0]), fmt, ap);
	va_end(ap);
}

static int count_missing(const struct target *t)
{
	const struct tet_dprobe *e;
	int n = 0;

	if (!t->dialect)
		return 0;
	for (e = t->dialect->probes; e->name; e++)
		n += dprobe_missing(t, t->dialect, e);
	return n;
}

/* The verdict is tet_discover's, the function trace decides with, taken in its two halves so
 * that both reasons can be told: what the files offer (tet_targets_find_mode: binary_mode),
 * then the machine (tet_preflight: mode). The rest explains it. */
static void decide(const struct target *t, const struct kernel *k, struct verdict *v)
{
	struct tet_targets tt;
	char err[TET_ERR_LEN];
	const char *bin = t->pid ? NULL : t->path;
	bool symbols = t->fb_count[0] > 0;
	int p, nsites = 0, nopt = 0, ret;

	for (p = 0; p < t->nprobes; p++) {
		nsites += t->probes[p].sites;
		nopt += t->probes[p].kinds[SDT_SITE_NOP5] + t->probes[p].kinds[SDT_SITE_NOP_NOP5];
	}
	memset(v, 0, sizeof(*v));
	ret = tet_targets_find_mode(t->pid, bin, TET_MODE_AUTO, &tt, err, sizeof(err));
	if (!ret && !tt.fallback) {
		v->binary_mode = MODE_USDT;
		why(v, "Tokio USDT probes (%s): %d known probe names, %d sites", tt.dialect->id,
		    t->dialect_hits, nsites);
		if (count_missing(t))
			warn(v, "%d probe%s of the %s dialect missing: their events will be absent",
			     count_missing(t), count_missing(t) == 1 ? "" : "s", tt.dialect->id);
		if (tt.dialect->native && tt.batch)
			why(v, "batched capture available (tokio:event_batch): the default");
		else if (tt.dialect->native)
			warn(v, "no tokio:event_batch probe (built by an older kit): per-event capture only, one probe hit per event");
		else
			warn(v, "%s probes carry fewer arguments: %s", tt.dialect->id, tt.dialect->lacks);
	} else if (!ret) {
		v->binary_mode = MODE_FALLBACK;
		if (t->tokio_notes && !t->dialect)
			why(v, "provider 'tokio' notes with names of no known dialect");
		else if (t->dialect)
			why(v, "Tokio probes (%s) lack a usable poll begin/end pair", t->dialect->id);
		else
			why(v, "no Tokio USDT probes (no 'tokio' provider in .note.stapsdt)");
		why(v, "Tokio task functions found in the symbol table "
		       "(tokio::runtime::task::raw::poll: %ld): uprobe fallback", t->fb_count[0]);
	} else {
		v->binary_mode = MODE_NONE;
		why(v, "%s", err);
		if (!symbols && !t->any_symtab && t->tokio_strings)
			why(v, "a Tokio binary, but stripped: no .symtab, so no Tokio symbols "
			       "to place uprobes on (rebuild without strip, or with the Tokio probes)");
	}
	tet_targets_free(&tt);
	v->mode = v->binary_mode;
	if (v->mode != MODE_NONE && tet_preflight(getenv("TET_SYSFS_ROOT"), err, sizeof(err))) {
		v->mode = MODE_NONE;
		why(v, "%s", err);
	}
	if (v->binary_mode == MODE_USDT && nsites) {
		if (k->opt_uprobes && nopt == nsites)
			why(v, "every site is a 5-byte nop and the kernel optimizes uprobes: no trap "
			       "per event");
		else if (k->opt_uprobes)
			warn(v, "%d of %d sites are not 5-byte nops: those trap (int3) on every event",
			     nsites - nopt, nsites);
		else
			warn(v, "uprobes trap (int3) on every event here: %s", k->opt_how);
	}
}

/* ---------------------------------------------------------------------------------------
 * A build without usable probes: --mode sampling or the uprobe fallback (issue 27)
 *
 * The costs are measured figures, not estimates: `make bench` (scripts/bench-trace.sh, part 1
 * the yield workload, part 2 HTTP at saturation: ratios to the same stock build in side-by-side
 * rounds), as the README's "What tracing costs" gives them with their date and spread; when a
 * new run changes them, change both.
 */
static const char sampling_cost[] =
	"measured by make bench on 2026-12-07 (README, What tracing costs; a 2-CPU VM shared with "
	"other jobs): at the default 99 Hz the yield workload's CPU per poll 0.95–1.04× stock (the "
	"sampler alone ≈ 1.004×); HTTP 85–99 % of stock requests/s (each park of a worker thread "
	"reads its stack)";
static const char fallback_cost[] =
	"measured by make bench on 2026-12-07 (README, What tracing costs): the yield workload's "
	"CPU per poll ≈ 120× stock (traps at every poll's entry and return and at every wake); "
	"HTTP 55–57 % of stock requests/s, 2.7× the service's CPU per request";
static const char *const sampling_sees[] = {
	"CPU time per task and per future type (samples x period), their hottest frames",
	"long polls on CPU, by consecutive samples (duration known within a sample period)",
	"polls blocked in a system call: the sleep's exact time, the system call, the stack",
};
static const char *const fallback_sees[] = {
	"every poll: its exact duration, poll counts, long polls",
	"wakes, and the scheduling delay from a wake to the next poll",
	"task ends and future types; waker clones and drops with --probes waker",
};
#define NSEES(a) (sizeof(a) / sizeof((a)[0]))

enum pick { PICK_USDT, PICK_SAMPLING, PICK_FALLBACK, PICK_NONE };

struct stock_choice {
	bool applies;            /* no usable Tokio probes: the two modes are the choice */
	bool sampling, fallback; /* possible for this binary on this machine */
	char no_sampling[TET_ERR_LEN], no_fallback[TET_ERR_LEN];
	enum pick pick;
	char why[384];
};

static const char *pick_name(enum pick p)
{
	return p == PICK_USDT ? "usdt" : p == PICK_SAMPLING ? "sampling"
	     : p == PICK_FALLBACK ? "uprobe-fallback" : "none";
}

/* The main executable (sampling reads one process's), as check examined it. */
static const struct sdt_file *main_file(const struct target *t)
{
	for (size_t i = 0; i < t->nfiles; i++)
		if (!t->pid || t->files[i]->is_main)
			return t->files[i];
	return NULL;
}

static void decide_stock(const struct target *t, const struct kernel *k, const struct verdict *v,
			 struct stock_choice *c)
{
	const struct sdt_file *f = main_file(t);
	char what[64] = "";

	memset(c, 0, sizeof(*c));
	if (v->binary_mode == MODE_USDT) {
		c->pick = PICK_USDT;
		snprintf(c->why, sizeof(c->why), "the Tokio USDT probes are used (attach mode usdt): "
			 "--mode sampling and the uprobe fallback are for builds without them");
		return;
	}
	c->applies = true;
	/* sampling: trace's own test of the executable, then the permissions (no uprobe needed) */
	if (t->pid)
		snprintf(what, sizeof(what), "the executable of pid %d", t->pid);
	if (!f) {
		snprintf(c->no_sampling, sizeof(c->no_sampling), "no main executable among the files");
	} else if (!rs_sampling_file(f->open_path ? f->open_path : f->path,
				     t->pid ? what : t->path, c->no_sampling,
				     sizeof(c->no_sampling))) {
		c->sampling = k->perms;
		if (!k->perms)
			snprintf(c->no_sampling, sizeof(c->no_sampling), "%s", k->perm_problem);
	}
	/* the fallback: the verdict's own decision, kernel and permissions included */
	if (v->binary_mode == MODE_FALLBACK && v->mode == MODE_FALLBACK)
		c->fallback = true;
	else if (v->binary_mode != MODE_FALLBACK)
		snprintf(c->no_fallback, sizeof(c->no_fallback), "%s", v->nwhy ? v->why[0] : "?");
	else
		snprintf(c->no_fallback, sizeof(c->no_fallback), "%s",
			 !k->perms ? k->perm_problem : k->problem);
	if (c->sampling) {
		c->pick = PICK_SAMPLING;
		snprintf(c->why, sizeof(c->why), "it costs the service far less (above); give "
			 "--pid PID --mode sampling (without it, trace takes the uprobe fallback)%s",
			 c->fallback ? "; for wakes, poll counts or scheduling delay, a short run "
				       "of the fallback" : "");
	} else if (c->fallback) {
		c->pick = PICK_FALLBACK;
		snprintf(c->why, sizeof(c->why), "sampling is not possible here (above): the fallback "
			 "(trace's default here), at its cost; or rebuild with the kit "
			 "(scripts/tokio-usdt-build) for the probes");
	} else {
		c->pick = PICK_NONE;
		snprintf(c->why, sizeof(c->why), "neither is possible (above): rebuild with the kit "
			 "(scripts/tokio-usdt-build) for the probes");
	}
}

static const char *mode_name(enum mode m)
{
	return m == MODE_USDT ? "usdt" : m == MODE_FALLBACK ? "uprobe-fallback" : "impossible";
}

static const char *verdict_name(enum mode m)
{
	return m == MODE_USDT ? "ready" : m == MODE_FALLBACK ? "fallback-only" : "cannot-trace";
}

static int verdict_exit(enum mode m)
{
	return m == MODE_USDT ? TET_EXIT_OK : m == MODE_FALLBACK ? TET_EXIT_NOPROBES
								  : TET_EXIT_CANNOT;
}

/* ---------------------------------------------------------------------------------------
 * Output
 */
static void site_kinds_str(const struct probe_info *p, char *buf, size_t len)
{
	int s;
	size_t o = 0;

	buf[0] = 0;
	for (s = 0; s <= SDT_SITE_OTHER; s++) {
		int n;

		if (!p->kinds[s])
			continue;
		n = snprintf(buf + o, len - o, "%s%d×%s", o ? " " : "", p->kinds[s],
			     sdt_site_name((enum sdt_site)s));
		if (n < 0 || (size_t)n >= len - o)
			break;
		o += (size_t)n;
	}
}

static void print_tls_human(const struct tlsctx *c)
{
	printf("\nTokio task-id slot (sampling a stock build):\n");
	if (c->method == TLSCTX_NONE) {
		printf("  located:      no: %s\n", c->why);
		return;
	}
	if (c->method == TLSCTX_DWARF)
		printf("  method:       dwarf (the variable's location and type; %s)\n", c->cross);
	else
		printf("  method:       %s (tokio::runtime::context::set_current_task_id at %#"
		       PRIx64 "%s)\n", tlsctx_method_name(c->method), c->accessor,
		       c->accessors > 1 ? ", copies of Tokio agree" : "");
	printf("  TLS block:    tp%+" PRId64 " (PT_TLS %#" PRIx64 " bytes, align %" PRIu64 ")\n",
	       c->block_off, c->tls_memsz, c->tls_align);
	printf("  CONTEXT:      tp%+" PRId64 " (%" PRIu64 " bytes)\n", c->ctx_off, c->sym_size);
	printf("  task id:      CONTEXT+%#x, tp%+" PRId64 ", %s\n", c->field_off, c->id_off,
	       c->layout == TLSCTX_TAGGED ? "Option<Id(u64)>: tag u64 (0 = None) then the id"
					  : "Option<Id(NonZeroU64)>: u64, 0 = None");
}

/* One item a line; stride 2: the keys of a { key, why } table on one line, '_' as spaces */
static void print_list(const char *label, const char *const *v, size_t n, size_t stride)
{
	for (size_t i = 0; i < n; i++) {
		if (stride == 1 || !i)
			printf("%s    %-6s ", i ? "\n" : "", i ? "" : label);
		else
			printf(", ");
		for (const char *p = v[i * stride]; *p; p++)
			putchar(stride == 2 && *p == '_' ? ' ' : *p);
	}
	printf("\n");
}

static void print_stock_human(const struct stock_choice *c)
{
	if (!c->applies) {
		printf("\nWithout probes: not needed — %s\n", c->why);
		return;
	}
	printf("\nWithout probes: --mode sampling or the uprobe fallback\n");
	printf("  sampling (--pid PID --mode sampling): %s%s\n", c->sampling ? "possible" : "no: ",
	       c->sampling ? "" : c->no_sampling);
	printf("    cost:  %s\n", sampling_cost);
	print_list("sees:", sampling_sees, NSEES(sampling_sees), 1);
	print_list("not:", &sr_not_seen[0][0], SR_NOT_SEEN, 2);
	printf("  uprobe fallback (--mode uprobe; trace's default without probes): %s%s\n",
	       c->fallback ? "possible" : "no: ", c->fallback ? "" : c->no_fallback);
	printf("    cost:  %s\n", fallback_cost);
	print_list("sees:", fallback_sees, NSEES(fallback_sees), 1);
	print_list("not:", run_fallback_unavailable, RUN_FALLBACK_UNAVAILABLE, 1);
	printf("  recommended: %s — %s\n", pick_name(c->pick), c->why);
}

static void print_human(const struct target *t, const struct kernel *k, const struct verdict *v,
			const struct stock_choice *c)
{
	const struct tet_dprobe *e;
	size_t i;
	int p, nsites = 0, nsema = 0;

	if (t->pid)
		printf("Target: process %d (%zu mapped ELF files)\n", t->pid, t->nfiles);
	else
		printf("Target: %s\n", t->path);
	for (i = 0; i < t->nfiles; i++) {
		const struct sdt_file *f = t->files[i];

		if (t->pid && !f->is_main && !f->nnotes)
			continue;
		printf("  %s: ELF%d %s, %zu SDT note%s%s%s\n", f->path, f->elf_class,
		       f->e_type == ET_EXEC ? "executable" : "shared object/PIE", f->nnotes,
		       f->nnotes == 1 ? "" : "s", sdt_file_has_symtab((struct sdt_file *)f) ? ""
		       : ", stripped", f->is_main ? " (main executable)" : "");
	}

	printf("\nTokio probes:\n");
	if (t->dialect)
		printf("  dialect:      %s — %s\n", t->dialect->id, t->dialect->desc);
	else
		printf("  dialect:      none%s\n", t->tokio_notes ? " (unknown 'tokio' names)" : "");
	for (p = 0; p < t->nprobes; p++) {
		nsites += t->probes[p].sites;
		nsema += t->probes[p].with_sema > 0;
	}
	if (t->dialect) {
		printf("  probes:       %d present, %d missing\n", t->dialect_hits, count_missing(t));
		printf("  missing:     ");
		if (!count_missing(t))
			printf(" none");
		for (e = t->dialect->probes; e->name; e++)
			if (dprobe_missing(t, t->dialect, e))
				printf(" %s", e->name);
		printf("\n");
	}
	if (t->nprobes) {
		printf("  sites:        %d, semaphores on %d of %d probes\n", nsites, nsema,
		       t->nprobes);
		printf("    %-22s %5s %5s  %-22s %s\n", "PROBE", "SITES", "SEMA", "SITE KINDS",
		       "ARGS");
		for (p = 0; p < t->nprobes; p++) {
			const struct probe_info *pi = &t->probes[p];
			char kinds[128];

			site_kinds_str(pi, kinds, sizeof(kinds));
			printf("    %-22s %5d %5s  %-22s %s%s%s\n", pi->name, pi->sites,
			       pi->with_sema ? "yes" : "no", kinds, pi->args,
			       pi->bad ? "  BAD: " : "", pi->bad ? pi->errmsg : "");
		}
	}

	printf("\nTokio symbols (uprobe fallback):\n");
	printf("  symbol table: %s\n", t->any_symtab ? "yes" : "no (stripped)");
	for (i = 0; i < NFB; i++)
		if (fb_syms[i].check)
			printf("  %-13s %ld\n", fb_syms[i].key, t->fb_count[i]);
	if (!t->any_symtab)
		printf("  Tokio strings: %s\n", t->tokio_strings ? "yes (a stripped Tokio binary)"
							       : "no");
	print_tls_human(&t->tls);

	printf("\nKernel %s (%s):\n", k->uts.release, k->uts.machine);
	printf("  uprobe PMU:        %s", k->uprobe_pmu ? "yes" : "NO");
	if (k->uprobe_pmu)
		printf(" (type %d)", k->uprobe_type);
	printf("\n  ref_ctr_offset:    %s\n", k->ref_ctr ? "yes (semaphores are handled by the kernel)"
						    : "NO");
	printf("  optimized uprobes: %s (%s)\n", k->opt_uprobes ? "yes" : "no", k->opt_how);
	printf("  BTF:               %s\n", k->btf ? "yes (/sys/kernel/btf/vmlinux)" : "NO");
	printf("  usable:            %s%s\n", k->ok ? "yes" : "NO: ", k->ok ? "" : k->problem);
	printf("  permissions:       %s (euid %u%s%s%s)\n", k->perms ? "yes" : "NO", k->euid,
	       k->cap_bpf ? ", CAP_BPF" : "", k->cap_perfmon ? ", CAP_PERFMON" : "",
	       k->cap_sys_admin ? ", CAP_SYS_ADMIN" : "");

	printf("\nVerdict: %s — attach mode %s\n", verdict_name(v->mode), mode_name(v->mode));
	for (p = 0; p < v->nwhy; p++)
		printf("  - %s\n", v->why[p]);
	for (p = 0; p < v->nwarn; p++)
		printf("  ! %s\n", v->warn[p]);
	print_stock_human(c);
}

static void print_tls_json(struct jw *w, const struct tlsctx *c)
{
	jw_key(w, "task_id_slot");
	jw_obj_begin(w);
	jw_kstr(w, "method", tlsctx_method_name(c->method));
	jw_kstr(w, "reason", c->method == TLSCTX_NONE ? c->why : NULL);
	if (c->method != TLSCTX_NONE) {
		jw_kstr(w, "cross_check", c->method == TLSCTX_DWARF ? c->cross : NULL);
		jw_ku64(w, "accessor", c->accessor);
		jw_ki64(w, "accessors", c->accessors);
		jw_ku64(w, "tls_memsz", c->tls_memsz);
		jw_ku64(w, "tls_align", c->tls_align);
		jw_ki64(w, "tls_block_offset", c->block_off);
		jw_ku64(w, "context_symbol_value", c->sym_value);
		jw_ku64(w, "context_size", c->sym_size);
		jw_ki64(w, "context_offset", c->ctx_off);
		jw_ki64(w, "field_offset", c->field_off);
		jw_kstr(w, "layout", tlsctx_layout_name(c->layout));
		jw_ki64(w, "id_offset", c->id_off);
		if (c->layout == TLSCTX_TAGGED)
			jw_ki64(w, "tag_offset", c->tag_off);
	}
	jw_obj_end(w);
}

static void print_mode_json(struct jw *w, const char *key, bool ok, const char *no,
			    const char *options, const char *cost, const char *const *sees,
			    size_t nsees, const char *const *not, size_t nnot, size_t stride)
{
	jw_key(w, key);
	jw_obj_begin(w);
	jw_kbool(w, "possible", ok);
	jw_kstr(w, "reason", ok ? NULL : no);
	jw_kstr(w, "options", options);
	jw_kstr(w, "cost", cost);
	jw_key(w, "sees");
	jw_arr_begin(w);
	for (size_t i = 0; i < nsees; i++)
		jw_str(w, sees[i]);
	jw_arr_end(w);
	jw_key(w, "not_seen");
	jw_arr_begin(w);
	for (size_t i = 0; i < nnot; i++)
		jw_str(w, not[i * stride]);
	jw_arr_end(w);
	jw_obj_end(w);
}

static void print_stock_json(struct jw *w, const struct stock_choice *c)
{
	jw_key(w, "without_probes");
	jw_obj_begin(w);
	jw_kbool(w, "applies", c->applies);
	jw_kstr(w, "recommended", pick_name(c->pick));
	jw_kstr(w, "why", c->why);
	if (c->applies) {
		print_mode_json(w, "sampling", c->sampling, c->no_sampling, "--pid PID --mode sampling",
				sampling_cost, sampling_sees, NSEES(sampling_sees),
				&sr_not_seen[0][0], SR_NOT_SEEN, 2);
		print_mode_json(w, "uprobe_fallback", c->fallback, c->no_fallback, "--mode uprobe",
				fallback_cost, fallback_sees, NSEES(fallback_sees),
				run_fallback_unavailable, RUN_FALLBACK_UNAVAILABLE, 1);
	}
	jw_obj_end(w);
}

static void print_json(const struct target *t, const struct kernel *k, const struct verdict *v,
		       const struct stock_choice *c, bool pretty)
{
	struct jw *w = jw_new(stdout, pretty);
	const struct tet_dprobe *e;
	size_t i;
	int p, s;

	jw_obj_begin(w);
	jw_key(w, "target");
	jw_obj_begin(w);
	if (t->pid)
		jw_ki64(w, "pid", t->pid);
	else
		jw_kstr(w, "file", t->path);
	jw_obj_end(w);

	jw_key(w, "files");
	jw_arr_begin(w);
	for (i = 0; i < t->nfiles; i++) {
		struct sdt_file *f = t->files[i];
		size_t n, tk = 0;

		if (t->pid && !f->is_main && !f->nnotes)
			continue;
		for (n = 0; n < f->nnotes; n++)
			tk += strcmp(f->notes[n].provider, "tokio") == 0;
		jw_obj_begin(w);
		jw_kstr(w, "path", f->path);
		jw_ki64(w, "elf_class", f->elf_class);
		jw_kstr(w, "byte_order", f->big_endian ? "big" : "little");
		jw_ki64(w, "machine", f->e_machine);
		jw_kstr(w, "type", f->e_type == ET_EXEC ? "exec" : "dyn");
		jw_ku64(w, "notes", f->nnotes);
		jw_ku64(w, "tokio_notes", tk);
		jw_kbool(w, "symtab", sdt_file_has_symtab(f));
		if (t->pid) {
			jw_kbool(w, "main", f->is_main);
			jw_ku64(w, "load_bias", f->load_bias);
			jw_kbool(w, "deleted", f->deleted);
		}
		jw_obj_end(w);
	}
	jw_arr_end(w);

	jw_key(w, "tokio");
	jw_obj_begin(w);
	jw_kstr(w, "dialect", t->dialect ? t->dialect->id : NULL);
	jw_kstr(w, "dialect_description", t->dialect ? t->dialect->desc : NULL);
	jw_ki64(w, "notes", t->tokio_notes);
	jw_key(w, "missing");
	jw_arr_begin(w);
	if (t->dialect)
		for (e = t->dialect->probes; e->name; e++)
			if (dprobe_missing(t, t->dialect, e))
				jw_str(w, e->name);
	jw_arr_end(w);
	jw_key(w, "probes");
	jw_arr_begin(w);
	for (p = 0; p < t->nprobes; p++) {
		const struct probe_info *pi = &t->probes[p];

		jw_obj_begin(w);
		jw_kstr(w, "name", pi->name);
		jw_kbool(w, "known", known_probe(t->dialect, pi->name));
		jw_ki64(w, "sites", pi->sites);
		jw_ki64(w, "sites_with_semaphore", pi->with_sema);
		jw_ki64(w, "bad_sites", pi->bad);
		if (pi->bad)
			jw_kstr(w, "error", pi->errmsg);
		jw_kstr(w, "args", pi->args);
		jw_key(w, "site_kinds");
		jw_obj_begin(w);
		for (s = 0; s <= SDT_SITE_OTHER; s++)
			if (pi->kinds[s])
				jw_ki64(w, sdt_site_name((enum sdt_site)s), pi->kinds[s]);
		jw_obj_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);

	jw_key(w, "symbols");
	jw_obj_begin(w);
	jw_kbool(w, "symtab", t->any_symtab);
	jw_ki64(w, "tokio", t->tokio_syms);
	for (i = 0; i < NFB; i++)
		if (fb_syms[i].check)
			jw_ki64(w, fb_syms[i].key, t->fb_count[i]);
	jw_kbool(w, "tokio_strings", t->tokio_strings);
	jw_obj_end(w);
	print_tls_json(w, &t->tls);

	jw_key(w, "kernel");
	jw_obj_begin(w);
	jw_kstr(w, "release", k->uts.release);
	jw_kstr(w, "machine", k->uts.machine);
	jw_kbool(w, "uprobe_pmu", k->uprobe_pmu);
	if (k->uprobe_pmu)
		jw_ki64(w, "uprobe_pmu_type", k->uprobe_type);
	jw_kbool(w, "ref_ctr_offset", k->ref_ctr);
	jw_kbool(w, "optimized_uprobes", k->opt_uprobes);
	jw_kstr(w, "optimized_uprobes_how", k->opt_how);
	jw_kbool(w, "btf", k->btf);
	jw_kbool(w, "ok", k->ok);
	jw_kstr(w, "problem", k->ok ? NULL : k->problem);
	jw_key(w, "permissions");
	jw_obj_begin(w);
	jw_kbool(w, "ok", k->perms);
	jw_kstr(w, "problem", k->perms ? NULL : k->perm_problem);
	jw_ki64(w, "euid", k->euid);
	jw_kbool(w, "cap_bpf", k->cap_bpf);
	jw_kbool(w, "cap_perfmon", k->cap_perfmon);
	jw_kbool(w, "cap_sys_admin", k->cap_sys_admin);
	jw_obj_end(w);
	jw_obj_end(w);

	jw_kstr(w, "binary_mode", mode_name(v->binary_mode));
	jw_kstr(w, "mode", mode_name(v->mode));
	jw_kstr(w, "verdict", verdict_name(v->mode));
	jw_ki64(w, "exit_code", verdict_exit(v->mode));
	jw_key(w, "reasons");
	jw_arr_begin(w);
	for (p = 0; p < v->nwhy; p++)
		jw_str(w, v->why[p]);
	jw_arr_end(w);
	jw_key(w, "warnings");
	jw_arr_begin(w);
	for (p = 0; p < v->nwarn; p++)
		jw_str(w, v->warn[p]);
	jw_arr_end(w);
	print_stock_json(w, c);
	jw_obj_end(w);
	if (jw_finish(w))
		fprintf(stderr, "%s: check: writing the output failed\n", TET_PROG);
}

static void check_usage(FILE *out)
{
	fprintf(out,
"Usage: %s check FILE [--json]\n"
"       %s check -p PID [--json]\n"
"Tell whether a Tokio program can be traced, how, and why not:\n"
"  - Tokio USDT probes and their dialect: this project's (task_poll_begin …), Tokio's\n"
"    upstream proposal (task-poll-start …), oxide's tokio-dtrace (worker-thread-park …);\n"
"    missing probes, sites and their instruction (nop1 / nop5 / nop+nop5), semaphores\n"
"  - Tokio task functions in the symbol table, for the uprobe fallback of a stock build\n"
"  - the kernel: uprobe PMU, ref_ctr_offset (semaphores), optimized uprobes (x86_64,\n"
"    Linux 6.18+, probed through the uprobe syscall), BTF, permissions (root, or\n"
"    CAP_BPF + CAP_PERFMON)\n"
"  - where the executable keeps Tokio's thread-local task id (CONTEXT.current_task_id,\n"
"    offsets from the thread pointer), for sampling a stock build; no effect on the verdict\n"
"  - without usable probes: --mode sampling or the uprobe fallback, what each sees and\n"
"    misses, their costs as make bench measured them, which one fits this binary\n"
"With -p, every ELF file the process maps is examined (probes in shared libraries too).\n"
"\n"
"Options:\n"
"  -p, --pid PID   check a running process\n"
"  -j, --json      one JSON object (errors too are JSON on stdout)\n"
"      --pretty    indented JSON (implies --json)\n"
"  -h, --help      show this help\n"
"\n"
"Exit status (one table for the tracer, the preflight and the kit: docs/cli.md):\n"
"  0  ok: ready, the Tokio USDT probes will be used (attach mode usdt)\n"
"  1  lacks probes: no usable Tokio probes, uprobes on Tokio symbols (uprobe-fallback)\n"
"  2  cannot trace: neither (e.g. stripped stock build), or the kernel (kernel.ok) or the\n"
"     permissions (kernel.permissions.ok) forbid it\n"
"  3  usage error\n"
"  4  bad input: unreadable / not ELF / malformed file, no such process\n"
"\n"
"Examples:\n"
"  %s check ./target/release/server\n"
"  %s check -p $(pidof server) --json | jq .verdict\n"
"  %s check ./server >/dev/null; case $? in 0) echo usdt;; 1) echo fallback;; esac\n",
		TET_PROG, TET_PROG, TET_PROG, TET_PROG, TET_PROG);
}

int cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct target *t;
	struct kernel k;
	struct verdict v;
	struct stock_choice *c;
	char err[SDT_ERR_LEN];
	bool pretty = false;
	int opt, ret, pid = 0;
	const char *path = NULL;

	json_mode_prescan(argc, argv);
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "p:jh", opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (!parse_pid(optarg, &pid))
				return TET_EXIT_USAGE;
			break;
		case 'j':
			json_output = true;
			break;
		case 'P':
			json_output = pretty = true;
			break;
		case 'h':
			check_usage(stdout);
			return TET_EXIT_OK;
		default:
			p_err("check: unknown or incomplete option '%s' (try '%s check --help')",
			      argv[optind - 1], TET_PROG);
			return TET_EXIT_USAGE;
		}
	}
	if (optind < argc)
		path = argv[optind++];
	if (optind < argc || (path && pid) || (!path && !pid)) {
		p_err("check: give one FILE or -p PID (try '%s check --help')", TET_PROG);
		return TET_EXIT_USAGE;
	}

	t = calloc(1, sizeof(*t));
	c = calloc(1, sizeof(*c));
	if (!t || !c) {
		free(t);
		free(c);
		p_err("out of memory");
		return TET_EXIT_INPUT;
	}
	t->pid = pid;
	t->path = path;
	ret = sdt_target_files(pid, path, &t->files, &t->nfiles, err);
	if (ret) {
		p_err("%s", err);
		free(t);
		free(c);
		return TET_EXIT_INPUT;
	}
	scan(t);
	check_kernel(&k, getenv("TET_SYSFS_ROOT"));
	decide(t, &k, &v);
	decide_stock(t, &k, &v, c);
	if (json_output)
		print_json(t, &k, &v, c, pretty);
	else
		print_human(t, &k, &v, c);
	fflush(stdout);
	ret = verdict_exit(v.mode);
	sdt_files_free(t->files, t->nfiles);
	free(t);
	free(c);
	return ret;
}
