// SPDX-License-Identifier: MIT
/*
 * sampstack.c — the stacks of `trace --mode sampling` (see sampstack.h).
 *
 * Poll frames. A stock build's raw::poll<T, S> is often a single `jmp` to Harness<T, S>::poll,
 * never on a stack: both count (poll_table). A build without frame pointers gives the leaf
 * frame only; the BPF side then sends the words of the user stack that fall in the poll
 * functions' address range (sched.bpf.h scan_polls), and the innermost that is a return
 * address (a call instruction before it, read from the file) names the poll (scan_poll).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "sampstack.h"
#include "seterr.h"
#include "stacksym.h"
#include "symbols.h"
#include "text.h"

struct sst_stack {           /* one user stack, resolved once */
	bool done;
	int poll;            /* innermost poll function, -1 none */
	char *hot;           /* innermost frame of the program's own code above the poll */
	char *leaf;          /* innermost frame */
};

struct sst_map { uint64_t lo, hi, pgoff; };

/* A function that polls one future type: a raw::poll<T, S> instance, or the Harness<T, S>::poll
 * instance it jumps to (a stock build's raw::poll is often one `jmp`: never on a stack). */
struct sst_pollfn { uint64_t file_off, size; int type; };

struct sst {
	pid_t pid;
	struct tsym_table syms;
	struct sst_pollfn *polls;         /* poll functions by file offset */
	size_t npolls;
	struct sst_map maps[64];
	size_t nmaps;
	char exe[PATH_MAX];
	int exe_fd;
	struct ss *ss;
	struct sst_stack *stk;          /* by stack id */
	sst_lookup_fn lookup;
	void *lookup_ctx;
	bool stack_scan;                /* no frame pointers: the BPF side scans the stacks */
	uint64_t poll_lo, poll_hi;
};

static int cmp_poll(const void *a, const void *b)
{
	const struct sst_pollfn *x = a, *y = b;

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
static int poll_table(struct sst *r)
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
		r->polls[r->npolls++] = (struct sst_pollfn){ f->file_off, f->size, f->type };
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
				r->polls[r->npolls++] = (struct sst_pollfn){ to - (f->addr - f->file_off),
									 fs[2 * lo + 1], f->type };
		}
	}
	free(fs);
	qsort(r->polls, r->npolls, sizeof(*r->polls), cmp_poll);
	return 0;
}

/* The executable mappings of the program's own file (the raw::poll instances are there). */
static int read_maps(struct sst *r, char *err, size_t len)
{
	char path[64], line[PATH_MAX + 128];
	ssize_t n;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)r->pid);
	n = readlink(path, r->exe, sizeof(r->exe) - 1);
	if (n <= 0) {
		seterr(err, len, "pid %d: cannot read its executable: %s", (int)r->pid, strerror(errno));
		return -errno;
	}
	r->exe[n] = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)r->pid);
	fp = fopen(path, "re");
	if (!fp) {
		seterr(err, len, "pid %d: %s", (int)r->pid, strerror(errno));
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
			r->maps[r->nmaps++] = (struct sst_map){ lo, hi, off };
	}
	fclose(fp);
	return 0;
}

/* The poll function holding address ip of the process, -1 if none. */
static int poll_at(const struct sst *r, uint64_t ip)
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
static int64_t file_off(const struct sst *r, uint64_t v)
{
	for (size_t i = 0; i < r->nmaps; i++)
		if (v >= r->maps[i].lo && v < r->maps[i].hi)
			return (int64_t)(v - r->maps[i].lo + r->maps[i].pgoff);
	return -1;
}

/* The innermost stack-scan candidate that is a return address inside a raw::poll instance (an
 * x86-64 call right before it: e8 rel32, or ff /2 with a ModRM of 2, 3, 6 or 7 bytes), -1. */
static int scan_poll(const struct sst *r, const uint64_t *cand)
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

bool sst_type_blocking(const struct sst *s, int type)
{
	return type >= 0 && (size_t)type < s->syms.ntypes && s->syms.types[type] &&
	       strstr(s->syms.types[type], "BlockingTask<");
}

static struct sst_stack *resolve_stack(struct sst *r, int32_t id)
{
	uint64_t ips[TET_STACK_DEPTH];
	struct sst_stack *st;
	const struct ss_frame *fr[16];
	char *hot = NULL, *leaf = NULL;
	int poll = -1;

	if (id < 0 || id >= SST_STACKS)
		return NULL;
	st = &r->stk[id];
	if (st->done)
		return st;
	st->done = true;
	st->poll = -1;
	memset(ips, 0, sizeof(ips));
	if (!r->lookup || r->lookup(r->lookup_ctx, id, ips))
		return st;
	for (int i = 0; i < TET_STACK_DEPTH && ips[i]; i++) {
		int p = poll_at(r, i ? ips[i] - 1 : ips[i]);
		size_t n;

		if (p >= 0) {
			poll = p;
			break;
		}
		n = ss_user(r->ss, (uint32_t)r->pid, ips[i], i > 0, fr, 16);
		for (size_t k = 0; k < n; k++) {
			/* kept bounded: only SST_NAME_MAX bytes are ever shown */
			if (!leaf && fr[k]->func)
				leaf = strndup(fr[k]->func, SST_NAME_MAX);
			if (!hot && fr[k]->user_code && fr[k]->func)
				hot = strndup(fr[k]->func, SST_NAME_MAX);
		}
	}
	st->poll = poll;
	st->hot = hot;
	st->leaf = leaf;
	return st;
}

int sst_poll(struct sst *s, int32_t ustack, const uint64_t *cand, bool *by_scan)
{
	const struct sst_stack *st = resolve_stack(s, ustack);

	*by_scan = false;
	if (st && st->poll >= 0)
		return st->poll;
	{
		int p = scan_poll(s, cand);

		*by_scan = p >= 0;
		return p;
	}
}

int sst_poll_type(const struct sst *s, int poll)
{
	return poll >= 0 && (size_t)poll < s->npolls ? s->polls[poll].type : -1;
}

const char *sst_frame(struct sst *s, int32_t ustack)
{
	const struct sst_stack *st = resolve_stack(s, ustack);

	return st && st->hot ? st->hot : st ? st->leaf : NULL;
}

size_t sst_kframes(struct sst *s, int32_t kstack, char (*out)[SST_KFRAME], size_t max)
{
	uint64_t ips[TET_STACK_DEPTH] = { 0 };
	size_t n = 0;

	if (kstack < 0 || !s->lookup || s->lookup(s->lookup_ctx, kstack, ips))
		return 0;
	for (int k = 0; k < TET_STACK_DEPTH && ips[k] && n < max; k++) {
		const struct ss_frame *fr;

		if (ss_kernel(s->ss, ips[k], &fr, 1) && fr->func) {
			snprintf(out[n], SST_KFRAME, "%s", fr->func);
			n++;
		}
	}
	return n;
}

const char *sst_exe(const struct sst *s)
{
	return s->exe;
}

const struct tsym_table *sst_syms(const struct sst *s)
{
	return &s->syms;
}

const char *const *sst_types(const struct sst *s, size_t *n)
{
	*n = s->syms.ntypes;
	return (const char *const *)s->syms.types;
}

bool sst_stack_scan(const struct sst *s, uint64_t *lo, uint64_t *hi)
{
	*lo = s->poll_lo;
	*hi = s->poll_hi;
	return s->stack_scan;
}

void sst_set_lookup(struct sst *s, sst_lookup_fn fn, void *ctx)
{
	s->lookup = fn;
	s->lookup_ctx = ctx;
}

/* The runtime range of the poll functions, for the BPF stack scan: not needed (nor paid:
 * ~10 us a sample) when the program has frame pointers. */
static void scan_range(struct sst *r)
{
	struct ss_module_info mi;

	r->stack_scan = !(r->nmaps && !ss_module_info(r->ss, (uint32_t)r->pid, r->maps[0].lo, &mi) &&
			  mi.frame_pointers);
	for (size_t i = 0; i < r->npolls && r->stack_scan; i++)
		for (size_t m = 0; m < r->nmaps; m++) {
			uint64_t lo = r->maps[m].lo + (r->polls[i].file_off - r->maps[m].pgoff);

			if (r->polls[i].file_off < r->maps[m].pgoff ||
			    lo >= r->maps[m].hi)
				continue;
			if (!r->poll_lo || lo < r->poll_lo)
				r->poll_lo = lo;
			if (lo + r->polls[i].size > r->poll_hi)
				r->poll_hi = lo + r->polls[i].size;
		}
}

int sst_open(struct sst **out, pid_t pid, char *err, size_t len)
{
	struct sst *r = calloc(1, sizeof(*r));
	char path[64];
	int ret;

	*out = NULL;
	if (!r) {
		seterr(err, len, "out of memory");
		return -ENOMEM;
	}
	r->pid = pid;
	r->exe_fd = -1;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	ret = tsym_load(path, &r->syms, err, len);
	if (ret) {
		free(r);
		return ret;
	}
	r->stk = calloc(SST_STACKS, sizeof(*r->stk));
	r->ss = ss_new();
	r->exe_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->exe_fd < 0) {
		ret = -errno;
		seterr(err, len, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (!r->stk || !r->ss || poll_table(r)) {
		ret = -ENOMEM;
		seterr(err, len, "out of memory");
		goto fail;
	}
	ret = read_maps(r, err, len);
	if (ret)
		goto fail;
	ss_add_pid(r->ss, (uint32_t)pid, err, len); /* symbols: best effort */
	scan_range(r);
	*out = r;
	return 0;
fail:
	sst_close(r);
	return ret;
}

void sst_close(struct sst *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->stk && i < SST_STACKS; i++) {
		free(s->stk[i].hot);
		free(s->stk[i].leaf);
	}
	free(s->stk);
	free(s->polls);
	if (s->ss)
		ss_free(s->ss);
	if (s->exe_fd >= 0)
		close(s->exe_fd);
	tsym_free(&s->syms);
	free(s);
}

/* ---- the whole user stack, for --stacks, --pprof (report/folded.c, pprof.c) ---- */

/* "src/pathology.rs" from ".../sample-service/src/pathology.rs" (as why.c shows files) */
static const char *short_path(const char *p)
{
	const char *s = NULL, *q = p;

	while ((q = strstr(q, "/src/"))) {
		s = q + 1;
		q++;
	}
	return s ? s : p;
}

/* One frame as the other modes' stacks show it (why.c frame_str): "func (file:line)" for the
 * program's own code with line info, else "func"; printable UTF-8 (text_sanitize), cut. */
static void frame_name(const struct ss_frame *f, char *out, size_t len)
{
	char name[600], file[400];
	const char *at = strchr(f->func, '@'); /* symbol versions: nanosleep@GLIBC_2.2.5 */

	text_sanitize(f->func, at && at > f->func ? (size_t)(at - f->func) : strlen(f->func), 300,
		      name, sizeof(name));
	int n;

	if (f->file && f->line && f->user_code) {
		text_sanitize(short_path(f->file), strlen(short_path(f->file)), 160, file, sizeof(file));
		n = snprintf(out, len, "%s (%s:%u)", name, file, f->line);
	} else {
		n = snprintf(out, len, "%s", name);
	}
	if (n >= (int)len) {   /* cut by snprintf: not inside a UTF-8 sequence */
		size_t e = len - 1;

		while (e && ((unsigned char)out[e - 1] & 0xc0) == 0x80)
			e--;
		if (e && (unsigned char)out[e - 1] >= 0xc0)
			e--;
		out[e] = 0;
	}
}

/* Whether the code at addr keeps frame pointers (the frame-pointer walk's return address read
 * through its frame is good). */
static bool fp_at(struct sst *s, uint64_t addr)
{
	struct ss_module_info mi;

	return !ss_module_info(s->ss, (uint32_t)s->pid, addr, &mi) && mi.path && mi.frame_pointers;
}

size_t sst_ustack_frames(struct sst *s, int32_t ustack, char (*out)[SST_FRAME_MAX], size_t max,
			 bool *cut)
{
	uint64_t ips[TET_STACK_DEPTH] = { 0 };
	const struct ss_frame *fr[16];
	bool prev_fp = false;
	size_t n = 0;

	/* an executable without frame pointers: its frame-pointer walk past the leaf is noise */
	*cut = s->stack_scan;
	if (ustack < 0 || ustack >= SST_STACKS || !s->lookup || s->lookup(s->lookup_ctx, ustack, ips))
		return 0;
	/* else why.c's rule: a return address is only as good as the frame pointer it was read
	 * through; the walk goes past a frame only when that frame's code keeps frame pointers, and
	 * the leaf's caller is kept when it lands in such code (a libc leaf leaves %rbp alone) */
	for (int i = 0; i < TET_STACK_DEPTH && ips[i] && n < max; i++) {
		bool fp = fp_at(s, ips[i]);
		size_t k;

		if ((i && s->stack_scan) || (i == 1 && !prev_fp && !fp) || (i > 1 && !prev_fp))
			break;
		k = ss_user(s->ss, (uint32_t)s->pid, ips[i], i > 0, fr, 16);
		for (size_t j = 0; j < k && n < max; j++)
			if (fr[j]->func)
				frame_name(fr[j], out[n++], SST_FRAME_MAX);
		prev_fp = fp;
	}
	return n;
}
