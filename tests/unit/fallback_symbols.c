// SPDX-License-Identifier: MIT
/*
 * fallback_symbols FILE [--json]: what the uprobe fallback finds in FILE (tracer/discover/symbols.c):
 * every Tokio task function with its address, file offset and, for raw::poll instances, the
 * future type, its vtable and how the type was found. Exit 0 usable, 2 not usable (the reason
 * on stderr), 4 unreadable. Used by tests/t_fallback_*.sh.
 */
#include <stdio.h>
#include <string.h>

#include "symbols.h"

static void jstr(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", (unsigned)(unsigned char)*s);
		else
			putchar(*s);
	}
	putchar('"');
}

int main(int argc, char **argv)
{
	struct tsym_table t;
	char err[512];
	bool json = argc > 2 && !strcmp(argv[2], "--json");
	int ret;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE [--json]\n", argv[0]);
		return 3;
	}
	ret = tsym_load(argv[1], &t, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "fallback_symbols: %s\n", err);
		return 4;
	}
	if (json) {
		printf("{\"symtab\":%s,\"tokio\":%s,\"v0\":%s,\"counts\":{", t.has_symtab ? "true" : "false",
		       t.tokio ? "true" : "false", t.v0 ? "true" : "false");
		for (int k = 0; k < TSYM_KINDS; k++)
			printf("%s\"%s\":%zu", k ? "," : "", tsym_kind_name(k), t.count[k]);
		printf("},\"functions\":[");
		for (size_t i = 0; i < t.nfns; i++) {
			const struct tsym_fn *f = &t.fns[i];

			printf("%s{\"kind\":\"%s\",\"addr\":%llu,\"file_offset\":%llu,\"symbol\":", i ? "," : "",
			       tsym_kind_name(f->kind), (unsigned long long)f->addr,
			       (unsigned long long)f->file_off);
			jstr(f->name);
			printf(",\"demangled\":");
			jstr(f->demangled);
			if (f->kind == TSYM_POLL) {
				printf(",\"type\":");
				jstr(t.types[f->type]);
				printf(",\"type_source\":\"%s\",\"vtable\":%llu", tsym_src_name(f->src),
				       (unsigned long long)f->vtable);
			}
			printf("}");
		}
		printf("]}\n");
	} else {
		for (size_t i = 0; i < t.nfns; i++) {
			const struct tsym_fn *f = &t.fns[i];

			printf("%-20s 0x%-8llx %s", tsym_kind_name(f->kind), (unsigned long long)f->addr,
			       f->kind == TSYM_POLL ? t.types[f->type] : f->demangled);
			if (f->kind == TSYM_POLL)
				printf("  [%s]", tsym_src_name(f->src));
			printf("\n");
		}
	}
	ret = tsym_usable(&t, err, sizeof(err));
	if (ret)
		fprintf(stderr, "fallback_symbols: %s\n", err);
	tsym_free(&t);
	return ret ? 2 : 0;
}
