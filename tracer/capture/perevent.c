// SPDX-License-Identifier: MIT
/*
 * attach.c — preflight, target discovery, skeleton lifecycle (see attach.h).
 *
 * One BPF object (bpf/tokio_usdt.bpf.c) holds one program per probe. Programs of probes that
 * are not requested, or present in no target file, get autoload off, so they are never
 * loaded. Each (file, probe) pair is one bpf_program__attach_usdt(): libbpf finds the probe's
 * sites in the file, decodes their argument specs, and creates one uprobe per site with the
 * semaphore's file offset as ref_ctr_offset, so the kernel raises the semaphore in every
 * process mapping the file (including processes started later, for pid -1) and lowers it
 * again when the uprobe goes away. The links are ours (not the skeleton's) because one
 * program may be attached to several files (executable + shared library).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "attach.h"
#include "batchcap.h"
#include "bpfutil.h"
#include "caps.h"
#include "decode.h"
#include "fallback.h"
#include "notes.h"
#include "seterr.h"
#include "symbols.h"
#include "tokio_usdt.skel.h"

/* ---- libbpf log ---- */
static bool libbpf_verbose;
static char libbpf_last[512];

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[512];
	size_t n;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	if (level == LIBBPF_WARN)
		snprintf(libbpf_last, sizeof(libbpf_last), "%s", buf);
	if (libbpf_verbose)
		fprintf(stderr, "libbpf: %s\n", buf);
	return 0;
}

void tet_libbpf_setup(bool verbose)
{
	libbpf_verbose = verbose;
	libbpf_set_print(libbpf_print);
}

const char *tet_libbpf_last_error(void)
{
	return libbpf_last;
}

/* ---- session ---- */
struct tet_session {
	struct tet_fb *fb;           /* the uprobe fallback (then nothing below is used) */
	struct tet_bc *bc;           /* batched capture (then nothing below is used) */
	struct tokio_usdt *skel;
	struct ring_buffer *rb;
	struct bpf_link **links;
	size_t nlinks;
	unsigned probes;
	struct tet_session_opts o;
	uint64_t cutoff_ns;          /* set at detach: later events are not analyzed */
	struct tet_sched *sched;
	struct tet_sched_info sched_info;
	struct tet_uring *uring;
	struct tet_uring_info uring_info;
	uint64_t late[TET_EV_COUNT]; /* events after the cutoff, by type */
};


static struct bpf_program *prog_of(const struct tet_session *s, int ev)
{
	const struct tokio_usdt *skel = s->skel;

	switch (ev) {
	case TET_EV_SPAWN: return skel->progs.tet_spawn;
	case TET_EV_POLL_BEGIN: return skel->progs.tet_poll_begin;
	case TET_EV_POLL_END: return skel->progs.tet_poll_end;
	case TET_EV_YIELD: return skel->progs.tet_yielded;
	case TET_EV_WAKE: return skel->progs.tet_wake;
	case TET_EV_WAKER_CLONE: return skel->progs.tet_waker_clone;
	case TET_EV_WAKER_DROP: return skel->progs.tet_waker_drop;
	case TET_EV_TERMINATE: return skel->progs.tet_terminate;
	case TET_EV_PARK: return skel->progs.tet_park;
	case TET_EV_UNPARK: return skel->progs.tet_unpark;
	case TET_EV_WAIT: return skel->progs.tet_wait;
	case TET_EV_META: return skel->progs.tet_meta;
	case TET_EV_LOCK: return skel->progs.tet_lock;
	}
	return NULL;
}

/* Detaching takes ~0.1 s per uprobe and goes probe by probe, so while it runs some probes
 * still fire and others no longer do (e.g. a task spawned after task_spawn was detached and
 * polled before task_poll_begin was): what happens after the capture's end is left out. */
static int ring_cb(void *ctx, void *data, size_t size)
{
	struct tet_session *s = ctx;
	const struct tet_hdr *h = data;
	struct tet_spawn_rec copy;

	if (tet_decode_late(s->cutoff_ns, data, size, s->late))
		return 0;
	if (size >= sizeof(struct tet_spawn_rec) && h->type == TET_EV_SPAWN)
		return s->o.on_event(s->o.ctx, (void *)tet_decode_spawn(data, &copy), size);
	return s->o.on_event(s->o.ctx, data, size);
}

int tet_usdt_open(struct tokio_usdt **out, pid_t pid, char *err, size_t len)
{
	struct tokio_usdt *skel = tokio_usdt__open();

	if (!skel) {
		int ret = -errno;

		seterr(err, len, "cannot open the BPF object: %s", strerror(-ret));
		return ret;
	}
	skel->rodata->target_tgid = (uint32_t)(pid > 0 ? pid : 0);
	*out = skel;
	return 0;
}

int tet_usdt_load(struct tokio_usdt *skel, size_t ringbuf_bytes, char *err, size_t len)
{
	int ret = bpf_map__set_max_entries(skel->maps.events, (uint32_t)ringbuf_bytes);

	if (ret) {
		seterr(err, len, "ring buffer size %zu refused: %s", ringbuf_bytes, strerror(-ret));
		return ret;
	}
	ret = tokio_usdt__load(skel);
	if (ret)
		seterr(err, len, "cannot load the BPF programs: %s%s%s", strerror(-ret),
		       *libbpf_last ? " — libbpf: " : "", libbpf_last);
	return ret;
}

int tet_session_open(struct tet_session **out, const struct tet_session_opts *o,
		     const struct tet_targets *t, char *err, size_t len)
{
	struct tet_session *s;
	int ret;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (t->fallback) {
		struct tet_fb_opts fo = { .pid = o->pid, .probes = o->probes,
					  .ringbuf_bytes = o->ringbuf_bytes, .sched = o->sched,
					  .no_uring = o->no_uring, .on_event = o->on_event,
					  .ctx = o->ctx };

		ret = tet_fb_open(&s->fb, &fo, t->fb_attach, t->syms, err, len);
		if (ret) {
			free(s);
			return ret;
		}
		s->probes = tet_fb_probes(s->fb);
		*out = s;
		return 0;
	}
	if (o->batched) {
		struct tet_bc_opts bo = { .pid = o->pid, .ringbuf_bytes = o->ringbuf_bytes,
					  .sample_rate = o->sample_rate ? o->sample_rate : 1,
					  .sched = o->sched, .no_uring = o->no_uring,
					  .on_event = o->on_event, .ctx = o->ctx, .msgs = o->msgs };

		ret = tet_bc_open(&s->bc, &bo, t, err, len);
		if (ret) {
			free(s);
			return ret;
		}
		/* every event of every task, whatever --probes says: the records are one stream */
		s->probes = t->probes;
		*out = s;
		return 0;
	}
	s->probes = o->probes & t->probes;
	if (!s->probes) {
		seterr(err, len, "none of the requested probes exists in %s", t->exe ? t->exe : "the target");
		free(s);
		return -ENODATA;
	}
	ret = tet_usdt_open(&s->skel, o->pid, err, len);
	if (ret)
		goto fail;
	{
		unsigned native = 0, other = 0;

		for (size_t i = 0; i < t->n; i++)
			if (t->v[i].dialect->native)
				native |= t->v[i].probes;
			else
				other |= t->v[i].probes;
		for (int ev = 0; ev < TET_EV_COUNT; ev++)
			bpf_program__set_autoload(prog_of(s, ev), !!(s->probes & native & (1u << ev)));
		bpf_program__set_autoload(s->skel->progs.tet_dialect,
					  !!(s->probes & other & ~TET_PROBE_BIT(TET_EV_SPAWN)));
		bpf_program__set_autoload(s->skel->progs.tet_dialect_spawn,
					  !!(s->probes & other & TET_PROBE_BIT(TET_EV_SPAWN)));
	}
	bpf_program__set_autoload(s->skel->progs.tet_batch, false);
	bpf_program__set_autoload(s->skel->progs.tet_nop, false);
	bpf_program__set_autoload(s->skel->progs.tet_ur_poll_begin, false);
	bpf_program__set_autoload(s->skel->progs.tet_ur_poll_end, false);
	/* io_uring: the poll programs report the SQ ranges (only with both poll probes) */
	if (tet_uring_prepare(&(struct tet_uring_progs){ s->skel->progs.tet_ur_create,
			      s->skel->progs.tet_ur_submit, s->skel->progs.tet_ur_complete,
			      (uint64_t *)&s->skel->rodata->target_exe_ino,
			      (uint32_t *)&s->skel->rodata->target_exe_dev },
			      o->no_uring, tet_targets_exe_path(t, o->pid), &s->uring_info)) {
		s->uring_info.hooks = (s->probes & TET_CLASS_POLL) == TET_CLASS_POLL;
		if (!s->uring_info.hooks)
			s->uring_info.why_no_hooks = "the poll probes are not attached (--probes): io_uring requests are not linked to tasks";
	}
	/* polls open per thread: only with both poll probes */
	s->skel->rodata->track_polls =
		tet_sched_prepare(&(struct tet_sched_progs){ s->skel->progs.tet_switch,
				  s->skel->progs.tet_wakeup, s->skel->progs.tet_sample,
				  s->skel->progs.tet_exit,
				  &s->skel->rodata->exit_group_dead_arg,
				  &s->skel->rodata->steal_clock,
				  (int64_t *)&s->skel->rodata->steal_rq_delta },
				  &o->sched, &s->sched_info) &&
		(s->probes & TET_CLASS_POLL) == TET_CLASS_POLL;
	ret = tet_usdt_load(s->skel, o->ringbuf_bytes, err, len);
	if (ret)
		goto fail;
	for (size_t i = 0; i < t->n; i++) {
		for (int ev = 0; ev < TET_EV_COUNT; ev++) {
			struct bpf_link *l, **v;

			const struct tet_dprobe *dp = t->v[i].dprobe[ev];
			LIBBPF_OPTS(bpf_usdt_opts, uo);
			struct bpf_program *prog = prog_of(s, ev);
			const char *name = tet_probe_name(ev);

			if (!(s->probes & t->v[i].probes & (1u << ev)))
				continue;
			if (!t->v[i].dialect->native) {
				/* another dialect: the generic program, told the layout by cookie */
				prog = ev == TET_EV_SPAWN ? s->skel->progs.tet_dialect_spawn
							  : s->skel->progs.tet_dialect;
				name = dp->name;
				uo.usdt_cookie = tet_dprobe_cookie(dp);
			}
			l = bpf_program__attach_usdt(prog, o->pid > 0 ? o->pid : -1,
						     t->v[i].attach_path, "tokio", name, &uo);
			if (!l) {
				ret = -errno;
				seterr(err, len, "cannot attach tokio:%s in %s: %s%s%s", name,
				       t->v[i].path, strerror(-ret),
				       *libbpf_last ? " — libbpf: " : "", libbpf_last);
				goto fail;
			}
			v = realloc(s->links, (s->nlinks + 1) * sizeof(*v));
			if (!v) {
				bpf_link__destroy(l);
				ret = -ENOMEM;
				seterr(err, len, "out of memory");
				goto fail;
			}
			s->links = v;
			s->links[s->nlinks++] = l;
		}
	}
	s->o = *o;
	s->sched = tet_sched_attach(&(struct tet_sched_progs){ s->skel->progs.tet_switch,
				    s->skel->progs.tet_wakeup, s->skel->progs.tet_sample,
				  s->skel->progs.tet_exit, NULL, NULL, NULL },
				    &o->sched, &s->sched_info);
	s->uring = tet_uring_attach(&(struct tet_uring_progs){ s->skel->progs.tet_ur_create,
				    s->skel->progs.tet_ur_submit, s->skel->progs.tet_ur_complete,
				    NULL, NULL }, &s->uring_info);
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), ring_cb, s, NULL);
	if (!s->rb) {
		ret = -errno;
		seterr(err, len, "cannot open the ring buffer: %s", strerror(-ret));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	tet_session_close(s);
	return ret;
}

unsigned tet_session_probes(const struct tet_session *s)
{
	return s->probes;
}

size_t tet_session_links(const struct tet_session *s)
{
	if (s->bc)
		return tet_bc_info(s->bc)->sites + tet_bc_info(s->bc)->rate_sites;
	return s->fb ? tet_fb_info(s->fb)->uprobes : s->nlinks;
}

const struct tet_bc_info *tet_session_batch_info(const struct tet_session *s)
{
	return s->bc ? tet_bc_info(s->bc) : NULL;
}

const struct tb_stats *tet_session_batch_stats(const struct tet_session *s)
{
	return s->bc ? tet_bc_stats(s->bc) : NULL;
}

struct tb *tet_session_decoder(struct tet_session *s)
{
	return s->bc ? tet_bc_decoder(s->bc) : NULL;
}

const struct tet_fb_info *tet_session_fallback(const struct tet_session *s)
{
	return s->fb ? tet_fb_info(s->fb) : NULL;
}

size_t tet_session_prog_ids(const struct tet_session *s, uint32_t *ids, const char **names,
			    size_t max)
{
	size_t n = 0;

	if (s->fb)
		return tet_fb_prog_ids(s->fb, ids, names, max);
	if (s->bc)
		return tet_bc_prog_ids(s->bc, ids, names, max);
	for (int ev = 0; ev < TET_EV_COUNT && n < max; ev++) {
		struct bpf_program *p = prog_of(s, ev);

		if (!tet_prog_id(p, &ids[n]))
			continue;
		names[n] = bpf_program__name(p);
		n++;
	}
	return n;
}

const struct tet_sched_info *tet_session_sched(const struct tet_session *s)
{
	if (s->fb)
		return tet_fb_sched(s->fb);
	if (s->bc)
		return &tet_bc_info(s->bc)->sched;
	return &s->sched_info;
}

const struct tet_uring_info *tet_session_uring(const struct tet_session *s)
{
	if (s->fb)
		return tet_fb_uring(s->fb);
	if (s->bc)
		return tet_bc_uring(s->bc);
	return &s->uring_info;
}

int tet_session_stacks_fd(const struct tet_session *s)
{
	if (s->fb)
		return tet_fb_stacks_fd(s->fb);
	if (s->bc)
		return tet_bc_stacks_fd(s->bc);
	return s->skel ? bpf_map__fd(s->skel->maps.stacks) : -1;
}

int tet_session_lost_fd(const struct tet_session *s)
{
	if (s->fb)
		return tet_fb_lost_fd(s->fb);
	if (s->bc)
		return -1; /* a lost batch names no task */
	return s->skel ? bpf_map__fd(s->skel->maps.lost_tasks) : -1;
}

int tet_session_drain(struct tet_session *s)
{
	if (s->fb)
		return tet_fb_drain(s->fb);
	if (s->bc)
		return tet_bc_drain(s->bc);
	return s->rb ? ring_buffer__consume(s->rb) : 0;
}

int tet_session_counters(struct tet_session *s, struct tet_counters *sum)
{
	int ret;

	if (s->fb)
		return tet_fb_counters(s->fb, sum);
	if (s->bc)
		return tet_bc_counters(s->bc, sum);
	ret = tet_counters_sum(bpf_map__fd(s->skel->maps.counters), sum);
	if (ret)
		return ret;
	/* probe hits of the capture: those after its end were not analyzed */
	for (int i = 0; i < TET_EV_COUNT; i++)
		sum->seen[i] -= s->late[i] < sum->seen[i] ? s->late[i] : sum->seen[i];
	return 0;
}

void tet_session_end(struct tet_session *s, uint64_t cutoff_ns)
{
	if (s->fb) {
		tet_fb_detach(s->fb, cutoff_ns);
		return;
	}
	if (s->bc) {
		tet_bc_detach(s->bc, cutoff_ns);
		return;
	}
	if (!s->cutoff_ns)
		s->cutoff_ns = cutoff_ns;
	tet_session_detach(s);
}

void tet_session_detach(struct tet_session *s)
{
	if (s->fb) {
		tet_fb_detach(s->fb, 0);
		return;
	}
	if (s->bc) {
		tet_bc_detach(s->bc, 0);
		return;
	}
	if (!s->cutoff_ns) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts); /* bpf_ktime_get_ns()'s clock */
		s->cutoff_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	/* every program stops at the cutoff, before the links go one by one */
	if (s->skel && s->skel->bss)
		__atomic_store_n(&s->skel->bss->stop_ns, s->cutoff_ns, __ATOMIC_SEQ_CST);
	tet_sched_detach(s->sched);
	s->sched = NULL;
	tet_uring_detach(s->uring);
	s->uring = NULL;
	for (size_t i = 0; i < s->nlinks; i++)
		bpf_link__destroy(s->links[i]);
	free(s->links);
	s->links = NULL;
	s->nlinks = 0;
}

void tet_session_close(struct tet_session *s)
{
	if (!s)
		return;
	tet_fb_close(s->fb);
	s->fb = NULL;
	tet_bc_close(s->bc);
	s->bc = NULL;
	tet_session_detach(s);
	ring_buffer__free(s->rb);
	tokio_usdt__destroy(s->skel);
	free(s);
}
