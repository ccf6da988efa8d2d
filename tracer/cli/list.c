// SPDX-License-Identifier: MIT
/*
 * list.c — `tokio-ebpf-trace list FILE|-p PID [--json] [-v] [PROVIDER[:NAME]]`: the SDT
 * notes of a file, or of every ELF file a process maps, like `readelf -n` / `tplist -v`.
 */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "json.h"
#include "notes.h"

static void list_usage(FILE *out)
{
	fprintf(out,
"Usage: %s list FILE [PROVIDER[:NAME]] [OPTIONS]\n"
"       %s list -p PID [PROVIDER[:NAME]] [OPTIONS]\n"
"List the SystemTap SDT probes (.note.stapsdt notes) of an ELF file, or of every ELF\n"
"file a running process maps (executable and shared libraries, deleted ones too).\n"
"PROVIDER and NAME are shell patterns ('tokio:task_*').\n"
"\n"
"Options:\n"
"  -p, --pid PID   list the probes of a running process (with its load biases)\n"
"  -j, --json      one JSON array, one object per note\n"
"      --pretty    indented JSON (implies --json)\n"
"  -v, --verbose   show each parsed argument\n"
"  -h, --help      show this help\n"
"\n"
"Columns: LOCATION is the note's address after the .stapsdt.base adjustment, OFFSET its\n"
"file offset (what a uprobe attaches to), SEMAPHORE the semaphore address and file offset\n"
"(the uprobe ref_ctr_offset), SITE the instruction at the site (nop1, nop5, nop+nop5).\n"
"JSON keys: path provider name location base semaphore args (raw note fields, as readelf\n"
"shows them), address file_offset semaphore_address semaphore_offset site parsed_args;\n"
"with -p also pid load_bias runtime_address runtime_semaphore.\n"
"\n"
"Exit status:\n"
"  0  ok: listed (also when nothing matched)\n"
"  3  usage error\n"
"  4  bad input: file unreadable, not ELF, malformed notes, no such process\n"
"\n"
"Examples:\n"
"  %s list /usr/bin/python3.11\n"
"  %s list -v ./server 'tokio:*'\n"
"  %s list -p 1234 --json\n",
		TET_PROG, TET_PROG, TET_PROG, TET_PROG, TET_PROG);
}

struct filter {
	const char *provider;  /* NULL = any */
	const char *name;
};

static bool match(const struct filter *flt, const struct sdt_note *n)
{
	if (flt->provider && fnmatch(flt->provider, n->provider, 0) != 0)
		return false;
	if (flt->name && fnmatch(flt->name, n->name, 0) != 0)
		return false;
	return true;
}

static const char *machine_name(uint16_t m)
{
	switch (m) {
	case EM_X86_64: return "x86-64";
	case EM_386: return "i386";
	case EM_AARCH64: return "aarch64";
	case EM_ARM: return "arm";
	case EM_PPC64: return "ppc64";
	case EM_S390: return "s390";
	case EM_RISCV: return "riscv";
	default: return "other";
	}
}

static void describe_arg(const struct sdt_arg *a, uint16_t machine, char *buf, size_t len)
{
	char op[128];
	char ty[16];
	const char *tail = "";
	char extra[64] = "";

	if (a->is_float)
		snprintf(ty, sizeof(ty), "f%u", a->size * 8u);
	else if (a->size)
		snprintf(ty, sizeof(ty), "%c%u", a->is_signed ? 's' : 'u', a->size * 8u);
	else
		snprintf(ty, sizeof(ty), "?");
	{
		struct sdt_arg b = *a;

		b.size = 0;  /* the operand only */
		if (sdt_arg_format(&b, op, sizeof(op)) < 0)
			snprintf(op, sizeof(op), "?");
	}
	if (a->kind == SDT_ARG_REG && a->reg_shift)
		tail = " (bits 8-15)";
	if (a->sym && a->sym_resolved)
		snprintf(extra, sizeof(extra), " [%s = 0x%" PRIx64 "]", a->sym, a->sym_addr);
	else if (a->sym)
		snprintf(extra, sizeof(extra), " [%s unresolved]", a->sym);
	(void)machine;
	snprintf(buf, len, "%-4s %-5s %s%s%s", ty, sdt_arg_kind_name(a->kind), op, tail, extra);
}

static void print_human(struct sdt_file **files, size_t nfiles, const struct filter *flt,
			bool verbose, int pid)
{
	size_t i, k;
	int wp = 8, wn = 4, wa = 20;

	for (i = 0; i < nfiles; i++)
		for (k = 0; k < files[i]->nnotes; k++) {
			const struct sdt_note *n = &files[i]->notes[k];
			int l;

			if (!match(flt, n))
				continue;
			l = (int)strlen(n->provider);
			wp = l > wp ? l : wp;
			l = (int)strlen(n->name);
			wn = l > wn ? l : wn;
		}
	wp = wp > 32 ? 32 : wp;
	wn = wn > 40 ? 40 : wn;
	for (i = 0; i < nfiles; i++) {
		struct sdt_file *f = files[i];
		size_t shown = 0;

		for (k = 0; k < f->nnotes; k++)
			shown += match(flt, &f->notes[k]);
		if (!shown)
			continue;
		printf("%s: ELF%d %s %s %s, %zu note%s", f->path, f->elf_class,
		       f->big_endian ? "MSB" : "LSB", machine_name(f->e_machine),
		       f->e_type == ET_EXEC ? "EXEC" : "DYN", shown, shown == 1 ? "" : "s");
		if (pid > 0)
			printf(", load bias 0x%" PRIx64 "%s", f->load_bias,
			       f->deleted ? " (deleted on disk)" : "");
		printf("\n");
		printf("  %-*s %-*s %-*s %-10s %-28s %-8s %s\n", wp, "PROVIDER", wn, "NAME", wa,
		       pid > 0 ? "ADDRESS" : "LOCATION", "OFFSET", "SEMAPHORE (OFFSET)", "SITE",
		       "ARGS");
		for (k = 0; k < f->nnotes; k++) {
			const struct sdt_note *n = &f->notes[k];
			char sema[64] = "-";
			int a;

			if (!match(flt, n))
				continue;
			if (n->sema_addr)
				snprintf(sema, sizeof(sema), "0x%" PRIx64 " (0x%" PRIx64 ")",
					 n->sema_addr + (pid > 0 ? f->load_bias : 0), n->sema_off);
			printf("  %-*s %-*s 0x%-*" PRIx64 " 0x%-8" PRIx64 " %-28s %-8s %s\n", wp,
			       n->provider, wn, n->name, wa - 2,
			       n->addr + (pid > 0 ? f->load_bias : 0), n->file_off, sema,
			       sdt_site_name(n->site), n->args);
			if (!verbose)
				continue;
			for (a = 0; a < n->nargs; a++) {
				char d[256];

				describe_arg(&n->args_v[a], f->e_machine, d, sizeof(d));
				printf("      arg%-2d %s\n", a + 1, d);
			}
			if (n->err)
				printf("      (%s)\n", n->errmsg);
		}
	}
}

static void json_reg(struct jw *w, const char *key, int reg, int width, int shift,
		     uint16_t machine)
{
	char k[32];

	if (reg == SDT_REG_NONE)
		return;
	jw_kstr(w, key, sdt_reg_name(reg, machine));
	snprintf(k, sizeof(k), "%s_as_written", key);
	jw_kstr(w, k, sdt_reg_alias(reg, width, shift));
	if (machine == EM_X86_64 && sdt_reg_pt_regs_off(reg) >= 0) {
		snprintf(k, sizeof(k), "%s_pt_regs_offset", key);
		jw_ki64(w, k, sdt_reg_pt_regs_off(reg));
	}
}

static void json_note(struct jw *w, const struct sdt_file *f, const struct sdt_note *n,
		      int pid)
{
	int a;

	jw_obj_begin(w);
	jw_kstr(w, "path", f->path);
	jw_kstr(w, "provider", n->provider);
	jw_kstr(w, "name", n->name);
	jw_ku64(w, "location", n->pc);
	jw_ku64(w, "base", n->base);
	jw_ku64(w, "semaphore", n->sema);
	jw_kstr(w, "args", n->args);
	jw_ku64(w, "address", n->addr);
	jw_ku64(w, "file_offset", n->file_off);
	jw_ku64(w, "semaphore_address", n->sema_addr);
	jw_ku64(w, "semaphore_offset", n->sema_off);
	jw_kstr(w, "site", sdt_site_name(n->site));
	jw_ki64(w, "elf_class", f->elf_class);
	jw_kstr(w, "byte_order", f->big_endian ? "big" : "little");
	jw_kstr(w, "machine", machine_name(f->e_machine));
	if (pid > 0) {
		jw_ki64(w, "pid", pid);
		jw_kstr(w, "open_path", f->open_path);
		jw_kbool(w, "deleted", f->deleted);
		jw_ku64(w, "load_bias", f->load_bias);
		jw_ku64(w, "runtime_address", n->addr + f->load_bias);
		jw_ku64(w, "runtime_semaphore", n->sema_addr ? n->sema_addr + f->load_bias : 0);
	}
	jw_key(w, "parsed_args");
	jw_arr_begin(w);
	for (a = 0; a < n->nargs; a++) {
		const struct sdt_arg *g = &n->args_v[a];

		jw_obj_begin(w);
		jw_ki64(w, "size", g->size);
		jw_kbool(w, "signed", g->is_signed);
		jw_kbool(w, "float", g->is_float);
		jw_kstr(w, "kind", sdt_arg_kind_name(g->kind));
		if (g->kind == SDT_ARG_CONST) {
			/* the constant as the probe's consumer sees it: signed or unsigned */
			if (g->is_signed)
				jw_ki64(w, "value", g->disp);
			else
				jw_ku64(w, "value", (uint64_t)g->disp);
		} else if (g->kind == SDT_ARG_REG) {
			json_reg(w, "reg", g->reg, g->reg_width, g->reg_shift, f->e_machine);
			jw_ki64(w, "reg_shift", g->reg_shift);
		} else {
			json_reg(w, "base", g->reg, g->reg_width, 0, f->e_machine);
			json_reg(w, "index", g->index, g->index_width, 0, f->e_machine);
			jw_ki64(w, "scale", g->scale);
			jw_ki64(w, "offset", g->disp);
			jw_kbool(w, "rip_relative", g->reg == SDT_REG_IP);
		}
		if (g->sym) {
			jw_kstr(w, "symbol", g->sym);
			if (g->sym_resolved)
				jw_ku64(w, "symbol_address", g->sym_addr);
			else {
				jw_key(w, "symbol_address");
				jw_null(w);
			}
		}
		jw_obj_end(w);
	}
	jw_arr_end(w);
	if (n->err)
		jw_kstr(w, "args_error", n->errmsg);
	jw_obj_end(w);
}

int cmd_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, 'P' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sdt_file **files = NULL;
	struct filter flt = { NULL, NULL };
	char err[SDT_ERR_LEN], *fspec = NULL;
	bool verbose = false, pretty = false;
	const char *path = NULL;
	size_t nfiles = 0, i, k;
	int opt, pid = 0, ret = TET_EXIT_OK;

	json_mode_prescan(argc, argv);
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+p:jvh", opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (!parse_pid(optarg, &pid))
				return TET_EXIT_USAGE;
			break;
		case 'j':
			json_output = true;
			break;
		case 'P':
			json_output = pretty = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			list_usage(stdout);
			return TET_EXIT_OK;
		default:
			p_err("list: unknown or incomplete option '%s' (try '%s list --help')",
			      argv[optind - 1], TET_PROG);
			return TET_EXIT_USAGE;
		}
	}
	/* options may also follow the positional arguments */
	while (optind < argc) {
		const char *a = argv[optind++];

		if (strcmp(a, "--json") == 0 || strcmp(a, "-j") == 0) {
			json_output = true;
		} else if (strcmp(a, "--pretty") == 0) {
			json_output = pretty = true;
		} else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
			verbose = true;
		} else if ((strcmp(a, "-p") == 0 || strcmp(a, "--pid") == 0) && optind < argc) {
			if (!parse_pid(argv[optind++], &pid))
				return TET_EXIT_USAGE;
		} else if (a[0] == '-' && a[1]) {
			p_err("list: unknown option '%s' (try '%s list --help')", a, TET_PROG);
			return TET_EXIT_USAGE;
		} else if (!path && !pid) {
			path = a;
		} else if (!fspec) {
			fspec = strdup(a);
			if (!fspec) {
				p_err("out of memory");
				return TET_EXIT_INPUT;
			}
		} else {
			p_err("list: unexpected argument '%s' (try '%s list --help')", a, TET_PROG);
			free(fspec);
			return TET_EXIT_USAGE;
		}
	}
	if (path && pid) {
		/* `list -p PID FILTER` given in the other order */
		fspec = fspec ? fspec : strdup(path);
		path = NULL;
	}
	if (!path && !pid) {
		p_err("list: a FILE or -p PID is required (try '%s list --help')", TET_PROG);
		free(fspec);
		return TET_EXIT_USAGE;
	}
	if (fspec) {
		char *colon = strchr(fspec, ':');

		if (colon) {
			*colon = 0;
			flt.name = *(colon + 1) ? colon + 1 : NULL;
		}
		flt.provider = *fspec ? fspec : NULL;
	}

	if (sdt_target_files(pid, path, &files, &nfiles, err)) {
		p_err("%s", err);
		ret = TET_EXIT_INPUT;
		goto out;
	}
	/* a note whose site, semaphore or arguments are bad makes the file bad input;
	 * arguments of machines this parser does not decode only lose their parsed form */
	for (i = 0; i < nfiles; i++) {
		for (k = 0; k < files[i]->nnotes; k++) {
			const struct sdt_note *n = &files[i]->notes[k];

			if (n->err && n->err != -EOPNOTSUPP) {
				p_err("%s: %s", files[i]->path, n->errmsg);
				ret = TET_EXIT_INPUT;
				goto out;
			}
		}
	}

	if (json_output) {
		struct jw *w = jw_new(stdout, pretty);

		jw_arr_begin(w);
		for (i = 0; i < nfiles; i++)
			for (k = 0; k < files[i]->nnotes; k++)
				if (match(&flt, &files[i]->notes[k]))
					json_note(w, files[i], &files[i]->notes[k], pid);
		jw_arr_end(w);
		if (jw_finish(w)) {
			fprintf(stderr, "%s: list: writing the output failed\n", TET_PROG);
			ret = TET_EXIT_INPUT;
		}
	} else {
		size_t total = 0;

		for (i = 0; i < nfiles; i++)
			for (k = 0; k < files[i]->nnotes; k++)
				total += match(&flt, &files[i]->notes[k]);
		if (!total && pid)
			fprintf(stderr, "%s: no SDT probes%s in process %d\n", TET_PROG,
				fspec ? " matching the filter" : "", pid);
		else if (!total)
			fprintf(stderr, "%s: no SDT probes%s in %s\n", TET_PROG,
				fspec ? " matching the filter" : "", path);
		print_human(files, nfiles, &flt, verbose, pid);
		if (fflush(stdout) || ferror(stdout))
			ret = TET_EXIT_INPUT;
	}
out:
	sdt_files_free(files, nfiles);
	free(fspec);
	return ret;
}
