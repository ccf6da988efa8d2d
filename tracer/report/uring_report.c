// SPDX-License-Identifier: MIT
/*
 * uring_report.c — io_uring in the terminal summary and the JSON report (uring_report.h; the figures
 * come from uring.h, docs/report-schema.md describes the fields). Nothing is shown for a target
 * that used no io_uring: the JSON's "io_uring" is null, the terminal has no section.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "jsonparts.h"
#include "text.h"
#include "uring_report.h"
#include "units.h"
#include "uring.h"

#define UR_JSON_INFLIGHT_MAX 1000  /* requests in flight listed in the JSON (the rest counted) */
#define UR_FINDING_OPS 4           /* … in a finding */

#define opname ur_opcode_str

/* "READ fd 11 (pipe:[123])", "WRITE registered file 3", … */
static const char *op_target(const struct ur_inflight *f, char *buf, size_t len)
{
	char nb[24], what[UR_FD_WHAT_MAX * 4 + 8];
	const char *n = opname(f->opcode, nb, sizeof(nb));

	if (f->fixed_file) {
		snprintf(buf, len, "%s registered file %d", n, f->fd);
	} else if (f->fd >= 0) {
		if (*f->fd_what)
			text_sanitize(f->fd_what, strlen(f->fd_what), 80, what, sizeof(what));
		snprintf(buf, len, "%s fd %d%s%s%s", n, f->fd, *f->fd_what ? " (" : "",
			 *f->fd_what ? what : "", *f->fd_what ? ")" : "");
	} else {
		snprintf(buf, len, "%s", n);
	}
	return buf;
}

static uint64_t finding_key(const struct an_finding *f)
{
	return f->task_id ? f->task_id : f->header_ptr;
}

/* The stalls' span: from the first one's start to the end of the last (its longest pending
 * time after the last start; still going on: to the end). */
static uint64_t stall_end(const struct an_finding *f)
{
	if (f->ongoing)
		return UINT64_MAX;
	return f->value_ns > UINT64_MAX - f->last_ts ? UINT64_MAX : f->last_ts + f->value_ns;
}

static const char *outcome(int32_t res)
{
	return res == -ECANCELED ? "cancelled" : res < 0 ? "failed" : "completed";
}

/* "ECANCELED", "EIO", …; "res 4096" for a result */
static const char *res_str(int32_t res, char *buf, size_t len)
{
	const char *n = res < 0 && res > INT32_MIN ? strerrorname_np(-res) : NULL;

	if (n)
		snprintf(buf, len, "%s", n);
	else if (res < 0)
		snprintf(buf, len, "error %d", res);
	else
		snprintf(buf, len, "res %d", res);
	return buf;
}

void report_uring_finding_text(const struct analyzer *a, const struct an_finding *f, char *buf,
			       size_t len)
{
	const struct ur_inflight *v[UR_FINDING_OPS + 1];
	const struct ur *u = an_uring(a);
	size_t n, l;
	char t[600], age[32];

	if (f->kind != AN_STALLED || !ur_active(u))
		return;
	n = ur_task_inflight(u, f->pid, finding_key(f), v, UR_FINDING_OPS + 1);
	for (size_t i = 0; i < n && i < UR_FINDING_OPS; i++) {
		uint64_t now = an_now(a);

		l = strlen(buf);
		fmt_duration(now > v[i]->submit_ts ? now - v[i]->submit_ts : 0, age, sizeof(age));
		snprintf(buf + l, len - l, "; waiting on io_uring %s, submitted %s before the end, not completed",
			 op_target(v[i], t, sizeof(t)), age);
	}
	if (n > UR_FINDING_OPS) {
		l = strlen(buf);
		snprintf(buf + l, len - l, "; and more io_uring requests in flight");
	}
	{
		const struct ur_ended *e[UR_FINDING_OPS];
		size_t m = ur_task_ended(u, f->pid, finding_key(f), f->first_ts, stall_end(f), e,
					 UR_FINDING_OPS);
		char rs[48];

		for (size_t i = 0; i < m && i < UR_FINDING_OPS; i++) {
			l = strlen(buf);
			fmt_duration(e[i]->done_ts - e[i]->req.submit_ts, age, sizeof(age));
			snprintf(buf + l, len - l, "; waiting on io_uring %s for %s, until it %s%s (%s)",
				 op_target(&e[i]->req, t, sizeof(t)), age,
				 e[i]->res == -ECANCELED ? "was " : "", outcome(e[i]->res),
				 res_str(e[i]->res, rs, sizeof(rs)));
		}
		if (m > UR_FINDING_OPS) {
			l = strlen(buf);
			snprintf(buf + l, len - l, "; and %zu more io_uring requests that ended", m - UR_FINDING_OPS);
		}
	}
}

/* The fields of a request that io_uring.in_flight_requests and findings[].io_uring_waited share:
 * opcode … submitted_at_ns. */
static void j_request(struct jw *w, const struct report_meta *m, const struct ur_inflight *f)
{
	char nb[24], hex[24];

	jw_ku64(w, "opcode", f->opcode);
	jw_kstr(w, "op", opname(f->opcode, nb, sizeof(nb)));
	jw_ki64(w, "fd", f->fd);
	jw_kbool(w, "fixed_file", f->fixed_file);
	jw_key(w, "fd_target");
	if (*f->fd_what)
		jw_str(w, f->fd_what);
	else
		jw_null(w);
	snprintf(hex, sizeof(hex), "0x%" PRIx64, f->user_data);
	jw_kstr(w, "user_data", hex);
	jw_ku64(w, "submitted_at_ns", report_rel(m, f->submit_ts));
}

static void j_inflight(struct jw *w, const struct report_meta *m, const struct ur_inflight *f,
		       uint64_t now)
{
	jw_obj_begin(w);
	jw_ku64(w, "pid", f->pid);
	jw_key(w, "task_id");
	if (f->linked)
		jw_u64(w, f->task_key);
	else
		jw_null(w);
	report_json_site_ref(w, f->site);
	j_request(w, m, f);
	jw_ku64(w, "age_ns", now > f->submit_ts ? now - f->submit_ts : 0);
	jw_obj_end(w);
}

const struct ur_inflight *report_uring_task_request(const struct analyzer *a,
						    const struct an_task_summary *t)
{
	const struct ur_inflight *v[1];
	const struct ur *u = an_uring(a);

	if (t->nwaits || !ur_active(u) ||
	    !ur_task_inflight(u, t->pid, t->task_id ? t->task_id : t->header_ptr, v, 1))
		return NULL;
	return v[0];
}

void report_uring_task_wait(struct jw *w, const struct analyzer *a, const struct report_meta *m,
			    const struct ur_inflight *req)
{
	jw_kstr(w, "kind", "io_uring");
	jw_kstr(w, "class", "request");
	jw_key(w, "io_uring");
	j_inflight(w, m, req, an_now(a));
}

void report_uring_finding_json(struct jw *w, const struct analyzer *a,
			       const struct report_meta *m, const struct an_finding *f)
{
	const struct ur_inflight *v[64];
	const struct ur *u = an_uring(a);
	size_t n;

	if (f->kind != AN_STALLED || !ur_active(u))
		return;
	n = ur_task_inflight(u, f->pid, finding_key(f), v, 64);
	jw_key(w, "io_uring_in_flight");
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++)
		j_inflight(w, m, v[i], an_now(a));
	jw_arr_end(w);
	{
		const struct ur_ended *e[64];
		size_t k = ur_task_ended(u, f->pid, finding_key(f), f->first_ts, stall_end(f), e, 64);

		jw_key(w, "io_uring_waited");
		jw_arr_begin(w);
		for (size_t i = 0; i < k && i < 64; i++) {
			jw_obj_begin(w);
			j_request(w, m, &e[i]->req);
			jw_ku64(w, "ended_at_ns", report_rel(m, e[i]->done_ts));
			jw_ku64(w, "in_flight_ns", e[i]->done_ts - e[i]->req.submit_ts);
			jw_ki64(w, "res", e[i]->res);
			jw_kstr(w, "outcome", outcome(e[i]->res));
			jw_obj_end(w);
		}
		jw_arr_end(w);
		jw_ku64(w, "io_uring_waited_omitted", k > 64 ? k - 64 : 0);
	}
}

static void j_ops(struct jw *w, const struct ur_opstats *v, size_t n)
{
	char nb[24];

	jw_key(w, "by_opcode");
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		jw_obj_begin(w);
		jw_ku64(w, "opcode", v[i].opcode);
		jw_kstr(w, "op", opname(v[i].opcode, nb, sizeof(nb)));
		jw_ku64(w, "submitted", v[i].submitted);
		jw_ku64(w, "completed", v[i].completed);
		jw_ku64(w, "errors", v[i].errors);
		jw_ku64(w, "in_flight", v[i].in_flight);
		report_json_hist(w, "latency_ns", &v[i].lat_ns);
		report_json_hist(w, "complete_to_poll_ns", &v[i].consume_ns);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/* tasks[].io_uring: null for a task without requests */
void report_uring_task_json(struct jw *w, const struct ur_task_stats *st)
{
	char nb[24];

	jw_key(w, "io_uring");
	if (!st->requests) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w);
	jw_ku64(w, "requests", st->requests);
	jw_ku64(w, "completed", st->completed);
	jw_ku64(w, "errors", st->errors);
	jw_ku64(w, "in_flight", st->in_flight);
	jw_ku64(w, "latency_sum_ns", st->lat_sum_ns);
	jw_ku64(w, "latency_max_ns", st->lat_max_ns);
	jw_key(w, "by_op");
	jw_obj_begin(w);
	for (uint8_t i = 0; i < st->nops && i < UR_TASK_OPS; i++)
		jw_ku64(w, opname(st->ops[i].opcode, nb, sizeof(nb)), st->ops[i].n);
	if (st->ops_other)
		jw_ku64(w, "other", st->ops_other);
	jw_obj_end(w);
	jw_obj_end(w);
}

void report_uring_capture_json(struct jw *w, const struct report_meta *m)
{
	const struct tet_uring_info *i = m->uring;

	jw_key(w, "io_uring");
	if (!i) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w);
	jw_kbool(w, "traced", i->on);
	jw_kstr(w, "why_not", i->on ? NULL : i->why_not);
	jw_kbool(w, "linked_to_polls", i->hooks);
	jw_kstr(w, "why_not_linked", i->hooks ? NULL : i->why_no_hooks);
	jw_kbool(w, "poll_hooks_on_demand", i->hooks_lazy);
	jw_obj_end(w);
}

void report_uring_totals_json(struct jw *w, const struct ur_totals *t, const struct report_meta *m)
{
	jw_ku64(w, "rings", t->rings);
	jw_ku64(w, "submitted", t->submitted);
	jw_ku64(w, "completed", t->completed);
	jw_ku64(w, "errors", t->errors);
	jw_ku64(w, "in_flight", t->in_flight);
	jw_ku64(w, "linked", t->linked);
	jw_ku64(w, "unattributed", t->unattributed);
	jw_ku64(w, "consumed", t->consumed);
	jw_ku64(w, "unconsumed", t->unconsumed);
	jw_ku64(w, "completions_unmatched", t->completions_unmatched);
	jw_ku64(w, "multishot_more", t->multishot_more);
	jw_ku64(w, "untracked", t->untracked);
	jw_ku64(w, "poll_ranges", t->pushes);
	jw_ku64(w, "records_lost", m->counters_valid ? m->counters.uring_drops : 0);
	jw_ku64(w, "polls_nested_too_deep", m->counters_valid ? m->counters.uring_deep : 0);
}

void report_uring_json(struct jw *w, const struct analyzer *a, const struct report_meta *m)
{
	const struct ur *u = an_uring(a);
	const struct ur_opstats *ops;
	struct ur_site_stats *const *sites;
	const struct ur_inflight *inf;
	size_t n;

	jw_key(w, "io_uring");
	if (!ur_active(u)) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w);
	report_uring_totals_json(w, ur_totals(u), m);
	n = ur_opcodes(u, &ops);
	j_ops(w, ops, n);
	n = ur_sites(u, &sites);
	jw_key(w, "by_site");
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		const struct an_site *s = sites[i]->site;

		jw_obj_begin(w);
		jw_kbool(w, "linked", s != NULL);
		report_json_site_ref(w, s);
		jw_kbool(w, "spawned_before_trace", s && s->unknown);
		jw_ku64(w, "tasks", sites[i]->tasks);
		j_ops(w, sites[i]->ops, sites[i]->nops);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	n = ur_inflight(u, &inf);
	jw_key(w, "in_flight_requests");
	jw_arr_begin(w);
	for (size_t i = 0; i < n && i < UR_JSON_INFLIGHT_MAX; i++)
		j_inflight(w, m, &inf[i], an_now(a));
	jw_arr_end(w);
	jw_ku64(w, "in_flight_requests_omitted", n > UR_JSON_INFLIGHT_MAX ? n - UR_JSON_INFLIGHT_MAX : 0);
	jw_obj_end(w);
}

void report_uring_terminal(FILE *out, const struct analyzer *a, const struct report_meta *m)
{
	const struct ur *u = an_uring(a);
	const struct ur_totals *t;
	const struct ur_opstats *ops;
	const struct ur_inflight *inf;
	size_t n;
	char b[6][16], nb[24], loc[1200], tgt[700];

	if (!ur_active(u))
		return;
	t = ur_totals(u);
	fprintf(out, "\nio_uring: %llu ring%s, %llu requests submitted, %llu completed (%llu errors), %llu in flight at the end; %llu linked to a task, %llu not\n",
		(unsigned long long)t->rings, t->rings == 1 ? "" : "s",
		(unsigned long long)t->submitted, (unsigned long long)t->completed,
		(unsigned long long)t->errors, (unsigned long long)t->in_flight,
		(unsigned long long)t->linked, (unsigned long long)t->unattributed);
	if (m->uring && !m->uring->hooks && m->uring->why_no_hooks)
		fprintf(out, "  (not linked to tasks: %s)\n", m->uring->why_no_hooks);
	if (m->counters_valid && (m->counters.uring_drops || m->counters.uring_deep))
		fprintf(out, "  (%llu io_uring records lost to a full ring, %llu polls nested too deep to follow: requests may be missing or unattributed)\n",
			(unsigned long long)m->counters.uring_drops,
			(unsigned long long)m->counters.uring_deep);
	n = ur_opcodes(u, &ops);
	fprintf(out, "  %-16s %9s %9s %6s %6s %9s %9s %9s %9s %9s\n", "OP", "SUBMITTED", "COMPLETED",
		"ERRORS", "FLIGHT", "LAT p50", "LAT p99", "LAT max", "→POLL p50", "→POLL p99");
	for (size_t i = 0; i < n; i++)
		fprintf(out, "  %-16s %9llu %9llu %6llu %6llu %9s %9s %9s %9s %9s\n",
			opname(ops[i].opcode, nb, sizeof(nb)),
			(unsigned long long)ops[i].submitted, (unsigned long long)ops[i].completed,
			(unsigned long long)ops[i].errors, (unsigned long long)ops[i].in_flight,
			fmt_duration(hist_quantile(&ops[i].lat_ns, 0.5), b[0], 16),
			fmt_duration(hist_quantile(&ops[i].lat_ns, 0.99), b[1], 16),
			fmt_duration(ops[i].lat_ns.max, b[2], 16),
			fmt_duration(hist_quantile(&ops[i].consume_ns, 0.5), b[3], 16),
			fmt_duration(hist_quantile(&ops[i].consume_ns, 0.99), b[4], 16));
	n = ur_inflight(u, &inf);
	if (n)
		fprintf(out, "  in flight at the end (oldest first):\n");
	for (size_t i = 0; i < n && i < m->top; i++) {
		uint64_t now = an_now(a);

		char task[40];

		if (!inf[i].linked)
			snprintf(task, sizeof(task), "no task known");
		else if (m->fallback) /* the fallback knows tasks by header address */
			snprintf(task, sizeof(task), "task 0x%llx", (unsigned long long)inf[i].task_key);
		else
			snprintf(task, sizeof(task), "task %llu", (unsigned long long)inf[i].task_key);
		fprintf(out, "    %s, %s ago, %s%s%s\n", op_target(&inf[i], tgt, sizeof(tgt)),
			fmt_duration(now > inf[i].submit_ts ? now - inf[i].submit_ts : 0, b[5], 16),
			task, inf[i].site ? " at " : "",
			inf[i].site ? report_site_loc(inf[i].site, loc, sizeof(loc)) : "");
	}
	if (n > m->top)
		fprintf(out, "    … %zu more in the JSON report\n", n - m->top);
}
