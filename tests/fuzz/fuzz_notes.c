// SPDX-License-Identifier: MIT
/*
 * fuzz_notes.c — libFuzzer target for the note parser (tracer/discover/notes.c) and the JSON writer.
 *
 * An input starting with "\177ELF" is parsed as a whole ELF file (sdt_file_parse_mem): ELF
 * and program/section headers through libelf, the note section, the symbol tables and the
 * argument strings by our code. Any other input is one SDT argument string; its first byte
 * picks the ELF machine (x86_64, i386, other). Every parsed argument is written back with
 * sdt_arg_format() and parsed again: a difference aborts (a parser/formatter bug, not only
 * memory errors). Strings go through the JSON writer into /dev/null.
 *   make fuzz-notes           long run;   tests/t_notes_fuzz.sh   bounded run (make test)
 */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "notes.h"

static FILE *devnull;

static void roundtrip(const struct sdt_arg *a, uint16_t machine, int cls)
{
	struct sdt_arg b[SDT_MAX_ARGS];
	char buf[512], err[SDT_ERR_LEN];
	int n;

	if (sdt_arg_format(a, buf, sizeof(buf)) < 0)
		return;  /* a symbol too long for the buffer */
	n = sdt_parse_args(buf, machine, cls, b, err);
	if (n != 1) {
		fprintf(stderr, "roundtrip: '%s' does not parse back: %s\n", buf, err);
		abort();
	}
	if (a->kind != b[0].kind || a->size != b[0].size || a->is_signed != b[0].is_signed ||
	    a->is_float != b[0].is_float || a->reg != b[0].reg || a->index != b[0].index ||
	    a->scale != b[0].scale || a->disp != b[0].disp ||
	    (a->kind != SDT_ARG_CONST && a->reg_width != b[0].reg_width) ||
	    a->reg_shift != b[0].reg_shift || a->index_width != b[0].index_width ||
	    !a->sym != !b[0].sym || (a->sym && strcmp(a->sym, b[0].sym) != 0)) {
		fprintf(stderr, "roundtrip: '%s' parses back differently\n", buf);
		abort();
	}
	sdt_args_release(b, n);
}

static int sym_cb(const char *name, uint64_t value, uint64_t size, int type, void *ctx)
{
	(void)value;
	(void)size;
	(void)type;
	(*(size_t *)ctx) += strlen(name);
	return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char err[SDT_ERR_LEN];
	struct jw *w;

	if (size == 0)
		return 0;
	if (!devnull)
		devnull = fopen("/dev/null", "w");
	w = jw_new(devnull, data[0] & 1);
	jw_arr_begin(w);
	if (size >= 4 && memcmp(data, ELFMAG, SELFMAG) == 0) {
		struct sdt_file *f;
		size_t i, symlen = 0;
		int k;

		err[0] = 0;
		if (sdt_file_parse_mem(data, size, "fuzz", &f, err) == 0) {
			for (i = 0; i < f->nnotes; i++) {
				const struct sdt_note *n = &f->notes[i];
				unsigned char site[8];

				jw_obj_begin(w);
				jw_kstr(w, "provider", n->provider);
				jw_kstr(w, "name", n->name);
				jw_kstr(w, "args", n->args);
				jw_ku64(w, "off", n->file_off);
				jw_obj_end(w);
				for (k = 0; k < n->nargs; k++)
					roundtrip(&n->args_v[k], f->e_machine, f->elf_class);
				sdt_file_read(f, n->file_off, site, sizeof(site));
			}
			sdt_file_for_each_symbol(f, sym_cb, &symlen);
			sdt_file_free(f);
		} else if (!err[0]) {
			fprintf(stderr, "parse failed without a message\n");
			abort();
		}
	} else if (size >= 1) {
		static const uint16_t machines[] = { EM_X86_64, EM_386, EM_AARCH64 };
		struct sdt_arg args[SDT_MAX_ARGS];
		uint16_t m = machines[data[0] % 3];
		char *s = strndup((const char *)data + 1, size - 1);
		int n, k;

		if (!s)
			return 0;
		jw_str(w, s);
		jw_strn(w, (const char *)data, size);
		n = sdt_parse_args(s, m, m == EM_386 ? 32 : 64, args, err);
		for (k = 0; k < n; k++)
			roundtrip(&args[k], m, m == EM_386 ? 32 : 64);
		if (n > 0)
			sdt_args_release(args, n);
		free(s);
	}
	jw_arr_end(w);
	jw_finish(w);
	return 0;
}
