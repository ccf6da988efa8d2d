// SPDX-License-Identifier: MIT
/*
 * uring.c — io_uring requests of the traced tasks (uring.h; the kernel side is
 * bpf/uring.bpf.h).
 *
 * A request lives from its submission to the poll of its task that consumed its completion:
 *
 *   SUBMIT ─► (ring, pos) covered by a poll's SQ range? ─ yes ─► linked to that task
 *                 │ no: waits in `unowned` (a range may follow: the poll that filled it is
 *                 │     still running) for UR_UNOWNED_NS, then counts as unattributed
 *   DONE   ─► the oldest request in flight with its (ring, user_data): completed
 *   task's wake at/after the completion ─► wake_ts;  task's poll begin at/after ─► consumed
 *
 * Each request ends ("retires") into the figures of its opcode, globally and for its task's
 * spawn site (resolved then, through the analyzer), and into the timeline ring.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "htab.h"
#include "uring.h"

#define UR_RANGES 256                      /* SQ ranges of polls kept per ring */
#define UR_UNOWNED_MAX 65536               /* submissions waiting for their range */
#define UR_UNOWNED_NS 2000000000ull        /* … for this long */
#define UR_DESCRIBE_PER_TICK 64
#define UR_WALK_NS 1000000000ull           /* the whole list is walked once a second */
#define CQE_F_MORE (1u << 1)               /* IORING_CQE_F_MORE */
#define REQ_F_FIXED_FILE 1u                /* IOSQE_FIXED_FILE (bit 0 of the request flags) */

struct utask;

struct ur_op {
	struct ur_op *prev, *next;             /* every request alive, in submission order */
	struct ur_op *next_ud;                 /* requests in flight with the same (ring, user_data) */
	struct ur_op *prev_task, *next_task;   /* the task's requests, in linking order */
	struct ur_op *prev_done, *next_done;   /* … completed, not consumed: in completion order */
	bool in_done;
	struct utask *task;                    /* linked: its task */
	uint64_t ring, user_data;
	uint32_t pid, tid, pos, flags;
	int32_t fd, res;
	uint8_t opcode;
	bool done, unowned, described;
	uint64_t submit_ts, done_ts, wake_ts;
	char fd_what[UR_FD_WHAT_MAX];
};

struct utask {
	uint32_t pid;
	uint64_t key;
	struct ur_op *ops, *ops_tail;          /* linked requests alive (doubly linked: a task
						* with thousands, as when batches lag, costs
						* nothing per event) */
	struct ur_op *done, *done_tail;        /* … of them completed, waiting for its poll */
	const struct an_site *counted;         /* the site its `tasks` count went to */
	struct ur_task_stats st;               /* in_flight unused (counted when asked) */
	bool gone;                             /* the analyzer retired the task */
};

struct range {
	uint32_t from, to, pid;
	uint64_t task;
};

struct ring {
	uint64_t ctx;
	uint32_t pid;
	struct range v[UR_RANGES];
	uint32_t head, len;                    /* v[head] is the newest */
};

struct uq_ent {
	uint64_t ring, ts;
	uint32_t pos;
	struct ur_op *o;
};

struct ur {
	struct ur_totals t;
	struct htab rings, by_ud, unowned, tasks, sites;
	struct ur_op *first, *last;
	size_t alive;
	struct uq_ent *uq;                     /* unowned submissions, FIFO (an entry no longer
						* in `unowned` is skipped: never dereferenced) */
	size_t uq_head, uq_len, uq_cap;
	struct ur_opstats *ops;                /* global, by opcode */
	size_t nops;
	struct ur_site_stats **sitev;
	size_t nsites;
	struct ur_inflight *inflight;
	size_t ninflight;
	struct ur_tl_rec *tl;
	size_t tl_cap, tl_len, tl_head;
	struct ur_ended *ended;                /* ring of UR_ENDED_MAX, made on first use */
	size_t ended_len, ended_head;
	uint64_t last_walk;
	ur_site_fn site_fn;
	void *site_ctx;
	ur_fd_fn fd_fn;
	void *fd_ctx;
};

static const char *const opnames[] = {
	"NOP", "READV", "WRITEV", "FSYNC", "READ_FIXED", "WRITE_FIXED", "POLL_ADD", "POLL_REMOVE",
	"SYNC_FILE_RANGE", "SENDMSG", "RECVMSG", "TIMEOUT", "TIMEOUT_REMOVE", "ACCEPT",
	"ASYNC_CANCEL", "LINK_TIMEOUT", "CONNECT", "FALLOCATE", "OPENAT", "CLOSE", "FILES_UPDATE",
	"STATX", "READ", "WRITE", "FADVISE", "MADVISE", "SEND", "RECV", "OPENAT2", "EPOLL_CTL",
	"SPLICE", "PROVIDE_BUFFERS", "REMOVE_BUFFERS", "TEE", "SHUTDOWN", "RENAMEAT", "UNLINKAT",
	"MKDIRAT", "SYMLINKAT", "LINKAT", "MSG_RING", "FSETXATTR", "SETXATTR", "FGETXATTR",
	"GETXATTR", "SOCKET", "URING_CMD", "SEND_ZC", "SENDMSG_ZC", "READ_MULTISHOT", "WAITID",
	"FUTEX_WAIT", "FUTEX_WAKE", "FUTEX_WAITV", "FIXED_FD_INSTALL", "FTRUNCATE", "BIND",
	"LISTEN", "RECV_ZC", "EPOLL_WAIT", "READV_FIXED", "WRITEV_FIXED", "PIPE",
};

const char *ur_opcode_name(unsigned op)
{
	return op < sizeof(opnames) / sizeof(opnames[0]) ? opnames[op] : NULL;
}

const char *ur_opcode_str(unsigned op, char *buf, size_t len)
{
	const char *n = ur_opcode_name(op);

	if (n)
		return n;
	snprintf(buf, len, "opcode %u", op);
	return buf;
}

struct ur *ur_new(size_t timeline_cap)
{
	struct ur *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	if (timeline_cap) {
		u->tl = calloc(timeline_cap, sizeof(*u->tl));
		if (!u->tl) {
			free(u);
			return NULL;
		}
		u->tl_cap = timeline_cap;
	}
	return u;
}

static void opstats_free(struct ur_opstats *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		hist_free(&v[i].lat_ns);
		hist_free(&v[i].consume_ns);
	}
	free(v);
}

void ur_free(struct ur *u)
{
	if (!u)
		return;
	for (struct ur_op *o = u->first, *n; o; o = n) {
		n = o->next;
		free(o);
	}
	for (size_t i = 0; i < u->rings.cap; i++)
		free(u->rings.e[i].v);
	for (size_t i = 0; i < u->tasks.cap; i++)
		free(u->tasks.e[i].v);
	for (size_t i = 0; i < u->nsites; i++) {
		opstats_free(u->sitev[i]->ops, u->sitev[i]->nops);
		free(u->sitev[i]);
	}
	free(u->sitev);
	opstats_free(u->ops, u->nops);
	free(u->rings.e);
	free(u->by_ud.e);
	free(u->unowned.e);
	free(u->tasks.e);
	free(u->sites.e);
	free(u->uq);
	free(u->inflight);
	free(u->tl);
	free(u->ended);
	free(u);
}

void ur_set_site_fn(struct ur *u, ur_site_fn fn, void *ctx)
{
	u->site_fn = fn;
	u->site_ctx = ctx;
}

void ur_set_fd_fn(struct ur *u, ur_fd_fn fn, void *ctx)
{
	u->fd_fn = fn;
	u->fd_ctx = ctx;
}

bool ur_active(const struct ur *u)
{
	return u && u->t.rings;
}

/* The entry of `opcode` in a by-opcode array (kept ascending), made when missing. */
static struct ur_opstats *opstats(struct ur_opstats **v, size_t *n, uint8_t opcode)
{
	struct ur_opstats *nv;
	size_t i;

	for (i = 0; i < *n && (*v)[i].opcode < opcode; i++)
		;
	if (i < *n && (*v)[i].opcode == opcode)
		return &(*v)[i];
	nv = realloc(*v, (*n + 1) * sizeof(**v));
	if (!nv)
		return NULL;
	memmove(nv + i + 1, nv + i, (*n - i) * sizeof(*nv));
	memset(&nv[i], 0, sizeof(nv[i]));
	nv[i].opcode = opcode;
	hist_init(&nv[i].lat_ns);
	hist_init(&nv[i].consume_ns);
	*v = nv;
	(*n)++;
	return &nv[i];
}

static struct ur_site_stats *site_stats(struct ur *u, const struct an_site *site)
{
	struct ur_site_stats *s = htab_get(&u->sites, (uintptr_t)site, 0), **v;

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	v = s ? realloc(u->sitev, (u->nsites + 1) * sizeof(*v)) : NULL;
	if (!v || htab_put(&u->sites, (uintptr_t)site, 0, s)) {
		if (v)
			u->sitev = v;
		free(s);
		return NULL;
	}
	s->site = site;
	u->sitev = v;
	u->sitev[u->nsites++] = s;
	return s;
}

static const struct an_site *resolve(struct ur *u, const struct ur_op *o)
{
	if (!o->task || !u->site_fn)
		return NULL;
	return u->site_fn(u->site_ctx, o->task->pid, o->task->key);
}

static void tl_push(struct ur *u, const struct ur_op *o, uint64_t poll_ts, uint32_t poll_tid)
{
	struct ur_tl_rec *r;

	if (!u->tl_cap)
		return;
	r = &u->tl[u->tl_head];
	u->tl_head = (u->tl_head + 1) % u->tl_cap;
	if (u->tl_len < u->tl_cap)
		u->tl_len++;
	*r = (struct ur_tl_rec){ .submit_ts = o->submit_ts, .done_ts = o->done_ts,
				 .wake_ts = o->wake_ts, .poll_ts = poll_ts,
				 .task_key = o->task ? o->task->key : 0, .ring = o->ring,
				 .user_data = o->user_data, .pid = o->pid, .tid = o->tid, .poll_tid = poll_tid, .res = o->res,
				 .fd = o->fd, .opcode = o->opcode, .linked = o->task != NULL };
}

static void unlink_ud(struct ur *u, struct ur_op *o)
{
	struct ur_op *h = htab_get(&u->by_ud, o->ring, o->user_data), *p;

	if (h == o) {
		/* htab_put may grow the table even to replace, and fail: never leave o there */
		if (!o->next_ud || htab_put(&u->by_ud, o->ring, o->user_data, o->next_ud))
			htab_del(&u->by_ud, o->ring, o->user_data);
	} else {
		for (p = h; p && p->next_ud != o; p = p->next_ud)
			;
		if (p)
			p->next_ud = o->next_ud;
	}
	o->next_ud = NULL;
}

static void utask_free(struct ur *u, struct utask *t)
{
	htab_del(&u->tasks, t->pid, t->key);
	free(t);
}

static void done_unlink(struct utask *t, struct ur_op *o)
{
	if (!o->in_done)
		return;
	if (o->prev_done)
		o->prev_done->next_done = o->next_done;
	else
		t->done = o->next_done;
	if (o->next_done)
		o->next_done->prev_done = o->prev_done;
	else
		t->done_tail = o->prev_done;
	o->prev_done = o->next_done = NULL;
	o->in_done = false;
}

/* A linked request completed: it waits for its task's next poll. */
static void done_append(struct utask *t, struct ur_op *o)
{
	o->prev_done = t->done_tail;
	o->next_done = NULL;
	if (t->done_tail)
		t->done_tail->next_done = o;
	else
		t->done = o;
	t->done_tail = o;
	o->in_done = true;
}

static void unlink_task(struct ur *u, struct ur_op *o)
{
	struct utask *t = o->task;

	if (!t)
		return;
	done_unlink(t, o);
	if (o->prev_task)
		o->prev_task->next_task = o->next_task;
	else
		t->ops = o->next_task;
	if (o->next_task)
		o->next_task->prev_task = o->prev_task;
	else
		t->ops_tail = o->prev_task;
	o->prev_task = o->next_task = NULL;
	o->task = NULL;
	if (t->gone && !t->ops)
		utask_free(u, t);
}

void ur_task_stats(const struct ur *u, uint32_t pid, uint64_t key, struct ur_task_stats *out)
{
	const struct utask *t = u->t.rings ? htab_get(&u->tasks, pid, key) : NULL;

	memset(out, 0, sizeof(*out));
	if (!t)
		return;
	*out = t->st;
	for (const struct ur_op *o = t->ops; o; o = o->next_task)
		out->in_flight += !o->done;
}

/* A linked request of task t completed. */
static void task_done(struct utask *t, const struct ur_op *o)
{
	uint64_t lat = o->done_ts - o->submit_ts;

	t->st.completed++;
	t->st.errors += o->res < 0;
	t->st.lat_sum_ns += lat;
	if (lat > t->st.lat_max_ns)
		t->st.lat_max_ns = lat;
}

void ur_task_gone(struct ur *u, uint32_t pid, uint64_t key)
{
	struct utask *t = u->t.rings ? htab_get(&u->tasks, pid, key) : NULL;

	if (!t)
		return;
	if (t->ops)
		t->gone = true;
	else
		utask_free(u, t);
}

/* The request leaves: into the figures of its opcode for its site (in_flight: still in flight
 * at the end; consume_ns: its completion's delay to the poll, UINT64_MAX = not consumed). */
static void retire(struct ur *u, struct ur_op *o, const struct an_site *site, bool in_flight,
		   uint64_t consume_ns, uint32_t poll_tid)
{
	struct ur_site_stats *s = site_stats(u, site);
	struct ur_opstats *st = s ? opstats(&s->ops, &s->nops, o->opcode) : NULL;

	if (s && o->task && o->task->counted != site) {
		if (!o->task->counted)
			s->tasks++;
		o->task->counted = site;
	}
	if (st) {
		st->submitted++;
		if (o->done) {
			st->completed++;
			st->errors += o->res < 0;
			hist_add(&st->lat_ns, o->done_ts - o->submit_ts);
		}
		st->in_flight += in_flight;
		if (consume_ns != UINT64_MAX)
			hist_add(&st->consume_ns, consume_ns);
	}
	if (o->done)
		tl_push(u, o, consume_ns != UINT64_MAX ? o->done_ts + consume_ns : 0, poll_tid);
	if (in_flight)
		return; /* ur_finish keeps it for the in-flight list */
	if (!o->done)
		unlink_ud(u, o);
	unlink_task(u, o);
	if (o->unowned)
		htab_del(&u->unowned, o->ring, o->pos);
	if (o->prev)
		o->prev->next = o->next;
	else
		u->first = o->next;
	if (o->next)
		o->next->prev = o->prev;
	else
		u->last = o->prev;
	u->alive--;
	free(o);
}

static struct utask *utask_get(struct ur *u, uint32_t pid, uint64_t key, bool create)
{
	struct utask *t = htab_get(&u->tasks, pid, key);

	if (t || !create)
		return t;
	t = calloc(1, sizeof(*t));
	if (t && htab_put(&u->tasks, pid, key, t)) {
		free(t);
		return NULL;
	}
	if (t) {
		t->pid = pid;
		t->key = key;
	}
	return t;
}

static void link_op(struct ur *u, struct ur_op *o, uint32_t pid, uint64_t key)
{
	struct utask *t = utask_get(u, pid, key, true);

	if (!t)
		return;
	if (t->gone) { /* a new task under the key of a retired one (a reused header) */
		t->gone = false;
		memset(&t->st, 0, sizeof(t->st));
		t->counted = NULL;
	}
	o->task = t;
	o->prev_task = t->ops_tail; /* oldest first */
	o->next_task = NULL;
	if (t->ops_tail)
		t->ops_tail->next_task = o;
	else
		t->ops = o;
	t->ops_tail = o;
	if (o->done)
		done_append(t, o);
	t->st.requests++;
	{
		uint8_t i;

		for (i = 0; i < t->st.nops && t->st.ops[i].opcode != o->opcode; i++)
			;
		if (i < t->st.nops) {
			t->st.ops[i].n++;
		} else if (i < UR_TASK_OPS) {
			t->st.ops[i].opcode = o->opcode;
			t->st.ops[i].n = 1;
			t->st.nops++;
		} else {
			t->st.ops_other++;
		}
	}
	if (o->done)
		task_done(t, o);
	u->t.linked++;
}

static bool in_range(const struct range *r, uint32_t pos)
{
	return pos - r->from < r->to - r->from;
}

static struct ring *ring_get(struct ur *u, uint64_t ctx, uint32_t pid)
{
	struct ring *r = htab_get(&u->rings, ctx, 0);

	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (r && htab_put(&u->rings, ctx, 0, r)) {
		free(r);
		return NULL;
	}
	if (r) {
		r->ctx = ctx;
		r->pid = pid;
		u->t.rings++;
	}
	return r;
}

static int on_submit(struct ur *u, const struct tet_uring_rec *r)
{
	struct ring *rg = ring_get(u, r->ctx, r->h.pid);
	struct ur_opstats *st = opstats(&u->ops, &u->nops, r->opcode);
	struct ur_op *o, *h;

	if (!rg || !st)
		return -ENOMEM;
	u->t.submitted++;
	if (u->alive >= UR_INFLIGHT_MAX) { /* counted in totals only: by opcode, as followed */
		u->t.untracked++;
		return 0;
	}
	st->submitted++;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	*o = (struct ur_op){ .ring = r->ctx, .user_data = r->user_data, .pid = r->h.pid,
			     .tid = r->h.tid, .pos = r->pos, .flags = r->flags, .fd = r->fd,
			     .opcode = r->opcode, .submit_ts = r->h.ts };
	o->prev = u->last;
	if (u->last)
		u->last->next = o;
	else
		u->first = o;
	u->last = o;
	u->alive++;
	h = htab_get(&u->by_ud, o->ring, o->user_data);
	if (!h) {
		htab_put(&u->by_ud, o->ring, o->user_data, o);
	} else {
		while (h->next_ud)
			h = h->next_ud;
		h->next_ud = o;
	}
	for (uint32_t i = 0; i < rg->len; i++) {
		const struct range *g = &rg->v[(rg->head + UR_RANGES - i) % UR_RANGES];

		if (in_range(g, o->pos)) {
			link_op(u, o, g->pid, g->task);
			return 0;
		}
	}
	if (u->unowned.len >= UR_UNOWNED_MAX) {
		u->t.unattributed++;
		return 0;
	}
	if (u->uq_len == u->uq_cap) {
		size_t cap = u->uq_cap ? u->uq_cap * 2 : 256;
		struct uq_ent *v = malloc(cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (size_t i = 0; i < u->uq_len; i++)
			v[i] = u->uq[(u->uq_head + i) % u->uq_cap];
		free(u->uq);
		u->uq = v;
		u->uq_cap = cap;
		u->uq_head = 0;
	}
	{ /* a request still waiting at this position (a reused ring address): settle it first */
		struct ur_op *old = htab_get(&u->unowned, o->ring, o->pos);

		if (old) {
			htab_del(&u->unowned, old->ring, old->pos);
			old->unowned = false;
			u->t.unattributed++;
			if (old->done)
				retire(u, old, NULL, false, UINT64_MAX, 0);
		}
	}
	if (htab_put(&u->unowned, o->ring, o->pos, o))
		return -ENOMEM;
	o->unowned = true;
	u->uq[(u->uq_head + u->uq_len++) % u->uq_cap] =
		(struct uq_ent){ .ring = o->ring, .ts = o->submit_ts, .pos = o->pos, .o = o };
	return 0;
}

static int on_push(struct ur *u, const struct tet_uring_push_rec *r)
{
	struct ring *rg = ring_get(u, r->ctx, r->h.pid);
	uint64_t task = r->task_id ? r->task_id : r->header_ptr;
	uint32_t n = r->to - r->from;

	if (!rg)
		return -ENOMEM;
	u->t.pushes++;
	rg->head = (rg->head + 1) % UR_RANGES;
	rg->v[rg->head] = (struct range){ r->from, r->to, r->h.pid, task };
	if (rg->len < UR_RANGES)
		rg->len++;
	if (!u->unowned.len)
		return 0;
	for (uint32_t i = 0; i < n && i < UR_UNOWNED_MAX; i++) {
		struct ur_op *o = htab_get(&u->unowned, r->ctx, r->from + i);

		if (!o)
			continue;
		htab_del(&u->unowned, r->ctx, r->from + i);
		o->unowned = false;
		link_op(u, o, r->h.pid, task);
	}
	return 0;
}

static void describe(struct ur *u, struct ur_op *o);

/* Request o as the in-flight list and the ended ring give it. */
static void req_copy(const struct ur_op *o, const struct an_site *site, struct ur_inflight *f)
{
	*f = (struct ur_inflight){ .pid = o->pid, .tid = o->tid,
		.task_key = o->task ? o->task->key : 0, .linked = o->task != NULL,
		.site = site, .ring = o->ring, .user_data = o->user_data, .fd = o->fd,
		.fixed_file = o->flags & REQ_F_FIXED_FILE, .opcode = o->opcode,
		.submit_ts = o->submit_ts };
	memcpy(f->fd_what, o->fd_what, sizeof(f->fd_what));
	f->fd_what[sizeof(f->fd_what) - 1] = 0;
}

/* A linked request ended after a long flight: kept for its task's stall (ur_task_ended). */
static void ended_push(struct ur *u, struct ur_op *o)
{
	struct ur_ended *e;

	if (!u->ended && !(u->ended = calloc(UR_ENDED_MAX, sizeof(*u->ended))))
		return;
	if (!o->described)
		describe(u, o); /* the fd is most likely still what it was */
	e = &u->ended[u->ended_head];
	req_copy(o, NULL, &e->req);
	e->done_ts = o->done_ts;
	e->res = o->res;
	u->ended_head = (u->ended_head + 1) % UR_ENDED_MAX;
	if (u->ended_len < UR_ENDED_MAX)
		u->ended_len++;
}

static int on_done(struct ur *u, const struct tet_uring_rec *r)
{
	struct ur_op *o = htab_get(&u->by_ud, r->ctx, r->user_data);
	struct ur_opstats *st;

	if (r->flags & CQE_F_MORE)
		u->t.multishot_more++;
	if (!o) {
		u->t.completions_unmatched++;
		return 0;
	}
	if (r->flags & CQE_F_MORE)
		return 0; /* more completions follow: still in flight */
	/* requests completed (as by_opcode counts them), not CQEs */
	u->t.completed++;
	u->t.errors += r->res < 0;
	unlink_ud(u, o);
	o->done = true;
	o->done_ts = r->h.ts >= o->submit_ts ? r->h.ts : o->submit_ts;
	o->res = r->res;
	st = opstats(&u->ops, &u->nops, o->opcode);
	if (!st)
		return -ENOMEM;
	st->completed++;
	st->errors += r->res < 0;
	hist_add(&st->lat_ns, o->done_ts - o->submit_ts);
	if (o->task) {
		task_done(o->task, o);
		done_append(o->task, o);
		if (o->done_ts - o->submit_ts >= UR_DESCRIBE_NS)
			ended_push(u, o);
	}
	if (!o->task && !o->unowned) /* nobody to consume it */
		retire(u, o, NULL, false, UINT64_MAX, 0);
	return 0;
}

int ur_event(struct ur *u, const void *rec, size_t size)
{
	const struct tet_hdr *h = rec;

	u->t.records++;
	switch (size >= sizeof(*h) ? h->type : 0) {
	case TET_REC_URING_RING:
		if (size < sizeof(struct tet_uring_rec))
			break;
		return ring_get(u, ((const struct tet_uring_rec *)rec)->ctx, h->pid) ? 0 : -ENOMEM;
	case TET_REC_URING_SUBMIT:
		if (size < sizeof(struct tet_uring_rec))
			break;
		return on_submit(u, rec);
	case TET_REC_URING_DONE:
		if (size < sizeof(struct tet_uring_rec))
			break;
		return on_done(u, rec);
	case TET_REC_URING_PUSH:
		if (size < sizeof(struct tet_uring_push_rec))
			break;
		return on_push(u, rec);
	}
	u->t.bad_records++;
	return -EINVAL;
}

/* Both walk only the task's completed requests, oldest completion first, up to `ts` (a request
 * completed out of order waits for a later poll). */
void ur_task_wake(struct ur *u, uint32_t pid, uint64_t key, uint64_t ts)
{
	struct utask *t = utask_get(u, pid, key, false);

	for (struct ur_op *o = t ? t->done : NULL; o && o->done_ts <= ts; o = o->next_done)
		if (!o->wake_ts)
			o->wake_ts = ts;
}

void ur_task_poll(struct ur *u, uint32_t pid, uint64_t key, uint64_t ts, uint32_t tid,
		  const struct an_site *site)
{
	struct utask *t = utask_get(u, pid, key, false);
	struct ur_op *o, *n;

	for (o = t ? t->done : NULL; o && o->done_ts <= ts; o = n) {
		n = o->next_done;
		u->t.consumed++;
		{
			struct ur_opstats *st = opstats(&u->ops, &u->nops, o->opcode);

			if (st)
				hist_add(&st->consume_ns, ts - o->done_ts);
		}
		retire(u, o, site, false, ts - o->done_ts, tid);
	}
}

static void describe(struct ur *u, struct ur_op *o)
{
	o->described = true;
	if (!u->fd_fn || (o->flags & REQ_F_FIXED_FILE) || o->fd < 0)
		return;
	if (u->fd_fn(u->fd_ctx, o->pid, o->fd, o->fd_what, sizeof(o->fd_what)))
		o->fd_what[0] = 0;
}

/* `ts` is at least `d` before `now` (a stamp after `now`, as records of another CPU can be, is
 * not: the unsigned difference would be huge) */
static bool aged(uint64_t now, uint64_t ts, uint64_t d)
{
	return now >= ts && now - ts >= d;
}

void ur_tick(struct ur *u, uint64_t now)
{
	unsigned described = 0;

	/* submissions whose range never came */
	while (u->uq_len) {
		const struct uq_ent *e = &u->uq[u->uq_head];
		struct ur_op *o = htab_get(&u->unowned, e->ring, e->pos);

		if (o == e->o && !aged(now, e->ts, UR_UNOWNED_NS))
			break;
		u->uq_head = (u->uq_head + 1) % u->uq_cap;
		u->uq_len--;
		if (o != e->o)
			continue; /* linked meanwhile */
		htab_del(&u->unowned, o->ring, o->pos);
		o->unowned = false;
		u->t.unattributed++;
		if (o->done)
			retire(u, o, NULL, false, UINT64_MAX, 0);
	}
	if (now - u->last_walk < UR_WALK_NS)
		return;
	u->last_walk = now;
	for (struct ur_op *o = u->first, *n; o; o = n) {
		n = o->next;
		if (!o->done && !o->described && aged(now, o->submit_ts, UR_DESCRIBE_NS) &&
		    described < UR_DESCRIBE_PER_TICK) {
			describe(u, o);
			described++;
		} else if (o->done && o->task && aged(now, o->done_ts, UR_WAIT_NS)) {
			u->t.unconsumed++;
			retire(u, o, resolve(u, o), false, UINT64_MAX, 0);
		}
	}
}

void ur_finish(struct ur *u, uint64_t now)
{
	size_t n = 0;

	for (struct ur_op *o = u->first; o; o = o->next)
		n += !o->done;
	free(u->inflight);
	u->inflight = n ? calloc(n, sizeof(*u->inflight)) : NULL;
	u->ninflight = 0;
	u->uq_len = 0; /* every request is settled below */
	for (struct ur_op *o = u->first, *nx; o; o = nx) {
		const struct an_site *site = resolve(u, o);

		nx = o->next;
		if (o->unowned) {
			htab_del(&u->unowned, o->ring, o->pos);
			o->unowned = false;
			u->t.unattributed++;
		}
		if (o->done) {
			u->t.unconsumed += o->task != NULL;
			retire(u, o, site, false, UINT64_MAX, 0);
			continue;
		}
		u->t.in_flight++;
		{
			struct ur_opstats *st = opstats(&u->ops, &u->nops, o->opcode);

			if (st)
				st->in_flight++;
		}
		if (!o->described)
			describe(u, o);
		if (u->inflight)
			req_copy(o, site, &u->inflight[u->ninflight++]);
		retire(u, o, site, true, UINT64_MAX, 0);
	}
	(void)now;
}

const struct ur_totals *ur_totals(const struct ur *u)
{
	return &u->t;
}

size_t ur_opcodes(const struct ur *u, const struct ur_opstats **v)
{
	*v = u->ops;
	return u->nops;
}

size_t ur_sites(const struct ur *u, struct ur_site_stats *const **v)
{
	*v = u->sitev;
	return u->nsites;
}

size_t ur_inflight(const struct ur *u, const struct ur_inflight **v)
{
	*v = u->inflight;
	return u->ninflight;
}

size_t ur_task_inflight(const struct ur *u, uint32_t pid, uint64_t key,
			const struct ur_inflight **v, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < u->ninflight && n < max; i++)
		if (u->inflight[i].linked && u->inflight[i].pid == pid &&
		    u->inflight[i].task_key == key)
			v[n++] = &u->inflight[i];
	return n;
}

size_t ur_task_ended(const struct ur *u, uint32_t pid, uint64_t key, uint64_t from, uint64_t to,
		     const struct ur_ended **v, size_t max)
{
	size_t n = 0, start = (u->ended_head + UR_ENDED_MAX - u->ended_len) % UR_ENDED_MAX;

	for (size_t i = 0; i < u->ended_len; i++) {
		const struct ur_ended *e = &u->ended[(start + i) % UR_ENDED_MAX];

		if (e->req.pid != pid || e->req.task_key != key || e->req.submit_ts > to ||
		    e->done_ts < from)
			continue;
		if (n < max)
			v[n] = e;
		n++;
	}
	return n;
}

size_t ur_timeline(const struct ur *u, const struct ur_tl_rec **first, size_t *nfirst,
		   const struct ur_tl_rec **second, size_t *nsecond)
{
	size_t start = (u->tl_head + u->tl_cap - u->tl_len) % (u->tl_cap ? u->tl_cap : 1);

	*first = *second = NULL;
	*nfirst = *nsecond = 0;
	if (!u->tl_len)
		return 0;
	*first = &u->tl[start];
	*nfirst = start + u->tl_len <= u->tl_cap ? u->tl_len : u->tl_cap - start;
	*second = u->tl;
	*nsecond = u->tl_len - *nfirst;
	return u->tl_len;
}
