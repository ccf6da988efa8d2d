// SPDX-License-Identifier: MIT
/*
 * folded.c — --stacks FILE: the CPU samples of why.c's report as folded stacks
 * (report_folded, reporters.h), for flamegraph.pl, inferno, speedscope; and --mode sampling's
 * (report_sampling_folded), from its profile (analyze/sampprof.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reporters.h"
#include "sampprof.h"
#include "text.h"

/* A frame in a folded line: ';' separates frames and the last ' ' the count, so neither may
 * appear inside one (nor a line break): each becomes '_'. */
static void folded_frame(FILE *out, const char *s)
{
	for (; *s; s++)
		fputc(*s == ';' || *s == ' ' || *s == '\n' || *s == '\r' ? '_' : *s, out);
}

static void folded_site(FILE *out, const struct an_site *s)
{
	char buf[600];

	if (s->unknown)
		fputs("[spawned before the trace]", out);
	else if (s->other)
		fputs("[other sites]", out);
	else if (s->location_len)
		folded_frame(out, text_sanitize(s->location, s->location_len, 200, buf, sizeof(buf)));
	else if (s->type_len)
		folded_frame(out, text_sanitize(s->type_name, s->type_len, 200, buf, sizeof(buf)));
	else
		fputs("[unknown site]", out);
}

int report_folded(FILE *out, const struct report_meta *m)
{
	const struct why_report *w = m->why;

	for (size_t i = 0; w && i < w->nsites; i++) {
		const struct why_site *ws = &w->sites[i];

		for (size_t j = 0; j < ws->ncpu; j++) {
			const struct why_stack *st = &ws->cpu[j];

			folded_site(out, ws->site);
			for (uint32_t k = st->nframes; k-- > 0;) { /* root first */
				fputc(';', out);
				folded_frame(out, st->frames[k]);
			}
			fprintf(out, " %llu\n", (unsigned long long)st->count);
		}
	}
	return ferror(out) ? -EIO : 0;
}

/* --mode sampling: "TYPE;frame;…;frame COUNT", the future type where the other modes put the
 * spawn site (the uprobe fallback's site is its type too); a program without frame pointers:
 * "TYPE;[no frame pointers: …];leaf frames" (what is known: the poll of that type, then the
 * leaf). */
int report_sampling_folded(FILE *out, const struct sp_profile *p)
{
	char (*fr)[SP_FRAME] = malloc(SP_FRAMES_MAX * sizeof(*fr));
	char buf[600];

	if (!fr)
		return -ENOMEM;
	for (size_t i = 0; i < p->n;) {
		const struct sp_entry *e = &p->v[i];
		const char *type = sa_type_name(p->m, e->type);
		uint64_t count = 0;
		size_t n = 0;
		bool cut = false;

		if (e->blocked)
			break;   /* the CPU samples come first */
		for (; i < p->n && !p->v[i].blocked && p->v[i].type == e->type &&
		       p->v[i].ustack == e->ustack; i++)
			count += p->v[i].count;
		if (p->names.user)
			n = p->names.user(p->names.ctx, e->ustack, fr, SP_FRAMES_MAX, &cut);
		folded_frame(out, text_sanitize(type, strnlen(type, 256), 200, buf, sizeof(buf)));
		if (cut && n) {
			fputc(';', out);
			folded_frame(out, SP_NO_FP);
		}
		if (!n)
			fputs(";[no stack]", out);
		while (n-- > 0) { /* root first */
			fputc(';', out);
			folded_frame(out, fr[n]);
		}
		fprintf(out, " %llu\n", (unsigned long long)count);
	}
	free(fr);
	return ferror(out) ? -EIO : 0;
}
