// SPDX-License-Identifier: MIT
/*
 * trace.c — `tokio-ebpf-trace [trace] --pid PID | --binary PATH [OPTIONS]`.
 *
 * Order of business: parse and validate every option (usage errors: one line, exit 3) →
 * target exists (exit 4) → kernel features and privileges (exit 2) → the note reader finds
 * the files with tokio probes (exit 2 when there are none) → load and attach → drain the
 * ring buffer on a timer until --duration, SIGINT/SIGTERM or the traced process's exit →
 * detach (the kernel resets the semaphores) → drain what is left → summary and JSON.
 * Nothing stays attached on any exit path: links are destroyed before the process exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "commands.h"
#include "run.h"
#include "seterr.h"
#include "run_sampling.h"
#include "thresholds.h"
#include "units.h"

#define DAY_NS (24 * 3600 * NSEC_PER_SEC)

static volatile sig_atomic_t stop_signal, usr1_signal;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		usr1_signal = 1;
	else
		stop_signal = sig;
}


#define USAGE_INDENT 27 /* where an option's text starts */
#define USAGE_WIDTH  96

/* HEAD, then TEXT wrapped at USAGE_WIDTH under USAGE_INDENT: lines break at a space or after a
 * comma ("long_poll,stalled,"). */
static void usage_wrap(FILE *out, const char *head, const char *text)
{
	size_t col = strlen(head);
	bool space = false;

	fputs(head, out);
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, " ,");

		n += p[n] == ',';
		if (col + space + n > USAGE_WIDTH && col > USAGE_INDENT) {
			fprintf(out, "\n%*s", USAGE_INDENT, "");
			col = USAGE_INDENT;
		} else if (space) {
			fputc(' ', out);
			col++;
		}
		fwrite(p, 1, n, out);
		col += n;
		p += n;
		space = *p == ' ';
		p += strspn(p, " ");
	}
	fputc('\n', out);
}

/* --detect's and --trigger's lines: the kinds of findings.def */
static void usage_kinds(FILE *out, bool trigger)
{
	char text[1024];
	size_t n = 0;

	n += (size_t)snprintf(text, sizeof(text), "%s",
			      trigger ? "what dumps, repeatable: " : "detectors: ");
	for (int k = 0, first = 1; k < AN_FINDING_KINDS; k++) {
		if (trigger && !an_finding_triggers(k))
			continue;
		n += (size_t)snprintf(text + n, n < sizeof(text) ? sizeof(text) - n : 0, "%s%s",
				      first ? "" : trigger ? ", " : ",", an_finding_name(k));
		first = 0;
	}
	snprintf(text + n, n < sizeof(text) ? sizeof(text) - n : 0, "%s", trigger ?
		 " (the detectors, with their thresholds); poll>D, sched_delay>D (a poll, a "
		 "scheduling delay longer than D); exit (the process exits); crash (it dies on a "
		 "signal). SIGUSR1 and crash always dump" :
		 ", all or none (default all)");
	usage_wrap(out, trigger ? "      --trigger T          " : "      --detect LIST        ", text);
}

/* "Thresholds:": thresholds.def's rows with their defaults */
static void usage_thresholds(FILE *out)
{
	fputs("Thresholds:\n", out);
	for (size_t i = 0; i < AN_THRESHOLDS; i++) {
		const struct an_threshold *t = &an_thresholds[i];
		char opt[64], def[32];

		snprintf(opt, sizeof(opt), "--%s %s", t->option, an_unit_metavar(t->unit));
		fprintf(out, "      %-27s %s (default %s)\n", opt, t->help,
			an_threshold_format(t, NULL, def, sizeof(def)));
	}
}

static void trace_usage(FILE *out)
{
	fprintf(out,
"Usage: %s [trace] --pid PID | --binary PATH [OPTIONS]\n"
"Attach to the tokio:* USDT probes of a Tokio process (built with scripts/tokio-usdt-build),\n"
"find slow tasks and why, and where they were spawned.\n"
"\n"
"Target (one of):\n"
"  -p, --pid PID            a running process: all its threads, the executable and every\n"
"                           shared library carrying the probes\n"
"  -b, --binary PATH        every process running PATH, including ones started later\n"
"Capture:\n"
"  -d, --duration D         stop after D (default: until Ctrl-C / SIGTERM / the process exits)\n"
"  -i, --interval D         print a summary every D\n"
"  -o, --output FILE        write a report to FILE, its format by the suffix: .html/.htm a\n"
"                           self-contained HTML report, anything else the JSON report\n"
"                           (docs/report-schema.md); '-' JSON on stdout (the summary then goes\n"
"                           to stderr). Repeatable: -o report.json -o report.html\n"
"      --trace FILE         write a Chrome trace-event JSON file (Perfetto UI, chrome://tracing)\n"
"      --timeline-events N  events kept for the HTML timeline and --trace (default 500000; the\n"
"                           oldest beyond are cut, and the reports say so)\n"
"      --metrics-addr ADDR  while tracing, serve Prometheus metrics at http://ADDR/metrics\n"
"                           (HOST:PORT, [IPV6]:PORT or PORT; the host defaults to 127.0.0.1)\n"
"      --metrics-sites N    spawn-site label values in the metrics (default 50; later sites\n"
"                           are counted under site=\"(other)\")\n"
"      --remote-write URL   push the same metrics to URL (http:// or https://) by Prometheus\n"
"                           remote write, labelled with host, pid, executable, tokio_release,\n"
"                           mode and capture; queued, retried, never waited for\n"
"      --remote-write-interval D  how often (default 15s); a last push at the end\n"
"      --remote-write-header 'NAME: VALUE'  an HTTP header on each push (auth), repeatable\n"
"      --mode MODE          auto (default): the tokio USDT probes when the binary has them, else\n"
"                           uprobes on Tokio's task functions (stock Tokio, no rebuild); usdt;\n"
"                           uprobe (the fallback even when probes exist); sampling: no uprobe\n"
"                           at all, the CPU sampler (--profile-hz) reads Tokio's thread-local\n"
"                           task id and the stacks (one process, --pid; JSON, the summary and\n"
"                           the files of --stacks, --pprof, --trace; --metrics-addr, --interval\n"
"                           and --remote-write; or the flight recorder, dumping on SIGUSR1,\n"
"                           exit, crash and long_poll)\n"
"      --capture HOW        batched (default when the target has tokio:event_batch): the\n"
"                           process records events in per-thread buffers and hands them over\n"
"                           in batches, one probe hit per batch; per-event: one probe hit per\n"
"                           event (the only way for targets without event_batch)\n"
"      --sample-rate N|auto  batched capture: trace one task in N, chosen by its id (its whole\n"
"                           life is traced); totals stay exact. auto (default): every task\n"
"                           while the tracer keeps up, then fewer, whole tasks set aside by\n"
"                           rule (docs/sampling.md); N: that rate, never changed\n"
"      --max-overhead PCT   adaptive sampling: a budget for the tracer's CPU, in %% of one\n"
"                           CPU: over it, fewer tasks are traced (default: none; the ring\n"
"                           alone decides)\n"
"      --probes LIST        per-event capture: probe classes spawn,poll,yield,wake,waker,\n"
"                           terminate,worker,wait or all (default: what the detectors need;\n"
"                           waker only with lost_waker); batched capture records every class\n",
		TET_PROG);
	usage_kinds(out, false);
	fprintf(out,
"Why polls were slow (kernel side, no change to the program):\n"
"      --profile-hz N       sample the target's CPU stacks N times a second per CPU and charge\n"
"                           each sample to the task being polled (default %d; 0: off)\n"
"      --stacks FILE        write the CPU samples as folded stacks (site;frame;...;frame count:\n"
"                           flamegraph.pl, inferno, speedscope)\n"
"      --pprof FILE         write the CPU samples and the polls' off-CPU time as a gzipped pprof\n"
"                           profile, labelled by spawn site, future type, task name, worker\n"
"                           and long poll (go tool pprof, Pyroscope, Parca)\n"
"      --no-sched           no sched_switch/sched_wakeup tracking (polls are not split into\n"
"                           on-CPU, preempted and blocked time) and no CPU profile\n"
"io_uring (docs/io-uring.md):\n"
"      --no-io-uring        do not follow the target's io_uring requests (the tracepoints\n"
"                           io_uring_create/submit_req/complete and the SQ of each poll)\n"
"Flight recorder (docs/flight-recorder.md):\n"
"      --flight-recorder WINDOW  record continuously, keep only the last WINDOW in memory (a\n"
"                           duration such as 60s, or a size such as 256M), analyse nothing\n"
"                           and write nothing until a trigger fires; then dump the window as\n"
"                           a JSON report, report.html and a Perfetto trace. Runs until stopped\n",
		TET_PROFILE_HZ_DEFAULT);
	usage_kinds(out, true);
	fputs(
"      --post-trigger D     keep recording D after the trigger before dumping (default 500ms)\n"
"      --trigger-cooldown D  at most one dump per D for detector and threshold triggers\n"
"                           (default 60s; the others are counted as suppressed)\n"
"      --dump-dir DIR       where dumps go (default: the current directory), named\n"
"                           <executable>-<pid>-<UTC time>-<trigger>.{json,html,trace.json}\n"
"      --dump-max-bytes SIZE  the dump directory's budget: the oldest dumps are removed first\n"
"                           (default 1G)\n"
"      --flight-memory SIZE  memory bound of a time WINDOW (default 256M)\n"
"      --on-dump CMD        after each dump is completely written, run CMD with /bin/sh -c,\n"
"                           the dump's files as \"$@\" (TET_DUMP_DIR, TET_DUMP_NAME,\n"
"                           TET_DUMP_INDEX, TET_DUMP_TRIGGER set); one at a time: a dump\n"
"                           done while it runs is not handed over (counted as skipped)\n", out);
	usage_thresholds(out);
	fprintf(out,
"Tuning:\n"
"      --ringbuf-size SIZE  BPF ring buffer, power of two, K/M/G suffix (default 16M, 64M with\n"
"                           batched capture: it absorbs bursts the analysis cannot follow)\n"
"      --drain-interval D   how often user space drains the ring (default 20ms)\n"
"      --nice N             run the tracer at this nice value, 0-19 (default 10: under full\n"
"                           load the traced service keeps the CPU, bursts wait in the ring;\n"
"                           0 for a flight recorder that keeps batches raw, ~3 ns an event)\n"
"      --top N              rows per table in the summary (default 10)\n"
"      --task-records N     terminated tasks listed in the JSON (default 10000; tasks with a\n"
"                           finding are always listed; every task counts at its site)\n"
"      --live-tasks N       live tasks listed in the JSON and HTML (default 10000; the oldest,\n"
"                           and every one with a finding; the others are counted as omitted)\n"
"      --sites N            spawn sites listed in the JSON (default 10000; the shared ones,\n"
"                           every one with a finding, then the busiest; the others counted)\n"
"      --max-tasks N        live tasks followed at once (default 100000, ~2 KiB each; the\n"
"                           others count at their spawn site only, as tasks_untracked)\n"
"  -q, --quiet              no terminal summary (JSON only)\n"
"  -v, --verbose            libbpf debug output, BPF program ids\n"
"  -h, --help\n"
"Durations are a number and a unit: ns, us, ms, s, m, h (1.5s, 250ms).\n"
"\n"
"Examples:\n"
"  %s --pid 1234 --duration 30s --output report.json --output report.html\n"
"  %s --pid 1234 --duration 10s --trace trace.json     (open in ui.perfetto.dev)\n"
"  %s --pid 1234 --metrics-addr 127.0.0.1:9464 -q\n"
"  %s --binary ./target/release/server -i 5s\n"
"Exit status:\n"
"  0  ok: done (also when the traced process exited)\n"
"  2  cannot trace: tracing failed\n"
"  3  usage error\n"
"  4  bad input: no such PID or file\n",
		TET_PROG, TET_PROG, TET_PROG, TET_PROG);
}

static int parse_count(const char *flag, const char *s, uint64_t min, uint64_t max,
		       uint64_t *out)
{
	char err[256];
	int ret = parse_whole(s, min, max, out, err, sizeof(err));

	if (ret)
		p_err("%s %s", flag, err);
	return ret;
}

/* A byte count (parse_byte_size); quiet: no message. The caller checks the range. */
static int parse_bytes(const char *flag, const char *s, uint64_t *out, bool quiet)
{
	char err[256];

	if (parse_byte_size(s, out, err, sizeof(err))) {
		if (!quiet)
			p_err("%s %s", flag, err);
		return -EINVAL;
	}
	return 0;
}

/* A byte count within [min, max]: the error names the range in M and G. */
static int parse_bytes_in(const char *flag, const char *s, uint64_t min, uint64_t max,
			  uint64_t *out, bool quiet)
{
	if (parse_bytes(flag, s, out, quiet))
		return -EINVAL;
	if (*out < min || *out > max) {
		if (!quiet)
			p_err("%s '%s': must be between %lluM and %lluG", flag, s,
			      (unsigned long long)(min >> 20), (unsigned long long)(max >> 30));
		return -ERANGE;
	}
	return 0;
}

/* The BPF ring's size: a power of two, 64K to 1G. */
static int parse_size(const char *flag, const char *s, size_t *out)
{
	uint64_t v;

	if (parse_bytes(flag, s, &v, false))
		return -EINVAL;
	if (v < (64ull << 10) || v > (1ull << 30) || (v & (v - 1))) {
		p_err("%s '%s': must be a power of two between 64K and 1G", flag, s);
		return -ERANGE;
	}
	*out = (size_t)v;
	return 0;
}

static int parse_dur(const char *flag, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char err[256];

	if (parse_duration(s, min, max, out, err, sizeof(err))) {
		p_err("%s %s", flag, err);
		return -EINVAL;
	}
	return 0;
}

static int parse_probes(const char *s, unsigned *out)
{
	const struct tet_class *classes;
	size_t nclasses = tet_classes(&classes);
	char *copy = strdup(s), *tok, *save = NULL, names[160] = "";
	unsigned mask = 0;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		bool found = false;

		if (!strcmp(tok, "all")) {
			mask |= TET_PROBES_ALL;
			continue;
		}
		for (size_t i = 0; i < nclasses; i++) {
			if (!strcmp(tok, classes[i].name)) {
				mask |= tet_class_mask(classes[i].name);
				found = true;
			}
		}
		if (!found) {
			for (size_t i = 0; i < nclasses; i++)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s, ",
					 classes[i].name);
			p_err("--probes: unknown probe class '%s' (%sall)", tok, names);
			ret = -EINVAL;
			break;
		}
	}
	free(copy);
	if (!ret && !mask) {
		p_err("--probes '%s': no probe class given", s);
		ret = -EINVAL;
	}
	*out = mask;
	return ret;
}

static int parse_detect(const char *s, unsigned *out)
{
	char *copy = strdup(s), *tok, *save = NULL;
	unsigned mask = 0;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int k;

		if (!strcmp(tok, "all")) {
			mask |= AN_DETECT_ALL;
			continue;
		}
		if (!strcmp(tok, "none"))
			continue;
		for (k = 0; k < AN_FINDING_KINDS; k++)
			if (!strcmp(tok, an_finding_name(k)))
				break;
		if (k == AN_FINDING_KINDS) {
			p_err("--detect: unknown detector '%s' (%s)", tok, an_finding_list);
			ret = -EINVAL;
			break;
		}
		mask |= 1u << k;
	}
	free(copy);
	*out = mask;
	return ret;
}

enum {
	OPT_PROBES = 256, OPT_MAX_OVERHEAD, OPT_MODE, OPT_DETECT, OPT_RINGBUF, OPT_DRAIN, OPT_TOP, OPT_TASK_RECORDS, OPT_LIVE_TASKS, OPT_MAX_TASKS, OPT_SITES,
	OPT_TRACE, OPT_TIMELINE, OPT_METRICS_ADDR, OPT_METRICS_SITES, OPT_CAPTURE, OPT_SAMPLE_RATE,
	OPT_NICE, OPT_PROFILE_HZ, OPT_STACKS, OPT_PPROF, OPT_NO_SCHED, OPT_NO_URING, OPT_FLIGHT, OPT_TRIGGER, OPT_POST_TRIGGER,
	OPT_COOLDOWN, OPT_DUMP_DIR, OPT_DUMP_MAX, OPT_FLIGHT_MEMORY, OPT_ON_DUMP,
	OPT_THRESHOLD, /* + the row of thresholds.def: the last */
};
enum { OPT_REMOTE_WRITE = 1024, OPT_REMOTE_WRITE_INTERVAL, OPT_REMOTE_WRITE_HEADER };

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "binary", required_argument, NULL, 'b' },
	{ "duration", required_argument, NULL, 'd' },
	{ "interval", required_argument, NULL, 'i' },
	{ "output", required_argument, NULL, 'o' },
	{ "probes", required_argument, NULL, OPT_PROBES },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "capture", required_argument, NULL, OPT_CAPTURE },
	{ "sample-rate", required_argument, NULL, OPT_SAMPLE_RATE },
	{ "max-overhead", required_argument, NULL, OPT_MAX_OVERHEAD },
	{ "nice", required_argument, NULL, OPT_NICE },
	{ "profile-hz", required_argument, NULL, OPT_PROFILE_HZ },
	{ "stacks", required_argument, NULL, OPT_STACKS },
	{ "pprof", required_argument, NULL, OPT_PPROF },
	{ "no-sched", no_argument, NULL, OPT_NO_SCHED },
	{ "no-io-uring", no_argument, NULL, OPT_NO_URING },
	{ "detect", required_argument, NULL, OPT_DETECT },
#define AN_THRESHOLD(kind, option, unit, field, def, min, max, help) \
	{ option, required_argument, NULL, OPT_THRESHOLD + AN_TH_##field },
#include "thresholds.def"
	{ "ringbuf-size", required_argument, NULL, OPT_RINGBUF },
	{ "drain-interval", required_argument, NULL, OPT_DRAIN },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "task-records", required_argument, NULL, OPT_TASK_RECORDS },
	{ "live-tasks", required_argument, NULL, OPT_LIVE_TASKS },
	{ "max-tasks", required_argument, NULL, OPT_MAX_TASKS },
	{ "sites", required_argument, NULL, OPT_SITES },
	{ "trace", required_argument, NULL, OPT_TRACE },
	{ "timeline-events", required_argument, NULL, OPT_TIMELINE },
	{ "metrics-addr", required_argument, NULL, OPT_METRICS_ADDR },
	{ "metrics-sites", required_argument, NULL, OPT_METRICS_SITES },
	{ "remote-write", required_argument, NULL, OPT_REMOTE_WRITE },
	{ "remote-write-interval", required_argument, NULL, OPT_REMOTE_WRITE_INTERVAL },
	{ "remote-write-header", required_argument, NULL, OPT_REMOTE_WRITE_HEADER },
	{ "flight-recorder", required_argument, NULL, OPT_FLIGHT },
	{ "trigger", required_argument, NULL, OPT_TRIGGER },
	{ "post-trigger", required_argument, NULL, OPT_POST_TRIGGER },
	{ "trigger-cooldown", required_argument, NULL, OPT_COOLDOWN },
	{ "dump-dir", required_argument, NULL, OPT_DUMP_DIR },
	{ "dump-max-bytes", required_argument, NULL, OPT_DUMP_MAX },
	{ "flight-memory", required_argument, NULL, OPT_FLIGHT_MEMORY },
	{ "on-dump", required_argument, NULL, OPT_ON_DUMP },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The target, the capture and the outputs.
 * Returns 0, -EINVAL (message printed), or -ENOENT: not one of them. */
static int parse_capture_opt(int c, struct run_opts *o)
{
	char errbuf[1024]; /* p_err's bound */
	uint64_t v;
	int ret = 0;

	switch (c) {
	case 'p':
		if (o->pid || o->binary) {
			p_err("give one target: --pid or --binary, once");
			return -EINVAL;
		}
		if (!parse_pid(optarg, &o->pid))
			return -EINVAL;
		break;
	case 'b':
		if (o->pid || o->binary) {
			p_err("give one target: --pid or --binary, once");
			return -EINVAL;
		}
		if (!*optarg) {
			p_err("--binary: empty path");
			return -EINVAL;
		}
		o->binary = optarg;
		break;
	case 'd':
		ret = parse_dur("--duration", optarg, NSEC_PER_MSEC, 30 * DAY_NS, &o->duration_ns);
		break;
	case 'i':
		ret = parse_dur("--interval", optarg, 100 * NSEC_PER_MSEC, DAY_NS, &o->interval_ns);
		break;
	case 'o':
		if (outputs_add(&o->outs, optarg, out_format_of(optarg), errbuf, sizeof(errbuf))) {
			p_err("%s", errbuf);
			return -EINVAL;
		}
		o->output = optarg;
		break;
	case OPT_TRACE:
		if (outputs_add(&o->outs, optarg, OUT_PERFETTO, errbuf, sizeof(errbuf))) {
			p_err("%s", errbuf);
			return -EINVAL;
		}
		break;
	case OPT_STACKS:
		if (outputs_add(&o->outs, optarg, OUT_STACKS, errbuf, sizeof(errbuf))) {
			p_err("%s", errbuf);
			return -EINVAL;
		}
		break;
	case OPT_PPROF:
		if (outputs_add(&o->outs, optarg, OUT_PPROF, errbuf, sizeof(errbuf))) {
			p_err("%s", errbuf);
			return -EINVAL;
		}
		o->an.stack_labels = true;
		break;
	case OPT_PROFILE_HZ:
		ret = parse_count("--profile-hz", optarg, 0, TET_PROFILE_HZ_MAX, &v);
		o->sched.profile_hz = (unsigned)v;
		break;
	case OPT_NO_SCHED:
		o->sched.off = true;
		break;
	case OPT_NO_URING:
		o->no_uring = true;
		break;
	case OPT_METRICS_ADDR: {
		char err[300];

		if (!prom_addr_valid(optarg, err, sizeof(err))) {
			p_err("--metrics-addr %s", err);
			return -EINVAL;
		}
		o->metrics_addr = optarg;
		break;
	}
	case OPT_METRICS_SITES:
		ret = parse_count("--metrics-sites", optarg, 1, 10000, &v);
		o->metrics_sites = (size_t)v;
		break;
	case OPT_PROBES:
		ret = parse_probes(optarg, &o->probes);
		o->probes_given = true;
		break;
	case OPT_MODE:
		if (!strcmp(optarg, "auto"))
			o->mode = TET_MODE_AUTO;
		else if (!strcmp(optarg, "usdt"))
			o->mode = TET_MODE_USDT;
		else if (!strcmp(optarg, "uprobe") || !strcmp(optarg, "uprobe-fallback"))
			o->mode = TET_MODE_UPROBE;
		else if (!strcmp(optarg, "sampling"))
			o->mode = TET_MODE_SAMPLING;  /* its own run, no uprobe (run_sampling.h) */
		else {
			p_err("--mode '%s': expected auto, usdt, uprobe or sampling", optarg);
			return -EINVAL;
		}
		break;
	case OPT_CAPTURE:
		if (!strcmp(optarg, "auto"))
			o->capture = CAPTURE_AUTO;
		else if (!strcmp(optarg, "batched"))
			o->capture = CAPTURE_BATCHED;
		else if (!strcmp(optarg, "per-event"))
			o->capture = CAPTURE_PER_EVENT;
		else {
			p_err("--capture '%s': expected batched, per-event or auto", optarg);
			return -EINVAL;
		}
		break;
	case OPT_NICE:
		ret = parse_count("--nice", optarg, 0, 19, &v);
		o->nice = (int)v;
		break;
	case OPT_SAMPLE_RATE:
		if (!strcmp(optarg, "auto")) {
			o->sample_rate = 1;
			o->sample_fixed = false;
			break;
		}
		ret = parse_count("--sample-rate", optarg, 1, 65535, &v);
		o->sample_rate = (uint32_t)v;
		o->sample_fixed = true;
		break;
	case OPT_MAX_OVERHEAD:
		ret = parse_count("--max-overhead", optarg, 1, 400, &v);
		o->max_overhead_pct = (uint32_t)v;
		o->max_overhead_given = true;
		break;
	case OPT_RINGBUF:
		ret = parse_size("--ringbuf-size", optarg, &o->ringbuf);
		break;
	case OPT_DRAIN:
		ret = parse_dur("--drain-interval", optarg, NSEC_PER_MSEC, NSEC_PER_SEC, &o->drain_ns);
		break;
	case 'q':
		o->quiet = true;
		break;
	case 'v':
		o->verbose = true;
		break;
	default:
		return -ENOENT;
	}
	return ret ? -EINVAL : 0;
}

/* The detectors' options and the report's bounds.
 * Returns 0, -EINVAL (message printed), or -ENOENT: not one of them. */
static int parse_analysis_opt(int c, struct run_opts *o)
{
	char errbuf[1024]; /* p_err's bound */
	uint64_t v;
	int ret = 0;

	switch (c) {
	case OPT_TIMELINE:
		ret = parse_count("--timeline-events", optarg, 1000, 50000000, &v);
		o->timeline_events = (size_t)v;
		break;
	case OPT_DETECT:
		ret = parse_detect(optarg, &o->an.detect);
		break;
	case OPT_TOP:
		ret = parse_count("--top", optarg, 1, 1000, &v);
		o->top = (size_t)v;
		break;
	case OPT_TASK_RECORDS:
		ret = parse_count("--task-records", optarg, 0, 10000000, &v);
		o->an.max_task_records = (size_t)v;
		break;
	case OPT_LIVE_TASKS:
		ret = parse_count("--live-tasks", optarg, 0, 10000000, &v);
		o->an.max_live_listed = (size_t)v;
		break;
	case OPT_SITES:
		ret = parse_count("--sites", optarg, 0, 10000000, &v);
		o->an.max_sites_listed = (size_t)v;
		break;
	case OPT_MAX_TASKS:
		ret = parse_count("--max-tasks", optarg, 1, 10000000, &v);
		o->an.max_live_tasks = (size_t)v;
		break;
	default:
		if (c < OPT_THRESHOLD || c >= OPT_THRESHOLD + AN_THRESHOLDS)
			return -ENOENT;
		if (an_threshold_parse(&an_thresholds[c - OPT_THRESHOLD], optarg, &o->an, errbuf,
				       sizeof(errbuf))) {
			p_err("%s", errbuf);
			return -EINVAL;
		}
	}
	return ret ? -EINVAL : 0;
}

/* The flight recorder's options.
 * Returns 0, -EINVAL (message printed), or -ENOENT: not one of them. */
static int parse_flight_opt(int c, struct run_opts *o)
{
	char errbuf[1024]; /* p_err's bound */
	int ret = 0;

	switch (c) {
	case OPT_FLIGHT: {
		char err[128];

		if (o->fl.on) {
			p_err("--flight-recorder: give it once");
			return -EINVAL;
		}
		o->fl.on = true;
		ret = parse_duration(optarg, NSEC_PER_SEC, 7 * DAY_NS, &o->fl.window_ns, err,
				     sizeof(err));
		if (!ret)
			break;
		if (ret == -ERANGE) { /* a duration, out of range */
			p_err("--flight-recorder %s (a duration of 1s to 7d, or a size)", err);
			return -EINVAL;
		}
		ret = 0;
		o->fl.window_ns = 0;
		if (parse_bytes_in("--flight-recorder", optarg, FR_MIN_BYTES, 1ull << 40,
				   &o->fl.window_bytes, true)) {
			p_err("--flight-recorder '%s': expected a duration (60s, 5m) or a size (256M, 1G) of at least %lluM",
			      optarg, (unsigned long long)(FR_MIN_BYTES >> 20));
			return -EINVAL;
		}
		break;
	}
	case OPT_TRIGGER:
		o->fl.needs = "--trigger";
		if (o->fl.ntrig == FR_TRIGGERS_MAX) {
			p_err("--trigger %s: at most %d triggers", optarg, FR_TRIGGERS_MAX);
			return -EINVAL;
		}
		if (fr_trigger_parse(optarg, &o->fl.trig[o->fl.ntrig], errbuf,
				     sizeof(errbuf))) {
			p_err("%s", errbuf);
			return -EINVAL;
		}
		o->fl.ntrig++;
		break;
	case OPT_POST_TRIGGER:
		o->fl.needs = "--post-trigger";
		ret = parse_dur("--post-trigger", optarg, 0, 10 * 60 * NSEC_PER_SEC, &o->fl.post_ns);
		break;
	case OPT_COOLDOWN:
		o->fl.needs = "--trigger-cooldown";
		ret = parse_dur("--trigger-cooldown", optarg, 0, DAY_NS, &o->fl.cooldown_ns);
		break;
	case OPT_DUMP_DIR:
		o->fl.needs = "--dump-dir";
		if (!*optarg) {
			p_err("--dump-dir: empty path");
			return -EINVAL;
		}
		o->fl.dir = optarg;
		break;
	case OPT_DUMP_MAX:
		o->fl.needs = "--dump-max-bytes";
		ret = parse_bytes_in("--dump-max-bytes", optarg, 1ull << 20, 1ull << 40,
				     &o->fl.dump_max_bytes, false);
		break;
	case OPT_ON_DUMP:
		o->fl.needs = "--on-dump";
		if (!*optarg) {
			p_err("--on-dump: empty command");
			return -EINVAL;
		}
		o->fl.on_dump = optarg;
		break;
	case OPT_FLIGHT_MEMORY:
		o->fl.needs = "--flight-memory";
		ret = parse_bytes_in("--flight-memory", optarg, FR_MIN_BYTES, 1ull << 40,
				     &o->fl.window_bytes, false);
		o->fl.memory_given = true;
		break;
	default:
		return -ENOENT;
	}
	return ret ? -EINVAL : 0;
}

/* --remote-write and its interval and headers (checked for syntax here; the host resolves
 * when the run opens). Returns 0, -EINVAL (message printed), or -ENOENT: not one of them. */
static int parse_remote_write_opt(int c, struct run_opts *o)
{
	char err[300];

	switch (c) {
	case OPT_REMOTE_WRITE:
		if (o->rw.url) {
			p_err("--remote-write: give it once");
			return -EINVAL;
		}
		if (rw_url_check(optarg, err, sizeof(err))) {
			p_err("%s", err);
			return -EINVAL;
		}
		o->rw.url = optarg;
		return 0;
	case OPT_REMOTE_WRITE_INTERVAL:
		return parse_dur("--remote-write-interval", optarg, 100 * NSEC_PER_MSEC, DAY_NS,
				 &o->rw.interval_ns) ? -EINVAL : 0;
	case OPT_REMOTE_WRITE_HEADER:
		if (o->rw.nheaders == RW_HEADERS_MAX) {
			p_err("--remote-write-header: at most %d headers", RW_HEADERS_MAX);
			return -EINVAL;
		}
		if (rw_header_check(optarg, err, sizeof(err))) {
			p_err("%s", err);
			return -EINVAL;
		}
		o->rw.headers[o->rw.nheaders++] = optarg;
		return 0;
	default:
		return -ENOENT;
	}
}

/* What the options do not allow together, and what follows from them. */
static int check_args(struct run_opts *o)
{
	if (!o->pid && !o->binary) {
		p_err("nothing to trace: give --pid PID or --binary PATH (see --help)");
		return -EINVAL;
	}
	if (o->sample_rate > 1 && o->capture == CAPTURE_PER_EVENT) {
		p_err("--sample-rate needs batched capture (the process decides which tasks to record): drop --capture per-event");
		return -EINVAL;
	}
	if (o->sample_rate > 1 && o->mode == TET_MODE_UPROBE) {
		p_err("--sample-rate needs batched capture, which the uprobe fallback does not have");
		return -EINVAL;
	}
	if (o->max_overhead_given && o->sample_fixed) {
		p_err("--max-overhead bounds adaptive sampling, which a fixed --sample-rate turns off: drop one of them");
		return -EINVAL;
	}
	if (o->max_overhead_given && (o->capture == CAPTURE_PER_EVENT || o->mode == TET_MODE_UPROBE)) {
		p_err("--max-overhead needs batched capture (its adaptive sampling keeps the tracer under it)");
		return -EINVAL;
	}
	if (o->max_overhead_given && o->fl.on) {
		p_err("--max-overhead bounds adaptive sampling, which the flight recorder does not use (it keeps its --sample-rate)");
		return -EINVAL;
	}
	if (o->capture == CAPTURE_BATCHED && o->mode == TET_MODE_UPROBE) {
		p_err("--capture batched needs the tokio USDT probes: it does not go with --mode uprobe");
		return -EINVAL;
	}
	if (!o->sample_rate)
		o->sample_rate = 1;
	if (o->sched.off && outputs_want(&o->outs, OUT_STACKS)) {
		p_err("--stacks needs the CPU profile, which --no-sched turns off");
		return -EINVAL;
	}
	if (!o->sched.profile_hz && outputs_want(&o->outs, OUT_STACKS)) {
		p_err("--stacks needs the CPU profile: drop --profile-hz 0");
		return -EINVAL;
	}
	if (o->sched.off && outputs_want(&o->outs, OUT_PPROF)) {
		p_err("--pprof needs the CPU profile, which --no-sched turns off");
		return -EINVAL;
	}
	if (!o->sched.profile_hz && outputs_want(&o->outs, OUT_PPROF)) {
		p_err("--pprof needs the CPU profile: drop --profile-hz 0");
		return -EINVAL;
	}
	if (!o->rw.url && (o->rw.interval_ns || o->rw.nheaders)) {
		p_err("%s needs --remote-write URL",
		      o->rw.nheaders ? "--remote-write-header" : "--remote-write-interval");
		return -EINVAL;
	}
	if (!o->rw.interval_ns)
		o->rw.interval_ns = RW_DEFAULT_INTERVAL_NS;
	if (!o->fl.on && o->fl.needs) {
		p_err("%s needs --flight-recorder WINDOW", o->fl.needs);
		return -EINVAL;
	}
	if (o->fl.on && o->outs.n) {
		p_err("--flight-recorder writes its reports into --dump-dir when a trigger fires: drop --output, --trace, --stacks and --pprof");
		return -EINVAL;
	}
	if (o->fl.on && o->fl.memory_given && !o->fl.window_ns) {
		p_err("--flight-memory bounds a time window: --flight-recorder %s is a size already",
		      "SIZE");
		return -EINVAL;
	}
	if (o->interval_ns && o->interval_ns < o->drain_ns) {
		p_err("--interval must not be shorter than --drain-interval");
		return -EINVAL;
	}
	/* probe classes follow the detectors unless given */
	if (!o->probes_given) {
		o->probes = TET_PROBES_ALL;
		if (!(o->an.detect & (1u << AN_LOST_WAKER)))
			o->probes &= ~TET_CLASS_WAKER;
	}
	o->an.top_n = o->top;
	/* the HTML timeline and the trace are drawn from the analyzer's timeline ring */
	if (outputs_want(&o->outs, OUT_HTML) || outputs_want(&o->outs, OUT_PERFETTO))
		o->an.timeline_cap = o->timeline_events;
	return 0;
}

/* Returns 0, 1 for --help (exit 0), or -EINVAL (message printed). */
static int parse_args(int argc, char **argv, struct run_opts *o)
{
	int c, ret;

	memset(o, 0, sizeof(*o));
	an_opts_default(&o->an);
	if (getenv("TET_TEST_HIST_BUDGET")) /* tests: a budget a fixture can reach */
		o->an.hist_budget = strtoull(getenv("TET_TEST_HIST_BUDGET"), NULL, 10);
	o->drain_ns = 20 * NSEC_PER_MSEC;
	o->ringbuf = 0; /* by capture: 16M per-event, 64M batched */
	o->nice = -1; /* by mode (run_flight_raw) */
	o->top = 10;
	o->timeline_events = 500000;
	o->metrics_sites = PROM_DEFAULT_SITES;
	o->sched.profile_hz = TET_PROFILE_HZ_DEFAULT;
	o->fl.post_ns = 500 * NSEC_PER_MSEC;
	o->fl.cooldown_ns = 60 * NSEC_PER_SEC;
	o->fl.dir = ".";
	o->fl.dump_max_bytes = 1ull << 30;
	o->fl.window_bytes = FR_DEFAULT_MEMORY;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":p:b:d:i:o:qvh", long_opts, NULL)) != -1) {
		ret = parse_capture_opt(c, o);
		if (ret == -ENOENT)
			ret = parse_analysis_opt(c, o);
		if (ret == -ENOENT)
			ret = parse_flight_opt(c, o);
		if (ret == -ENOENT)
			ret = parse_remote_write_opt(c, o);
		if (ret != -ENOENT) {
			if (ret)
				return -EINVAL;
			continue;
		}
		switch (c) {
		case 'h':
			trace_usage(stdout);
			return 1;
		case ':':
			p_err("option '%s' needs a value (see --help)", argv[optind - 1]);
			return -EINVAL;
		default:
			if (optopt)
				p_err("unknown option '-%c' (see --help)", optopt);
			else
				p_err("unknown option '%s' (see --help)", argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		p_err("unexpected argument '%s' (see --help)", argv[optind]);
		return -EINVAL;
	}
	return check_args(o);
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / NSEC_PER_SEC), (long)(ns % NSEC_PER_SEC) };

	nanosleep(&ts, NULL); /* a signal ends it early: fine */
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* JSON on stdout (--output -): errors are JSON there too, from the first one. */
static void json_prescan(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc &&
		    !strcmp(argv[i + 1], "-"))
			json_output = true;
		else if (!strcmp(argv[i], "--output=-") || !strcmp(argv[i], "-o-"))
			json_output = true;
}

/* The target exists and the dump directory is usable. Returns 0 or an exit status. */
static int check_inputs(const struct run_opts *o)
{
	char err[TET_ERR_LEN];

	if (o->pid && kill(o->pid, 0) && errno == ESRCH) {
		p_err("no process with PID %d", o->pid);
		return TET_EXIT_INPUT;
	}
	if (o->binary && access(o->binary, F_OK)) {
		p_err("%s: %s", o->binary, strerror(errno));
		return TET_EXIT_INPUT;
	}
	if (o->fl.on && fr_dir_check(o->fl.dir, err, sizeof(err))) {
		p_err("%s", err);
		return TET_EXIT_INPUT;
	}
	return 0;
}

static void catch_signals(bool usr1)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (usr1)
		sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* ignored over exec, the kernel would reap the dumps and --on-dump's commands: waitpid
	 * could not tell how they ended */
	signal(SIGCHLD, SIG_DFL);
}

/* Steps the run until --duration, a signal or the traced process's end. */
static int run_until_end(struct run *r)
{
	char err[TET_ERR_LEN];
	int ret;

	do {
		uint64_t wait = run_wait_ns(r, mono_ns());
		bool usr1;

		if (wait && !stop_signal)
			sleep_ns(wait);
		usr1 = usr1_signal;
		usr1_signal = 0;
		ret = run_step(r, stop_signal != 0, usr1, err, sizeof(err));
	} while (ret == RUN_GOING);
	if (ret < 0)
		p_err("%s", err);
	return ret;
}

/* --mode sampling: one process, JSON, report.html, the terminal summary, --stacks, --pprof,
 * --trace, --metrics-addr, --remote-write and --interval, or the flight recorder; what it does
 * not make yet is refused in one line. */
static int trace_sampling(struct run_opts *o)
{
	struct rs_opts ro = { .pid = o->pid, .profile_hz = o->sched.profile_hz,
			      .duration_ns = o->duration_ns, .long_poll_ns = o->an.long_poll_ns,
			      .ringbuf_bytes = o->ringbuf ? o->ringbuf : 8u << 20,
			      .quiet = o->quiet, .stop = &stop_signal,
			      .metrics_addr = o->metrics_addr, .metrics_sites = o->metrics_sites,
			      .interval_ns = o->interval_ns, .rw = o->rw.url ? &o->rw : NULL };
	struct outputs profile_outs = { 0 };
	FILE *summary = stdout;
	char err[TET_ERR_LEN];
	int ret;

	if (!o->pid) {
		p_err("--mode sampling traces one process: give --pid PID");
		return TET_EXIT_USAGE;
	}
	if (o->sched.off || !o->sched.profile_hz) {
		p_err("--mode sampling is the CPU sampler: it does not go with --no-sched or --profile-hz 0");
		return TET_EXIT_USAGE;
	}
	if (o->capture == CAPTURE_BATCHED || o->sample_rate > 1 || o->max_overhead_given) {
		p_err("--mode sampling does not make %s yet",
		      "batched capture or its sampling (--capture batched, --sample-rate, --max-overhead)");
		return TET_EXIT_USAGE;
	}
	/* the flight recorder: SIGUSR1, exit, crash, and the mode's one finding (run_sampling.c) */
	for (size_t i = 0; o->fl.on && i < o->fl.ntrig; i++) {
		const struct fr_trigger *t = &o->fl.trig[i];

		if (t->kind != FR_TRIG_EXIT && t->kind != FR_TRIG_CRASH &&
		    !(t->kind == FR_TRIG_DETECTOR && t->detector == AN_LONG_POLL)) {
			p_err("--mode sampling's flight recorder dumps on SIGUSR1, exit, crash and long_poll only: --trigger %s is not a finding of this mode",
			      t->spec);
			return TET_EXIT_USAGE;
		}
	}
	if (o->fl.on && (o->metrics_addr || o->interval_ns || o->rw.url)) {
		p_err("--mode sampling's flight recorder does not serve the mode's live outputs: drop %s",
		      o->metrics_addr ? "--metrics-addr" : o->interval_ns ? "--interval" : "--remote-write");
		return TET_EXIT_USAGE;
	}
	ro.fl = o->fl.on ? &o->fl : NULL;
	ro.usr1 = &usr1_signal;
	for (size_t i = 0; i < o->outs.n; i++) {
		const struct out_file *f = &o->outs.v[i];

		if (f->fmt == OUT_STACKS || f->fmt == OUT_PPROF || f->fmt == OUT_PERFETTO) {
			outputs_add(&profile_outs, f->path, f->fmt, err, sizeof(err)); /* checked */
			continue;
		}
		if (f->fmt == OUT_HTML) {
			ro.html_path = f->path;
			continue;
		}
		if (f->fmt != OUT_JSON) {
			p_err("--mode sampling does not make the %s output yet (%s): JSON, report.html, the terminal summary, --stacks, --pprof and --trace only",
			      out_format_name(f->fmt), f->path);
			return TET_EXIT_USAGE;
		}
		ro.json_path = f->path;
	}
	ro.outs = &profile_outs;
	ro.msgs = &cli_msgs;
	if (ro.json_path && !strcmp(ro.json_path, "-"))
		summary = stderr;
	if (rs_preflight(o->pid, err, sizeof(err))) {
		p_err("%s", err);
		return TET_EXIT_CANNOT;
	}
	/* --stacks, --pprof, --trace: checked before tracing, written through a temporary file
	 * (outputs.c); -o's JSON and report.html are written by the run through their own
	 * temporary files, checked here the same way before anything is attached */
	{
		struct outputs o_files = { 0 };

		if (ro.json_path && strcmp(ro.json_path, "-"))
			outputs_add(&o_files, ro.json_path, OUT_JSON, err, sizeof(err));
		if (ro.html_path)
			outputs_add(&o_files, ro.html_path, OUT_HTML, err, sizeof(err));
		if (outputs_open(&o_files, err, sizeof(err))) {
			p_err("%s", err);
			return TET_EXIT_INPUT;
		}
		outputs_abort(&o_files);
	}
	if (profile_outs.n && outputs_open(&profile_outs, err, sizeof(err))) {
		p_err("%s", err);
		return TET_EXIT_INPUT;
	}
	/* as the other modes' live capture (default 10): the service keeps the CPU, the records
	 * wait in the ring (its drops are counted); the flight recorder too (its records are a few
	 * thousand a second, not the batched recorder's millions) */
	if (o->nice < 0)
		o->nice = 10;
	if (o->nice && setpriority(PRIO_PROCESS, 0, o->nice))
		p_warn("--nice %d: %s (the tracer keeps its priority)", o->nice, strerror(errno));
	catch_signals(o->fl.on);
	ret = rs_run(&ro, summary, err, sizeof(err));
	outputs_abort(&profile_outs);
	if (ret) {
		if (*err)
			p_err("%s", err);
		return TET_EXIT_CANNOT;
	}
	return TET_EXIT_OK;
}

int cmd_trace(int argc, char **argv)
{
	struct tet_targets targets = { 0 };
	struct run *r = NULL;
	struct run_opts o;
	char err[TET_ERR_LEN], errbuf[1024];
	const char *root = getenv("TET_SYSFS_ROOT");
	FILE *summary = stdout;
	int ret, status = TET_EXIT_CANNOT;

	json_prescan(argc, argv);
	ret = parse_args(argc, argv, &o);
	if (ret)
		return ret > 0 ? TET_EXIT_OK : TET_EXIT_USAGE;
	ret = check_inputs(&o);
	if (ret)
		return ret;
	if (o.mode == TET_MODE_SAMPLING)
		return trace_sampling(&o);
	ret = tet_discover(o.pid, o.binary, o.mode, root, &targets, err, sizeof(err));
	if (ret) {
		p_err("%s", err);
		return tet_discover_exit(ret);
	}
	if (run_plan(&o, &targets, &cli_msgs, err, sizeof(err))) {
		p_err("%s", err);
		tet_targets_free(&targets);
		return TET_EXIT_CANNOT;
	}
	if (outputs_open(&o.outs, errbuf, sizeof(errbuf))) {
		p_err("%s", errbuf);
		tet_targets_free(&targets);
		return TET_EXIT_INPUT;
	}
	if (outputs_stdout(&o.outs))
		summary = stderr;
	/* a recorder copying batches keeps up with a saturated service at nice 0 for a few per
	 * cent of a CPU, and loses events at random at nice 10 (make bench, part 7); its live
	 * analysis, if any, reads the window in bounded slices (run.c, s2) */
	if (o.nice < 0)
		o.nice = run_flight_raw(&o, &targets) ? 0 : 10;
	/* before any thread starts (they inherit it); raising it needs no privilege */
	if (o.nice && setpriority(PRIO_PROCESS, 0, o.nice))
		p_warn("--nice %d: %s (the tracer keeps its priority)", o.nice, strerror(errno));
	catch_signals(o.fl.on);
	ret = run_open(&r, &o, &targets, &cli_msgs, summary, err, sizeof(err));
	if (ret)
		p_err("%s", err);
	else if (run_until_end(r) >= 0) {
		run_finish(r, stop_signal);
		status = run_write(r, &o.outs) ? TET_EXIT_CANNOT : TET_EXIT_OK;
	}
	outputs_abort(&o.outs);
	run_close(r);
	tet_targets_free(&targets);
	return status;
}
