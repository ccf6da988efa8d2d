// SPDX-License-Identifier: MIT
/*
 * symbols.c — Tokio's task functions in a stock binary, for the uprobe fallback.
 *
 * What survives inlining and LTO: functions whose address is taken. A task's header points at
 * a static vtable per future type T and scheduler S (runtime/task/raw.rs, the same layout in
 * Tokio 1.24, 1.43 and 1.53):
 *
 *     Vtable { poll, schedule, dealloc, try_read_output, drop_join_handle_slow,
 *              drop_abort_handle, shutdown, trailer_offset, scheduler_offset, id_offset }
 *
 * so raw::poll<T, S>, raw::dealloc<T, S>, raw::shutdown<T, S> … exist out of line once per
 * (T, S), and the waker vtable (runtime/task/waker.rs: clone_waker, wake_by_val, wake_by_ref,
 * drop_waker) once. Harness<T, S>::complete, which every ending task passes through (Ready,
 * panic, cancellation), is out of line in the three lines' release builds too, but nothing
 * forces it to be; the fallback reports what it did not find and goes on without it.
 *
 * Matching: every symbol naming the tokio crate is demangled with libiberty (cplus_demangle,
 * DMGL_RUST: legacy `_ZN…17h<hash>E` and v0 `_R…`, LLVM's `.llvm.N` suffix tolerated) and
 * compared by path.
 *
 * The future type of a raw::poll instance, best source first:
 *   DWARF   — when present (even debuginfo=line-tables-only, the sample builds' setting) the
 *             subprogram at raw::poll or at the Harness::poll it jumps to is named
 *             "poll<T, S>" (libdw). Exact.
 *   v0      — `_RINv…raw4poll…` demangles to `tokio::runtime::task::raw::poll::<T, S>`. Exact.
 *   symbols — legacy mangling (rustc's default) does not spell T: every instance demangles to
 *             `tokio::runtime::task::raw::poll`. What it calls does: raw::poll is a 5-byte
 *             `jmp Harness<T, S>::poll`, which calls Core<T, S>::poll, which calls T's own
 *             poll function (an async fn's `path::{{closure}}`, or <T as Future>::poll) unless
 *             it was inlined; Harness::poll also drops the task on completion through
 *             drop_in_place<Box<tokio::runtime::task::core::Cell<T, S>>> (or Stage<T>, Core<T,
 *             S>). Drop glue spells its type even in legacy mangling. The direct calls (call/
 *             jmp rel32, call/jmp through a GOT slot) of raw::poll and of the Tokio task
 *             functions it reaches (three calls deep) are read; each called function is one
 *             piece of evidence: the set of types its names give. LLVM merges functions whose
 *             code is identical (rustc's default -Z merge-functions=aliases): a merged drop
 *             glue carries the names of every type it serves (the true one among them), and a
 *             merged function's own calls belong to whichever instance was kept, so they are
 *             not followed. The type is the one named by every piece of evidence; when several
 *             are (futures whose drop glue and poll code are the same, poll inlined), the
 *             instance is named by all of them, "A | B" — there is nothing in the symbols that
 *             tells them apart.
 *   The task vtable (the word holding raw::poll's address: an R_X86_64_RELATIVE addend in a
 *   PIE) is found and reported, but its siblings dealloc<T, S>/shutdown<T, S> are not used as
 *   evidence: LLVM re-points vtables at the one merged instance it keeps, without an alias, so
 *   what they call names another future (measured on the 1.43 sample build: 21 deallocs for
 *   31 vtables; walking them named 13 of 31 instances wrongly).
 * Measured against DWARF on the three sample builds (tests/t_fallback_types.sh), the symbols
 * alone name 17 of 31 instances exactly and 14 by a set holding the right type, none wrongly.
 * Instances with no evidence are named `raw::poll@0xADDR`.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <libiberty/demangle.h>

#include "events.h"
#include "seterr.h"
#include "symbols.h"

#define MAX_DEPTH 3
#define MAX_SCAN  (64u << 10)   /* bytes of one function scanned for calls */
#define MAX_VISIT 256           /* functions visited per raw::poll instance */

/* ---- names ---- */
char *tsym_demangle(const char *mangled)
{
	const char *h;
	char *d, *copy;

	if (strncmp(mangled, "_ZN", 3) && strncmp(mangled, "_R", 2))
		return NULL;
	d = cplus_demangle(mangled, DMGL_RUST | DMGL_PARAMS | DMGL_ANSI);
	if (d || strncmp(mangled, "_ZN", 3))
		return d;
	/* libiberty takes a legacy name for Rust only when its hash has enough distinct digits
	 * (rustc's always do); a made-up one ("17h1111111111111111E") gets a real-looking one */
	h = strstr(mangled, "17h");
	if (!h || strlen(h) < 20 || h[19] != 'E')
		return NULL;
	copy = strdup(mangled);
	if (!copy)
		return NULL;
	memcpy(copy + (h - mangled) + 3, "0123456789abcdef", 16);
	d = cplus_demangle(copy, DMGL_RUST | DMGL_PARAMS | DMGL_ANSI);
	free(copy);
	return d;
}

char *tsym_first_generic(const char *s, const char *prefix)
{
	const char *p = strstr(s, prefix), *b, *q;
	int depth = 0;

	if (!p)
		return NULL;
	p += strlen(prefix);
	if (*p != '<')
		return NULL;
	b = ++p;
	for (q = b; *q; q++) {
		if (*q == '<' || *q == '(' || *q == '[')
			depth++;
		else if (*q == '>' || *q == ')' || *q == ']') {
			if (!depth)
				break;
			depth--;
		} else if (*q == ',' && !depth)
			break;
		else if (*q == '-' && q[1] == '>')
			q++; /* "fn() -> T" inside a type */
	}
	if (!*q || q == b)
		return NULL;
	return strndup(b, (size_t)(q - b));
}

static bool starts(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

static bool ends(const char *s, const char *p)
{
	size_t n = strlen(s), m = strlen(p);

	return n >= m && !strcmp(s + n - m, p);
}

/* A path (legacy: no generics; v0: "::<…>" follows). */
static bool is_path(const char *d, const char *path)
{
	size_t n = strlen(path);

	return !strncmp(d, path, n) && (!d[n] || !strncmp(d + n, "::<", 3));
}

static int classify(const char *d)
{
	static const struct { enum tsym_kind kind; const char *path; } fns[] = {
#define TOKIO_FN(kind, key, path, mangled, check) { TSYM_##kind, path },
#include "tokio_fns.def"
	};

	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if (is_path(d, fns[i].path))
			return fns[i].kind;
	/* legacy "tokio::…::Harness<T,S>::complete", v0 "<tokio::…::Harness<X, Y>>::complete" */
	if ((starts(d, "tokio::runtime::task::harness::Harness<") ||
	     starts(d, "<tokio::runtime::task::harness::Harness<")) && ends(d, "::complete"))
		return TSYM_COMPLETE;
	return -1;
}

const char *tsym_kind_name(enum tsym_kind k)
{
	static const char *const names[TSYM_KINDS] = {
		[TSYM_POLL] = "raw::poll",
		[TSYM_WAKE_BY_VAL] = "waker::wake_by_val",
		[TSYM_WAKE_BY_REF] = "waker::wake_by_ref",
		[TSYM_CLONE] = "waker::clone_waker",
		[TSYM_DROP] = "waker::drop_waker",
		[TSYM_COMPLETE] = "Harness::complete",
		[TSYM_DEALLOC] = "raw::dealloc",
		[TSYM_SHUTDOWN] = "raw::shutdown",
	};

	return (unsigned)k < TSYM_KINDS ? names[k] : "?";
}

const char *tsym_src_name(enum tsym_type_src s)
{
	static const char *const names[TSYM_SRCS] = {
		[TSYM_SRC_NONE] = "none", [TSYM_SRC_V0] = "v0-mangling",
		[TSYM_SRC_CELL] = "drop-glue", [TSYM_SRC_DROP] = "vtable-drop",
		[TSYM_SRC_POLLFN] = "poll-fn", [TSYM_SRC_DWARF] = "dwarf",
	};

	return (unsigned)s < TSYM_SRCS ? names[s] : "?";
}

/* ---- the file ---- */
struct fsym {
	uint64_t addr, size;
	const char *name;   /* into the file's string table */
	char *dm;           /* demangled on demand; (char *)-1 = not Rust */
	unsigned names;     /* distinct names at this address (merged functions: > 1) */
};

struct rel {
	uint64_t off, val;
};

struct seg {
	uint64_t vaddr, memsz, off, filesz;
	bool exec;
};

struct img {
	const char *path;
	unsigned char *buf;
	size_t size;
	Elf *elf;
	struct fsym *syms;
	size_t nsyms;
	struct rel *rels;
	size_t nrels;
	struct seg segs[32];
	size_t nsegs;
	bool pie;
};

static int cmp_fsym(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_rel(const void *a, const void *b)
{
	const struct rel *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static struct fsym *sym_at(struct img *m, uint64_t addr)
{
	size_t lo = 0, hi = m->nsyms;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->syms[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->nsyms && m->syms[lo].addr == addr ? &m->syms[lo] : NULL;
}

static const char *sym_dm(struct fsym *s)
{
	if (!s->dm) {
		char *d = tsym_demangle(s->name);

		s->dm = d ? d : (char *)-1;
	}
	return s->dm == (char *)-1 ? NULL : s->dm;
}

static const struct seg *seg_of(const struct img *m, uint64_t vaddr, bool file_backed)
{
	for (size_t i = 0; i < m->nsegs; i++) {
		const struct seg *s = &m->segs[i];
		uint64_t lim = file_backed ? s->filesz : s->memsz;

		if (vaddr >= s->vaddr && vaddr - s->vaddr < lim)
			return s;
	}
	return NULL;
}

/* Bytes at a link-time address, NULL when not in the file. */
static const unsigned char *bytes_at(const struct img *m, uint64_t vaddr, size_t n)
{
	const struct seg *s = seg_of(m, vaddr, true);
	uint64_t off;

	if (!s || vaddr - s->vaddr + n > s->filesz)
		return NULL;
	off = s->off + (vaddr - s->vaddr);
	if (off + n > m->size)
		return NULL;
	return m->buf + off;
}

/* The 8-byte word at vaddr as the loader makes it (relocation addend, or the bytes). */
static bool word_at(const struct img *m, uint64_t vaddr, uint64_t *out)
{
	size_t lo = 0, hi = m->nrels;
	const unsigned char *b;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->rels[mid].off < vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->nrels && m->rels[lo].off == vaddr) {
		*out = m->rels[lo].val;
		return true;
	}
	b = bytes_at(m, vaddr, 8);
	if (!b)
		return false;
	memcpy(out, b, 8);
	return true;
}

static int img_open(struct img *m, const char *path, char *err, size_t len)
{
	GElf_Ehdr eh;
	size_t phnum;
	Elf_Scn *scn = NULL;
	struct stat st;
	ssize_t got;
	size_t done = 0;
	int fd, ret = 0;

	memset(m, 0, sizeof(*m));
	m->path = path;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		seterr(err, len, "%s: %s", path, strerror(errno));
		return ret;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		seterr(err, len, "%s: not a regular file", path);
		return -EISDIR;
	}
	m->size = (size_t)st.st_size;
	m->buf = malloc(m->size ? m->size : 1);
	if (!m->buf) {
		close(fd);
		seterr(err, len, "out of memory");
		return -ENOMEM;
	}
	while (done < m->size && (got = read(fd, m->buf + done, m->size - done)) > 0)
		done += (size_t)got;
	close(fd);
	if (done != m->size) {
		seterr(err, len, "%s: short read", path);
		return -EIO;
	}
	elf_version(EV_CURRENT);
	m->elf = elf_memory((char *)m->buf, m->size);
	if (!m->elf || elf_kind(m->elf) != ELF_K_ELF || !gelf_getehdr(m->elf, &eh)) {
		seterr(err, len, "%s: not an ELF file", path);
		return -ENOEXEC;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		seterr(err, len, "%s: the uprobe fallback reads x86-64 ELF files only", path);
		return -ENOEXEC;
	}
	m->pie = eh.e_type == ET_DYN;
	if (elf_getphdrnum(m->elf, &phnum)) {
		seterr(err, len, "%s: malformed program headers", path);
		return -EBADMSG;
	}
	for (size_t i = 0; i < phnum && m->nsegs < 32; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(m->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		m->segs[m->nsegs++] = (struct seg){ ph.p_vaddr, ph.p_memsz, ph.p_offset,
						    ph.p_filesz, (ph.p_flags & PF_X) != 0 };
	}
	while ((scn = elf_nextscn(m->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) {
			struct fsym *v;

			d = elf_getdata(scn, NULL);
			if (!d || !sh.sh_entsize)
				continue;
			n = sh.sh_size / sh.sh_entsize;
			v = realloc(m->syms, (m->nsyms + n) * sizeof(*v));
			if (!v) {
				seterr(err, len, "out of memory");
				return -ENOMEM;
			}
			m->syms = v;
			for (size_t i = 0; i < n; i++) {
				GElf_Sym s;
				const char *name;

				if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
				    !s.st_value || s.st_shndx == SHN_UNDEF)
					continue;
				name = elf_strptr(m->elf, sh.sh_link, s.st_name);
				if (!name || !*name)
					continue;
				m->syms[m->nsyms++] = (struct fsym){ s.st_value, s.st_size, name, NULL, 0 };
			}
		} else if (sh.sh_type == SHT_RELA && (sh.sh_flags & SHF_ALLOC)) {
			struct rel *v;

			d = elf_getdata(scn, NULL);
			if (!d || !sh.sh_entsize)
				continue;
			n = sh.sh_size / sh.sh_entsize;
			v = realloc(m->rels, (m->nrels + n) * sizeof(*v));
			if (!v) {
				seterr(err, len, "out of memory");
				return -ENOMEM;
			}
			m->rels = v;
			for (size_t i = 0; i < n; i++) {
				GElf_Rela r;

				if (!gelf_getrela(d, (int)i, &r))
					continue;
				if (GELF_R_TYPE(r.r_info) == R_X86_64_RELATIVE)
					m->rels[m->nrels++] = (struct rel){ r.r_offset, (uint64_t)r.r_addend };
			}
		}
	}
	if (m->syms)
		qsort(m->syms, m->nsyms, sizeof(*m->syms), cmp_fsym);
	/* LLVM merges identical functions (rustc's default -Z merge-functions=aliases): one
	 * address, several names — none of which tells which instance it is */
	for (size_t i = 0, j; i < m->nsyms; i = j) {
		unsigned names = 1;

		for (j = i + 1; j < m->nsyms && m->syms[j].addr == m->syms[i].addr; j++) {
			bool dup = false;

			for (size_t k = i; k < j && !dup; k++)
				dup = !strcmp(m->syms[k].name, m->syms[j].name);
			names += !dup;
		}
		for (size_t k = i; k < j; k++)
			m->syms[k].names = names;
	}
	if (m->rels)
		qsort(m->rels, m->nrels, sizeof(*m->rels), cmp_rel);
	return ret;
}

static void img_close(struct img *m)
{
	for (size_t i = 0; i < m->nsyms; i++)
		if (m->syms[i].dm && m->syms[i].dm != (char *)-1)
			free(m->syms[i].dm);
	free(m->syms);
	free(m->rels);
	if (m->elf)
		elf_end(m->elf);
	free(m->buf);
	memset(m, 0, sizeof(*m));
}

static bool has_section(Elf *elf, unsigned type)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			return true;
	return false;
}

/* ---- call targets ---- */
typedef void (*callee_fn)(struct fsym *target, void *ctx);

/* Direct calls and jumps of a function: E8/E9 rel32, FF 15/FF 25 disp32(%rip) through a GOT
 * slot. Only targets that are the exact start of a function symbol count. */
static void for_each_callee(struct img *m, const struct fsym *f, callee_fn cb, void *ctx)
{
	uint64_t n = f->size < MAX_SCAN ? f->size : MAX_SCAN;
	const unsigned char *b = bytes_at(m, f->addr, n);

	if (!b || !n)
		return;
	for (uint64_t i = 0; i + 5 <= n; i++) {
		uint64_t tgt = 0;
		struct fsym *t;
		int32_t rel;

		if (b[i] == 0xe8 || b[i] == 0xe9) {
			memcpy(&rel, b + i + 1, 4);
			tgt = f->addr + i + 5 + (uint64_t)(int64_t)rel;
		} else if (b[i] == 0xff && i + 6 <= n && (b[i + 1] == 0x15 || b[i + 1] == 0x25)) {
			memcpy(&rel, b + i + 2, 4);
			if (!word_at(m, f->addr + i + 6 + (uint64_t)(int64_t)rel, &tgt))
				continue;
		} else {
			continue;
		}
		t = sym_at(m, tgt);
		if (t && t != f)
			cb(t, ctx);
	}
}

/* ---- future types ---- */
/* One piece of evidence for an instance: the future type T and, from Cell<T, S> / Core<T, S>,
 * the scheduler S (NULL when the name does not give it). */
struct cand {
	char *t, *s;
	enum tsym_type_src src;
	unsigned hits;     /* evidence sets (called functions) naming it */
	unsigned last;     /* the last evidence set that counted it */
};

struct inst {
	struct tsym_fn *fn;
	struct cand c[48];
	size_t nc;
	uint64_t seen[MAX_VISIT];    /* callees already counted */
	size_t nseen;
	unsigned vote;               /* current evidence set (marks its candidates once) */
	unsigned counted;            /* the last set that named a candidate */
	unsigned sets;               /* sets that named one */
	unsigned shared_by;          /* vtables holding this raw::poll (> 1: merged instances) */
};

struct walk {
	struct img *m;
	struct inst *in;
	uint64_t visited[MAX_VISIT];
	size_t nvisited;
	struct fsym *queue[MAX_VISIT];
	int qdepth[MAX_VISIT];
	bool qpoll[MAX_VISIT];      /* reached from raw::poll (not a drop path) */
	size_t qhead, qtail;
	int depth;
	bool from_poll;
};

static void enqueue(struct walk *w, struct fsym *f, int depth, bool from_poll)
{
	if (depth > MAX_DEPTH || w->nvisited >= MAX_VISIT || w->qtail >= MAX_VISIT)
		return;
	for (size_t i = 0; i < w->nvisited; i++)
		if (w->visited[i] == f->addr)
			return;
	w->visited[w->nvisited++] = f->addr;
	w->queue[w->qtail] = f;
	w->qdepth[w->qtail] = depth;
	w->qpoll[w->qtail] = from_poll;
	w->qtail++;
}

/* Counts t (the future type; s, the scheduler, only told apart in the name) once per evidence
 * set: the names of one called function (all its names when LLVM merged several). */
static void add_cand(struct inst *in, char *t, char *s, enum tsym_type_src src)
{
	free(s);
	if (in->counted != in->vote) {
		in->counted = in->vote;
		in->sets++;
	}
	for (size_t i = 0; i < in->nc; i++) {
		struct cand *c = &in->c[i];

		if (!strcmp(c->t, t)) {
			if (c->last != in->vote)
				c->hits++;
			c->last = in->vote;
			if (src < c->src)
				c->src = src; /* the strongest kind of evidence seen */
			free(t);
			return;
		}
	}
	if (in->nc == sizeof(in->c) / sizeof(in->c[0])) {
		free(t);
		return;
	}
	in->c[in->nc++] = (struct cand){ t, NULL, src, 1, in->vote };
}

/* Types a dealloc/shutdown drops that are not the future: the scheduler handle, the output,
 * the join error, Tokio's own parts. */
static bool not_the_future(const char *t)
{
	static const char *const skip[] = {
		"tokio::runtime::", "alloc::sync::Arc<tokio::runtime::", "core::option::Option<",
		"core::result::Result<", "alloc::boxed::Box<dyn core::any::Any",
		"alloc::boxed::Box<tokio::runtime::", "alloc::string::", "alloc::vec::",
		"core::cell::", "std::io::",
	};

	for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
		if (starts(t, skip[i]))
			return true;
	return false;
}

static bool std_path(const char *d)
{
	return starts(d, "tokio::") || starts(d, "core::") || starts(d, "std::") ||
	       starts(d, "alloc::") || starts(d, "<tokio::") || starts(d, "<core::") ||
	       starts(d, "<std::") || starts(d, "<alloc::");
}

/* Evidence from one name of a called function. */
static void evidence(struct walk *w, const char *d)
{
	static const char *const cells[] = {
		"tokio::runtime::task::core::Cell", "tokio::runtime::task::core::Core",
		"tokio::runtime::task::core::CoreStage", "tokio::runtime::task::core::Stage",
	};
	char *inner, *box, *ty;

	if (starts(d, "core::ptr::drop_in_place<")) {
		inner = tsym_first_generic(d, "core::ptr::drop_in_place");
		if (!inner)
			return;
		if (starts(inner, "alloc::boxed::Box<tokio::runtime::task::core::")) {
			box = tsym_first_generic(inner, "alloc::boxed::Box");
			free(inner);
			inner = box;
			if (!inner)
				return;
		}
		for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
			size_t n = strlen(cells[i]);
			char *s = NULL;
			const char *p;
			int depth = 0;

			if (strncmp(inner, cells[i], n) || inner[n] != '<')
				continue;
			ty = tsym_first_generic(inner, cells[i]);
			if (!ty)
				break;
			/* the second generic argument (Cell, Core): the scheduler */
			for (p = inner + n + 1 + strlen(ty); *p == ',' || *p == ' '; p++)
				;
			if (p > inner + n + 1 + strlen(ty) && *p) {
				const char *q = p;

				for (; *q && !(depth == 0 && *q == '>'); q++)
					depth += *q == '<' ? 1 : *q == '>' ? -1 : 0;
				s = strndup(p, (size_t)(q - p));
			}
			add_cand(w->in, ty, s, TSYM_SRC_CELL);
			free(inner);
			return;
		}
		if (!w->from_poll && w->depth == 0 && !not_the_future(inner))
			add_cand(w->in, inner, NULL, TSYM_SRC_DROP);
		else
			free(inner);
		return;
	}
	if (w->from_poll && w->depth >= 1) {
		/* T's poll, reached through Harness::poll / Core::poll */
		static const char fut[] = " as core::future::future::Future>::poll";
		const char *as = strstr(d, fut);

		if (d[0] == '<' && as && !as[sizeof(fut) - 1] && !std_path(d + 1))
			add_cand(w->in, strndup(d + 1, (size_t)(as - d - 1)), NULL, TSYM_SRC_POLLFN);
		else if (!std_path(d) && (ends(d, "::{{closure}}") || strstr(d, "::{closure#")))
			add_cand(w->in, strdup(d), NULL, TSYM_SRC_POLLFN);
	}
}

static bool follow(const char *d)
{
	return starts(d, "tokio::runtime::task::") || starts(d, "<tokio::runtime::task::") ||
	       starts(d, "core::ptr::drop_in_place<tokio::runtime::task::") ||
	       starts(d, "core::ptr::drop_in_place<alloc::boxed::Box<tokio::runtime::task::");
}

static void on_callee(struct fsym *t, void *ctx)
{
	struct walk *w = ctx;
	struct img *m = w->m;
	bool fol = false;
	size_t i = (size_t)(t - m->syms);

	/* every name of a merged function is evidence (the assignment sorts them out) */
	for (size_t k = 0; k < w->in->nseen; k++)
		if (w->in->seen[k] == t->addr)
			return;
	if (w->in->nseen < MAX_VISIT)
		w->in->seen[w->in->nseen++] = t->addr;
	w->in->vote++;
	while (i > 0 && m->syms[i - 1].addr == t->addr)
		i--;
	for (; i < m->nsyms && m->syms[i].addr == t->addr; i++) {
		const char *d = sym_dm(&m->syms[i]);

		if (!d)
			continue;
		evidence(w, d);
		fol |= follow(d);
	}
	/* what a merged function calls belongs to whichever instance LLVM kept: no evidence */
	if (fol && t->names == 1)
		enqueue(w, t, w->depth + 1, w->from_poll);
}

static bool is_kind(struct tsym_table *t, uint64_t addr, enum tsym_kind k)
{
	for (size_t i = 0; i < t->nfns; i++)
		if (t->fns[i].kind == k && t->fns[i].addr == addr)
			return true;
	return false;
}

/* The vtable slot(s) holding addr; returns the count (up to max). */
static size_t slots_of(struct img *m, uint64_t addr, uint64_t *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < m->nrels && n < max; i++)
		if (m->rels[i].val == addr)
			out[n++] = m->rels[i].off;
	if (n || m->pie)
		return n;
	/* not position-independent: the words hold the addresses */
	for (size_t s = 0; s < m->nsegs && n < max; s++) {
		if (m->segs[s].exec)
			continue;
		for (uint64_t a = (m->segs[s].vaddr + 7) & ~7ull;
		     a + 8 <= m->segs[s].vaddr + m->segs[s].filesz && n < max; a += 8) {
			uint64_t v;

			if (word_at(m, a, &v) && v == addr)
				out[n++] = a;
		}
	}
	return n;
}

/* Gathers the evidence of one raw::poll instance: its vtable's sibling functions and what
 * they, and raw::poll itself, call. */
static void gather(struct img *m, struct tsym_table *t, struct inst *in)
{
	struct walk w = { .m = m, .in = in };
	struct tsym_fn *fn = in->fn;
	struct fsym *self = sym_at(m, fn->addr);
	uint64_t slot[4];
	size_t nslots = slots_of(m, fn->addr, slot, 4);

	if (self)
		enqueue(&w, self, 0, true);
	/* The vtable (reported, not walked: its dealloc/shutdown … are no evidence — LLVM merges
	 * identical instances and re-points the other vtables at the one it keeps, without an
	 * alias; measured on the 1.43 sample build: 21 deallocs for 31 vtables, and walking them
	 * named 13 of 31 instances wrongly). A raw::poll held by several vtables is itself such a
	 * merge: it polls futures of several types. */
	if (nslots)
		fn->vtable = slot[0];
	in->shared_by = (unsigned)nslots;
	while (w.qhead < w.qtail) {
		size_t i = w.qhead++;

		w.depth = w.qdepth[i];
		w.from_poll = w.qpoll[i];
		for_each_callee(m, w.queue[i], on_callee, &w);
	}
}

/* A stripped file is still recognisably Tokio: its panic locations name the crate's sources
 * ("…/tokio-1.53.2/src/runtime/…"), older lines name their workers "tokio-runtime-worker". */
/* The release in the first "tokio-1.X.Y/src" of buf ("1.X.Y" into out); false: none. */
static bool release_in(const unsigned char *buf, size_t size, char *out, size_t len)
{
	const unsigned char *p = buf, *end = buf + size;

	while ((p = memmem(p, (size_t)(end - p), "tokio-1.", 8))) {
		const unsigned char *q = p + 8;

		while (q < end && q - p < 40 && ((*q >= '0' && *q <= '9') || *q == '.'))
			q++;
		if (end - q >= 4 && !memcmp(q, "/src", 4) && q > p + 8) {
			if (out)
				snprintf(out, len, "%.*s", (int)(q - p - 6), (const char *)p + 6);
			return true;
		}
		p += 8;
	}
	return false;
}

static bool tokio_strings(const struct img *m)
{
	if (memmem(m->buf, m->size, "tokio-runtime-worker", 20))
		return true;
	return release_in(m->buf, m->size, NULL, 0);
}

int tsym_tokio_release(const char *path, char *out, size_t len)
{
	struct stat st;
	void *map;
	bool found;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !st.st_size) {
		close(fd);
		return -ENOENT;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	found = release_in(map, (size_t)st.st_size, out, len);
	munmap(map, (size_t)st.st_size);
	return found ? 0 : -ENOENT;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The type is in every evidence set of its instance (a set holds all names of one called
 * function): keep the candidates named by every set (by the most, if none is). One left: the
 * type. Several: functions merged across futures whose code is the same leave no trace of
 * which is which — the instance is named by all of them, "A | B". */
static char *resolve(struct inst *in, enum tsym_type_src *src, unsigned *ncand)
{
	unsigned best = 0;
	char *keep[48], *out;
	size_t n = 0, len = 0;

	for (size_t c = 0; c < in->nc; c++)
		if (in->c[c].hits > best)
			best = in->c[c].hits;
	*ncand = 0;
	if (!best)
		return NULL;
	*src = TSYM_SRCS;
	for (size_t c = 0; c < in->nc; c++) {
		if (in->c[c].hits != best)
			continue;
		keep[n++] = in->c[c].t;
		len += strlen(in->c[c].t) + 3;
		if (in->c[c].src < *src)
			*src = in->c[c].src;
	}
	qsort(keep, n, sizeof(*keep), cmp_str);
	out = malloc(len + 1);
	if (!out)
		return NULL;
	out[0] = 0;
	for (size_t i = 0; i < n; i++) {
		if (i)
			strcat(out, " | ");
		strcat(out, keep[i]);
	}
	*ncand = (unsigned)n;
	return out;
}

static int add_type(struct tsym_table *t, char *ty)
{
	char **v;

	for (size_t i = 0; i < t->ntypes; i++) {
		if (!strcmp(t->types[i], ty)) {
			free(ty);
			return (int)i;
		}
	}
	v = realloc(t->types, (t->ntypes + 1) * sizeof(*v));
	if (!v) {
		free(ty);
		return -ENOMEM;
	}
	t->types = v;
	t->types[t->ntypes] = ty;
	return (int)t->ntypes++;
}

static int poll_types(struct img *m, struct tsym_table *t)
{
	struct inst *v = calloc(t->count[TSYM_POLL] ? t->count[TSYM_POLL] : 1, sizeof(*v));
	size_t n = 0;
	int ret = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < t->nfns; i++) {
		struct tsym_fn *fn = &t->fns[i];
		char *ty;

		if (fn->kind != TSYM_POLL)
			continue;
		v[n].fn = fn;
		if (fn->src == TSYM_SRC_DWARF) {
			n++;
			continue;
		}
		ty = tsym_first_generic(fn->demangled, "tokio::runtime::task::raw::poll::");
		if (ty) {
			v[n].c[0] = (struct cand){ ty, NULL, TSYM_SRC_V0, 1, 0 };
			v[n].nc = 1;
			v[n].sets = 1;
		} else {
			gather(m, t, &v[n]);
		}
		n++;
	}
	for (size_t i = 0; i < n && !ret; i++) {
		struct tsym_fn *fn = v[i].fn;
		char *ty, buf[64];
		int idx;

		if (fn->src == TSYM_SRC_DWARF) {
			t->by_src[fn->src]++;
			continue;
		}
		ty = resolve(&v[i], &fn->src, &fn->candidates);
		if (ty && v[i].shared_by > fn->candidates)
			fn->candidates = v[i].shared_by;
		if (!ty) {
			snprintf(buf, sizeof(buf), "raw::poll@0x%llx", (unsigned long long)fn->addr);
			ty = strdup(buf);
			fn->src = TSYM_SRC_NONE;
		}
		if (!ty) {
			ret = -ENOMEM;
			break;
		}
		idx = add_type(t, ty);
		if (idx < 0)
			ret = idx;
		fn->type = idx;
		t->by_src[fn->src]++;
		t->ambiguous += fn->candidates > 1;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t c = 0; c < v[i].nc; c++) {
			free(v[i].c[c].t);
			free(v[i].c[c].s);
		}
	free(v);
	return ret;
}

/* ---- DWARF ---- */
/* When the binary has DWARF (even debuginfo=line-tables-only), the subprogram of a generic
 * instance is named with its generic arguments: "poll<T, S>" at raw::poll's address or at the
 * Harness::poll it jumps to. Exact, and preferred over the symbol evidence. */
struct dw_want {
	uint64_t pc;
	struct tsym_fn *fn;
	char *type;
};

static int cmp_want(const void *a, const void *b)
{
	const struct dw_want *x = a, *y = b;

	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

static struct dw_want *want_at(struct dw_want *v, size_t n, uint64_t pc)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (v[mid].pc < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].pc == pc ? &v[lo] : NULL;
}

static void dw_walk(Dwarf_Die *die, struct dw_want *v, size_t n, int depth)
{
	Dwarf_Die child;

	do {
		int tag = dwarf_tag(die);
		Dwarf_Addr lo;

		if (tag == DW_TAG_subprogram && dwarf_lowpc(die, &lo) == 0) {
			struct dw_want *w = want_at(v, n, lo);
			Dwarf_Attribute at;
			const char *name;

			if (w && !w->type && dwarf_attr_integrate(die, DW_AT_name, &at) &&
			    (name = dwarf_formstring(&at)) && starts(name, "poll<"))
				w->type = tsym_first_generic(name, "poll");
		}
		if ((tag == DW_TAG_compile_unit || tag == DW_TAG_namespace ||
		     tag == DW_TAG_structure_type || tag == DW_TAG_subprogram) && depth < 64 &&
		    dwarf_child(die, &child) == 0)
			dw_walk(&child, v, n, depth + 1);
	} while (dwarf_siblingof(die, die) == 0);
}

/* Fills the type of every raw::poll instance DWARF names; returns how many. */
static size_t dwarf_types(struct img *m, struct tsym_table *t)
{
	struct dw_want *v = calloc(2 * (t->count[TSYM_POLL] + 1), sizeof(*v));
	Dwarf_Off off = 0, next;
	size_t hsize, n = 0, named = 0;
	Dwarf *dw;
	int fd;

	if (!v)
		return 0;
	for (size_t i = 0; i < t->nfns; i++) {
		struct tsym_fn *fn = &t->fns[i];
		const unsigned char *b = bytes_at(m, fn->addr, 5);

		if (fn->kind != TSYM_POLL)
			continue;
		v[n++] = (struct dw_want){ fn->addr, fn, NULL };
		if (b && b[0] == 0xe9) { /* jmp Harness::poll */
			int32_t rel;

			memcpy(&rel, b + 1, 4);
			v[n++] = (struct dw_want){ fn->addr + 5 + (uint64_t)(int64_t)rel, fn, NULL };
		}
	}
	qsort(v, n, sizeof(*v), cmp_want);
	fd = open(m->path, O_RDONLY | O_CLOEXEC);
	dw = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
	while (dw && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(dw, off + hsize, &cu))
			dw_walk(&cu, v, n, 0);
		off = next;
	}
	if (dw)
		dwarf_end(dw);
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; i < n; i++) {
		struct tsym_fn *fn = v[i].fn;

		if (v[i].type && fn->src != TSYM_SRC_DWARF) {
			int idx = add_type(t, v[i].type);

			v[i].type = NULL;
			if (idx < 0)
				continue;
			fn->type = idx;
			fn->src = TSYM_SRC_DWARF;
			fn->candidates = 1;
			named++;
		}
		free(v[i].type);
	}
	free(v);
	return named;
}

int tsym_load(const char *path, struct tsym_table *t, char *err, size_t len)
{
	struct img m;
	int ret;

	memset(t, 0, sizeof(*t));
	ret = img_open(&m, path, err, len);
	if (ret)
		goto out;
	t->path = strdup(path);
	t->has_symtab = has_section(m.elf, SHT_SYMTAB);
	for (size_t i = 0; i < m.nsyms; i++) {
		struct fsym *s = &m.syms[i];
		const struct seg *sg;
		struct tsym_fn *v;
		const char *d;
		int k;

		if (!strstr(s->name, "5tokio"))
			continue;
		t->tokio = true;
		d = sym_dm(s);
		if (!d || (k = classify(d)) < 0)
			continue;
		/* the same function in .symtab and .dynsym, or two names of one address */
		if (is_kind(t, s->addr, (enum tsym_kind)k))
			continue;
		sg = seg_of(&m, s->addr, true);
		if (!sg || !sg->exec)
			continue; /* not code in the file: cannot be probed */
		v = realloc(t->fns, (t->nfns + 1) * sizeof(*v));
		if (!v) {
			ret = -ENOMEM;
			goto out;
		}
		t->fns = v;
		t->fns[t->nfns++] = (struct tsym_fn){
			.kind = (enum tsym_kind)k, .addr = s->addr, .size = s->size,
			.file_off = s->addr - sg->vaddr + sg->off, .name = strdup(s->name),
			.demangled = strdup(d), .type = -1, .src = TSYM_SRC_NONE, .vtable = 0,
		};
		t->count[k]++;
		if (s->name[0] == '_' && s->name[1] == 'R')
			t->v0 = true;
	}
	if (!t->tokio && !t->has_symtab)
		t->tokio = tokio_strings(&m);
	/* TET_FALLBACK_NO_DWARF=1: symbols only (tests compare the two) */
	if (t->count[TSYM_POLL] && !t->v0 && !getenv("TET_FALLBACK_NO_DWARF"))
		t->dwarf = dwarf_types(&m, t) > 0;
	ret = poll_types(&m, t);
out:
	if (ret == -ENOMEM)
		seterr(err, len, "out of memory");
	img_close(&m);
	if (ret)
		tsym_free(t);
	return ret;
}

void tsym_free(struct tsym_table *t)
{
	for (size_t i = 0; i < t->nfns; i++) {
		free(t->fns[i].name);
		free(t->fns[i].demangled);
	}
	for (size_t i = 0; i < t->ntypes; i++)
		free(t->types[i]);
	free(t->fns);
	free(t->types);
	free(t->path);
	memset(t, 0, sizeof(*t));
}

int tsym_usable(const struct tsym_table *t, char *err, size_t len)
{
	if (t->count[TSYM_POLL])
		return 0;
	if (!t->tokio) {
		seterr(err, len, "%s is not a Tokio program: no tokio USDT probes and no Tokio %s",
		       t->path, t->has_symtab ? "symbols" : "strings (no symbol table either: stripped)");
		return -ENODATA;
	}
	if (!t->has_symtab) {
		seterr(err, len, "%s is stripped: no symbol table, so no Tokio task functions to put uprobes on (it is a Tokio program: Tokio's strings are in it); rebuild it with scripts/tokio-usdt-build (USDT probes), or keep its symbol table (Cargo profile: strip = false or strip = \"debuginfo\")",
		       t->path);
		return -ENODATA;
	}
	seterr(err, len, "%s: Tokio symbols, but tokio::runtime::task::raw::poll is not among them (inlined everywhere?): the uprobe fallback cannot see polls; rebuild it with scripts/tokio-usdt-build",
	       t->path);
	return -ENODATA;
}

unsigned tsym_probes(const struct tsym_table *t)
{
	unsigned m = 0;

	if (t->count[TSYM_POLL])
		m |= 1u << TET_EV_POLL_BEGIN | 1u << TET_EV_POLL_END;
	if (t->count[TSYM_WAKE_BY_VAL] || t->count[TSYM_WAKE_BY_REF])
		m |= 1u << TET_EV_WAKE;
	if (t->count[TSYM_CLONE])
		m |= 1u << TET_EV_WAKER_CLONE;
	if (t->count[TSYM_DROP])
		m |= 1u << TET_EV_WAKER_DROP;
	if ((t->count[TSYM_COMPLETE] && t->count[TSYM_POLL]) || t->count[TSYM_DEALLOC])
		m |= 1u << TET_EV_TERMINATE;
	return m;
}
