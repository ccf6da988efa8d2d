/* SPDX-License-Identifier: MIT */
/*
 * uring.h — io_uring operations of the traced tasks: which task filled each request, when the
 * kernel submitted and completed it, the wake that followed and the poll that consumed it.
 * Pure computation on the records of bpf/uring.bpf.h (events.h TET_REC_URING_*) and on the
 * tasks' wakes and polls the analyzer passes on; the analyzer owns one (an_uring()).
 *
 * Joining. A request is named by (ring, SQ position) on both sides: io_uring_submit_req gives
 * the position of every request, the poll hooks give the positions each poll filled
 * (TET_REC_URING_PUSH). Either may come first (a runtime that submits inside the poll sends the
 * submission before the poll's end), so unmatched positions and ranges wait (bounded) for the
 * other. A completion is matched to the oldest request in flight with its (ring, user_data);
 * a CQE flagged IORING_CQE_F_MORE (multishot) leaves the request in flight. Then, on the
 * linked task: the first wake at or after the completion, and the first poll beginning at or
 * after it — the poll that consumed the result (complete → poll delay).
 *
 * Bounds: requests in flight are tracked up to UR_INFLIGHT_MAX (more: counted, not followed);
 * completed requests wait for their task's poll up to UR_WAIT_NS, then count as unconsumed.
 */
#ifndef TET_URING_H
#define TET_URING_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hist.h"

struct an_site;

#define UR_INFLIGHT_MAX (1u << 20)
#define UR_WAIT_NS 10000000000ull   /* a completion unconsumed this long is counted so */
#define UR_DESCRIBE_NS 100000000ull /* requests in flight this long get their fd described */
#define UR_FD_WHAT_MAX 128

/* Per opcode (globally, or of one spawn site). */
struct ur_opstats {
	uint8_t opcode;
	uint64_t submitted, completed, errors; /* errors: res < 0 */
	uint64_t in_flight;                    /* at the end */
	struct hist lat_ns;                    /* submit → complete (tracepoint timestamps) */
	struct hist consume_ns;                /* complete → the linked task's next poll */
};

struct ur_site_stats {
	const struct an_site *site;            /* NULL: requests no task was found for */
	uint64_t tasks;                        /* tasks of the site that submitted */
	size_t nops;
	struct ur_opstats *ops;                /* by opcode, ascending */
};

/* One task's requests (copied into its summary when it is retired, tasks[].io_uring). */
#define UR_TASK_OPS 6
struct ur_task_stats {
	uint64_t requests, completed, errors;  /* linked to it; … completed; … with res < 0 */
	uint64_t in_flight;                    /* alive and not completed, when asked */
	uint64_t lat_sum_ns, lat_max_ns;       /* submit → complete of the completed ones */
	uint8_t nops;
	struct { uint8_t opcode; uint64_t n; } ops[UR_TASK_OPS]; /* requests by opcode, first
						* UR_TASK_OPS opcodes seen; the others: */
	uint64_t ops_other;
};

/* A request still in flight at the end (or at the time of the query). */
struct ur_inflight {
	uint32_t pid, tid;                     /* tid: the submitting thread */
	uint64_t task_key;                     /* task id (or header pointer in the fallback) */
	bool linked;                           /* task_key is valid */
	const struct an_site *site;            /* resolved at the end (NULL: unknown) */
	uint64_t ring, user_data;
	int32_t fd;
	bool fixed_file;                       /* fd is an index into the registered files */
	uint8_t opcode;
	uint64_t submit_ts;
	char fd_what[UR_FD_WHAT_MAX];          /* what the fd was, as the process's fd table said
						* (readlink, untrusted bytes, NUL-terminated); "" unknown */
};

/* A request of a task that ended — completed, failed or cancelled — after UR_DESCRIBE_NS or more
 * in flight: what its task waited on meanwhile, also once it is over (bounded ring of
 * UR_ENDED_MAX, oldest overwritten). */
#define UR_ENDED_MAX 4096
struct ur_ended {
	struct ur_inflight req;                /* the request (site unresolved: NULL; fd_what told
						* at the latest when it ended) */
	uint64_t done_ts;
	int32_t res;                           /* the CQE's (-ECANCELED: cancelled) */
};

/* A finished request for timeline reporters (bounded ring, oldest overwritten). */
struct ur_tl_rec {
	uint64_t submit_ts, done_ts, wake_ts, poll_ts;  /* 0: not seen */
	uint64_t task_key, ring, user_data;
	uint32_t pid, tid;                     /* tid: the submitting thread */
	uint32_t poll_tid;                     /* the thread of the consuming poll (0 unknown) */
	int32_t res, fd;
	uint8_t opcode;
	bool linked;
};

struct ur_totals {
	uint64_t rings;
	uint64_t records, bad_records;
	uint64_t submitted, completed, errors; /* requests (completed: their final CQE matched;
						* errors: with res < 0), as by opcode */
	uint64_t linked;                       /* submissions joined to a task */
	uint64_t unattributed;                 /* submissions no poll range covered (filled
						* before the ring's thread was known, or their
						* range was lost) */
	uint64_t completions_unmatched;        /* a CQE with no submission seen (before the
						* capture, or without a request) */
	uint64_t multishot_more;               /* CQEs flagged IORING_CQE_F_MORE */
	uint64_t consumed;                     /* completions followed by a poll of their task */
	uint64_t unconsumed;                   /* … not within UR_WAIT_NS or by the end */
	uint64_t untracked;                    /* requests beyond UR_INFLIGHT_MAX */
	uint64_t in_flight;                    /* at the end */
	uint64_t pushes;                       /* SQ ranges of polls received */
};

/* Resolves a task to its spawn site (the analyzer's), NULL when unknown. */
typedef const struct an_site *(*ur_site_fn)(void *ctx, uint32_t pid, uint64_t task_key);
/* Says what fd `fd` of process `pid` is (e.g. readlink of /proc/PID/fd/FD) into buf; returns
 * 0, or -1 when it cannot be told. */
typedef int (*ur_fd_fn)(void *ctx, uint32_t pid, int32_t fd, char *buf, size_t len);

struct ur;

struct ur *ur_new(size_t timeline_cap);
void ur_free(struct ur *u);
void ur_set_site_fn(struct ur *u, ur_site_fn fn, void *ctx);
void ur_set_fd_fn(struct ur *u, ur_fd_fn fn, void *ctx);
/* A TET_REC_URING_* record: 0, -EINVAL (malformed: counted), -ENOMEM. */
int ur_event(struct ur *u, const void *rec, size_t size);
/* True once a ring was seen (the analyzer then passes wakes and polls on). */
bool ur_active(const struct ur *u);
/* The analyzer's task events. */
void ur_task_wake(struct ur *u, uint32_t pid, uint64_t key, uint64_t ts);
void ur_task_poll(struct ur *u, uint32_t pid, uint64_t key, uint64_t ts, uint32_t tid,
		  const struct an_site *site);
/* The task's figures (all 0 when none or unknown), and: the analyzer retired the task (its
 * summary has the figures; the entry goes once no request of the task is alive). */
void ur_task_stats(const struct ur *u, uint32_t pid, uint64_t key, struct ur_task_stats *out);
void ur_task_gone(struct ur *u, uint32_t pid, uint64_t key);
/* Describes the fds of requests in flight for UR_DESCRIBE_NS (a bounded number per call) and
 * gives up on completions waiting too long. Call on every drain tick. */
void ur_tick(struct ur *u, uint64_t now);
/* Ends the capture: the requests in flight, per-site figures. */
void ur_finish(struct ur *u, uint64_t now);

const struct ur_totals *ur_totals(const struct ur *u);
size_t ur_opcodes(const struct ur *u, const struct ur_opstats **v);
size_t ur_sites(const struct ur *u, struct ur_site_stats *const **v);
size_t ur_inflight(const struct ur *u, const struct ur_inflight **v);   /* after ur_finish */
/* The in-flight requests of one task (after ur_finish), oldest first, into v (up to max). */
size_t ur_task_inflight(const struct ur *u, uint32_t pid, uint64_t key,
			const struct ur_inflight **v, size_t max);
/* The ended requests (struct ur_ended) of one task in flight at some time in [from, to], oldest
 * first, into v (up to max); how many there are in all. */
size_t ur_task_ended(const struct ur *u, uint32_t pid, uint64_t key, uint64_t from, uint64_t to,
		     const struct ur_ended **v, size_t max);
size_t ur_timeline(const struct ur *u, const struct ur_tl_rec **first, size_t *nfirst,
		   const struct ur_tl_rec **second, size_t *nsecond);
/* "READ", "WRITE", … (IORING_OP_*), or NULL for a code this table does not know. */
const char *ur_opcode_name(unsigned op);
/* The same, or "opcode N" for a code the table does not know (into buf). */
const char *ur_opcode_str(unsigned op, char *buf, size_t len);

#endif
