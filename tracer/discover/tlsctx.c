// SPDX-License-Identifier: MIT
/*
 * tlsctx.c — the thread-pointer-relative address of Tokio's CONTEXT.current_task_id.
 *
 * Every Tokio release 1.24–1.53 keeps, in the thread-local `tokio::runtime::context::CONTEXT`
 * (a `thread_local!`, lazy in 1.24–1.28, `const` from 1.29), a `current_task_id:
 * Cell<Option<task::Id>>` that `TaskIdGuard` sets around every poll of a task (and around the
 * drop of its future or output) and puts back when it ends. Reading it needs three numbers:
 *
 *   1. Where the executable's TLS block sits. x86_64 is TLS variant II: the thread pointer
 *      (%fs base; its first word points to itself) is at the end of the static TLS area and
 *      the executable's block, module 1, comes right below it: block = tp - off with
 *      off = round_up(p_memsz - firstbyte, p_align) + firstbyte, firstbyte =
 *      -p_vaddr & (p_align - 1) (glibc's _dl_determine_tlsoffset, TLS_TCB_AT_TP; the System V
 *      x86_64 ABI, "Thread-Local Storage" §3.4.6; musl the same). A nonzero firstbyte is
 *      refused (glibc's static and dynamic loaders place such a block differently), so the
 *      offset is round_up(p_memsz, p_align). Only the executable (DF_1_PIE or ET_EXEC): a
 *      shared object's block is placed at load time.
 *   2. CONTEXT's storage in the block: its STT_TLS symbol's st_value (the symbol is std's
 *      wrapper around the value, `CONTEXT::{{constant}}::{{closure}}::__RUST_STD_INTERNAL_VAL`
 *      with today's rustc, state word included).
 *   3. current_task_id in that storage. Rust orders fields as it likes and std's wrapper
 *      differs between lazy and const init and between Rust releases (Tokio 1.24's lazy
 *      storage: the Context at 0, its state byte at 0x60; 1.29+'s eager storage: the Context
 *      at 0, the state byte after it), so the offset is never guessed. (a) With full DWARF
 *      (debug = 2; "limited" has no variables) it is the variable's: DW_OP_const8u X,
 *      DW_OP_GNU_push_tls_address gives 2., the member path of its type down to
 *      current_task_id (through std's wrapper and Rust enums' variant parts) gives the field,
 *      whose size (8 or 16) gives the layout; the code below must then agree or nothing is
 *      answered. (b) Otherwise it is read from Tokio's own accessor `tokio::runtime::context::set_current_task_id`, which the
 *      compiler keeps out of line (a `t` symbol). Its code loads the thread pointer
 *      (`mov %fs:0,%r`), adds CONTEXT's offset (`lea -X(%r),%b`; X is the linker's, which
 *      must equal 1.+2.: checked) and stores its argument into the field
 *      (`mov %arg,D(%b)`). Option<Id> is one u64 when Id wraps a NonZeroU64 (Tokio 1.40+;
 *      0 = None) and a pair (tag, id) when it wraps a u64 (1.24–1.39; tag 0 = None,
 *      1 = Some): the accessor then gets two registers (%rdi tag, %rsi id) and stores both,
 *      8 bytes apart, which is how the two layouts are told apart. An accessor that reads
 *      %rsi (a two-word argument) without that second store is refused, never taken as the
 *      one-word layout.
 *
 * The code is decoded linearly (x86-64 instruction lengths, the few moves that copy the
 * argument and the base between registers); anything not understood, two Tokio copies that
 * disagree, a store outside CONTEXT's symbol or a base that is not CONTEXT's gives
 * TLSCTX_NONE with the reason, never an offset. Only this module reads the accessor; a
 * binary without a symbol table (stripped) cannot be read this way.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "tlsctx.h"

#define MAX_CAND    8      /* CONTEXT symbols / accessors considered (copies of Tokio) */
#define CODE_MAX    1024   /* bytes of an accessor decoded */

/* Legacy (_ZN…E) and v0 (_R…) manglings both spell the path as length-prefixed words. */
static const char CTX_KEY[] = "7context7CONTEXT";
static const char SET_KEY[] = "7context19set_current_task_id";
static const char TOKIO_KEY[] = "5tokio";

const char *tlsctx_method_name(enum tlsctx_method m)
{
	return m == TLSCTX_CODE ? "code" : m == TLSCTX_DWARF ? "dwarf" : "none";
}

const char *tlsctx_layout_name(enum tlsctx_layout l)
{
	return l == TLSCTX_TAGGED ? "tagged" : "niche";
}

static int refuse(struct tlsctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(struct tlsctx *c, const char *fmt, ...)
{
	va_list ap;

	c->method = TLSCTX_NONE;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * x86-64: instruction lengths and the moves that matter
 */
struct insn {
	size_t len;
	int rex;          /* the REX byte, 0 when none */
	bool rex_w;
	int opc;          /* one-byte opcode, or 0x0f00 | second byte */
	bool fs;          /* %fs segment prefix */
	bool has_modrm;
	int mod, reg, rm; /* rm: the base register when mod != 3 (SIB base too), -1 no base and
			   * no index (disp32 alone), -2 an index, -3 RIP-relative */
	int base;         /* mod != 3: the base register, -1 none (also with an index) */
	int index;        /* the SIB index register, -1 when none */
	int64_t disp;
};

static bool op1_modrm(int o)
{
	if (o < 0x40)
		return (o & 7) < 4;
	return o == 0x63 || o == 0x69 || o == 0x6b || (o >= 0x80 && o <= 0x8f) ||
	       o == 0xc0 || o == 0xc1 || o == 0xc6 || o == 0xc7 || (o >= 0xd0 && o <= 0xd3) ||
	       o == 0xf6 || o == 0xf7 || o == 0xfe || o == 0xff;
}

/* immediate bytes of a one-byte opcode (imm32 forms: 2 with a 0x66 prefix) */
static int op1_imm(int o, int reg, bool opsz16, bool rex_w)
{
	int iz = opsz16 ? 2 : 4;

	if (o < 0x40 && (o & 7) == 4)
		return 1;
	if (o < 0x40 && (o & 7) == 5)
		return iz;
	switch (o) {
	case 0x6a: case 0x6b: case 0x80: case 0x83: case 0xa8: case 0xc0: case 0xc1: case 0xc6:
	case 0xeb: case 0xcd:
		return 1;
	case 0x68: case 0x69: case 0x81: case 0xa9: case 0xc7: case 0xe8: case 0xe9:
		return iz;
	case 0xf6:
		return reg < 2 ? 1 : 0;
	case 0xf7:
		return reg < 2 ? iz : 0;
	}
	if (o >= 0x70 && o <= 0x7f)
		return 1;
	if (o >= 0xb0 && o <= 0xb7)
		return 1;
	if (o >= 0xb8 && o <= 0xbf)
		return rex_w ? 8 : iz;
	return 0;
}

static bool op1_plain(int o)   /* no ModRM, known */
{
	return (o >= 0x50 && o <= 0x5f) || o == 0x90 || o == 0x98 || o == 0x99 || o == 0xc3 ||
	       o == 0xc9 || o == 0xcc || o == 0x68 || o == 0x6a || (o >= 0x70 && o <= 0x7f) ||
	       o == 0xa8 || o == 0xa9 || (o >= 0xb0 && o <= 0xbf) || o == 0xe8 || o == 0xe9 ||
	       o == 0xeb || o == 0xf4 || (o < 0x40 && ((o & 7) == 4 || (o & 7) == 5));
}

/* 0f xx: ModRM?, immediate bytes; false when unknown */
static bool op2_shape(int o, bool *modrm, int *imm)
{
	*imm = 0;
	*modrm = true;
	if (o == 0x05 || o == 0x0b || o == 0xa2 || (o >= 0x80 && o <= 0x8f)) {
		*modrm = false;
		*imm = o >= 0x80 ? 4 : 0;
		return true;
	}
	if (o == 0x70 || o == 0x71 || o == 0x72 || o == 0x73 || o == 0xba || o == 0xc2 ||
	    o == 0xc4 || o == 0xc5 || o == 0xc6)
		*imm = 1;
	return (o >= 0x10 && o <= 0x1f) || (o >= 0x28 && o <= 0x2f) || (o >= 0x40 && o <= 0x7f) ||
	       (o >= 0x90 && o <= 0x9f) || o == 0xa3 || o == 0xab || o == 0xaf || o == 0xb0 ||
	       o == 0xb1 || o == 0xb3 || (o >= 0xb6 && o <= 0xbf) || o == 0xc0 || o == 0xc1 ||
	       (o >= 0xc2 && o <= 0xc6) || o >= 0xd0;
}

/* One instruction at p[0..n); false when not understood. */
static bool decode(const unsigned char *p, size_t n, struct insn *in)
{
	size_t i = 0;
	int rex = 0, imm = 0, o;
	bool opsz16 = false;

	memset(in, 0, sizeof(*in));
	in->rm = -1;
	in->base = -1;
	in->index = -1;
	for (; i < n && i < 4; i++) {
		if (p[i] == 0x66)
			opsz16 = true;
		else if (p[i] == 0x64)
			in->fs = true;
		else if (p[i] != 0xf2 && p[i] != 0xf3 && p[i] != 0x65 && p[i] != 0x2e &&
			 p[i] != 0xf0)
			break;
	}
	if (i < n && (p[i] & 0xf0) == 0x40)
		rex = p[i++];
	if (i >= n)
		return false;
	in->rex = rex;
	in->rex_w = rex & 8;
	o = p[i++];
	if (o == 0x0f) {
		if (i >= n)
			return false;
		o = p[i++];
		if (o == 0x38 || o == 0x3a) {   /* three-byte maps: ModRM, 3a an imm8 */
			if (i >= n)
				return false;
			i++;
			in->has_modrm = true;
			imm = o == 0x3a;
			o = 0x0f00 | o;
		} else {
			bool m;

			if (!op2_shape(o, &m, &imm))
				return false;
			in->has_modrm = m;
			o = 0x0f00 | o;
		}
	} else if (op1_modrm(o)) {
		in->has_modrm = true;
	} else if (!op1_plain(o)) {
		return false;
	}
	in->opc = o;
	if (in->has_modrm) {
		int modrm, rm;

		if (i >= n)
			return false;
		modrm = p[i++];
		in->mod = modrm >> 6;
		in->reg = ((modrm >> 3) & 7) | (rex & 4 ? 8 : 0);
		rm = modrm & 7;
		if (in->mod == 3) {
			in->rm = rm | (rex & 1 ? 8 : 0);
		} else {
			int dsz = in->mod == 1 ? 1 : in->mod == 2 ? 4 : 0;

			if (rm == 4) {                 /* SIB */
				int sib;

				if (i >= n)
					return false;
				sib = p[i++];
				in->base = (sib & 7) | (rex & 1 ? 8 : 0);
				if ((sib & 7) == 5 && in->mod == 0) {
					dsz = 4;
					in->base = -1;  /* disp32, no base (%fs:disp32) */
				}
				if (((sib >> 3) & 7) != 4 || (rex & 2))
					in->index = ((sib >> 3) & 7) | (rex & 2 ? 8 : 0);
				/* an index register: not a plain base (never %fs:disp32 either) */
				in->rm = in->index >= 0 ? -2 : in->base;
			} else if (rm == 5 && in->mod == 0) {
				dsz = 4;
				in->rm = -3;           /* RIP-relative */
			} else {
				in->rm = in->base = rm | (rex & 1 ? 8 : 0);
			}
			if (i + (size_t)dsz > n)
				return false;
			if (dsz == 1)
				in->disp = (int8_t)p[i];
			else if (dsz == 4)
				in->disp = (int32_t)((uint32_t)p[i] | (uint32_t)p[i + 1] << 8 |
						     (uint32_t)p[i + 2] << 16 | (uint32_t)p[i + 3] << 24);
			i += (size_t)dsz;
		}
	}
	if (!(o & 0x0f00))
		imm = op1_imm(o, in->reg & 7, opsz16, in->rex_w);
	if (i + (size_t)imm > n)
		return false;
	in->len = i + (size_t)imm;
	return true;
}

/* Whether the instruction reads register REG (its ModRM operands, push; what is needed to see
 * whether the argument's second word, %rsi, is used at all). */
static bool reads(const struct insn *in, int reg)
{
	int o = in->opc;
	bool reg_read = o == 0x88 || o == 0x89 || o == 0x84 || o == 0x85 || o == 0x86 || o == 0x87 ||
			(o < 0x40 && (o & 7) < 4) || o == 0x0faf || (o >= 0x0f40 && o <= 0x0f4f) ||
			o == 0x0fa3 || o == 0x0fab || o == 0x0fb3 || o == 0x0fb0 || o == 0x0fb1 ||
			o == 0x0fc0 || o == 0x0fc1;

	if (!in->has_modrm)
		return o >= 0x50 && o <= 0x57 && ((o & 7) | (in->rex & 1 ? 8 : 0)) == reg;
	if (in->mod == 3 && in->reg == in->rm && (o == 0x31 || o == 0x33 || o == 0x29 || o == 0x2b))
		return false;                                   /* xor %r,%r: a zeroing idiom */
	if (reg_read && in->reg == reg)
		return true;
	if (in->mod != 3)
		return in->base == reg || in->index == reg;     /* the address */
	return in->rm == reg && o != 0x89 && o != 0x88 && o != 0xc7 && o != 0xc6 && o != 0x8f &&
	       !(o >= 0x0f90 && o <= 0x0f9f);
}

/* What the accessor's code tells. */
struct acc {
	int64_t base_off;    /* the lea's displacement from the thread pointer (INT64_MIN: none) */
	int64_t store[2];    /* thread-pointer-relative stores of argument words 0 and 1 */
	int nstore[2];
	bool arg1_used;      /* %rsi's value at entry is read: the argument has two words */
	bool ambiguous;
	char why[160];
};

#define R_NONE 0
#define R_TP   1    /* holds the thread pointer */
#define R_BASE 2    /* holds tp + base_off */
#define R_ARG0 3    /* the argument's first word (%rdi at entry) */
#define R_ARG1 4    /* its second word (%rsi) */

/* The registers the instruction writes (up to 3 in dst[], -1 past them) that read_accessor does
 * not track itself: any of them loses the role it had. Over-marking only loses a role (a
 * refusal at worst); a missed write would keep a stale one. */
static void written_by(const struct insn *in, int dst[3])
{
	int o = in->opc, r = in->reg & 7, n = 0;
	bool m3 = in->has_modrm && in->mod == 3;

	dst[0] = dst[1] = dst[2] = -1;
	if ((o >= 0x58 && o <= 0x5f) || (o >= 0xb0 && o <= 0xbf)) {  /* pop, mov $imm (8/32/64) */
		dst[n++] = (o & 7) | (in->rex & 1 ? 8 : 0);
		return;
	}
	if (o >= 0x91 && o <= 0x97) {                   /* xchg %r,%rax */
		dst[n++] = (o & 7) | (in->rex & 1 ? 8 : 0);
		dst[n++] = 0;
		return;
	}
	if (o == 0x98 || o == 0x99) {                   /* cltq, cqto */
		dst[n++] = o == 0x98 ? 0 : 2;
		return;
	}
	if (!in->has_modrm)
		return;
	if (o < 0x40 && (o & 7) < 4) {                  /* add…cmp r/m,r and r,r/m */
		if ((o & 0x38) == 0x38)
			return;                         /* cmp */
		if (o & 2)
			dst[n++] = in->reg;
		else if (m3)
			dst[n++] = in->rm;
		return;
	}
	switch (o) {
	case 0x86: case 0x87: case 0x0fc0: case 0x0fc1:  /* xchg, xadd: both operands */
		dst[n++] = in->reg;
		if (m3)
			dst[n++] = in->rm;
		return;
	case 0x0fb0: case 0x0fb1:                        /* cmpxchg: r/m and %rax */
		dst[n++] = 0;
		if (m3)
			dst[n++] = in->rm;
		return;
	case 0x8a: case 0x8b: case 0x8d: case 0x63: case 0x69: case 0x6b: case 0x0faf:
	case 0x0fb6: case 0x0fb7: case 0x0fbe: case 0x0fbf: case 0x0fbc: case 0x0fbd: case 0x0fb8:
		dst[n++] = in->reg;
		return;
	case 0x80: case 0x81: case 0x83:                 /* group 1 but cmp (/7) */
		if (m3 && r != 7)
			dst[n++] = in->rm;
		return;
	case 0x88: case 0x89: case 0xc6: case 0xc7: case 0x8f:
	case 0xc0: case 0xc1: case 0xd0: case 0xd1: case 0xd2: case 0xd3:
		if (m3)
			dst[n++] = in->rm;
		return;
	case 0xf6: case 0xf7:                            /* not, neg; mul, div: %rax, %rdx */
		if (r == 2 || r == 3) {
			if (m3)
				dst[n++] = in->rm;
		} else if (r >= 4) {
			dst[n++] = 0;
			dst[n++] = 2;
		}
		return;
	case 0xfe: case 0xff:                            /* inc, dec */
		if (m3 && r < 2)
			dst[n++] = in->rm;
		return;
	}
	if (o >= 0x0f40 && o <= 0x0f4f)                  /* cmov */
		dst[n++] = in->reg;
	else if (o >= 0x0f90 && o <= 0x0f9f && m3)       /* setcc */
		dst[n++] = in->rm;
	else if (o == 0x0f7e && m3)                      /* movd/movq %xmm,%r */
		dst[n++] = in->rm;
	/* other SSE forms write xmm registers (not tracked) or memory */
}

static void read_accessor(const unsigned char *code, size_t n, struct acc *a)
{
	int r[16] = { 0 };
	size_t i = 0;
	int k;

	memset(a, 0, sizeof(*a));
	a->base_off = INT64_MIN;
	r[7] = R_ARG0;   /* %rdi */
	r[6] = R_ARG1;   /* %rsi */
	while (i < n) {
		struct insn in;
		int dst[3];

		if (!decode(code + i, n - i, &in)) {
			if (!a->nstore[0])
				snprintf(a->why, sizeof(a->why),
					 "instruction not understood at +%#zx (byte %#x)", i, code[i]);
			break;
		}
		i += in.len;
		if (in.opc == 0xcc)
			break;                              /* padding after the function */
		for (k = 0; k < 16; k++)
			if (r[k] == R_ARG1 && reads(&in, k))
				a->arg1_used = true;
		/* mov %fs:0,%r: the thread pointer (its first word points to itself) */
		if (in.fs && in.opc == 0x8b && in.rex_w && in.mod == 0 && in.rm == -1 &&
		    in.index == -1 && in.disp == 0) {
			r[in.reg] = R_TP;
			continue;
		}
		/* lea D(%tp),%r: CONTEXT */
		if (in.opc == 0x8d && in.rex_w && in.mod != 3 && in.rm >= 0 && r[in.rm] == R_TP) {
			if (a->base_off != INT64_MIN && a->base_off != in.disp)
				a->ambiguous = true;
			a->base_off = in.disp;
			r[in.reg] = R_BASE;
			continue;
		}
		/* mov %arg,D(%base) or mov %arg,%fs:D: the field */
		if (in.opc == 0x89 && in.rex_w && in.mod != 3 &&
		    (r[in.reg] == R_ARG0 || r[in.reg] == R_ARG1)) {
			int64_t at;

			if (in.fs && in.rm == -1 && in.index == -1)
				at = in.disp;
			else if (!in.fs && in.rm >= 0 && r[in.rm] == R_BASE)
				at = a->base_off + in.disp;
			else
				continue;
			k = r[in.reg] == R_ARG1;
			if (a->nstore[k] && a->store[k] != at)
				a->ambiguous = true;
			a->store[k] = at;
			a->nstore[k]++;
			continue;
		}
		/* mov %r,%r (64-bit): the value moves with it */
		if ((in.opc == 0x89 || in.opc == 0x8b) && in.rex_w && in.mod == 3) {
			int from = in.opc == 0x89 ? in.reg : in.rm, to = in.opc == 0x89 ? in.rm : in.reg;

			r[to] = r[from];
			continue;
		}
		if (in.opc == 0xe8 || in.opc == 0xff) {     /* a call: caller-saved registers lost */
			static const int clobber[] = { 0, 1, 2, 6, 7, 8, 9, 10, 11 };

			if (in.opc == 0xff && (in.reg & 7) != 2)
				goto written;               /* inc/dec (written), jmp/push */
			for (k = 0; k < (int)(sizeof(clobber) / sizeof(clobber[0])); k++)
				r[clobber[k]] = R_NONE;
			continue;
		}
written:
		written_by(&in, dst);
		for (k = 0; k < 3; k++)
			if (dst[k] >= 0)
				r[dst[k]] = R_NONE;
	}
}

/* ---------------------------------------------------------------------------------------
 * The ELF side
 */
struct cand {
	uint64_t value, size;
};

static bool read_at(int fd, uint64_t off, void *buf, size_t n)
{
	return pread(fd, buf, n, (off_t)off) == (ssize_t)n;
}

/* file offset of a link-time address in a PT_LOAD with file bytes (n of them) */
static bool vaddr_off(Elf *e, uint64_t vaddr, size_t n, uint64_t *off)
{
	size_t np, i;

	if (elf_getphdrnum(e, &np))
		return false;
	for (i = 0; i < np; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz &&
		    n <= ph.p_filesz - (vaddr - ph.p_vaddr)) {
			*off = ph.p_offset + (vaddr - ph.p_vaddr);
			return true;
		}
	}
	return false;
}

struct scan {
	struct cand ctx[MAX_CAND], acc[MAX_CAND];
	int nctx, nacc;
	bool symtab;
};

static void scan_symbols(Elf *e, struct scan *s)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		s->symtab |= sh.sh_type == SHT_SYMTAB;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *name;
			int type;
			struct cand *v;
			int *nv, j;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    !(name = elf_strptr(e, sh.sh_link, sym.st_name)) || !strstr(name, TOKIO_KEY))
				continue;
			type = GELF_ST_TYPE(sym.st_info);
			if (type == STT_TLS && strstr(name, CTX_KEY))
				v = s->ctx, nv = &s->nctx;
			else if (type == STT_FUNC && sym.st_value && strstr(name, SET_KEY))
				v = s->acc, nv = &s->nacc;
			else
				continue;
			for (j = 0; j < *nv && v[j].value != sym.st_value; j++)
				;
			if (j < *nv || *nv == MAX_CAND)     /* .symtab and .dynsym both list it */
				continue;
			v[(*nv)++] = (struct cand){ sym.st_value, sym.st_size };
		}
	}
}

/* DT_FLAGS_1 has DF_1_PIE: a position-independent executable (a shared object has not) */
static bool is_pie(Elf *e)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		n = d->d_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Dyn dyn;

			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_PIE))
				return true;
		}
	}
	return false;
}

/* The executable's TLS block from the thread pointer; TLSCTX_NONE when there is none. */
static int tls_frame(Elf *e, struct tlsctx *c)
{
	GElf_Ehdr eh;
	GElf_Phdr ph;
	size_t np, i;
	int tls = 0;
	uint64_t align, first;

	if (!gelf_getehdr(e, &eh) || elf_getphdrnum(e, &np))
		return refuse(c, "malformed ELF header"), -EBADMSG;
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64)
		return refuse(c, "not an x86_64 ELF file (machine %u): the task-id slot is "
			      "located on x86_64 only", eh.e_machine);
	for (i = 0; i < np; i++) {
		if (!gelf_getphdr(e, (int)i, &ph))
			return refuse(c, "malformed program header %zu", i), -EBADMSG;
		if (ph.p_type == PT_TLS && !tls++) {
			c->tls_vaddr = ph.p_vaddr;
			c->tls_memsz = ph.p_memsz;
			c->tls_align = ph.p_align ? ph.p_align : 1;
		}
	}
	if (eh.e_type == ET_DYN && !is_pie(e))
		return refuse(c, "a shared object (no DF_1_PIE): its TLS block is placed at load time, "
			      "only an executable's is at a fixed offset from the thread pointer");
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return refuse(c, "not an executable (ELF type %u)", eh.e_type);
	if (!tls)
		return refuse(c, "no PT_TLS segment: the executable has no thread-locals (no Tokio "
			      "CONTEXT)");
	if (tls > 1)
		return refuse(c, "%d PT_TLS segments: an executable has one", tls);
	align = c->tls_align;
	if ((align & (align - 1)) || align > 4096 || !c->tls_memsz || c->tls_memsz > (1u << 30))
		return refuse(c, "PT_TLS not understood (size %#" PRIx64 ", alignment %#" PRIx64 ")",
			      c->tls_memsz, align);
	/* glibc's static and dynamic loaders place a block whose start is not aligned
	 * differently (firstbyte): no single offset then */
	first = -c->tls_vaddr & (align - 1);
	if (first)
		return refuse(c, "PT_TLS at %#" PRIx64 " is not aligned to its %#" PRIx64 " bytes: "
			      "the block's place depends on the loader", c->tls_vaddr, align);
	c->block_off = -(int64_t)((c->tls_memsz + align - 1) & ~(align - 1));
	c->method = TLSCTX_CODE;    /* so far so good: the caller goes on */
	return 0;
}

/* a [value, value + size) inside the TLS block (memsz <= 1 GiB: the sums below stay small) */
static bool in_tls(const struct tlsctx *c, uint64_t value, uint64_t size)
{
	return value <= c->tls_memsz && size <= c->tls_memsz - value;
}

/* (b) the STT_TLS symbol and the accessor's stores */
static int by_code(Elf *e, int fd, const struct scan *s, struct tlsctx *c)
{
	int64_t field = 0;
	enum tlsctx_layout layout0 = TLSCTX_NICHE;
	int k, agree = 0;

	if (!s->symtab && !s->nctx)
		return refuse(c, "no symbol table (stripped): neither Tokio's CONTEXT thread-local "
			      "nor its accessor can be found");
	if (!s->nctx)
		return refuse(c, "no STT_TLS symbol of tokio::runtime::context::CONTEXT (not Tokio, "
			      "or a Tokio without its runtime context)");
	for (k = 0; k < s->nctx; k++)
		if (!in_tls(c, s->ctx[k].value, s->ctx[k].size))
			return refuse(c, "CONTEXT's STT_TLS symbol (value %#" PRIx64 ", size %#"
				      PRIx64 ") is outside PT_TLS (%#" PRIx64 " bytes)",
				      s->ctx[k].value, s->ctx[k].size, c->tls_memsz);
	if (!s->nacc)
		return refuse(c, "tokio::runtime::context::set_current_task_id not in the symbol "
			      "table (inlined everywhere?): the field's offset cannot be read from "
			      "code");

	for (k = 0; k < s->nacc; k++) {
		unsigned char code[CODE_MAX];
		size_t n = s->acc[k].size;
		uint64_t off;
		struct acc a;
		int64_t f, width;
		int j, hit = -1;

		if (!n || n > CODE_MAX)
			return refuse(c, "set_current_task_id at %#" PRIx64 " is %zu bytes long in the "
				      "symbol table (1..%d expected)", s->acc[k].value, n, CODE_MAX);
		if (!vaddr_off(e, s->acc[k].value, n, &off) || !read_at(fd, off, code, n))
			return refuse(c, "set_current_task_id at %#" PRIx64 " is not in the file",
				      s->acc[k].value);
		read_accessor(code, n, &a);
		if (a.ambiguous)
			return refuse(c, "set_current_task_id at %#" PRIx64 " stores its argument at "
				      "more than one place", s->acc[k].value);
		if (!a.nstore[0])
			return refuse(c, "set_current_task_id at %#" PRIx64 ": no store of its "
				      "argument into a thread-local found%s%s", s->acc[k].value,
				      a.why[0] ? ": " : "", a.why);
		f = a.store[0];
		c->layout = a.nstore[1] && a.store[1] == f + 8 ? TLSCTX_TAGGED : TLSCTX_NICHE;
		if (a.nstore[1] && c->layout != TLSCTX_TAGGED)
			return refuse(c, "set_current_task_id at %#" PRIx64 " stores its two words "
				      "%" PRId64 " bytes apart, not 8", s->acc[k].value,
				      a.store[1] - f);
		if (c->layout == TLSCTX_NICHE && a.arg1_used)
			return refuse(c, "set_current_task_id at %#" PRIx64 " uses a second argument "
				      "word (Option<Id> of two words) but stores none next to the first",
				      s->acc[k].value);
		width = c->layout == TLSCTX_TAGGED ? 16 : 8;
		for (j = 0; j < s->nctx; j++) {
			/* in_tls above: |block_off|, value and size are all <= 1 GiB + 4 KiB */
			int64_t at = c->block_off + (int64_t)s->ctx[j].value;

			if (f >= at && f + width <= at + (int64_t)s->ctx[j].size)
				hit = j;
		}
		if (hit < 0)
			return refuse(c, "set_current_task_id at %#" PRIx64 " stores at tp%+" PRId64
				      ", outside every CONTEXT symbol (TLS block at tp%+" PRId64 ")",
				      s->acc[k].value, f, c->block_off);
		if (a.base_off != INT64_MIN &&
		    a.base_off != c->block_off + (int64_t)s->ctx[hit].value)
			return refuse(c, "set_current_task_id at %#" PRIx64 " addresses CONTEXT at "
				      "tp%+" PRId64 ", the ELF file puts it at tp%+" PRId64,
				      s->acc[k].value, a.base_off,
				      c->block_off + (int64_t)s->ctx[hit].value);
		if (agree && (f != field || c->layout != layout0))
			return refuse(c, "two copies of Tokio disagree on the task-id slot "
				      "(tp%+" PRId64 " %s and tp%+" PRId64 " %s)", field,
				      tlsctx_layout_name(layout0), f, tlsctx_layout_name(c->layout));
		field = f;
		layout0 = c->layout;
		if (!agree++)
			c->accessor = s->acc[k].value;
		c->sym_value = s->ctx[hit].value;
		c->sym_size = s->ctx[hit].size;
	}
	c->accessors = agree;
	c->ctx_off = c->block_off + (int64_t)c->sym_value;
	c->field_off = (uint32_t)(field - c->ctx_off);
	c->tag_off = c->layout == TLSCTX_TAGGED ? field : 0;
	c->id_off = c->layout == TLSCTX_TAGGED ? field + 8 : field;
	c->method = TLSCTX_CODE;
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * (a) DWARF: the variable, its TLS location, the member path down to current_task_id
 */
#define DW_DEPTH    12
#define DW_BUDGET   (1L << 20)   /* DIEs visited in the whole pass (hostile DWARF: cycles, …) */
#define DW_MAX_OFF  (1u << 30)   /* a member offset beyond this is not a TLS variable's */

struct dw_hit {
	long budget;            /* DIEs still to be visited; < 0: the pass gave up */
	int n;                  /* variables found with a TLS location and the field */
	bool disagree;          /* two of them differ */
	uint64_t value, field, size, var_size;
};

/* one more DIE visited; false once the pass is over budget */
static bool dw_visit(struct dw_hit *h)
{
	return --h->budget >= 0;
}

/* data_member_location as a constant (Rust emits constants) */
static bool member_off(Dwarf_Die *d, uint64_t *off)
{
	Dwarf_Attribute at;
	Dwarf_Word w;

	if (!dwarf_attr(d, DW_AT_data_member_location, &at)) {
		*off = 0;                   /* a variant part's members may omit it: offset 0 */
		return true;
	}
	if (dwarf_formudata(&at, &w) || w > DW_MAX_OFF)
		return false;
	*off = w;
	return true;
}

static bool type_of(Dwarf_Die *d, Dwarf_Die *t)
{
	Dwarf_Attribute at;
	int i;

	if (!dwarf_attr_integrate(d, DW_AT_type, &at) || !dwarf_formref_die(&at, t))
		return false;
	for (i = 0; i < 8 && (dwarf_tag(t) == DW_TAG_typedef || dwarf_tag(t) == DW_TAG_const_type ||
			      dwarf_tag(t) == DW_TAG_volatile_type); i++)
		if (!dwarf_attr_integrate(t, DW_AT_type, &at) || !dwarf_formref_die(&at, t))
			return false;
	return true;
}

/* offset and byte size of the member current_task_id below type T (structs, unions, Rust
 * enums' variant parts); false when absent. Every child visited costs h->budget one (a type
 * that contains itself, or a sibling chain that loops, in hostile DWARF). */
static bool find_field(Dwarf_Die *t, int depth, struct dw_hit *h, uint64_t *off, uint64_t *size)
{
	Dwarf_Die m, mt;
	int tag = dwarf_tag(t);

	if (depth > DW_DEPTH ||
	    (tag != DW_TAG_structure_type && tag != DW_TAG_union_type &&
				 tag != DW_TAG_variant_part && tag != DW_TAG_variant) ||
	    dwarf_child(t, &m) != 0)
		return false;
	do {
		const char *name;
		uint64_t o, so, ss;
		int mtag;

		if (!dw_visit(h))
			return false;
		name = dwarf_diename(&m);
		mtag = dwarf_tag(&m);
		if (mtag == DW_TAG_variant_part || mtag == DW_TAG_variant) {
			if (find_field(&m, depth + 1, h, &so, &ss)) {
				*off = so;
				*size = ss;
				return true;
			}
			continue;
		}
		if (mtag != DW_TAG_member || !member_off(&m, &o) || !type_of(&m, &mt))
			continue;
		if (name && strcmp(name, "current_task_id") == 0) {
			int bs = dwarf_bytesize(&mt);

			if (bs <= 0)
				return false;
			*off = o;
			*size = (uint64_t)bs;
			return true;
		}
		/* o and so are <= DW_MAX_OFF each step: the sum never wraps, and is checked again */
		if (find_field(&mt, depth + 1, h, &so, &ss) && so <= DW_MAX_OFF - o) {
			*off = o + so;
			*size = ss;
			return true;
		}
	} while (h->budget >= 0 && dwarf_siblingof(&m, &m) == 0);
	return false;
}

/* the variable's offset in the TLS block: DW_OP_const8u/4u/constu X, then a TLS op
 * (not DW_OP_addr: a relocated address, not an offset in the block) */
static bool tls_location(Dwarf_Die *v, uint64_t *x)
{
	Dwarf_Attribute at;
	Dwarf_Op *ops;
	size_t n;

	if (!dwarf_attr(v, DW_AT_location, &at) || dwarf_getlocation(&at, &ops, &n) || n != 2)
		return false;
	if (ops[1].atom != DW_OP_GNU_push_tls_address && ops[1].atom != DW_OP_form_tls_address)
		return false;
	if (ops[0].atom != DW_OP_const8u && ops[0].atom != DW_OP_const4u &&
	    ops[0].atom != DW_OP_constu)
		return false;
	*x = ops[0].number;
	return true;
}

static void dw_var(Dwarf_Die *d, struct dw_hit *h)
{
	Dwarf_Die t;
	uint64_t x, off, size;
	int vs;

	if (tls_location(d, &x) && type_of(d, &t) && find_field(&t, 0, h, &off, &size) &&
	    (vs = dwarf_bytesize(&t)) > 0) {
		if (h->n && (h->value != x || h->field != off || h->size != size ||
			     h->var_size != (uint64_t)vs))
			h->disagree = true;    /* two that differ: not trusted */
		h->n++;
		h->value = x;
		h->field = off;
		h->size = size;
		h->var_size = (uint64_t)vs;
	}
}

/* namespaces tokio::runtime::context::CONTEXT, then any below it, down to the variable (or,
 * as C++ compilers emit it, a definition at the top that names the declaration there) */
static void dw_walk(Dwarf_Die *d, int level, struct dw_hit *h)
{
	static const char *const path[] = { "tokio", "runtime", "context", "CONTEXT" };
	Dwarf_Die child;

	do {
		const char *name;
		int tag;

		if (!dw_visit(h))
			return;
		name = dwarf_diename(d);
		tag = dwarf_tag(d);
		if (tag == DW_TAG_namespace && level < DW_DEPTH &&
		    (level >= 4 || (name && strcmp(name, path[level]) == 0)) &&
		    dwarf_child(d, &child) == 0)
			dw_walk(&child, level + 1, h);
		else if (tag == DW_TAG_variable && level > 4)
			dw_var(d, h);
		else if (tag == DW_TAG_variable && level == 0 && dwarf_hasattr(d, DW_AT_specification)) {
			Dwarf_Attribute at;
			const char *ln = dwarf_formstring(dwarf_attr_integrate(d, DW_AT_linkage_name, &at));

			if (ln && strstr(ln, TOKIO_KEY) && strstr(ln, CTX_KEY))
				dw_var(d, h);
		}
	} while (h->budget >= 0 && dwarf_siblingof(d, d) == 0);
}

static void by_dwarf(int fd, struct dw_hit *h)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);

	memset(h, 0, sizeof(*h));
	h->budget = DW_BUDGET;
	while (dw && h->budget >= 0 && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0 &&
	       next > off) {
		Dwarf_Die cu, child;

		if (dw_visit(h) && dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &child) == 0)
			dw_walk(&child, 0, h);
		off = next;
	}
	if (dw)
		dwarf_end(dw);
}

static int locate(Elf *e, int fd, struct tlsctx *c)
{
	struct tlsctx code;
	struct scan s = { 0 };
	struct dw_hit h;
	int k, ret = tls_frame(e, c);

	if (ret || c->method == TLSCTX_NONE)
		return ret;
	code = *c;
	scan_symbols(e, &s);
	ret = by_code(e, fd, &s, &code);
	by_dwarf(fd, &h);
	if (h.budget < 0)
		return refuse(c, "DWARF unusable: more than %ld DIEs visited looking for CONTEXT "
			      "(a loop or a hostile .debug_info)", DW_BUDGET);
	if (!h.n) {
		*c = code;
		return ret;
	}
	if (h.disagree)
		return refuse(c, "the DWARF has CONTEXT variables that disagree");
	if (h.size != 8 && h.size != 16)
		return refuse(c, "current_task_id is %" PRIu64 " bytes in the DWARF: neither "
			      "Option<Id(NonZeroU64)> (8) nor Option<Id(u64)> (16)", h.size);
	if (!in_tls(c, h.value, h.var_size))
		return refuse(c, "the DWARF puts CONTEXT (%#" PRIx64 ", %#" PRIx64 " bytes) outside "
			      "PT_TLS (%#" PRIx64 " bytes)", h.value, h.var_size, c->tls_memsz);
	if (h.field > h.var_size || h.size > h.var_size - h.field)
		return refuse(c, "the DWARF puts current_task_id outside CONTEXT");
	for (k = 0; k < s.nctx && s.ctx[k].value != h.value; k++)
		;
	if (s.nctx && k == s.nctx)
		return refuse(c, "the DWARF puts CONTEXT at %#" PRIx64 " in the TLS block, no "
			      "CONTEXT STT_TLS symbol is there", h.value);
	/* in_tls: every term below is <= 1 GiB + 4 KiB */
	c->method = TLSCTX_DWARF;
	c->layout = h.size == 16 ? TLSCTX_TAGGED : TLSCTX_NICHE;
	c->sym_value = h.value;
	c->sym_size = h.var_size;
	c->ctx_off = c->block_off + (int64_t)h.value;
	c->field_off = (uint32_t)h.field;
	c->tag_off = c->layout == TLSCTX_TAGGED ? c->ctx_off + (int64_t)h.field : 0;
	c->id_off = c->ctx_off + (int64_t)h.field + (c->layout == TLSCTX_TAGGED ? 8 : 0);
	if (code.method == TLSCTX_NONE) {
		snprintf(c->cross, sizeof(c->cross), "code: %s", code.why);
		return 0;
	}
	if (code.ctx_off != c->ctx_off || code.id_off != c->id_off || code.layout != c->layout)
		return refuse(c, "the DWARF (CONTEXT tp%+" PRId64 ", id tp%+" PRId64 ", %s) and "
			      "set_current_task_id's code (tp%+" PRId64 ", tp%+" PRId64 ", %s) "
			      "disagree", c->ctx_off, c->id_off, tlsctx_layout_name(c->layout),
			      code.ctx_off, code.id_off, tlsctx_layout_name(code.layout));
	c->accessor = code.accessor;
	c->accessors = code.accessors;
	snprintf(c->cross, sizeof(c->cross), "code agrees");
	return 0;
}

int tlsctx_find(const char *path, struct tlsctx *out)
{
	Elf *e;
	int fd, ret;

	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return refuse(out, "libelf: %s", elf_errmsg(-1)), -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		refuse(out, "%s: %s", path, strerror(-ret));
		return ret;
	}
	e = elf_begin(fd, ELF_C_READ, NULL);   /* not mmap: a truncated file is no SIGBUS */
	if (!e || elf_kind(e) != ELF_K_ELF) {
		refuse(out, "%s: not an ELF file", path);
		ret = -ENOEXEC;
	} else {
		ret = locate(e, fd, out);
	}
	if (e)
		elf_end(e);
	close(fd);
	return ret;
}
