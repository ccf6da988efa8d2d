/* SPDX-License-Identifier: MIT */
/*
 * uring_report.h — io_uring in the reports (uring_report.c): the terminal section, the JSON's
 * "io_uring" (null when no ring of the target was seen), and a stalled task's requests in
 * flight, appended to its finding's sentence and listed in its JSON finding.
 */
#ifndef TET_URING_REPORT_H
#define TET_URING_REPORT_H
#include "report.h"

struct jw;
void report_uring_terminal(FILE *out, const struct analyzer *a, const struct report_meta *m);
void report_uring_json(struct jw *w, const struct analyzer *a, const struct report_meta *m);
void report_uring_capture_json(struct jw *w, const struct report_meta *m);
void report_uring_task_json(struct jw *w, const struct ur_task_stats *st);
/* A task with no Tokio wait registered and an io_uring request of its own in flight: that
 * request (the oldest), else NULL. Its wait is then on io_uring: report_uring_task_wait writes
 * the wait's "kind": "io_uring", "class": "request" and "io_uring" (the request). */
const struct ur_inflight *report_uring_task_request(const struct analyzer *a,
						    const struct an_task_summary *t);
void report_uring_task_wait(struct jw *w, const struct analyzer *a, const struct report_meta *m,
			    const struct ur_inflight *req);
/* The io_uring totals (rings … polls_nested_too_deep), for the JSON report and the page data. */
void report_uring_totals_json(struct jw *w, const struct ur_totals *t, const struct report_meta *m);
void report_uring_finding_text(const struct analyzer *a, const struct an_finding *f, char *buf,
			       size_t len);
void report_uring_finding_json(struct jw *w, const struct analyzer *a,
			       const struct report_meta *m, const struct an_finding *f);

#endif
