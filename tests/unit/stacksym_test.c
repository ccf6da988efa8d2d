// SPDX-License-Identifier: MIT
/*
 * stacksym_test — unit tests of the stack symbolizer (tracer/decode/stacksym.c) on this very process:
 * a function of the test is named with its file:line and counts as user code; an always_inline
 * function shows as an inlined frame innermost, with its own line, and its caller after it at
 * the line of the call; a return address names the call site; a libc function is named and is
 * not user code; an address in no mapping and a pid that does not exist give one "[unknown]"
 * frame (ss_add_pid: -ESRCH); a repeated address and a second process of the same binary (a
 * fork) are resolved once (same frame pointers), also after that process has exited; a library
 * loaded after ss_add_pid is found on refresh; kernel addresses from /proc/kallsyms are named;
 * module info: build-id and DWARF here; frame pointers in a C library built with
 * -fno-omit-frame-pointer and not in its -fomit-frame-pointer copy nor in Debian's libc (this
 * binary itself links libiberty.a, built without them, so it is no clean case); and, given the
 * paths of the Rust sample-service builds, the same on a running Rust binary (frame pointers,
 * DWARF, demangled names without hash, inline chains, Tokio/std not user code; a stock build:
 * no frame pointers). Prints "ok - …" / "not ok - …" and "# …" notes; exits 1 on a failure.
 *
 * Built with -DSTACKSYM_FP_LIB -shared, the same file is the two helper libraries, which the
 * test loads from its own directory.
 *
 * Build and run (mk/tracer.mk builds these into build/tests/; tests/t_why_symbols.sh runs it).
 * The test needs -O1 -g -fno-omit-frame-pointer (its lines and inline chain are checked):
 *   W="-Wall -Wextra -Werror -Wformat-signedness -Wmissing-field-initializers \
 *      -Wno-unused-parameter -std=gnu11 -D_GNU_SOURCE -Itracer -Ibpf"
 *   gcc -O1 -g -fno-omit-frame-pointer $W -o /tmp/stacksym_test tests/unit/stacksym_test.c \
 *       tracer/decode/stacksym.c tracer/discover/symbols.c -ldw -lelf -lz -liberty
 *   gcc -O1 -g -fno-omit-frame-pointer $W -DSTACKSYM_FP_LIB -shared -fPIC \
 *       -o /tmp/libstacksym_fp.so tests/unit/stacksym_test.c
 *   gcc -O1 -g -fomit-frame-pointer $W -DSTACKSYM_FP_LIB -shared -fPIC \
 *       -o /tmp/libstacksym_nofp.so tests/unit/stacksym_test.c
 *   /tmp/stacksym_test [build/sample-service/tokio-1.53/usdt/sample-service \
 *                       [build/sample-service/tokio-1.53/stock/sample-service]]
 */
#ifdef STACKSYM_FP_LIB
/* A dozen functions that call out and keep a buffer on the stack: each has a frame. */
#include <stdio.h>
#include <string.h>

#define FP_HELPER(n) \
	int stacksym_helper_##n(const char *s) \
	{ \
		char buf[64]; \
		snprintf(buf, sizeof(buf), "%s-%d", s, n); \
		return (int)strlen(buf); \
	}
FP_HELPER(1) FP_HELPER(2) FP_HELPER(3) FP_HELPER(4) FP_HELPER(5) FP_HELPER(6)
FP_HELPER(7) FP_HELPER(8) FP_HELPER(9) FP_HELPER(10) FP_HELPER(11) FP_HELPER(12)

#else /* the test */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stacksym.h"

#include "check.h"

#define noinline __attribute__((noinline))
#define MAXF 64

static volatile int sink;

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = s ? strlen(s) : 0, m = strlen(suffix);

	return s && n >= m && !strcmp(s + n - m, suffix);
}

static const char *str(const char *s)
{
	return s ? s : "(null)";
}

static void print_frames(const char *what, const struct ss_frame *const *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("#   %s[%zu] %s (%s:%u)%s%s\n", what, i, f[i]->func, str(f[i]->file),
		       f[i]->line, f[i]->inlined ? " inlined" : "", f[i]->user_code ? " user" : "");
}

/* ---- code to symbolize ---- */
enum { PLAIN_LINE = __LINE__ + 1 };
static noinline int plain_function(int x) { sink += x; return 3 * x; }

static noinline void *return_address(void)
{
	sink++;
	return __builtin_return_address(0);
}

static inline __attribute__((always_inline)) void *inlined_leaf(unsigned *line)
{
	void *ra;

	*line = __LINE__; ra = return_address();
	sink++;
	return ra;
}

static noinline void *inline_host(unsigned *leaf_line, unsigned *call_line)
{
	void *ra;

	*call_line = __LINE__; ra = inlined_leaf(leaf_line);
	sink++;
	return ra;
}

static noinline void *direct_caller(unsigned *line)
{
	void *ra;

	*line = __LINE__; ra = return_address();
	sink++;
	return ra;
}

static noinline int other_function(int x) { sink -= x; return x + 1; }

/* ---- the tests ---- */
static void test_own_function(struct ss *s, uint32_t pid)
{
	const struct ss_frame *f[MAXF], *g[MAXF];
	size_t n = ss_user(s, pid, (uint64_t)(uintptr_t)plain_function, false, f, MAXF);

	/* intent: a function of the program: its name, the file and line of its definition, user
	 * code; asked again, the very same frames (cached) */
	print_frames("plain", f, n);
	CHECK_U64(n, 1, "own function: one frame");
	CHECK(!strcmp(f[0]->func, "plain_function"), "own function: named (%s)", f[0]->func);
	CHECK(ends_with(f[0]->file, "/tests/unit/stacksym_test.c") && f[0]->file[0] == '/',
	      "own function: file, as an absolute path (%s)", str(f[0]->file));
	CHECK_U64(f[0]->line, PLAIN_LINE, "own function: line of its definition");
	CHECK(f[0]->user_code && !f[0]->inlined && !f[0]->kernel, "own function: user code");
	CHECK(ss_user(s, pid, (uint64_t)(uintptr_t)plain_function, false, g, MAXF) == 1 &&
	      g[0] == f[0], "own function: second lookup returns the cached frame");
	CHECK_U64(ss_user(s, pid, (uint64_t)(uintptr_t)plain_function, false, g, 0), 0,
		  "own function: max 0 gives 0 frames");
}

static void test_inline_chain(struct ss *s, uint32_t pid)
{
	const struct ss_frame *f[MAXF];
	unsigned leaf_line = 0, call_line = 0;
	void *ra = inline_host(&leaf_line, &call_line);
	size_t n = ss_user(s, pid, (uint64_t)(uintptr_t)ra, true, f, MAXF);

	/* intent: a call inside an always_inline function: the inlined function innermost
	 * (inlined, its own line), then the function it was inlined into at the line of the call */
	print_frames("inline", f, n);
	if (!CHECK(n == 2, "inline chain: two frames (%zu)", n))
		return;
	CHECK(!strcmp(f[0]->func, "inlined_leaf") && f[0]->inlined,
	      "inline chain: inlined function innermost, marked inlined (%s)", f[0]->func);
	CHECK(ends_with(f[0]->file, "stacksym_test.c") && f[0]->line == leaf_line,
	      "inline chain: inlined frame at its line %u (%s:%u)", leaf_line, str(f[0]->file),
	      f[0]->line);
	CHECK(!strcmp(f[1]->func, "inline_host") && !f[1]->inlined,
	      "inline chain: caller after it, not inlined (%s)", f[1]->func);
	CHECK(ends_with(f[1]->file, "stacksym_test.c") && f[1]->line == call_line,
	      "inline chain: caller at the line of the inlined call %u (%s:%u)", call_line,
	      str(f[1]->file), f[1]->line);
	CHECK(f[0]->user_code && f[1]->user_code, "inline chain: both user code");
	CHECK_U64(ss_user(s, pid, (uint64_t)(uintptr_t)ra, true, f, 1), 1,
		  "inline chain: max 1 gives the innermost frame only");
}

static void test_return_address(struct ss *s, uint32_t pid)
{
	const struct ss_frame *f[MAXF];
	unsigned line = 0;
	void *ra = direct_caller(&line);
	size_t n = ss_user(s, pid, (uint64_t)(uintptr_t)ra, true, f, MAXF);

	/* intent: a return address (return_addr) is looked up at the call: the caller, the line
	 * of the call */
	print_frames("return", f, n);
	CHECK(n == 1 && !strcmp(f[0]->func, "direct_caller"), "return address: the caller (%s)",
	      f[0]->func);
	CHECK_U64(f[0]->line, line, "return address: the line of the call");
}

static void test_libc(struct ss *s, uint32_t pid)
{
	const struct ss_frame *f[MAXF];
	void *fn = (void *)nanosleep;
	struct ss_module_info mi;
	size_t n = ss_user(s, pid, (uint64_t)(uintptr_t)fn, false, f, MAXF);

	/* intent: a function of the system's libc: named (from .dynsym: Debian's libc is
	 * stripped), not user code; module facts of a library without frame pointers */
	print_frames("libc", f, n);
	CHECK(n >= 1 && strstr(f[n - 1]->func, "nanosleep"), "libc: nanosleep named (%s)",
	      f[n - 1]->func);
	CHECK(!f[0]->user_code && !f[0]->kernel, "libc: not user code");
	if (!CHECK(ss_module_info(s, pid, (uint64_t)(uintptr_t)fn, &mi) == 0, "libc: module info"))
		return;
	printf("# libc: path %s, build-id %s, symtab %d, dwarf %d, frame pointers %d\n",
	       str(mi.path), str(mi.build_id), mi.symtab, mi.dwarf, mi.frame_pointers);
	CHECK(strstr(str(mi.path), "libc.so") != NULL, "libc: module path (%s)", str(mi.path));
	CHECK(mi.build_id && !mi.symtab, "libc: build-id, and stripped (no .symtab: its names come from .dynsym)");
	CHECK(!mi.frame_pointers, "libc: built without frame pointers (Debian's glibc)");
}

static void test_unknown(struct ss *s, uint32_t pid)
{
	const struct ss_frame *f[MAXF];
	struct ss_module_info mi;
	size_t n = ss_user(s, pid, 0x10, false, f, MAXF);

	/* intent: an address in no mapping gives one "[unknown]" frame, no module */
	CHECK(n == 1 && !strcmp(f[0]->func, "[unknown]") && !f[0]->file && !f[0]->user_code,
	      "no mapping: one [unknown] frame (%s)", f[0]->func);
	CHECK(ss_module_info(s, pid, 0x10, &mi) == -ENOENT && !mi.path,
	      "no mapping: module info -ENOENT");
}

static uint32_t absent_pid(void)
{
	unsigned long max = 4194304;
	FILE *f = fopen("/proc/sys/kernel/pid_max", "r");

	if (f) {
		if (fscanf(f, "%lu", &max) != 1)
			max = 4194304;
		fclose(f);
	}
	return (uint32_t)max;   /* pids are below pid_max */
}

static void test_absent_pid(struct ss *s)
{
	const struct ss_frame *f[MAXF];
	struct ss_module_info mi;
	uint32_t pid = absent_pid();
	char err[128] = "", want[64];
	int r = ss_add_pid(s, pid, err, sizeof(err));
	size_t n;

	/* intent: a pid that does not exist: ss_add_pid says so (-ESRCH, "pid N: No such
	 * process"), ss_user still gives one frame, module info -ENOENT */
	CHECK(kill((pid_t)pid, 0) == -1 && errno == ESRCH, "absent pid: %u does not exist", pid);
	CHECK(r == -ESRCH, "absent pid: ss_add_pid -ESRCH (%d)", r);
	snprintf(want, sizeof(want), "pid %u: No such process", pid);
	CHECK(!strcmp(err, want), "absent pid: message (%s)", err);
	n = ss_user(s, pid, (uint64_t)(uintptr_t)plain_function, true, f, MAXF);
	CHECK(n == 1 && !strcmp(f[0]->func, "[unknown]"), "absent pid: ss_user gives [unknown]");
	CHECK(ss_module_info(s, pid, (uint64_t)(uintptr_t)plain_function, &mi) == -ENOENT,
	      "absent pid: module info -ENOENT");
}

static void test_forked(struct ss *s, uint32_t pid)
{
	const struct ss_frame *f[MAXF], *g[MAXF];
	char err[128] = "";
	pid_t child = fork();
	int status, r;

	if (child == 0) {
		pause();
		_exit(0);
	}
	/* intent: a second process of the same binary shares the module and its cache (same
	 * frames); once it has exited, its addresses still resolve from what ss_add_pid learned */
	if (!CHECK(child > 0, "fork: child started"))
		return;
	r = ss_add_pid(s, (uint32_t)child, err, sizeof(err));
	CHECK(r == 0, "fork: ss_add_pid on the child (%s)", err);
	ss_user(s, pid, (uint64_t)(uintptr_t)plain_function, false, f, MAXF);
	ss_user(s, (uint32_t)child, (uint64_t)(uintptr_t)plain_function, false, g, MAXF);
	CHECK(f[0] == g[0], "fork: the child's address resolves to the parent's cached frame");
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	CHECK(ss_user(s, (uint32_t)child, (uint64_t)(uintptr_t)other_function, false, g, MAXF) == 1 &&
	      !strcmp(g[0]->func, "other_function") && g[0]->file && g[0]->line,
	      "fork: after the child exited, a new address of it resolves (%s:%u)",
	      str(g[0]->file), g[0]->line);
	CHECK(ss_add_pid(s, (uint32_t)child, err, sizeof(err)) == -ESRCH,
	      "fork: refreshing the exited child fails (%s)", err);
	CHECK(ss_user(s, (uint32_t)child, (uint64_t)(uintptr_t)plain_function, false, g, MAXF) == 1 &&
	      g[0] == f[0], "fork: a failed refresh keeps the mappings known");
}

static void test_refresh(struct ss *s, uint32_t pid)
{
	const struct ss_frame *f[MAXF];
	char err[128] = "";
	void *lib = dlopen("libbpf.so.1", RTLD_NOW | RTLD_LOCAL), *fn;

	/* intent: a library loaded after ss_add_pid is unknown until the pid is added again */
	fn = lib ? dlsym(lib, "libbpf_version_string") : NULL;
	if (!fn) {
		printf("# skip refresh: cannot load libbpf.so.1 (%s)\n", dlerror());
		return;
	}
	ss_user(s, pid, (uint64_t)(uintptr_t)fn, false, f, MAXF);
	CHECK(!strcmp(f[0]->func, "[unknown]"), "refresh: a library loaded since is unknown (%s)",
	      f[0]->func);
	CHECK(ss_add_pid(s, pid, err, sizeof(err)) == 0, "refresh: ss_add_pid again (%s)", err);
	ss_user(s, pid, (uint64_t)(uintptr_t)fn, false, f, MAXF);
	CHECK(!strcmp(f[0]->func, "libbpf_version_string") && !f[0]->user_code,
	      "refresh: then named, not user code (%s)", f[0]->func);
	dlclose(lib);
}

/* name in the directory of this binary */
static void sibling(char *buf, size_t len, const char *name)
{
	char exe[4096], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	exe[n > 0 ? n : 0] = 0;
	slash = strrchr(exe, '/');
	if (slash)
		slash[1] = 0;
	snprintf(buf, len, "%s%s", exe, name);
}

static void test_fp_libs(struct ss *s, uint32_t pid)
{
	static const struct {
		const char *name;
		bool fp;
	} libs[] = { { "libstacksym_fp.so", true }, { "libstacksym_nofp.so", false } };
	const struct ss_frame *f[MAXF];
	struct ss_module_info mi;
	char path[4200], err[128] = "";

	/* intent: a C library built -fno-omit-frame-pointer has frame pointers, the same built
	 * -fomit-frame-pointer has none; a library of the program with line info is user code */
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		void *h, *fn;
		int r;

		sibling(path, sizeof(path), libs[i].name);
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		fn = h ? dlsym(h, "stacksym_helper_7") : NULL;
		if (!CHECK(fn != NULL, "fp libs: %s loaded (%s)", path, fn ? "" : dlerror()))
			continue;
		CHECK(ss_add_pid(s, pid, err, sizeof(err)) == 0, "fp libs: refresh (%s)", err);
		ss_user(s, pid, (uint64_t)(uintptr_t)fn, false, f, MAXF);
		CHECK(!strcmp(f[0]->func, "stacksym_helper_7") && f[0]->file && f[0]->user_code,
		      "fp libs: %s: function named, with its file, user code (%s at %s:%u)",
		      libs[i].name, f[0]->func, str(f[0]->file), f[0]->line);
		r = ss_module_info(s, pid, (uint64_t)(uintptr_t)fn, &mi);
		CHECK(r == 0 && mi.frame_pointers == libs[i].fp, "fp libs: %s: frame pointers %d",
		      libs[i].name, mi.frame_pointers);
		dlclose(h);
	}
}

static uint64_t kallsyms_addr(const char *name)
{
	char line[512], type, sym[256];
	unsigned long long a;
	FILE *f = fopen("/proc/kallsyms", "r");
	uint64_t found = UINT64_MAX;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &a, &type, sym) == 3 && !strcmp(sym, name)) {
			found = a;
			break;
		}
	if (f)
		fclose(f);
	return found;
}

static void test_kernel(struct ss *s)
{
	const struct ss_frame *f[MAXF];
	uint64_t a = kallsyms_addr("schedule");
	size_t n;

	/* intent: kernel addresses are named from /proc/kallsyms, inside the function too */
	CHECK_U64(ss_kernel(s, 0, f, 0), 0, "kernel: max 0 gives 0 frames");
	if (a == UINT64_MAX) {
		printf("# skip kernel: no 'schedule' in /proc/kallsyms\n");
		return;
	}
	if (a == 0) {
		printf("# skip kernel names: /proc/kallsyms shows zero addresses (kptr_restrict)\n");
		n = ss_kernel(s, 0xffffffff81000000ull, f, MAXF);
		CHECK(n == 1 && !strcmp(f[0]->func, "[kernel]"), "kernel: no names: [kernel]");
		return;
	}
	n = ss_kernel(s, a, f, MAXF);
	CHECK(n == 1 && !strcmp(f[0]->func, "schedule") && f[0]->kernel && !f[0]->user_code &&
	      !f[0]->file, "kernel: schedule at 0x%llx named (%s)", (unsigned long long)a, f[0]->func);
	n = ss_kernel(s, a + 3, f, MAXF);
	CHECK(n == 1 && !strcmp(f[0]->func, "schedule"), "kernel: schedule+3 named (%s)",
	      f[0]->func);
}

static void test_own_module(struct ss *s, uint32_t pid)
{
	struct ss_module_info mi;
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	/* intent: this binary (built -g) has a build-id, symbols and DWARF */
	exe[len > 0 ? len : 0] = 0;
	if (!CHECK(ss_module_info(s, pid, (uint64_t)(uintptr_t)plain_function, &mi) == 0,
		   "own module: info"))
		return;
	printf("# own module: path %s, build-id %s, symtab %d, dwarf %d, frame pointers %d\n",
	       str(mi.path), str(mi.build_id), mi.symtab, mi.dwarf, mi.frame_pointers);
	CHECK(mi.path && !strcmp(mi.path, exe), "own module: path is /proc/self/exe");
	CHECK(mi.build_id && strlen(mi.build_id) == 40 &&
	      strspn(mi.build_id, "0123456789abcdef") == 40, "own module: build-id in hex");
	CHECK(mi.symtab && mi.dwarf, "own module: symtab and DWARF");
	printf("# own module: frame pointers %d (libiberty.a, built without, is linked in: see the "
	       "helper libraries for a clean case)\n", mi.frame_pointers);
}

/* ---- a Rust binary: sample-service, kept waiting for a file that never comes ---- */
struct text {
	uint64_t start, end;
};

/* The executable mapping of path in pid's maps (libc_seen: libc is mapped too). */
static bool find_text(pid_t pid, const char *path, struct text *t, bool *libc_seen)
{
	char maps[64], line[4352], perms[5], file[4096];
	unsigned long long a, b;
	bool found = false;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "r");
	*libc_seen = false;
	while (f && fgets(line, sizeof(line), f)) {
		file[0] = 0;
		if (sscanf(line, "%llx-%llx %4s %*s %*s %*s %4095s", &a, &b, perms, file) < 3)
			continue;
		if (perms[2] == 'x' && !strcmp(file, path) && !found) {
			*t = (struct text){ .start = a, .end = b };
			found = true;
		}
		*libc_seen |= strstr(file, "/libc.so") != NULL;
	}
	if (f)
		fclose(f);
	return found;
}

static pid_t start_waiting(const char *bin, const char *flag)
{
	pid_t child = fork();

	if (child == 0) {
		int fd = open("/dev/null", O_RDWR);

		dup2(fd, 1);
		dup2(fd, 2);
		execl(bin, bin, "yield-workload", "--tasks", "1", "--yields", "1", "--wait-start", flag,
		      (char *)NULL);
		_exit(127);
	}
	return child;
}

/* Waits up to 5 s for the child to run bin with its libraries loaded. */
static bool wait_loaded(pid_t child, const char *real, struct text *t)
{
	bool libc = false;

	for (int i = 0; i < 500; i++) {
		if (find_text(child, real, t, &libc) && libc)
			return true;
		usleep(10000);
	}
	return false;
}

static bool has_hash(const char *func)
{
	for (const char *p = strstr(func, "::h"); p; p = strstr(p + 1, "::h"))
		if (strspn(p + 3, "0123456789abcdef") == 16)
			return true;
	return false;
}

struct rust_seen {
	const struct ss_frame *own, *tokio, *std;
	const struct ss_frame *chain[MAXF];
	size_t nchain, addrs, frames, hashed, max_depth;
	uint64_t own_addr;
};

static void rust_note(struct rust_seen *r, const struct ss_frame **f, size_t n, uint64_t a)
{
	const struct ss_frame *outer = f[n - 1];

	r->addrs++;
	r->frames += n;
	if (n > r->max_depth)
		r->max_depth = n;
	for (size_t i = 0; i < n; i++) {
		r->hashed += has_hash(f[i]->func);
		if (!r->tokio && (!strncmp(f[i]->func, "tokio::", 7) || !strncmp(f[i]->func, "<tokio::", 8)))
			r->tokio = f[i];
		if (!r->std && f[i]->file && !strncmp(f[i]->file, "/rustc/", 7))
			r->std = f[i];
	}
	if (!r->own && !strncmp(outer->func, "sample_service::", 16) && outer->file) {
		r->own = outer;
		r->own_addr = a;
	}
	if (!r->nchain && n >= 3 && !strncmp(outer->func, "sample_service::", 16)) {
		memcpy(r->chain, f, n * sizeof(*f));
		r->nchain = n;
	}
}

static void rust_checks(const struct rust_seen *r)
{
	bool flags = r->nchain > 0;

	printf("# rust: %zu addresses, %zu frames, deepest %zu\n", r->addrs, r->frames, r->max_depth);
	print_frames("rust chain", r->chain, r->nchain);
	for (size_t i = 0; i < r->nchain; i++)
		flags &= r->chain[i]->inlined == (i + 1 < r->nchain);
	CHECK(r->own && r->own->user_code && ends_with(r->own->file, ".rs"),
	      "rust: a sample_service function, its .rs file, user code (%s at %s:%u)",
	      r->own ? r->own->func : "-", r->own ? str(r->own->file) : "-", r->own ? r->own->line : 0);
	CHECK(r->nchain && flags, "rust: an inline chain, inlined flags on all frames but the last");
	CHECK(r->hashed == 0, "rust: no ::h<hash> suffix in any name (%zu)", r->hashed);
	CHECK(r->tokio && !r->tokio->user_code, "rust: a Tokio frame, not user code (%s at %s)",
	      r->tokio ? r->tokio->func : "-", r->tokio ? str(r->tokio->file) : "-");
	CHECK(r->std && !r->std->user_code, "rust: a std frame (/rustc/…), not user code (%s)",
	      r->std ? r->std->func : "-");
}

/* Starts bin, kept waiting for a file that never comes, its libraries loaded: its pid (its
 * path in real, its code in t), or -1. */
static pid_t rust_start(const char *bin, char *real, struct text *t)
{
	char flag[64];
	pid_t child;

	if (!realpath(bin, real))
		return -1;
	snprintf(flag, sizeof(flag), "/tmp/stacksym_test.%d.never", (int)getpid());
	child = start_waiting(real, flag);
	if (child > 0 && !wait_loaded(child, real, t)) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return -1;
	}
	return child;
}

static void rust_stop(pid_t child)
{
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

/* Every 61st byte of the code: a spread of addresses, and a timing. */
static void rust_scan(struct ss *s, pid_t child, const struct text *t, struct rust_seen *seen)
{
	const struct ss_frame *f[MAXF];
	struct timespec t0, t1;
	size_t n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t a = t->start; a < t->end; a += 61) {
		n = ss_user(s, (uint32_t)child, a, false, f, MAXF);
		if (n)
			rust_note(seen, f, n, a);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("# rust: resolved in %.0f ms\n",
	       (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
}

static void test_rust(struct ss *s, const char *bin)
{
	const struct ss_frame *f[MAXF];
	struct rust_seen seen = { .own = NULL };
	struct ss_module_info mi;
	char real[PATH_MAX], err[128] = "";
	struct text t = { .start = 0 };
	pid_t child = rust_start(bin, real, &t);
	size_t n;

	/* intent: a Rust binary built with frame pointers and DWARF (line tables only), running:
	 * module facts say so; names are demangled without hash, inline chains come out, Tokio and
	 * std frames are not user code; after it exits its addresses still resolve */
	if (!CHECK(child > 0, "rust: %s runs", bin))
		return;
	CHECK(ss_add_pid(s, (uint32_t)child, err, sizeof(err)) == 0, "rust: ss_add_pid (%s)", err);
	CHECK(ss_module_info(s, (uint32_t)child, t.start, &mi) == 0, "rust: module info");
	printf("# rust: path %s, build-id %s, symtab %d, dwarf %d, frame pointers %d\n",
	       str(mi.path), str(mi.build_id), mi.symtab, mi.dwarf, mi.frame_pointers);
	CHECK(mi.path && !strcmp(mi.path, real) && mi.build_id && mi.symtab && mi.dwarf,
	      "rust: path, build-id, symtab, DWARF");
	CHECK(mi.frame_pointers, "rust: frame pointers");
	rust_scan(s, child, &t, &seen);
	rust_checks(&seen);
	rust_stop(child);
	n = ss_user(s, (uint32_t)child, seen.own_addr + 1, false, f, MAXF);
	CHECK(seen.own && n && f[n - 1]->file && strcmp(f[n - 1]->func, "[unknown]"),
	      "rust: after the process exited, a new address resolves (%s at %s:%u)",
	      f[n - 1]->func, str(f[n - 1]->file), f[n - 1]->line);
}

static void test_rust_nofp(struct ss *s, const char *bin)
{
	struct ss_module_info mi = { .frame_pointers = true };
	char real[PATH_MAX], err[128] = "";
	struct text t = { .start = 0 };
	pid_t child = rust_start(bin, real, &t);

	/* intent: the same program built without frame pointers (the stock build: only the
	 * precompiled std has them) is found to have none */
	if (!CHECK(child > 0, "rust stock: %s runs", bin))
		return;
	CHECK(ss_add_pid(s, (uint32_t)child, err, sizeof(err)) == 0, "rust stock: ss_add_pid (%s)",
	      err);
	CHECK(ss_module_info(s, (uint32_t)child, t.start, &mi) == 0 && mi.symtab,
	      "rust stock: module info");
	printf("# rust stock: path %s, build-id %s, symtab %d, dwarf %d, frame pointers %d\n",
	       str(mi.path), str(mi.build_id), mi.symtab, mi.dwarf, mi.frame_pointers);
	CHECK(!mi.frame_pointers, "rust stock: no frame pointers");
	rust_stop(child);
}

int main(int argc, char **argv)
{
	uint32_t pid = (uint32_t)getpid();
	char err[128] = "";
	struct ss *s = ss_new();
	int r;

	if (!s) {
		printf("not ok - ss_new\n");
		return 1;
	}
	r = ss_add_pid(s, pid, err, sizeof(err));
	CHECK(r == 0, "ss_add_pid on the test itself (%s)", err);
	test_own_function(s, pid);
	test_inline_chain(s, pid);
	test_return_address(s, pid);
	test_libc(s, pid);
	test_unknown(s, pid);
	test_absent_pid(s);
	test_forked(s, pid);
	test_refresh(s, pid);
	test_kernel(s);
	test_own_module(s, pid);
	test_fp_libs(s, pid);
	if (argc > 1)
		test_rust(s, argv[1]);
	else
		printf("# skip rust: no sample-service binary given\n");
	if (argc > 2)
		test_rust_nofp(s, argv[2]);
	ss_free(s);
	printf("# %d checks, %d failed\n", run, failed);
	return failed ? 1 : 0;
}
#endif
