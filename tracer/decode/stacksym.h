/* SPDX-License-Identifier: MIT */
/*
 * stacksym.h — frames of the addresses in BPF stack traces (bpf_get_stackid): user stacks of a
 * traced process (libdw: symbol tables, DWARF line info and inline chains) and kernel stacks
 * (/proc/kallsyms). See stacksym.c for the design.
 */
#ifndef TET_STACKSYM_H
#define TET_STACKSYM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Strings are cut at SS_STR_MAX bytes (they come from the traced binary: the caller escapes
 * them for output). */
#define SS_STR_MAX    512
/* Distinct (module, address) pairs cached; new addresses beyond this give "[unknown]". */
#define SS_MAX_ADDRS  (1u << 18)

struct ss_frame {
	const char *func;   /* demangled function name (Rust: without the ::h<hash> suffix); for an
	                     * address with no symbol: "module+0xOFF" (module basename, OFF the
	                     * address in the ELF file's own numbering, as addr2line takes it) or
	                     * "[unknown]"; kernel: "[kernel]" when kallsyms has no names */
	const char *file;   /* source file from DWARF line info, NULL when unknown */
	uint32_t line;      /* 0 when unknown */
	bool inlined;       /* this frame is an inlined call inside the next (outer) frame */
	bool user_code;     /* the program's own code: not the Rust toolchain's libraries (source
	                     * under /rustc/ or .../library/{std,core,alloc}/), not a crate from a
	                     * cargo registry or vendor dir (path contains "/registry/src/",
	                     * "/share/cargo/registry/", "/vendor/", "/.cargo/", or a versioned
	                     * crate directory "/name-X.Y.Z/"), not a shared library of the system
	                     * (libc, ld.so, vdso), not the kernel. A frame with no line info counts
	                     * as user code only when it is in the main executable and its name does
	                     * not start with std::, core::, alloc::, tokio::, <std::, <core::,
	                     * <alloc::, <tokio:: */
	bool kernel;
};

struct ss_module_info {
	const char *path;       /* the ELF file mapped there (as the process sees it) */
	const char *build_id;   /* hex, NULL when the file has none */
	bool symtab;            /* has a .symtab section (not stripped) */
	bool dwarf;             /* has .debug_line/.debug_info (or a local separate debug file) */
	bool frame_pointers;    /* built with frame pointers: of the function symbols >= 16 bytes
	                         * (sampled up to 2000) that open with a frame (after an optional
	                         * `endbr64`, f3 0f 1e fa), >= 60 % open it with `push %rbp; mov
	                         * %rsp,%rbp` (55 48 89 e5) rather than with another push or a
	                         * `sub $N,%rsp`; those opening without a frame (GCC's frameless
	                         * leaves, shrink-wrapped prologues) count neither way. Unknown (no
	                         * symbols) counts as false. */
};

struct ss;

struct ss *ss_new(void);
void ss_free(struct ss *s);

/* Learns the executable mappings of a running process (its /proc/PID/maps) and opens their
 * files, so that the process may exit afterwards. Call while the process runs; calling again
 * for a known pid refreshes (libraries loaded since; on failure the mappings known before are
 * kept). 0 or -errno, with a one-line reason in err ("pid 123: No such process"). */
int ss_add_pid(struct ss *s, uint32_t pid, char *err, size_t errlen);

/* The frames of one user-space address of pid, INNERMOST FIRST: the inlined call chain from
 * DWARF, then the containing function (symbol table, else DWARF subprogram). `return_addr`:
 * addr is a return address (every frame of a stack but the first): addr - 1 is looked up.
 * Fills up to max pointers into out (frames owned by s, valid until ss_free) and returns how
 * many (>= 1 when max >= 1: an unknown address gives one frame "module+0x…" or "[unknown]").
 * A pid never added is added on first use (once). */
size_t ss_user(struct ss *s, uint32_t pid, uint64_t addr, bool return_addr,
	       const struct ss_frame **out, size_t max);

/* A kernel address, from /proc/kallsyms (read once, lazily; addresses all zero: names are
 * unavailable, one frame "[kernel]" per address). Returns 1 (or 0 if max is 0). */
size_t ss_kernel(struct ss *s, uint64_t addr, const struct ss_frame **out, size_t max);

/* What the file mapped at addr in pid offers (NULL fields / false when unknown; strings owned
 * by s). 0 or -ENOENT. */
int ss_module_info(struct ss *s, uint32_t pid, uint64_t addr, struct ss_module_info *mi);

#endif
