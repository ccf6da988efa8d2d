// SPDX-License-Identifier: MIT
/*
 * why.c — why a poll was slow, for the reporters (why.h): the analyzer's stack aggregates
 * (ids in the BPF stack map) read from the map, symbolized (stacksym.c) and grouped per spawn
 * site and per finding; and the folded-stacks file (--stacks).
 *
 * A stack is the kernel part (leaf first) then the user part (leaf first, each address expanded
 * into its inlined calls). Frame pointers: a user stack whose executable was built without
 * them is cut to its leaf frame (the rest of a frame-pointer walk would be noise), and a note
 * says so; likewise a stripped executable (frames named module+offset).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "events.h"
#include "text.h"
#include "stacksym.h"
#include "syscall_names.h"
#include "why.h"

#define FRAMES_MAX 256      /* frames kept per stack (kernel + user, inlined ones included) */
#define INLINE_MAX 16

struct sym_cache {          /* one symbolized stack per (pid, ustack, kstack, syscall) */
	struct an_stack_key *keys;
	struct why_stack *stacks;
	size_t n, cap;
	uint32_t *idx;          /* open addressing: index + 1 into keys/stacks, 0 = empty */
	size_t idx_cap;         /* power of two, at least twice n */
};

struct why_build {
	struct why_report *w;
	int stack_fd;
	struct ss *ss;
	struct sym_cache cache;
	struct why_site **site_of;  /* by an_site.index */
	size_t nsite_of;
	size_t *lidx;               /* labeled_build: w->labeled[i]'s stack in cache.stacks (which
				     * may move while it grows) */
};

static void note(struct why_report *w, const char *fmt, const char *path)
{
	char *s;

	if (w->nnotes >= WHY_NOTES_MAX || asprintf(&s, fmt, path) < 0)
		return;
	for (size_t i = 0; i < w->nnotes; i++)
		if (!strcmp(w->notes[i], s)) {
			free(s);
			return;
		}
	w->notes[w->nnotes++] = s;
}

static const char *syscall_name(int64_t nr)
{
	if (nr < 0 || (uint64_t)nr >= sizeof(tet_syscall_names) / sizeof(tet_syscall_names[0]) ||
	    !tet_syscall_names[nr])
		return NULL;
	return tet_syscall_names[nr];
}

/* "src/pathology.rs" from ".../sample-service/src/pathology.rs" */
static const char *short_path(const char *p)
{
	const char *s = NULL, *q = p;

	while ((q = strstr(q, "/src/"))) {
		s = q + 1;
		q++;
	}
	return s ? s : p;
}

static char *frame_str(const struct ss_frame *f)
{
	char name[600], file[400], *out;
	const char *at = f->kernel ? NULL : strchr(f->func, '@'); /* symbol versions: nanosleep@GLIBC_2.2.5 */

	text_sanitize(f->func, at && at > f->func ? (size_t)(at - f->func) : strlen(f->func), 300,
			name, sizeof(name));
	if (f->kernel)
		return asprintf(&out, "[kernel] %s", name) < 0 ? NULL : out;
	if (f->file && f->line && f->user_code) {
		text_sanitize(short_path(f->file), strlen(short_path(f->file)), 160, file,
				sizeof(file));
		return asprintf(&out, "%s (%s:%u)", name, file, f->line) < 0 ? NULL : out;
	}
	return strdup(name);
}

static bool push_frame(struct why_stack *st, const struct ss_frame *f, size_t cap)
{
	char *s;

	if (st->nframes >= cap || !(s = frame_str(f)))
		return false;
	if (f->user_code && !f->kernel && st->user_leaf == UINT32_MAX)
		st->user_leaf = st->nframes;
	st->frames[st->nframes++] = s;
	return true;
}

static size_t read_ips(int fd, int32_t id, uint64_t *ips)
{
	size_t n = 0;

	if (id < 0 || fd < 0 || bpf_map_lookup_elem(fd, &id, ips))
		return 0;
	while (n < TET_STACK_DEPTH && ips[n])
		n++;
	return n;
}

/* Whether the module mapped at addr was built with frame pointers (noted when not). */
static bool has_fp(struct why_build *b, uint32_t pid, uint64_t addr)
{
	struct ss_module_info mi;

	if (ss_module_info(b->ss, pid, addr, &mi) || !mi.path)
		return false;
	/* the system's own libraries (glibc, the vDSO) are built without frame pointers on most
	 * distributions: nothing the user can change, and the walk resumes in the caller */
	if (!strncmp(mi.path, "/usr/lib", 8) || !strncmp(mi.path, "/lib", 4) || mi.path[0] == '[')
		return mi.frame_pointers;
	if (!mi.symtab && !mi.frame_pointers) {
		note(b->w, "%s: stripped (no symbol table): its frames are named by address, and stacks through its code end at its frame (whether it keeps frame pointers cannot be told)", mi.path);
		return false;
	}
	if (!mi.symtab)
		note(b->w, "%s: stripped (no symbol table): its frames are named by address", mi.path);
	if (!mi.frame_pointers)
		note(b->w, "%s: built without frame pointers: stacks through its code end at its frame (rebuild with -C force-frame-pointers=yes, as scripts/tokio-usdt-build does)", mi.path);
	return mi.frame_pointers;
}

/* The user part of a frame-pointer walk. A return address is only as good as the frame
 * pointer it was read through: the walk is followed past a frame only when that frame's code
 * keeps frame pointers. The leaf's caller is kept when it lands in such code (a leaf without
 * frame pointers — a libc system call wrapper — leaves the caller's frame pointer alone). */
static void user_part(struct why_build *b, struct why_stack *st, uint32_t pid,
		      const uint64_t *ips, size_t n)
{
	const struct ss_frame *fr[INLINE_MAX];
	bool prev_fp = false;

	for (size_t i = 0; i < n; i++) {
		bool fp = has_fp(b, pid, ips[i]);
		size_t k;

		if (i == 1 && !prev_fp && !fp)
			break;
		if (i > 1 && !prev_fp)
			break;
		k = ss_user(b->ss, pid, ips[i], i > 0, fr, INLINE_MAX);
		st->user_addresses++;
		for (size_t j = 0; j < k; j++)
			if (!push_frame(st, fr[j], FRAMES_MAX))
				return;
		prev_fp = fp;
	}
}

static int symbolize(struct why_build *b, const struct an_stack_key *k, struct why_stack *st)
{
	uint64_t ips[TET_STACK_DEPTH];
	const struct ss_frame *fr[1];
	size_t n;

	memset(st, 0, sizeof(*st));
	st->user_leaf = UINT32_MAX;
	st->frames = calloc(FRAMES_MAX, sizeof(*st->frames));
	if (!st->frames)
		return -ENOMEM;
	n = read_ips(b->stack_fd, k->kstack, ips);
	for (size_t i = 0; i < n; i++) {
		if (ss_kernel(b->ss, ips[i], fr, 1) && !push_frame(st, fr[0], FRAMES_MAX))
			break;
		if (fr[0]->func && strstr(fr[0]->func, "exc_page_fault"))
			st->syscall = "page fault";
	}
	if (!st->syscall && k->syscall >= 0)
		st->syscall = syscall_name(k->syscall);
	n = read_ips(b->stack_fd, k->ustack, ips);
	user_part(b, st, k->pid, ips, n);
	if (!st->nframes) {
		static const struct ss_frame none = { .func = "[no stack]" };

		push_frame(st, &none, FRAMES_MAX);
	}
	return 0;
}

static size_t key_hash(const struct an_stack_key *k)
{
	uint64_t h = ((uint64_t)k->pid << 32 | (uint32_t)k->ustack) * 0x9e3779b97f4a7c15ull;

	h ^= ((uint64_t)(uint32_t)k->kstack << 32 | (uint32_t)k->syscall) * 0xbf58476d1ce4e5b9ull;
	return (size_t)(h ^ (h >> 29));
}

static int cache_grow(struct sym_cache *c)
{
	size_t cap = c->cap ? c->cap * 2 : 64, icap = cap * 2;
	void *nk = realloc(c->keys, cap * sizeof(*c->keys));
	uint32_t *idx;

	if (!nk)
		return -ENOMEM;
	c->keys = nk;
	nk = realloc(c->stacks, cap * sizeof(*c->stacks));
	if (!nk)
		return -ENOMEM;
	c->stacks = nk;
	c->cap = cap;
	idx = calloc(icap, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < c->n; i++) {
		size_t j = key_hash(&c->keys[i]) & (icap - 1);

		while (idx[j])
			j = (j + 1) & (icap - 1);
		idx[j] = (uint32_t)(i + 1);
	}
	free(c->idx);
	c->idx = idx;
	c->idx_cap = icap;
	return 0;
}

/* The symbolized stack of k (made once, kept in the cache). */
static const struct why_stack *stack_of(struct why_build *b, const struct an_stack_key *k)
{
	struct sym_cache *c = &b->cache;
	size_t j;

	if (c->n == c->cap && cache_grow(c))
		return NULL;
	for (j = key_hash(k) & (c->idx_cap - 1); c->idx[j]; j = (j + 1) & (c->idx_cap - 1))
		if (!memcmp(&c->keys[c->idx[j] - 1], k, sizeof(*k)))
			return &c->stacks[c->idx[j] - 1];
	if (symbolize(b, k, &c->stacks[c->n]))
		return NULL;
	c->keys[c->n] = *k;
	c->idx[j] = (uint32_t)(c->n + 1);
	return &c->stacks[c->n++];
}

static struct why_site *site_slot(struct why_build *b, const struct an_site *s)
{
	return s && s->index < b->nsite_of ? b->site_of[s->index] : NULL;
}

/* A copy of a cached stack charged with count and ns (frames shared with the cache), into an
 * array sized beforehand. */
static void add_stack(struct why_stack *v, size_t *n, const struct why_stack *st, uint64_t count,
		      uint64_t ns)
{
	v[*n] = *st;
	v[*n].count = count;
	v[*n].ns = ns;
	(*n)++;
}

static int cmp_count(const void *x, const void *y)
{
	const struct why_stack *a = x, *b = y;

	return a->count < b->count ? 1 : a->count > b->count ? -1 : 0;
}

static int cmp_ns(const void *x, const void *y)
{
	const struct why_stack *a = x, *b = y;

	return a->ns < b->ns ? 1 : a->ns > b->ns ? -1 : 0;
}

static int cmp_site(const void *x, const void *y)
{
	const struct why_site *a = x, *b = y;
	uint64_t va = a->samples * 10000000 + a->blocked_ns, vb = b->samples * 10000000 + b->blocked_ns;

	return va < vb ? 1 : va > vb ? -1 : 0;
}

/* The sites with samples or blocked time, each with room for its stacks. */
static int sites_make(struct why_build *b, const struct analyzer *a)
{
	const struct an_site *const *sites;
	const struct an_stack *v;
	size_t ns = an_sites(a, &sites), n;
	struct why_report *w = b->w;

	w->sites = calloc(ns ? ns : 1, sizeof(*w->sites));
	for (size_t i = 0; i < ns; i++)
		if (sites[i]->index >= b->nsite_of)
			b->nsite_of = sites[i]->index + 1;
	b->site_of = calloc(b->nsite_of ? b->nsite_of : 1, sizeof(*b->site_of));
	if (!w->sites || !b->site_of)
		return -ENOMEM;
	for (size_t i = 0; i < ns; i++) {
		const struct an_site *s = sites[i];
		struct why_site *ws;
		uint64_t off = s->cpu_wait_ns + s->blocked_ns;

		if (!s->samples && !s->blocked_ns)
			continue;
		ws = &w->sites[w->nsites++];
		b->site_of[s->index] = ws;
		ws->site = s;
		ws->samples = s->samples;
		ws->preempted_ns = s->cpu_wait_ns;
		ws->stolen_ns = s->stolen_ns;
		ws->blocked_ns = s->blocked_ns;
		ws->on_cpu_ns = s->busy_ns > off ? s->busy_ns - off : 0;
	}
	n = an_cpu_stacks(a, &v); /* count, then allocate */
	for (size_t i = 0; i < n; i++)
		if (site_slot(b, v[i].site))
			site_slot(b, v[i].site)->ncpu++;
	n = an_blocked_stacks(a, &v);
	for (size_t i = 0; i < n; i++)
		if (site_slot(b, v[i].site))
			site_slot(b, v[i].site)->nblocked++;
	for (size_t i = 0; i < w->nsites; i++) {
		struct why_site *ws = &w->sites[i];

		ws->cpu = calloc(ws->ncpu ? ws->ncpu : 1, sizeof(*ws->cpu));
		ws->blocked = calloc(ws->nblocked ? ws->nblocked : 1, sizeof(*ws->blocked));
		if (!ws->cpu || !ws->blocked)
			return -ENOMEM;
		ws->ncpu = ws->nblocked = 0;
	}
	return 0;
}

static int sites_build(struct why_build *b, const struct analyzer *a)
{
	const struct an_stack *v;
	struct why_report *w = b->w;
	size_t n;
	int ret = sites_make(b, a);

	if (ret)
		return ret;
	n = an_cpu_stacks(a, &v);
	for (size_t i = 0; i < n; i++) {
		struct why_site *ws = site_slot(b, v[i].site);
		const struct why_stack *st = ws ? stack_of(b, &v[i].k) : NULL;

		if (st)
			add_stack(ws->cpu, &ws->ncpu, st, v[i].count, 0);
	}
	n = an_blocked_stacks(a, &v);
	for (size_t i = 0; i < n; i++) {
		struct why_site *ws = site_slot(b, v[i].site);
		const struct why_stack *st = ws ? stack_of(b, &v[i].k) : NULL;

		if (st)
			add_stack(ws->blocked, &ws->nblocked, st, v[i].count, v[i].ns);
	}
	for (size_t i = 0; i < w->nsites; i++) {
		qsort(w->sites[i].cpu, w->sites[i].ncpu, sizeof(struct why_stack), cmp_count);
		qsort(w->sites[i].blocked, w->sites[i].nblocked, sizeof(struct why_stack), cmp_ns);
	}
	qsort(w->sites, w->nsites, sizeof(*w->sites), cmp_site);
	return 0;
}

static int cmp_hot(const void *x, const void *y)
{
	const struct why_hot *a = x, *b = y;

	return a->samples < b->samples ? 1 : a->samples > b->samples ? -1 : 0;
}

/* The function of a frame string: "f (src/x.rs:12)" → "f" (n bytes). */
static size_t fn_len(const char *f)
{
	size_t n = strlen(f);
	const char *p = n && f[n - 1] == ')' ? strstr(f, " (") : NULL;

	while (p && strstr(p + 2, " ("))
		p = strstr(p + 2, " (");
	return p ? (size_t)(p - f) : n;
}

/* The hottest functions of the program's own code among finding i's samples: the innermost
 * such frame of each sample, grouped by function (its lines together). */
static void finding_hot(struct why_build *b, const struct analyzer *a, size_t i,
			struct why_finding *wf)
{
	const struct an_stack *v;
	size_t n = an_finding_stacks(a, i, &v), nh = 0;
	struct why_hot *h = calloc(n ? n : 1, sizeof(*h));

	if (!h)
		return;
	for (size_t j = 0; j < n; j++) {
		const struct why_stack *st = stack_of(b, &v[j].k);
		const char *f;
		size_t k, len;

		wf->samples += v[j].count;
		if (!st)
			continue;
		f = st->user_leaf != UINT32_MAX ? st->frames[st->user_leaf] : st->frames[0];
		len = fn_len(f);
		for (k = 0; k < nh; k++)
			if (fn_len(h[k].frame) == len && !strncmp(h[k].frame, f, len))
				break;
		if (k == nh)
			h[nh++].frame = f;
		h[k].samples += v[j].count;
	}
	qsort(h, nh, sizeof(*h), cmp_hot);
	for (size_t k = 0; k < nh && k < WHY_HOT_MAX; k++) {
		wf->hot[k] = h[k];
		wf->hot[k].frame = strndup(h[k].frame, fn_len(h[k].frame));
		wf->hot[k].share = wf->samples ? (double)h[k].samples / (double)wf->samples : 0;
	}
	wf->nhot = nh < WHY_HOT_MAX ? nh : WHY_HOT_MAX;
	free(h);
}

static int findings_build(struct why_build *b, const struct analyzer *a)
{
	const struct an_finding *f;
	size_t n = an_findings(a, &f);
	struct why_report *w = b->w;

	w->findings = calloc(n ? n : 1, sizeof(*w->findings));
	if (!w->findings)
		return -ENOMEM;
	w->nfindings = n;
	for (size_t i = 0; i < n; i++) {
		struct why_finding *wf = &w->findings[i];

		if (!f[i].split)
			continue;
		wf->known = true;
		wf->on_cpu_ns = f[i].on_cpu_ns;
		wf->preempted_ns = f[i].cpu_wait_ns;
		wf->stolen_ns = f[i].stolen_ns;
		wf->blocked_ns = f[i].blocked_ns;
		if (f[i].blocked_at_ns && (f[i].blocked_at.ustack >= 0 || f[i].blocked_at.kstack >= 0 ||
					   f[i].blocked_at.syscall >= 0)) {
			const struct why_stack *st = stack_of(b, &f[i].blocked_at);

			if (st && (wf->blocked_top = malloc(sizeof(*st)))) {
				struct why_stack *c = (struct why_stack *)wf->blocked_top;

				*c = *st;
				c->count = 1;
				c->ns = f[i].blocked_at_ns;
			}
		}
		finding_hot(b, a, i, wf);
		/* The profile checks the split: a poll on CPU for ten sampling periods with not one
		 * sample in it was not on CPU. Its sleep or preemption was not recorded (seen: one
		 * 50 ms sleep in ~150, the BPF side's record of it missing; why is not known), or
		 * the host did not run its virtual CPU. The split stays as measured; it is flagged. */
		if (w->profile_hz && !wf->samples &&
		    wf->on_cpu_ns / 1000 * w->profile_hz >= WHY_DOUBT_PERIODS * 1000000ull) {
			wf->doubtful = true;
			w->splits_doubtful++;
		}
	}
	return 0;
}

/* w->labeled: each labeled stack of the analyzer whose stack sites_build kept, then what is
 * left of each such stack (charged outside the labels' bound, or with labels off). */
static void labeled_add(struct why_build *b, const struct an_stack *st, bool blocked,
			const struct an_lstack *l, uint64_t count, uint64_t ns)
{
	struct why_report *w = b->w;
	const struct why_stack *ws = site_slot(b, st->site) ? stack_of(b, &st->k) : NULL;

	if (!ws || !count)
		return;
	b->lidx[w->nlabeled] = (size_t)(ws - b->cache.stacks);
	w->labeled[w->nlabeled++] = (struct why_labeled){
		.stack = ws, .site = st->site, .blocked = blocked, .labeled = l != NULL,
		.long_poll = l && l->long_poll, .worker = l ? l->worker : -1,
		.name = l ? l->name : 0, .count = count, .ns = ns };
}

static int labeled_build(struct why_build *b, const struct analyzer *a)
{
	const struct an_stack *cv, *bv;
	const struct an_lstack *lv;
	size_t nc = an_cpu_stacks(a, &cv), nb = an_blocked_stacks(a, &bv);
	size_t nl = an_labeled_stacks(a, &lv);
	uint64_t *rc = calloc(nc + nb + 1, sizeof(*rc)), *rn = calloc(nc + nb + 1, sizeof(*rn));
	struct why_report *w = b->w;

	w->labeled = calloc(nl + nc + nb + 1, sizeof(*w->labeled));
	b->lidx = calloc(nl + nc + nb + 1, sizeof(*b->lidx));
	if (!rc || !rn || !w->labeled || !b->lidx) {
		free(rc);
		free(rn);
		free(b->lidx);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nc + nb; i++) {
		rc[i] = i < nc ? cv[i].count : bv[i - nc].count;
		rn[i] = i < nc ? cv[i].ns : bv[i - nc].ns;
	}
	for (size_t i = 0; i < nl; i++) {
		size_t j = lv[i].blocked ? nc + lv[i].stack : lv[i].stack;

		if ((lv[i].blocked ? lv[i].stack >= nb : lv[i].stack >= nc) || rc[j] < lv[i].count)
			continue;
		labeled_add(b, lv[i].blocked ? &bv[lv[i].stack] : &cv[lv[i].stack], lv[i].blocked,
			    &lv[i], lv[i].count, lv[i].ns);
		rc[j] -= lv[i].count;
		rn[j] -= lv[i].ns < rn[j] ? lv[i].ns : rn[j];
	}
	for (size_t i = 0; i < nc + nb; i++)
		labeled_add(b, i < nc ? &cv[i] : &bv[i - nc], i >= nc, NULL, rc[i], rn[i]);
	for (size_t i = 0; i < w->nlabeled; i++)
		w->labeled[i].stack = &b->cache.stacks[b->lidx[i]];
	free(b->lidx);
	free(rc);
	free(rn);
	return 0;
}

int why_build(struct why_report *w, const struct analyzer *a, int stack_fd, struct ss *ss,
	      const struct tet_counters *counters)
{
	struct why_build b = { .w = w, .stack_fd = stack_fd, .ss = ss };
	const struct an_totals *t = an_totals(a);
	int ret;

	w->samples = t->samples;
	w->samples_in_polls = t->samples_in_polls;
	w->offcpu_periods = t->offcpu_in_polls;
	w->stolen_periods = t->stolen;
	w->stolen_ns = t->stolen_ns;
	w->stack_errors = counters ? counters->stack_errors : 0;
	w->offcpu_lost = counters ? counters->offcpu_drops : 0;
	w->samples_lost = counters ? counters->sample_drops : 0;
	ret = sites_build(&b, a);
	if (!ret)
		ret = findings_build(&b, a);
	if (!ret && an_get_opts(a)->stack_labels) /* --pprof's per-task stacks: only for it */
		ret = labeled_build(&b, a);
	w->priv_stacks = b.cache.stacks;
	w->priv_nstacks = b.cache.n;
	free(b.cache.keys);
	free(b.cache.idx);
	free(b.site_of);
	return ret;
}

void why_free(struct why_report *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nsites; i++) {
		free(w->sites[i].cpu);
		free(w->sites[i].blocked);
	}
	free(w->sites);
	for (size_t i = 0; i < w->nfindings; i++) {
		free((void *)w->findings[i].blocked_top);
		for (size_t k = 0; k < w->findings[i].nhot; k++)
			free((void *)w->findings[i].hot[k].frame);
	}
	free(w->findings);
	free(w->labeled);
	for (size_t i = 0; i < w->priv_nstacks; i++) {
		for (uint32_t j = 0; j < w->priv_stacks[i].nframes; j++)
			free(w->priv_stacks[i].frames[j]);
		free(w->priv_stacks[i].frames);
	}
	free(w->priv_stacks);
	for (size_t i = 0; i < w->nnotes; i++)
		free((void *)w->notes[i]);
	memset(w, 0, sizeof(*w));
}
