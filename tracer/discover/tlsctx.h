/* SPDX-License-Identifier: MIT */
/*
 * tlsctx.h — where a stock Tokio binary keeps, per thread, the id of the task being polled:
 * the field `current_task_id` of its thread-local runtime context (tokio::runtime::context::
 * CONTEXT, a `Cell<Option<task::Id>>`), as an offset from the thread pointer (x86_64: the
 * thread's fs base) that a BPF program can read without a uprobe. See tlsctx.c for how it is
 * found and checked, and the layouts met across Tokio 1.24–1.53.
 */
#ifndef TET_TLSCTX_H
#define TET_TLSCTX_H
#include <stdint.h>

/* How the slot was found. */
enum tlsctx_method {
	TLSCTX_NONE,     /* not found: `why` says why (nothing is to be read then) */
	TLSCTX_DWARF,    /* the variable's DWARF: its TLS location, the member path of its type
			  * (checked against TLSCTX_CODE's answer when that one has one) */
	TLSCTX_CODE,     /* the STT_TLS symbol + the stores of Tokio's own accessor
			  * (tokio::runtime::context::set_current_task_id) */
};

/* The field's shape: Option<task::Id>. */
enum tlsctx_layout {
	TLSCTX_NICHE,    /* Id(NonZeroU64), Tokio 1.40+: one u64, 0 = None */
	TLSCTX_TAGGED,   /* Id(u64), Tokio 1.24–1.39: u64 tag (0 = None, 1 = Some), the id at +8 */
};

#define TLSCTX_WHY_LEN 256

struct tlsctx {
	enum tlsctx_method method;
	enum tlsctx_layout layout;
	uint64_t tls_vaddr, tls_memsz, tls_align;  /* the executable's PT_TLS */
	int64_t block_off;     /* its TLS block from the thread pointer (variant II: negative) */
	uint64_t sym_value;    /* CONTEXT's STT_TLS symbol: offset in the TLS block, and size */
	uint64_t sym_size;
	int64_t ctx_off;       /* CONTEXT's storage from the thread pointer: block_off + sym_value */
	uint64_t accessor;     /* the accessor read (link-time address) */
	int accessors;         /* how many accessors (copies of Tokio) agreed */
	uint32_t field_off;    /* current_task_id from CONTEXT's storage start */
	int64_t id_off;        /* the id word from the thread pointer (0 in it = None for NICHE) */
	int64_t tag_off;       /* TAGGED: the tag word from the thread pointer (== id_off - 8) */
	char why[TLSCTX_WHY_LEN];
	char cross[TLSCTX_WHY_LEN + 8];  /* DWARF: "code agrees", or "code: " why code gives none */
};

/* Locate the slot in the ELF file PATH. Returns 0 with out->method set (TLSCTX_NONE and
 * out->why when the file does not give it: no symbol table, another architecture, a shared
 * object, an accessor not recognised, ...), or a negative errno when PATH cannot be read as
 * ELF (message in out->why). */
int tlsctx_find(const char *path, struct tlsctx *out);

const char *tlsctx_method_name(enum tlsctx_method m);   /* "none", "dwarf", "code" */
const char *tlsctx_layout_name(enum tlsctx_layout l);   /* "niche", "tagged" */

#endif
