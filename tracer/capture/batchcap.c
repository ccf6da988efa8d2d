// SPDX-License-Identifier: MIT
/*
 * batchcap.c — the batched capture session (see batchcap.h; the format is PROBES.md "Batch
 * format").
 *
 * Attach. tokio:event_batch has one site per gate word of the patched Tokio, each with its
 * own semaphore; all of them are attached (a tool that raises only one of them gets only that
 * word's records). The sites' arguments sit in fixed registers, so tet_batch is a plain uprobe
 * program: one uprobe_multi link takes every site with its semaphore as ref_ctr_offset (Linux
 * 6.6; else one perf uprobe per site, with ref_ctr_offset since 4.20). The sampling rate goes
 * first: tet_nop on the tokio:sample_rate sites of the rate's 1 bits (site k has lane k of
 * the rate's semaphores, by address order), so a thread that starts recording reads the rate
 * already set. Detach goes the other way. The kernel lowers every semaphore when its uprobe
 * goes away, also when the tracer dies.
 *
 * Reading in place. A thread that has not flushed for a while is swept: its buffer is read
 * with process_vm_readv (the tracer must be allowed to ptrace the process: root, or
 * CAP_SYS_PTRACE; without it, batches only, and events wait up to 2 s for ordering). The same
 * callback reads a spawn's strings when the batch that carried them was lost.
 *
 * Preemption. tet_switch (sched_switch, bpf/sched.bpf.h) sends the off-CPU periods of the
 * target's threads inside polls; they go straight to the analyzer (with the CPU samples), which
 * splits each poll into on-CPU, preempted and blocked time as in every capture mode, so
 * long_poll judges what the task did. Without them (a kernel refusing the BTF tracepoints),
 * polls are judged on wall time and the report says so.
 *
 * Clock. TSC stamps are converted through (TSC, CLOCK_MONOTONIC) pairs read here back to back
 * (the narrowest of three tries): two at start, one per drain at most every 10 ms.
 */
#include <dirent.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "discover.h"
#include "usdtobj.h"
#include "vocab.h"
#include "batchcap.h"
#include "decode.h"
#include "bpfutil.h"
#include "pmem.h"
#include "ratectl.h"
#include "seterr.h"
#include "tokio_usdt.skel.h"


struct tet_bc {
	struct tokio_usdt *skel;
	struct ring_buffer *rb;
	struct tet_attachments batch; /* the event_batch sites */
	struct tet_attachments rbits[TET_RATE_BITS]; /* the sample_rate sites by bit (attached
						      * first, detached last) */
	struct tet_sched *sched;     /* tet_switch, tet_wakeup, tet_sample */
	uint64_t cutoff_ns;          /* the capture's end (0: running) */
	struct tet_bc_info info;
	struct tb *tb;
	struct tet_bc_opts o;
	uint64_t last_pair_ns;
	uint64_t last_advance_ns;
	FILE *dump;                  /* TET_BATCH_DUMP: raw records for tests/unit/batch_replay */
	struct tet_uring *uring;     /* io_uring tracepoints, then the poll hooks */
	struct tet_uring_info uinfo;
	char **hook_paths;           /* the files with tokio:task_poll_begin/end, for the hooks */
	size_t nhook_paths;
	bool hooked;                 /* the hooks were tried */
	/* adaptive sampling (ratectl.h) */
	const struct tet_targets *targets;
	struct rc rc;
	const volatile uint64_t *ring_pos; /* the ring's consumer and producer positions */
	size_t ring_map_len;
	uint64_t ring_bytes;
	uint64_t drops_seen, rate_ts;
	/* the rule runs on a thread of its own at nice 0: the tracer (nice 10) may get little
	 * CPU from a saturated service, and the ring fills in ~100 ms at its top rate */
	pthread_t rc_thread;
	bool rc_running;
	int rc_stop;
	pthread_mutex_t rc_mu;       /* rbits, info.rate*, posted */
	struct { uint64_t ts; uint32_t rate, why; } posted[64];
	size_t nposted;
};

/* A ring of the target was seen: from now on its polls report the SQ ranges they fill, through
 * tet_ur_poll_begin/end on tokio:task_poll_begin/end (nothing else is recorded there). The
 * SQEs filled before this took effect stay unattributed. */
static void uring_hooks(struct tet_bc *s)
{
	/* the end first: a poll whose begin is seen then has its end seen too */
	static const char *const probes[2] = { "task_poll_end", "task_poll_begin" };
	struct bpf_program *progs[2] = { s->skel->progs.tet_ur_poll_end,
					 s->skel->progs.tet_ur_poll_begin };
	size_t n = 0;

	s->hooked = true;
	if (!s->uring || !s->uinfo.on)
		return;
	for (size_t i = 0; i < s->nhook_paths; i++) {
		for (int k = 0; k < 2; k++) {
			struct bpf_link *l = bpf_program__attach_usdt(progs[k],
				s->o.pid > 0 ? s->o.pid : -1, s->hook_paths[i], "tokio", probes[k], NULL);

			if (!l || tet_uring_keep(s->uring, l))
				continue;
			n++;
		}
	}
	s->uinfo.hooks = n > 0 && n == 2 * s->nhook_paths;
	if (!s->uinfo.hooks)
		s->uinfo.why_no_hooks = s->nhook_paths ?
			"the poll hooks could not be attached: io_uring requests are not linked to tasks" :
			"the target has no tokio:task_poll_begin/end probes: io_uring requests are not linked to tasks";
	else
		s->uinfo.why_no_hooks = NULL;
}

static const struct tet_uring_info *tet_bc_uring(const struct tet_bc *s)
{
	return &s->uinfo;
}

/* Dump format: records of [u32 size][u32 kind][size bytes]; kind 1 = a ring record, 2 = a
 * clock pair (u64 tsc, u64 ns), 3 = the capture start (u64 ns). */
static void dump(struct tet_bc *s, uint32_t kind, const void *p, uint32_t size)
{
	if (s->o.on_raw && kind <= 2)
		s->o.on_raw(s->o.raw_ctx, kind, p, size);
	if (!s->dump)
		return;
	if (fwrite(&size, 4, 1, s->dump) != 1 || fwrite(&kind, 4, 1, s->dump) != 1 ||
	    fwrite(p, size, 1, s->dump) != 1) {
		tet_say(s->o.msgs, TET_MSG_INFO, "TET_BATCH_DUMP: write failed, dump stopped");
		fclose(s->dump);
		s->dump = NULL;
	}
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A (TSC, CLOCK_MONOTONIC) pair: the narrowest bracket of three tries, its midpoint. */
static void clock_pair(struct tet_bc *s)
{
	uint64_t best_w = UINT64_MAX, tsc = 0, ns = 0;

	for (int i = 0; i < 3; i++) {
		uint64_t t0 = __rdtsc(), n = mono_ns(), t1 = __rdtsc();

		if (t1 - t0 < best_w) {
			best_w = t1 - t0;
			tsc = t0 + (t1 - t0) / 2;
			ns = n;
		}
	}
	tb_clock_pair(s->tb, tsc, ns);
	s->last_pair_ns = ns;
	if (s->dump || s->o.on_raw) {
		uint64_t pair[2] = { tsc, ns };

		dump(s, 2, pair, sizeof(pair));
	}
}

/* ---- process memory ----
 * process_vm_readv(2): it needs ptrace permission only (root or CAP_SYS_PTRACE), where opening
 * /proc/PID/mem of another user's process needs CAP_DAC_READ_SEARCH too; like that file it
 * faults the pages in. */

/* 0: the tracer may read pid's memory; -EPERM: not allowed; -ESRCH: no such process. Address 0
 * is never mapped: the permission check comes first, then the copy fails with EFAULT. */
static int mem_allowed(uint32_t pid)
{
	char c;
	struct iovec l = { &c, 1 }, r = { NULL, 1 };

	if (process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0) >= 0 || errno == EFAULT)
		return 0;
	return errno == EACCES ? -EPERM : -errno;
}

static ssize_t read_mem(struct tet_bc *s, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	ssize_t n;

	n = pmem_read(pid, addr, buf, len); /* bounded in time: the target cannot hold it */
	if (n > 0)
		return n;
	if (n == -EPERM || n == -EACCES) {
		/* --binary: a process of the binary the tracer may not read (another user's) */
		if (s->info.sweeps) {
			s->info.sweeps = false;
			s->info.why_no_sweeps = "no permission to read the memory of a process of the binary (needs root or CAP_SYS_PTRACE)";
		}
		return -EPERM;
	}
	return n < 0 ? n : -EIO;
}

/* The reads the decoder asks for (sweeps of quiet threads, lost strings), one at a time.
 * now 0: the strings only. */
static void serve_reads(struct tet_bc *s, uint64_t now)
{
	struct tb_read rq;

	while (tb_next_read(s->tb, now, &rq)) {
		ssize_t n;

		if (rq.kind == TB_READ_THREAD)
			n = pmem_thread_alive(rq.pid, rq.tid) ? 0 : -ESRCH;
		else if (s->info.sweeps)
			n = read_mem(s, rq.pid, rq.addr, rq.buf, rq.len);
		else
			n = -EPERM;
		tb_read_done(s->tb, n);
	}
}

/* ---- adaptive sampling (ratectl.h) ---- */
#define RC_STEP_NS 5000000ull /* how often the rule looks */

static int bc_attach_bit(struct tet_bc *s, int bit, const struct tet_targets *t, char *err,
			 size_t len);
static void bc_release_bit(struct tet_bc *s, int bit);

/* The process records one task in `rate` from the next flush of any of its threads on. The
 * adaptive rates are 2^k − 1 (ratectl.h), so a higher one has every bit of a lower one: a raise
 * adds bits, a lowering removes them, one site at a time, and whatever mix the process reads
 * meanwhile is a rate between the old and the new one — never stricter than both (as the OR of
 * 64 and 128 would be: 192), never every task. Returns the rate now set: `rate`, or the old one
 * when a bit cannot be attached (the bits added so far go again). */
static uint32_t set_rate(struct tet_bc *s, uint32_t rate)
{
	uint32_t was = s->info.rate;
	char err[256];

	for (int bit = 0; bit < TET_RATE_BITS; bit++) {
		if (!(rate & ~was & (1u << bit)))
			continue;
		if (bc_attach_bit(s, bit, s->targets, err, sizeof(err))) {
			for (int b = 0; b <= bit; b++)
				if (rate & ~was & (1u << b))
					bc_release_bit(s, b);
			if (!s->info.rate_failures++)
				tet_say(s->o.msgs, TET_MSG_WARN, "adaptive sampling: cannot set rate %u (%s); the rate stays %u",
					rate, err, was);
			return was;
		}
	}
	for (int bit = TET_RATE_BITS - 1; bit >= 0; bit--)
		if (was & ~rate & (1u << bit))
			bc_release_bit(s, bit);
	return rate;
}

/* The ring's positions, as the kernel publishes them: what was put in, what was taken out. */
static void ring_pos(const struct tet_bc *s, struct rc_look *l)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (!s->ring_pos)
		return;
	l->out = __atomic_load_n(&s->ring_pos[0], __ATOMIC_ACQUIRE);
	l->in = __atomic_load_n(&s->ring_pos[page / 8], __ATOMIC_ACQUIRE);
	l->size = s->ring_bytes;
}

static void rate_step(struct tet_bc *s, uint64_t now)
{
	struct rc_look l = { .ns = now, .lost = s->drops_seen };
	struct tet_counters c;
	struct timespec ts;
	uint32_t rate, why = TET_RATE_START, was = s->info.rate;

	if (!tet_counters_sum(bpf_map__fd(s->skel->maps.counters), &c))
		l.lost = s->drops_seen = c.batch_drops;
	if (!clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		l.cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	ring_pos(s, &l);
	rate = rc_step(&s->rc, &l, &why);
	if (rate == was)
		return;
	pthread_mutex_lock(&s->rc_mu);
	rate = set_rate(s, rate);
	s->rc.rate = rate;
	if (rate == was) {
		pthread_mutex_unlock(&s->rc_mu);
		return;
	}
	s->info.rate = rate;
	s->info.rate_changes++;
	/* a raise holds from the moment it was decided; a lowering once the process surely took
	 * it (the analyzer keeps the stricter rate until then); never out of order */
	s->rate_ts = rate > was ? (now > s->rate_ts ? now : s->rate_ts) :
		     mono_ns() + RC_SETTLE_NS;
	if (s->nposted < sizeof(s->posted) / sizeof(s->posted[0])) {
		s->posted[s->nposted].ts = s->rate_ts;
		s->posted[s->nposted].rate = rate;
		s->posted[s->nposted].why = why;
		s->nposted++;
	} else { /* the decoder has not taken the last 64: the latest rate replaces the last */
		s->posted[s->nposted - 1].ts = s->rate_ts;
		s->posted[s->nposted - 1].rate = rate > s->posted[s->nposted - 1].rate ?
						rate : s->posted[s->nposted - 1].rate;
	}
	pthread_mutex_unlock(&s->rc_mu);
}

static void *rc_main(void *arg)
{
	struct tet_bc *s = arg;
	struct timespec gap = { 0, RC_STEP_NS };

	/* back to nice 0 for this thread alone (root may; else it keeps the tracer's) */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 0)) {
		/* not fatal: the rule looks as often as it is scheduled */
	}
	while (!__atomic_load_n(&s->rc_stop, __ATOMIC_ACQUIRE)) {
		nanosleep(&gap, NULL);
		rate_step(s, mono_ns());
	}
	return NULL;
}

static void rc_stop(struct tet_bc *s)
{
	if (!s->rc_running)
		return;
	__atomic_store_n(&s->rc_stop, 1, __ATOMIC_RELEASE);
	pthread_join(s->rc_thread, NULL);
	s->rc_running = false;
}

/* The rates the rule set since the last look go to the decoder, in order. */
static void rates_posted(struct tet_bc *s)
{
	if (!s->info.adaptive)
		return;
	pthread_mutex_lock(&s->rc_mu);
	for (size_t i = 0; i < s->nposted; i++)
		tb_rate(s->tb, s->posted[i].ts, s->posted[i].rate, s->posted[i].why);
	s->nposted = 0;
	pthread_mutex_unlock(&s->rc_mu);
}

/* ---- ring ---- */
static void advance(struct tet_bc *s, uint64_t now)
{
	if (now - s->last_pair_ns >= 10000000ull)
		clock_pair(s);
	serve_reads(s, now);
	rates_posted(s);
	tb_advance(s->tb, now);
	s->last_advance_ns = now;
}

static int emit(void *ctx, const void *rec, size_t size)
{
	struct tet_bc *s = ctx;

	return s->o.on_event(s->o.ctx, (void *)rec, size);
}

static int ring_cb(void *ctx, void *data, size_t size)
{
	struct tet_bc *s = ctx;
	const struct tet_hdr *h = data;

	if (size >= sizeof(*h) && (h->type == TET_REC_OFFCPU || h->type == TET_REC_SAMPLE ||
				   h->type == TET_REC_EXIT))
		return s->o.on_event(s->o.ctx, data, size); /* the session leaves out the late */
	if (size >= sizeof(*h) && h->type >= TET_REC_URING_RING && h->type <= TET_REC_URING_PUSH) {
		if (!s->hooked && !s->cutoff_ns)
			uring_hooks(s);
		return s->o.on_event(s->o.ctx, data, size);
	}
	if (size >= sizeof(*h) && h->type == TET_REC_BATCH) {
		uint64_t now = mono_ns();
		int ret;

		dump(s, 1, data, (uint32_t)size);
		ret = s->o.no_decode ? 0 : tb_feed(s->tb, data, size);

		if (ret == -ENOMEM)
			return ret;
		/* ring_buffer__consume() returns only once the ring is empty, which a busy target
		 * may never let happen: keep the sweeps and the analysis going from here */
		if (now - s->last_advance_ns >= 5000000ull)
			advance(s, now);
	}
	return 0;
}

/* ---- attach ---- */
/* prog on n sites of one file, each with its semaphore, into att. */
static int attach_sites(struct tet_bc *s, struct tet_attachments *att, struct bpf_program *prog,
			const struct tet_target *f, const uint64_t *offs, const uint64_t *semas,
			size_t n, char *err, size_t len)
{
	pid_t pid = s->o.pid > 0 ? s->o.pid : 0;
	int ret = 0;

	if (!n)
		return 0;
	if (s->info.multi) {
		int fd = tet_uprobe_multi(bpf_program__fd(prog), f->attach_path, offs, semas, NULL, n,
					  false, pid);

		if (fd < 0) {
			seterr(err, len, "cannot attach tokio:%s (%zu sites) in %s: %s",
			       prog == s->skel->progs.tet_batch ? "event_batch" : "sample_rate", n,
			       f->path, strerror(-fd));
			return fd;
		}
		ret = tet_att_fd(att, fd);
	} else {
		for (size_t i = 0; i < n && !ret; i++) {
			LIBBPF_OPTS(bpf_uprobe_opts, uo, .ref_ctr_offset = (size_t)semas[i]);
			struct bpf_link *l = bpf_program__attach_uprobe_opts(prog, pid ? pid : -1,
									     f->attach_path, offs[i], &uo);

			if (!l) {
				ret = -errno;
				seterr(err, len, "cannot attach tokio:%s at offset 0x%llx of %s: %s%s%s",
				       prog == s->skel->progs.tet_batch ? "event_batch" : "sample_rate",
				       (unsigned long long)offs[i], f->path, strerror(-ret),
				       *tet_libbpf_last_error() ? " — libbpf: " : "",
				       tet_libbpf_last_error());
				return ret;
			}
			ret = tet_att_link(att, l);
		}
	}
	if (ret)
		seterr(err, len, "out of memory");
	return ret;
}

static void tet_bc_close(struct tet_bc *s);

/* The targets have what the options need: a file with event_batch sites (the first one is
 * returned), and every sample_rate site when a rate is set. */
static const struct tet_target *bc_first_target(const struct tet_bc_opts *o,
						const struct tet_targets *t, char *err, size_t len)
{
	const struct tet_target *first = NULL;

	for (size_t i = 0; i < t->n && !first; i++)
		if (t->v[i].nbatch)
			first = &t->v[i];
	if (!first) {
		seterr(err, len, "%s has no tokio:event_batch probe (a build of the kit before batched capture?): use --capture per-event",
		       t->exe ? t->exe : "the target");
		return NULL;
	}
	if (o->sample_rate > 1) {
		for (size_t i = 0; i < t->n; i++) {
			if (t->v[i].nbatch && t->v[i].nrate != TET_RATE_BITS) {
				seterr(err, len, "%s: tokio:sample_rate has %zu sites, %d expected: cannot set a sampling rate",
				       t->v[i].path, t->v[i].nrate, TET_RATE_BITS);
				return NULL;
			}
		}
	}
	return first;
}

/* What is loaded: the event_batch program (and the rate's nop), the io_uring poll hooks for
 * the files with both poll probes, the sched programs. */
static int bc_prepare(struct tet_bc *s, const struct tet_bc_opts *o, const struct tet_targets *t,
		      char *err, size_t len)
{
	struct bpf_program *p;
	int ret;

	bpf_object__for_each_program(p, s->skel->obj)
		bpf_program__set_autoload(p, p == s->skel->progs.tet_batch ||
					  (p == s->skel->progs.tet_nop &&
					   (o->sample_rate > 1 || o->adaptive)));
	if (tet_usdt_uring_prepare(s->skel, o->no_uring, tet_targets_exe_path(t, o->pid), &s->uinfo)) {
		s->uinfo.hooks_lazy = true;
		s->uinfo.why_no_hooks = "no io_uring ring of the target was seen";
		bpf_program__set_autoload(s->skel->progs.tet_ur_poll_begin, true);
		bpf_program__set_autoload(s->skel->progs.tet_ur_poll_end, true);
		for (size_t i = 0; i < t->n; i++) {
			char **v;

			if ((t->v[i].probes & TET_CLASS_POLL) != TET_CLASS_POLL)
				continue;
			v = realloc(s->hook_paths, (s->nhook_paths + 1) * sizeof(*v));
			if (!v || !(v[s->nhook_paths] = strdup(t->v[i].attach_path))) {
				if (v)
					s->hook_paths = v;
				ret = -ENOMEM;
				seterr(err, len, "out of memory");
				return ret;
			}
			s->hook_paths = v;
			s->nhook_paths++;
		}
	}
	s->skel->rodata->track_polls = tet_usdt_sched_prepare(s->skel, &o->sched, &s->info.sched);
	return 0;
}

/* Bit `bit` of the rate: its sample_rate site in every file with event_batch sites, one
 * attachment of its own (set_rate adds and removes bits one by one). */
static int bc_attach_bit(struct tet_bc *s, int bit, const struct tet_targets *t, char *err,
			 size_t len)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct tet_target *f = &t->v[i];
		int ret;

		if (!f->nbatch)
			continue;
		ret = attach_sites(s, &s->rbits[bit], s->skel->progs.tet_nop, f, &f->rate_off[bit],
				   &f->rate_sema[bit], 1, err, len);
		if (ret)
			return ret;
		s->info.rate_sites++;
	}
	return 0;
}

static void bc_release_bit(struct tet_bc *s, int bit)
{
	s->info.rate_sites -= s->rbits[bit].nlinks + s->rbits[bit].nfds;
	tet_att_release(&s->rbits[bit]);
	memset(&s->rbits[bit], 0, sizeof(s->rbits[bit]));
}

static void bc_release_rate(struct tet_bc *s)
{
	for (int bit = 0; bit < TET_RATE_BITS; bit++)
		bc_release_bit(s, bit);
}

/* The rate's sites: the rate first, so a thread that starts recording reads it already set. */
static int bc_attach_rate(struct tet_bc *s, uint32_t rate, const struct tet_targets *t,
			  char *err, size_t len)
{
	for (int bit = 0; bit < TET_RATE_BITS && rate > 1; bit++) {
		int ret = (rate & (1u << bit)) ? bc_attach_bit(s, bit, t, err, len) : 0;

		if (ret)
			return ret;
	}
	return 0;
}

int tet_bc_open(struct tet_bc **out, const struct tet_bc_opts *o, const struct tet_targets *t,
		char *err, size_t len)
{
	struct tb_opts to = { 0 };
	struct tet_bc *s;
	const struct tet_target *first = NULL;
	int ret;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *o;
	s->targets = t;
	pthread_mutex_init(&s->rc_mu, NULL);
	first = bc_first_target(o, t, err, len);
	if (!first) {
		free(s);
		return -ENODATA;
	}
	s->info.adaptive = o->adaptive;
	for (size_t i = 0; i < t->n && o->adaptive; i++) {
		if (t->v[i].nbatch && t->v[i].nrate != TET_RATE_BITS) {
			s->info.adaptive = false;
			s->info.why_fixed = "the probes do not have the 16 tokio:sample_rate sites that spell a rate (a kit build from before sampling?): every task is recorded";
		}
	}
	rc_init(&s->rc, o->sample_rate, o->max_cpu);
	ret = tet_usdt_open(&s->skel, o->pid, err, len);
	if (ret)
		goto fail;
	s->info.multi = tet_uprobe_multi_works(first->attach_path, first->batch_off[0], o->pid,
					       &s->info.why_single);
	ret = bc_prepare(s, o, t, err, len);
	if (ret)
		goto fail;
	if (s->info.multi) {
		bpf_program__set_expected_attach_type(s->skel->progs.tet_batch, TET_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(s->skel->progs.tet_nop, TET_TRACE_UPROBE_MULTI);
	}
	ret = tet_usdt_load(s->skel, o->ringbuf_bytes, err, len);
	if (ret)
		goto fail;
	/* in-place reads: allowed for this process? (--binary: checked per process later) */
	s->info.sweeps = true;
	if (o->pid > 0) {
		int e = mem_allowed((uint32_t)o->pid);

		if (e) {
			s->info.sweeps = false;
			s->info.why_no_sweeps = e == -EPERM ?
				"no permission to read the process's memory (needs root or CAP_SYS_PTRACE)" :
				"cannot read the process's memory";
		}
	}
	to.emit = emit;
	to.emit_ctx = s;
	to.reads = s->info.sweeps;
	s->tb = tb_new(&to);
	if (getenv("TET_BATCH_DUMP")) {
		s->dump = fopen(getenv("TET_BATCH_DUMP"), "we");
		if (!s->dump)
			tet_say(s->o.msgs, TET_MSG_INFO, "TET_BATCH_DUMP %s: %s",
				getenv("TET_BATCH_DUMP"), strerror(errno));
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), ring_cb, s, NULL);
	if (!s->tb || !s->rb) {
		ret = s->tb ? -errno : -ENOMEM;
		seterr(err, len, "cannot open the ring buffer: %s", strerror(-ret));
		goto fail;
	}
	{ /* the positions: the consumer's page, then the producer's (adaptive sampling, and
	   * a flight recorder's analysis that yields to the copy while the ring fills) */
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		void *p = mmap(NULL, 2 * page, PROT_READ, MAP_SHARED,
			       bpf_map__fd(s->skel->maps.events), 0);

		if (p != MAP_FAILED) {
			s->ring_pos = p;
			s->ring_map_len = 2 * page;
			s->ring_bytes = bpf_map__max_entries(s->skel->maps.events);
		}
	}
	clock_pair(s);
	ret = bc_attach_rate(s, o->sample_rate, t, err, len);
	if (ret)
		goto fail;
	s->info.rate = o->sample_rate ? o->sample_rate : 1;
	{ /* two clock pairs a few ms apart before the first stamp can arrive */
		struct timespec ts = { 0, 3000000 };

		nanosleep(&ts, NULL);
		clock_pair(s);
	}
	s->sched = tet_usdt_sched_attach(s->skel, &o->sched, &s->info.sched);
	s->uring = tet_usdt_uring_attach(s->skel, &s->uinfo);
	/* a target with io_uring code gets the poll hooks now: its first requests are linked too */
	if (t->uring_code && !getenv("TET_TEST_URING_LAZY")) {
		s->uinfo.hooks_lazy = false;
		uring_hooks(s);
	}
	s->info.preemption = s->info.sched.on;
	if (!s->info.preemption)
		s->info.why_no_preemption = s->info.sched.why_no_sched;
	s->info.start_ns = mono_ns();
	tb_set_start(s->tb, s->info.start_ns);
	/* the rate the analyzer holds the tasks to (with the kit's sampling sites) */
	if (s->info.adaptive || o->sample_rate > 1) {
		s->rate_ts = s->info.start_ns;
		tb_rate(s->tb, s->info.start_ns, s->info.rate, TET_RATE_START);
	}
	dump(s, 3, &s->info.start_ns, sizeof(s->info.start_ns));
	for (size_t i = 0; i < t->n; i++) {
		const struct tet_target *f = &t->v[i];

		ret = attach_sites(s, &s->batch, s->skel->progs.tet_batch, f, f->batch_off,
				   f->batch_sema, f->nbatch, err, len);
		if (ret)
			goto fail;
		s->info.sites += f->nbatch;
	}
	s->info.links = s->batch.nlinks + s->batch.nfds + s->info.rate_sites;
	if (s->info.adaptive) {
		if (pthread_create(&s->rc_thread, NULL, rc_main, s)) {
			s->info.adaptive = false;
			s->info.why_fixed = "cannot start the adaptive sampling thread";
		} else {
			s->rc_running = true;
		}
	}
	*out = s;
	return 0;
fail:
	tet_bc_close(s);
	return ret;
}

static const struct tet_bc_info *tet_bc_info(const struct tet_bc *s)
{
	return &s->info;
}

static const struct tb_stats *tet_bc_stats(const struct tet_bc *s)
{
	return tb_stats(s->tb);
}

static struct tb *tet_bc_decoder(struct tet_bc *s)
{
	return s->tb;
}

static size_t tet_bc_prog_ids(const struct tet_bc *s, uint32_t *ids, const char **names, size_t max)
{
	struct bpf_program *progs[] = { s->skel->progs.tet_batch, s->skel->progs.tet_nop,
					 s->skel->progs.tet_switch, s->skel->progs.tet_wakeup,
					 s->skel->progs.tet_sample };
	size_t n = 0;

	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]) && n < max; i++) {
		if (!tet_prog_id(progs[i], &ids[n]))
			continue;
		names[n++] = bpf_program__name(progs[i]);
	}
	return n;
}

static int tet_bc_drain(struct tet_bc *s)
{
	uint64_t before = mono_ns();
	int ret = s->rb ? ring_buffer__consume(s->rb) : 0;

	if (ret < 0)
		return ret;
	tb_ring_drained(s->tb, before);
	advance(s, mono_ns());
	return ret;
}

static int tet_bc_counters(struct tet_bc *s, struct tet_counters *sum)
{
	const struct tb_stats *st = tb_stats(s->tb);
	int ret = tet_counters_sum(bpf_map__fd(s->skel->maps.counters), sum);

	if (ret)
		return ret;
	for (int i = 0; i < TET_EV_COUNT; i++) {
		sum->drops[i] = sum->batch_lost[i];
		sum->seen[i] = st->by_type[i] + sum->drops[i];
	}
	sum->read_errors = st->string_misses;
	return 0;
}

static void tet_bc_detach(struct tet_bc *s, uint64_t cutoff)
{
	if (!s->batch.nlinks && !s->batch.nfds)
		return;
	rc_stop(s);
	rates_posted(s);
	s->cutoff_ns = cutoff;
	tb_set_cutoff(s->tb, cutoff);
	/* the kernel side stops at the cutoff; batches still come (they hold earlier events) */
	if (s->skel->bss)
		__atomic_store_n(&s->skel->bss->stop_ns, cutoff, __ATOMIC_SEQ_CST);
	/* what is in the ring, then what the threads still hold, then stop them */
	tet_bc_drain(s);
	clock_pair(s);
	tb_sweep_all(s->tb);
	serve_reads(s, mono_ns());
	tet_att_release(&s->batch);
	bc_release_rate(s);
	tet_sched_detach(s->sched);
	s->sched = NULL;
	tet_uring_detach(s->uring);
	s->uring = NULL;
	tet_bc_drain(s);
	serve_reads(s, 0);
	tb_finish(s->tb);
}

static void tet_bc_close(struct tet_bc *s)
{
	if (!s)
		return;
	rc_stop(s);
	tet_att_release(&s->batch);
	bc_release_rate(s);
	tet_sched_detach(s->sched);
	tet_uring_detach(s->uring);
	for (size_t i = 0; i < s->nhook_paths; i++)
		free(s->hook_paths[i]);
	free(s->hook_paths);
	ring_buffer__free(s->rb);
	if (s->ring_pos)
		munmap((void *)s->ring_pos, s->ring_map_len);
	tokio_usdt__destroy(s->skel);
	tb_free(s->tb);
	if (s->dump)
		fclose(s->dump);
	pthread_mutex_destroy(&s->rc_mu);
	free(s);
}

static int tet_bc_stacks_fd(const struct tet_bc *s)
{
	return bpf_map__fd(s->skel->maps.stacks);
}

/* ---- the capture interface (capture_ops.h) ---- */
static size_t bc_links(const void *b)
{
	const struct tet_bc_info *i = tet_bc_info(b);

	return i->sites + i->rate_sites;
}

static size_t bc_prog_ids(const void *b, uint32_t *ids, const char **names, size_t max)
{
	return tet_bc_prog_ids(b, ids, names, max);
}

static const struct tet_sched_info *bc_sched(const void *b)
{
	return &tet_bc_info(b)->sched;
}

static const struct tet_uring_info *bc_uring(const void *b)
{
	return tet_bc_uring(b);
}

static int bc_stacks_fd(const void *b)
{
	return tet_bc_stacks_fd(b);
}

static int bc_lost_fd(const void *b)
{
	return -1; /* a lost batch names no task */
}

static int bc_drain(void *b)
{
	return tet_bc_drain(b);
}

static int bc_counters(void *b, struct tet_counters *sum)
{
	return tet_bc_counters(b, sum);
}

static void bc_end(void *b, uint64_t cutoff_ns)
{
	tet_bc_detach(b, cutoff_ns);
}

static void bc_close(void *b)
{
	tet_bc_close(b);
}

static double bc_backlog(const void *b)
{
	const struct tet_bc *s = b;
	struct rc_look l = { 0 };

	ring_pos(s, &l);
	return l.size && l.in >= l.out ? (double)(l.in - l.out) / (double)l.size : -1.0;
}

static const struct tet_bc_info *bc_info(const void *b)
{
	return tet_bc_info(b);
}

static const struct tb_stats *bc_stats(const void *b)
{
	return tet_bc_stats(b);
}

static struct tb *bc_decoder(void *b)
{
	return tet_bc_decoder(b);
}

const struct tet_capture_ops tet_bc_ops = {
	.name = "batched",
	.links = bc_links,
	.prog_ids = bc_prog_ids,
	.sched = bc_sched,
	.uring = bc_uring,
	.stacks_fd = bc_stacks_fd,
	.lost_fd = bc_lost_fd,
	.drain = bc_drain,
	.counters = bc_counters,
	.end = bc_end,
	.close = bc_close,
	.batch_info = bc_info,
	.batch_stats = bc_stats,
	.decoder = bc_decoder,
	.backlog = bc_backlog,
};
