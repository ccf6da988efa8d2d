/* SPDX-License-Identifier: MIT */
/*
 * sampling_prom.h — `trace --mode sampling`'s Prometheus metrics (--metrics-addr; the families:
 * docs/sampling-mode.md "Metrics"), rendered from the analysis's model (analyze/sampling.h) and
 * the run's figures (struct sampling_meta), served by prom.c's endpoint (prom_publish).
 */
#ifndef TET_SAMPLING_PROM_H
#define TET_SAMPLING_PROM_H
#include <stddef.h>
#include <stdio.h>

#include "sampling_report.h"

/* The future_type label values, kept from one rendering to the next (a series never changes
 * its label): the first max distinct labels in order of first appearance, every later type
 * under future_type="(other)". */
struct sp_labels;
struct sp_labels *sp_labels_new(size_t max);
void sp_labels_free(struct sp_labels *l);
/* The exposition text of model m and the run's figures mt: 0, -ENOMEM or -EIO. */
int report_sampling_prom(FILE *out, const struct sa_model *m, const struct sampling_meta *mt,
			 struct sp_labels *l);

#endif
