/* SPDX-License-Identifier: MIT */
/*
 * notes.h — readelf-style reader of SystemTap SDT notes (.note.stapsdt).
 *
 * sdt_file_open() / sdt_file_parse_mem() parse one ELF file into an array of notes with
 * their raw fields (exactly what `readelf -n` prints) and the values a tracer needs: the
 * site's link-time address after the .stapsdt.base (prelink) adjustment and its file
 * offset, the semaphore's address and file offset (the uprobe ref_ctr_offset), the kind
 * of instruction at the site and the parsed arguments. sdt_proc_files() does the same for
 * every ELF file mapped by a process, with its load bias.
 *
 * Errors: functions return 0 or a negative errno and write one line into `err` (naming
 * the file and the problem, without a trailing newline). A file whose note section is
 * malformed is an error as a whole; a note whose site, semaphore or arguments are bad is
 * kept, with note->err/errmsg set, so a caller can skip just that note.
 */
#ifndef TET_NOTES_H
#define TET_NOTES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SDT_ERR_LEN   512
#define SDT_MAX_ARGS  12   /* sys/sdt.h emits at most 12 (libbpf's SDT_MAX_ARG_CNT too) */

/* Registers, x86 numbering independent of width: %al/%ax/%eax/%rax are all SDT_REG_AX. */
enum sdt_reg {
	SDT_REG_NONE = -1,
	SDT_REG_AX, SDT_REG_BX, SDT_REG_CX, SDT_REG_DX, SDT_REG_SI, SDT_REG_DI,
	SDT_REG_BP, SDT_REG_SP, SDT_REG_R8, SDT_REG_R9, SDT_REG_R10, SDT_REG_R11,
	SDT_REG_R12, SDT_REG_R13, SDT_REG_R14, SDT_REG_R15, SDT_REG_IP,
	SDT_REG_XMM0, /* ... SDT_REG_XMM0 + 15 */
	SDT_REG_COUNT = SDT_REG_XMM0 + 16,
};

enum sdt_arg_kind {
	SDT_ARG_CONST,  /* $imm (or $sym+imm)                    value = disp (+ sym)        */
	SDT_ARG_REG,    /* %reg                                   value = reg                 */
	SDT_ARG_MEM,    /* disp(base,index,scale), sym(%rip), sym  value = *(size *)address  */
};

struct sdt_arg {
	enum sdt_arg_kind kind;
	uint8_t size;         /* 1, 2, 4 or 8 bytes; 0 when the note gives none (SDT v1/v2) */
	bool is_signed;       /* "-N@" */
	bool is_float;        /* "Nf@" */
	int8_t reg;           /* REG: the register; MEM: the base (NONE, or SDT_REG_IP) */
	uint8_t reg_width;    /* bytes of the register name as written (%eax → 4, %xmm0 → 16) */
	uint8_t reg_shift;    /* bit shift of the register part: 8 for %ah %bh %ch %dh */
	int8_t index;         /* MEM: index register or SDT_REG_NONE */
	uint8_t index_width;  /* MEM: bytes of the index register as written */
	uint8_t scale;        /* MEM: 1, 2, 4 or 8 (1 when there is no index) */
	int64_t disp;         /* CONST: the value; MEM: the numeric displacement */
	char *sym;            /* CONST/MEM: symbol of the displacement, NULL when none */
	bool sym_resolved;    /* sym found in .symtab/.dynsym of the file */
	uint64_t sym_addr;    /* its link-time value (add the load bias at run time) */
};

enum sdt_site {
	SDT_SITE_UNKNOWN,   /* bytes not available (not in the file, or not x86) */
	SDT_SITE_NOP1,      /* 90                  (sys/sdt.h default)                 */
	SDT_SITE_NOP5,      /* 0f 1f 44 00 00      (optimizable uprobe, 6.18+ x86_64)  */
	SDT_SITE_NOP_NOP5,  /* 90 0f 1f 44 00 00   (nop;nop5: old kernels use the nop, */
	                     /*                      optimized uprobes the nop5 at +1)  */
	SDT_SITE_OTHER,     /* anything else (already patched by a debugger?)          */
};

struct sdt_note {
	/* raw, as in the note (and in `readelf -n`) */
	char *provider;
	char *name;
	char *args;           /* verbatim, "" when empty */
	uint64_t pc;          /* "Location" */
	uint64_t base;        /* "Base" (address of .stapsdt.base when linked) */
	uint64_t sema;        /* "Semaphore", 0 = none */
	/* computed */
	uint64_t addr;        /* pc adjusted by .stapsdt.base (prelink), link-time vaddr */
	uint64_t file_off;    /* file offset of the site: the uprobe offset */
	uint64_t sema_addr;   /* adjusted semaphore address, 0 = none */
	uint64_t sema_off;    /* its file offset: the uprobe ref_ctr_offset, 0 = none */
	enum sdt_site site;
	int nargs;
	struct sdt_arg args_v[SDT_MAX_ARGS];
	/* 0, or the first problem of this note: -ENOEXEC site not in an executable segment,
	 * -EFAULT semaphore not in a writable data segment, -EINVAL/-E2BIG bad arguments,
	 * -EOPNOTSUPP arguments of a machine this parser does not decode (args_v empty). */
	int err;
	char *errmsg;         /* NULL when err == 0 */
};

struct sdt_file {
	char *path;           /* the file's name: as given, or as in /proc/PID/maps */
	char *open_path;      /* what was opened (/proc/PID/map_files/…, /proc/PID/root/…) */
	int elf_class;        /* 32 or 64 */
	bool big_endian;
	uint16_t e_machine;   /* EM_X86_64, EM_386, … */
	uint16_t e_type;      /* ET_EXEC or ET_DYN */
	bool has_base_sec;    /* .stapsdt.base present */
	uint64_t base_sec_addr;
	size_t nnotes;
	struct sdt_note *notes;
	/* set by sdt_proc_files() only */
	bool mapped;
	bool deleted;         /* "(deleted)" in maps: opened through map_files */
	bool is_main;         /* the process's executable (/proc/PID/exe) */
	uint64_t load_bias;   /* run-time address = link-time address + load_bias */
	struct sdt_file_priv *priv;
};

/* Parse FILE. Errors: -ENOENT, -EACCES, -EISDIR (directory / not a regular file), -ENODATA
 * (empty), -ENOEXEC (not ELF, or not an executable / shared object), -EBADMSG (truncated
 * or malformed ELF or note section), -ENOMEM. */
int sdt_file_open(const char *path, struct sdt_file **out, char err[SDT_ERR_LEN]);
/* The same from memory (the buffer is copied); `name` is used in messages. */
int sdt_file_parse_mem(const void *buf, size_t len, const char *name, struct sdt_file **out,
			char err[SDT_ERR_LEN]);
void sdt_file_free(struct sdt_file *f);

/* Every ELF file mapped by PID (notes or not), in address order, main executable flagged.
 * Errors: -ESRCH (no such process, or it exited during the walk), -EACCES, the file errors. */
int sdt_proc_files(pid_t pid, struct sdt_file ***files, size_t *nfiles,
		    char err[SDT_ERR_LEN]);
void sdt_files_free(struct sdt_file **files, size_t nfiles);
/* The files of a target: PID's (sdt_proc_files) if pid, else FILE alone (sdt_file_open).
 * On error *files is NULL, *nfiles 0, and err says why. */
int sdt_target_files(pid_t pid, const char *path, struct sdt_file ***files, size_t *nfiles,
		      char err[SDT_ERR_LEN]);

/* Calls cb for every named symbol of .symtab and .dynsym; cb returns non-zero to stop
 * (that value is returned). */
typedef int (*sdt_sym_cb)(const char *name, uint64_t value, uint64_t size, int type,
			   void *ctx);
int sdt_file_for_each_symbol(struct sdt_file *f, sdt_sym_cb cb, void *ctx);
/* Reads up to len bytes at a file offset; returns the count (0 when out of the file). */
size_t sdt_file_read(struct sdt_file *f, uint64_t off, void *buf, size_t len);
/* Has a .symtab (not stripped). */
bool sdt_file_has_symtab(struct sdt_file *f);

/* Parse an SDT argument string for an ELF machine/class into args[SDT_MAX_ARGS].
 * Returns the count, or -EINVAL (grammar), -E2BIG (more than SDT_MAX_ARGS),
 * -EOPNOTSUPP (machine not decoded); err gets the reason. */
int sdt_parse_args(const char *s, uint16_t machine, int elf_class,
		    struct sdt_arg args[SDT_MAX_ARGS], char err[SDT_ERR_LEN]);
void sdt_args_release(struct sdt_arg *args, int nargs);

const char *sdt_reg_name(int reg, uint16_t machine); /* canonical: "rax" (x86_64), "eax" (i386) */
/* The register as written for a width/shift: (AX, 4, 0) → "eax", (AX, 1, 8) → "ah". */
const char *sdt_reg_alias(int reg, int width, int shift);
/* Writes the argument back in SDT syntax ("-4@-20(%rbp)"); parse(format(a)) == a. */
int sdt_arg_format(const struct sdt_arg *a, char *buf, size_t len);
const char *sdt_site_name(enum sdt_site site);   /* "nop1", "nop5", "nop+nop5", … */
const char *sdt_arg_kind_name(enum sdt_arg_kind kind);
/* Offset of the register in x86_64 struct pt_regs (uapi asm/ptrace.h), -1 if none. */
int sdt_reg_pt_regs_off(int reg);

/* Test hook: when the environment has TET_TEST_MAPS_DELAY_MS=N, sdt_proc_files() sleeps N ms
 * after reading /proc/PID/maps (lets a test make the process exit during the walk). */
#endif
