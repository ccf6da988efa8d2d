// SPDX-License-Identifier: MIT
/*
 * sampling_prom.c — the Prometheus text of `trace --mode sampling` (sampling_prom.h). The run
 * renders it from each live analysis of the records kept so far (run_sampling.c says how often)
 * and prom.c's server answers scrapes with the last text.
 *
 * Labels: future_type is a type name read from the traced binary: untrusted, made a label value
 * by prom.c's rule (valid UTF-8, cut at 160 characters, \\ \" \n escaped). Types that share a
 * label (cut to the same prefix) are one series. Cardinality is bounded as prom.c bounds sites:
 * the first max distinct labels, in order of first appearance (a type's first sample or finding;
 * in type order within one rendering), get a series of their own, every later type is counted
 * under future_type="(other)" (--metrics-sites). A finding whose type is unknown is counted
 * under "(other)" too.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reporters.h"
#include "sampling_prom.h"

struct sp_group {
	char *label;               /* escaped; [0] "(other)" */
	uint64_t samples, on_cpu, blocked;
};

struct sp_labels {
	size_t max;                /* groups with a label of their own, besides "(other)" */
	int32_t *group_of;         /* by type index; -1 not assigned yet */
	size_t ntypes;
	struct sp_group *g;        /* 1 + max at most */
	size_t ng;
};

struct sp_labels *sp_labels_new(size_t max)
{
	struct sp_labels *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->max = max;
	l->g = calloc(max + 1, sizeof(*l->g));
	if (!l->g || !(l->g[0].label = strdup("(other)"))) {
		sp_labels_free(l);
		return NULL;
	}
	l->ng = 1;
	return l;
}

void sp_labels_free(struct sp_labels *l)
{
	if (!l)
		return;
	for (size_t i = 0; l->g && i < l->ng; i++)
		free(l->g[i].label);
	free(l->g);
	free(l->group_of);
	free(l);
}

/* The group of type t (assigned on first use): its index, 0 for "(other)", -ENOMEM. */
static int group_of(struct sp_labels *l, const struct sa_model *m, int t)
{
	const char *name;
	char *lab;

	if (t < 0 || (size_t)t >= m->ntypes)
		return 0;
	if ((size_t)t >= l->ntypes) {  /* the model's types only grow (one table for the run) */
		int32_t *p = realloc(l->group_of, m->ntypes * sizeof(*p));

		if (!p)
			return -ENOMEM;
		for (size_t i = l->ntypes; i < m->ntypes; i++)
			p[i] = -1;
		l->group_of = p;
		l->ntypes = m->ntypes;
	}
	if (l->group_of[t] >= 0)
		return l->group_of[t];
	name = m->type_names[t] ? m->type_names[t] : "(unknown)";
	lab = prom_label_value(name, strnlen(name, SR_NAME_MAX));
	if (!lab)
		return -ENOMEM;
	for (size_t g = 1; g < l->ng; g++)
		if (!strcmp(l->g[g].label, lab)) {
			free(lab);
			return l->group_of[t] = (int32_t)g;
		}
	if (l->ng > l->max) {
		free(lab);
		return l->group_of[t] = 0;
	}
	l->g[l->ng].label = lab;
	return l->group_of[t] = (int32_t)l->ng++;
}

static void head(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void counter(FILE *out, const char *name, const char *help, uint64_t v)
{
	head(out, name, "counter", help);
	fprintf(out, "%s %llu\n", name, (unsigned long long)v);
}

int report_sampling_prom(FILE *out, const struct sa_model *m, const struct sampling_meta *mt,
			 struct sp_labels *l)
{
	static const char *const seen_as[2] = { "on_cpu", "blocked" };
	const struct sa_refused *rf = &m->refused;
	char *exe;
	int g;

	for (size_t i = 0; i < l->ng; i++)
		l->g[i].samples = l->g[i].on_cpu = l->g[i].blocked = 0;
	for (size_t t = 0; t < m->ntypes; t++) {
		if (!m->types[t].samples)
			continue;
		if ((g = group_of(l, m, (int)t)) < 0)
			return g;
		l->g[g].samples += m->types[t].samples;
	}
	for (size_t i = 0; i < m->nf; i++) {
		if ((g = group_of(l, m, m->f[i].type)) < 0)
			return g;
		if (m->f[i].blocked)
			l->g[g].blocked++;
		else
			l->g[g].on_cpu++;
	}

	head(out, "tokio_trace_info", "gauge",
	     "The tracer's capture: attach mode and traced executable (value 1).");
	exe = prom_label_value(mt->exe ? mt->exe : "", mt->exe ? strnlen(mt->exe, SR_NAME_MAX) : 0);
	if (!exe)
		return -ENOMEM;
	fprintf(out, "tokio_trace_info{mode=\"sampling\",executable=\"%s\",pid=\"%d\"} 1\n", exe,
		mt->pid);
	free(exe);
	head(out, "tokio_trace_capture_seconds", "gauge",
	     "Time since the sampler was attached, at the analysis these figures come from.");
	fprintf(out, "tokio_trace_capture_seconds %llu.%09llu\n",
		(unsigned long long)(mt->duration_ns / 1000000000ull),
		(unsigned long long)(mt->duration_ns % 1000000000ull));
	head(out, "tokio_trace_sampling_profile_hz", "gauge",
	     "CPU samples a second per CPU (--profile-hz).");
	fprintf(out, "tokio_trace_sampling_profile_hz %u\n", mt->profile_hz);
	counter(out, "tokio_trace_sampling_samples_total",
		"CPU samples of the target's threads kept (the JSON's capture.samples).", mt->samples);
	counter(out, "tokio_trace_sampling_samples_in_async_poll_total",
		"CPU samples inside an async poll (attribution.in_async_poll).", m->in_poll);
	head(out, "tokio_trace_sampling_future_samples_total", "counter",
	     "CPU samples inside an async poll, by future type (future_types[].samples).");
	for (size_t i = 0; i < l->ng; i++)
		if (i || l->g[i].samples)
			fprintf(out, "tokio_trace_sampling_future_samples_total{future_type=\"%s\"} %llu\n",
				l->g[i].label, (unsigned long long)l->g[i].samples);
	head(out, "tokio_trace_sampling_long_polls_total", "counter",
	     "long_poll findings, by future type and how they were seen (on_cpu: consecutive samples; blocked: a sleep in a poll).");
	for (size_t i = 0; i < l->ng; i++)
		for (int k = 0; k < 2; k++) {
			uint64_t v = k ? l->g[i].blocked : l->g[i].on_cpu;

			if (i || l->g[i].on_cpu || l->g[i].blocked)
				fprintf(out, "tokio_trace_sampling_long_polls_total{future_type=\"%s\",seen_as=\"%s\"} %llu\n",
					l->g[i].label, seen_as[k], (unsigned long long)v);
		}
	counter(out, "tokio_trace_sampling_sleeps_total",
		"Sleeps of the target's threads while their task id slot held a task, kept (capture.sleeps).",
		mt->sleeps);
	counter(out, "tokio_trace_sampling_sleeps_in_async_poll_total",
		"Of those, sleeps that began inside an async poll.", m->poll_sleeps);
	counter(out, "tokio_trace_sampling_slot_read_failures_total",
		"Samples whose read of Tokio's thread-local task id failed (capture.slot_read_failures).",
		mt->slot_read_failures);
	head(out, "tokio_trace_sampling_records_dropped_total", "counter",
	     "Records lost because the BPF ring buffer was full, by record (capture.sample_drops, sleep_drops).");
	fprintf(out, "tokio_trace_sampling_records_dropped_total{record=\"sample\"} %llu\n"
		"tokio_trace_sampling_records_dropped_total{record=\"sleep\"} %llu\n",
		(unsigned long long)mt->sample_drops, (unsigned long long)mt->sleep_drops);
	head(out, "tokio_trace_sampling_records_refused_total", "counter",
	     "Records refused, by reason (capture.records_over_memory_bound, records_malformed).");
	fprintf(out, "tokio_trace_sampling_records_refused_total{reason=\"over_memory_bound\"} %llu\n"
		"tokio_trace_sampling_records_refused_total{reason=\"malformed\"} %llu\n",
		(unsigned long long)mt->over_memory_bound, (unsigned long long)mt->malformed);
	counter(out, "tokio_trace_sampling_stack_errors_total",
		"Stacks the BPF side could not take (capture.stack_errors).", mt->stack_errors);
	head(out, "tokio_trace_sampling_not_kept", "gauge",
	     "What the analysis's full tables did not keep, by table (the JSON's refused).");
	fprintf(out, "tokio_trace_sampling_not_kept{table=\"tasks\"} %llu\n"
		"tokio_trace_sampling_not_kept{table=\"threads\"} %llu\n"
		"tokio_trace_sampling_not_kept{table=\"future_types\"} %llu\n"
		"tokio_trace_sampling_not_kept{table=\"frames\"} %llu\n"
		"tokio_trace_sampling_not_kept{table=\"findings\"} %llu\n"
		"tokio_trace_sampling_not_kept{table=\"task_ids\"} %llu\n",
		(unsigned long long)rf->tasks, (unsigned long long)rf->threads,
		(unsigned long long)rf->types, (unsigned long long)rf->frames,
		(unsigned long long)rf->findings, (unsigned long long)rf->ids);
	head(out, "tokio_trace_sampling_future_types", "gauge",
	     "Future types with samples (each beyond the label limit is counted under future_type=\"(other)\").");
	fprintf(out, "tokio_trace_sampling_future_types %zu\n", m->nseen);
	head(out, "tokio_trace_sampling_future_type_label_limit", "gauge",
	     "Distinct future_type label values allowed (--metrics-sites).");
	fprintf(out, "tokio_trace_sampling_future_type_label_limit %zu\n", l->max);
	prom_remote_write_metrics(out, mt->remote_write);
	return fflush(out) || ferror(out) ? -EIO : 0;
}
