// SPDX-License-Identifier: MIT
/*
 * jsonreport.c — the JSON report (report_json, reporters.h), one function per section of
 * docs/report-schema.md, in its order: the top level (tool, mode, fallback), capture, exit,
 * flight_recorder, totals, data_loss, spawn_sites, tasks, workers, slowest_polls and
 * worst_sched_delays, findings, why, io_uring.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "batch_stats.h"
#include "json.h"
#include "jsonparts.h"
#include "locks.h"
#include "reporters.h"
#include "units.h"
#include "uring_report.h"
#include "vocab.h"

static void j_hex(struct jw *w, const char *key, uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "0x%llx", (unsigned long long)v);
	jw_kstr(w, key, b);
}

static void j_probes(struct jw *w, const char *key, unsigned mask)
{
	jw_key(w, key);
	jw_arr_begin(w);
	for (unsigned i = 0; i < TET_EV_COUNT; i++)
		if (mask & (1u << i))
			jw_str(w, an_event_name(i));
	jw_arr_end(w);
}

static void j_u64_or_null(struct jw *w, const char *key, bool known, uint64_t v)
{
	jw_key(w, key);
	if (known)
		jw_u64(w, v);
	else
		jw_null(w);
}

/* "fallback": null in usdt mode */
static void j_fallback(struct jw *w, const struct analyzer *a, const struct report_meta *m)
{
	jw_key(w, "fallback");
	if (m->fallback) {
		const struct report_fallback *f = m->fallback;

		jw_obj_begin(w);
		jw_kstr(w, "file", f->file);
		jw_key(w, "functions");
		jw_obj_begin(w);
		for (size_t i = 0; i < f->nfns; i++)
			jw_ku64(w, f->fn_names[i], f->fn_counts[i]);
		jw_obj_end(w);
		jw_key(w, "functions_missing");
		jw_arr_begin(w);
		for (size_t i = 0; i < f->nfns; i++)
			if (!f->fn_counts[i])
				jw_str(w, f->fn_names[i]);
		jw_arr_end(w);
		jw_key(w, "unavailable");
		jw_arr_begin(w);
		for (size_t i = 0; i < f->nunavailable; i++)
			jw_str(w, f->unavailable[i]);
		jw_arr_end(w);
		jw_key(w, "future_types");
		jw_obj_begin(w);
		jw_ku64(w, "poll_instances", f->poll_instances);
		jw_ku64(w, "types", f->types);
		jw_ku64(w, "exact", f->types_exact);
		jw_ku64(w, "ambiguous", f->types_ambiguous);
		jw_kstr(w, "source", f->type_source);
		jw_obj_end(w);
		jw_key(w, "attach");
		jw_obj_begin(w);
		jw_kstr(w, "method", f->multi ? "uprobe_multi" : "uprobe");
		jw_kstr(w, "why_not_multi", f->multi ? NULL : f->why_single);
		jw_ku64(w, "uprobes", f->uprobes);
		jw_ku64(w, "links", f->links);
		jw_ku64(w, "attach_ns", f->attach_ns);
		jw_obj_end(w);
		jw_key(w, "cost");
		jw_obj_begin(w);
		jw_key(w, "uprobe_ns");
		if (f->uprobe_ns > 0)
			jw_double(w, f->uprobe_ns);
		else
			jw_null(w);
		jw_key(w, "uprobe_uretprobe_ns");
		if (f->uretprobe_ns > 0)
			jw_double(w, f->uretprobe_ns);
		else
			jw_null(w);
		jw_key(w, "estimated_overhead_ns");
		if (f->uprobe_ns > 0)
			jw_u64(w, (uint64_t)report_fallback_overhead_ns(f, an_totals(a)));
		else
			jw_null(w);
		jw_obj_end(w);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
}

/* "capture": what was traced and how */
/* capture.batch.sampling (docs/report-schema.md, docs/sampling.md) */
static void j_sampling(struct jw *w, const struct analyzer *a, const struct report_meta *m,
		       const struct report_batch *bt)
{
	static const char *const whys[TET_RATE_WHYS] = { "start", "ring", "cpu", "loss", "calm" };
	const struct an_sampling *sm = an_get_sampling(a);
	const struct an_totals *t = an_totals(a);

	jw_key(w, "sampling");
	jw_obj_begin(w);
	jw_kstr(w, "mode", bt->adaptive ? "adaptive" : "fixed");
	jw_kstr(w, "why_fixed", bt->why_fixed);
	jw_kstr(w, "rule", bt->adaptive ? REPORT_SAMPLING_RULE_ADAPTIVE : REPORT_SAMPLING_RULE_FIXED);
	jw_ku64(w, "rate", sm->known ? sm->rate : bt->rate ? bt->rate : 1);
	jw_ku64(w, "rate_max", sm->known ? sm->rate_max : bt->rate ? bt->rate : 1);
	jw_key(w, "max_overhead_pct");
	if (bt->adaptive && bt->max_overhead_pct)
		jw_u64(w, bt->max_overhead_pct);
	else
		jw_null(w);
	jw_key(w, "changes");
	jw_arr_begin(w);
	for (size_t i = 0; i < sm->nchanges; i++) {
		jw_obj_begin(w);
		jw_ku64(w, "at_ns", sm->changes[i].ts > m->start_ns ? sm->changes[i].ts - m->start_ns : 0);
		jw_ku64(w, "rate", sm->changes[i].rate);
		jw_kstr(w, "why", whys[sm->changes[i].why < TET_RATE_WHYS ? sm->changes[i].why : 0]);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_ku64(w, "changes_omitted", sm->changes_omitted);
	jw_ku64(w, "rate_failures", bt->rate_failures);
	jw_ku64(w, "gaps", sm->gaps);
	jw_ku64(w, "tasks_set_aside_by_rate", t->tasks_set_aside_rate);
	jw_ku64(w, "tasks_set_aside_by_gap", t->tasks_set_aside_gap);
	jw_ku64(w, "polls_set_aside", t->polls_set_aside);
	jw_ku64(w, "events_set_aside", t->events_set_aside);
	jw_obj_end(w);
}

static void j_capture(struct jw *w, const struct analyzer *a, const struct report_meta *m)
{
	const struct an_opts *o = an_get_opts(a);

	jw_key(w, "capture");
	jw_obj_begin(w);
	jw_key(w, "pid");
	if (m->pid)
		jw_u64(w, (uint64_t)m->pid);
	else
		jw_null(w);
	jw_kstr(w, "binary", m->binary);
	jw_kstr(w, "executable", m->executable);
	jw_key(w, "files");
	jw_arr_begin(w);
	for (size_t i = 0; i < m->nfiles; i++) {
		jw_obj_begin(w);
		jw_kstr(w, "path", m->files[i].path);
		j_probes(w, "probes", m->files[i].probes);
		jw_ku64(w, "sites", m->files[i].sites);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	j_probes(w, "probes_attached", m->probes);
	/* what pending tasks wait for: with task_wait (kits from the wait-reason change on) */
	jw_kbool(w, "wait_reasons", an_get_opts(a)->wait_events);
	jw_kstr(w, "capture", m->capture ? m->capture : "per-event");
	jw_ku64(w, "sample_rate", m->sample_rate ? m->sample_rate : 1);
	jw_key(w, "batch");
	if (m->batch) {
		const struct report_batch *bt = m->batch;

		jw_obj_begin(w);
		jw_ku64(w, "sites", bt->sites);
		jw_ku64(w, "sample_rate_sites", bt->rate_sites);
		jw_kstr(w, "attach", bt->multi ? "uprobe_multi" : "uprobe");
		jw_kstr(w, "why_not_multi", bt->multi ? NULL : bt->why_single);
		jw_kbool(w, "preemption", bt->preemption);
		jw_kstr(w, "why_no_preemption", bt->preemption ? NULL : bt->why_no_preemption);
		jw_kbool(w, "sweeps", bt->sweeps);
		jw_kstr(w, "why_no_sweeps", bt->sweeps ? NULL : bt->why_no_sweeps);
		jw_kstr(w, "clock", bt->stats->clock == TET_BATCH_CLOCK_TSC ? "tsc" :
			    bt->stats->clock == TET_BATCH_CLOCK_MONO ? "monotonic" : NULL);
		jw_ki64(w, "clock_error_ns", bt->stats->clock_error_ns);
		jw_ku64(w, "threads", bt->stats->threads);
		jw_ku64(w, "polls_seen_in_progress", bt->stats->open_polls_seen);
		j_sampling(w, a, m, bt);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
	report_uring_capture_json(w, m);
	report_json_started(w, m);
	jw_key(w, "requested_duration_ns");
	if (m->requested_ns)
		jw_u64(w, m->requested_ns);
	else
		jw_null(w);
	jw_kstr(w, "ended_by", m->ended_by);
	jw_key(w, "last_event_at_ns"); /* the newest event analyzed, from the start */
	if (an_totals(a)->last_ts)
		jw_i64(w, (int64_t)an_totals(a)->last_ts - (int64_t)m->start_ns);
	else
		jw_null(w);
	jw_key(w, "thresholds");
	jw_obj_begin(w);
	report_json_thresholds(w, o, true);
	jw_obj_end(w);
	jw_key(w, "detectors");
	jw_arr_begin(w);
	for (int k = 0; k < AN_FINDING_KINDS; k++)
		if (o->detect & (1u << k))
			jw_str(w, an_finding_name(k));
	jw_arr_end(w);
	jw_kdouble(w, "histogram_relative_error", HIST_REL_ERR);
	jw_obj_end(w);
}

/* "exit": how the traced process ended (ended_by "process_exit" / "process_crash") */
static void j_exit(struct jw *w, const struct report_meta *m)
{
	bool crash = m->ended_by && !strcmp(m->ended_by, "process_crash");
	char sig[32];

	if (!crash && !(m->ended_by && !strcmp(m->ended_by, "process_exit")))
		return;
	jw_key(w, "exit");
	jw_obj_begin(w);
	jw_kstr(w, "signal", crash && m->exit_signal > 0 ?
		report_signal_name(m->exit_signal, sig, sizeof(sig)) : NULL);
	jw_kbool(w, "core_dumped", crash && m->exit_core);
	jw_key(w, "status");
	if (!crash && m->exit_status >= 0)
		jw_i64(w, m->exit_status);
	else
		jw_null(w);
	jw_obj_end(w);
}

/* "flight_recorder": a dump's window and what fired it (m->flight) */
void report_json_flight(struct jw *w, const struct report_meta *m)
{
	const struct report_flight *fl = m->flight;
	const struct report_trigger *tr = &fl->trigger;
	char sig[32];

	jw_key(w, "flight_recorder");
	jw_obj_begin(w);
	jw_ku64(w, "dump_index", fl->dump_index);
	jw_kstr(w, "name", fl->basename);
	j_u64_or_null(w, "window_ns", fl->window_ns, fl->window_ns);
	jw_ku64(w, "window_bytes", fl->window_bytes);
	jw_ku64(w, "post_trigger_ns", fl->post_ns);
	jw_ku64(w, "window_start_at_ns", report_rel(m, fl->from_ns));
	jw_ku64(w, "window_end_at_ns", report_rel(m, fl->to_ns));
	jw_ku64(w, "records", fl->records);
	jw_ku64(w, "bytes", fl->bytes);
	jw_kbool(w, "cut_by_memory", fl->cut_by_memory);
	jw_ku64(w, "triggers_suppressed", fl->triggers_suppressed);
	jw_key(w, "on_dump");
	if (fl->on_dump) {
		jw_obj_begin(w);
		jw_ku64(w, "run", fl->hooks_run);
		jw_ku64(w, "failed", fl->hooks_failed);
		jw_ku64(w, "skipped", fl->hooks_skipped);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
	jw_key(w, "trigger");
	jw_obj_begin(w);
	jw_kstr(w, "kind", tr->kind);
	jw_kstr(w, "spec", tr->spec ? tr->spec : tr->kind);
	jw_ku64(w, "at_ns", report_rel(m, tr->ts));
	jw_ku64(w, "detected_at_ns", report_rel(m, tr->at_ns));
	j_u64_or_null(w, "pid", tr->pid, tr->pid);
	j_u64_or_null(w, "tid", tr->tid, tr->tid);
	j_u64_or_null(w, "task_id", tr->has_task, tr->task_id);
	if (tr->has_task)
		j_hex(w, "header_ptr", tr->header_ptr);
	else
		jw_kstr(w, "header_ptr", NULL);
	j_u64_or_null(w, "value_ns", tr->value_ns, tr->value_ns);
	j_u64_or_null(w, "threshold_ns", tr->threshold_ns, tr->threshold_ns);
	jw_kstr(w, "signal", tr->signal > 0 ? report_signal_name(tr->signal, sig, sizeof(sig)) : NULL);
	jw_kbool(w, "core_dumped", tr->core_dumped);
	jw_key(w, "exit_status");
	if (tr->kind && !strcmp(tr->kind, "process_exit") && tr->exit_status >= 0)
		jw_i64(w, tr->exit_status);
	else
		jw_null(w);
	jw_key(w, "detail");
	jw_strn(w, tr->detail, strnlen(tr->detail, sizeof(tr->detail)));
	jw_obj_end(w);
	jw_obj_end(w);
}

/* "totals": event counts of the whole capture */
static void j_totals(struct jw *w, const struct analyzer *a, const struct report_meta *m)
{
	const struct an_totals *t = an_totals(a);
	const struct an_finding *f;

	jw_key(w, "totals");
	jw_obj_begin(w);
	report_json_totals_head(w, t, m);
	jw_ku64(w, "terminations", report_total(m, t, TET_EV_TERMINATE));
	jw_ku64(w, "yields", t->yields);
	jw_ku64(w, "waker_clones", t->waker_clones);
	jw_ku64(w, "waker_drops", t->waker_drops);
	jw_ku64(w, "parks", report_total(m, t, TET_EV_PARK));
	jw_ku64(w, "unparks", report_total(m, t, TET_EV_UNPARK));
	jw_kbool(w, "sampled", m->batch && m->sample_rate > 1);
	jw_key(w, "analyzed");
	jw_obj_begin(w);
	jw_ku64(w, "polls", t->polls);
	jw_ku64(w, "wakes", t->wakes);
	jw_ku64(w, "spawns", t->spawns);
	jw_ku64(w, "terminations", t->terminates);
	jw_obj_end(w);
	jw_ku64(w, "self_wakes", t->self_wakes);
	jw_ku64(w, "outside_runtime_wakes", t->outside_wakes);
	jw_ku64(w, "tasks_seen", t->tasks_seen);
	jw_ku64(w, "tasks_live", t->tasks_live);
	jw_ku64(w, "tasks_untracked", t->tasks_untracked);
	jw_ku64(w, "polls_untracked", t->polls_untracked);
	{
		const struct an_site *const *sv;
		size_t ns = an_sites(a, &sv), cap = an_get_opts(a)->max_sites_listed;

		jw_ku64(w, "spawn_sites_omitted", ns > cap ? ns - cap : 0);
	}
	jw_ku64(w, "task_records_omitted", t->task_records_omitted);
	jw_ku64(w, "live_tasks_omitted", an_live_tasks_omitted(a));
	jw_ku64(w, "findings", an_findings(a, &f));
	jw_ku64(w, "findings_omitted", t->findings_omitted);
	jw_ku64(w, "findings_set_aside", t->findings_set_aside);
	jw_ku64(w, "stalled_in_deadlock", t->stalled_in_deadlock);
	jw_ku64(w, "unmatched_poll_ends", t->unmatched_poll_ends);
	jw_ku64(w, "waits_outside_tasks", t->waits_outside_polls);
	jw_ku64(w, "waits_not_kept", t->waits_dropped);
	jw_ku64(w, "untracked_task_events", t->unknown_task_events);
	jw_ku64(w, "waker_count_inconsistent", t->waker_count_inconsistent);
	jw_ku64(w, "lost_waker_contradicted", t->lost_waker_contradicted);
	jw_ku64(w, "starvation_episodes_omitted", t->starvation_omitted);
	jw_ku64(w, "worker_polls_untracked", t->worker_polls_untracked);
	jw_ku64(w, "workers_untracked", t->workers_untracked);
	jw_ku64(w, "task_id_zero", t->task_id_zero);
	jw_ku64(w, "histogram_values_unbucketed", t->hist_unbucketed);
	jw_ku64(w, "kernel_records_refused", t->kernel_refused);
	{
		const struct lk_stats *ls = an_lock_stats(a);
		const struct tb_stats *bs = m->batch ? m->batch->stats : NULL;
		uint64_t fa = bs ? bs->acquires_folded : 0, fr = bs ? bs->releases_folded : 0;

		jw_key(w, "lock_events");
		jw_obj_begin(w);
		jw_ku64(w, "acquires", ls->acquires + fa);
		jw_ku64(w, "releases", ls->releases + fr);
		jw_ku64(w, "folded_acquires", fa);
		jw_ku64(w, "folded_releases", fr);
		jw_ku64(w, "forgets", ls->forgets);
		jw_ku64(w, "releases_of_unknown_locks", ls->releases_unknown);
		jw_ku64(w, "locks_untracked", ls->locks_untracked);
		jw_ku64(w, "holders_untracked", ls->holders_untracked);
		jw_ku64(w, "bad_ops", ls->bad);
		jw_obj_end(w);
	}
	jw_obj_end(w);
}

/* data_loss.findings_set_aside (the findings lost events could explain: counted by kind, their
 * tasks listed) and data_loss.advice */
static void j_findings_set_aside(struct jw *w, const struct analyzer *a, const struct report_meta *m)
{
	const struct an_finding *fa;
	size_t na = an_findings_aside(a, &fa);
	uint64_t by[AN_FINDING_KINDS] = { 0 };
	char advice[400];

	jw_key(w, "findings_set_aside");
	jw_obj_begin(w);
	for (size_t i = 0; i < na; i++)
		by[fa[i].kind]++;
	for (int k = 0; k < AN_FINDING_KINDS; k++)
		jw_ku64(w, an_finding_name(k), by[k]);
	jw_key(w, "tasks");
	jw_arr_begin(w);
	for (size_t i = 0; i < na && i < 100; i++) {
		jw_obj_begin(w);
		jw_kstr(w, "kind", an_finding_name(fa[i].kind));
		jw_ku64(w, "pid", fa[i].pid);
		jw_ku64(w, "task_id", fa[i].task_id);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	report_drop_advice(m, an_totals(a), advice, sizeof(advice));
	jw_key(w, "advice");
	if (*advice)
		jw_str(w, advice);
	else
		jw_null(w);
}

/* data_loss.batches: null without batched capture */
static void j_batches(struct jw *w, const struct report_meta *m)
{
	jw_key(w, "batches");
	if (m->batch) {
		const struct tb_stats *st = m->batch->stats;

		jw_obj_begin(w);
		jw_ku64(w, "received", st->batches);
		jw_ku64(w, "lost_ring_full", m->counters.batch_drops);
		/* gaps in a thread's sequence numbers: the ring's losses, and any other */
		jw_ku64(w, "lost_otherwise", report_batches_lost_otherwise(m));
		jw_ku64(w, "skipped_by_live_analysis", m->batch->skipped_by_analysis);
		jw_ku64(w, "refused", m->counters.batch_bad + st->bad_batches);
		jw_ku64(w, "torn", st->torn_batches);
		jw_ku64(w, "implausible", st->implausible);
		jw_ku64(w, "strings_refused", st->strings_refused);
		jw_ku64(w, "threads_refused", st->threads_refused);
		jw_ku64(w, "read_errors", m->counters.batch_read_errors);
		jw_ku64(w, "bad_records", st->bad_records);
		jw_ku64(w, "wait_records_not_kept", st->waits_dropped);
		jw_ku64(w, "lock_records_not_kept", st->locks_dropped);
		jw_ku64(w, "records", st->records);
		jw_ku64(w, "records_read_in_place", st->sweep_records);
		jw_ku64(w, "before_capture", st->before_start);
		jw_ku64(w, "after_capture", st->after_cutoff);
		jw_ku64(w, "late", st->late);
		jw_ku64(w, "forced", st->forced);
		jw_ku64(w, "threads_vanished", st->threads_vanished);
		jw_ku64(w, "threads_final_batch_late", st->threads_revived);
		jw_ku64(w, "sweeps", st->sweeps);
		jw_ku64(w, "sweep_failures", st->sweep_failures);
		jw_ku64(w, "held_max", st->pending_max);
		jw_ku64(w, "preemptions_lost", m->counters.offcpu_drops);
		jw_key(w, "unflushed_by_probe");
		jw_obj_begin(w);
		for (unsigned i = 0; i < TET_EV_COUNT; i++)
			if (st->unflushed[i])
				jw_ku64(w, an_event_name(i), st->unflushed[i]);
		jw_obj_end(w);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
}

/* "data_loss": BPF-side counters, probe hits and drops */
static void j_data_loss(struct jw *w, const struct analyzer *a, const struct report_meta *m)
{
	jw_key(w, "data_loss");
	jw_obj_begin(w);
	jw_kbool(w, "counters_read", m->counters_valid);
	jw_key(w, "probe_hits");
	jw_obj_begin(w);
	for (unsigned i = 0; i < TET_EV_COUNT; i++)
		if (m->probes & (1u << i))
			jw_ku64(w, an_event_name(i), m->counters.seen[i]);
	jw_obj_end(w);
	jw_key(w, "drops_by_probe");
	jw_obj_begin(w);
	for (unsigned i = 0; i < TET_EV_COUNT; i++)
		if (m->probes & (1u << i))
			jw_ku64(w, an_event_name(i), m->counters.drops[i]);
	jw_obj_end(w);
	jw_key(w, "affected");
	jw_arr_begin(w);
	for (unsigned i = 0; i < TET_EV_COUNT; i++) {
		if (!m->counters.drops[i])
			continue;
		jw_obj_begin(w);
		jw_kstr(w, "probe", an_event_name(i));
		jw_ku64(w, "drops", m->counters.drops[i]);
		jw_kstr(w, "figures", report_drop_impact(i));
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_kbool(w, "lost_waker_disabled", an_wakers_unreliable(a));
	j_findings_set_aside(w, a, m);
	jw_ku64(w, "string_read_errors", m->counters.read_errors);
	jw_key(w, "process_memory");
	jw_obj_begin(w);
	jw_ku64(w, "reads", m->pmem.reads);
	jw_ku64(w, "timed_out", m->pmem.timed_out);
	jw_ku64(w, "refused", m->pmem.refused);
	jw_ku64(w, "failed", m->pmem.failed);
	jw_obj_end(w);
	jw_ku64(w, "argument_errors", m->counters.arg_errors);
	j_batches(w, m);
	jw_obj_end(w);
}

static bool site_has_finding(const struct an_site *s)
{
	for (int k = 0; k < AN_FINDING_KINDS; k++)
		if (s->findings[k])
			return true;
	return false;
}

/* Sites a JSON report lists when there are too many: the shared ones (spawned before the
 * capture, past the site bound), those with a finding, then by busy time, polls */
static int cmp_site_listed(const void *x, const void *y)
{
	const struct an_site *a = *(const struct an_site *const *)x;
	const struct an_site *b = *(const struct an_site *const *)y;
	bool fa = site_has_finding(a), fb = site_has_finding(b);
	bool sa = a->unknown || a->other, sb = b->unknown || b->other;

	if (sa != sb)
		return sa ? -1 : 1;
	if (fa != fb)
		return fa ? -1 : 1;
	if (a->busy_ns != b->busy_ns)
		return a->busy_ns < b->busy_ns ? 1 : -1;
	if (a->polls != b->polls)
		return a->polls < b->polls ? 1 : -1;
	return a->index < b->index ? -1 : a->index > b->index;
}

/* … and those listed in the analyzer's order, as when every site is listed */
static int cmp_site_index(const void *x, const void *y)
{
	const struct an_site *a = *(const struct an_site *const *)x;
	const struct an_site *b = *(const struct an_site *const *)y;

	return a->index < b->index ? -1 : a->index > b->index;
}

static void j_site(struct jw *w, const struct an_site *s, uint32_t sample_rate, bool waits)
{
	jw_obj_begin(w);
	report_json_site_ref(w, s);
	jw_ku64(w, "sample_rate", sample_rate ? sample_rate : 1);
	jw_key(w, "file");
	if (s->unknown || s->other || s->typed)
		jw_null(w);
	else
		jw_strn(w, s->file, s->file_len);
	jw_ku64(w, "line", s->line);
	jw_ku64(w, "col", s->col);
	jw_kstr(w, "kind", s->unknown || s->other ? NULL : an_kind_name(s->kind));
	jw_kbool(w, "runtime", s->runtime);
	jw_kbool(w, "spawned_before_trace", s->unknown);
	jw_kbool(w, "overflow_site", s->other);
	jw_kbool(w, "file_truncated", s->file_len_reported > s->file_len);
	jw_kbool(w, "type_name_truncated", s->type_len_reported > s->type_len);
	jw_ku64(w, "tasks", s->tasks);
	jw_ku64(w, "tasks_terminated", s->tasks_terminated);
	jw_ku64(w, "tasks_live", s->tasks - s->tasks_terminated);
	jw_ku64(w, "tasks_untracked", s->tasks_untracked);
	jw_ku64(w, "polls", s->polls);
	jw_ku64(w, "busy_ns", s->busy_ns);
	jw_ku64(w, "preempted_ns", s->cpu_wait_ns);
	jw_ku64(w, "stolen_ns", s->stolen_ns);
	jw_ku64(w, "blocked_ns", s->blocked_ns);
	jw_ku64(w, "on_cpu_ns", s->busy_ns > s->cpu_wait_ns + s->blocked_ns ?
		s->busy_ns - s->cpu_wait_ns - s->blocked_ns : 0);
	jw_ku64(w, "cpu_samples", s->samples);
	jw_ku64(w, "wakes", s->wakes);
	jw_ku64(w, "self_wakes", s->self_wakes);
	jw_ku64(w, "self_wake_polls", s->self_wake_polls);
	jw_ku64(w, "outside_runtime_wakes", s->outside_wakes);
	jw_key(w, "yields");
	jw_obj_begin(w);
	for (int i = 0; i < TET_YIELD_CODES; i++)
		jw_ku64(w, tet_code_label(TET_SET_YIELD, i), s->yields[i]);
	jw_obj_end(w);
	jw_key(w, "poll_results");
	jw_obj_begin(w);
	for (int i = 0; i < TET_POLL_CODES; i++)
		jw_ku64(w, tet_code_label(TET_SET_POLL, i), s->results[i]);
	jw_obj_end(w);
	jw_key(w, "terminations");
	jw_obj_begin(w);
	for (int i = 0; i < TET_TERM_CODES; i++)
		jw_ku64(w, tet_code_label(TET_SET_TERM, i), s->terms[i]);
	jw_obj_end(w);
	report_json_hist(w, "poll_ns", &s->poll_ns);
	report_json_hist(w, "sched_ns", &s->sched_ns);
	report_json_hist(w, "pending_ns", &s->pending_ns);
	report_json_hist(w, "lifetime_ns", &s->lifetime_ns);
	if (waits) {
		jw_key(w, "pending_by_wait");
		jw_obj_begin(w);
		for (unsigned k = 0; k <= AN_WAIT_UNKNOWN; k++) {
			if (!s->wait_n[k])
				continue;
			jw_key(w, an_wait_name(k));
			jw_obj_begin(w);
			jw_ku64(w, "periods", s->wait_n[k]);
			jw_ku64(w, "total_ns", s->wait_ns[k]);
			jw_ku64(w, "max_ns", s->wait_max_ns[k]);
			jw_obj_end(w);
		}
		jw_obj_end(w);
	}
	jw_key(w, "findings");
	jw_obj_begin(w);
	for (int k = 0; k < AN_FINDING_KINDS; k++)
		jw_ku64(w, an_finding_name(k), s->findings[k]);
	jw_obj_end(w);
	jw_obj_end(w);
}

/* "spawn_sites" */
static void j_spawn_sites(struct jw *w, const struct analyzer *a, const struct report_meta *m)
{
	const struct an_site *const *sites;
	size_t n;

	n = an_sites(a, &sites);
	jw_key(w, "spawn_sites");
	jw_arr_begin(w);
	{
		size_t cap = an_get_opts(a)->max_sites_listed;
		const struct an_site **v = n > cap ? malloc(n * sizeof(*v)) : NULL;

		if (v) { /* too many to list: those with a finding first, then the busiest */
			memcpy(v, sites, n * sizeof(*v));
			qsort(v, n, sizeof(*v), cmp_site_listed);
			qsort(v, cap, sizeof(*v), cmp_site_index);
		}
		for (size_t i = 0; i < n && i < cap; i++)
			j_site(w, v ? v[i] : sites[i], m->sample_rate, an_get_opts(a)->wait_events);
		free(v);
	}
	jw_arr_end(w);
}

static void report_task_wait_json(struct jw *w, const struct analyzer *a, const struct report_meta *m,
			   const struct an_task_summary *t, uint64_t now)
{
	const struct ur_inflight *req;

	jw_key(w, "name");
	if (t->name_len)
		jw_strn(w, t->name, t->name_len);
	else
		jw_null(w);
	jw_key(w, "future_size");
	if (t->meta_seen)
		jw_u64(w, t->future_size);
	else
		jw_null(w);
	jw_key(w, "future_boxed");
	if (t->meta_seen)
		jw_bool(w, t->future_boxed);
	else
		jw_null(w);
	jw_key(w, "wait");
	if (t->state != AN_PENDING || !an_get_opts(a)->wait_events) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w);
	if ((req = report_uring_task_request(a, t))) {
		report_uring_task_wait(w, a, m, req);
	} else {
		jw_kstr(w, "kind", an_wait_name(t->nwaits ? (t->waits[0].kind == TET_WAIT_TIMER && t->nwaits > 1 ?
							     t->waits[1].kind : t->waits[0].kind) :
						AN_WAIT_UNKNOWN));
		jw_kstr(w, "class", an_wait_class_name(an_wait_class(t, now)));
	}
	jw_key(w, "waits");
	jw_arr_begin(w);
	for (unsigned i = 0; i < t->nwaits && i < AN_WAITS_MAX; i++)
		report_wait_json(w, &t->waits[i], t->pid, now, m);
	jw_arr_end(w);
	jw_key(w, "held_by");
	{
		const struct an_wait *lw = report_lock_wait(t->waits, t->nwaits, 0);
		const struct lk_lock *k = lw ? an_lock(a, t->pid, lw->object) : NULL;
		struct an_task_summary h;

		if (k && k->nholders)
			report_lock_holder_json(w, a, t->pid, k->prim, k->h[0].task_id,
						an_task_get(a, t->pid, k->h[0].task_id, &h) ? h.site : NULL,
						now > k->h[0].since ? now - k->h[0].since : 0,
						k->nholders - 1);
		else
			jw_null(w);
	}
	jw_obj_end(w);
}

struct task_ctx {
	struct jw *w;
	const struct analyzer *a;
	const struct report_meta *m;
	uint64_t now;
};

static void j_task(const struct an_task_summary *t, void *p)
{
	struct task_ctx *c = p;
	struct jw *w = c->w;
	uint64_t end = t->end_ts ? t->end_ts : c->now;

	jw_obj_begin(w);
	jw_ku64(w, "task_id", t->task_id);
	jw_ku64(w, "pid", t->pid);
	j_hex(w, "header_ptr", t->header_ptr);
	report_json_site_ref(w, t->site);
	jw_kstr(w, "kind", t->spawn_seen ? an_kind_name(t->kind) : NULL);
	jw_kstr(w, "state", an_state_name(t->state));
	jw_kstr(w, "termination", t->term_reason >= 0 && t->term_reason < TET_TERM_CODES ?
		tet_code_label(TET_SET_TERM, t->term_reason) : NULL);
	jw_kbool(w, "spawn_seen", t->spawn_seen);
	jw_ku64(w, "first_seen_at_ns", report_rel(c->m, t->spawn_seen ? t->spawn_ts : t->first_ts));
	jw_key(w, "lifetime_ns");
	if (t->spawn_seen && end >= t->spawn_ts)
		jw_u64(w, end - t->spawn_ts);
	else
		jw_null(w);
	jw_ku64(w, "polls", t->polls);
	jw_ku64(w, "busy_ns", t->busy_ns);
	jw_ku64(w, "preempted_ns", t->cpu_wait_ns);
	jw_ku64(w, "blocked_ns", t->blocked_ns);
	jw_ku64(w, "on_cpu_ns", t->busy_ns > t->cpu_wait_ns + t->blocked_ns ?
		t->busy_ns - t->cpu_wait_ns - t->blocked_ns : 0);
	jw_ku64(w, "cpu_samples", t->samples);
	jw_ku64(w, "wakes", t->wakes);
	jw_ku64(w, "self_wakes", t->self_wakes);
	jw_ku64(w, "self_wake_polls", t->self_wake_polls);
	jw_ku64(w, "outside_runtime_wakes", t->outside_wakes);
	jw_key(w, "yields");
	jw_obj_begin(w);
	for (int i = 0; i < TET_YIELD_CODES; i++)
		jw_ku64(w, tet_code_label(TET_SET_YIELD, i), t->yields[i]);
	jw_obj_end(w);
	report_json_hist_summary(w, "poll_ns", &t->poll_ns);
	report_json_hist_summary(w, "sched_ns", &t->sched_ns);
	report_json_hist_summary(w, "pending_ns", &t->pending_ns);
	if (t->state == AN_PENDING)
		jw_ku64(w, "pending_now_ns", t->pending_now_ns);
	jw_key(w, "live_wakers");
	if (t->wakers_known)
		jw_i64(w, t->live_wakers);
	else
		jw_null(w);
	jw_ku64(w, "waker_clones", t->waker_clones);
	jw_ku64(w, "waker_drops", t->waker_drops);
	report_uring_task_json(w, &t->uring);
	report_task_wait_json(w, c->a, c->m, t, c->now);
	jw_obj_end(w);
}

/* "tasks" */
static void j_tasks(struct jw *w, const struct analyzer *a, const struct report_meta *m)
{
	struct task_ctx tc = { w, a, m, an_now(a) };

	jw_key(w, "tasks");
	jw_arr_begin(w);
	an_for_each_listed_task(a, j_task, &tc);
	jw_arr_end(w);
}

/* "workers" */
static void j_workers(struct jw *w, const struct analyzer *a)
{
	const struct an_worker **workers;
	size_t n;

	workers = report_sorted_workers(a, &n);
	jw_key(w, "workers");
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		jw_obj_begin(w);
		report_json_worker_counts(w, workers[i]);
		jw_kbool(w, "parked_at_end", workers[i]->parked);
		report_json_hist(w, "park_ns", &workers[i]->park_ns);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	free(workers);
}

static void j_tops(struct jw *w, const char *key, const char *vkey, const struct an_top *t,
		   size_t n, const struct report_meta *m)
{
	jw_key(w, key);
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		jw_obj_begin(w);
		jw_ku64(w, vkey, t[i].value_ns);
		jw_ku64(w, "task_id", t[i].task_id);
		jw_ku64(w, "pid", t[i].pid);
		jw_ku64(w, "tid", t[i].tid);
		jw_ki64(w, "worker", t[i].worker);
		jw_ku64(w, "at_ns", report_rel(m, t[i].ts));
		report_json_site_ref(w, t[i].site);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/* ---- why a poll was slow (why.h) ---- */
static void j_frames(struct jw *w, const struct why_stack *st, uint32_t max)
{
	jw_key(w, "frames");
	jw_arr_begin(w);
	for (uint32_t i = 0; i < st->nframes && i < max; i++)
		jw_str(w, st->frames[i]);
	jw_arr_end(w);
	jw_ku64(w, "user_addresses", st->user_addresses);
	jw_key(w, "user_frame");
	if (st->user_leaf != UINT32_MAX)
		jw_str(w, st->frames[st->user_leaf]);
	else
		jw_null(w);
}

static void j_why_finding(struct jw *w, const struct why_finding *wf)
{
	char line[2048];

	jw_key(w, "why");
	if (!wf->known && !wf->nhot) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w);
	jw_kstr(w, "summary", why_finding_line(wf, line, sizeof(line)));
	if (wf->known) {
		jw_ku64(w, "on_cpu_ns", wf->on_cpu_ns);
		jw_ku64(w, "preempted_ns", wf->preempted_ns);
		jw_ku64(w, "stolen_ns", wf->stolen_ns);
		jw_ku64(w, "blocked_ns", wf->blocked_ns);
		jw_kbool(w, "split_doubtful", wf->doubtful);
	}
	jw_key(w, "blocked_in");
	if (wf->blocked_top) {
		jw_obj_begin(w);
		jw_kstr(w, "syscall", wf->blocked_top->syscall);
		jw_ku64(w, "ns", wf->blocked_top->ns);
		j_frames(w, wf->blocked_top, 64);
		jw_obj_end(w);
	} else {
		jw_null(w);
	}
	jw_ku64(w, "cpu_samples", wf->samples);
	jw_key(w, "hottest");
	jw_arr_begin(w);
	for (size_t i = 0; i < wf->nhot; i++) {
		jw_obj_begin(w);
		jw_kstr(w, "frame", wf->hot[i].frame);
		jw_ku64(w, "samples", wf->hot[i].samples);
		jw_kdouble(w, "share", wf->hot[i].share);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

/* one of "findings" */
static void j_finding(struct jw *w, const struct analyzer *a, const struct report_meta *m,
		      const struct an_finding *f, size_t i)
{
	const struct an_opts *o = an_get_opts(a);
	char detail[2048];

	jw_obj_begin(w);
	jw_kstr(w, "kind", an_finding_name(f[i].kind));
	jw_ku64(w, "task_id", f[i].task_id);
	jw_ku64(w, "pid", f[i].pid);
	report_json_site_ref(w, f[i].site);
	report_finding_detail(&f[i], detail, sizeof(detail));
	report_uring_finding_text(a, &f[i], detail, sizeof(detail));
	report_wait_finding_text(a, m, &f[i], detail, sizeof(detail));
	jw_kstr(w, "detail", detail);
	if (m->flight)
		jw_kbool(w, "trigger", report_is_trigger(m, &f[i]));
	jw_ku64(w, "value_ns", f[i].value_ns);
	if (f[i].kind == AN_LONG_POLL) {
		jw_ku64(w, "preempted_ns", f[i].cpu_wait_ns);
		jw_ku64(w, "stolen_ns", f[i].stolen_ns);
	}
	if (f[i].kind == AN_SELF_WAKE) {
		jw_kdouble(w, "ratio", f[i].ratio);
		jw_kdouble(w, "threshold_ratio", o->self_wake_ratio);
		jw_ku64(w, "polls", f[i].polls);
	} else {
		jw_ku64(w, "threshold_ns", f[i].threshold_ns);
	}
	jw_ku64(w, "occurrences", f[i].occurrences);
	jw_kbool(w, "ongoing", f[i].ongoing);
	jw_ku64(w, "first_at_ns", report_rel(m, f[i].first_ts));
	if (f[i].kind == AN_STALLED || f[i].kind == AN_LOST_WAKER) {
		jw_key(w, "live_wakers");
		if (f[i].live_wakers >= 0)
			jw_i64(w, f[i].live_wakers);
		else
			jw_null(w);
	}
	if (f[i].kind == AN_LOST_WAKER)
		jw_kbool(w, "contradicted", f[i].contradicted);
	if (f[i].kind == AN_STARVATION)
		report_starvation_json(w, m, &f[i]);
	if (f[i].kind == AN_DEADLOCK)
		report_deadlock_json(w, m, &f[i]);
	report_uring_finding_json(w, a, m, &f[i]);
	report_finding_wait_json(w, a, m, &f[i]);
	if (m->why && i < m->why->nfindings)
		j_why_finding(w, &m->why->findings[i]);
	jw_obj_end(w);
}

/* "findings" */
static void j_findings(struct jw *w, const struct analyzer *a, const struct report_meta *m)
{
	const struct an_finding *f;

	size_t n = an_findings(a, &f);

	jw_key(w, "findings");
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++)
		j_finding(w, a, m, f, i);
	jw_arr_end(w);
}

static void j_why_stacks(struct jw *w, const char *key, const struct why_stack *v, size_t n,
			 size_t max, bool blocked)
{
	jw_key(w, key);
	jw_arr_begin(w);
	for (size_t i = 0; i < n && i < max; i++) {
		jw_obj_begin(w);
		jw_ku64(w, blocked ? "periods" : "samples", v[i].count);
		if (blocked) {
			jw_ku64(w, "ns", v[i].ns);
			jw_kstr(w, "syscall", v[i].syscall);
		}
		j_frames(w, &v[i], 64);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

static void j_why(struct jw *w, const struct why_report *r)
{
	jw_key(w, "why");
	if (!r) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w);
	report_json_why_head(w, r);
	jw_key(w, "sites");
	jw_arr_begin(w);
	for (size_t i = 0; i < r->nsites; i++) {
		const struct why_site *ws = &r->sites[i];

		jw_obj_begin(w);
		report_json_site_ref(w, ws->site);
		jw_ku64(w, "cpu_samples", ws->samples);
		jw_ku64(w, "on_cpu_ns", ws->on_cpu_ns);
		jw_ku64(w, "preempted_ns", ws->preempted_ns);
		jw_ku64(w, "stolen_ns", ws->stolen_ns);
		jw_ku64(w, "blocked_ns", ws->blocked_ns);
		j_why_stacks(w, "cpu_stacks", ws->cpu, ws->ncpu, 20, false);
		j_why_stacks(w, "blocked_stacks", ws->blocked, ws->nblocked, 10, true);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}

int report_json(FILE *out, const struct analyzer *a, const struct report_meta *m)
{
	const struct an_top *tops;
	size_t n;
	struct jw *w = jw_new(out, true);

	if (!w)
		return -ENOMEM;
	jw_obj_begin(w);
	jw_ku64(w, "schema_version", REPORT_SCHEMA_VERSION);
	jw_key(w, "tool");
	jw_obj_begin(w);
	jw_kstr(w, "name", "tokio-ebpf-trace");
	jw_obj_end(w);
	jw_kstr(w, "mode", m->mode);
	jw_kstr(w, "dialect", m->dialect);
	jw_kstr(w, "dialect_lacks", m->dialect_lacks && *m->dialect_lacks ? m->dialect_lacks : NULL);
	j_fallback(w, a, m);
	j_capture(w, a, m);
	j_exit(w, m);
	if (m->flight)
		report_json_flight(w, m);
	if (m->remote_write)
		report_json_remote_write(w, m->remote_write);
	j_totals(w, a, m);
	j_data_loss(w, a, m);
	j_spawn_sites(w, a, m);
	j_tasks(w, a, m);
	j_workers(w, a);
	n = an_top_polls(a, &tops);
	j_tops(w, "slowest_polls", "duration_ns", tops, n, m);
	n = an_top_sched(a, &tops);
	j_tops(w, "worst_sched_delays", "delay_ns", tops, n, m);
	j_findings(w, a, m);
	j_why(w, m->why);
	report_uring_json(w, a, m);
	jw_obj_end(w);
	if (jw_finish(w))
		return -EIO;
	return fputc('\n', out) == EOF ? -EIO : 0;
}
