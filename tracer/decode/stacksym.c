// SPDX-License-Identifier: MIT
/*
 * stacksym.c — addresses of BPF stack traces → frames.
 *
 * Processes and modules. ss_add_pid reads /proc/PID/maps itself rather than calling
 * dwfl_linux_proc_report, which builds one Dwfl per process and opens files later, by path.
 * Here each executable mapping names a module, one per ELF file, shared by every process that
 * maps it: found again by (device, inode) from the maps line, or — a copy of the same file
 * elsewhere, another container — by build-id. A new module's file is opened at once, through
 * /proc/PID/map_files/START-END (the very file mapped, even deleted or in another mount
 * namespace), else /proc/PID/root/PATH, else PATH; so a process that exits afterwards still
 * resolves. Each module gets its own Dwfl holding only that file, reported at bias 0: module
 * addresses are the file's own virtual addresses, and a process address becomes one through
 * the mapping's file offset and the file's PT_LOAD headers. The vDSO has no file: it is the
 * tracer's own (one kernel), copied into a memfd. Separate debug files are looked for locally
 * by build-id (/usr/lib/debug/.build-id), never through debuginfod: no network from a tracer.
 *
 * One address. The symbol table names the containing function (libiberty demangles Rust and
 * C++); it is sorted once per module, as libdwfl's dwfl_module_addrinfo scans every symbol for
 * each address (1.5 ms an address on the Rust sample service). DWARF adds file:line and the
 * inline chain. The unit comes from .debug_aranges; its functions' code ranges (through
 * namespaces, where Rust and C++ nest them) are indexed on the unit's first use; from the
 * function holding the address, one descent into the child scopes holding it gives the
 * concrete path subprogram → inlined_subroutine → … . The innermost frame takes the line
 * table's file:line; each DW_TAG_inlined_subroutine is a frame named by its abstract origin
 * (linkage name demangled, else DW_AT_name) and hands its DW_AT_call_file/call_line to the
 * frame outside it. (dwarf_getscopes would follow an inlined instance into its abstract
 * origin's scopes, not the caller's, and walks the whole unit per address; eu-addr2line walks
 * it a second time with dwarf_getscopes_die.)
 *
 * Cache. Frames are kept per (module, address in the module): processes of one binary and
 * repeated addresses are resolved once. Frames live in blocks and strings are interned, both
 * freed only by ss_free (the caller holds pointers into them); at most SS_MAX_ADDRS addresses.
 * Module facts (the frame-pointer scan) are computed once per module. Strings from the binary
 * are cut at SS_STR_MAX bytes, at a UTF-8 boundary.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <libelf.h>
#include <libiberty/demangle.h>

#include "htab.h"
#include "seterr.h"
#include "stacksym.h"
#include "symbols.h"

#define MAX_INLINE   32          /* frames of one address */
#define MAX_SCOPES   64          /* DIE nesting followed */
#define MAX_LOADS    16          /* PT_LOAD headers kept per module */
#define FP_SAMPLE    2000        /* functions read by the frame-pointer scan */
#define FP_MIN_SIZE  16
#define FRAME_BLOCK  4096
#define SIZELESS_MAX 0x10000     /* a symbol without size names at most this far past it */
#define VDSO_MAX     (1u << 20)

struct load {                    /* a PT_LOAD header: file range → virtual address */
	uint64_t off, filesz, vaddr;
};

struct fsym {                    /* a code symbol */
	uint64_t addr, size;     /* module address */
	const char *name;        /* libdwfl's (valid while the Dwfl lives) */
	const char *shown;       /* demangled and interned, on first use */
	int rank;                /* at one address: 0 global, 1 weak, 2 local */
	bool func;               /* STT_FUNC */
};

struct fn_range {                /* a function's code (one of its ranges) */
	uint64_t lo, hi;         /* DWARF addresses */
	Dwarf_Off die;
};

struct cu_funcs {                /* the functions of one DWARF unit, by address */
	Dwarf_Off cu;
	struct fn_range *r;
	size_t n;
};

struct module {
	uint32_t id;             /* 1…; 0 is the kernel in the cache */
	char *path;              /* as the process maps it, " (deleted)" cut */
	const char *base;        /* its basename */
	char *build_id;          /* hex, NULL when none */
	Dwfl *dwfl;              /* NULL: the file could not be opened or read as ELF */
	Dwfl_Module *dm;
	Dwarf_Addr bias;
	struct load loads[MAX_LOADS];
	size_t nloads;
	struct fsym *syms;       /* code symbols by address, on first use (libdwfl's own lookup
				  * scans every symbol for each address) */
	size_t nsyms;
	bool syms_done;
	struct cu_funcs *cus;    /* by unit offset, each filled on first use (else each address
				  * would walk its unit's top-level DIEs) */
	size_t ncus;
	bool exe;                /* the main executable of some process */
	bool system;             /* under /lib, /usr/lib… */
	bool vdso;
	bool info_done;
	struct ss_module_info info;
};

struct file_key {                /* a file as /proc/PID/maps names it */
	uint64_t dev, ino;
	struct module *m;
};

struct map {
	uint64_t start, end, pgoff;
	struct module *m;
};

struct proc {
	uint32_t pid;
	struct map *maps;        /* executable file mappings, by start */
	size_t nmaps;
};

struct entry {                   /* a cache slot; frames == NULL: empty */
	uint64_t addr;
	uint32_t mod, n;
	const struct ss_frame *frames;
};

struct fblock {
	struct fblock *next;
	size_t used;
	struct ss_frame f[FRAME_BLOCK];
};

struct ksym {
	uint64_t addr;
	size_t name;             /* offset in knames */
};

struct ss {
	struct module **mods;
	size_t nmods;
	struct file_key *keys;
	size_t nkeys;
	struct module *vdso;
	bool vdso_tried;
	struct proc *procs;      /* by pid */
	size_t nprocs;
	struct entry *cache;     /* open addressing, capacity a power of two */
	size_t cache_cap, cache_n;
	struct fblock *blocks;
	char **strs;             /* interned strings, open addressing */
	size_t strs_cap, strs_n;
	int kstate;              /* 0: kallsyms not read yet; 1: names; -1: no names */
	struct ksym *ksyms;
	size_t nksyms;
	char *knames;
};

static const struct ss_frame unknown_frame = { .func = "[unknown]" };
static const struct ss_frame kernel_frame = { .func = "[kernel]", .kernel = true };

/* ---- small containers ---- */

/* The array p with room for element n (its count): grown by doubling. NULL: no memory (p is
 * still valid). */
static void *room(void *p, size_t n, size_t size)
{
	if (n && (n < 4 || (n & (n - 1))))
		return p;
	return reallocarray(p, n ? 2 * n : 4, size);
}

/* Length of s cut at SS_STR_MAX bytes, not inside a UTF-8 sequence. */
static size_t cut_len(const char *s)
{
	size_t n = strnlen(s, SS_STR_MAX + 1);

	if (n <= SS_STR_MAX)
		return n;
	n = SS_STR_MAX;
	while (n > SS_STR_MAX - 4 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

static int strs_grow(struct ss *s)
{
	size_t cap = s->strs_cap ? 2 * s->strs_cap : 1024;
	char **t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < s->strs_cap; i++) {
		size_t j;

		if (!s->strs[i])
			continue;
		for (j = fnv1a_str(s->strs[i]) & (cap - 1); t[j]; j = (j + 1) & (cap - 1))
			;
		t[j] = s->strs[i];
	}
	free(s->strs);
	s->strs = t;
	s->strs_cap = cap;
	return 0;
}

/* The one copy of str (cut at SS_STR_MAX) owned by s; NULL: no memory. */
static const char *intern(struct ss *s, const char *str)
{
	char buf[SS_STR_MAX + 1];
	size_t len = cut_len(str), i, mask;

	if (str[len]) {
		memcpy(buf, str, len);
		buf[len] = 0;
		str = buf;
	}
	if (2 * (s->strs_n + 1) > s->strs_cap && strs_grow(s))
		return NULL;
	mask = s->strs_cap - 1;
	for (i = fnv1a_str(str) & mask; s->strs[i]; i = (i + 1) & mask)
		if (!strcmp(s->strs[i], str))
			return s->strs[i];
	s->strs[i] = strdup(str);
	if (!s->strs[i])
		return NULL;
	s->strs_n++;
	return s->strs[i];
}

/* ---- the cache: (module, address) → frames ---- */

static size_t hash_key(uint32_t mod, uint64_t addr)
{
	uint64_t h = (addr ^ ((uint64_t)mod << 44)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h ^ (h >> 29));
}

/* The slot holding (mod, addr), or the empty slot where it goes. */
static struct entry *cache_slot(struct entry *tab, size_t cap, uint32_t mod, uint64_t addr)
{
	size_t i = hash_key(mod, addr) & (cap - 1);

	while (tab[i].frames && (tab[i].mod != mod || tab[i].addr != addr))
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static const struct entry *cache_get(const struct ss *s, uint32_t mod, uint64_t addr)
{
	const struct entry *e;

	if (!s->cache_cap)
		return NULL;
	e = cache_slot(s->cache, s->cache_cap, mod, addr);
	return e->frames ? e : NULL;
}

static int cache_grow(struct ss *s)
{
	size_t cap = s->cache_cap ? 2 * s->cache_cap : 4096;
	struct entry *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < s->cache_cap; i++)
		if (s->cache[i].frames)
			*cache_slot(t, cap, s->cache[i].mod, s->cache[i].addr) = s->cache[i];
	free(s->cache);
	s->cache = t;
	s->cache_cap = cap;
	return 0;
}

static struct ss_frame *frames_alloc(struct ss *s, size_t n)
{
	struct fblock *b = s->blocks;

	if (!b || b->used + n > FRAME_BLOCK) {
		b = malloc(sizeof(*b));
		if (!b)
			return NULL;
		b->next = s->blocks;
		b->used = 0;
		s->blocks = b;
	}
	b->used += n;
	return &b->f[b->used - n];
}

/* Keeps a copy of fr[0..n) under (mod, addr); NULL when full or out of memory. */
static const struct entry *cache_put(struct ss *s, uint32_t mod, uint64_t addr,
				     const struct ss_frame *fr, size_t n)
{
	struct ss_frame *dst;
	struct entry *e;

	if (s->cache_n >= SS_MAX_ADDRS)
		return NULL;
	if (2 * (s->cache_n + 1) > s->cache_cap && cache_grow(s))
		return NULL;
	dst = frames_alloc(s, n);
	if (!dst)
		return NULL;
	memcpy(dst, fr, n * sizeof(*fr));
	e = cache_slot(s->cache, s->cache_cap, mod, addr);
	*e = (struct entry){ .addr = addr, .mod = mod, .n = (uint32_t)n, .frames = dst };
	s->cache_n++;
	return e;
}

static size_t put_out(const struct ss_frame *f, size_t n, const struct ss_frame **out, size_t max)
{
	size_t i;

	for (i = 0; i < n && i < max; i++)
		out[i] = &f[i];
	return i;
}

/* ---- modules ---- */

static int find_no_elf(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr base,
		       char **file_name, Elf **elfp)
{
	return -1;  /* every module is reported with its file already open */
}

static char *debuginfo_path;    /* NULL: libdwfl's default, ":.debug:/usr/lib/debug" */

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = find_no_elf,
	/* by build-id, in local directories only (dwfl_standard_find_debuginfo would also ask
	 * debuginfod servers when DEBUGINFOD_URLS is set) */
	.find_debuginfo = dwfl_build_id_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

static char *build_id_hex(Elf *elf)
{
	const unsigned char *id;
	const void *p;
	ssize_t n = dwelf_elf_gnu_build_id(elf, &p);
	char *h;

	if (n <= 0 || n > 64)
		return NULL;
	h = malloc(2 * (size_t)n + 1);
	if (!h)
		return NULL;
	id = p;
	for (ssize_t i = 0; i < n; i++) {
		h[2 * i] = "0123456789abcdef"[id[i] >> 4];
		h[2 * i + 1] = "0123456789abcdef"[id[i] & 15];
	}
	h[2 * n] = 0;
	return h;
}

/* Build-id and PT_LOAD headers of the ELF file fd into m (left empty when not ELF). */
static void probe_elf(int fd, struct module *m)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Phdr ph;
	size_t n;

	if (elf && elf_kind(elf) == ELF_K_ELF && !elf_getphdrnum(elf, &n)) {
		m->build_id = build_id_hex(elf);
		for (size_t i = 0; i < n && m->nloads < MAX_LOADS; i++)
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
				m->loads[m->nloads++] = (struct load){
					.off = ph.p_offset, .filesz = ph.p_filesz, .vaddr = ph.p_vaddr,
				};
	}
	elf_end(elf);
}

static bool system_path(const char *p)
{
	static const char *const dirs[] = {
		"/lib/", "/lib32/", "/lib64/", "/usr/lib/", "/usr/lib32/", "/usr/lib64/",
		"/usr/libexec/",
	};

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!strncmp(p, dirs[i], strlen(dirs[i])))
			return true;
	return false;
}

/* A module from what probe_elf found (ownership of probe->build_id passes to it). */
static struct module *module_add(struct ss *s, const struct module *probe, const char *path)
{
	struct module *m = malloc(sizeof(*m)), **mods = room(s->mods, s->nmods, sizeof(*mods));
	const char *slash;

	if (mods)
		s->mods = mods;
	if (!m || !mods)
		goto fail;
	*m = *probe;
	m->path = strdup(path);
	if (!m->path)
		goto fail;
	slash = strrchr(m->path, '/');
	m->base = slash ? slash + 1 : m->path;
	m->id = (uint32_t)s->nmods + 1;
	m->system = system_path(m->path);
	s->mods[s->nmods++] = m;
	return m;
fail:
	free(m);
	return NULL;
}

/* Gives the module its Dwfl, reading the file fd (consumed). */
static void module_report(struct module *m, int fd)
{
	m->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!m->dwfl) {
		close(fd);
		return;
	}
	dwfl_report_begin(m->dwfl);
	m->dm = dwfl_report_elf(m->dwfl, m->base, m->path, fd, 0, true);
	dwfl_report_end(m->dwfl, NULL, NULL);
	if (!m->dm) {
		close(fd);
		dwfl_end(m->dwfl);
		m->dwfl = NULL;
		return;
	}
	if (!dwfl_module_getelf(m->dm, &m->bias))
		m->bias = 0;
}

static struct module *module_by_build_id(const struct ss *s, const char *id)
{
	for (size_t i = 0; i < s->nmods; i++)
		if (s->mods[i]->build_id && !strcmp(s->mods[i]->build_id, id))
			return s->mods[i];
	return NULL;
}

/* A module for the file fd (consumed; may be -1: a module known by name only). */
static struct module *module_from_fd(struct ss *s, int fd, const char *path, bool vdso)
{
	struct module probe = { .vdso = vdso }, *m;

	if (fd >= 0)
		probe_elf(fd, &probe);
	if (probe.build_id && (m = module_by_build_id(s, probe.build_id))) {
		free(probe.build_id);
		close(fd);
		return m;
	}
	m = module_add(s, &probe, path);
	if (!m) {
		free(probe.build_id);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (fd >= 0)
		module_report(m, fd);
	return m;
}

/* The tracer's own vDSO image in a memfd (the kernel's, the same in every process). */
static int vdso_memfd(void)
{
	unsigned long long start, end;
	unsigned long at = getauxval(AT_SYSINFO_EHDR);
	char line[256];
	FILE *f;
	int fd = -1;

	f = at ? fopen("/proc/self/maps", "re") : NULL;
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &start, &end) == 2 &&
		    start == at && end > start && end - start <= VDSO_MAX) {
			fd = memfd_create("vdso", MFD_CLOEXEC);
			if (fd >= 0 && write(fd, (const void *)at, end - start) != (ssize_t)(end - start)) {
				close(fd);
				fd = -1;
			}
			break;
		}
	if (f)
		fclose(f);
	return fd;
}

static struct module *vdso_module(struct ss *s)
{
	if (!s->vdso_tried) {
		s->vdso_tried = true;
		s->vdso = module_from_fd(s, vdso_memfd(), "[vdso]", true);
	}
	return s->vdso;
}

/* ---- processes ---- */

struct maps_line {
	unsigned long long start, end, pgoff, ino;
	unsigned maj, min;
	char perms[5];
	char *path;              /* "" for anonymous mappings; " (deleted)" cut */
};

/* Cuts the " (deleted)" the kernel appends to the path of a file deleted since. */
static void cut_deleted(char *path)
{
	static const char deleted[] = " (deleted)";
	size_t len = strlen(path), dlen = sizeof(deleted) - 1;

	if (len > dlen && !strcmp(path + len - dlen, deleted))
		path[len - dlen] = 0;
}

static bool parse_maps_line(char *line, struct maps_line *l)
{
	int n = 0;

	if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &l->start, &l->end, l->perms,
		   &l->pgoff, &l->maj, &l->min, &l->ino, &n) < 7 || !n)
		return false;
	l->path = line + n;
	l->path[strcspn(l->path, "\n")] = 0;
	cut_deleted(l->path);
	return l->end > l->start;
}

/* The file behind one mapping of pid, opened: -1 when it cannot be. */
static int open_mapped(uint32_t pid, const struct maps_line *l)
{
	char p[PATH_MAX + 64];
	int fd;

	snprintf(p, sizeof(p), "/proc/%u/map_files/%llx-%llx", pid, l->start, l->end);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && strlen(l->path) < PATH_MAX) {
		snprintf(p, sizeof(p), "/proc/%u/root%s", pid, l->path);
		fd = open(p, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		fd = open(l->path, O_RDONLY | O_CLOEXEC);
	return fd;
}

static struct module *file_module(struct ss *s, uint32_t pid, const struct maps_line *l)
{
	uint64_t dev = (uint64_t)l->maj << 32 | l->min;
	struct file_key *keys;
	struct module *m;

	for (size_t i = 0; l->ino && i < s->nkeys; i++)
		if (s->keys[i].dev == dev && s->keys[i].ino == l->ino)
			return s->keys[i].m;
	m = module_from_fd(s, open_mapped(pid, l), l->path, false);
	if (!m || !l->ino)
		return m;
	keys = room(s->keys, s->nkeys, sizeof(*keys));
	if (keys) {
		s->keys = keys;
		s->keys[s->nkeys++] = (struct file_key){ .dev = dev, .ino = l->ino, .m = m };
	}
	return m;
}

/* Appends the mapping of one maps line, if executable and backed by a file (or the vDSO). */
static int add_mapping(struct ss *s, uint32_t pid, char *line, const char *exe,
		       struct map **maps, size_t *n)
{
	struct maps_line l;
	struct module *m;
	struct map *t;

	if (!parse_maps_line(line, &l) || l.perms[2] != 'x')
		return 0;
	if (!strcmp(l.path, "[vdso]"))
		m = vdso_module(s);
	else if (l.path[0] == '/')
		m = file_module(s, pid, &l);
	else
		return 0;
	if (!m)
		return 0;
	if (exe[0] && !strcmp(l.path, exe))
		m->exe = true;
	t = room(*maps, *n, sizeof(*t));
	if (!t)
		return -ENOMEM;
	*maps = t;
	t[(*n)++] = (struct map){ .start = l.start, .end = l.end, .pgoff = l.pgoff, .m = m };
	return 0;
}

static struct proc *proc_find(const struct ss *s, uint32_t pid)
{
	size_t lo = 0, hi = s->nprocs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->nprocs && s->procs[lo].pid == pid ? &s->procs[lo] : NULL;
}

static int map_cmp(const void *a, const void *b)
{
	const struct map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sets pid's mappings (maps: taken over, freed on failure). */
static int proc_set(struct ss *s, uint32_t pid, struct map *maps, size_t n)
{
	struct proc *p = proc_find(s, pid), *procs;
	size_t at;

	if (n)
		qsort(maps, n, sizeof(*maps), map_cmp);
	if (!p) {
		procs = room(s->procs, s->nprocs, sizeof(*procs));
		if (!procs) {
			free(maps);
			return -ENOMEM;
		}
		s->procs = procs;
		for (at = s->nprocs; at > 0 && procs[at - 1].pid > pid; at--)
			;
		memmove(&procs[at + 1], &procs[at], (s->nprocs - at) * sizeof(*procs));
		s->nprocs++;
		p = &procs[at];
		*p = (struct proc){ .pid = pid };
	}
	free(p->maps);
	p->maps = maps;
	p->nmaps = n;
	return 0;
}

int ss_add_pid(struct ss *s, uint32_t pid, char *err, size_t errlen)
{
	char maps_path[64], exe_link[64], exe[PATH_MAX], *line = NULL;
	struct map *maps = NULL;
	size_t cap = 0, n = 0;
	ssize_t len;
	FILE *f;
	int ret = 0;

	snprintf(maps_path, sizeof(maps_path), "/proc/%u/maps", pid);
	f = fopen(maps_path, "re");
	if (!f) {
		ret = errno == ENOENT ? -ESRCH : -errno;
		seterr(err, errlen, "pid %u: %s", pid, strerror(-ret));
		return ret;
	}
	snprintf(exe_link, sizeof(exe_link), "/proc/%u/exe", pid);
	len = readlink(exe_link, exe, sizeof(exe) - 1);
	exe[len > 0 ? len : 0] = 0;
	cut_deleted(exe);
	while (!ret && getline(&line, &cap, f) > 0)
		ret = add_mapping(s, pid, line, exe, &maps, &n);
	if (!ret && ferror(f))
		ret = -EIO;
	fclose(f);
	free(line);
	if (!ret)
		ret = proc_set(s, pid, maps, n);
	else
		free(maps);
	if (ret)
		seterr(err, errlen, "pid %u: %s: %s", pid, maps_path, strerror(-ret));
	return ret;
}

/* pid's mapping holding addr; a pid never seen is added once. */
static const struct map *map_of(struct ss *s, uint32_t pid, uint64_t addr)
{
	struct proc *p = proc_find(s, pid);
	size_t lo = 0, hi;
	char err[128];

	if (!p) {
		if (ss_add_pid(s, pid, err, sizeof(err)) && proc_set(s, pid, NULL, 0))
			return NULL;
		p = proc_find(s, pid);
		if (!p)
			return NULL;
	}
	hi = p->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr < p->maps[lo - 1].end ? &p->maps[lo - 1] : NULL;
}

/* addr of a mapping, as an address of its ELF file (the file offset when no PT_LOAD holds it). */
static uint64_t module_addr(const struct map *mp, uint64_t addr)
{
	uint64_t off = addr - mp->start + mp->pgoff;

	for (size_t i = 0; i < mp->m->nloads; i++) {
		const struct load *l = &mp->m->loads[i];

		if (off >= l->off && off - l->off < l->filesz)
			return off - l->off + l->vaddr;
	}
	return off;
}

/* ---- names and classification ---- */

/* name demangled (Rust: libiberty through tsym_demangle, no hash; C++: GNU v3), interned. */
static const char *demangled(struct ss *s, const char *name)
{
	char *d = tsym_demangle(name);
	const char *r;

	if (!d && !strncmp(name, "_Z", 2))
		d = cplus_demangle(name, DMGL_GNU_V3 | DMGL_PARAMS | DMGL_ANSI);
	r = intern(s, d ? d : name);
	free(d);
	return r;
}

static int fsym_cmp(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return x->rank - y->rank;
}

static int bind_rank(const GElf_Sym *sym)
{
	return GELF_ST_BIND(sym->st_info) == STB_GLOBAL ? 0 :
	       GELF_ST_BIND(sym->st_info) == STB_WEAK ? 1 : 2;
}

/* m->syms: the code symbols of .symtab (else .dynsym), by address, the biggest and then the
 * global one first among those at one address. */
static void syms_load(struct module *m)
{
	int n = m->dm ? dwfl_module_getsymtab(m->dm) : -1;

	m->syms_done = true;
	m->syms = n > 1 ? calloc((size_t)n, sizeof(*m->syms)) : NULL;
	if (!m->syms)
		return;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr a;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(m->dm, i, &sym, &a, &shndx, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);

		if (!name || !*name || shndx == SHN_UNDEF || shndx == SHN_ABS ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
			continue;
		m->syms[m->nsyms++] = (struct fsym){
			.addr = a, .size = sym.st_size, .name = name, .rank = bind_rank(&sym),
			.func = type == STT_FUNC,
		};
	}
	qsort(m->syms, m->nsyms, sizeof(*m->syms), fsym_cmp);
}

/* The function holding module address a, from the symbol table. */
static const char *symbol_at(struct ss *s, struct module *m, Dwarf_Addr a)
{
	size_t lo = 0, hi;
	struct fsym *f;

	if (!m->syms_done)
		syms_load(m);
	hi = m->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->syms[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	for (f = &m->syms[lo - 1]; f > m->syms && f[-1].addr == f->addr; f--)
		;
	if (a - f->addr >= (f->size ? f->size : SIZELESS_MAX))
		return NULL;
	if (!f->shown)
		f->shown = demangled(s, f->name);
	return f->shown;
}

static const char *addr_name(struct ss *s, const struct module *m, uint64_t vaddr)
{
	char buf[128];

	snprintf(buf, sizeof(buf), "%.80s+0x%llx", m->base, (unsigned long long)vaddr);
	return intern(s, buf);
}

/* "component/" at the start of path or after a '/'. */
static bool has_dir(const char *path, const char *dir)
{
	const char *p = strstr(path, dir);

	for (; p; p = strstr(p + 1, dir))
		if (p == path || p[-1] == '/')
			return true;
	return false;
}

/* "X.Y.Z" (digits) from p, the end of the component or a pre-release/build tag after it. */
static bool semver_at(const char *p, const char *end)
{
	for (int part = 0; part < 3; part++) {
		if (p >= end || !isdigit((unsigned char)*p))
			return false;
		while (p < end && isdigit((unsigned char)*p))
			p++;
		if (part < 2 && (p >= end || *p++ != '.'))
			return false;
	}
	return p == end || *p == '-' || *p == '+';
}

/* A directory "name-X.Y.Z" in path: how registry, vendor and directory sources (Debian's
 * packaged crates) lay crates out; a workspace's own crates have no version in their path. */
static bool crate_dir(const char *path)
{
	for (const char *c = path, *end; (end = strchr(c, '/')); c = end + 1)
		for (const char *p = c + 1; p + 1 < end; p++)
			if (*p == '-' && semver_at(p + 1, end))
				return true;
	return false;
}

/* Source of the Rust toolchain's libraries or of a third-party crate. */
static bool foreign_source(const char *file)
{
	static const char *const parts[] = {
		"/registry/src/", "/share/cargo/registry/", "/vendor/", "/.cargo/",
	};
	static const char *const libs[] = { "library/std/", "library/core/", "library/alloc/" };

	if (!strncmp(file, "/rustc/", 7))
		return true;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (strstr(file, parts[i]))
			return true;
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (has_dir(file, libs[i]))
			return true;
	return crate_dir(file);
}

static bool runtime_name(const char *func)
{
	static const char *const prefixes[] = {
		"std::", "core::", "alloc::", "tokio::", "<std::", "<core::", "<alloc::", "<tokio::",
	};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(func, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

static bool user_frame(const struct module *m, const struct ss_frame *f)
{
	if (m->vdso || (m->system && !m->exe))
		return false;
	if (f->file)
		return !foreign_source(f->file);
	return m->exe && !runtime_name(f->func);
}

/* ---- DWARF ---- */

static int fn_range_cmp(const void *a, const void *b)
{
	const struct fn_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int fn_add_ranges(Dwarf_Die *fn, struct cu_funcs *cf)
{
	Dwarf_Addr base, lo, hi;
	struct fn_range *r;
	ptrdiff_t off = 0;

	while ((off = dwarf_ranges(fn, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		r = room(cf->r, cf->n, sizeof(*r));
		if (!r)
			return -ENOMEM;
		cf->r = r;
		r[cf->n++] = (struct fn_range){ .lo = lo, .hi = hi, .die = dwarf_dieoffset(fn) };
	}
	return 0;
}

/* The code ranges of the functions under parent, through namespaces (where Rust and C++ put
 * them), into cf. */
static int cu_collect(Dwarf_Die *parent, struct cu_funcs *cf, int nest)
{
	Dwarf_Die child;
	int tag;

	if (nest >= MAX_SCOPES || dwarf_child(parent, &child))
		return 0;
	do {
		tag = dwarf_tag(&child);
		if ((tag == DW_TAG_namespace || tag == DW_TAG_module) &&
		    cu_collect(&child, cf, nest + 1))
			return -ENOMEM;
		if (tag == DW_TAG_subprogram && fn_add_ranges(&child, cf))
			return -ENOMEM;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

/* The functions of the unit cu, indexed on first use (NULL: no memory). */
static const struct cu_funcs *cu_funcs_of(struct module *m, Dwarf_Die *cu)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	size_t lo = 0, hi = m->ncus;
	struct cu_funcs *cus;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->cus[mid].cu < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->ncus && m->cus[lo].cu == off)
		return &m->cus[lo];
	cus = room(m->cus, m->ncus, sizeof(*cus));
	if (!cus)
		return NULL;
	m->cus = cus;
	memmove(&cus[lo + 1], &cus[lo], (m->ncus - lo) * sizeof(*cus));
	m->ncus++;
	cus[lo] = (struct cu_funcs){ .cu = off };
	cu_collect(cu, &cus[lo], 0);  /* out of memory: the functions found so far */
	if (cus[lo].n)
		qsort(cus[lo].r, cus[lo].n, sizeof(*cus[lo].r), fn_range_cmp);
	return &cus[lo];
}

/* The concrete DW_TAG_subprogram of unit cu whose code holds pc. */
static bool cu_function(struct module *m, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *fn)
{
	const struct cu_funcs *cf = cu_funcs_of(m, cu);
	size_t lo = 0, hi = cf ? cf->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cf->r[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* ranges of distinct functions do not overlap; a few steps back cover odd producers */
	for (size_t i = lo, steps = 0; i > 0 && steps < 8; i--, steps++)
		if (pc < cf->r[i - 1].hi)
			return dwarf_offdie(dwarf_cu_getdwarf(cu->cu), cf->r[i - 1].die, fn) != NULL;
	return false;
}

/* Descends from parent into the child scopes holding pc, appending each to path. */
static void scope_path(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *path, int *depth)
{
	Dwarf_Die child;

	if (*depth >= MAX_SCOPES || dwarf_child(parent, &child))
		return;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_inlined_subroutine:
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
		case DW_TAG_subprogram:  /* GNU C nested functions */
			if (dwarf_haspc(&child, pc) != 1)
				break;
			path[(*depth)++] = child;
			scope_path(&child, pc, path, depth);
			return;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

/* A subprogram's or inlined instance's name (through DW_AT_abstract_origin/specification):
 * the linkage name demangled, else DW_AT_name. */
static const char *die_name(struct ss *s, Dwarf_Die *die)
{
	Dwarf_Attribute at;
	const char *n = NULL;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &at) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &at))
		n = dwarf_formstring(&at);
	if (n && *n)
		return demangled(s, n);
	if (dwarf_attr_integrate(die, DW_AT_name, &at) && (n = dwarf_formstring(&at)) && *n)
		return intern(s, n);
	return NULL;
}

static uint32_t line_of(int line)
{
	return line > 0 ? (uint32_t)line : 0;
}

/* Folds "//", "/./" and "dir/../" of the absolute path p, in place (lexically). */
static void fold_dots(char *p)
{
	char *out = p, *in = p;

	while (*in) {
		size_t len;
		char *seg;

		while (*in == '/')
			in++;
		seg = in;
		len = strcspn(in, "/");
		in += len;
		if (!len || (len == 1 && seg[0] == '.'))
			continue;
		if (len == 2 && seg[0] == '.' && seg[1] == '.') {
			while (out > p && *--out != '/')
				;
			continue;
		}
		*out++ = '/';
		memmove(out, seg, len);
		out += len;
	}
	if (out == p)
		*out++ = '/';
	*out = 0;
}

/* A source file of the line table as an absolute path (a relative one is relative to the
 * unit's compilation directory), interned; NULL when unknown. */
static const char *source_path(struct ss *s, const char *file, const char *comp_dir)
{
	char buf[2 * SS_STR_MAX + 2];

	if (!file || !*file)
		return NULL;
	if (file[0] != '/' && (!comp_dir || comp_dir[0] != '/'))
		return intern(s, file);
	if (file[0] == '/')
		snprintf(buf, sizeof(buf), "%.*s", 2 * SS_STR_MAX, file);
	else
		snprintf(buf, sizeof(buf), "%.*s/%.*s", SS_STR_MAX, comp_dir, SS_STR_MAX, file);
	fold_dots(buf);
	return intern(s, buf);
}

/* file:line of module address a, from the line table. */
static void line_at(struct ss *s, const struct module *m, Dwarf_Addr a, struct ss_frame *f)
{
	Dwfl_Line *l = dwfl_module_getsrc(m->dm, a);
	const char *file;
	int line = 0;

	file = l ? dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL) : NULL;
	f->file = source_path(s, file, l ? dwfl_line_comp_dir(l) : NULL);
	f->line = f->file ? line_of(line) : 0;
}

/* Where the inlined instance die was called: the line of the frame outside it. */
static void call_site(struct ss *s, Dwarf_Die *die, Dwarf_Files *files, const char *comp_dir,
		      struct ss_frame *f)
{
	Dwarf_Attribute at;
	Dwarf_Word v;
	const char *file = NULL;

	f->line = dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &at), &v) == 0 &&
		  v <= UINT32_MAX ? (uint32_t)v : 0;
	if (files && dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &at), &v) == 0)
		file = dwarf_filesrc(files, v, NULL, NULL);
	f->file = source_path(s, file, comp_dir);
	if (!f->file)
		f->line = 0;
}

/* The inline chain at module address a, innermost first, then the containing function (named
 * sym when the symbol table knows it). 0 when DWARF has no unit there. */
static size_t dwarf_frames(struct ss *s, struct module *m, Dwarf_Addr a, const char *sym,
			   struct ss_frame *fr)
{
	Dwarf_Die path[MAX_SCOPES], *cu;
	Dwarf_Files *files = NULL;
	Dwarf_Attribute at;
	struct ss_frame cur = { .func = NULL };
	const char *comp_dir;
	Dwarf_Addr bias;
	size_t n = 0;
	int depth = 0;

	cu = dwfl_module_addrdie(m->dm, a, &bias);
	if (!cu)
		return 0;
	if (cu_function(m, cu, a - bias, &path[0])) {
		depth = 1;
		scope_path(&path[0], a - bias, path, &depth);
	}
	line_at(s, m, a, &cur);
	if (dwarf_getsrcfiles(cu, &files, NULL))
		files = NULL;
	comp_dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &at));
	for (int i = depth - 1; i >= 0; i--) {
		int tag = dwarf_tag(&path[i]);

		if (tag == DW_TAG_subprogram) {
			cur.func = sym ? sym : die_name(s, &path[i]);
			break;
		}
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		if (n < MAX_INLINE - 1) {
			fr[n] = cur;
			fr[n].func = die_name(s, &path[i]);
			fr[n++].inlined = true;
		}
		call_site(s, &path[i], files, comp_dir, &cur);
	}
	fr[n] = cur;
	if (!fr[n].func)
		fr[n].func = sym;
	return n + 1;
}

/* Frames of module address vaddr (innermost first), into fr[MAX_INLINE]. */
static size_t frames_at(struct ss *s, struct module *m, uint64_t vaddr, struct ss_frame *fr)
{
	Dwarf_Addr a = vaddr + m->bias;
	const char *sym = NULL;
	size_t n = 0;

	if (m->dm) {
		sym = symbol_at(s, m, a);
		n = dwarf_frames(s, m, a, sym, fr);
	}
	if (!n) {
		fr[n++] = (struct ss_frame){ .func = sym };
		if (m->dm)
			line_at(s, m, a, &fr[0]);
	}
	if (!fr[n - 1].func)
		fr[n - 1].func = addr_name(s, m, vaddr);
	for (size_t i = 0; i < n; i++) {
		if (!fr[i].func)
			fr[i].func = i + 1 < n ? "[inlined]" : unknown_frame.func;
		fr[i].user_code = user_frame(m, &fr[i]);
	}
	return n;
}

/* ---- module facts ---- */

enum opening {
	OPEN_UNREADABLE,
	OPEN_OTHER,              /* no frame at its first instruction: a leaf with none, or a frame
				  * set up later (GCC shrink-wraps: the early-out path first) */
	OPEN_FP,                 /* push %rbp; mov %rsp,%rbp */
	OPEN_NO_FP,              /* a frame without %rbp: push of a callee-saved register, or
				  * sub $N,%rsp */
};

/* How the function at module address a opens (after an optional endbr64). */
static enum opening opening(const struct module *m, const unsigned char *img, size_t size,
			    uint64_t a)
{
	static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	uint64_t vaddr = a - m->bias;
	const unsigned char *p;

	for (size_t i = 0; i < m->nloads; i++) {
		const struct load *l = &m->loads[i];

		if (vaddr < l->vaddr || vaddr - l->vaddr >= l->filesz)
			continue;
		if (l->off + (vaddr - l->vaddr) + 8 > size)
			return OPEN_UNREADABLE;
		p = img + l->off + (vaddr - l->vaddr);
		if (!memcmp(p, endbr64, 4))
			p += 4;
		if (p[0] == 0x55 && p[1] == 0x48 && ((p[2] == 0x89 && p[3] == 0xe5) ||
						     (p[2] == 0x8b && p[3] == 0xec)))
			return OPEN_FP;
		if (p[0] == 0x55 || p[0] == 0x53 || (p[0] == 0x41 && p[1] >= 0x54 && p[1] <= 0x57) ||
		    (p[0] == 0x48 && (p[1] == 0x83 || p[1] == 0x81) && p[2] == 0xec))
			return OPEN_NO_FP;
		return OPEN_OTHER;
	}
	return OPEN_UNREADABLE;
}

/* Symbol i: a function of FP_MIN_SIZE bytes or more, not an alias of the one before. */
static bool fp_candidate(const struct module *m, size_t i)
{
	const struct fsym *f = &m->syms[i];

	return f->func && f->size >= FP_MIN_SIZE && (!i || f[-1].addr != f->addr);
}

/* Built with frame pointers: of up to FP_SAMPLE functions (spread evenly), those that open
 * with a frame set up %rbp in >= 60 % of cases. Functions opening without a frame count
 * neither way: even under -fno-omit-frame-pointer GCC gives leaf functions no frame and
 * shrink-wraps others (prologue after an early-out path). Measured share of functions starting
 * with push %rbp; mov %rsp,%rbp / share among those opening with a frame: GCC -O1 58 %/100 %,
 * -O2 38 %/72 %; Debian's libc 2 %/3 %; the Rust sample built with frame pointers 91 %/99 %,
 * without 23 %/28 % (its precompiled std has them). */
static bool fp_scan(struct module *m)
{
	size_t eligible = 0, seen = 0, sampled = 0, framed = 0, fp = 0, stride, size = 0;
	const unsigned char *img;
	Dwarf_Addr bias;
	Elf *elf;

	if (!m->syms_done)
		syms_load(m);
	elf = dwfl_module_getelf(m->dm, &bias);
	img = elf ? (const unsigned char *)elf_rawfile(elf, &size) : NULL;
	if (!img)
		return false;
	for (size_t i = 0; i < m->nsyms; i++)
		eligible += fp_candidate(m, i);
	stride = eligible > FP_SAMPLE ? (eligible + FP_SAMPLE - 1) / FP_SAMPLE : 1;
	for (size_t i = 0; i < m->nsyms && sampled < FP_SAMPLE; i++) {
		enum opening o;

		if (!fp_candidate(m, i) || seen++ % stride)
			continue;
		o = opening(m, img, size, m->syms[i].addr);
		sampled += o != OPEN_UNREADABLE;
		framed += o == OPEN_FP || o == OPEN_NO_FP;
		fp += o == OPEN_FP;
	}
	return framed && fp * 100 >= framed * 60;
}

/* A .symtab section (not stripped; .dynsym alone names only the exported functions). */
static bool has_symtab(Dwfl_Module *dm)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(dm, &bias);
	Elf_Scn *scn = NULL;

	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			return true;
	}
	return false;
}

static const struct ss_module_info *module_facts(struct module *m)
{
	Dwarf_Addr bias;

	if (m->info_done)
		return &m->info;
	m->info_done = true;
	m->info.path = m->path;
	m->info.build_id = m->build_id;
	if (!m->dm)
		return &m->info;
	m->info.symtab = has_symtab(m->dm);
	m->info.dwarf = dwfl_module_getdwarf(m->dm, &bias) != NULL;
	m->info.frame_pointers = dwfl_module_getsymtab(m->dm) > 0 && fp_scan(m);
	return &m->info;
}

/* ---- the kernel ---- */

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* One kallsyms line ("ffffffff821f94a0 T schedule\t[module]"): its text symbol, if any. */
static bool parse_ksym(char *line, uint64_t *addr, char **name)
{
	char *p;

	*addr = strtoull(line, &p, 16);
	if (p == line || p[0] != ' ' || !p[1] || !strchr("tTwW", p[1]) || p[2] != ' ')
		return false;
	*name = p + 3;
	(*name)[strcspn(*name, " \t\n")] = 0;
	return **name != 0;
}

static int ksym_add(struct ss *s, uint64_t addr, const char *name, size_t *pool_len,
		    size_t *pool_cap)
{
	size_t len = strlen(name) + 1;
	struct ksym *k = room(s->ksyms, s->nksyms, sizeof(*k));

	if (!k)
		return -ENOMEM;
	s->ksyms = k;
	if (*pool_len + len > *pool_cap) {
		size_t cap = *pool_cap ? 2 * *pool_cap : 1 << 20;
		char *pool = realloc(s->knames, cap);

		if (!pool)
			return -ENOMEM;
		s->knames = pool;
		*pool_cap = cap;
	}
	memcpy(s->knames + *pool_len, name, len);
	k[s->nksyms++] = (struct ksym){ .addr = addr, .name = *pool_len };
	*pool_len += len;
	return 0;
}

static void kallsyms_read(struct ss *s)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	size_t cap = 0, pool_len = 0, pool_cap = 0;
	char *line = NULL, *name;
	bool named = false;
	uint64_t addr;

	s->kstate = -1;
	while (f && getline(&line, &cap, f) > 0)
		if (parse_ksym(line, &addr, &name)) {
			named |= addr != 0;
			if (ksym_add(s, addr, name, &pool_len, &pool_cap))
				break;
		}
	if (f)
		fclose(f);
	free(line);
	if (!named || !s->nksyms) {
		free(s->ksyms);
		free(s->knames);
		s->ksyms = NULL;
		s->knames = NULL;
		s->nksyms = 0;
		return;
	}
	qsort(s->ksyms, s->nksyms, sizeof(*s->ksyms), ksym_cmp);
	s->kstate = 1;
}

static const struct ksym *ksym_find(const struct ss *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nksyms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &s->ksyms[lo - 1] : NULL;
}

/* ---- API ---- */

struct ss *ss_new(void)
{
	elf_version(EV_CURRENT);
	return calloc(1, sizeof(struct ss));
}

void ss_free(struct ss *s)
{
	struct fblock *b, *next;

	if (!s)
		return;
	for (size_t i = 0; i < s->nmods; i++) {
		if (s->mods[i]->dwfl)
			dwfl_end(s->mods[i]->dwfl);
		for (size_t j = 0; j < s->mods[i]->ncus; j++)
			free(s->mods[i]->cus[j].r);
		free(s->mods[i]->cus);
		free(s->mods[i]->syms);
		free(s->mods[i]->path);
		free(s->mods[i]->build_id);
		free(s->mods[i]);
	}
	for (size_t i = 0; i < s->nprocs; i++)
		free(s->procs[i].maps);
	for (size_t i = 0; i < s->strs_cap; i++)
		free(s->strs[i]);
	for (b = s->blocks; b; b = next) {
		next = b->next;
		free(b);
	}
	free(s->mods);
	free(s->keys);
	free(s->procs);
	free(s->cache);
	free(s->strs);
	free(s->ksyms);
	free(s->knames);
	free(s);
}

size_t ss_user(struct ss *s, uint32_t pid, uint64_t addr, bool return_addr,
	       const struct ss_frame **out, size_t max)
{
	struct ss_frame fr[MAX_INLINE];
	const struct entry *e;
	const struct map *mp;
	uint64_t vaddr;

	if (!max)
		return 0;
	out[0] = &unknown_frame;
	mp = map_of(s, pid, addr);
	if (!mp)
		return 1;
	vaddr = module_addr(mp, addr) - (return_addr ? 1 : 0);
	e = cache_get(s, mp->m->id, vaddr);
	if (!e && s->cache_n < SS_MAX_ADDRS)
		e = cache_put(s, mp->m->id, vaddr, fr, frames_at(s, mp->m, vaddr, fr));
	return e ? put_out(e->frames, e->n, out, max) : 1;
}

size_t ss_kernel(struct ss *s, uint64_t addr, const struct ss_frame **out, size_t max)
{
	struct ss_frame f = { .kernel = true };
	const struct entry *e;
	const struct ksym *k;

	if (!max)
		return 0;
	out[0] = &kernel_frame;
	if (!s->kstate)
		kallsyms_read(s);
	if (s->kstate < 0)
		return 1;
	e = cache_get(s, 0, addr);
	if (!e && s->cache_n < SS_MAX_ADDRS && (k = ksym_find(s, addr)) &&
	    (f.func = intern(s, s->knames + k->name)))
		e = cache_put(s, 0, addr, &f, 1);
	if (e)
		out[0] = e->frames;
	return 1;
}

int ss_module_info(struct ss *s, uint32_t pid, uint64_t addr, struct ss_module_info *mi)
{
	const struct map *mp = map_of(s, pid, addr);

	*mi = (struct ss_module_info){ .path = NULL };
	if (!mp)
		return -ENOENT;
	*mi = *module_facts(mp->m);
	return 0;
}
