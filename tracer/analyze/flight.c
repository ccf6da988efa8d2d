// SPDX-License-Identifier: MIT
/*
 * flight.c — the flight recorder's memory, triggers and dump directory (flight.h).
 *
 * Store: a FIFO of 2 MiB chunks (mmap: a chunk that leaves the window goes back to the kernel,
 * so RSS follows the window). Each entry is a u32 word — the record's size, bit 31 set for a
 * packed spawn — a u32 kind (a record as the analyzer takes it, a raw batch, a clock pair),
 * then the record, padded to 8 bytes. A spawn record (struct tet_spawn_rec, 600 bytes, mostly
 * its string buffers) is packed to its fixed part and the bytes actually copied. A raw batch is
 * the ring record as BPF wrote it (head and records, ~16 bytes an event), walked once for what
 * the spawns kept need. A chunk knows the newest timestamp it holds and the last two clock
 * pairs before it; the oldest chunk goes when that falls out of a time window, or when the
 * chunks exceed the memory bound.
 *
 * Spawns kept: (pid, task) → its packed spawn (or its raw spawn record, with the thread and
 * the batch clock), from the spawn to the task's end, and then until the end leaves the window
 * (purged once a second). Raw spawns name their strings by address: the strings of the raw
 * batches are kept by (pid, address), bounded, as string records. A dump replays those spawned
 * before its window and alive at its start, then the window itself; raw ones as synthetic
 * batches of their threads, for a decoder of their own.
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
#include "batch.h"
#include "flight.h"
#include "fsutil.h"
#include "seterr.h"
#include "units.h"

#define PACKED_SPAWN 0x80000000u
#define FR_SPARES 4 /* chunks out of the window kept for reuse (8 MiB) */
#define EARLY_KEEP_NS (10 * NSEC_PER_SEC) /* a task's end waits this long for its spawn */
enum { ENT_REC, ENT_BATCH = FR_RAW_BATCH, ENT_PAIR = FR_RAW_PAIR, ENT_SWEEP = FR_RAW_SWEEP };
#define MASK56 ((1ull << 56) - 1)
#define RAW_SPAWN_WORDS 7
#define STR_MAX_KEPT 65536u         /* strings of raw batches kept (and 1/16 of the memory) */
#include <stdint.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

struct chunk {
	struct chunk *next;
	uint32_t used;             /* bytes of entries after the header */
	uint32_t nrec;
	uint64_t newest;           /* newest record timestamp */
	uint64_t pairs[2][2];      /* the store's last two clock pairs when it began (0: none) */
	unsigned char data[];
};
#define CHUNK_DATA (FR_CHUNK_BYTES - offsetof(struct chunk, data))

struct kept_spawn {
	uint32_t pid;
	uint64_t key;              /* task id, or header pointer when there is none */
	uint64_t spawn_ts, end_ts; /* end_ts 0: alive */
	uint32_t size;             /* of rec, plus meta's when there is one */
	uint32_t tid, meta_size;
	bool raw;                  /* rec: the 7 words of a batch's spawn record; meta: its meta
				    * record's words */
	uint8_t clock;             /* raw: its batch's clock */
	unsigned char *rec;        /* packed */
	void *meta;                /* its task_meta (struct tet_meta_rec; raw: the record's words),
				    * NULL when none came */
};

/* A thread of the raw batches, for the sweeps. */
struct rthread {
	uint32_t pid, tid;         /* pid 0: an empty slot */
	uint64_t buf, next_seq;
	uint64_t last_ns;          /* its last batch or sweep kept (CLOCK_MONOTONIC) */
	uint64_t next_try;         /* no sweep before this */
	uint64_t swept_open;       /* of the last sweep kept: a hash of the polls in progress */
	uint32_t swept_len;        /* … and its bytes of records (of batch next_seq) */
	bool exited, swept;
};
#define THR_CAP (2 * FR_THREADS_MAX)
#define THR_FORGET_NS (600 * NSEC_PER_SEC) /* a thread silent this long is forgotten when full */

/* A string of a raw batch, as its string record: n | kind << 56, address, the bytes. */
struct kstr {
	uint32_t pid, nwords;
	uint64_t w[];
};

struct fr_store {
	uint64_t window_ns, max_bytes;
	struct chunk *head, *tail, *spare; /* spare: chunks kept for reuse, made */
	size_t nspare;
	size_t nchunks;
	struct fr_stats st;
	struct kept_spawn *sp;     /* open addressing, linear probing; key pid 0 = empty */
	size_t sp_cap, sp_len;
	size_t sp_early;           /* of sp_len: ends waiting for their spawn (sp_end) */
	uint64_t early_before;     /* … those older than this go at the next rebuild */
	uint64_t sp_bytes, last_purge;
	struct kstr **str;         /* open addressing by (pid, address), linear probing */
	size_t str_cap, str_len;
	uint64_t str_bytes;
	uint64_t pair[2][2];       /* the last two clock pairs (older first) */
	uint64_t first_pair[2][2]; /* the capture's first two */
	unsigned nfirst;
	struct rthread *thr;       /* THR_CAP slots, open addressing (NULL until a raw batch) */
	uint32_t *thr_ix;          /* the slots in use, thr_len of them (a sweep scans these) */
	size_t thr_len;
	/* the follower (fr_store_follow): the chunk it reads (NULL: the head, from its start)
	 * and where in it; moved: it lost its chunk, the new one's clock pairs come first */
	bool fol_on, fol_moved;
	const struct chunk *fol_c;
	uint32_t fol_off;
	struct fr_follow_stats fol;
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
/* A chunk's memory, aligned to its size so the kernel may back it with one transparent huge
 * page, made at once: on this project's VMs a fault per 4 KiB page held a saturated recorder
 * to ~0.4 GB/s of fresh memory (30 % of its CPU, perf), one 2 MiB page is made at ~6-14 GB/s
 * (MADV_POPULATE_WRITE after MADV_HUGEPAGE; without THP or before Linux 5.14 the pages come
 * as before, one fault at a time). */
static void chunk_make(void *c)
{
	madvise(c, FR_CHUNK_BYTES, MADV_HUGEPAGE);
	madvise(c, FR_CHUNK_BYTES, MADV_POPULATE_WRITE);
}

static struct chunk *chunk_map(void)
{
	const uintptr_t sz = FR_CHUNK_BYTES;
	char *p = mmap(NULL, 2 * sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *a;

	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + sz - 1) & ~(sz - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	munmap(a + sz, (size_t)(p + 2 * sz - (a + sz)));
	chunk_make(a);
	return (struct chunk *)a;
}

static struct chunk *chunk_get(struct fr_store *s)
{
	struct chunk *c = s->spare;

	if (c) {
		s->spare = c->next;
		s->nspare--;
	} else {
		c = chunk_map();
		if (!c)
			return NULL;
	}
	c->next = NULL;
	c->used = c->nrec = 0;
	c->newest = 0;
	memcpy(c->pairs, s->pair, sizeof(c->pairs));
	s->nchunks++;
	return c;
}

/* A chunk out of the window: kept whole for the next (a full window in steady state reuses its
 * memory instead of having the kernel clear new pages), up to FR_SPARES; past them, unmapped. */
static void chunk_put(struct fr_store *s, struct chunk *c)
{
	s->nchunks--;
	if (s->nspare < FR_SPARES) {
		c->next = s->spare;
		s->spare = c;
		s->nspare++;
		return;
	}
	munmap(c, FR_CHUNK_BYTES);
}

static void drop_head(struct fr_store *s, bool by_size)
{
	struct chunk *c = s->head;

	/* the follower had not read all of it: it goes on at the next chunk, what it missed
	 * counted (a chunk it had finished is no loss) */
	if (s->fol_on && (!s->fol_c || s->fol_c == c)) {
		uint32_t off = s->fol_c ? s->fol_off : 0;

		if (off < c->used) {
			for (uint32_t at = off; at < c->used;) { /* entry heads: size, kind */
				const uint32_t *e = (const uint32_t *)(c->data + at);

				s->fol.skipped_batches += e[1] == ENT_BATCH;
				at += 8 + (((e[0] & ~PACKED_SPAWN) + 7) & ~7u);
			}
			s->fol.skipped_bytes += c->used - off;
			s->fol.skipped_chunks++;
			if (c->newest > s->fol.skipped_until)
				s->fol.skipped_until = c->newest;
			s->fol_moved = true;
		}
		s->fol_c = NULL;
		s->fol_off = 0;
	}
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
	return (uint64_t)s->nchunks * FR_CHUNK_BYTES + s->sp_bytes + s->str_bytes;
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
	while (s->spare) {
		struct chunk *c = s->spare;

		s->spare = c->next;
		munmap(c, FR_CHUNK_BYTES);
	}
	sp_free_all(s->sp, s->sp_cap);
	for (size_t i = 0; i < s->str_cap; i++)
		free(s->str[i]);
	free(s->str);
	free(s->thr);
	free(s->thr_ix);
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
	s->sp_len = s->sp_early = 0;
	for (size_t i = 0; i < ocap; i++) {
		struct kept_spawn *e = &old[i];

		if (!e->pid)
			continue;
		if ((ended_before && e->end_ts && e->end_ts < ended_before) ||
		    (!e->rec && e->end_ts < s->early_before)) {
			s->sp_bytes -= e->size + sizeof(*e);
			free(e->rec);
			free(e->meta);
			continue;
		}
		s->sp[sp_slot(s, e->pid, e->key)] = *e;
		s->sp_len++;
		s->sp_early += !e->rec;
	}
	free(old);
	return 0;
}

/* A spawn of (pid, key) kept, n bytes at rec; NULL when it cannot be (counted). */
static struct kept_spawn *sp_insert(struct fr_store *s, uint32_t pid, uint64_t key, size_t n,
				    uint64_t ts)
{
	struct kept_spawn *e;
	uint64_t ended = 0;

	if (!pid || s->sp_len >= FR_SPAWNS_MAX || s->sp_bytes + n > s->max_bytes / 8 ||
	    ((s->sp_len + 1) * 2 > s->sp_cap && sp_rebuild(s, s->sp_cap * 2, 0))) {
		s->st.spawns_not_kept++;
		return NULL;
	}
	e = &s->sp[sp_slot(s, pid, key)];
	if (e->pid) { /* the key again (a reused header): the newer spawn replaces it */
		if (!e->rec) { /* … or the task's end, which came first (sp_end) */
			ended = e->end_ts;
			s->sp_early--;
		}
		s->sp_bytes -= e->size + sizeof(*e);
		free(e->rec);
		free(e->meta);
		s->sp_len--;
	}
	memset(e, 0, sizeof(*e));
	e->end_ts = ended;
	e->rec = malloc(n);
	if (!e->rec) {
		sp_rebuild(s, s->sp_cap, 0); /* keeps the probe chains whole */
		s->st.spawns_not_kept++;
		return NULL;
	}
	e->pid = pid;
	e->key = key;
	e->spawn_ts = ts;
	e->size = (uint32_t)n;
	s->sp_len++;
	s->sp_bytes += n + sizeof(*e);
	return e;
}

static void sp_add(struct fr_store *s, const struct tet_spawn_rec *r)
{
	struct kept_spawn *e = sp_insert(s, r->h.pid, r->task_id ? r->task_id : r->header_ptr,
					 spawn_pack(r, NULL), r->h.ts);

	if (e)
		spawn_pack(r, e->rec);
}

/* A task's task_meta goes with its kept spawn: a dump replaying the spawn gives its name too. */
static void sp_meta(struct fr_store *s, uint32_t pid, uint64_t id, const void *m, size_t n)
{
	struct kept_spawn *e = &s->sp[sp_slot(s, pid, id)];

	if (!e->pid || !e->rec || e->meta || s->sp_bytes + n > s->max_bytes / 8)
		return;
	e->meta = malloc(n);
	if (!e->meta)
		return;
	memcpy(e->meta, m, n);
	e->meta_size = (uint32_t)n;
	e->size += (uint32_t)n;
	s->sp_bytes += n;
}

/* A task's end. Raw batches come in the order threads flush them: a task's end may come before
 * its spawn (the spawning thread flushed later): then it waits for the spawn (`early`), as an
 * entry without a record, for EARLY_KEEP_NS at most (the end of a task spawned before the
 * capture waits for nothing), at most a quarter of the table. */
static void sp_end(struct fr_store *s, uint32_t pid, uint64_t key, uint64_t ts, bool early)
{
	struct kept_spawn *e = &s->sp[sp_slot(s, pid, key)];

	if (!e->pid && early && pid && s->sp_early < FR_SPAWNS_MAX / 4 &&
	    s->sp_len < FR_SPAWNS_MAX &&
	    ((s->sp_len + 1) * 2 <= s->sp_cap || !sp_rebuild(s, s->sp_cap * 2, 0))) {
		e = &s->sp[sp_slot(s, pid, key)];
		e->pid = pid;
		e->key = key;
		s->sp_len++;
		s->sp_early++;
		s->sp_bytes += sizeof(*e);
	}
	if (e->pid && !e->end_ts)
		e->end_ts = ts ? ts : 1;
}

/* Room at the tail for an entry of n bytes (a new chunk when the last is full) standing for
 * nrec records at time ts: where its bytes go, or NULL (counted as evicted; *err why). */
static unsigned char *entry_put(struct fr_store *s, uint32_t word, uint32_t kind, size_t n,
				uint64_t nrec, uint64_t ts, int *err)
{
	size_t need = 8 + ((n + 7) & ~(size_t)7);
	struct chunk *c = s->tail;
	unsigned char *p;

	*err = -EINVAL;
	if (need > CHUNK_DATA)
		goto evicted;
	if (!c || c->used + need > CHUNK_DATA) {
		*err = -ENOMEM;
		c = chunk_get(s);
		if (!c)
			goto evicted;
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
	((uint32_t *)p)[0] = word;
	((uint32_t *)p)[1] = kind;
	c->used += (uint32_t)need;
	c->nrec += (uint32_t)nrec;
	if (ts > c->newest)
		c->newest = ts;
	if (ts > s->st.newest_ts)
		s->st.newest_ts = ts;
	s->st.records += nrec;
	s->st.added += nrec;
	return p + 8;
evicted:
	s->st.evicted += nrec;
	return NULL;
}

int fr_store_add(struct fr_store *s, const void *rec, size_t size)
{
	const struct tet_hdr *h = rec;
	bool spawn = is_spawn(rec, size);
	size_t n = spawn ? spawn_pack(rec, NULL) : size;
	unsigned char *p;
	int err;

	if (size < sizeof(*h)) {
		s->st.evicted++;
		return -EINVAL;
	}
	p = entry_put(s, (uint32_t)n | (spawn ? PACKED_SPAWN : 0), ENT_REC, n, 1, h->ts, &err);
	if (!p)
		return err;
	if (spawn)
		spawn_pack(rec, p);
	else
		memcpy(p, rec, n);
	if (spawn)
		sp_add(s, rec);
	else if (h->type == TET_EV_TERMINATE && size >= sizeof(struct tet_event_rec))
		sp_end(s, h->pid, ((const struct tet_event_rec *)rec)->task_id ?
			   ((const struct tet_event_rec *)rec)->task_id :
			   ((const struct tet_event_rec *)rec)->header_ptr, h->ts, false);
	else if (h->type == TET_EV_META && size >= sizeof(struct tet_meta_rec) && s->sp_cap)
		sp_meta(s, h->pid, ((const struct tet_meta_rec *)rec)->task_id, rec,
			sizeof(struct tet_meta_rec));
	return 0;
}

/* ---- raw batches ---- */
static size_t str_slot(const struct fr_store *s, uint32_t pid, uint64_t addr)
{
	uint64_t x = (addr ^ ((uint64_t)pid << 40)) * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(x >> 17) & (s->str_cap - 1);

	while (s->str[i] && (s->str[i]->pid != pid || s->str[i]->w[1] != addr))
		i = (i + 1) & (s->str_cap - 1);
	return i;
}

static int str_grow(struct fr_store *s)
{
	size_t ocap = s->str_cap, cap = ocap ? ocap * 2 : 1024;
	struct kstr **old = s->str;

	s->str = calloc(cap, sizeof(*s->str));
	if (!s->str) {
		s->str = old;
		return -ENOMEM;
	}
	s->str_cap = cap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i])
			s->str[str_slot(s, old[i]->pid, old[i]->w[1])] = old[i];
	free(old);
	return 0;
}

/* A string record (nw words at w) of process pid, kept the first time its address is met (a
 * spawn site's file and type name are constants of the process). */
static void str_put(struct fr_store *s, uint32_t pid, const uint64_t *w, size_t nw)
{
	size_t bytes = sizeof(struct kstr) + nw * 8, i;
	struct kstr *k;

	if (s->str_cap && s->str[str_slot(s, pid, w[1])])
		return;
	if (s->str_len >= STR_MAX_KEPT || s->str_bytes + bytes > s->max_bytes / 16 ||
	    ((s->str_len + 1) * 2 > s->str_cap && str_grow(s)) || !(k = malloc(bytes))) {
		s->st.strings_not_kept++;
		return;
	}
	k->pid = pid;
	k->nwords = (uint32_t)nw;
	memcpy(k->w, w, nw * 8);
	i = str_slot(s, pid, w[1]);
	s->str[i] = k;
	s->str_len++;
	s->str_bytes += bytes;
}

/* The records of a raw batch: what the spawns kept need noted, its events counted. */
static uint64_t raw_walk(struct fr_store *s, const struct tet_batch_rec *r,
			 const struct tet_batch_head *hd, size_t from_word)
{
	const uint64_t *w = (const uint64_t *)(r->data + sizeof(*hd));
	size_t n = hd->len / 8, k;
	uint64_t ev = 0;
	struct kept_spawn *e;

	for (size_t i = from_word; i < n; i += k) {
		unsigned kind = (unsigned)(w[i] >> 56) & 0xf;

		/* most records: a poll (begin and end), a wake, a waker clone or drop */
		if (kind == TET_BREC_POLL && i + 4 <= n) {
			ev += 2;
			k = 4;
			continue;
		}
		if ((kind == TET_BREC_CLONE || kind == TET_BREC_DROP) ||
		    (kind == TET_BREC_WAKE && i + 2 <= n)) {
			ev++;
			k = kind == TET_BREC_WAKE ? 2 : 1;
			continue;
		}
		k = tb_rec_words(w, i, n);
		if (!k)
			break;
		switch (kind) {
		case TET_BREC_STRING:
			str_put(s, r->h.pid, &w[i], k);
			break;
		case TET_BREC_SPAWN:
			ev++;
			e = &s->sp[sp_slot(s, r->h.pid, w[i] & MASK56)];
			if (e->pid && e->rec)
				break; /* kept from a sweep already (task ids are not reused) */
			e = sp_insert(s, r->h.pid, w[i] & MASK56, RAW_SPAWN_WORDS * 8, r->h.ts);
			if (!e)
				break;
			memcpy(e->rec, &w[i], RAW_SPAWN_WORDS * 8);
			e->raw = true;
			e->clock = hd->clock;
			e->tid = r->h.tid;
			break;
		case TET_BREC_META:
			ev++;
			sp_meta(s, r->h.pid, w[i] & MASK56, &w[i], k * 8);
			break;
		case TET_BREC_TERMINATE:
			ev++;
			sp_end(s, r->h.pid, w[i] & MASK56, r->h.ts, true);
			break;
		default:
			ev++;
		}
	}
	return ev;
}

/* ---- the threads of the raw batches, for the sweeps ---- */
static struct rthread *thr_slot(struct fr_store *s, uint32_t pid, uint32_t tid)
{
	uint64_t x = (((uint64_t)pid << 32) | tid) * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(x >> 17) & (THR_CAP - 1);

	while (s->thr[i].pid && (s->thr[i].pid != pid || s->thr[i].tid != tid))
		i = (i + 1) & (THR_CAP - 1);
	return &s->thr[i];
}

/* Full: the threads that exited or have been silent for THR_FORGET_NS are forgotten. */
static void thr_prune(struct fr_store *s, uint64_t now)
{
	struct rthread *old = s->thr;

	s->thr = calloc(THR_CAP, sizeof(*s->thr));
	if (!s->thr) {
		s->thr = old;
		return;
	}
	s->thr_len = 0;
	for (size_t i = 0; i < THR_CAP; i++)
		if (old[i].pid && !old[i].exited && old[i].last_ns + THR_FORGET_NS > now) {
			struct rthread *t = thr_slot(s, old[i].pid, old[i].tid);

			*t = old[i];
			s->thr_ix[s->thr_len++] = (uint32_t)(t - s->thr);
		}
	free(old);
}

static void thr_batch(struct fr_store *s, const struct tet_batch_rec *r,
		      const struct tet_batch_head *hd)
{
	struct rthread *t;

	if (!s->thr && (!(s->thr_ix = malloc(FR_THREADS_MAX * sizeof(*s->thr_ix))) ||
			!(s->thr = calloc(THR_CAP, sizeof(*s->thr))))) {
		free(s->thr_ix);
		s->thr_ix = NULL;
		return;
	}
	t = thr_slot(s, r->h.pid, r->h.tid);
	if (!t->pid) {
		if (s->thr_len >= FR_THREADS_MAX) {
			thr_prune(s, r->h.ts);
			t = thr_slot(s, r->h.pid, r->h.tid);
			if (s->thr_len >= FR_THREADS_MAX)
				return; /* not swept */
		}
		t->pid = r->h.pid;
		t->tid = r->h.tid;
		s->thr_ix[s->thr_len++] = (uint32_t)(t - s->thr);
	}
	t->buf = r->buf;
	t->next_seq = hd->seq + 1;
	t->last_ns = r->h.ts;
	t->swept = false;
	t->swept_len = 0;
	t->exited = hd->reason == TET_BATCH_REASON_EXIT;
}

size_t fr_store_sweeps_due(struct fr_store *s, uint64_t now, uint64_t quiet_ns,
			   struct fr_sweep *v, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; s->thr && i < s->thr_len && n < max; i++) {
		struct rthread *t = &s->thr[s->thr_ix[i]];

		if (!t->pid || t->exited || t->last_ns + quiet_ns > now || t->next_try > now)
			continue;
		t->next_try = now + quiet_ns;
		v[n++] = (struct fr_sweep){ t->pid, t->tid, t->buf, t->next_seq, t->swept_open,
					    t->swept_len, t->swept };
	}
	return n;
}

static uint64_t open_hash(const struct tet_batch_head *h)
{
	uint64_t x = h->depth;
	const uint64_t *w = (const uint64_t *)h->open;

	for (size_t i = 0; i < (h->depth < TET_BATCH_OPEN_MAX ? h->depth : TET_BATCH_OPEN_MAX) *
			       sizeof(h->open[0]) / 8; i++)
		x = (x ^ w[i]) * 0x100000001b3ull;
	return x;
}

bool fr_sweep_read_ok(const struct fr_sweep *w, const void *head, const void *head2)
{
	const struct tet_batch_head *h = head, *h2 = head2;

	return h->magic == TET_BATCH_MAGIC && h->head_bytes == sizeof(*h) && h->tid == w->tid &&
	       h->seq == w->next_seq && h->len % 8 == 0 && h->len <= TET_BATCH_DATA_MAX &&
	       h->depth <= TET_BATCH_OPEN_MAX && h2->seq == h->seq && h2->len >= h->len &&
	       open_hash(h) == open_hash(h2);
}

void fr_store_sweep_gone(struct fr_store *s, const struct fr_sweep *w)
{
	struct rthread *t = s->thr ? thr_slot(s, w->pid, w->tid) : NULL;

	if (t && t->pid && t->buf == w->buf)
		t->exited = true;
}

bool fr_sweep_news(const struct fr_sweep *w, const void *head)
{
	const struct tet_batch_head *h = head;

	return !w->swept || h->len > w->swept_len || open_hash(h) != w->swept_open;
}

int fr_store_add_sweep(struct fr_store *s, const struct fr_sweep *w, uint64_t now,
		       const void *head, const void *recs, size_t len)
{
	const struct tet_batch_head *hd = head;
	struct tet_batch_rec *r;
	struct rthread *t;
	uint64_t oh;
	size_t n = sizeof(*r) + sizeof(*hd) + len;
	int err;

	if (!s->thr || len != hd->len || len > TET_BATCH_DATA_MAX)
		return -EINVAL;
	t = thr_slot(s, w->pid, w->tid);
	oh = open_hash(hd);
	if (!t->pid || t->buf != w->buf || t->next_seq != hd->seq ||
	    (t->swept && len <= t->swept_len && oh == t->swept_open))
		return 0; /* a batch came meanwhile, or nothing new */
	r = (struct tet_batch_rec *)entry_put(s, (uint32_t)n, ENT_SWEEP, n, 0, now, &err);
	if (!r)
		return err;
	memset(r, 0, sizeof(*r));
	r->h = (struct tet_hdr){ .ts = now, .type = TET_REC_BATCH, .pid = w->pid, .tid = w->tid };
	r->buf = w->buf;
	r->seq = hd->seq;
	r->len = (uint32_t)len;
	r->copied = (uint32_t)(sizeof(*hd) + len);
	memcpy(r->data, head, sizeof(*hd));
	memcpy(r->data + sizeof(*hd), recs, len);
	/* what it says of spawns, names, strings and ends, as its batch will (a dump may come first,
	 * or its batch long after the window has moved past this) */
	raw_walk(s, r, hd, t->swept ? t->swept_len / 8 : 0);
	t->swept = true;
	t->swept_len = (uint32_t)len;
	t->swept_open = oh;
	t->last_ns = now;
	s->st.sweeps_kept++;
	return 0;
}

static int add_pair(struct fr_store *s, const uint64_t *pair)
{
	unsigned char *p;
	int err;

	if (s->nfirst < 2)
		memcpy(s->first_pair[s->nfirst++], pair, 16);
	memcpy(s->pair[0], s->pair[1], 16);
	memcpy(s->pair[1], pair, 16);
	p = entry_put(s, 16, ENT_PAIR, 16, 0, pair[1], &err);
	if (!p)
		return err;
	memcpy(p, pair, 16);
	return 0;
}

int fr_store_add_raw(struct fr_store *s, enum fr_raw_kind kind, const void *rec, size_t size)
{
	const struct tet_batch_rec *r = rec;
	const struct tet_batch_head *hd;
	unsigned char *p;
	uint64_t ev;
	size_t n;
	int err;

	if (kind == FR_RAW_PAIR && size == 16)
		return add_pair(s, rec);
	hd = (const void *)r->data;
	if (kind != FR_RAW_BATCH || size < sizeof(*r) + sizeof(*hd) || r->h.type != TET_REC_BATCH ||
	    r->copied < sizeof(*hd) || r->copied > size - sizeof(*r) ||
	    hd->magic != TET_BATCH_MAGIC || hd->len % 8 || hd->len > r->copied - sizeof(*hd)) {
		s->st.raw_refused++;
		return -EINVAL;
	}
	n = sizeof(*r) + sizeof(*hd) + hd->len;
	thr_batch(s, r, hd);
	p = entry_put(s, (uint32_t)n, ENT_BATCH, n, 0, r->h.ts, &err);
	if (!p) {
		s->st.evicted += raw_walk(s, r, hd, 0);
		return err;
	}
	/* copied first, walked in the copy (in cache now; the ring's lines are cold) */
	memcpy(p, rec, n);
	r = (const struct tet_batch_rec *)p;
	((struct tet_batch_rec *)p)->copied = (uint32_t)(n - sizeof(*r));
	ev = raw_walk(s, r, (const struct tet_batch_head *)r->data, 0);
	s->tail->nrec += (uint32_t)ev;
	s->st.records += ev;
	s->st.added += ev;
	return 0;
}

static uint64_t oldest_ts(const struct fr_store *s)
{
	for (const struct chunk *c = s->head; c; c = c->next) {
		const unsigned char *p = c->data, *end = c->data + c->used;
		uint64_t min = UINT64_MAX;

		for (; p < end; p += 8 + (((*(const uint32_t *)p & ~PACKED_SPAWN) + 7) & ~7u)) {
			const struct tet_hdr *h = (const void *)(p + 8);

			if (((const uint32_t *)p)[1] != ENT_PAIR && h->ts && h->ts < min)
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
		s->early_before = now > EARLY_KEEP_NS ? now - EARLY_KEEP_NS : 0;
		if (before || s->sp_early)
			sp_rebuild(s, s->sp_cap, before); /* on -ENOMEM: purged next time */
	}
}

void fr_store_stats(const struct fr_store *s, struct fr_stats *st)
{
	*st = s->st;
	st->bytes = held(s);
	st->oldest_ts = oldest_ts(s);
	st->spawns_kept = s->sp_len - s->sp_early;
}

static int by_spawn_ts(const void *a, const void *b)
{
	const struct kept_spawn *x = *(const struct kept_spawn *const *)a;
	const struct kept_spawn *y = *(const struct kept_spawn *const *)b;

	return x->spawn_ts < y->spawn_ts ? -1 : x->spawn_ts > y->spawn_ts;
}

static int by_thread_spawn_ts(const void *a, const void *b)
{
	const struct kept_spawn *x = *(const struct kept_spawn *const *)a;
	const struct kept_spawn *y = *(const struct kept_spawn *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return by_spawn_ts(a, b);
}

/* The kept spawns (raw ones or the others) of tasks spawned before `from` and alive at `from`,
 * of pid (0: every process), in the order a replay gives them; NULL when there is no memory
 * (none are then given). */
static struct kept_spawn **spawns_alive(const struct fr_store *s, uint64_t from, uint64_t to,
					uint32_t pid, bool raw, size_t *nv)
{
	struct kept_spawn **v = calloc(s->sp_len ? s->sp_len : 1, sizeof(*v));

	*nv = 0;
	for (size_t i = 0; v && i < s->sp_cap; i++) {
		const struct kept_spawn *e = &s->sp[i];

		/* raw: spawned before `from` by their own stamps, which the dump's decoder converts
		 * (spawn_ts is their batch's flush, maybe past `from`): those flushed by `to` */
		if (e->pid && e->rec && e->raw == raw && (!pid || e->pid == pid) &&
		    e->spawn_ts < (raw ? to : from) && (!e->end_ts || e->end_ts >= from))
			v[(*nv)++] = (struct kept_spawn *)e;
	}
	qsort(v, *nv, sizeof(*v), raw ? by_thread_spawn_ts : by_spawn_ts);
	return v;
}

/* Synthetic batches: one thread's records, as its buffer would have flushed them. */
struct synth {
	fr_raw_fn raw;
	void *ctx;
	enum fr_phase phase;
	uint32_t pid, tid;
	uint8_t clock;
	uint64_t seq, len, lo, hi, ts;
	unsigned char rec[sizeof(struct tet_batch_rec) + sizeof(struct tet_batch_head) +
			  TET_BATCH_DATA_MAX];
};

static void synth_flush(struct synth *y, bool last)
{
	struct tet_batch_rec *r = (void *)y->rec;
	struct tet_batch_head *hd = (void *)r->data;

	if (!y->len && !last)
		return;
	memset(r, 0, sizeof(*r) + sizeof(*hd));
	r->h = (struct tet_hdr){ .ts = y->ts, .type = TET_REC_BATCH, .pid = y->pid, .tid = y->tid };
	r->buf = 8; /* no thread's buffer: a real batch of the thread after it is a new one */
	r->seq = y->seq;
	r->clock = y->hi;
	r->mono_ns = y->ts;
	r->len = (uint32_t)y->len;
	r->copied = (uint32_t)(sizeof(*hd) + y->len);
	hd->magic = TET_BATCH_MAGIC;
	hd->version = TET_BATCH_VERSION;
	hd->head_bytes = sizeof(*hd);
	hd->data_cap = TET_BATCH_DATA_MAX;
	hd->tid = y->tid;
	hd->seq = y->seq;
	hd->len = (uint32_t)y->len;
	hd->clock = y->clock;
	hd->reason = last ? TET_BATCH_REASON_EXIT : TET_BATCH_REASON_FULL;
	hd->open_max = TET_BATCH_OPEN_MAX;
	hd->flush_clock = hd->last_clock = y->hi;
	hd->flush_ns = y->ts;
	hd->window_clock = y->lo ? y->lo - 1 : 0;
	y->raw(y->ctx, y->phase, FR_RAW_BATCH, r, sizeof(*r) + r->copied);
	y->seq++;
	y->len = 0;
	y->lo = y->hi = 0;
}

static void synth_add(struct synth *y, const uint64_t *w, size_t nw, uint64_t stamp)
{
	struct tet_batch_rec *r = (void *)y->rec;

	if (y->len + nw * 8 > TET_BATCH_DATA_MAX)
		synth_flush(y, false);
	memcpy(r->data + sizeof(struct tet_batch_head) + y->len, w, nw * 8);
	y->len += nw * 8;
	if (stamp && (!y->lo || stamp < y->lo))
		y->lo = stamp;
	if (stamp > y->hi)
		y->hi = stamp;
}

static void synth_thread(struct synth *y, uint32_t pid, uint32_t tid, uint8_t clock)
{
	if (y->pid == pid && y->tid == tid)
		return;
	if (y->pid)
		synth_flush(y, true);
	y->pid = pid;
	y->tid = tid;
	y->clock = clock;
	y->seq = 0;
}

ssize_t fr_store_string(const struct fr_store *s, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	const struct kstr *k;
	size_t have;

	if (!s->str_cap || !(k = s->str[str_slot(s, pid, addr)]))
		return -ENOENT;
	/* w[0]: its length (low 32 bits) and kind; w[1] its address; then its bytes (raw_walk
	 * kept only records whose words hold them) */
	have = (size_t)(k->w[0] & 0xffffffffu);
	if (have > (k->nwords - 2) * 8)
		have = (k->nwords - 2) * 8;
	if (have > len)
		have = len;
	memcpy(buf, &k->w[2], have);
	return (ssize_t)have;
}

static void synth_string(struct synth *y, const struct fr_store *s, uint32_t pid, uint64_t addr)
{
	const struct kstr *k;

	if (!s->str_cap || !(k = s->str[str_slot(s, pid, addr)]))
		return;
	synth_add(y, k->w, k->nwords, 0);
}

/* The raw spawns of tasks alive at `from`, with their strings and names, as batches of their
 * threads. Returns how many. */
static size_t prelude(const struct fr_store *s, uint64_t from, uint64_t to, uint32_t pid,
		      struct synth *y)
{
	size_t nv;
	struct kept_spawn **v = spawns_alive(s, from, to, pid, true, &nv);

	for (size_t i = 0; i < nv; i++) {
		const uint64_t *w = (const uint64_t *)v[i]->rec;

		synth_thread(y, v[i]->pid, v[i]->tid, v[i]->clock);
		if (y->ts < v[i]->spawn_ts)
			y->ts = v[i]->spawn_ts;
		synth_string(y, s, v[i]->pid, w[3]);
		synth_string(y, s, v[i]->pid, w[5]);
		synth_add(y, w, RAW_SPAWN_WORDS, w[2]);
		if (v[i]->meta)
			synth_add(y, v[i]->meta, v[i]->meta_size / 8, 0);
	}
	if (y->pid)
		synth_flush(y, true);
	free(v);
	return nv;
}

static int by_pid(const void *a, const void *b)
{
	const struct kstr *x = *(const struct kstr *const *)a, *y = *(const struct kstr *const *)b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The strings kept, as batches of a thread of their own per process. */
static void strings_out(const struct fr_store *s, uint32_t pid, struct synth *y)
{
	const struct kstr **v = calloc(s->str_len ? s->str_len : 1, sizeof(*v));
	size_t nv = 0;

	for (size_t i = 0; v && i < s->str_cap; i++)
		if (s->str[i] && (!pid || s->str[i]->pid == pid))
			v[nv++] = s->str[i];
	qsort(v, nv, sizeof(*v), by_pid);
	for (size_t i = 0; i < nv; i++) {
		synth_thread(y, v[i]->pid, FR_STRINGS_TID, TET_BATCH_CLOCK_MONO);
		synth_add(y, v[i]->w, v[i]->nwords, 0);
	}
	if (y->pid)
		synth_flush(y, true);
	free(v);
}

static void pairs_out(const struct fr_store *s, fr_raw_fn raw, void *ctx, enum fr_phase ph)
{
	for (unsigned i = 0; i < s->nfirst; i++)
		raw(ctx, ph, FR_RAW_PAIR, s->first_pair[i], 16);
	for (int i = 0; s->head && i < 2; i++)
		if (s->head->pairs[i][0])
			raw(ctx, ph, FR_RAW_PAIR, s->head->pairs[i], 16);
	for (int i = 0; ph == FR_PRELUDE && i < 2; i++)
		if (s->pair[i][0])
			raw(ctx, ph, FR_RAW_PAIR, s->pair[i], 16);
}

/* The window's entries: records in [from, to] of pid to fn, raw entries of pid to raw (when
 * given). Returns the records passed. */
static uint64_t window_out(const struct fr_store *s, uint64_t from, uint64_t to, uint32_t pid,
			   fr_replay_fn fn, fr_raw_fn raw, void *ctx)
{
	struct tet_spawn_rec sr;
	uint64_t n = 0;

	for (const struct chunk *c = s->head; c; c = c->next) {
		const unsigned char *p = c->data, *end = c->data + c->used;

		while (p < end) {
			uint32_t w = ((const uint32_t *)p)[0], kind = ((const uint32_t *)p)[1];
			uint32_t sz = w & ~PACKED_SPAWN;
			const void *rec = p + 8;
			const struct tet_hdr *h = rec;

			p += 8 + ((sz + 7) & ~7u);
			if (kind != ENT_REC) {
				if (raw && (kind == ENT_PAIR || !pid || h->pid == pid))
					raw(ctx, FR_WINDOW, (enum fr_raw_kind)kind, rec, sz);
				continue;
			}
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

uint64_t fr_store_replay_raw(const struct fr_store *s, uint64_t from, uint64_t to, uint32_t pid,
			     fr_replay_fn fn, fr_raw_fn raw, void *ctx, uint64_t *spawns_before)
{
	struct kept_spawn **v;
	struct tet_spawn_rec sr;
	struct synth *y = raw ? calloc(1, sizeof(*y)) : NULL;
	uint64_t n = 0;
	size_t nv;

	*spawns_before = 0;
	if (y) {
		y->raw = raw;
		y->ctx = ctx;
		y->phase = FR_PRELUDE;
		pairs_out(s, raw, ctx, FR_PRELUDE);
		*spawns_before = prelude(s, from, to, pid, y);
		memset(y, 0, offsetof(struct synth, rec));
		y->raw = raw;
		y->ctx = ctx;
		y->phase = FR_WINDOW;
		pairs_out(s, raw, ctx, FR_WINDOW);
		strings_out(s, pid, y);
		free(y);
	}
	v = spawns_alive(s, from, to, pid, false, &nv);
	for (size_t i = 0; i < nv; i++) {
		spawn_unpack(v[i]->rec, &sr);
		fn(ctx, &sr, sizeof(sr));
		if (v[i]->meta)
			fn(ctx, v[i]->meta, sizeof(struct tet_meta_rec));
	}
	free(v);
	*spawns_before += nv;
	n = *spawns_before;
	return n + window_out(s, from, to, pid, fn, raw, ctx);
}

uint64_t fr_store_replay(const struct fr_store *s, uint64_t from, uint64_t to, uint32_t pid,
			 fr_replay_fn fn, void *ctx, uint64_t *spawns_before)
{
	return fr_store_replay_raw(s, from, to, pid, fn, NULL, ctx, spawns_before);
}

/* ---- the follower ---- */
/* Where it is: its chunk (NULL, the head, from its start) and the offset in it. */
static const struct chunk *fol_at(const struct fr_store *s, uint32_t *off)
{
	*off = s->fol_c ? s->fol_off : 0;
	return s->fol_c ? s->fol_c : s->head;
}

size_t fr_store_follow(struct fr_store *s, size_t max, fr_follow_fn fn, void *ctx)
{
	uint32_t off;
	const struct chunk *c = fol_at(s, &off);
	struct tet_spawn_rec sr;
	size_t n = 0;

	s->fol_on = true;
	if (!c)
		return 0;
	if (s->fol_moved) { /* the stamps of what follows need the pairs of their time */
		s->fol_moved = false;
		for (int i = 0; i < 2; i++)
			if (c->pairs[i][0])
				fn(ctx, FR_RAW_PAIR, c->pairs[i], 16);
	}
	while (n < max) {
		const unsigned char *p;
		uint32_t w, kind, sz;

		if (off >= c->used) {
			if (!c->next)
				break;
			c = c->next;
			off = 0;
			continue;
		}
		p = c->data + off;
		w = ((const uint32_t *)p)[0];
		kind = ((const uint32_t *)p)[1];
		sz = w & ~PACKED_SPAWN;
		off += 8 + ((sz + 7) & ~7u);
		n++;
		s->fol.entries++;
		/* fn may not change the store: the position is saved below */
		if (kind != ENT_REC) {
			fn(ctx, (enum fr_raw_kind)kind, p + 8, sz);
		} else if (w & PACKED_SPAWN) {
			spawn_unpack(p + 8, &sr);
			fn(ctx, FR_RAW_REC, &sr, sizeof(sr));
		} else {
			fn(ctx, FR_RAW_REC, p + 8, sz);
		}
	}
	s->fol_c = c;
	s->fol_off = off;
	return n;
}

void fr_store_follow_start(struct fr_store *s)
{
	s->fol_on = true;
}

bool fr_store_follow_done(const struct fr_store *s)
{
	uint32_t off;
	const struct chunk *c = fol_at(s, &off);

	return !c || (c == s->tail && off >= c->used);
}

void fr_store_follow_stats(const struct fr_store *s, struct fr_follow_stats *st)
{
	uint32_t off;
	const struct chunk *c = fol_at(s, &off);
	uint64_t behind = 0;

	*st = s->fol;
	if (c) {
		behind = c->used - off;
		for (c = c->next; c; c = c->next)
			behind += c->used;
	}
	st->behind_bytes = behind;
}

/* ---- a window of raw batches, decoded ---- */
struct rawfeed {
	fr_replay_fn fn;
	void *ctx;
	fr_read_fn rd;
	struct tb *pre, *win;       /* the kept spawns' decoder, the window's */
	bool pre_done;
	uint64_t from, to, start;   /* the window; the capture's start */
	uint64_t batches, passed;   /* records given to fn */
	uint64_t pre_passed;        /* … of them, spawns of tasks older than the window */
	struct { uint32_t pid; uint64_t id; } *older; /* those tasks: open addressing */
	size_t older_cap;           /* a power of two, or 0 */
	uint64_t by_type[TET_EV_COUNT]; /* the window's events, by probe (fr_decoded) */
};

static size_t older_slot(const struct rawfeed *x, uint32_t pid, uint64_t id)
{
	size_t i = (size_t)(((id ^ ((uint64_t)pid << 40)) * 0x9e3779b97f4a7c15ull) >> 17) &
		   (x->older_cap - 1);

	while (x->older[i].pid && (x->older[i].pid != pid || x->older[i].id != id))
		i = (i + 1) & (x->older_cap - 1);
	return i;
}

/* The reads a decoder asks for: strings (and at the end the threads' buffers) read from the
 * process if it is still there; "is the thread there" always yes. */
static void raw_serve(const struct rawfeed *x, struct tb *b, uint64_t now)
{
	struct tb_read rq;

	while (tb_next_read(b, now, &rq)) {
		ssize_t n = 0;

		if (rq.kind == TB_READ_MEM) {
			n = x->rd ? x->rd(rq.pid, rq.addr, rq.buf, rq.len) : -EIO;
			if (n <= 0)
				n = -EIO;
		}
		tb_read_done(b, n);
	}
}

/* The spawns of tasks older than the window: those of this capture. */
static int pre_emit(void *ctx, const void *rec, size_t size)
{
	struct rawfeed *x = ctx;

	const struct tet_hdr *h = rec;

	/* the prelude has every kept spawn flushed by the window's end: those spawned in the
	 * window come from its own decoder */
	if (h->ts < x->start || h->ts >= x->from)
		return 0;
	if (h->type == TET_EV_SPAWN && x->older_cap) {
		const struct tet_spawn_rec *r = rec;
		size_t i = older_slot(x, h->pid, r->task_id);

		x->older[i].pid = h->pid;
		x->older[i].id = r->task_id;
	}
	x->passed++;
	x->pre_passed += h->type == TET_EV_SPAWN;
	x->fn(x->ctx, rec, size);
	return 0;
}

/* The window's events (the decoder gives each thread's first batch whole, and what the last
 * sweep reads past the end). */
static int win_emit(void *ctx, const void *rec, size_t size)
{
	struct rawfeed *x = ctx;
	const struct tet_hdr *h = rec;

	/* an older task's end stamped before the window, its batch flushed in it: it ended */
	if (h->ts < x->from && h->type == TET_EV_TERMINATE && x->older_cap &&
	    size >= sizeof(struct tet_event_rec) &&
	    x->older[older_slot(x, h->pid, ((const struct tet_event_rec *)rec)->task_id)].pid) {
		x->passed++;
		x->fn(x->ctx, rec, size);
		return 0;
	}
	if (h->ts < x->from || h->ts > x->to)
		return 0;
	x->passed++;
	if (h->type < TET_EV_COUNT)
		x->by_type[h->type]++;
	if (h->type == TET_EV_POLL_END && size >= sizeof(struct tet_event_rec)) {
		uint64_t b = ((const struct tet_event_rec *)rec)->b; /* the poll's yields ride on it */

		x->by_type[TET_EV_YIELD] += (b & 0xffff) + ((b >> 16) & 0xffff);
	}
	x->fn(x->ctx, rec, size);
	return 0;
}

static void pre_finish(struct rawfeed *x)
{
	if (x->pre_done)
		return;
	x->pre_done = true;
	raw_serve(x, x->pre, 0);
	tb_finish(x->pre);
}

bool fr_raw_feed(struct tb *b, enum fr_raw_kind kind, const void *rec, size_t size)
{
	uint64_t pair[2];

	if (kind == FR_RAW_PAIR && size == sizeof(pair)) {
		memcpy(pair, rec, sizeof(pair));
		tb_clock_pair(b, pair[0], pair[1]);
	} else if (kind == FR_RAW_SWEEP) {
		const struct tet_batch_rec *r = rec;
		const size_t hb = sizeof(struct tet_batch_head);

		if (size >= sizeof(*r) + hb && r->copied >= hb && r->copied <= size - sizeof(*r))
			tb_feed_sweep(b, r->h.pid, r->h.tid, r->buf, r->h.ts, r->data, r->data + hb,
				      r->copied - hb);
	} else if (kind == FR_RAW_BATCH) {
		tb_feed(b, rec, size);
		return true;
	}
	return false;
}

static void raw_in(void *ctx, enum fr_phase ph, enum fr_raw_kind kind, const void *rec,
		   size_t size)
{
	struct rawfeed *x = ctx;
	struct tb *b = ph == FR_PRELUDE ? x->pre : x->win;

	if (ph == FR_WINDOW)
		pre_finish(x);
	if (!fr_raw_feed(b, kind, rec, size))
		return;
	raw_serve(x, b, 0);
	if (++x->batches % 16 == 0)
		tb_advance(b, ((const struct tet_hdr *)rec)->ts);
}

static void rec_in(void *ctx, const void *rec, size_t size)
{
	struct rawfeed *x = ctx;

	pre_finish(x);
	x->fn(x->ctx, rec, size);
}

int fr_store_decode(const struct fr_store *s, uint64_t from, uint64_t to, uint32_t pid,
		    uint64_t start, fr_read_fn rd, bool sweep, fr_replay_fn fn, void *ctx,
		    struct fr_decoded *out)
{
	struct rawfeed x = { .fn = fn, .ctx = ctx, .rd = rd, .from = from, .to = to,
			     .start = start };
	/* a quiet thread (a spawner blocked in block_on) is waited for as by a live decoder (2 s)
	 * until the recorder's sweep of it comes, which a saturated service fills with more events
	 * than a live decoder holds (its sweeps come when it gets the CPU, ahead of its backlog):
	 * up to 4 M events held (~300 MB in the dump's process, for the time it runs) */
	struct tb_opts o = { .emit = pre_emit, .emit_ctx = &x, .reads = true,
			     .max_pending = 4u << 20 };
	uint64_t n;

	memset(out, 0, sizeof(*out));
	for (x.older_cap = 1024; x.older_cap < 2 * s->sp_len; x.older_cap *= 2)
		;
	x.older = calloc(x.older_cap, sizeof(*x.older));
	if (!x.older)
		x.older_cap = 0; /* older tasks' ends stamped before the window are not passed */
	x.pre = tb_new(&o);
	o.emit = win_emit;
	x.win = tb_new(&o);
	if (!x.pre || !x.win) {
		tb_free(x.pre);
		tb_free(x.win);
		free(x.older);
		return -ENOMEM;
	}
	n = fr_store_replay_raw(s, from, to, pid, rec_in, raw_in, &x, &out->spawns_before);
	pre_finish(&x);
	if (sweep) {
		struct timespec now;

		clock_gettime(CLOCK_MONOTONIC, &now);
		tb_sweep_all(x.win);
		raw_serve(&x, x.win, (uint64_t)now.tv_sec * NSEC_PER_SEC + (uint64_t)now.tv_nsec);
	}
	tb_finish(x.win);
	tb_free(x.pre);
	free(x.older);
	out->win = x.win;
	/* n: the records fn had directly and the raw spawns the prelude held (pre_emit counted
	 * those it passed) */
	out->records = n - out->spawns_before + x.passed;
	out->spawns_before = x.pre_passed;
	memcpy(out->by_type, x.by_type, sizeof(out->by_type));
	return 0;
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

/* name is one of keep's dumps' files (keep[i] then a dot) */
static bool kept(const char *name, const char *const *keep, size_t nkeep)
{
	for (size_t i = 0; i < nkeep; i++) {
		size_t klen = keep[i] ? strlen(keep[i]) : 0;

		if (klen && !strncmp(name, keep[i], klen) && name[klen] == '.')
			return true;
	}
	return false;
}

uint64_t fr_dir_enforce(const char *dir, uint64_t max_bytes, const char *const *keep, size_t nkeep,
			size_t *nremoved)
{
	struct dump_file *v = NULL, *nv;
	size_t n = 0, cap = 0;
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
		if (kept(de->d_name, keep, nkeep))
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
	if (n) /* v is NULL when no older dump is there */
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
