// SPDX-License-Identifier: MIT
/*
 * pprof.c — --pprof FILE: the CPU profile of why.c's report (the samples --stacks folds) and the
 * time polls spent blocked off CPU, as a gzipped pprof profile (report_pprof, reporters.h), for
 * go tool pprof, Grafana Pyroscope, Parca.
 *
 * The message is the subset of pprof's profile.proto in proto/profile.proto, packed by
 * protobuf-c (Debian's libprotobuf-c) and gzipped by zlib. Three sample types: samples/count
 * and cpu/nanoseconds (samples × the profile's period) for CPU samples, off_cpu/nanoseconds for
 * the blocked periods of polls (0 samples: the totals of samples are --stacks's). Each distinct
 * frame string is one location with one line of one function ("func (file:line)" split into
 * the function's name, its file and the line). Labels per sample (why_labeled): spawn_site,
 * future_type (where the site has one), task_name (task_meta), worker, long_poll, syscall
 * (blocked stacks); a stack part charged outside the analyzer's label bound has the site's
 * labels only. Every string is printable UTF-8: frames come sanitized from why.c, the traced
 * process's other bytes go through text_sanitize here.
 *
 * --mode sampling (report_sampling_pprof): the same sample types from its profile
 * (analyze/sampprof.h): CPU samples in async polls (samples, cpu = samples × period) and the
 * sleeps inside polls (off_cpu: switched out to back on CPU), labelled future_type, thread (the
 * tid: no worker index is seen), long_poll, syscall (sleeps). A stack is the kernel part then
 * the user part, leaf first; a program without frame pointers gives the leaf's frames, then one
 * frame SP_NO_FP (the poll of the sample's future type is known, the frames between are not),
 * and a comment says so.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "profile.pb-c.h"
#include "htab.h"
#include "reporters.h"
#include "sampprof.h"
#include "text.h"

struct strtab {
	char **v;
	size_t n, cap;
	uint32_t *idx;              /* open addressing: index + 1 into v, 0 = empty */
	size_t idx_cap;             /* power of two, more than twice n */
	uint64_t *loc;              /* by string index: its location id as a frame, 0 = none yet */
	bool oom;
};

static int strtab_grow(struct strtab *t)
{
	size_t cap = t->idx_cap ? t->idx_cap * 2 : 1024;
	uint32_t *idx = calloc(cap, sizeof(*idx));
	char **v = realloc(t->v, cap / 2 * sizeof(*v));
	uint64_t *loc = realloc(t->loc, cap / 2 * sizeof(*loc));

	if (v)
		t->v = v;
	if (loc)
		t->loc = loc;
	if (!idx || !v || !loc) {
		free(idx);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->n; i++) {
		size_t j = fnv1a_str(t->v[i]) & (cap - 1);

		while (idx[j])
			j = (j + 1) & (cap - 1);
		idx[j] = (uint32_t)(i + 1);
	}
	free(t->idx);
	t->idx = idx;
	t->idx_cap = cap;
	t->cap = cap / 2;
	return 0;
}

/* The string's index in the table (added once); 0 ("") when out of memory (t->oom). */
static int64_t str_id(struct strtab *t, const char *s)
{
	size_t j;

	if (t->n + 1 > t->idx_cap / 2 && strtab_grow(t)) {
		t->oom = true;
		return 0;
	}
	for (j = fnv1a_str(s) & (t->idx_cap - 1); t->idx[j]; j = (j + 1) & (t->idx_cap - 1))
		if (!strcmp(t->v[t->idx[j] - 1], s))
			return t->idx[j] - 1;
	t->v[t->n] = strdup(s);
	if (!t->v[t->n]) {
		t->oom = true;
		return 0;
	}
	t->loc[t->n] = 0;
	t->idx[j] = (uint32_t)(t->n + 1);
	return (int64_t)t->n++;
}

static void strtab_free(struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i]);
	free(t->v);
	free(t->idx);
	free(t->loc);
}

struct pp {
	const struct analyzer *a;
	struct strtab st;
	Tet__Pprof__Location *locs;
	Tet__Pprof__Line *lines, **line_ptrs;
	Tet__Pprof__Function *fns;
	size_t nlocs, locs_cap;
	Tet__Pprof__Label *labels;  /* all samples' labels, PP_LABELS_MAX per sample */
	Tet__Pprof__Label **label_ptrs;
	size_t nlabels;
};
#define PP_LABELS_MAX 6

/* A frame's location id: "func (file:line)" → function func in file, at line. */
static uint64_t frame_loc(struct pp *p, const char *frame)
{
	int64_t id = str_id(&p->st, frame), name, file = 0, line = 0;
	const char *open = strrchr(frame, '('), *colon = strrchr(frame, ':');
	size_t n = strlen(frame), i;
	char buf[1024];

	if (p->st.oom)
		return 0;
	if (p->st.loc[id])
		return p->st.loc[id];
	if (p->nlocs == p->locs_cap) {
		size_t cap = p->locs_cap ? p->locs_cap * 2 : 256;
		void *l = realloc(p->locs, cap * sizeof(*p->locs));

		if (l)
			p->locs = l;
		l = l ? realloc(p->lines, cap * sizeof(*p->lines)) : NULL;
		if (l)
			p->lines = l;
		l = l ? realloc(p->fns, cap * sizeof(*p->fns)) : NULL;
		if (l)
			p->fns = l;
		if (!l) {
			p->st.oom = true;
			return 0;
		}
		p->locs_cap = cap;
	}
	name = id;
	if (open && open > frame + 1 && open[-1] == ' ' && colon > open && frame[n - 1] == ')' &&
	    n - 1 > (size_t)(colon - frame) + 1 && n < sizeof(buf)) {
		for (i = (size_t)(colon - frame) + 1; i < n - 1 && frame[i] >= '0' && frame[i] <= '9'; i++)
			line = line * 10 + (frame[i] - '0');
		if (i == n - 1 && line < (1ll << 31)) {
			memcpy(buf, frame, n + 1);
			buf[colon - frame] = '\0';
			file = str_id(&p->st, buf + (open - frame) + 1);
			buf[open - frame - 1] = '\0';
			name = str_id(&p->st, buf);
		} else {
			line = 0;
		}
	}
	i = p->nlocs++;
	tet__pprof__function__init(&p->fns[i]);
	p->fns[i].id = i + 1;
	p->fns[i].name = p->fns[i].system_name = name;
	p->fns[i].filename = file;
	tet__pprof__line__init(&p->lines[i]);
	p->lines[i].function_id = i + 1;
	p->lines[i].line = line;
	tet__pprof__location__init(&p->locs[i]);
	p->locs[i].id = i + 1;
	/* n_line / line set once every location is made (p->lines may move until then) */
	p->st.loc[id] = i + 1;
	return i + 1;
}

static void label(struct pp *p, Tet__Pprof__Sample *s, const char *key, const char *val)
{
	Tet__Pprof__Label *l = &p->labels[p->nlabels];

	tet__pprof__label__init(l);
	l->key = str_id(&p->st, key);
	l->str = str_id(&p->st, val);
	p->label_ptrs[p->nlabels++] = l;
	s->n_label++;
}

/* Sample s of labeled stack x: locations and labels (value set by the caller). */
static int sample_make(struct pp *p, Tet__Pprof__Sample *s, const struct why_labeled *x)
{
	const struct an_site *site = x->site;
	char buf[1200];

	s->location_id = calloc(x->stack->nframes ? x->stack->nframes : 1, sizeof(*s->location_id));
	if (!s->location_id)
		return -ENOMEM;
	for (uint32_t k = 0; k < x->stack->nframes; k++) /* leaf first, as pprof */
		s->location_id[s->n_location_id++] = frame_loc(p, x->stack->frames[k]);
	s->label = &p->label_ptrs[p->nlabels];
	label(p, s, "spawn_site", report_site_loc(site, buf, sizeof(buf)));
	if (site && site->type_len && !site->typed)
		label(p, s, "future_type", text_sanitize(site->type_name, site->type_len, 0, buf,
							 sizeof(buf)));
	if (x->name) {
		size_t n;
		const char *name = an_label_name(p->a, x->name, &n);

		if (name)
			label(p, s, "task_name", text_sanitize(name, n, 0, buf, sizeof(buf)));
	}
	if (x->labeled && x->worker >= 0) {
		snprintf(buf, sizeof(buf), "%d", x->worker);
		label(p, s, "worker", buf);
	}
	if (x->labeled)
		label(p, s, "long_poll", x->long_poll ? "true" : "false");
	if (x->blocked && x->stack->syscall)
		label(p, s, "syscall", x->stack->syscall);
	return p->st.oom ? -ENOMEM : 0;
}

/* The packed message, gzipped, to out. */
static int write_gz(FILE *out, const uint8_t *buf, size_t len)
{
	z_stream z = { 0 };
	uint8_t chunk[65536];
	int zr, ret = 0;

	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (uint8_t *)buf;
	z.avail_in = (uInt)len;
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		zr = deflate(&z, Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			ret = -EIO;
			break;
		}
		if (fwrite(chunk, 1, sizeof(chunk) - z.avail_out, out) != sizeof(chunk) - z.avail_out) {
			ret = -EIO;
			break;
		}
	} while (zr != Z_STREAM_END);
	deflateEnd(&z);
	return ret ? ret : ferror(out) ? -EIO : 0;
}

/* The three sample types (samples/count, cpu/nanoseconds, off_cpu/nanoseconds), cpu the
 * default and the period's. */
static void sample_types(struct pp *p, Tet__Pprof__Profile *prof, Tet__Pprof__ValueType *types,
			 Tet__Pprof__ValueType **type_ptrs, Tet__Pprof__ValueType *period,
			 uint64_t ns_per_sample)
{
	static const char *const names[3][2] = {
		{ "samples", "count" }, { "cpu", "nanoseconds" }, { "off_cpu", "nanoseconds" } };

	for (int i = 0; i < 3; i++) {
		tet__pprof__value_type__init(&types[i]);
		types[i].type = str_id(&p->st, names[i][0]);
		types[i].unit = str_id(&p->st, names[i][1]);
		type_ptrs[i] = &types[i];
	}
	period->type = types[1].type;
	period->unit = types[1].unit;
	prof->n_sample_type = 3;
	prof->sample_type = type_ptrs;
	prof->period_type = period;
	prof->period = (int64_t)ns_per_sample;
	prof->default_sample_type = types[1].type;
}

/* The profile's locations, functions and strings from p, packed, gzipped, to out. */
static int pack_write(FILE *out, Tet__Pprof__Profile *prof, struct pp *p)
{
	uint8_t *packed = NULL;
	size_t packed_len;
	int ret = -ENOMEM;

	p->line_ptrs = calloc(p->nlocs + 1, sizeof(*p->line_ptrs));
	prof->location = calloc(p->nlocs + 1, sizeof(*prof->location));
	prof->function = calloc(p->nlocs + 1, sizeof(*prof->function));
	if (!p->line_ptrs || !prof->location || !prof->function || p->st.oom)
		goto out;
	for (size_t i = 0; i < p->nlocs; i++) {
		p->line_ptrs[i] = &p->lines[i];
		p->locs[i].n_line = 1;
		p->locs[i].line = &p->line_ptrs[i];
		prof->location[i] = &p->locs[i];
		prof->function[i] = &p->fns[i];
	}
	prof->n_location = prof->n_function = p->nlocs;
	prof->n_string_table = p->st.n;
	prof->string_table = p->st.v;
	packed_len = tet__pprof__profile__get_packed_size(prof);
	packed = malloc(packed_len ? packed_len : 1);
	if (!packed)
		goto out;
	tet__pprof__profile__pack(prof, packed);
	ret = write_gz(out, packed, packed_len);
out:
	free(packed);
	free(prof->location);
	free(prof->function);
	free(p->line_ptrs);
	prof->location = NULL;
	prof->function = NULL;
	p->line_ptrs = NULL;
	return ret;
}

int report_pprof(FILE *out, const struct analyzer *a, const struct report_meta *m)
{
	const struct why_report *w = m->why;
	size_t n = w ? w->nlabeled : 0;
	Tet__Pprof__Profile prof = TET__PPROF__PROFILE__INIT;
	Tet__Pprof__ValueType types[3], period = TET__PPROF__VALUE_TYPE__INIT, *type_ptrs[3];
	Tet__Pprof__Sample *samples = calloc(n + 1, sizeof(*samples)), **sample_ptrs;
	int64_t *values = calloc(3 * (n + 1), sizeof(*values)), *comments = NULL;
	struct pp p = { .a = a };
	uint64_t ns_per_sample = w && w->profile_hz ? 1000000000ull / w->profile_hz : 0;
	int ret = 0;

	sample_ptrs = calloc(n + 1, sizeof(*sample_ptrs));
	p.labels = calloc(PP_LABELS_MAX * (n + 1), sizeof(*p.labels));
	p.label_ptrs = calloc(PP_LABELS_MAX * (n + 1), sizeof(*p.label_ptrs));
	comments = calloc(WHY_NOTES_MAX + 1, sizeof(*comments));
	str_id(&p.st, ""); /* string_table[0] */
	if (!samples || !values || !sample_ptrs || !p.labels || !p.label_ptrs || !comments ||
	    p.st.oom) {
		ret = -ENOMEM;
		goto out;
	}
	sample_types(&p, &prof, types, type_ptrs, &period, ns_per_sample);
	prof.time_nanos = (int64_t)m->wall_start.tv_sec * 1000000000 + m->wall_start.tv_nsec;
	prof.duration_nanos = m->end_ns > m->start_ns ? (int64_t)(m->end_ns - m->start_ns) : 0;
	for (size_t i = 0; i < n; i++) {
		const struct why_labeled *x = &w->labeled[i];
		Tet__Pprof__Sample *s = &samples[i];

		tet__pprof__sample__init(s);
		s->value = &values[3 * i];
		s->n_value = 3;
		if (x->blocked) {
			s->value[2] = (int64_t)x->ns;
		} else {
			s->value[0] = (int64_t)x->count;
			s->value[1] = (int64_t)(x->count * ns_per_sample);
		}
		sample_ptrs[i] = s;
		ret = sample_make(&p, s, x);
		if (ret)
			goto out;
	}
	prof.n_sample = n;
	prof.sample = sample_ptrs;
	for (size_t i = 0; w && i < w->nnotes; i++)
		comments[prof.n_comment++] = str_id(&p.st, w->notes[i]);
	prof.comment = comments;
	ret = pack_write(out, &prof, &p);
out:
	for (size_t i = 0; i < n && samples; i++)
		free(samples[i].location_id);
	free(p.locs);
	free(p.lines);
	free(p.fns);
	free(p.labels);
	free(p.label_ptrs);
	free(comments);
	free(samples);
	free(sample_ptrs);
	free(values);
	strtab_free(&p.st);
	return ret;
}

/* --mode sampling: one sample of entry e (values set by the caller). */
static int sampling_sample(struct pp *p, Tet__Pprof__Sample *s, const struct sp_profile *prof,
			   const struct sp_entry *e, char (*fr)[SP_FRAME], bool *any_cut)
{
	char kfr[SP_FRAMES_MAX][SA_KFRAME], buf[1200];
	const char *type = sa_type_name(prof->m, e->type);
	size_t nk = 0, nu = 0;
	bool cut = false;

	if (e->kstack >= 0 && prof->names.kernel)
		nk = prof->names.kernel(prof->names.ctx, e->kstack, kfr, SP_FRAMES_MAX / 2);
	if (prof->names.user)
		nu = prof->names.user(prof->names.ctx, e->ustack, fr, SP_FRAMES_MAX - nk, &cut);
	s->location_id = calloc(nk + nu + 2, sizeof(*s->location_id));
	if (!s->location_id)
		return -ENOMEM;
	for (size_t k = 0; k < nk; k++) { /* leaf first, as pprof */
		snprintf(buf, sizeof(buf), "[kernel] %s", kfr[k]);
		s->location_id[s->n_location_id++] = frame_loc(p, buf);
	}
	for (size_t k = 0; k < nu; k++)
		s->location_id[s->n_location_id++] = frame_loc(p, fr[k]);
	if (cut && nu) {
		s->location_id[s->n_location_id++] = frame_loc(p, SP_NO_FP);
		*any_cut = true;
	}
	if (!s->n_location_id)
		s->location_id[s->n_location_id++] = frame_loc(p, "[no stack]");
	s->label = &p->label_ptrs[p->nlabels];
	label(p, s, "future_type", text_sanitize(type, strnlen(type, 256), 0, buf, sizeof(buf)));
	snprintf(buf, sizeof(buf), "%u", e->tid);
	label(p, s, "thread", buf);
	label(p, s, "long_poll", e->long_poll ? "true" : "false");
	if (e->blocked && e->sysname)
		label(p, s, "syscall", e->sysname);
	return p->st.oom ? -ENOMEM : 0;
}

int report_sampling_pprof(FILE *out, const struct sp_profile *sp)
{
	size_t n = sp->n;
	Tet__Pprof__Profile prof = TET__PPROF__PROFILE__INIT;
	Tet__Pprof__ValueType types[3], period = TET__PPROF__VALUE_TYPE__INIT, *type_ptrs[3];
	Tet__Pprof__Sample *samples = calloc(n + 1, sizeof(*samples)), **sample_ptrs;
	int64_t *values = calloc(3 * (n + 1), sizeof(*values)), comment;
	char (*fr)[SP_FRAME] = malloc(SP_FRAMES_MAX * sizeof(*fr)), note[PATH_MAX + 300];
	struct pp p = { 0 };
	bool cut = false;
	int ret = 0;

	sample_ptrs = calloc(n + 1, sizeof(*sample_ptrs));
	p.labels = calloc(PP_LABELS_MAX * (n + 1), sizeof(*p.labels));
	p.label_ptrs = calloc(PP_LABELS_MAX * (n + 1), sizeof(*p.label_ptrs));
	str_id(&p.st, ""); /* string_table[0] */
	if (!samples || !values || !sample_ptrs || !p.labels || !p.label_ptrs || !fr || p.st.oom) {
		ret = -ENOMEM;
		goto out;
	}
	sample_types(&p, &prof, types, type_ptrs, &period, sp->m->period_ns);
	prof.time_nanos = sp->wall_start_ns;
	prof.duration_nanos = sp->end_ns > sp->start_ns ? (int64_t)(sp->end_ns - sp->start_ns) : 0;
	for (size_t i = 0; i < n; i++) {
		const struct sp_entry *e = &sp->v[i];
		Tet__Pprof__Sample *s = &samples[i];

		tet__pprof__sample__init(s);
		s->value = &values[3 * i];
		s->n_value = 3;
		if (e->blocked) {
			s->value[2] = (int64_t)e->ns;
		} else {
			s->value[0] = (int64_t)e->count;
			s->value[1] = (int64_t)(e->count * sp->m->period_ns);
		}
		sample_ptrs[i] = s;
		ret = sampling_sample(&p, s, sp, e, fr, &cut);
		if (ret)
			goto out;
	}
	prof.n_sample = n;
	prof.sample = sample_ptrs;
	if (cut) {
		char exe[PATH_MAX + 8];
		const char *x = sp->exe ? sp->exe : "the executable";

		snprintf(note, sizeof(note), "%s: built without frame pointers: a stack is its leaf's frames, then \"%s\" (the poll of its future_type was found by the stack scan; the frames between are not known)",
			 text_sanitize(x, strlen(x), 0, exe, sizeof(exe)), SP_NO_FP);
		comment = str_id(&p.st, note);
		prof.n_comment = 1;
		prof.comment = &comment;
	}
	ret = pack_write(out, &prof, &p);
out:
	for (size_t i = 0; i < n && samples; i++)
		free(samples[i].location_id);
	free(p.locs);
	free(p.lines);
	free(p.fns);
	free(p.labels);
	free(p.label_ptrs);
	free(samples);
	free(sample_ptrs);
	free(values);
	free(fr);
	strtab_free(&p.st);
	return ret;
}
