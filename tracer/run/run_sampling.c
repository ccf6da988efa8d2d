// SPDX-License-Identifier: MIT
/*
 * run_sampling.c — `trace --mode sampling` (see run_sampling.h).
 *
 * Poll frames. A stock build's raw::poll<T, S> is often a single `jmp` to Harness<T, S>::poll,
 * never on a stack: both count (poll_table). A build without frame pointers gives the leaf
 * frame only; the BPF side then sends the words of the user stack that fall in the poll
 * functions' address range (sched.bpf.h scan_polls), and the innermost that is a return
 * address (a call instruction before it, read from the file) names the poll (scan_poll).
 *
 * Attribution. A worker thread's task id slot is never None between polls (a multi-thread
 * worker runs inside spawn_blocking: the slot then holds the id of the blocking task running its
 * loop), and TaskIdGuard is set a little after a poll begins. So the id alone does not say "in
 * a poll of an async task": the user stack does. A sample is in an async poll when the
 * innermost raw::poll instance frame of its stack is one whose future type is not Tokio's
 * BlockingTask (symbols.c names each instance's type). Then:
 *   - the FRAME decides the future type;
 *   - the SLOT decides the task id, unless the slot holds an id seen as a BlockingTask's (the
 *     between-poll value: read before the poll set it): then the id is taken from the next few
 *     (RS_BORROW) samples of the same poll (same_poll: the thread did not sleep between), else
 *     the previous sample's of the same poll, else it stays unknown (0);
 *     such samples are counted (attribution.read_before_set);
 *   - an id met with two future types is counted (attribution.id_type_conflicts); the frame wins.
 * A sample with an id in the slot but no raw::poll frame (a truncated stack) is counted
 * (attribution.no_poll_frame) and charged to no type.
 *
 * long_poll: on one thread, >= N consecutive samples (N = ceil(threshold / period), at least 2)
 * in an async poll of the same frame and task (the run's first known id; samples of unknown id
 * join), with no sleep of the thread between (same_poll: its voluntary-switch count unchanged;
 * a preemption does not end the run): the poll ran on CPU at least (n-1) periods and at most
 * (n+1) periods — the bounds the report gives. Two polls of one task back to back on a thread
 * with no sleep between (a yield_now re-poll) still make one run: samples cannot see a poll's
 * end. A
 * sleep (sched_switch, not preempted) that began inside an async poll and lasted at least the
 * threshold is a long_poll too, measured exactly at the switches, with its system call and
 * kernel stack.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <gelf.h>
#include <libelf.h>

#include "capture_ops.h"
#include "events.h"
#include "htab.h"
#include "json.h"
#include "run_sampling.h"
#include "sampler.h"
#include "seterr.h"
#include "stacksym.h"
#include "symbols.h"
#include "syscall_names.h"
#include "text.h"
#include "tlsctx.h"

/* Samples kept, and sleeps kept: 2^19 each of 88 B and 96 B (the asserts below) = 44 + 48 MiB,
 * 92 MiB at most (114 MiB for a moment while realloc doubles an array: the old half and the new) */
#define RS_MAX_RECS (1u << 19)
#define RS_STACKS   32768        /* the BPF stack map's entries (sched.bpf.h) */
#define RS_TOP      10
#define RS_BORROW   4            /* samples looked ahead for the id of a read before the set */
/* What the analysis keeps, bounded against a huge or hostile target (as analyze/'s AN_*_MAX):
 * past a cap (or when memory runs out) the entry is not kept and `refused` counts it. */
#define RS_MAX_TASKS    65536   /* task ids charged samples */
#define RS_MAX_THREADS  16384
#define RS_MAX_TYPES    4096    /* future types with samples */
#define RS_MAX_FRAMES   1024    /* hottest-frame names counted per future type (and per long poll) */
#define RS_MAX_FINDINGS 4096
#define RS_MAX_IDS      131072  /* blocking-task ids and (type, task) pairs remembered */
#define RS_NAME_MAX     256     /* bytes of a name from the traced binary shown (report-schema.md) */

struct rs_sample {
	uint64_t ts;
	uint64_t task;
	uint32_t tid;
	int32_t ustack, kstack;
	uint32_t flags;
	uint32_t nvcsw;  /* the thread's voluntary switches, low 32 bits */
	uint64_t polls[TET_SCAN_CANDS];
	/* resolved */
	int type;        /* future type index, -1: not in an async poll, -2: no poll frame */
	int poll;        /* raw::poll instance (index in the sorted table), -1 none */
	uint64_t rtask;  /* the task charged (0: unknown) */
};

struct rs_sleep {
	uint64_t since, ts, woken, task;
	int64_t syscall;
	uint32_t tid, flags;
	int32_t ustack, kstack;
	uint64_t polls[TET_SCAN_CANDS];
	int poll;
};

_Static_assert(sizeof(struct rs_sample) <= 88 && sizeof(struct rs_sleep) <= 96,
	       "RS_MAX_RECS's memory bound (its comment, docs/sampling-mode.md)");

struct rs_stack {            /* one user stack, resolved once */
	bool done;
	int poll;            /* innermost raw::poll instance, -1 none */
	int type;            /* its future type, -1 none */
	bool blocking;       /* that instance polls a BlockingTask */
	char *hot;           /* innermost frame of the program's own code above the poll */
	char *leaf;          /* innermost frame */
};

struct rs_map { uint64_t lo, hi, pgoff; };

/* A function that polls one future type: a raw::poll<T, S> instance, or the Harness<T, S>::poll
 * instance it jumps to (a stock build's raw::poll is often one `jmp`: never on a stack). */
struct rs_poll { uint64_t file_off, size; int type; };

struct rs {
	const struct rs_opts *o;
	struct tlsctx tls;
	struct tsym_table syms;
	struct rs_poll *polls;          /* poll instances by file offset */
	size_t npolls;
	struct rs_map maps[64];
	size_t nmaps;
	char exe[PATH_MAX];
	struct ss *ss;
	struct rs_sample *s;
	size_t ns, caps;
	struct rs_sleep *z;
	size_t nz, capz;
	uint64_t kept_out, noread, bad;
	struct rs_stack *stk;
	uint64_t t0, t1;
	int exe_fd;
	bool stack_scan;     /* no frame pointers: the BPF side scans the stacks */
	uint64_t scanned, scan_hits;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int on_rec(void *ctx, void *data, size_t size)
{
	struct rs *r = ctx;
	const struct tet_hdr *h = data;

	if (size < sizeof(*h)) {
		r->bad++;
		return 0;
	}
	if (h->type == TET_REC_TSAMPLE && size >= sizeof(struct tet_tsample_rec)) {
		const struct tet_tsample_rec *x = data;

		if (r->ns == r->caps) {
			size_t cap = r->caps ? r->caps * 2 : 4096;
			void *p;

			if (cap > RS_MAX_RECS || !(p = realloc(r->s, cap * sizeof(*r->s)))) {
				r->kept_out++;
				return 0;
			}
			r->s = p;
			r->caps = cap;
		}
		if (x->flags & TET_TS_NOREAD)
			r->noread++;
		r->s[r->ns++] = (struct rs_sample){ .ts = h->ts, .task = x->task, .tid = h->tid,
			.ustack = x->ustack, .kstack = x->kstack, .flags = x->flags, .nvcsw = x->nvcsw, .type = -1,
			.poll = -1 };
		memcpy(r->s[r->ns - 1].polls, x->polls, sizeof(x->polls));

	} else if (h->type == TET_REC_TOFFCPU && size >= sizeof(struct tet_toffcpu_rec)) {
		const struct tet_toffcpu_rec *x = data;

		/* stamps out of order would underflow the durations (sleeps()): refused, counted */
		if (x->o.since > h->ts || (x->o.woken && (x->o.woken < x->o.since || x->o.woken > h->ts))) {
			r->bad++;
			return 0;
		}
		if (r->nz == r->capz) {
			size_t cap = r->capz ? r->capz * 2 : 1024;
			void *p;

			if (cap > RS_MAX_RECS || !(p = realloc(r->z, cap * sizeof(*r->z)))) {
				r->kept_out++;
				return 0;
			}
			r->z = p;
			r->capz = cap;
		}
		r->z[r->nz++] = (struct rs_sleep){ .since = x->o.since, .ts = h->ts,
			.woken = x->o.woken, .task = x->task, .syscall = x->o.syscall, .tid = h->tid,
			.flags = x->flags, .ustack = x->o.ustack, .kstack = x->o.kstack, .poll = -1 };
		memcpy(r->z[r->nz - 1].polls, x->polls, sizeof(x->polls));
	} else if (h->type != TET_REC_EXIT) {
		r->bad++;
	}
	return 0;
}

static int cmp_poll(const void *a, const void *b)
{
	const struct rs_poll *x = a, *y = b;

	return x->file_off < y->file_off ? -1 : x->file_off > y->file_off;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The function symbols of the executable as (address, size) pairs, sorted: 0 or -errno. */
static int func_syms(int fd, uint64_t **out, size_t *n)
{
	Elf *e;
	Elf_Scn *scn = NULL;
	uint64_t *v = NULL;
	size_t cnt = 0, cap = 0;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e)
		return -ENOEXEC;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;

			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !sym.st_value || !sym.st_size)
				continue;
			if (cnt + 2 > cap) {
				uint64_t *p;

				cap = cap ? cap * 2 : 4096;
				p = realloc(v, cap * sizeof(*v));
				if (!p) {
					free(v);
					elf_end(e);
					return -ENOMEM;
				}
				v = p;
			}
			v[cnt++] = sym.st_value;
			v[cnt++] = sym.st_size;
		}
	}
	elf_end(e);
	qsort(v, cnt / 2, 2 * sizeof(*v), cmp_u64);
	*out = v;
	*n = cnt / 2;
	return 0;
}

/* The poll table: every raw::poll instance, and the function it jumps to when its first
 * instruction (after an endbr64 and an empty frame) is a `jmp` (e9 rel32, eb rel8) to the start
 * of a function symbol. */
static int poll_table(struct rs *r)
{
	uint64_t *fs = NULL;
	size_t nfs = 0;

	r->polls = calloc(2 * r->syms.count[TSYM_POLL] + 1, sizeof(*r->polls));
	if (!r->polls)
		return -ENOMEM;
	if (func_syms(r->exe_fd, &fs, &nfs))
		nfs = 0;
	for (size_t i = 0; i < r->syms.nfns; i++) {
		const struct tsym_fn *f = &r->syms.fns[i];
		uint8_t b[16];
		uint64_t to = 0, at = f->addr;
		size_t k = 0;

		if (f->kind != TSYM_POLL)
			continue;
		r->polls[r->npolls++] = (struct rs_poll){ f->file_off, f->size, f->type };
		if (pread(r->exe_fd, b, sizeof(b), (off_t)f->file_off) != sizeof(b))
			continue;
		/* an endbr64, a frame made and dropped (frame-pointer builds): push %rbp; mov %rsp,%rbp;
		 * pop %rbp */
		if (!memcmp(b, "\xf3\x0f\x1e\xfa", 4))
			k = 4;
		if (!memcmp(b + k, "\x55\x48\x89\xe5\x5d", 5))
			k += 5;
		at += k;
		if (b[k] == 0xe9)
			to = at + 5 + (uint64_t)(int64_t)(int32_t)((uint32_t)b[k + 1] | (uint32_t)b[k + 2] << 8 |
							     (uint32_t)b[k + 3] << 16 | (uint32_t)b[k + 4] << 24);
		else if (b[k] == 0xeb)
			to = at + 2 + (uint64_t)(int64_t)(int8_t)b[k + 1];
		if (!to)
			continue;
		{
			size_t lo = 0, hi = nfs;

			while (lo < hi) {
				size_t mid = (lo + hi) / 2;

				if (fs[2 * mid] < to)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo < nfs && fs[2 * lo] == to)
				r->polls[r->npolls++] = (struct rs_poll){ to - (f->addr - f->file_off),
									 fs[2 * lo + 1], f->type };
		}
	}
	free(fs);
	qsort(r->polls, r->npolls, sizeof(*r->polls), cmp_poll);
	return 0;
}

/* The executable mappings of the program's own file (the raw::poll instances are there). */
static int read_maps(struct rs *r, char *err, size_t len)
{
	char path[64], line[PATH_MAX + 128];
	ssize_t n;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)r->o->pid);
	n = readlink(path, r->exe, sizeof(r->exe) - 1);
	if (n <= 0) {
		seterr(err, len, "pid %d: cannot read its executable: %s", (int)r->o->pid, strerror(errno));
		return -errno;
	}
	r->exe[n] = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)r->o->pid);
	fp = fopen(path, "re");
	if (!fp) {
		seterr(err, len, "pid %d: %s", (int)r->o->pid, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), fp) && r->nmaps < sizeof(r->maps) / sizeof(r->maps[0])) {
		unsigned long lo, hi, off;
		char perm[8], *p;
		int pos = 0;

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &lo, &hi, perm, &off, &pos) < 4 || !pos)
			continue;
		p = line + pos;
		p[strcspn(p, "\n")] = 0;
		if (perm[2] == 'x' && !strcmp(p, r->exe))
			r->maps[r->nmaps++] = (struct rs_map){ lo, hi, off };
	}
	fclose(fp);
	return 0;
}

/* The raw::poll instance holding address ip of the process, -1 if none. */
static int poll_at(const struct rs *r, uint64_t ip)
{
	uint64_t off = 0;
	size_t lo = 0, hi = r->npolls, i;
	bool in = false;

	for (i = 0; i < r->nmaps; i++)
		if (ip >= r->maps[i].lo && ip < r->maps[i].hi) {
			off = ip - r->maps[i].lo + r->maps[i].pgoff;
			in = true;
			break;
		}
	if (!in)
		return -1;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->polls[mid].file_off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	i = lo - 1;
	return off < r->polls[i].file_off + r->polls[i].size ? (int)i : -1;
}

/* File offset of runtime address v in the executable, or -1. */
static int64_t file_off(const struct rs *r, uint64_t v)
{
	for (size_t i = 0; i < r->nmaps; i++)
		if (v >= r->maps[i].lo && v < r->maps[i].hi)
			return (int64_t)(v - r->maps[i].lo + r->maps[i].pgoff);
	return -1;
}

/* The innermost stack-scan candidate that is a return address inside a raw::poll instance (an
 * x86-64 call right before it: e8 rel32, or ff /2 with a ModRM of 2, 3, 6 or 7 bytes), -1. */
static int scan_poll(const struct rs *r, const uint64_t *cand)
{
	for (int k = 0; k < TET_SCAN_CANDS && cand[k]; k++) {
		int64_t off = file_off(r, cand[k]);
		uint8_t b[8];
		int p = poll_at(r, cand[k] - 1);
		bool call;

		if (p < 0 || off < 8 || pread(r->exe_fd, b, sizeof(b), off - 8) != sizeof(b))
			continue;
		/* b[7] is the byte at the return address - 1 */
		call = b[3] == 0xe8 ||
		       (b[6] == 0xff && (b[7] & 0x38) == 0x10) ||
		       (b[5] == 0xff && (b[6] & 0x38) == 0x10) ||
		       (b[2] == 0xff && (b[3] & 0x38) == 0x10) ||
		       (b[1] == 0xff && (b[2] & 0x38) == 0x10);
		if (call)
			return p;
	}
	return -1;
}

static bool type_blocking(const char *t)
{
	return t && strstr(t, "BlockingTask<");
}

static const char *type_name(const struct rs *r, int type)
{
	if (type < 0 || (size_t)type >= r->syms.ntypes)
		return "(unknown)";
	return r->syms.types[type];
}

static void resolve_stack(struct rs *r, int fd, int32_t id)
{
	uint64_t ips[TET_STACK_DEPTH];
	struct rs_stack *st;
	const struct ss_frame *fr[16];
	char *hot = NULL, *leaf = NULL;
	int poll = -1;

	if (id < 0 || id >= RS_STACKS || r->stk[id].done)
		return;
	st = &r->stk[id];
	st->done = true;
	st->poll = st->type = -1;
	memset(ips, 0, sizeof(ips));
	if (bpf_map_lookup_elem(fd, &id, ips))
		return;
	for (int i = 0; i < TET_STACK_DEPTH && ips[i]; i++) {
		int p = poll_at(r, i ? ips[i] - 1 : ips[i]);
		size_t n;

		if (p >= 0) {
			poll = p;
			break;
		}
		n = ss_user(r->ss, (uint32_t)r->o->pid, ips[i], i > 0, fr, 16);
		for (size_t k = 0; k < n; k++) {
			/* kept bounded: only RS_NAME_MAX bytes are ever shown */
			if (!leaf && fr[k]->func)
				leaf = strndup(fr[k]->func, RS_NAME_MAX);
			if (!hot && fr[k]->user_code && fr[k]->func)
				hot = strndup(fr[k]->func, RS_NAME_MAX);
		}
	}
	st->poll = poll;
	if (poll >= 0) {
		st->type = r->polls[poll].type;
		st->blocking = type_blocking(type_name(r, st->type));
	}
	st->hot = hot;
	st->leaf = leaf;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct rs_sample *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_sleep(const void *a, const void *b)
{
	const struct rs_sleep *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->since < y->since ? -1 : x->since > y->since;
}

/* ---- aggregation ---- */

struct rs_count { const char *key; uint64_t n; };

/* false: not counted (cap entries already, or out of memory) */
static bool count_add(struct rs_count **v, size_t *n, const char *key, size_t cap)
{
	struct rs_count *p;

	for (size_t i = 0; i < *n; i++)
		if ((*v)[i].key == key || ((*v)[i].key && key && !strcmp((*v)[i].key, key))) {
			(*v)[i].n++;
			return true;
		}
	if (*n >= cap || !(p = realloc(*v, (*n + 1) * sizeof(**v))))
		return false;
	*v = p;
	(*v)[(*n)++] = (struct rs_count){ key, 1 };
	return true;
}

static int cmp_count(const void *a, const void *b)
{
	const struct rs_count *x = a, *y = b;

	return x->n > y->n ? -1 : x->n < y->n;
}

struct rs_type { uint64_t samples; struct rs_count *hot; size_t nhot; size_t ntasks; bool refused; };
struct rs_task { uint64_t id; int type; uint64_t samples; };
struct rs_thread { uint32_t tid; uint64_t samples, in_poll; };

struct rs_finding {
	bool blocked;
	int type;
	uint64_t task;
	uint32_t tid;
	uint64_t first, last, n;   /* on CPU: samples; blocked: since, ts */
	const char *hot;
	const char *syscall;
	char kframes[3][128];
	uint64_t blocked_ns;
};

/* The caps (RS_MAX_*; TET_TEST_SAMPLING_CAP=N lowers them all to N for the tests) and what each
 * refused: tasks, frames and task_ids count samples, the others entries. */
struct rs_caps { size_t tasks, threads, types, frames, findings, ids; };
struct rs_refused { uint64_t tasks, threads, types, frames, findings, ids; };

struct rs_out {
	struct rs_type *types;     /* by type index */
	struct rs_task *tasks;
	size_t ntasks;
	struct rs_thread *threads;
	size_t nthreads;
	struct rs_finding *f;
	size_t nf;
	uint64_t in_poll, read_before_set, no_poll_frame, conflicts, parked_sleeps, poll_sleeps;
	uint64_t period_ns, min_run;
	struct htab blk;           /* ids the worker loops' blocking tasks hold (→ (void *)1) */
	struct htab task_idx;      /* task id → its index in tasks + 1 */
	struct htab type_task;     /* (type, task id) seen (→ (void *)1) */
	size_t tasks_cap, ntypes;
	struct rs_caps cap;
	struct rs_refused refused;
};

static void caps_init(struct rs_caps *c)
{
	const char *e = getenv("TET_TEST_SAMPLING_CAP");
	size_t n = e && *e ? strtoul(e, NULL, 10) : 0;

	*c = (struct rs_caps){ RS_MAX_TASKS, RS_MAX_THREADS, RS_MAX_TYPES, RS_MAX_FRAMES,
			       RS_MAX_FINDINGS, RS_MAX_IDS };
	if (n) {
		c->tasks = n < c->tasks ? n : c->tasks;
		c->threads = n < c->threads ? n : c->threads;
		c->types = n < c->types ? n : c->types;
		c->frames = n < c->frames ? n : c->frames;
		c->findings = n < c->findings ? n : c->findings;
		c->ids = n < c->ids ? n : c->ids;
	}
}

/* Remembers (k1, k2) in t, up to the ids cap; false: refused (counted) */
static bool id_put(struct rs_out *o, struct htab *t, uint64_t k1, uint64_t k2)
{
	if (o->blk.len + o->type_task.len >= o->cap.ids || htab_put(t, k1, k2, (void *)1)) {
		o->refused.ids++;
		return false;
	}
	return true;
}

/* NULL: the task is not kept (the cap, or out of memory): refused.tasks counts the sample */
static struct rs_task *task_get(struct rs_out *o, uint64_t id)
{
	uintptr_t i = (uintptr_t)htab_get(&o->task_idx, id, 0);

	if (i)
		return &o->tasks[i - 1];
	if (o->ntasks >= o->cap.tasks)
		goto refuse;
	if (o->ntasks == o->tasks_cap) {
		size_t cap = o->tasks_cap ? o->tasks_cap * 2 : 256;
		struct rs_task *t = realloc(o->tasks, cap * sizeof(*t));

		if (!t)
			goto refuse;
		o->tasks = t;
		o->tasks_cap = cap;
	}
	if (htab_put(&o->task_idx, id, 0, (void *)(uintptr_t)(o->ntasks + 1)))
		goto refuse;
	o->tasks[o->ntasks] = (struct rs_task){ .id = id, .type = -1 };
	return &o->tasks[o->ntasks++];
refuse:
	o->refused.tasks++;
	return NULL;
}

static const char *sysname(int64_t nr)
{
	if (nr < 0 || (uint64_t)nr >= sizeof(tet_syscall_names) / sizeof(tet_syscall_names[0]) ||
	    !tet_syscall_names[nr])
		return NULL;
	return tet_syscall_names[nr];
}

static void add_finding(struct rs_out *o, const struct rs_finding *f)
{
	struct rs_finding *p;

	if (o->nf >= o->cap.findings || !(p = realloc(o->f, (o->nf + 1) * sizeof(*o->f)))) {
		o->refused.findings++;
		return;
	}
	o->f = p;
	o->f[o->nf++] = *f;
}

/* Each sample's poll frame and future type; the ids the worker loops' blocking tasks hold. */
static int classify(struct rs *r, struct rs_out *o, int fd)
{
	o->types = calloc(r->syms.ntypes + 1, sizeof(*o->types));
	if (!o->types)
		return -ENOMEM;
	o->period_ns = 1000000000ull / r->o->profile_hz;
	o->min_run = (r->o->long_poll_ns + o->period_ns - 1) / o->period_ns;
	if (o->min_run < 2)
		o->min_run = 2;
	qsort(r->s, r->ns, sizeof(*r->s), cmp_sample);
	qsort(r->z, r->nz, sizeof(*r->z), cmp_sleep);
	/* stacks; the ids the blocking tasks (worker loops) hold */
	for (size_t i = 0; i < r->ns; i++) {
		struct rs_sample *s = &r->s[i];
		struct rs_stack *st;

		int p;

		resolve_stack(r, fd, s->ustack);
		st = s->ustack >= 0 && s->ustack < RS_STACKS ? &r->stk[s->ustack] : NULL;
		/* the frame walk's poll frame, else the stack scan's */
		p = st && st->poll >= 0 ? st->poll : scan_poll(r, s->polls);
		s->poll = p;
		if (p >= 0 && (!st || st->poll < 0))
			r->scan_hits++;
		if (p < 0)
			s->type = s->task ? -2 : -1;
		else if (type_blocking(type_name(r, r->polls[p].type))) {
			s->type = -1;
			if (s->task && !htab_get(&o->blk, s->task, 0))
				id_put(o, &o->blk, s->task, 0);
		} else
			s->type = r->polls[p].type;
	}
	return 0;
}

/* A sleep of thread tid that began in [t0, t1): the sleeps are sorted by thread, then start. */
static bool slept_between(const struct rs *r, uint32_t tid, uint64_t t0, uint64_t t1)
{
	size_t lo = 0, hi = r->nz;

	while (lo < hi) {   /* the first sleep at or after (tid, t0) */
		size_t m = lo + (hi - lo) / 2;
		const struct rs_sleep *z = &r->z[m];

		if (z->tid < tid || (z->tid == tid && z->since < t0))
			lo = m + 1;
		else
			hi = m;
	}
	return lo < r->nz && r->z[lo].tid == tid && r->z[lo].since < t1;
}

/* Samples a then b (b the next of a's thread) can be of one poll: the same thread and poll frame,
 * and the thread did not sleep between: its count of voluntary switches (read at each sample) is
 * unchanged, and no sleep record of it began between. The count sees the sleeps that send no
 * record (tls_switch_out sends none when the slot is None, as while a current_thread runtime
 * parks); a preemption is not a voluntary switch: the poll goes on after it. */
static bool same_poll(const struct rs *r, const struct rs_sample *a, const struct rs_sample *b)
{
	return b->tid == a->tid && b->poll == a->poll && b->nvcsw == a->nvcsw &&
	       !slept_between(r, a->tid, a->ts, b->ts);
}

/* The task each sample in an async poll is charged to (see the top of the file). */
static void charge(struct rs *r, struct rs_out *o, int fd)
{
	(void)fd;
	/* the task charged */
	for (size_t i = 0; i < r->ns; i++) {
		struct rs_sample *s = &r->s[i];
		bool between = false;

		if (s->type < 0) {
			if (s->type == -2)
				o->no_poll_frame++;
			continue;
		}
		o->in_poll++;
		between = htab_get(&o->blk, s->task, 0) != NULL;
		if (s->task && !between) {
			s->rtask = s->task;
			continue;
		}
		o->read_before_set++;
		/* the next few samples of the same poll (same_poll: the boundaries of a run), then the
		 * previous one */
		for (size_t k = i + 1; k < r->ns && k <= i + RS_BORROW && same_poll(r, &r->s[k - 1], &r->s[k]); k++) {
			if (r->s[k].task && !htab_get(&o->blk, r->s[k].task, 0)) {
				s->rtask = r->s[k].task;
				break;
			}
		}
		if (!s->rtask && i && same_poll(r, &r->s[i - 1], s))
			s->rtask = r->s[i - 1].rtask;
	}
}

/* Per future type, task and thread. */
static void aggregate(struct rs *r, struct rs_out *o, int fd)
{
	(void)fd;
	/* aggregates */
	struct rs_thread *th = NULL;

	for (size_t i = 0; i < r->ns; i++) {
		struct rs_sample *s = &r->s[i];

		if (i == 0 || s->tid != r->s[i - 1].tid) {   /* sorted by thread */
			struct rs_thread *p = NULL;

			if (o->nthreads >= o->cap.threads ||
			    !(p = realloc(o->threads, (o->nthreads + 1) * sizeof(*o->threads)))) {
				o->refused.threads++;
				th = NULL;
			} else {
				o->threads = p;
				th = &o->threads[o->nthreads++];
				*th = (struct rs_thread){ .tid = s->tid };
			}
		}
		if (th)
			th->samples++;
		if (s->type < 0)
			continue;
		if (th)
			th->in_poll++;
		{
			struct rs_type *t = &o->types[s->type];
			struct rs_stack *st = s->ustack >= 0 && s->ustack < RS_STACKS ? &r->stk[s->ustack] : NULL;

			if (!t->samples && !t->refused && o->ntypes >= o->cap.types) {
				t->refused = true;
				o->refused.types++;
			}
			if (t->refused)
				continue;
			if (!t->samples)
				o->ntypes++;
			t->samples++;
			if (!count_add(&t->hot, &t->nhot, st && st->hot ? st->hot : st && st->leaf ? st->leaf : "[unknown]",
				       o->cap.frames))
				o->refused.frames++;
			if (s->rtask && !htab_get(&o->type_task, (uint64_t)s->type, s->rtask) &&
			    id_put(o, &o->type_task, (uint64_t)s->type, s->rtask))
				t->ntasks++;
		}
		if (s->rtask) {
			struct rs_task *tk = task_get(o, s->rtask);

			if (!tk)
				continue;
			if (tk->type >= 0 && tk->type != s->type)
				o->conflicts++;
			tk->type = s->type;
			tk->samples++;
		}
	}
}

/* long_poll on CPU: runs of samples on a thread. */
static void cpu_runs(struct rs *r, struct rs_out *o, int fd)
{
	(void)fd;
	/* on-CPU long polls: runs on a thread */
	for (size_t i = 0; i < r->ns;) {
		size_t j = i + 1;
		struct rs_sample *a = &r->s[i];
		uint64_t task = a->rtask;   /* the run's first known task */

		if (a->type < 0) {
			i++;
			continue;
		}
		while (j < r->ns && same_poll(r, &r->s[j - 1], &r->s[j])) {
			if (r->s[j].rtask && task && r->s[j].rtask != task)
				break;
			if (!task)
				task = r->s[j].rtask;
			j++;
		}
		if (j - i >= o->min_run) {
			struct rs_finding f = { .type = a->type, .task = task, .tid = a->tid,
						.first = a->ts, .last = r->s[j - 1].ts, .n = j - i };
			/* the run's hottest frame: the most frequent of its samples' */
			{
				struct rs_count *c = NULL;
				size_t nc = 0;

				for (size_t k = i; k < j; k++) {
					struct rs_stack *st = r->s[k].ustack >= 0 && r->s[k].ustack < RS_STACKS ?
							      &r->stk[r->s[k].ustack] : NULL;

					if (!count_add(&c, &nc, st && st->hot ? st->hot : st && st->leaf ? st->leaf : NULL,
						       o->cap.frames))
						o->refused.frames++;
				}
				qsort(c, nc, sizeof(*c), cmp_count);
				f.hot = nc ? c[0].key : NULL;
				free(c);
			}
			add_finding(o, &f);
		}
		i = j;
	}
}

/* long_poll blocked: sleeps inside async polls. */
static void sleeps(struct rs *r, struct rs_out *o, int fd)
{
	/* sleeps inside async polls */
	for (size_t i = 0; i < r->nz; i++) {
		struct rs_sleep *z = &r->z[i];
		struct rs_stack *st;

		int p;

		resolve_stack(r, fd, z->ustack);
		st = z->ustack >= 0 && z->ustack < RS_STACKS ? &r->stk[z->ustack] : NULL;
		p = st && st->poll >= 0 ? st->poll : scan_poll(r, z->polls);
		if (p < 0 || type_blocking(type_name(r, r->polls[p].type))) {
			o->parked_sleeps++;
			continue;
		}
		o->poll_sleeps++;
		if (z->ts - z->since < r->o->long_poll_ns)
			continue;
		{
			struct rs_finding f = { .blocked = true, .type = r->polls[p].type, .task = z->task,
						.tid = z->tid, .first = z->since, .last = z->ts,
						.hot = st && st->hot ? st->hot : st ? st->leaf : NULL,
						.syscall = sysname(z->syscall),
						.blocked_ns = (z->woken ? z->woken : z->ts) - z->since };
			bool between = false;

			between = htab_get(&o->blk, z->task, 0) != NULL;
			if (between)
				f.task = 0;
			if (z->kstack >= 0) {
				uint64_t ips[TET_STACK_DEPTH] = { 0 };
				int n = 0;

				if (!bpf_map_lookup_elem(fd, &z->kstack, ips))
					for (int k = 0; k < TET_STACK_DEPTH && ips[k] && n < 3; k++) {
						const struct ss_frame *fr;

						if (ss_kernel(r->ss, ips[k], &fr, 1) && fr->func) {
							snprintf(f.kframes[n], sizeof(f.kframes[n]), "%s", fr->func);
							n++;
						}
					}
			}
			add_finding(o, &f);
		}
	}
}

static int analyze(struct rs *r, struct rs_out *o, int fd)
{
	caps_init(&o->cap);
	if (classify(r, o, fd))
		return -ENOMEM;
	charge(r, o, fd);
	aggregate(r, o, fd);
	cpu_runs(r, o, fd);
	sleeps(r, o, fd);
	return 0;
}

/* ---- reports ---- */

static const char *const not_seen[][2] = {
	{ "wakes", "no probe on the waker functions: who woke a task is not seen" },
	{ "waker_counts", "no probe on waker clone/drop: waker counts are not seen" },
	{ "spawn_sites", "no probe on spawn: where a task was spawned is not seen" },
	{ "scheduling_delay", "no probe at a task's wake and its poll's start: the delay between is not seen" },
	{ "pending_times", "no probe at a poll's end: how long a task waited between polls is not seen" },
	{ "poll_counts", "polls are not counted: samples see a poll only while it runs on a CPU" },
};

/* A name from the traced binary: its first RS_NAME_MAX bytes, escaped by the writer (as the other
 * modes' type_name: jsonparts.c) */
static void jw_kname(struct jw *w, const char *key, const char *s)
{
	jw_key(w, key);
	if (s)
		jw_strn(w, s, strnlen(s, RS_NAME_MAX));
	else
		jw_null(w);
}

static int json_report(FILE *out, const struct rs *r, const struct rs_out *o, const struct tet_counters *c,
			const struct tet_sched_info *si)
{
	struct jw *w = jw_new(out, true);
	uint64_t dur = r->t1 - r->t0;

	jw_obj_begin(w);
	jw_kstr(w, "mode", "sampling");
	jw_key(w, "target");
	jw_obj_begin(w);
	jw_ku64(w, "pid", (uint64_t)r->o->pid);
	jw_kname(w, "executable", r->exe);
	jw_obj_end(w);
	jw_key(w, "task_id_slot");
	jw_obj_begin(w);
	jw_kstr(w, "method", tlsctx_method_name(r->tls.method));
	jw_kstr(w, "layout", tlsctx_layout_name(r->tls.layout));
	jw_ki64(w, "id_offset", r->tls.id_off);
	if (r->tls.layout == TLSCTX_TAGGED)
		jw_ki64(w, "tag_offset", r->tls.tag_off);
	jw_obj_end(w);
	jw_key(w, "capture");
	jw_obj_begin(w);
	jw_ku64(w, "profile_hz", r->o->profile_hz);
	jw_ku64(w, "period_ns", o->period_ns);
	jw_ku64(w, "duration_ns", dur);
	jw_ku64(w, "uprobes", 0);
	jw_kbool(w, "stack_scan", r->stack_scan);
	jw_ku64(w, "perf_events", si->perf_events);
	jw_kbool(w, "sched_tracepoints", si->on);
	jw_ku64(w, "samples", r->ns);
	jw_ku64(w, "sleeps", r->nz);
	jw_ku64(w, "slot_read_failures", r->noread);
	jw_ku64(w, "sample_drops", c->sample_drops);
	jw_ku64(w, "sleep_drops", c->offcpu_drops);
	jw_ku64(w, "stack_errors", c->stack_errors);
	jw_ku64(w, "records_over_memory_bound", r->kept_out);
	jw_ku64(w, "records_malformed", r->bad);
	jw_obj_end(w);
	jw_key(w, "refused");
	jw_obj_begin(w);
	jw_ku64(w, "tasks", o->refused.tasks);
	jw_ku64(w, "threads", o->refused.threads);
	jw_ku64(w, "future_types", o->refused.types);
	jw_ku64(w, "frames", o->refused.frames);
	jw_ku64(w, "findings", o->refused.findings);
	jw_ku64(w, "task_ids", o->refused.ids);
	jw_obj_end(w);
	jw_key(w, "attribution");
	jw_obj_begin(w);
	jw_kstr(w, "rule", "the innermost poll frame (a raw::poll<T, S> instance or the Harness<T, S>::poll it jumps to; from the frame-pointer walk, else from the scan of the stack's words for return addresses) gives the future type T (a BlockingTask's: not an async poll); Tokio's thread-local task id gives the task, unless it holds a worker loop's blocking-task id (read before the poll set it): then a neighbouring sample's id in the same poll, else unknown");
	jw_ku64(w, "in_async_poll", o->in_poll);
	jw_ku64(w, "read_before_set", o->read_before_set);
	jw_ku64(w, "no_poll_frame", o->no_poll_frame);
	jw_ku64(w, "poll_frame_by_stack_scan", r->scan_hits);
	jw_ku64(w, "id_type_conflicts", o->conflicts);
	jw_obj_end(w);
	jw_key(w, "future_types");
	jw_arr_begin(w);
	for (size_t t = 0; t < r->syms.ntypes; t++) {
		struct rs_type *ty = &o->types[t];

		if (!ty->samples)
			continue;
		qsort(ty->hot, ty->nhot, sizeof(*ty->hot), cmp_count);
		jw_obj_begin(w);
		jw_kname(w, "type", r->syms.types[t]);
		jw_ku64(w, "samples", ty->samples);
		jw_ku64(w, "cpu_ns_estimate", ty->samples * o->period_ns);
		jw_ku64(w, "tasks_seen", ty->ntasks);
		jw_key(w, "hottest_frames");
		jw_arr_begin(w);
		for (size_t k = 0; k < ty->nhot && k < RS_TOP; k++) {
			jw_obj_begin(w);
			jw_kname(w, "frame", ty->hot[k].key);
			jw_ku64(w, "samples", ty->hot[k].n);
			jw_obj_end(w);
		}
		jw_arr_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "tasks");
	jw_arr_begin(w);
	for (size_t i = 0; i < o->ntasks; i++) {
		jw_obj_begin(w);
		jw_ku64(w, "id", o->tasks[i].id);
		jw_kname(w, "type", type_name(r, o->tasks[i].type));
		jw_ku64(w, "samples", o->tasks[i].samples);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "threads");
	jw_arr_begin(w);
	for (size_t i = 0; i < o->nthreads; i++) {
		jw_obj_begin(w);
		jw_ku64(w, "tid", o->threads[i].tid);
		jw_ku64(w, "samples", o->threads[i].samples);
		jw_ku64(w, "in_async_poll", o->threads[i].in_poll);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "findings");
	jw_arr_begin(w);
	for (size_t i = 0; i < o->nf; i++) {
		const struct rs_finding *f = &o->f[i];

		jw_obj_begin(w);
		jw_kstr(w, "kind", "long_poll");
		jw_kstr(w, "seen_as", f->blocked ? "blocked" : "on_cpu");
		jw_kname(w, "future_type", type_name(r, f->type));
		jw_ku64(w, "task", f->task);
		jw_ku64(w, "tid", f->tid);
		jw_kname(w, "hottest_frame", f->hot);
		if (f->blocked) {
			jw_ku64(w, "off_cpu_ns", f->last - f->first);
			jw_ku64(w, "blocked_ns", f->blocked_ns);
			jw_kstr(w, "syscall", f->syscall);
			jw_key(w, "kernel_stack");
			jw_arr_begin(w);
			for (int k = 0; k < 3 && f->kframes[k][0]; k++)
				jw_strn(w, f->kframes[k], strnlen(f->kframes[k], sizeof(f->kframes[k])));
			jw_arr_end(w);
			jw_kstr(w, "duration_note", "measured at the thread's switch out and back in (sched_switch): exact");
		} else {
			jw_ku64(w, "samples", f->n);
			jw_ku64(w, "min_ns", (f->n - 1) * o->period_ns);
			jw_ku64(w, "max_ns", (f->n + 1) * o->period_ns);
			jw_kstr(w, "duration_note", "bounded by the sample period: n consecutive samples mean the poll ran on CPU between (n-1) and (n+1) periods");
		}
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "not_seen");
	jw_obj_begin(w);
	for (size_t i = 0; i < sizeof(not_seen) / sizeof(not_seen[0]); i++)
		jw_kstr(w, not_seen[i][0], not_seen[i][1]);
	jw_obj_end(w);
	jw_obj_end(w);
	return jw_finish(w);
}

/* Names from the traced binary, made printable (text.h); two buffers a line at most. */
static const char *san(const char *p, char *buf, size_t len)
{
	return p ? text_sanitize(p, strnlen(p, RS_NAME_MAX), 0, buf, len) : "-";
}

static void terminal(FILE *out, const struct rs *r, const struct rs_out *o)
{
	char b1[1400], b2[1400];

	fprintf(out, "tokio-ebpf-trace: sampling mode, pid %d, %u Hz, no uprobe; task id slot: %s, %s, tp%+lld\n",
		(int)r->o->pid, r->o->profile_hz, tlsctx_method_name(r->tls.method),
		tlsctx_layout_name(r->tls.layout), (long long)r->tls.id_off);
	fprintf(out, "  %zu samples (%llu in async polls; %llu read the slot before the poll set it), %zu sleeps\n",
		r->ns, (unsigned long long)o->in_poll, (unsigned long long)o->read_before_set, r->nz);
	fprintf(out, "Future types by CPU samples:\n");
	for (size_t t = 0; t < r->syms.ntypes; t++) {
		struct rs_type *ty = &o->types[t];

		if (!ty->samples)
			continue;
		fprintf(out, "  %6llu  %s  (hottest: %s)\n", (unsigned long long)ty->samples,
			san(r->syms.types[t], b1, sizeof(b1)), san(ty->nhot ? ty->hot[0].key : NULL, b2, sizeof(b2)));
	}
	fprintf(out, "Findings:\n");
	if (!o->nf)
		fprintf(out, "  none\n");
	for (size_t i = 0; i < o->nf; i++) {
		const struct rs_finding *f = &o->f[i];

		if (f->blocked)
			fprintf(out, "  long_poll: blocked %.1f ms until woken (off CPU %.1f ms: the figure held to the threshold) in %s inside a poll of %s (task %llu, thread %u; %s)\n",
				(double)f->blocked_ns / 1e6, (double)(f->last - f->first) / 1e6,
				f->syscall ? f->syscall : "an unknown system call",
				san(type_name(r, f->type), b1, sizeof(b1)), (unsigned long long)f->task, f->tid,
				san(f->hot, b2, sizeof(b2)));
		else
			fprintf(out, "  long_poll: on CPU %llu consecutive samples (%.1f-%.1f ms, bounded by the sample period) in a poll of %s (task %llu, thread %u; hottest %s)\n",
				(unsigned long long)f->n, (double)(f->n - 1) * o->period_ns / 1e6,
				(double)(f->n + 1) * o->period_ns / 1e6, san(type_name(r, f->type), b1, sizeof(b1)),
				(unsigned long long)f->task, f->tid, san(f->hot, b2, sizeof(b2)));
	}
	if (o->refused.tasks || o->refused.threads || o->refused.types || o->refused.frames ||
	    o->refused.findings || o->refused.ids)
		fprintf(out, "Not kept (tables full or out of memory): %llu task samples, %llu threads, %llu future types, %llu frame samples, %llu findings, %llu task ids\n",
			(unsigned long long)o->refused.tasks, (unsigned long long)o->refused.threads,
			(unsigned long long)o->refused.types, (unsigned long long)o->refused.frames,
			(unsigned long long)o->refused.findings, (unsigned long long)o->refused.ids);
	fprintf(out, "Not seen in this mode:");
	for (size_t i = 0; i < sizeof(not_seen) / sizeof(not_seen[0]); i++)
		fprintf(out, " %s", not_seen[i][0]);
	fprintf(out, " (no uprobe: see the JSON's not_seen)\n");
}

/* -o FILE: written to FILE.tmp.PID and renamed into place when complete (as report/outputs.c):
 * a failed run leaves no half-written report. */
static int write_json(const char *path, const struct rs *r, const struct rs_out *o,
		      const struct tet_counters *c, const struct tet_sched_info *si, char *err, size_t len)
{
	char tmp[PATH_MAX];
	FILE *f;
	int ret = 0;

	if (!strcmp(path, "-")) {
		if (json_report(stdout, r, o, c, si)) {
			seterr(err, len, "standard output: write failed");
			return -EIO;
		}
		return 0;
	}
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp)) {
		seterr(err, len, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	f = fopen(tmp, "we");
	if (!f) {
		ret = -errno;
		seterr(err, len, "%s: %s", tmp, strerror(errno));
		return ret;
	}
	if (json_report(f, r, o, c, si) | fclose(f)) {
		ret = -EIO;
		seterr(err, len, "%s: write failed", path);
	} else if (rename(tmp, path)) {
		ret = -errno;
		seterr(err, len, "%s: %s", path, strerror(errno));
	}
	if (ret)
		unlink(tmp);
	return ret;
}

int rs_preflight(pid_t pid, char *err, size_t len)
{
	struct tsym_table t = { 0 };
	struct tlsctx tls;
	char path[64];
	int ret;

#if !defined(__x86_64__)
	seterr(err, len, "--mode sampling reads the thread pointer of x86-64 only");
	return -EOPNOTSUPP;
#endif
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	ret = tsym_load(path, &t, err, len);
	if (ret)
		return ret;
	if (!t.has_symtab) {
		seterr(err, len, "--mode sampling: the executable of pid %d is stripped (no symbol table): neither the task id slot nor the future types of the polls can be found", (int)pid);
		ret = -ENODATA;
	} else if (!t.tokio || !t.count[TSYM_POLL]) {
		seterr(err, len, "--mode sampling: the executable of pid %d has no Tokio task functions (raw::poll): nothing to charge samples to", (int)pid);
		ret = -ENODATA;
	}
	tsym_free(&t);
	if (ret)
		return ret;
	ret = tlsctx_find(path, &tls);
	if (ret < 0) {
		seterr(err, len, "--mode sampling: %s", tls.why);
		return ret;
	}
	if (tls.method == TLSCTX_NONE) {
		seterr(err, len, "--mode sampling: Tokio's thread-local task id was not found: %s", tls.why);
		return -ENODATA;
	}
	return 0;
}

int rs_run(const struct rs_opts *o, FILE *summary, char *err, size_t len)
{
	struct rs r = { .o = o, .exe_fd = -1 };
	uint64_t poll_lo = 0, poll_hi = 0;
	struct rs_out out = { 0 };
	struct tet_counters c = { 0 };
	struct tet_sp *sp = NULL;
	char path[64];
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)o->pid);
	ret = tsym_load(path, &r.syms, err, len);
	if (ret)
		return ret;
	if (tlsctx_find(path, &r.tls) < 0 || r.tls.method == TLSCTX_NONE) {
		seterr(err, len, "--mode sampling: Tokio's thread-local task id was not found: %s", r.tls.why);
		ret = -ENODATA;
		goto out;
	}
	r.stk = calloc(RS_STACKS, sizeof(*r.stk));
	r.ss = ss_new();
	r.exe_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r.exe_fd < 0) {
		ret = -errno;
		seterr(err, len, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!r.stk || !r.ss || poll_table(&r)) {
		ret = -ENOMEM;
		seterr(err, len, "out of memory");
		goto out;
	}
	ret = read_maps(&r, err, len);
	if (ret)
		goto out;
	ss_add_pid(r.ss, (uint32_t)o->pid, err, len); /* symbols: best effort */
	/* the runtime range of the raw::poll instances, for the BPF stack scan: not needed (nor
	 * paid: ~10 us a sample) when the program has frame pointers */
	{
		struct ss_module_info mi;

		r.stack_scan = !(r.nmaps && !ss_module_info(r.ss, (uint32_t)o->pid, r.maps[0].lo, &mi) &&
				 mi.frame_pointers);
	}
	for (size_t i = 0; i < r.npolls && r.stack_scan; i++)
		for (size_t m = 0; m < r.nmaps; m++) {
			uint64_t lo = r.maps[m].lo + (r.polls[i].file_off - r.maps[m].pgoff);

			if (r.polls[i].file_off < r.maps[m].pgoff ||
			    lo >= r.maps[m].hi)
				continue;
			if (!poll_lo || lo < poll_lo)
				poll_lo = lo;
			if (lo + r.polls[i].size > poll_hi)
				poll_hi = lo + r.polls[i].size;
		}
	ret = tet_sp_open(&sp, &(struct tet_sp_opts){ .pid = o->pid, .ringbuf_bytes = o->ringbuf_bytes,
			  .profile_hz = o->profile_hz, .id_off = r.tls.id_off,
			  .tagged = r.tls.layout == TLSCTX_TAGGED, .poll_lo = poll_lo,
			  .poll_hi = poll_hi, .on_event = on_rec, .ctx = &r },
			  err, len);
	if (ret)
		goto out;
	if (!o->quiet)
		fprintf(stderr, "tokio-ebpf-trace: sampling pid %d at %u Hz: attached (%zu perf events, sched tracepoints %s; no uprobe)\n",
			(int)o->pid, o->profile_hz, tet_sp_ops.sched(sp)->perf_events,
			tet_sp_ops.sched(sp)->on ? "on" : "off");
	r.t0 = mono_ns();
	for (;;) {
		struct timespec ts = { 0, 100000000 };

		if (tet_sp_ops.drain(sp) < 0)
			break;
		if (o->stop && *o->stop)
			break;
		if (o->duration_ns && mono_ns() - r.t0 >= o->duration_ns)
			break;
		if (kill(o->pid, 0) && errno == ESRCH)
			break;
		nanosleep(&ts, NULL);
	}
	r.t1 = mono_ns();
	tet_sp_ops.end(sp, r.t1);
	tet_sp_ops.drain(sp);
	tet_sp_ops.counters(sp, &c);
	if (analyze(&r, &out, tet_sp_ops.stacks_fd(sp))) {
		ret = -ENOMEM;
		seterr(err, len, "--mode sampling: out of memory analysing the samples: no report written");
		goto out;
	}
	if (!o->quiet)
		terminal(summary, &r, &out);
	if (o->json_path)
		ret = write_json(o->json_path, &r, &out, &c, tet_sp_ops.sched(sp), err, len);
out:
	if (sp)
		tet_sp_ops.close(sp);
	for (size_t i = 0; r.stk && i < RS_STACKS; i++) {
		free(r.stk[i].hot);
		free(r.stk[i].leaf);
	}
	for (size_t t = 0; out.types && t < r.syms.ntypes; t++) {
		free(out.types[t].hot);
	}
	free(out.types);
	free(out.blk.e);
	free(out.task_idx.e);
	free(out.type_task.e);
	free(out.tasks);
	free(out.threads);
	free(out.f);
	free(r.stk);
	free(r.polls);
	free(r.s);
	free(r.z);
	if (r.ss)
		ss_free(r.ss);
	if (r.exe_fd >= 0)
		close(r.exe_fd);
	tsym_free(&r.syms);
	return ret;
}
