// SPDX-License-Identifier: MIT
/*
 * folded.c — --stacks FILE: the CPU samples of why.c's report as folded stacks
 * (report_folded, reporters.h), for flamegraph.pl, inferno, speedscope.
 */
#include <errno.h>
#include <stdio.h>

#include "reporters.h"
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
