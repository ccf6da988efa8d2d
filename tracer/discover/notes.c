// SPDX-License-Identifier: MIT
/*
 * notes.c — SystemTap SDT note reader (API in notes.h).
 *
 * What a note is. `sys/sdt.h` (and Rust/Go emitters that copy it) put one ELF note per
 * probe site into the section .note.stapsdt: owner "stapsdt", type 3 (NT_STAPSDT), and a
 * descriptor of three target-sized addresses — the site ("pc"), the address of the
 * .stapsdt.base section at link time ("base") and the semaphore (0 = none) — followed by
 * three NUL-terminated strings: provider, name, argument template. See
 * https://sourceware.org/systemtap/wiki/UserSpaceProbeImplementation.
 *
 * How it is read here:
 *   - libelf only for the ELF, program and section headers (it byte-swaps them). The note
 *     section and the symbol tables are decoded by hand from the raw file image: sizes
 *     from the ELF class (4- or 8-byte addresses), byte order from EI_DATA. Never a host
 *     `long` (libbpf's usdt.c reads `long[3]`, which is wrong for 32-bit targets). Every
 *     length is checked against the section before use: the parser is fuzzed.
 *   - Prelink: if the file has a .stapsdt.base section and the note's base is non-zero, the
 *     file was moved after linking by (sh_addr - base); pc and semaphore move with it.
 *   - pc → file offset through the PT_LOAD segment holding it, which must be executable
 *     and cover it in the file (p_filesz): that offset is what a uprobe attaches to.
 *   - Semaphore → file offset through a writable, non-executable PT_LOAD (p_memsz): the
 *     kernel's ref_ctr_offset (uprobes with reference counter, Linux 4.20, commit
 *     1cc33161a83d) is that file offset.
 *   - The site's bytes classify it: 1-byte nop (sys/sdt.h), 5-byte nop (what optimized
 *     uprobes, Linux 6.18 x86_64, can turn into a call), or nop;nop5.
 *   - Arguments: `[-]N[f]@operand`, operands in AT&T syntax: %reg (every width alias, the
 *     high-byte registers, %rip, %xmm), $imm, disp(%base), disp(%base,%index,scale),
 *     sym(%rip) / sym+off(%rip) / off(%rip), and absolute `sym`. Symbols in operands are
 *     resolved against .symtab/.dynsym when the file has them.
 *   - Several notes may name the same probe (inlined or unrolled copies): each is kept.
 *   - A process: /proc/PID/maps lists its file mappings; each mapped file is opened through
 *     /proc/PID/map_files (works for files deleted on disk and in other mount namespaces),
 *     falling back to /proc/PID/root/PATH, and its load bias is computed from one mapping:
 *     bias = start - (p_vaddr - p_offset + map_offset) for the PT_LOAD that maps it.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "notes.h"

#ifndef EM_X86_64
#define EM_X86_64 62
#endif
#define NT_STAPSDT 3

struct sdt_file_priv {
	Elf *elf;
	int fd;
	void *mem;             /* copy of the image (sdt_file_parse_mem) */
	const unsigned char *img;
	size_t img_size;
	size_t nphdr;
	GElf_Phdr *phdr;
	size_t nshdr;
	GElf_Shdr *shdr;
	bool has_symtab;
};

static void seterr(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void seterr(char *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err, SDT_ERR_LEN, fmt, ap);
	va_end(ap);
}

/* ---------------------------------------------------------------------------------------
 * Registers and the argument grammar
 */

static const char *const reg_names64[SDT_REG_XMM0] = {
	"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11",
	"r12", "r13", "r14", "r15", "rip",
};
static const char *const reg_names32[SDT_REG_XMM0] = {
	"eax", "ebx", "ecx", "edx", "esi", "edi", "ebp", "esp", NULL, NULL, NULL, NULL,
	NULL, NULL, NULL, NULL, "eip",
};

const char *sdt_reg_name(int reg, uint16_t machine)
{
	static const char *const xmm[16] = {
		"xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
		"xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
	};

	if (reg < 0 || reg >= SDT_REG_COUNT)
		return NULL;
	if (reg >= SDT_REG_XMM0)
		return xmm[reg - SDT_REG_XMM0];
	if (machine == EM_386)
		return reg_names32[reg];
	return reg_names64[reg];
}

int sdt_reg_pt_regs_off(int reg)
{
	/* struct pt_regs of x86_64, arch/x86/include/uapi/asm/ptrace.h */
	static const int off[SDT_REG_XMM0] = {
		[SDT_REG_AX] = 80, [SDT_REG_BX] = 40, [SDT_REG_CX] = 88, [SDT_REG_DX] = 96,
		[SDT_REG_SI] = 104, [SDT_REG_DI] = 112, [SDT_REG_BP] = 32, [SDT_REG_SP] = 152,
		[SDT_REG_R8] = 72, [SDT_REG_R9] = 64, [SDT_REG_R10] = 56, [SDT_REG_R11] = 48,
		[SDT_REG_R12] = 24, [SDT_REG_R13] = 16, [SDT_REG_R14] = 8, [SDT_REG_R15] = 0,
		[SDT_REG_IP] = 128,
	};

	if (reg < 0 || reg >= SDT_REG_XMM0)
		return -1;
	return off[reg];
}

const char *sdt_site_name(enum sdt_site site)
{
	switch (site) {
	case SDT_SITE_NOP1: return "nop1";
	case SDT_SITE_NOP5: return "nop5";
	case SDT_SITE_NOP_NOP5: return "nop+nop5";
	case SDT_SITE_OTHER: return "other";
	default: return "unknown";
	}
}

const char *sdt_arg_kind_name(enum sdt_arg_kind kind)
{
	switch (kind) {
	case SDT_ARG_CONST: return "const";
	case SDT_ARG_REG: return "reg";
	case SDT_ARG_MEM: return "mem";
	}
	return "?";
}

struct x86_reg {
	int8_t reg;
	uint8_t width;
	uint8_t shift;
	bool x86_64_only;
};

/* Looks up an x86 register name (without '%'), every width alias. */
static bool x86_reg_lookup(const char *name, size_t len, struct x86_reg *r)
{
	/* legacy registers: 64, 32, 16, low 8, high 8 bit names */
	static const struct {
		const char *n64, *n32, *n16, *n8, *n8h;
		int8_t reg;
	} legacy[] = {
		{ "rax", "eax", "ax", "al", "ah", SDT_REG_AX },
		{ "rbx", "ebx", "bx", "bl", "bh", SDT_REG_BX },
		{ "rcx", "ecx", "cx", "cl", "ch", SDT_REG_CX },
		{ "rdx", "edx", "dx", "dl", "dh", SDT_REG_DX },
		{ "rsi", "esi", "si", "sil", NULL, SDT_REG_SI },
		{ "rdi", "edi", "di", "dil", NULL, SDT_REG_DI },
		{ "rbp", "ebp", "bp", "bpl", NULL, SDT_REG_BP },
		{ "rsp", "esp", "sp", "spl", NULL, SDT_REG_SP },
		{ "rip", "eip", "ip", NULL, NULL, SDT_REG_IP },
	};
	char buf[8];
	size_t i;

	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, name, len);
	buf[len] = 0;
	for (i = 0; i < sizeof(legacy) / sizeof(legacy[0]); i++) {
		const char *n[5] = { legacy[i].n64, legacy[i].n32, legacy[i].n16, legacy[i].n8,
				     legacy[i].n8h };
		static const uint8_t width[5] = { 8, 4, 2, 1, 1 };
		int k;

		for (k = 0; k < 5; k++) {
			if (n[k] && strcmp(buf, n[k]) == 0) {
				r->reg = legacy[i].reg;
				r->width = width[k];
				r->shift = k == 4 ? 8 : 0;
				/* %sil %dil %bpl %spl need a REX prefix: x86_64 only */
				r->x86_64_only = k == 0 || (k == 3 && len == 3);
				return true;
			}
		}
	}
	/* r8..r15 with suffix d (32), w (16), b or l (8) */
	if (buf[0] == 'r' && isdigit((unsigned char)buf[1])) {
		char *end;
		long num = strtol(buf + 1, &end, 10);

		if (num < 8 || num > 15 || (end - buf) > 3 || (buf[1] == '0'))
			return false;
		r->reg = (int8_t)(SDT_REG_R8 + (num - 8));
		r->shift = 0;
		r->x86_64_only = true;
		if (*end == 0)
			r->width = 8;
		else if (strcmp(end, "d") == 0)
			r->width = 4;
		else if (strcmp(end, "w") == 0)
			r->width = 2;
		else if (strcmp(end, "b") == 0 || strcmp(end, "l") == 0)
			r->width = 1;
		else
			return false;
		return true;
	}
	if (strncmp(buf, "xmm", 3) == 0 && isdigit((unsigned char)buf[3])) {
		char *end;
		long num = strtol(buf + 3, &end, 10);

		if (*end || num > 15 || (buf[3] == '0' && buf[4]))
			return false;
		r->reg = (int8_t)(SDT_REG_XMM0 + num);
		r->width = 16;
		r->shift = 0;
		r->x86_64_only = num >= 8;
		return true;
	}
	return false;
}

struct argp {
	const char *p;
	const char *tok;      /* start of the current argument, for messages */
	size_t toklen;
	int argno;
	uint16_t machine;
	char *err;
};

static int arg_fail(struct argp *a, const char *what)
{
	seterr(a->err, "argument #%d '%.*s': %s", a->argno, (int)(a->toklen > 64 ? 64 : a->toklen),
	       a->tok, what);
	return -EINVAL;
}

/* [-]number in GAS syntax: decimal, 0x hex, 0b binary, leading-0 octal; wraps like GAS. */
static int parse_num(struct argp *a, int64_t *v)
{
	const char *p = a->p;
	bool neg = false;
	unsigned long long mag;
	char *end;
	int base = 10;

	if (*p == '-') {
		neg = true;
		p++;
	}
	if (!isdigit((unsigned char)*p))
		return arg_fail(a, "number expected");
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
		if (!isxdigit((unsigned char)*p))
			return arg_fail(a, "bad hexadecimal number");
	} else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B')) {
		base = 2;
		p += 2;
		if (*p != '0' && *p != '1')
			return arg_fail(a, "bad binary number");
	} else if (p[0] == '0' && isdigit((unsigned char)p[1])) {
		base = 8;
	}
	errno = 0;
	mag = strtoull(p, &end, base);
	if (errno == ERANGE)
		return arg_fail(a, "number out of range");
	if (isalnum((unsigned char)*end) || *end == '_')
		return arg_fail(a, "bad number");
	*v = neg ? (int64_t)(0 - (uint64_t)mag) : (int64_t)(uint64_t)mag;
	a->p = end;
	return 0;
}

static bool sym_start(char c)
{
	return isalpha((unsigned char)c) || c == '_' || c == '.';
}

static bool sym_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '$' || c == '@';
}

/* disp := term (('+'|'-') term)*, term := number | symbol, at most one symbol, which is
 * added (GAS also writes "4+g_arr@GOTOFF"). Empty is fine: "(%rax)". */
static int parse_disp(struct argp *a, struct sdt_arg *arg)
{
	bool neg = false, first = true;
	int err;

	for (;;) {
		const char *s = a->p;

		if (!first) {
			if (*a->p != '+' && *a->p != '-')
				return 0;
			neg = *a->p == '-';
			s = ++a->p;
		}
		if (sym_start(*s)) {
			if (neg || arg->sym)
				return arg_fail(a, "bad symbolic displacement");
			while (sym_char(*a->p))
				a->p++;
			arg->sym = strndup(s, (size_t)(a->p - s));
			if (!arg->sym)
				return -ENOMEM;
		} else if (isdigit((unsigned char)*s) || (first && *s == '-')) {
			int64_t v;

			err = parse_num(a, &v);
			if (err)
				return err;
			arg->disp = (int64_t)((uint64_t)arg->disp + (neg ? 0 - (uint64_t)v : (uint64_t)v));
		} else if (first) {
			return 0;
		} else {
			return arg_fail(a, "bad displacement");
		}
		first = false;
	}
}

static int parse_reg(struct argp *a, struct x86_reg *r)
{
	const char *s;

	if (*a->p != '%')
		return arg_fail(a, "register expected");
	s = ++a->p;
	while (isalnum((unsigned char)*a->p))
		a->p++;
	if (!x86_reg_lookup(s, (size_t)(a->p - s), r))
		return arg_fail(a, "unknown register");
	if (r->x86_64_only && a->machine == EM_386)
		return arg_fail(a, "x86_64 register in an i386 file");
	if (*a->p == ':')
		return arg_fail(a, "segment registers are not supported");
	return 0;
}

static int parse_x86_operand(struct argp *a, struct sdt_arg *arg)
{
	const char *op = a->p;
	struct x86_reg r;
	int err;

	arg->reg = SDT_REG_NONE;
	arg->index = SDT_REG_NONE;
	arg->scale = 1;
	if (*a->p == '%') {
		err = parse_reg(a, &r);
		if (err)
			return err;
		if (r.reg == SDT_REG_IP)
			return arg_fail(a, "%rip is not a value");
		arg->kind = SDT_ARG_REG;
		arg->reg = r.reg;
		arg->reg_width = r.width;
		arg->reg_shift = r.shift;
		return 0;
	}
	if (*a->p == '$') {
		a->p++;
		arg->kind = SDT_ARG_CONST;
		if (!sym_start(*a->p) && *a->p != '-' && !isdigit((unsigned char)*a->p))
			return arg_fail(a, "constant expected after '$'");
		return parse_disp(a, arg);
	}
	arg->kind = SDT_ARG_MEM;
	err = parse_disp(a, arg);
	if (err)
		return err;
	if (*a->p != '(') {
		if (a->p == op)
			return arg_fail(a, "operand expected");
		return 0;  /* absolute memory: sym[+off] or number */
	}
	a->p++;
	if (*a->p == '%') {
		err = parse_reg(a, &r);
		if (err)
			return err;
		if (r.width < 4 || r.reg >= SDT_REG_XMM0)
			return arg_fail(a, "bad base register");
		arg->reg = r.reg;
		arg->reg_width = r.width;
	}
	if (*a->p == ',') {
		a->p++;
		if (*a->p == '%') {
			err = parse_reg(a, &r);
			if (err)
				return err;
			if (r.width < 4 || r.reg == SDT_REG_SP || r.reg == SDT_REG_IP ||
			    r.reg >= SDT_REG_XMM0)
				return arg_fail(a, "bad index register");
			if (arg->reg == SDT_REG_IP)
				return arg_fail(a, "%rip-relative operand with an index");
			arg->index = r.reg;
			arg->index_width = r.width;
		}
		if (*a->p == ',') {
			int64_t sc;

			a->p++;
			if (arg->index == SDT_REG_NONE) /* as(1) refuses it too */
				return arg_fail(a, "scale without an index register");
			err = parse_num(a, &sc);
			if (err)
				return err;
			if (sc != 1 && sc != 2 && sc != 4 && sc != 8)
				return arg_fail(a, "scale must be 1, 2, 4 or 8");
			arg->scale = (uint8_t)sc;
		}
	}
	if (*a->p != ')')
		return arg_fail(a, "')' expected");
	a->p++;
	if (arg->reg == SDT_REG_NONE && arg->index == SDT_REG_NONE)
		return arg_fail(a, "memory operand without a register");
	return 0;
}

void sdt_args_release(struct sdt_arg *args, int nargs)
{
	int i;

	for (i = 0; i < nargs; i++) {
		free(args[i].sym);
		args[i].sym = NULL;
	}
}

int sdt_parse_args(const char *s, uint16_t machine, int elf_class,
		    struct sdt_arg args[SDT_MAX_ARGS], char err[SDT_ERR_LEN])
{
	struct argp a = { .p = s, .machine = machine, .err = err };
	int n = 0, ret;

	(void)elf_class;
	memset(args, 0, sizeof(*args) * SDT_MAX_ARGS);
	if (machine != EM_X86_64 && machine != EM_386) {
		seterr(err, "arguments of ELF machine %u are not decoded", machine);
		return -EOPNOTSUPP;
	}
	for (;;) {
		struct sdt_arg *arg;
		const char *q;

		while (*a.p == ' ' || *a.p == '\t')
			a.p++;
		if (!*a.p)
			break;
		a.tok = a.p;
		a.toklen = strcspn(a.p, " \t");
		a.argno = n + 1;
		if (n == SDT_MAX_ARGS) {
			int more = 0;

			for (q = a.p; *q;) {
				more++;
				q += strcspn(q, " \t");
				q += strspn(q, " \t");
			}
			seterr(err, "%d arguments, more than the SDT maximum of %d", n + more,
			       SDT_MAX_ARGS);
			ret = -E2BIG;
			goto fail;
		}
		arg = &args[n];
		/* size prefix: [-]N[f]@ */
		q = a.p;
		if (*q == '-')
			q++;
		if (isdigit((unsigned char)*q)) {
			const char *d = q;

			while (isdigit((unsigned char)*q))
				q++;
			if (*q == 'f')
				q++;
			if (*q == '@') {
				long sz = (q - d) <= 3 ? strtol(d, NULL, 10) : 0;

				if (sz != 1 && sz != 2 && sz != 4 && sz != 8 && sz != 16) {
					ret = arg_fail(&a, "size must be 1, 2, 4, 8 (or 16)");
					goto fail;
				}
				arg->size = (uint8_t)sz;
				arg->is_signed = *a.p == '-';
				arg->is_float = q[-1] == 'f';
				a.p = q + 1;
			}
		}
		ret = parse_x86_operand(&a, arg);
		n++;   /* so that a sym allocated by this argument is released on failure */
		if (ret)
			goto fail;
		if (*a.p && *a.p != ' ' && *a.p != '\t') {
			ret = arg_fail(&a, "junk after the operand");
			goto fail;
		}
	}
	return n;
fail:
	sdt_args_release(args, n);
	memset(args, 0, sizeof(*args) * SDT_MAX_ARGS);
	return ret == -ENOMEM ? -ENOMEM : ret;
}

/* ---------------------------------------------------------------------------------------
 * ELF
 */

static uint32_t rd32(const struct sdt_file *f, const unsigned char *p)
{
	if (f->big_endian)
		return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static uint64_t rd64(const struct sdt_file *f, const unsigned char *p)
{
	uint64_t hi = rd32(f, p), lo = rd32(f, p + 4);

	return f->big_endian ? hi << 32 | lo : lo << 32 | hi;
}

static uint64_t rdaddr(const struct sdt_file *f, const unsigned char *p)
{
	return f->elf_class == 64 ? rd64(f, p) : rd32(f, p);
}

static uint64_t addr_mask(const struct sdt_file *f, uint64_t v)
{
	return f->elf_class == 64 ? v : (v & 0xffffffffu);
}

size_t sdt_file_read(struct sdt_file *f, uint64_t off, void *buf, size_t len)
{
	if (!f || !f->priv || off >= f->priv->img_size)
		return 0;
	if (len > f->priv->img_size - off)
		len = (size_t)(f->priv->img_size - off);
	memcpy(buf, f->priv->img + off, len);
	return len;
}

bool sdt_file_has_symtab(struct sdt_file *f)
{
	return f && f->priv && f->priv->has_symtab;
}

/* The bytes of a section, NULL when it does not lie inside the file. */
static const unsigned char *sec_bytes(struct sdt_file *f, const GElf_Shdr *sh)
{
	struct sdt_file_priv *p = f->priv;

	if (sh->sh_type == SHT_NOBITS || sh->sh_offset > p->img_size ||
	    sh->sh_size > p->img_size - sh->sh_offset)
		return NULL;
	return p->img + sh->sh_offset;
}

int sdt_file_for_each_symbol(struct sdt_file *f, sdt_sym_cb cb, void *ctx)
{
	struct sdt_file_priv *p;
	size_t i;

	if (!f || !f->priv)
		return 0;
	p = f->priv;
	for (i = 0; i < p->nshdr; i++) {
		const GElf_Shdr *sh = &p->shdr[i], *strsh;
		const unsigned char *syms, *strs;
		size_t ent = f->elf_class == 64 ? 24 : 16, n, k;

		if (sh->sh_type != SHT_SYMTAB && sh->sh_type != SHT_DYNSYM)
			continue;
		if (sh->sh_link == 0 || sh->sh_link >= p->nshdr)
			continue;
		strsh = &p->shdr[sh->sh_link];
		syms = sec_bytes(f, sh);
		strs = sec_bytes(f, strsh);
		if (!syms || !strs || strsh->sh_size == 0)
			continue;
		n = (size_t)(sh->sh_size / ent);
		for (k = 1; k < n; k++) {
			const unsigned char *s = syms + k * ent;
			uint32_t name = rd32(f, s);
			uint64_t value, size;
			int type, ret;
			const char *nm;

			if (f->elf_class == 64) {
				type = s[4] & 0xf;
				value = rd64(f, s + 8);
				size = rd64(f, s + 16);
			} else {
				value = rd32(f, s + 4);
				size = rd32(f, s + 8);
				type = s[12] & 0xf;
			}
			if (name == 0 || name >= strsh->sh_size)
				continue;
			nm = (const char *)strs + name;
			if (!memchr(nm, 0, (size_t)(strsh->sh_size - name)))
				continue;
			ret = cb(nm, value, size, type, ctx);
			if (ret)
				return ret;
		}
	}
	return 0;
}

static const GElf_Phdr *find_load(struct sdt_file *f, uint64_t addr, bool exec, bool in_file)
{
	size_t i;

	for (i = 0; i < f->priv->nphdr; i++) {
		const GElf_Phdr *ph = &f->priv->phdr[i];
		uint64_t span = in_file ? ph->p_filesz : ph->p_memsz;

		if (ph->p_type != PT_LOAD || addr < ph->p_vaddr || addr - ph->p_vaddr >= span)
			continue;
		if (exec && !(ph->p_flags & PF_X))
			continue;
		if (!exec && (!(ph->p_flags & PF_W) || (ph->p_flags & PF_X)))
			continue;
		return ph;
	}
	return NULL;
}

static enum sdt_site classify_site(struct sdt_file *f, uint64_t off)
{
	static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	unsigned char b[6];
	size_t n;

	if (f->e_machine != EM_X86_64 && f->e_machine != EM_386)
		return SDT_SITE_UNKNOWN;
	n = sdt_file_read(f, off, b, sizeof(b));
	if (n == 0)
		return SDT_SITE_UNKNOWN;
	if (n >= 6 && b[0] == 0x90 && memcmp(b + 1, nop5, 5) == 0)
		return SDT_SITE_NOP_NOP5;
	if (n >= 5 && memcmp(b, nop5, 5) == 0)
		return SDT_SITE_NOP5;
	if (b[0] == 0x90)
		return SDT_SITE_NOP1;
	return SDT_SITE_OTHER;
}

static int note_fail(struct sdt_note *n, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int note_fail(struct sdt_note *n, int err, const char *fmt, ...)
{
	char buf[SDT_ERR_LEN];
	va_list ap;

	if (n->err)
		return 0;  /* keep the first problem */
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	n->err = err;
	n->errmsg = strdup(buf);
	return n->errmsg ? 0 : -ENOMEM;
}

struct sym_lookup {
	struct sdt_file *f;
	size_t pending;
};

static int resolve_cb(const char *name, uint64_t value, uint64_t size, int type, void *ctx)
{
	struct sym_lookup *l = ctx;
	size_t i;
	int k;

	(void)size;
	(void)type;
	for (i = 0; i < l->f->nnotes; i++) {
		struct sdt_note *n = &l->f->notes[i];

		for (k = 0; k < n->nargs; k++) {
			struct sdt_arg *a = &n->args_v[k];

			size_t len = a->sym ? strcspn(a->sym, "@") : 0;  /* g_int@GOTOFF → g_int */

			if (a->sym && !a->sym_resolved && strncmp(a->sym, name, len) == 0 &&
			    name[len] == 0) {
				a->sym_resolved = true;
				a->sym_addr = value;
				if (--l->pending == 0)
					return 1;
			}
		}
	}
	return 0;
}

static int finish_note(struct sdt_file *f, struct sdt_note *n)
{
	const GElf_Phdr *ph;
	uint64_t delta = 0;
	char err[SDT_ERR_LEN];
	int ret = 0;

	if (f->has_base_sec && n->base)
		delta = f->base_sec_addr - n->base;
	n->addr = addr_mask(f, n->pc + delta);
	n->sema_addr = n->sema ? addr_mask(f, n->sema + delta) : 0;

	ph = find_load(f, n->addr, true, true);
	if (ph) {
		n->file_off = n->addr - ph->p_vaddr + ph->p_offset;
		n->site = classify_site(f, n->file_off);
	} else {
		ret = note_fail(n, -ENOEXEC, "%s:%s: site 0x%llx is not in an executable segment",
				n->provider, n->name, (unsigned long long)n->addr);
	}
	if (n->sema_addr) {
		ph = find_load(f, n->sema_addr, false, false);
		if (ph)
			n->sema_off = n->sema_addr - ph->p_vaddr + ph->p_offset;
		else if (!ret)
			ret = note_fail(n, -EFAULT,
					"%s:%s: semaphore 0x%llx is not in a writable data segment",
					n->provider, n->name, (unsigned long long)n->sema_addr);
	}
	if (ret)
		return ret;
	n->nargs = sdt_parse_args(n->args, f->e_machine, f->elf_class, n->args_v, err);
	if (n->nargs == -ENOMEM)
		return -ENOMEM;
	if (n->nargs < 0) {
		int e = n->nargs;

		n->nargs = 0;
		return note_fail(n, e, "%s:%s: %s", n->provider, n->name, err);
	}
	return 0;
}

static const char *cstr(const unsigned char *p, const unsigned char *end)
{
	return memchr(p, 0, (size_t)(end - p)) ? (const char *)p : NULL;
}

static int parse_note_section(struct sdt_file *f, const GElf_Shdr *sh, size_t scn_idx,
			      char *err)
{
	const unsigned char *d = sec_bytes(f, sh);
	uint64_t size = sh->sh_size, off = 0, align = sh->sh_addralign == 8 ? 8 : 4;
	size_t addrsz = f->elf_class == 64 ? 8 : 4, cap = f->nnotes;
	int idx = 0;

	if (!d) {
		seterr(err, "%s: section [%zu] .note.stapsdt lies outside the file (truncated?)",
		       f->path, scn_idx);
		return -EBADMSG;
	}
	while (off < size) {
		uint64_t namesz, descsz, type, pad;
		const unsigned char *name, *desc, *dend, *s;
		struct sdt_note *n;
		const char *prov, *pname, *args;

		idx++;
		if (size - off < 12) {
			seterr(err, "%s: .note.stapsdt: note #%d: %llu bytes left, a note header needs 12",
			       f->path, idx, (unsigned long long)(size - off));
			return -EBADMSG;
		}
		namesz = rd32(f, d + off);
		descsz = rd32(f, d + off + 4);
		type = rd32(f, d + off + 8);
		off += 12;
		pad = (namesz + align - 1) & ~(align - 1);
		if (pad > size - off) {
			seterr(err, "%s: .note.stapsdt: note #%d: name size %llu overruns the section (%llu bytes left)",
			       f->path, idx, (unsigned long long)namesz,
			       (unsigned long long)(size - off));
			return -EBADMSG;
		}
		name = d + off;
		off += pad;
		if (descsz > size - off) {
			seterr(err, "%s: .note.stapsdt: note #%d: descriptor size %llu overruns the section (%llu bytes left)",
			       f->path, idx, (unsigned long long)descsz,
			       (unsigned long long)(size - off));
			return -EBADMSG;
		}
		desc = d + off;
		pad = (descsz + align - 1) & ~(align - 1);
		off += pad > size - off ? size - off : pad;  /* last padding may be cut */
		if (namesz != 8 || memcmp(name, "stapsdt", 8) != 0 || type != NT_STAPSDT)
			continue;  /* not an SDT note: readelf shows it, tracers skip it */

		dend = desc + descsz;
		if (descsz < 3 * addrsz) {
			seterr(err, "%s: .note.stapsdt: note #%d: descriptor of %llu bytes is too small for 3 addresses",
			       f->path, idx, (unsigned long long)descsz);
			return -EBADMSG;
		}
		s = desc + 3 * addrsz;
		prov = s < dend ? cstr(s, dend) : NULL;
		if (!prov) {
			seterr(err, "%s: .note.stapsdt: note #%d: provider string is not NUL-terminated",
			       f->path, idx);
			return -EBADMSG;
		}
		s += strlen(prov) + 1;
		pname = s < dend ? cstr(s, dend) : NULL;
		if (!pname) {
			seterr(err, "%s: .note.stapsdt: note #%d (%s): probe name is not NUL-terminated",
			       f->path, idx, prov);
			return -EBADMSG;
		}
		s += strlen(pname) + 1;
		args = s < dend ? cstr(s, dend) : NULL;
		if (!args) {
			seterr(err, "%s: .note.stapsdt: note #%d (%s:%s): argument string is missing or not NUL-terminated",
			       f->path, idx, prov, pname);
			return -EBADMSG;
		}
		if (f->nnotes == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct sdt_note *nn = realloc(f->notes, ncap * sizeof(*nn));

			if (!nn)
				goto nomem;
			f->notes = nn;
			cap = ncap;
		}
		n = &f->notes[f->nnotes];
		memset(n, 0, sizeof(*n));
		n->pc = rdaddr(f, desc);
		n->base = rdaddr(f, desc + addrsz);
		n->sema = rdaddr(f, desc + 2 * addrsz);
		n->provider = strdup(prov);
		n->name = strdup(pname);
		n->args = strdup(args);
		f->nnotes++;
		if (!n->provider || !n->name || !n->args)
			goto nomem;
	}
	return 0;
nomem:
	seterr(err, "%s: out of memory", f->path);
	return -ENOMEM;
}

static int parse_elf(struct sdt_file *f, char *err)
{
	struct sdt_file_priv *p = f->priv;
	const char *ident;
	GElf_Ehdr eh;
	size_t shstrndx, i, n;
	uint64_t pend;
	int ret;

	if (!p->elf || elf_kind(p->elf) != ELF_K_ELF) {
		seterr(err, "%s: not an ELF file", f->path);
		return -ENOEXEC;
	}
	p->img = (const unsigned char *)elf_rawfile(p->elf, &p->img_size);
	ident = elf_getident(p->elf, NULL);
	if (!p->img || !ident) {
		seterr(err, "%s: cannot read the ELF image: %s", f->path, elf_errmsg(-1));
		return -EBADMSG;
	}
	if (ident[EI_CLASS] != ELFCLASS32 && ident[EI_CLASS] != ELFCLASS64) {
		seterr(err, "%s: bad ELF class %d", f->path, ident[EI_CLASS]);
		return -EBADMSG;
	}
	if (ident[EI_DATA] != ELFDATA2LSB && ident[EI_DATA] != ELFDATA2MSB) {
		seterr(err, "%s: bad ELF data encoding %d", f->path, ident[EI_DATA]);
		return -EBADMSG;
	}
	f->elf_class = ident[EI_CLASS] == ELFCLASS64 ? 64 : 32;
	f->big_endian = ident[EI_DATA] == ELFDATA2MSB;
	if (!gelf_getehdr(p->elf, &eh)) {
		seterr(err, "%s: truncated or malformed ELF header: %s", f->path, elf_errmsg(-1));
		return -EBADMSG;
	}
	f->e_machine = eh.e_machine;
	f->e_type = eh.e_type;
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		seterr(err, "%s: not an executable or shared object (ELF type %u)", f->path,
		       eh.e_type);
		return -ENOEXEC;
	}

	/* libelf quietly finds no sections when the table is cut off: a truncated file */
	if (eh.e_shoff && (eh.e_shoff > p->img_size ||
			   (uint64_t)(eh.e_shnum ? eh.e_shnum : 1) * eh.e_shentsize >
				   p->img_size - eh.e_shoff)) {
		seterr(err, "%s: section headers lie outside the file (truncated?)", f->path);
		return -EBADMSG;
	}
	if (eh.e_phoff > p->img_size ||
	    (uint64_t)eh.e_phnum * eh.e_phentsize > p->img_size - eh.e_phoff) {
		seterr(err, "%s: program headers lie outside the file (truncated?)", f->path);
		return -EBADMSG;
	}
	if (elf_getphdrnum(p->elf, &n)) {
		seterr(err, "%s: malformed program headers: %s", f->path, elf_errmsg(-1));
		return -EBADMSG;
	}
	pend = eh.e_phoff + (uint64_t)n * eh.e_phentsize;
	if (n && (eh.e_phoff > p->img_size || pend > p->img_size || pend < eh.e_phoff)) {
		seterr(err, "%s: program headers lie outside the file (truncated?)", f->path);
		return -EBADMSG;
	}
	p->phdr = n ? calloc(n, sizeof(*p->phdr)) : NULL;
	if (n && !p->phdr)
		goto nomem;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(p->elf, (int)i, &p->phdr[i])) {
			seterr(err, "%s: malformed program header %zu: %s", f->path, i,
			       elf_errmsg(-1));
			return -EBADMSG;
		}
	}
	p->nphdr = n;

	if (elf_getshdrnum(p->elf, &n) || elf_getshdrstrndx(p->elf, &shstrndx)) {
		seterr(err, "%s: malformed section headers: %s", f->path, elf_errmsg(-1));
		return -EBADMSG;
	}
	p->shdr = n ? calloc(n, sizeof(*p->shdr)) : NULL;
	if (n && !p->shdr)
		goto nomem;
	for (i = 0; i < n; i++) {
		Elf_Scn *scn = elf_getscn(p->elf, i);

		if (!scn || !gelf_getshdr(scn, &p->shdr[i])) {
			seterr(err, "%s: malformed section header %zu: %s", f->path, i,
			       elf_errmsg(-1));
			return -EBADMSG;
		}
	}
	p->nshdr = n;
	for (i = 1; i < n; i++) {
		const GElf_Shdr *sh = &p->shdr[i];
		const char *name;

		if (sh->sh_type != SHT_NOBITS && !sec_bytes(f, sh)) {
			seterr(err, "%s: section [%zu] lies outside the file (truncated?)", f->path, i);
			return -EBADMSG;
		}
		if (sh->sh_type == SHT_SYMTAB)
			p->has_symtab = true;
		name = elf_strptr(p->elf, shstrndx, sh->sh_name);
		if (!name)
			continue;
		if (strcmp(name, ".stapsdt.base") == 0) {
			f->has_base_sec = true;
			f->base_sec_addr = sh->sh_addr;
		}
	}
	for (i = 1; i < n; i++) {
		const GElf_Shdr *sh = &p->shdr[i];
		const char *name = elf_strptr(p->elf, shstrndx, sh->sh_name);

		if (!name || sh->sh_type != SHT_NOTE || strcmp(name, ".note.stapsdt") != 0)
			continue;
		ret = parse_note_section(f, sh, i, err);
		if (ret)
			return ret;
	}

	{
		struct sym_lookup l = { .f = f };
		int k;

		for (i = 0; i < f->nnotes; i++) {
			ret = finish_note(f, &f->notes[i]);
			if (ret)
				goto nomem;
			for (k = 0; k < f->notes[i].nargs; k++)
				l.pending += f->notes[i].args_v[k].sym != NULL;
		}
		if (l.pending)
			sdt_file_for_each_symbol(f, resolve_cb, &l);
	}
	return 0;
nomem:
	seterr(err, "%s: out of memory", f->path);
	return -ENOMEM;
}

static bool libelf_ready(void)
{
	static int state;  /* 0 unknown, 1 ok, -1 failed */

	if (!state)
		state = elf_version(EV_CURRENT) == EV_NONE ? -1 : 1;
	return state > 0;
}

static struct sdt_file *file_new(const char *path)
{
	struct sdt_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->priv = calloc(1, sizeof(*f->priv));
	f->path = strdup(path ? path : "(memory)");
	f->open_path = strdup(path ? path : "(memory)");
	if (!f->priv || !f->path || !f->open_path) {
		sdt_file_free(f);
		return NULL;
	}
	f->priv->fd = -1;
	return f;
}

void sdt_file_free(struct sdt_file *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->nnotes; i++) {
		struct sdt_note *n = &f->notes[i];

		free(n->provider);
		free(n->name);
		free(n->args);
		free(n->errmsg);
		sdt_args_release(n->args_v, n->nargs);
	}
	free(f->notes);
	if (f->priv) {
		if (f->priv->elf)
			elf_end(f->priv->elf);
		if (f->priv->fd >= 0)
			close(f->priv->fd);
		free(f->priv->mem);
		free(f->priv->phdr);
		free(f->priv->shdr);
		free(f->priv);
	}
	free(f->path);
	free(f->open_path);
	free(f);
}

int sdt_file_open(const char *path, struct sdt_file **out, char err[SDT_ERR_LEN])
{
	struct sdt_file *f;
	struct stat st;
	int ret;

	*out = NULL;
	if (!libelf_ready()) {
		seterr(err, "libelf: %s", elf_errmsg(-1));
		return -EINVAL;
	}
	f = file_new(path);
	if (!f) {
		seterr(err, "%s: out of memory", path);
		return -ENOMEM;
	}
	/* O_NONBLOCK: a FIFO must not hang the open; it is rejected below */
	f->priv->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (f->priv->fd < 0) {
		ret = -errno;
		seterr(err, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (fstat(f->priv->fd, &st)) {
		ret = -errno;
		seterr(err, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		ret = -EISDIR;
		seterr(err, "%s: is a directory", path);
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EISDIR;
		seterr(err, "%s: not a regular file", path);
		goto fail;
	}
	if (st.st_size == 0) {
		ret = -ENODATA;
		seterr(err, "%s: empty file", path);
		goto fail;
	}
	f->priv->elf = elf_begin(f->priv->fd, ELF_C_READ_MMAP, NULL);
	if (!f->priv->elf) {
		ret = -EBADMSG;
		seterr(err, "%s: cannot read: %s", path, elf_errmsg(-1));
		goto fail;
	}
	ret = parse_elf(f, err);
	if (ret)
		goto fail;
	*out = f;
	return 0;
fail:
	sdt_file_free(f);
	return ret;
}

int sdt_file_parse_mem(const void *buf, size_t len, const char *name, struct sdt_file **out,
			char err[SDT_ERR_LEN])
{
	struct sdt_file *f;
	int ret;

	*out = NULL;
	if (!libelf_ready()) {
		seterr(err, "libelf: %s", elf_errmsg(-1));
		return -EINVAL;
	}
	f = file_new(name);
	if (!f) {
		seterr(err, "%s: out of memory", name ? name : "(memory)");
		return -ENOMEM;
	}
	if (len == 0) {
		seterr(err, "%s: empty file", f->path);
		sdt_file_free(f);
		return -ENODATA;
	}
	f->priv->mem = malloc(len);
	if (!f->priv->mem) {
		seterr(err, "%s: out of memory", f->path);
		sdt_file_free(f);
		return -ENOMEM;
	}
	memcpy(f->priv->mem, buf, len);
	f->priv->elf = elf_memory(f->priv->mem, len);
	ret = parse_elf(f, err);
	if (ret) {
		sdt_file_free(f);
		return ret;
	}
	*out = f;
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Processes
 */

struct map {
	uint64_t start, end, off, ino;
	unsigned int maj, min;
	char *path;
	bool deleted;
};

static void maps_free(struct map *m, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(m[i].path);
	free(m);
}

static bool proc_alive(pid_t pid)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	return access(p, F_OK) == 0;
}

static int read_maps(pid_t pid, struct map **out, size_t *nout, char *err)
{
	char path[64], *line = NULL;
	size_t cap = 0, n = 0, lcap = 0;
	struct map *m = NULL;
	FILE *fp;
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fp = fopen(path, "re");
	if (!fp) {
		int e = errno;

		if (e == ENOENT) {
			seterr(err, "process %d does not exist", (int)pid);
			return -ESRCH;
		}
		seterr(err, "%s: %s", path, strerror(e));
		return -e;
	}
	while ((len = getline(&line, &lcap, fp)) > 0) {
		unsigned long long start, end, off, ino;
		unsigned int maj, min;
		char perms[8];
		int pos = 0;
		char *pth;

		if (line[len - 1] == '\n')
			line[--len] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj,
			   &min, &ino, &pos) < 7 || pos == 0)
			continue;
		pth = line + pos;
		if (ino == 0 || pth[0] != '/')
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct map *nm = realloc(m, ncap * sizeof(*nm));

			if (!nm)
				goto nomem;
			m = nm;
			cap = ncap;
		}
		memset(&m[n], 0, sizeof(m[n]));
		m[n].start = start;
		m[n].end = end;
		m[n].off = off;
		m[n].ino = ino;
		m[n].maj = maj;
		m[n].min = min;
		len = (ssize_t)strlen(pth);
		if (len > 10 && strcmp(pth + len - 10, " (deleted)") == 0) {
			m[n].deleted = true;
			pth[len - 10] = 0;
		}
		m[n].path = strdup(pth);
		if (!m[n].path)
			goto nomem;
		n++;
	}
	if (ferror(fp)) {
		int e = errno;

		fclose(fp);
		free(line);
		maps_free(m, n);
		if (!proc_alive(pid) || e == ESRCH) {
			seterr(err, "process %d exited while its maps were read", (int)pid);
			return -ESRCH;
		}
		seterr(err, "%s: %s", path, strerror(e));
		return -e;
	}
	fclose(fp);
	free(line);
	*out = m;
	*nout = n;
	return 0;
nomem:
	fclose(fp);
	free(line);
	maps_free(m, n);
	seterr(err, "process %d: out of memory", (int)pid);
	return -ENOMEM;
}

static int compute_bias(struct sdt_file *f, const struct map *m, uint64_t *bias)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	size_t i;

	for (i = 0; i < f->priv->nphdr; i++) {
		const GElf_Phdr *ph = &f->priv->phdr[i];
		uint64_t off_pg = ph->p_offset & ~(pg - 1);

		if (ph->p_type != PT_LOAD)
			continue;
		if (m->off < off_pg || m->off >= ph->p_offset + (ph->p_filesz ? ph->p_filesz : 1))
			continue;
		*bias = m->start - (ph->p_vaddr - ph->p_offset + m->off);
		return 0;
	}
	return -ENOENT;
}

static bool is_elf_file(int fd)
{
	unsigned char mag[SELFMAG];

	return pread(fd, mag, SELFMAG, 0) == SELFMAG && memcmp(mag, ELFMAG, SELFMAG) == 0;
}

void sdt_files_free(struct sdt_file **files, size_t nfiles)
{
	size_t i;

	for (i = 0; i < nfiles; i++)
		sdt_file_free(files[i]);
	free(files);
}

int sdt_proc_files(pid_t pid, struct sdt_file ***files, size_t *nfiles, char err[SDT_ERR_LEN])
{
	struct sdt_file **out = NULL;
	struct map *m = NULL;
	size_t nm = 0, n = 0, i, j, denied = 0;
	struct stat exe_st;
	bool have_exe;
	const char *delay;
	char p[PATH_MAX + 64];
	int ret;

	*files = NULL;
	*nfiles = 0;
	if (pid <= 0) {
		seterr(err, "bad PID %d", (int)pid);
		return -EINVAL;
	}
	ret = read_maps(pid, &m, &nm, err);
	if (ret)
		return ret;
	if (nm == 0) {
		maps_free(m, nm);
		if (!proc_alive(pid)) {
			seterr(err, "process %d exited during the walk", (int)pid);
			return -ESRCH;
		}
		seterr(err, "process %d maps no files (a zombie or a kernel thread?)", (int)pid);
		return -ESRCH;
	}
	delay = getenv("TET_TEST_MAPS_DELAY_MS");
	if (delay && *delay) {
		long ms = strtol(delay, NULL, 10);
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		if (ms > 0)
			nanosleep(&ts, NULL);
	}
	snprintf(p, sizeof(p), "/proc/%d/exe", (int)pid);
	have_exe = stat(p, &exe_st) == 0;

	out = calloc(nm, sizeof(*out));
	if (!out)
		goto nomem;
	for (i = 0; i < nm; i++) {
		struct sdt_file *f = NULL;
		char ferr[SDT_ERR_LEN];
		bool seen = false;
		int fd = -1;

		for (j = 0; j < i && !seen; j++)
			seen = m[j].ino == m[i].ino && m[j].maj == m[i].maj && m[j].min == m[i].min;
		if (seen)
			continue;
		/* map_files: the mapped file itself, even when deleted or in another mount ns */
		snprintf(p, sizeof(p), "/proc/%d/map_files/%llx-%llx", (int)pid,
			 (unsigned long long)m[i].start, (unsigned long long)m[i].end);
		fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0 && errno == ENOENT && !proc_alive(pid)) {
			seterr(err, "process %d exited during the walk (at %s)", (int)pid, m[i].path);
			ret = -ESRCH;
			goto fail;
		}
		if (fd < 0 && !m[i].deleted) {
			struct stat st;

			snprintf(p, sizeof(p), "/proc/%d/root%s", (int)pid, m[i].path);
			fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
			if (fd >= 0 && (fstat(fd, &st) || st.st_ino != m[i].ino)) {
				close(fd);
				fd = -1;
			}
		}
		if (fd < 0) {
			if (!proc_alive(pid)) {
				seterr(err, "process %d exited during the walk (at %s)", (int)pid,
				       m[i].path);
				ret = -ESRCH;
				goto fail;
			}
			if (errno == EACCES || errno == EPERM)
				denied++;
			continue;  /* cannot open it: not something we can trace either */
		}
		if (!is_elf_file(fd)) {
			close(fd);
			continue;  /* data mapping (locale archive, fonts, …) */
		}
		close(fd);
		ret = sdt_file_open(p, &f, ferr);
		if (ret) {
			if (!proc_alive(pid)) {
				seterr(err, "process %d exited during the walk (at %s)", (int)pid,
				       m[i].path);
				ret = -ESRCH;
			} else {
				seterr(err, "process %d: %s: %s", (int)pid, m[i].path,
				       ferr + (strncmp(ferr, p, strlen(p)) == 0 ? strlen(p) + 2 : 0));
			}
			goto fail;
		}
		free(f->path);
		f->path = strdup(m[i].path);
		if (!f->path) {
			sdt_file_free(f);
			goto nomem;
		}
		f->mapped = true;
		f->deleted = m[i].deleted;
		f->is_main = have_exe && exe_st.st_ino == m[i].ino &&
			     major(exe_st.st_dev) == m[i].maj && minor(exe_st.st_dev) == m[i].min;
		if (compute_bias(f, &m[i], &f->load_bias)) {
			/* the first mapping of a file always maps a PT_LOAD; try the others */
			for (j = i + 1; j < nm; j++)
				if (m[j].ino == m[i].ino && !compute_bias(f, &m[j], &f->load_bias))
					break;
		}
		out[n++] = f;
	}
	if (!n && denied) { /* say why, rather than "no probes" */
		seterr(err, "PID %d: permission denied opening its executable and libraries (another user's process: tracing it needs root or CAP_SYS_PTRACE)",
		       (int)pid);
		ret = -EACCES;
		goto fail;
	}
	maps_free(m, nm);
	*files = out;
	*nfiles = n;
	return 0;
nomem:
	seterr(err, "process %d: out of memory", (int)pid);
	ret = -ENOMEM;
fail:
	maps_free(m, nm);
	sdt_files_free(out, n);
	return ret;
}

int sdt_target_files(pid_t pid, const char *path, struct sdt_file ***files, size_t *nfiles,
		      char err[SDT_ERR_LEN])
{
	struct sdt_file *f = NULL;
	int ret;

	if (pid)
		return sdt_proc_files(pid, files, nfiles, err);
	*files = NULL;
	*nfiles = 0;
	ret = sdt_file_open(path, &f, err);
	if (ret)
		return ret;
	*files = calloc(1, sizeof(**files));
	if (!*files) {
		sdt_file_free(f);
		seterr(err, "out of memory");
		return -ENOMEM;
	}
	(*files)[0] = f;
	*nfiles = 1;
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Formatting
 */

const char *sdt_reg_alias(int reg, int width, int shift)
{
	static const char *const legacy[][5] = {  /* 8, 4, 2, 1, high 1 */
		[SDT_REG_AX] = { "rax", "eax", "ax", "al", "ah" },
		[SDT_REG_BX] = { "rbx", "ebx", "bx", "bl", "bh" },
		[SDT_REG_CX] = { "rcx", "ecx", "cx", "cl", "ch" },
		[SDT_REG_DX] = { "rdx", "edx", "dx", "dl", "dh" },
		[SDT_REG_SI] = { "rsi", "esi", "si", "sil", NULL },
		[SDT_REG_DI] = { "rdi", "edi", "di", "dil", NULL },
		[SDT_REG_BP] = { "rbp", "ebp", "bp", "bpl", NULL },
		[SDT_REG_SP] = { "rsp", "esp", "sp", "spl", NULL },
	};
	static const char *const ext[8][4] = {
		{ "r8", "r8d", "r8w", "r8b" },     { "r9", "r9d", "r9w", "r9b" },
		{ "r10", "r10d", "r10w", "r10b" }, { "r11", "r11d", "r11w", "r11b" },
		{ "r12", "r12d", "r12w", "r12b" }, { "r13", "r13d", "r13w", "r13b" },
		{ "r14", "r14d", "r14w", "r14b" }, { "r15", "r15d", "r15w", "r15b" },
	};
	int w = width == 8 ? 0 : width == 4 ? 1 : width == 2 ? 2 : width == 1 ? 3 : -1;

	if (reg >= SDT_REG_XMM0 && reg < SDT_REG_COUNT)
		return sdt_reg_name(reg, EM_X86_64);
	if (w < 0 || reg < 0)
		return NULL;
	if (reg <= SDT_REG_SP)
		return legacy[reg][w == 3 && shift == 8 ? 4 : w];
	if (reg <= SDT_REG_R15)
		return ext[reg - SDT_REG_R8][w];
	if (reg == SDT_REG_IP)
		return w == 0 ? "rip" : w == 1 ? "eip" : w == 2 ? "ip" : NULL;
	return NULL;
}

int sdt_arg_format(const struct sdt_arg *a, char *buf, size_t len)
{
	bool no_regs = a->reg == SDT_REG_NONE && a->index == SDT_REG_NONE;
	size_t o = 0;
	int n;

#define OUT(...)                                                                  \
	do {                                                                      \
		n = snprintf(buf + o, o < len ? len - o : 0, __VA_ARGS__);        \
		if (n < 0)                                                        \
			return -EINVAL;                                           \
		o += (size_t)n;                                                   \
	} while (0)

	if (a->size)
		OUT("%s%u%s@", a->is_signed ? "-" : "", a->size, a->is_float ? "f" : "");
	if (a->kind == SDT_ARG_CONST)
		OUT("$");
	if (a->kind == SDT_ARG_REG) {
		OUT("%%%s", sdt_reg_alias(a->reg, a->reg_width, a->reg_shift) ?: "?");
	} else if (a->sym && a->disp) {
		OUT("%s%s%llu", a->sym, a->disp < 0 ? "-" : "+",
		    a->disp < 0 ? 0ULL - (unsigned long long)a->disp : (unsigned long long)a->disp);
	} else if (a->sym) {
		OUT("%s", a->sym);
	} else if (a->disp || a->kind == SDT_ARG_CONST || no_regs) {
		OUT("%lld", (long long)a->disp);
	}
	if (a->kind == SDT_ARG_MEM && !no_regs) {
		OUT("(");
		if (a->reg != SDT_REG_NONE)
			OUT("%%%s", sdt_reg_alias(a->reg, a->reg_width, 0) ?: "?");
		if (a->index != SDT_REG_NONE)
			OUT(",%%%s,%u", sdt_reg_alias(a->index, a->index_width, 0) ?: "?",
			    a->scale);
		OUT(")");
	}
#undef OUT
	return o < len ? (int)o : -ENOSPC;
}
