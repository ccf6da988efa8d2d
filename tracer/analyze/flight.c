// SPDX-License-Identifier: MIT
/*
 * flight.c — the flight recorder's memory, triggers and dump directory (flight.h).
 *
 * Store: a FIFO of 1 MiB chunks (mmap: a chunk that leaves the window goes back to the kernel,
 * so RSS follows the window). Each entry is a u32 word — the record's size, bit 31 set for a
 * packed spawn — a u32 of padding, then the record, padded to 8 bytes. A spawn record
 * (struct tet_spawn_rec, 600 bytes, mostly its string buffers) is packed to its fixed part and
 * the bytes actually copied. A chunk knows the newest timestamp it holds; the oldest chunk
 * goes when that falls out of a time window, or when the chunks exceed the memory bound.
 *
 * Spawns kept: (pid, task) → its packed spawn, from the spawn to the task's end, and then
 * until the end leaves the window (purged once a second). A dump replays those spawned before
 * its window and alive at its start, then the window itself.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer.h"
#include "flight.h"
#include "fsutil.h"
#include "seterr.h"
#include "units.h"

#define PACKED_SPAWN 0x80000000u
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

struct chunk {
	struct chunk *next;
	uint32_t used;             /* bytes of entries after the header */
	uint32_t nrec;
	uint64_t newest;           /* newest record timestamp */
	unsigned char data[];
};
#define CHUNK_DATA (FR_CHUNK_BYTES - offsetof(struct chunk, data))

struct kept_spawn {
	uint32_t pid;
	uint64_t key;              /* task id, or header pointer when there is none */
	uint64_t spawn_ts, end_ts; /* end_ts 0: alive */
	uint32_t size;             /* of rec, plus meta's when there is one */
	unsigned char *rec;        /* packed */
	struct tet_meta_rec *meta; /* its task_meta (name, size), NULL when none came */
};

struct fr_store {
	uint64_t window_ns, max_bytes;
	struct chunk *head, *tail, *spare;
	size_t nchunks;
	struct fr_stats st;
	struct kept_spawn *sp;     /* open addressing, linear probing; key pid 0 = empty */
	size_t sp_cap, sp_len;
	uint64_t sp_bytes, last_purge;
};

/* ---- spawn records: packed to their copied bytes ---- */
#define SPAWN_FIXED offsetof(struct tet_spawn_rec, data)

static size_t spawn_pack(const struct tet_spawn_rec *r, unsigned char *out)
{
	size_t f = r->file_copied > TET_FILE_MAX ? TET_FILE_MAX : r->file_copied;
	size_t t = r->type_copied > TET_TYPE_MAX ? TET_TYPE_MAX : r->type_copied;

	if (out) {
		memcpy(out, r, SPAWN_FIXED);
		memcpy(out + SPAWN_FIXED, r->data, f);
		memcpy(out + SPAWN_FIXED + f, r->data + TET_FILE_MAX, t);
	}
	return SPAWN_FIXED + f + t;
}

static void spawn_unpack(const unsigned char *in, struct tet_spawn_rec *r)
{
	size_t f, t;

	memset(r, 0, sizeof(*r));
	memcpy(r, in, SPAWN_FIXED);
	f = r->file_copied > TET_FILE_MAX ? TET_FILE_MAX : r->file_copied;
	t = r->type_copied > TET_TYPE_MAX ? TET_TYPE_MAX : r->type_copied;
	memcpy(r->data, in + SPAWN_FIXED, f);
	memcpy(r->data + TET_FILE_MAX, in + SPAWN_FIXED + f, t);
}

static bool is_spawn(const void *rec, size_t size)
{
	const struct tet_hdr *h = rec;

	return size >= sizeof(struct tet_spawn_rec) && h->type == TET_EV_SPAWN;
}

/* ---- chunks ---- */
static struct chunk *chunk_get(struct fr_store *s)
{
	struct chunk *c = s->spare;

	/* the chunk's pages made at once, not one page fault per 4 KiB as the records fill it
	 * (a saturated recorder spent 30 % of its CPU in those faults) */
	if (c) {
		s->spare = NULL;
		madvise(c, FR_CHUNK_BYTES, MADV_POPULATE_WRITE); /* older kernels: faults, as before */
	} else {
		c = mmap(NULL, FR_CHUNK_BYTES, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (c == MAP_FAILED)
			return NULL;
	}
	c->next = NULL;
	c->used = c->nrec = 0;
	c->newest = 0;
	s->nchunks++;
	return c;
}

static void chunk_put(struct fr_store *s, struct chunk *c)
{
	s->nchunks--;
	if (!s->spare) {
		/* the pages go back to the kernel now; the mapping is reused */
		madvise(c, FR_CHUNK_BYTES, MADV_DONTNEED);
		s->spare = c;
		return;
	}
	munmap(c, FR_CHUNK_BYTES);
}

static void drop_head(struct fr_store *s, bool by_size)
{
	struct chunk *c = s->head;

	s->head = c->next;
	if (!s->head)
		s->tail = NULL;
	s->st.evicted += c->nrec;
	s->st.records -= c->nrec;
	if (by_size && s->window_ns) {
		s->st.evicted_by_size = true;
		if (c->newest > s->st.evicted_by_size_until)
			s->st.evicted_by_size_until = c->newest;
	}
	chunk_put(s, c);
}

static uint64_t held(const struct fr_store *s)
{
	return (uint64_t)s->nchunks * FR_CHUNK_BYTES + s->sp_bytes;
}

struct fr_store *fr_store_new(uint64_t window_ns, uint64_t max_bytes)
{
	struct fr_store *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->window_ns = window_ns;
	s->max_bytes = max_bytes < FR_MIN_BYTES ? FR_MIN_BYTES : max_bytes;
	s->sp_cap = 1024;
	s->sp = calloc(s->sp_cap, sizeof(*s->sp));
	if (!s->sp) {
		free(s);
		return NULL;
	}
	return s;
}

static void sp_free_all(struct kept_spawn *v, size_t cap)
{
	for (size_t i = 0; i < cap; i++) {
		free(v[i].rec);
		free(v[i].meta);
	}
	free(v);
}

void fr_store_free(struct fr_store *s)
{
	if (!s)
		return;
	while (s->head)
		drop_head(s, false);
	if (s->spare)
		munmap(s->spare, FR_CHUNK_BYTES);
	sp_free_all(s->sp, s->sp_cap);
	free(s);
}

/* ---- spawns kept ---- */
static size_t sp_slot(const struct fr_store *s, uint32_t pid, uint64_t key)
{
	uint64_t x = (key ^ ((uint64_t)pid << 32)) * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(x >> 17) & (s->sp_cap - 1);

	while (s->sp[i].pid && (s->sp[i].pid != pid || s->sp[i].key != key))
		i = (i + 1) & (s->sp_cap - 1);
	return i;
}

/* Rebuilds the table into `cap` slots, leaving out the spawns whose task ended before
 * `ended_before` (0: none left out). */
static int sp_rebuild(struct fr_store *s, size_t cap, uint64_t ended_before)
{
	struct kept_spawn *old = s->sp;
	size_t ocap = s->sp_cap;

	s->sp = calloc(cap, sizeof(*s->sp));
	if (!s->sp) {
		s->sp = old;
		return -ENOMEM;
	}
	s->sp_cap = cap;
	s->sp_len = 0;
	for (size_t i = 0; i < ocap; i++) {
		struct kept_spawn *e = &old[i];

		if (!e->pid)
			continue;
		if (ended_before && e->end_ts && e->end_ts < ended_before) {
			s->sp_bytes -= e->size + sizeof(*e);
			free(e->rec);
			free(e->meta);
			continue;
		}
		s->sp[sp_slot(s, e->pid, e->key)] = *e;
		s->sp_len++;
	}
	free(old);
	return 0;
}

static void sp_add(struct fr_store *s, const struct tet_spawn_rec *r)
{
	uint64_t key = r->task_id ? r->task_id : r->header_ptr;
	size_t n = spawn_pack(r, NULL), i;
	struct kept_spawn *e;

	if (!r->h.pid || s->sp_len >= FR_SPAWNS_MAX || s->sp_bytes + n > s->max_bytes / 8 ||
	    ((s->sp_len + 1) * 2 > s->sp_cap && sp_rebuild(s, s->sp_cap * 2, 0))) {
		s->st.spawns_not_kept++;
		return;
	}
	i = sp_slot(s, r->h.pid, key);
	e = &s->sp[i];
	if (e->pid) { /* the key again (a reused header): the newer spawn replaces it */
		s->sp_bytes -= e->size + sizeof(*e);
		free(e->rec);
		free(e->meta);
		e->meta = NULL;
		s->sp_len--;
	}
	e->rec = malloc(n);
	if (!e->rec) {
		memset(e, 0, sizeof(*e));
		sp_rebuild(s, s->sp_cap, 0); /* keeps the probe chains whole */
		s->st.spawns_not_kept++;
		return;
	}
	spawn_pack(r, e->rec);
	e->pid = r->h.pid;
	e->key = key;
	e->spawn_ts = r->h.ts;
	e->end_ts = 0;
	e->size = (uint32_t)n;
	s->sp_len++;
	s->sp_bytes += n + sizeof(*e);
}

/* A task's task_meta goes with its kept spawn: a dump replaying the spawn gives its name too. */
static void sp_meta(struct fr_store *s, const struct tet_meta_rec *r)
{
	struct kept_spawn *e = &s->sp[sp_slot(s, r->h.pid, r->task_id)];

	if (!e->pid || e->meta || s->sp_bytes + sizeof(*r) > s->max_bytes / 8)
		return;
	e->meta = malloc(sizeof(*r));
	if (!e->meta)
		return;
	memcpy(e->meta, r, sizeof(*r));
	e->size += sizeof(*r);
	s->sp_bytes += sizeof(*r);
}

static void sp_end(struct fr_store *s, const struct tet_event_rec *r)
{
	uint64_t key = r->task_id ? r->task_id : r->header_ptr;
	struct kept_spawn *e = &s->sp[sp_slot(s, r->h.pid, key)];

	if (e->pid && !e->end_ts)
		e->end_ts = r->h.ts ? r->h.ts : 1;
}

int fr_store_add(struct fr_store *s, const void *rec, size_t size)
{
	const struct tet_hdr *h = rec;
	bool spawn = is_spawn(rec, size);
	size_t n = spawn ? spawn_pack(rec, NULL) : size, need = 8 + ((n + 7) & ~(size_t)7);
	struct chunk *c = s->tail;
	unsigned char *p;

	if (size < sizeof(*h) || need > CHUNK_DATA) {
		s->st.evicted++;
		return -EINVAL;
	}
	if (!c || c->used + need > CHUNK_DATA) {
		c = chunk_get(s);
		if (!c) {
			s->st.evicted++;
			return -ENOMEM;
		}
		if (s->tail)
			s->tail->next = c;
		else
			s->head = c;
		s->tail = c;
		/* the memory bound holds as the window grows */
		while (s->head != s->tail && held(s) > s->max_bytes)
			drop_head(s, true);
	}
	p = c->data + c->used;
	*(uint32_t *)p = (uint32_t)n | (spawn ? PACKED_SPAWN : 0);
	*(uint32_t *)(p + 4) = 0;
	if (spawn)
		spawn_pack(rec, p + 8);
	else
		memcpy(p + 8, rec, n);
	c->used += (uint32_t)need;
	c->nrec++;
	if (h->ts > c->newest)
		c->newest = h->ts;
	if (h->ts > s->st.newest_ts)
		s->st.newest_ts = h->ts;
	s->st.records++;
	s->st.added++;
	if (spawn)
		sp_add(s, rec);
	else if (h->type == TET_EV_TERMINATE && size >= sizeof(struct tet_event_rec))
		sp_end(s, rec);
	else if (h->type == TET_EV_META && size >= sizeof(struct tet_meta_rec) && s->sp_cap)
		sp_meta(s, rec);
	return 0;
}

static uint64_t oldest_ts(const struct fr_store *s)
{
	for (const struct chunk *c = s->head; c; c = c->next) {
		const unsigned char *p = c->data, *end = c->data + c->used;
		uint64_t min = UINT64_MAX;

		for (; p < end; p += 8 + (((*(const uint32_t *)p & ~PACKED_SPAWN) + 7) & ~7u)) {
			const struct tet_hdr *h = (const void *)(p + 8);

			if (h->ts && h->ts < min)
				min = h->ts;
		}
		if (min != UINT64_MAX)
			return min;
	}
	return 0;
}

void fr_store_trim(struct fr_store *s, uint64_t now)
{
	uint64_t edge = s->window_ns && now > s->window_ns ? now - s->window_ns : 0;

	if (s->window_ns)
		while (s->head && s->head != s->tail && s->head->newest < edge)
			drop_head(s, false);
	while (s->head && s->head != s->tail && held(s) > s->max_bytes)
		drop_head(s, true);
	if (now - s->last_purge >= NSEC_PER_SEC) {
		uint64_t before = s->window_ns ? edge : oldest_ts(s);

		s->last_purge = now;
		if (before)
			sp_rebuild(s, s->sp_cap, before); /* on -ENOMEM: purged next time */
	}
}

void fr_store_stats(const struct fr_store *s, struct fr_stats *st)
{
	*st = s->st;
	st->bytes = held(s);
	st->oldest_ts = oldest_ts(s);
	st->spawns_kept = s->sp_len;
}

static int by_spawn_ts(const void *a, const void *b)
{
	const struct kept_spawn *x = *(const struct kept_spawn *const *)a;
	const struct kept_spawn *y = *(const struct kept_spawn *const *)b;

	return x->spawn_ts < y->spawn_ts ? -1 : x->spawn_ts > y->spawn_ts;
}

uint64_t fr_store_replay(const struct fr_store *s, uint64_t from, uint64_t to, uint32_t pid,
			 fr_replay_fn fn, void *ctx, uint64_t *spawns_before)
{
	struct kept_spawn **v = calloc(s->sp_len ? s->sp_len : 1, sizeof(*v));
	struct tet_spawn_rec sr;
	uint64_t n = 0;
	size_t nv = 0;

	*spawns_before = 0;
	for (size_t i = 0; v && i < s->sp_cap; i++) {
		const struct kept_spawn *e = &s->sp[i];

		if (e->pid && (!pid || e->pid == pid) && e->spawn_ts < from &&
		    (!e->end_ts || e->end_ts >= from))
			v[nv++] = (struct kept_spawn *)e;
	}
	qsort(v, nv, sizeof(*v), by_spawn_ts);
	for (size_t i = 0; i < nv; i++) {
		spawn_unpack(v[i]->rec, &sr);
		fn(ctx, &sr, sizeof(sr));
		if (v[i]->meta)
			fn(ctx, v[i]->meta, sizeof(*v[i]->meta));
	}
	free(v);
	*spawns_before = nv;
	n = nv;
	for (const struct chunk *c = s->head; c; c = c->next) {
		const unsigned char *p = c->data, *end = c->data + c->used;

		while (p < end) {
			uint32_t w = *(const uint32_t *)p, sz = w & ~PACKED_SPAWN;
			const void *rec = p + 8;
			const struct tet_hdr *h = rec;

			p += 8 + ((sz + 7) & ~7u);
			if (h->ts < from || h->ts > to || (pid && h->pid != pid))
				continue;
			if (w & PACKED_SPAWN) {
				spawn_unpack(rec, &sr);
				fn(ctx, &sr, sizeof(sr));
			} else {
				fn(ctx, rec, sz);
			}
			n++;
		}
	}
	return n;
}

/* ---- triggers ---- */
int fr_trigger_parse(const char *s, struct fr_trigger *t, char *err, size_t len)
{
	char why[128];
	const char *gt = strchr(s, '>');

	memset(t, 0, sizeof(*t));
	t->spec = s;
	if (gt) {
		size_t n = (size_t)(gt - s);

		if (n == 4 && !strncmp(s, "poll", 4))
			t->kind = FR_TRIG_POLL;
		else if (n == 11 && !strncmp(s, "sched_delay", 11))
			t->kind = FR_TRIG_SCHED;
		else {
			seterr(err, len, "--trigger %s: no such figure (poll>D, sched_delay>D)", s);
			return -EINVAL;
		}
		if (parse_duration(gt + 1, 1, 3600 * NSEC_PER_SEC, &t->threshold_ns, why,
				   sizeof(why))) {
			seterr(err, len, "--trigger %s: %s", s, why);
			return -EINVAL;
		}
		return 0;
	}
	if (!strcmp(s, "exit")) {
		t->kind = FR_TRIG_EXIT;
		return 0;
	}
	if (!strcmp(s, "crash")) {
		t->kind = FR_TRIG_CRASH;
		return 0;
	}
	for (unsigned k = 0; k < AN_FINDING_KINDS; k++) {
		if (an_finding_triggers(k) && !strcmp(s, an_finding_name(k))) {
			t->kind = FR_TRIG_DETECTOR;
			t->detector = k;
			return 0;
		}
	}
	{
		char kinds[256];
		size_t n = 0;

		kinds[0] = 0;
		for (unsigned k = 0; k < AN_FINDING_KINDS; k++)
			if (an_finding_triggers(k))
				n += (size_t)snprintf(kinds + n, n < sizeof(kinds) ? sizeof(kinds) - n : 0,
						      "%s, ", an_finding_name(k));
		seterr(err, len, "--trigger %s: not a trigger (%spoll>D, sched_delay>D, exit, crash)", s,
		       kinds);
	}
	return -EINVAL;
}

/* ---- the dump directory ---- */
int fr_dir_check(const char *dir, char *err, size_t len)
{
	struct stat st;
	char *slashed;
	int e;

	if (stat(dir, &st)) {
		e = errno;
		snprintf(err, len, "--dump-dir %s: %s", dir, strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, len, "--dump-dir %s: %s", dir, strerror(ENOTDIR));
		return -ENOTDIR;
	}
	if (asprintf(&slashed, "%s/", dir) < 0) {
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	e = fs_can_create(slashed, strlen(slashed));
	free(slashed);
	if (e) {
		snprintf(err, len, "--dump-dir %s: cannot create files in it: %s", dir, strerror(-e));
		return e;
	}
	return 0;
}

struct dump_file {
	char *name;
	uint64_t size;
	struct timespec mtime;
};

static int by_mtime(const void *a, const void *b)
{
	const struct dump_file *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

uint64_t fr_dir_enforce(const char *dir, uint64_t max_bytes, const char *keep, size_t *nremoved)
{
	struct dump_file *v = NULL, *nv;
	size_t n = 0, cap = 0, klen = keep ? strlen(keep) : 0;
	uint64_t total = 0, removed = 0;
	struct dirent *de;
	regex_t re;
	DIR *d;
	int dfd;

	*nremoved = 0;
	if (regcomp(&re, "-[0-9]+-[0-9]{8}T[0-9]{6}\\.[0-9]{3}Z-", REG_EXTENDED | REG_NOSUB))
		return 0;
	d = opendir(dir);
	if (!d) {
		regfree(&re);
		return 0;
	}
	dfd = dirfd(d);
	while ((de = readdir(d))) {
		struct stat st;

		if (regexec(&re, de->d_name, 0, NULL, 0) ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		total += (uint64_t)st.st_size;
		if (klen && !strncmp(de->d_name, keep, klen) && de->d_name[klen] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		v[n].name = strdup(de->d_name);
		if (!v[n].name)
			break;
		v[n].size = (uint64_t)st.st_size;
		v[n].mtime = st.st_mtim;
		n++;
	}
	qsort(v, n, sizeof(*v), by_mtime);
	for (size_t i = 0; i < n && total > max_bytes; i++) {
		if (unlinkat(dfd, v[i].name, 0))
			continue;
		total -= v[i].size;
		removed += v[i].size;
		(*nremoved)++;
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	closedir(d);
	regfree(&re);
	return removed;
}

static void name_part(char *out, size_t len, const char *s)
{
	size_t i = 0;

	for (; *s && i + 1 < len && i < 64; s++)
		out[i++] = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
			   (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '+' || *s == '-' ?
			   *s : *s == '>' ? '+' : '_';
	out[i] = 0;
}

void fr_dump_name(char *buf, size_t len, const char *exe, uint32_t pid,
		  const struct timespec *wall, const char *trigger)
{
	const char *base = exe ? strrchr(exe, '/') : NULL;
	char e[80], t[80], tm[32];
	struct tm g;

	name_part(e, sizeof(e), base ? base + 1 : exe ? exe : "process");
	if (!*e || !strcmp(e, ".") || !strcmp(e, ".."))
		snprintf(e, sizeof(e), "process");
	name_part(t, sizeof(t), trigger);
	gmtime_r(&wall->tv_sec, &g);
	strftime(tm, sizeof(tm), "%Y%m%dT%H%M%S", &g);
	snprintf(buf, len, "%s-%u-%s.%03ldZ-%s", e, pid, tm, wall->tv_nsec / 1000000, t);
}
