// SPDX-License-Identifier: MIT
/*
 * fuzz_batch — libFuzzer target for batched capture's decode stage (tracer/decode/batch.c) and
 * the analyzer fed what it decodes (tracer/analyze/analyzer.c): everything a traced process
 * controls in batched capture — heads, records, open-poll stacks, strings, sequence numbers,
 * clock stamps, and the buffers the tracer reads in place — comes from the input.
 *
 * The input is a script of operations, each an opcode byte and its operands (little-endian;
 * a short input ends the script):
 *   0 clock pair       u64 tsc, u64 ns
 *   1 batch            u8 thread (1-4), u8 flags, head (sizeof struct tet_batch_head), u16 n,
 *                      n bytes of records; flags: 1 keep the head's magic/version/sizes as
 *                      given (else made valid), 2 keep its tid, 4 keep len (else len = n),
 *                      8 keep its seq (else the thread's next), 16 copied shorter than len
 *   2 advance          u64 now
 *   3 ring drained     u64 before
 *   4 cutoff           u64 ns
 *   5 start            u64 ns
 *   6 process memory   u8 thread, u16 offset, u16 n, n bytes written into its buffer
 *   7 sweep all        u64 now (every thread's buffer read)
 *   8 process gone     u8 thread (its memory reads fail with ESRCH from then on)
 * At the end: tb_finish, an_finish (FUZZ_BATCH_VERBOSE=1: then one line of what was decoded). Memory reads for sweeps and strings go to each thread's
 * buffer (head + 32 KiB of records), which op 6 writes; anything else fails.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "analyzer.h"
#include "batch.h"

#define THREADS 4
#define PID 4242
#define BUF_BASE 0x7f0000000000ull
#define BUF_BYTES (sizeof(struct tet_batch_head) + TET_BATCH_DATA_MAX)

static unsigned char mem[THREADS][BUF_BYTES];
static bool gone[THREADS];
static uint64_t next_seq[THREADS];

struct in {
	const uint8_t *p;
	size_t n;
};

static bool take(struct in *in, void *out, size_t len)
{
	if (in->n < len)
		return false;
	memcpy(out, in->p, len);
	in->p += len;
	in->n -= len;
	return true;
}

static ssize_t read_mem(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	if (pid != PID || addr < BUF_BASE)
		return -EIO;
	for (unsigned t = 0; t < THREADS; t++) {
		uint64_t base = BUF_BASE + (uint64_t)t * 0x100000;

		if (addr < base || addr - base >= BUF_BYTES)
			continue;
		if (gone[t])
			return -ESRCH;
		if (len > BUF_BYTES - (addr - base))
			return -EFAULT;
		memcpy(buf, mem[t] + (addr - base), len);
		return (ssize_t)len;
	}
	return -EIO;
}

static bool alive(uint32_t pid, uint32_t tid)
{
	return pid == PID && tid >= 1 && tid <= THREADS && !gone[tid - 1];
}

/* The capture's side of the decoder's reads (tb_next_read), answered from the buffers; at
 * most a bounded number per call (the decoder asks for no read twice at one `now`). */
static void serve(struct tb *b, uint64_t now)
{
	struct tb_read rq;

	for (unsigned i = 0; i < 100000 && tb_next_read(b, now, &rq); i++)
		tb_read_done(b, rq.kind == TB_READ_THREAD ? (alive(rq.pid, rq.tid) ? 0 : -ESRCH) :
				read_mem(rq.pid, rq.addr, rq.buf, rq.len));
}

static int emit(void *ctx, const void *rec, size_t size)
{
	return an_event(ctx, rec, size);
}

static void batch(struct tb *b, struct in *in)
{
	static unsigned char rec[sizeof(struct tet_batch_rec) + BUF_BYTES];
	struct tet_batch_rec *r = (struct tet_batch_rec *)rec;
	struct tet_batch_head h;
	uint8_t th, flags;
	uint16_t n;
	unsigned t;

	if (!take(in, &th, 1) || !take(in, &flags, 1) || !take(in, &h, sizeof(h)) || !take(in, &n, 2))
		return;
	t = th % THREADS;
	if (n > TET_BATCH_DATA_MAX)
		n = TET_BATCH_DATA_MAX;
	if (n > in->n)
		n = (uint16_t)in->n;
	n &= (uint16_t)~7u;
	if (!(flags & 1)) {
		h.magic = TET_BATCH_MAGIC;
		h.version = TET_BATCH_VERSION;
		h.head_bytes = sizeof(h);
		h.data_cap = TET_BATCH_DATA_MAX;
		h.clock = h.clock & 1 ? TET_BATCH_CLOCK_TSC : TET_BATCH_CLOCK_MONO;
	}
	if (!(flags & 2))
		h.tid = t + 1;
	if (!(flags & 4))
		h.len = n;
	if (!(flags & 8))
		h.seq = next_seq[t]++;
	memset(r, 0, sizeof(*r));
	r->h.ts = h.flush_ns;
	r->h.type = TET_REC_BATCH;
	r->h.pid = PID;
	r->h.tid = t + 1;
	r->buf = BUF_BASE + (uint64_t)t * 0x100000;
	r->seq = h.seq;
	r->clock = h.flush_clock;
	r->mono_ns = h.flush_ns;
	r->len = h.len;
	r->copied = (uint32_t)sizeof(h) + n;
	if ((flags & 16) && n >= 8)
		r->copied -= 8;
	memcpy(r->data, &h, sizeof(h));
	memcpy(r->data + sizeof(h), in->p, n);
	in->p += n;
	in->n -= n;
	tb_feed(b, r, sizeof(*r) + r->copied);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	struct an_opts ao;
	struct tb_opts o = { 0 };
	struct analyzer *an;
	struct tb *b;
	uint8_t op;

	memset(mem, 0, sizeof(mem));
	memset(gone, 0, sizeof(gone));
	memset(next_seq, 0, sizeof(next_seq));
	an_opts_default(&ao);
	an = an_new(&ao);
	if (!an)
		return 0;
	o.emit = emit;
	o.emit_ctx = an;
	o.reads = true;
	b = tb_new(&o);
	if (!b) {
		an_free(an);
		return 0;
	}
	while (take(&in, &op, 1)) {
		uint64_t u[2];
		uint16_t off, n;
		uint8_t th;

		switch (op % 9) {
		case 0:
			if (take(&in, u, 16))
				tb_clock_pair(b, u[0], u[1]);
			break;
		case 1:
			batch(b, &in);
			break;
		case 2:
			if (take(&in, u, 8)) {
				serve(b, u[0]);
				tb_advance(b, u[0]);
				an_tick(an, u[0]);
			}
			break;
		case 3:
			if (take(&in, u, 8))
				tb_ring_drained(b, u[0]);
			break;
		case 4:
			if (take(&in, u, 8))
				tb_set_cutoff(b, u[0]);
			break;
		case 5:
			if (take(&in, u, 8))
				tb_set_start(b, u[0]);
			break;
		case 6:
			if (!take(&in, &th, 1) || !take(&in, &off, 2) || !take(&in, &n, 2))
				break;
			off %= BUF_BYTES;
			if (n > BUF_BYTES - off)
				n = (uint16_t)(BUF_BYTES - off);
			if (n > in.n)
				n = (uint16_t)in.n;
			memcpy(mem[th % THREADS] + off, in.p, n);
			in.p += n;
			in.n -= n;
			break;
		case 7:
			if (!take(&in, u, 8))
				break;
			tb_sweep_all(b);
			serve(b, u[0]);
			break;
		case 8:
			if (take(&in, &th, 1))
				gone[th % THREADS] = true;
			break;
		}
	}
	serve(b, 0);
	tb_finish(b);
	an_finish(an, UINT64_MAX / 2);
	if (getenv("FUZZ_BATCH_VERBOSE")) { /* what a seed reaches (batch_seeds.py checks) */
		const struct tb_stats *st = tb_stats(b);

		printf("batches=%llu records=%llu events=%llu bad_batches=%llu bad_records=%llu "
		       "sweep_records=%llu vanished=%llu strings=%llu after_cutoff=%llu polls=%llu tasks=%llu\n",
		       (unsigned long long)st->batches, (unsigned long long)st->records,
		       (unsigned long long)st->events, (unsigned long long)st->bad_batches,
		       (unsigned long long)st->bad_records, (unsigned long long)st->sweep_records,
		       (unsigned long long)st->threads_vanished, (unsigned long long)st->strings,
		       (unsigned long long)st->after_cutoff, (unsigned long long)an_totals(an)->polls,
		       (unsigned long long)an_totals(an)->tasks_seen);
	}
	tb_free(b);
	an_free(an);
	return 0;
}
