/* SPDX-License-Identifier: MIT */
/*
 * symbols.h — the uprobe fallback's view of a stock (unpatched) Tokio binary: which of Tokio's
 * out-of-line task functions are in its symbol table, where (file offsets for uprobes), and —
 * per monomorphised `raw::poll` — the type of the future it polls. See symbols.c for how the
 * type is recovered when the mangling does not spell it.
 */
#ifndef TET_SYMBOLS_H
#define TET_SYMBOLS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Functions the fallback attaches to (or reports). */
enum tsym_kind {
	TSYM_POLL,          /* tokio::runtime::task::raw::poll<T, S>           (one per T, S) */
	TSYM_WAKE_BY_VAL,   /* tokio::runtime::task::waker::wake_by_val          (waker vtable) */
	TSYM_WAKE_BY_REF,   /* tokio::runtime::task::waker::wake_by_ref */
	TSYM_CLONE,         /* tokio::runtime::task::waker::clone_waker */
	TSYM_DROP,          /* tokio::runtime::task::waker::drop_waker */
	TSYM_COMPLETE,      /* tokio::runtime::task::harness::Harness<T, S>::complete (task ends) */
	TSYM_DEALLOC,       /* tokio::runtime::task::raw::dealloc<T, S>          (header freed) */
	TSYM_SHUTDOWN,      /* tokio::runtime::task::raw::shutdown<T, S>         (cancellation) */
	TSYM_KINDS,
};

/* How a raw::poll instance's future type was found. */
enum tsym_type_src {
	TSYM_SRC_DWARF,     /* DWARF names the instance "poll<T, S>" (exact) */
	TSYM_SRC_V0,        /* the v0 mangling of raw::poll::<T, S> itself (exact) */
	TSYM_SRC_CELL,      /* raw::poll → … → drop_in_place<tokio::runtime::task::core::{Cell,Core,Stage}<T…>> */
	TSYM_SRC_DROP,      /* drop_in_place<T> (not produced now; see symbols.c) */
	TSYM_SRC_POLLFN,    /* raw::poll → Harness::poll → Core::poll → T's poll function */
	TSYM_SRC_NONE,      /* not found: the instance is named by its address */
	TSYM_SRCS,
};

struct tsym_fn {
	enum tsym_kind kind;
	uint64_t addr;      /* link-time address */
	uint64_t size;
	uint64_t file_off;  /* uprobe offset */
	char *name;         /* as in the symbol table */
	char *demangled;    /* libiberty's Rust demangling (without the hash) */
	int type;           /* TSYM_POLL: index into types (-1 for others) */
	enum tsym_type_src src;
	unsigned candidates;  /* TSYM_POLL: 1 = the type is known; > 1 = "A | B": one of these */
	uint64_t vtable;    /* TSYM_POLL: address of its task vtable (0 = not found) */
};

struct tsym_table {
	char *path;
	bool has_symtab;
	bool tokio;         /* Tokio symbols (or, stripped, the "tokio-runtime-worker" string) */
	bool v0;            /* the Tokio symbols use v0 mangling */
	bool dwarf;         /* DWARF named raw::poll instances */
	struct tsym_fn *fns;
	size_t nfns;
	size_t count[TSYM_KINDS];
	char **types;       /* future type per raw::poll instance (types[fn->type]) */
	size_t ntypes;
	size_t by_src[TSYM_SRCS];
	size_t ambiguous;   /* raw::poll instances named by several candidate types */
};

/* Reads PATH's .symtab/.dynsym. Returns 0 (look at count[] for what was found), or
 * -ENOENT/-EACCES/-ENOEXEC/-EBADMSG/-ENOMEM with err set. Neither a stripped file nor a
 * non-Tokio file is an error here: see tsym_usable(). */
int tsym_load(const char *path, struct tsym_table *t, char *err, size_t len);
void tsym_free(struct tsym_table *t);
/* 0 when the fallback can trace the file (raw::poll found); else -ENODATA with a message
 * saying why (stripped, not Tokio, raw::poll inlined everywhere). */
int tsym_usable(const struct tsym_table *t, char *err, size_t len);

/* The events (bits of enum tet_event) uprobes on these functions can give. */
unsigned tsym_probes(const struct tsym_table *t);
const char *tsym_kind_name(enum tsym_kind k);     /* "raw::poll", "waker::wake_by_val", … */
const char *tsym_src_name(enum tsym_type_src s);  /* "v0", "vtable-cell", … */
/* Rust demangling through libiberty (cplus_demangle, DMGL_RUST): malloc'd, NULL when the name
 * is not a Rust symbol. The legacy hash and LLVM's ".llvm.N" suffix are dropped. */
char *tsym_demangle(const char *mangled);
/* The first generic argument of the outermost "<…>" after `prefix` in `s`, balanced over
 * nested brackets (malloc'd, NULL if none): ("a::b<X<Y>, Z>", "a::b") → "X<Y>". */
char *tsym_first_generic(const char *s, const char *prefix);

/* The Tokio release a file was built from, as its panic locations name the crate's sources
 * ("…/tokio-1.53.2/src/…": "1.53.2" into out). 0, or -ENOENT (none named) / -errno. */
int tsym_tokio_release(const char *path, char *out, size_t len);

#endif
