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

#include "analyzer.h"
#include "attach.h"
#include "batch.h"
#include "batchcap.h"
#include "commands.h"
#include "fallback.h"
#include "fdwhat.h"
#include "flight.h"
#include "report.h"
#include "uring.h"
#include "symbols.h"
#include "reporters.h"
#include "ksched.h"
#include "stacksym.h"
#include "units.h"
#include "why.h"

#define DAY_NS (24 * 3600 * NSEC_PER_SEC)
#define DETECT_TICK_NS (100 * NSEC_PER_MSEC)

static volatile sig_atomic_t stop_signal, usr1_signal;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		usr1_signal = 1;
	else
		stop_signal = sig;
}

#define FR_TRIGGERS_MAX 16

/* --flight-recorder and its options */
struct flight_opts {
	bool on;
	uint64_t window_ns;        /* a time window, or */
	uint64_t window_bytes;     /* … a size window; for a time window, its memory bound */
	bool memory_given;
	struct fr_trigger trig[FR_TRIGGERS_MAX];
	size_t ntrig;
	uint64_t post_ns, cooldown_ns;
	const char *dir;
	uint64_t dump_max_bytes;
	const char *needs;         /* a flight-recorder option given (for the usage error) */
};

struct trace_opts {
	int pid;
	const char *binary;
	uint64_t duration_ns, interval_ns, drain_ns;
	const char *output;        /* the last --output */
	struct outputs outs;       /* --output (repeatable) and --trace */
	const char *metrics_addr;
	size_t metrics_sites, timeline_events;
	unsigned probes;
	bool probes_given;
	enum tet_mode mode;
	enum { CAPTURE_AUTO, CAPTURE_BATCHED, CAPTURE_PER_EVENT } capture;
	uint32_t sample_rate;
	struct tet_sched_opts sched;
	bool no_uring;
	int nice;
	size_t ringbuf;
	bool verbose, quiet;
	size_t top;
	struct an_opts an;
	struct flight_opts fl;
};

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
"      --mode MODE          auto (default): the tokio USDT probes when the binary has them, else\n"
"                           uprobes on Tokio's task functions (stock Tokio, no rebuild); usdt;\n"
"                           uprobe (the fallback even when probes exist)\n"
"      --capture HOW        batched (default when the target has tokio:event_batch): the\n"
"                           process records events in per-thread buffers and hands them over\n"
"                           in batches, one probe hit per batch; per-event: one probe hit per\n"
"                           event (the only way for targets without event_batch)\n"
"      --sample-rate N      batched capture: trace one task in N, chosen at its spawn (its whole\n"
"                           life is traced); totals stay exact (default 1: every task)\n"
"      --probes LIST        per-event capture: probe classes spawn,poll,yield,wake,waker,\n"
"                           terminate,worker,wait or all (default: what the detectors need;\n"
"                           waker only with lost_waker); batched capture records every class\n"
"      --detect LIST        detectors: long_poll,stalled,lost_waker,never_yields,self_wake,\n"
"                           large_future,starvation,deadlock, all or none (default all)\n"
"Why polls were slow (kernel side, no change to the program):\n"
"      --profile-hz N       sample the target's CPU stacks N times a second per CPU and charge\n"
"                           each sample to the task being polled (default %d; 0: off)\n"
"      --stacks FILE        write the CPU samples as folded stacks (site;frame;...;frame count:\n"
"                           flamegraph.pl, inferno, speedscope)\n"
"      --no-sched           no sched_switch/sched_wakeup tracking (polls are not split into\n"
"                           on-CPU, preempted and blocked time) and no CPU profile\n"
"io_uring (docs/io-uring.md):\n"
"      --no-io-uring        do not follow the target's io_uring requests (the tracepoints\n"
"                           io_uring_create/submit_req/complete and the SQ of each poll)\n"
"Flight recorder (docs/flight-recorder.md):\n"
"      --flight-recorder WINDOW  record continuously, keep only the last WINDOW in memory (a\n"
"                           duration such as 60s, or a size such as 256M), analyse nothing\n"
"                           and write nothing until a trigger fires; then dump the window as\n"
"                           a JSON report, report.html and a Perfetto trace. Runs until stopped\n"
"      --trigger T          what dumps, repeatable: long_poll, stalled, lost_waker, never_yields,\n"
"                           self_wake, starvation, deadlock (the detectors, with their\n"
"                           thresholds); poll>D,\n"
"                           sched_delay>D (a poll, a scheduling delay longer than D); exit (the\n"
"                           process exits); crash (it dies on a signal). SIGUSR1 and crash\n"
"                           always dump\n"
"      --post-trigger D     keep recording D after the trigger before dumping (default 500ms)\n"
"      --trigger-cooldown D  at most one dump per D for detector and threshold triggers\n"
"                           (default 60s; the others are counted as suppressed)\n"
"      --dump-dir DIR       where dumps go (default: the current directory), named\n"
"                           <executable>-<pid>-<UTC time>-<trigger>.{json,html,trace.json}\n"
"      --dump-max-bytes SIZE  the dump directory's budget: the oldest dumps are removed first\n"
"                           (default 1G)\n"
"      --flight-memory SIZE  memory bound of a time WINDOW (default 256M)\n"
"Thresholds:\n"
"      --long-poll-threshold D     a poll longer than D is a long_poll (default 10ms)\n"
"      --stall-threshold D         pending longer than D without a wake is stalled (default 1s)\n"
"      --lost-waker-threshold D    pending with no live waker for D is a lost_waker (250ms)\n"
"      --never-yields-threshold D  inside one poll for D is never_yields (default 1s)\n"
"      --self-wake-ratio R         unexplained self-wakes per wake above R is self_wake (0.5)\n"
"      --self-wake-min N           … with at least N of them (default 3)\n"
"      --large-future-size SIZE    a future this large at spawn is large_future (default 1K)\n"
"Tuning:\n"
"      --ringbuf-size SIZE  BPF ring buffer, power of two, K/M/G suffix (default 16M, 64M with\n"
"                           batched capture: it absorbs bursts the analysis cannot follow)\n"
"      --drain-interval D   how often user space drains the ring (default 20ms)\n"
"      --nice N             run the tracer at this nice value, 0-19 (default 10): under full\n"
"                           load the traced service keeps the CPU, bursts wait in the ring\n"
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
"Exit status: 0 done (also when the traced process exited), 2 cannot trace, 3 usage, 4 no\n"
"such PID or file.\n",
		TET_PROG, TET_PROFILE_HZ_DEFAULT, TET_PROG, TET_PROG, TET_PROG, TET_PROG);
}

static int parse_count(const char *flag, const char *s, uint64_t min, uint64_t max,
		       uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!*s || *s == '-' || *s == '+') {
		p_err("%s '%s': expected a whole number", flag, s);
		return -EINVAL;
	}
	v = strtoull(s, &end, 10);
	if (*end || errno) {
		p_err("%s '%s': expected a whole number", flag, s);
		return -EINVAL;
	}
	if (v < min || v > max) {
		p_err("%s '%s': must be between %llu and %llu", flag, s, (unsigned long long)min,
		      (unsigned long long)max);
		return -ERANGE;
	}
	*out = v;
	return 0;
}

/* A byte count: a number and K, M, G or T (powers of 1024), or bytes without a unit. The caller
 * checks the range. */
static int parse_bytes(const char *flag, const char *s, uint64_t *out, bool quiet)
{
	unsigned long long v, mult = 1;
	char *end;

	errno = 0;
	v = *s >= '0' && *s <= '9' ? strtoull(s, &end, 10) : 0;
	if (*s < '0' || *s > '9' || errno) {
		if (!quiet)
			p_err("%s '%s': expected a size such as 256M", flag, s);
		return -EINVAL;
	}
	if (!strcmp(end, "K") || !strcmp(end, "k"))
		mult = 1ull << 10;
	else if (!strcmp(end, "M"))
		mult = 1ull << 20;
	else if (!strcmp(end, "G"))
		mult = 1ull << 30;
	else if (!strcmp(end, "T"))
		mult = 1ull << 40;
	else if (*end) {
		if (!quiet)
			p_err("%s '%s': unknown unit '%s' (K, M, G or T)", flag, s, end);
		return -EINVAL;
	}
	*out = v > UINT64_MAX / mult ? UINT64_MAX : v * mult;
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
			p_err("--detect: unknown detector '%s' (long_poll, stalled, lost_waker, never_yields, self_wake, large_future, starvation, deadlock, all, none)",
			      tok);
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
	OPT_PROBES = 256, OPT_MODE, OPT_DETECT, OPT_LONG_POLL, OPT_STALL, OPT_LOST_WAKER, OPT_NEVER_YIELDS,
	OPT_SELF_WAKE_RATIO, OPT_SELF_WAKE_MIN, OPT_LARGE_FUTURE, OPT_RINGBUF, OPT_DRAIN, OPT_TOP, OPT_TASK_RECORDS, OPT_LIVE_TASKS, OPT_MAX_TASKS, OPT_SITES,
	OPT_TRACE, OPT_TIMELINE, OPT_METRICS_ADDR, OPT_METRICS_SITES, OPT_CAPTURE, OPT_SAMPLE_RATE,
	OPT_NICE, OPT_PROFILE_HZ, OPT_STACKS, OPT_NO_SCHED, OPT_NO_URING, OPT_FLIGHT, OPT_TRIGGER, OPT_POST_TRIGGER,
	OPT_COOLDOWN, OPT_DUMP_DIR, OPT_DUMP_MAX, OPT_FLIGHT_MEMORY,
};

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
	{ "nice", required_argument, NULL, OPT_NICE },
	{ "profile-hz", required_argument, NULL, OPT_PROFILE_HZ },
	{ "stacks", required_argument, NULL, OPT_STACKS },
	{ "no-sched", no_argument, NULL, OPT_NO_SCHED },
	{ "no-io-uring", no_argument, NULL, OPT_NO_URING },
	{ "detect", required_argument, NULL, OPT_DETECT },
	{ "long-poll-threshold", required_argument, NULL, OPT_LONG_POLL },
	{ "stall-threshold", required_argument, NULL, OPT_STALL },
	{ "lost-waker-threshold", required_argument, NULL, OPT_LOST_WAKER },
	{ "never-yields-threshold", required_argument, NULL, OPT_NEVER_YIELDS },
	{ "self-wake-ratio", required_argument, NULL, OPT_SELF_WAKE_RATIO },
	{ "self-wake-min", required_argument, NULL, OPT_SELF_WAKE_MIN },
	{ "large-future-size", required_argument, NULL, OPT_LARGE_FUTURE },
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
	{ "flight-recorder", required_argument, NULL, OPT_FLIGHT },
	{ "trigger", required_argument, NULL, OPT_TRIGGER },
	{ "post-trigger", required_argument, NULL, OPT_POST_TRIGGER },
	{ "trigger-cooldown", required_argument, NULL, OPT_COOLDOWN },
	{ "dump-dir", required_argument, NULL, OPT_DUMP_DIR },
	{ "dump-max-bytes", required_argument, NULL, OPT_DUMP_MAX },
	{ "flight-memory", required_argument, NULL, OPT_FLIGHT_MEMORY },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Returns 0, 1 for --help (exit 0), or -EINVAL (message printed). */
static int parse_args(int argc, char **argv, struct trace_opts *o)
{
	char errbuf[1024]; /* p_err's bound */
	uint64_t v;
	int c, ret = 0;

	memset(o, 0, sizeof(*o));
	an_opts_default(&o->an);
	o->drain_ns = 20 * NSEC_PER_MSEC;
	o->ringbuf = 0; /* by capture: 16M per-event, 64M batched */
	o->nice = 10;
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
		case OPT_FLIGHT_MEMORY:
			o->fl.needs = "--flight-memory";
			ret = parse_bytes_in("--flight-memory", optarg, FR_MIN_BYTES, 1ull << 40,
					     &o->fl.window_bytes, false);
			o->fl.memory_given = true;
			break;
		case OPT_TIMELINE:
			ret = parse_count("--timeline-events", optarg, 1000, 50000000, &v);
			o->timeline_events = (size_t)v;
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
			else {
				p_err("--mode '%s': expected auto, usdt or uprobe", optarg);
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
			ret = parse_count("--sample-rate", optarg, 1, 65535, &v);
			o->sample_rate = (uint32_t)v;
			break;
		case OPT_DETECT:
			ret = parse_detect(optarg, &o->an.detect);
			break;
		case OPT_LONG_POLL:
			ret = parse_dur("--long-poll-threshold", optarg, NSEC_PER_USEC, 3600 * NSEC_PER_SEC,
					&o->an.long_poll_ns);
			break;
		case OPT_STALL:
			ret = parse_dur("--stall-threshold", optarg, NSEC_PER_MSEC, DAY_NS, &o->an.stall_ns);
			break;
		case OPT_LOST_WAKER:
			ret = parse_dur("--lost-waker-threshold", optarg, NSEC_PER_MSEC, DAY_NS,
					&o->an.lost_waker_ns);
			break;
		case OPT_NEVER_YIELDS:
			ret = parse_dur("--never-yields-threshold", optarg, NSEC_PER_MSEC, DAY_NS,
					&o->an.never_yields_ns);
			break;
		case OPT_SELF_WAKE_RATIO: {
			char *end;
			double r;

			errno = 0;
			r = strtod(optarg, &end);
			if (!*optarg || *end || errno || !(r > 0 && r <= 1)) {
				p_err("--self-wake-ratio '%s': expected a number in (0, 1]", optarg);
				return -EINVAL;
			}
			o->an.self_wake_ratio = r;
			break;
		}
		case OPT_SELF_WAKE_MIN:
			ret = parse_count("--self-wake-min", optarg, 1, UINT32_MAX, &v);
			o->an.self_wake_min = v;
			break;
		case OPT_LARGE_FUTURE:
			ret = parse_bytes("--large-future-size", optarg, &o->an.large_future_bytes, false);
			break;
		case OPT_RINGBUF:
			ret = parse_size("--ringbuf-size", optarg, &o->ringbuf);
			break;
		case OPT_DRAIN:
			ret = parse_dur("--drain-interval", optarg, NSEC_PER_MSEC, NSEC_PER_SEC, &o->drain_ns);
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
		case 'q':
			o->quiet = true;
			break;
		case 'v':
			o->verbose = true;
			break;
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
		if (ret)
			return -EINVAL;
	}
	if (optind < argc) {
		p_err("unexpected argument '%s' (see --help)", argv[optind]);
		return -EINVAL;
	}
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
	if (!o->fl.on && o->fl.needs) {
		p_err("%s needs --flight-recorder WINDOW", o->fl.needs);
		return -EINVAL;
	}
	if (o->fl.on && o->outs.n) {
		p_err("--flight-recorder writes its reports into --dump-dir when a trigger fires: drop --output, --trace and --stacks");
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

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* ---- I/O readiness waits: the fd behind a token (report_meta.io_fd, fdwhat.h) ---- */
#define IOFD_PIDS 16
#define IOFD_REFRESH_NS (100 * NSEC_PER_MSEC)
struct iofd {
	struct {
		uint32_t pid;
		struct fdw *w;          /* NULL: /proc/PID could not be opened */
		uint64_t refreshed;
	} v[IOFD_PIDS];
	size_t n;
};

static int io_fd(void *ctx, uint32_t pid, uint64_t token, char *what, size_t len,
		 const char **kind)
{
	struct iofd *c = ctx;
	uint64_t now = mono_ns();
	size_t i;
	int fd, k;

	for (i = 0; i < c->n && c->v[i].pid != pid; i++)
		;
	if (i == c->n) {
		if (c->n == IOFD_PIDS)
			return -1;
		c->v[i].pid = pid;
		c->v[i].refreshed = 0;
		fdw_new(pid, &c->v[i].w);
		c->n++;
	}
	if (!c->v[i].w)
		return -1;
	if (now - c->v[i].refreshed >= IOFD_REFRESH_NS) {
		fdw_refresh(c->v[i].w);
		c->v[i].refreshed = now;
	}
	if (fdw_token(c->v[i].w, token, &fd, NULL))
		return -1;
	k = fdw_describe(c->v[i].w, fd, what, len);
	*kind = fdw_kind_name(k > 0 ? (enum fdw_kind)k : FDW_UNKNOWN);
	return fd;
}

static void iofd_free(struct iofd *c)
{
	for (size_t i = 0; i < c->n; i++)
		fdw_free(c->v[i].w);
	c->n = 0;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / NSEC_PER_SEC), (long)(ns % NSEC_PER_SEC) };

	nanosleep(&ts, NULL); /* a signal ends it early: fine */
}

/* The traced process is gone (or a zombie nobody reaped yet). */
static bool process_gone(int pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	if (kill(pid, 0) && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* ---- flight recorder (--flight-recorder) ----
 * The records go to the store (flight.h) as they come; a live analyzer runs only when
 * something needs it (detector and threshold triggers, --metrics-addr, --interval). A trigger
 * queues a dump, due --post-trigger later; a dump is a forked child, which replays its window
 * into a fresh analyzer and writes the reports from a copy-on-write snapshot of the store
 * while the recorder goes on draining the ring. One child at a time. */
#define FR_PENDING_MAX 8
#define FR_SNAPS_MAX 4096

struct fr_pending {
	struct report_trigger t;
	uint64_t due;
	uint32_t pid_filter;       /* 0: every process */
	uint32_t name_pid;
	bool exit;                 /* process_exit / process_crash */
};

struct fr_snap {
	uint64_t ts;
	struct tet_counters c;
	uint64_t exact[TET_EV_COUNT]; /* batched capture: the threads' own counts (tb_totals) */
};

struct flight_rt {
	const struct flight_opts *o;
	struct fr_store *store;
	struct fr_pending q[FR_PENDING_MAX];
	size_t nq;
	uint64_t last_throttled;   /* the event time of the last detector / threshold trigger taken */
	bool throttled_once;
	uint64_t suppressed, dumps, failed;
	pid_t child;
	uint64_t child_index;
	struct fr_snap *snaps;
	size_t nsnaps, snap_next;
	uint64_t next_snap, snap_every;
	uint32_t last_pid;         /* of the newest record */
	unsigned detectors;        /* --trigger detector kinds */
	bool any_exit;             /* --trigger exit (a crash always dumps) */
};

/* How a traced process ended (TET_REC_EXIT). */
struct proc_exit {
	uint32_t pid, code;
	bool group;
	uint64_t ts;
};

/* The ring's records go to the analyzer (and the flight recorder's store); the first
 * kernel-side record of a process has the symbolizer learn its mappings while it runs (every
 * process of a binary). */
struct event_ctx {
	struct analyzer *an;
	struct ss *ss;
	uint32_t pids[64];
	size_t npids;
	struct flight_rt *fl;
	struct proc_exit exits[64];
	size_t nexits;
};

static uint64_t mono_ns(void);

/*
 * Queues a dump. Detector and threshold triggers (throttled) are held to the cooldown, on the
 * clock of the events that fired them (the time a dump is named after), not the time the
 * analysis got to them: that lags by up to the batched capture's ordering horizon, and by
 * different amounts from one trigger to the next. Detections can come out of event order
 * (threads' batches, tick-time detections), so the distance is taken either way.
 */
static void fr_fire(struct flight_rt *fl, const struct report_trigger *t, uint32_t pid_filter,
		    uint32_t name_pid, bool throttled, bool exit)
{
	uint64_t now = mono_ns();
	uint64_t at = t->at_ns ? t->at_ns : now;
	struct fr_pending *p;
	char post[32];

	if ((throttled && fl->throttled_once &&
	     (at > fl->last_throttled ? at - fl->last_throttled : fl->last_throttled - at) <
	     fl->o->cooldown_ns) ||
	    fl->nq == FR_PENDING_MAX) {
		fl->suppressed++;
		return;
	}
	if (throttled) {
		fl->last_throttled = at;
		fl->throttled_once = true;
	}
	p = &fl->q[fl->nq++];
	memset(p, 0, sizeof(*p));
	p->t = *t;
	if (!p->t.at_ns)
		p->t.at_ns = now;
	/* the process is gone: only what its threads flushed on the way out can still come */
	p->due = now + (exit && fl->o->post_ns > 100 * NSEC_PER_MSEC ? 100 * NSEC_PER_MSEC :
			fl->o->post_ns);
	p->pid_filter = pid_filter;
	p->name_pid = name_pid;
	p->exit = exit;
	fprintf(stderr, "%s: flight recorder: trigger %s: %s; dumping in %s\n", TET_PROG, t->spec,
		t->detail, fmt_duration(p->due - now, post, sizeof(post)));
}

/* The live analyzer saw a detection (an_opts.on_detect). */
static void fr_on_detect(void *ctx, const struct an_detect *d)
{
	struct flight_rt *fl = ctx;
	struct report_trigger t = { 0 };
	const struct fr_trigger *best = NULL;
	char v[32], th[32], loc[160];

	for (size_t i = 0; i < fl->o->ntrig; i++) {
		const struct fr_trigger *x = &fl->o->trig[i];

		if ((x->kind == FR_TRIG_DETECTOR && d->what == x->detector) ||
		    (x->kind == FR_TRIG_POLL && d->what == AN_DETECT_POLL &&
		     d->value_ns > x->threshold_ns) ||
		    (x->kind == FR_TRIG_SCHED && d->what == AN_DETECT_SCHED &&
		     d->value_ns > x->threshold_ns)) {
			if (!best || x->threshold_ns < best->threshold_ns)
				best = x;
		}
	}
	if (!best)
		return;
	t.kind = d->what < AN_FINDING_KINDS ? an_finding_name(d->what) :
		 d->what == AN_DETECT_POLL ? "poll" : "sched_delay";
	t.spec = best->spec;
	t.ts = d->ts;
	t.at_ns = d->at;
	t.pid = d->pid;
	t.tid = d->tid;
	t.has_task = true;
	t.task_id = d->task_id;
	t.header_ptr = d->header_ptr;
	t.value_ns = d->value_ns;
	t.threshold_ns = best->kind == FR_TRIG_DETECTOR ? d->threshold_ns : best->threshold_ns;
	if (d->site && d->site->location)
		report_sanitize(d->site->location, d->site->location_len, 120, loc, sizeof(loc));
	else if (d->site && d->site->type_name)
		report_sanitize(d->site->type_name, d->site->type_len, 120, loc, sizeof(loc));
	else
		snprintf(loc, sizeof(loc), "spawned before the trace");
	fmt_duration(d->value_ns, v, sizeof(v));
	fmt_duration(t.threshold_ns, th, sizeof(th));
	if (d->what == AN_SELF_WAKE)
		snprintf(t.detail, sizeof(t.detail), "self_wake: task %llu (%s) woke itself in %llu polls",
			 (unsigned long long)(d->task_id ? d->task_id : d->header_ptr), loc,
			 (unsigned long long)d->value_ns);
	else
		snprintf(t.detail, sizeof(t.detail), "%s: task %llu (%s) of PID %u: %s, over %s", t.kind,
			 (unsigned long long)(d->task_id ? d->task_id : d->header_ptr), loc, d->pid, v,
			 th);
	fr_fire(fl, &t, d->pid, d->pid, true, false);
}

/* TET_REC_EXIT: a traced process ended. */
static void note_exit(struct event_ctx *e, const struct tet_exit_rec *r)
{
	struct proc_exit *x = NULL;
	int sig = (int)(r->code & 0x7f);

	for (size_t i = 0; i < e->nexits; i++)
		if (e->exits[i].pid == r->h.pid)
			x = &e->exits[i];
	if (!x) {
		if (e->nexits == sizeof(e->exits) / sizeof(e->exits[0])) { /* the oldest goes */
			memmove(e->exits, e->exits + 1, sizeof(e->exits) - sizeof(e->exits[0]));
			e->nexits--;
		}
		x = &e->exits[e->nexits++];
	}
	x->pid = r->h.pid;
	x->code = r->code;
	x->group = r->group_exit;
	x->ts = r->h.ts;
	if (e->fl && (sig || e->fl->any_exit)) { /* a crash always dumps */
		struct report_trigger t = { 0 };
		char sn[32];

		t.kind = sig ? "process_crash" : "process_exit";
		t.spec = sig ? "crash" : "exit";
		t.ts = t.at_ns = r->h.ts;
		t.pid = r->h.pid;
		t.tid = r->h.tid;
		t.signal = sig;
		t.core_dumped = sig && (r->code & 0x80);
		t.exit_status = sig ? -1 : (int)((r->code >> 8) & 0xff);
		if (sig)
			snprintf(t.detail, sizeof(t.detail), "process %u killed by %s%s", r->h.pid,
				 report_signal_name(sig, sn, sizeof(sn)),
				 t.core_dumped ? " (core dumped)" : "");
		else
			snprintf(t.detail, sizeof(t.detail), "process %u exited with status %d",
				 r->h.pid, t.exit_status);
		fr_fire(e->fl, &t, r->h.pid, r->h.pid, false, true);
	}
}

static const struct proc_exit *exit_of(const struct event_ctx *e, uint32_t pid)
{
	for (size_t i = 0; i < e->nexits; i++)
		if (e->exits[i].pid == pid)
			return &e->exits[i];
	return NULL;
}

/* What fd `fd` of process `pid` is, as its fd table says (io_uring requests in flight). */
static int fd_target(void *ctx, uint32_t pid, int32_t fd, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	(void)ctx;
	if (fd < 0 || len < 2)
		return -1;
	snprintf(path, sizeof(path), "/proc/%u/fd/%d", pid, fd);
	n = readlink(path, buf, len - 1);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return 0;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct event_ctx *e = ctx;
	const struct tet_hdr *h = data;

	if (e->ss && size >= sizeof(*h) && (h->type == TET_REC_OFFCPU || h->type == TET_REC_SAMPLE)) {
		size_t i;

		for (i = 0; i < e->npids && e->pids[i] != h->pid; i++)
			;
		if (i == e->npids && e->npids < sizeof(e->pids) / sizeof(e->pids[0])) {
			char err[256];

			e->pids[e->npids++] = h->pid;
			if (ss_add_pid(e->ss, h->pid, err, sizeof(err)))
				p_warn("stacks of %s: %s", "the process", err);
		}
	}
	if (size >= sizeof(struct tet_exit_rec) && h->type == TET_REC_EXIT) {
		note_exit(e, data);
		return 0;
	}
	if (e->fl) {
		fr_store_add(e->fl->store, data, size);
		if (size >= sizeof(*h))
			e->fl->last_pid = h->pid;
	}
	if (e->an)
		an_event(e->an, data, size);
	return 0;
}

/* The kernel side's answer for the reports (before the BPF objects are closed). */
static void why_meta(struct why_report *w, struct tet_session *sess, const struct analyzer *an,
		     struct ss *ss, const struct tet_counters *c)
{
	const struct tet_sched_info *si = tet_session_sched(sess);

	w->sched = si->on;
	w->why_no_sched = si->why_no_sched;
	w->profile_hz = si->profile_hz;
	w->why_no_profile = si->why_no_profile;
	w->steal = si->steal;
	w->why_no_steal = si->why_no_steal;
	if ((si->on || si->profile_hz) &&
	    why_build(w, an, tet_session_stacks_fd(sess), ss, c))
		p_warn("out of memory: the stacks of the report are incomplete");
}

static const char *class_list(unsigned mask, char *buf, size_t len)
{
	const struct tet_class *classes;
	size_t nclasses = tet_classes(&classes), o = 0;

	buf[0] = 0;
	for (size_t i = 0; i < nclasses; i++)
		if ((mask & tet_class_mask(classes[i].name)) == tet_class_mask(classes[i].name))
			o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s%s", o ? "," : "",
					      classes[i].name);
	return buf;
}

/* ---- uprobe fallback: what it finds, what it cannot give ---- */
static const char *fallback_missing_impact(int kind)
{
	switch (kind) {
	case TSYM_POLL: return "no polls";
	case TSYM_WAKE_BY_VAL: case TSYM_WAKE_BY_REF: return "wakes through it are not seen";
	case TSYM_CLONE: case TSYM_DROP: return "waker clones/drops are not seen";
	case TSYM_COMPLETE: return "task ends come from raw::dealloc (header freed) instead, and poll results are unknown";
	case TSYM_SHUTDOWN: return "nothing lost (not probed)";
	default: return "";
	}
}

static const char *const fallback_unavailable[] = {
	"spawn locations (tasks are named by their future type)",
	"task ids (tasks are told apart by header pointer)",
	"spawns, and the scheduling delay before a task's first poll",
	"poll results beyond ready/pending (notified, cancelled, panicked are not told apart)",
	"yields and their reasons (yield_now, coop budget)",
	"worker park/unpark and worker indices (polling threads are numbered as first seen)",
	"live waker counts, hence lost_waker (reported as stalled)",
};

struct fallback_meta_buf {
	struct report_fallback f;
	const char *names[TSYM_KINDS];
	size_t counts[TSYM_KINDS];
};

static const struct report_fallback *fallback_meta(struct fallback_meta_buf *b,
						   const struct tet_targets *t,
						   const struct tet_fb_info *info, bool verbose)
{
	const struct tsym_table *s = t->syms;
	struct report_fallback *f = &b->f;

	memset(b, 0, sizeof(*b));
	f->file = t->fb_path;
	for (int k = 0; k < TSYM_KINDS; k++) {
		b->names[k] = tsym_kind_name(k);
		b->counts[k] = s->count[k];
	}
	f->fn_names = b->names;
	f->fn_counts = b->counts;
	f->nfns = TSYM_KINDS;
	f->unavailable = fallback_unavailable;
	f->nunavailable = sizeof(fallback_unavailable) / sizeof(fallback_unavailable[0]);
	f->poll_instances = s->count[TSYM_POLL];
	f->types = s->ntypes;
	f->types_ambiguous = s->ambiguous;
	f->types_exact = s->count[TSYM_POLL] - s->ambiguous - s->by_src[TSYM_SRC_NONE];
	f->type_source = s->v0 ? "v0-mangling" : s->dwarf ? "dwarf" : "symbols";
	if (info) {
		f->multi = info->multi;
		f->why_single = info->why_single;
		f->uprobes = info->uprobes;
		f->links = info->links;
		f->attach_ns = info->attach_ns;
		f->uprobe_ns = info->uprobe_ns;
		f->uretprobe_ns = info->uretprobe_ns;
	}
	if (verbose)
		for (size_t i = 0; i < s->nfns; i++)
			if (s->fns[i].kind == TSYM_POLL)
				fprintf(stderr, "%s: raw::poll 0x%llx (offset 0x%llx): %s [%s]\n", TET_PROG,
					(unsigned long long)s->fns[i].addr,
					(unsigned long long)s->fns[i].file_off,
					s->types[s->fns[i].type], tsym_src_name(s->fns[i].src));
	return f;
}

/* The batched capture's figures for a report (live or final). */
/* Batched capture: lock records a thread could not keep make lock holders partial (no
 * deadlock is judged from then on; a poll whose wait records were not all kept says so itself,
 * TET_WAIT_CUT). */
static void note_batch_loss(struct analyzer *an, struct tet_session *sess)
{
	const struct tb_stats *st = tet_session_batch_stats(sess);

	if (st && st->locks_dropped)
		an_note_lock_loss(an);
}

static const struct report_batch *batch_meta(struct report_batch *rb, struct tet_session *sess)
{
	const struct tet_bc_info *bi = tet_session_batch_info(sess);

	if (!bi)
		return NULL;
	memset(rb, 0, sizeof(*rb));
	rb->stats = tet_session_batch_stats(sess);
	tb_totals(tet_session_decoder(sess), rb->exact);
	rb->sites = bi->sites;
	rb->rate_sites = bi->rate_sites;
	rb->multi = bi->multi;
	rb->why_single = bi->why_single;
	rb->sweeps = bi->sweeps;
	rb->why_no_sweeps = bi->why_no_sweeps;
	rb->preemption = bi->preemption;
	rb->why_no_preemption = bi->why_no_preemption;
	return rb;
}

/* ---- lost events: the findings they could explain are set aside (an_lost_task) ---- */
static uint64_t drops_total(const struct tet_counters *c)
{
	uint64_t n = 0;

	for (int i = 0; i < TET_EV_COUNT; i++)
		n += c->drops[i];
	return n;
}

/* Drops are seen at each reading of the counters: a lost event happened since the previous
 * reading — or, with batched capture, up to 2 s before it (a thread hands its events over that
 * late at most). */
struct loss_track {
	uint64_t since, drops, margin;
};

static void loss_track(struct loss_track *lt, struct analyzer *an, const struct tet_counters *c,
		       uint64_t now)
{
	uint64_t d = drops_total(c);

	if (d > lt->drops && an)
		an_loss_window(an, lt->since > lt->margin ? lt->since - lt->margin : 0, now);
	lt->drops = d;
	lt->since = now;
}

/* The tasks that lost events (BPF lost_tasks), when the capture can tell them; else, or when
 * the map overflowed, the windows decide. */
static void lost_tasks_to(struct analyzer *an, struct tet_session *sess, const struct tet_counters *c)
{
	struct { uint32_t tgid, pad; uint64_t task; } k, next;
	int fd = tet_session_lost_fd(sess);
	bool first = true;
	uint64_t types;

	while (fd >= 0 && !bpf_map_get_next_key(fd, first ? NULL : &k, &next)) {
		if (!bpf_map_lookup_elem(fd, &next, &types))
			an_lost_task(an, next.tgid, next.task, types);
		k = next;
		first = false;
	}
	if (fd < 0 || !c || c->lost_untracked)
		an_lost_by_task(an, false);
}

/* What a dump needs of the capture. */
struct dump_env {
	const struct trace_opts *o;
	const struct tet_targets *targets;
	struct tet_session *sess;
	struct event_ctx *ectx;
	const struct report_meta *meta;   /* the capture's, as it stands */
};

struct feed {
	struct analyzer *an;
	uint64_t next_tick;
};

static void feed_rec(void *ctx, const void *rec, size_t size)
{
	struct feed *f = ctx;
	const struct tet_hdr *h = rec;

	if (h->ts >= f->next_tick) { /* the time-based detectors, as the live capture ticks */
		if (f->next_tick)
			an_tick(f->an, h->ts);
		f->next_tick = h->ts + DETECT_TICK_NS;
	}
	an_event(f->an, rec, size);
}

/* The dump itself (in the child): the window replayed into a fresh analyzer, the reports
 * written next to each other, the directory held to its budget. Returns the exit status. */
static int fr_dump_write(struct flight_rt *fl, const struct fr_pending *p,
			 const struct dump_env *env)
{
	const struct flight_opts *fo = fl->o;
	struct an_opts ao = env->o->an;
	struct report_meta meta = *env->meta;
	struct report_batch rb;
	struct report_flight rf = { 0 };
	struct why_report why = { 0 };
	struct outputs outs = { 0 };
	struct fr_stats st;
	struct feed f = { 0 };
	struct tet_counters now_c;
	struct timespec wall_now, wall_trig;
	uint64_t mono = mono_ns(), from, want, spawns_before = 0;
	char name[300], *paths[3] = { 0 }, errbuf[1024];
	static const char *const ext[3] = { "json", "html", "trace.json" };
	int status = 1;
	size_t nrm;
	uint64_t rm;

	fr_store_stats(fl->store, &st);
	rf.window_ns = fo->window_ns;
	rf.window_bytes = fo->window_bytes;
	rf.post_ns = fo->post_ns;
	rf.to_ns = p->due;
	if (fo->window_ns) {
		want = p->t.at_ns > fo->window_ns ? p->t.at_ns - fo->window_ns : 0;
		from = want;
		if (st.oldest_ts > from) {
			rf.cut_by_memory = st.evicted_by_size && st.evicted_by_size_until >= want;
			from = st.oldest_ts;
		}
	} else {
		from = st.oldest_ts;
	}
	/* the triggering occurrence whole (a poll longer than the window) */
	if (p->t.ts && p->t.ts < from && p->t.ts >= st.oldest_ts)
		from = p->t.ts;
	if (!from || from > rf.to_ns)
		from = rf.to_ns;
	rf.from_ns = from;
	rf.dump_index = fl->child_index;
	rf.triggers_suppressed = fl->suppressed;
	rf.trigger = p->t;

	{ /* wall clock of the window's start and of the trigger: the two clocks read back to
	   * back (this child runs at the recorder's nice; a preemption between reads far apart
	   * would shift the names) */
		uint64_t m = mono_ns();
		int64_t back, tback, ns;

		clock_gettime(CLOCK_REALTIME, &wall_now);
		back = (int64_t)(m - from);
		tback = (int64_t)(m - p->t.at_ns);
		ns = (int64_t)wall_now.tv_sec * (int64_t)NSEC_PER_SEC + wall_now.tv_nsec;

		meta.wall_start.tv_sec = (time_t)((ns - back) / (int64_t)NSEC_PER_SEC);
		meta.wall_start.tv_nsec = (long)((ns - back) % (int64_t)NSEC_PER_SEC);
		wall_trig.tv_sec = (time_t)((ns - tback) / (int64_t)NSEC_PER_SEC);
		wall_trig.tv_nsec = (long)((ns - tback) % (int64_t)NSEC_PER_SEC);
	}
	fr_dump_name(name, sizeof(name), env->targets->exe ? env->targets->exe : env->o->binary,
		     p->name_pid, &wall_trig, p->t.spec);
	rf.basename = name;

	ao.timeline_cap = env->o->timeline_events;
	ao.on_detect = NULL;
	f.an = an_new(&ao);
	if (f.an)
		ur_set_fd_fn(an_uring(f.an), fd_target, NULL);
	if (!f.an || (env->targets->fallback &&
		      an_set_types(f.an, (const char *const *)env->targets->syms->types,
				   env->targets->syms->ntypes))) {
		p_err("flight recorder: dump %llu: out of memory", (unsigned long long)rf.dump_index);
		goto out;
	}
	{
		const struct tet_sched_info *si = tet_session_sched(env->sess);

		an_set_kernel(f.an, si->on, si->profile_hz > 0);
	}
	rf.records = fr_store_replay(fl->store, from, rf.to_ns, p->pid_filter, feed_rec, &f,
				     &spawns_before);
	rf.bytes = st.bytes;
	/* the drops of the window: the counters now, less those of its start; with batched
	 * capture, the exact totals of a sampled capture likewise */
	meta.counters_valid = !tet_session_counters(env->sess, &now_c);
	pmem_get_stats(&meta.pmem);
	if (meta.counters_valid) {
		const struct fr_snap *base = NULL;
		__u64 *a = (__u64 *)&now_c;

		for (size_t i = 0; i < fl->nsnaps; i++)
			if (fl->snaps[i].ts <= from && (!base || fl->snaps[i].ts > base->ts))
				base = &fl->snaps[i];
		if (meta.batch) {
			rb = *meta.batch;
			tb_totals(tet_session_decoder(env->sess), rb.exact);
			for (int i = 0; base && i < TET_EV_COUNT; i++)
				rb.exact[i] = rb.exact[i] >= base->exact[i] ? rb.exact[i] - base->exact[i] : 0;
			meta.batch = &rb;
		}
		if (base) {
			const __u64 *b = (const __u64 *)&base->c;

			for (size_t i = 0; i < sizeof(now_c) / sizeof(__u64); i++)
				a[i] = a[i] >= b[i] ? a[i] - b[i] : 0;
		}
		meta.counters = now_c;
		an_note_drops(f.an, now_c.drops);
		/* the loss windows of the snapshots (oldest first), then since the last one */
		{
			struct loss_track lt = { 0, 0, meta.batch ? 2 * NSEC_PER_SEC : 0 };
			size_t first = fl->nsnaps < FR_SNAPS_MAX ? 0 : fl->snap_next;

			for (size_t i = 0; i < fl->nsnaps; i++) {
				const struct fr_snap *sn = &fl->snaps[(first + i) % FR_SNAPS_MAX];

				if (!i) {
					lt.since = sn->ts;
					lt.drops = drops_total(&sn->c);
					continue;
				}
				loss_track(&lt, f.an, &sn->c, sn->ts);
			}
			if (fl->nsnaps) {
				struct tet_counters cur;

				if (!tet_session_counters(env->sess, &cur))
					loss_track(&lt, f.an, &cur, mono);
			}
		}
		lost_tasks_to(f.an, env->sess, &now_c);
	}
	an_finish(f.an, rf.to_ns);
	why_meta(&why, env->sess, f.an, env->ectx->ss, meta.counters_valid ? &meta.counters : NULL);
	meta.why = &why;
	meta.start_ns = from;
	meta.end_ns = rf.to_ns;
	meta.requested_ns = 0;
	meta.flight = &rf;
	meta.pid = p->pid_filter ? (int)p->pid_filter : env->o->pid;
	meta.ended_by = "flight_recorder";
	if (p->exit) {
		meta.ended_by = p->t.signal ? "process_crash" : "process_exit";
		meta.exit_signal = p->t.signal;
		meta.exit_core = p->t.core_dumped;
		meta.exit_status = p->t.exit_status;
	}
	for (int i = 0; i < 3; i++) {
		if (asprintf(&paths[i], "%s/%s.%s", fo->dir, name, ext[i]) < 0) {
			paths[i] = NULL;
			p_err("out of memory");
			goto out;
		}
		outputs_add(&outs, paths[i], i == 0 ? OUT_JSON : i == 1 ? OUT_HTML : OUT_PERFETTO, NULL,
			    0);
	}
	fprintf(stderr, "%s: flight recorder: dump %llu (%s): %llu records from %s%s\n", TET_PROG,
		(unsigned long long)rf.dump_index, p->t.detail, (unsigned long long)rf.records,
		spawns_before ? "the window and the spawns of older tasks alive in it" : "the window",
		rf.cut_by_memory ? " (the memory bound cut the window short)" : "");
	if (outputs_open(&outs, errbuf, sizeof(errbuf))) {
		p_err("%s", errbuf);
		goto out;
	}
	status = outputs_write(&outs, f.an, &meta, &cli_msgs) ? 1 : 0;
	rm = fr_dir_enforce(fo->dir, fo->dump_max_bytes, name, &nrm);
	if (nrm)
		fprintf(stderr, "%s: flight recorder: removed %zu old dump file%s (%llu bytes): --dump-max-bytes %llu\n",
			TET_PROG, nrm, nrm == 1 ? "" : "s", (unsigned long long)rm,
			(unsigned long long)fo->dump_max_bytes);
out:
	outputs_abort(&outs);
	for (int i = 0; i < 3; i++)
		free(paths[i]);
	why_free(&why);
	an_free(f.an);
	return status;
}

/* Starts the first queued dump when it is due and no other is being written. */
static void fr_poll(struct flight_rt *fl, const struct dump_env *env, bool now_anyway)
{
	struct fr_pending p;
	int st;

	if (fl->child > 0 && waitpid(fl->child, &st, now_anyway ? 0 : WNOHANG) == fl->child) {
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fl->failed++;
			p_warn("flight recorder: dump %llu failed (%s): the recorder keeps running",
			       (unsigned long long)fl->child_index,
			       WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "see above");
		} else {
			fl->dumps++;
		}
		fl->child = 0;
	}
	if (fl->child > 0 || !fl->nq || (!now_anyway && mono_ns() < fl->q[0].due))
		return;
	p = fl->q[0];
	memmove(fl->q, fl->q + 1, (fl->nq - 1) * sizeof(fl->q[0]));
	fl->nq--;
	fl->child_index++;
	fflush(stdout);
	fflush(stderr);
	fl->child = fork();
	if (fl->child < 0) {
		fl->child = 0;
		fl->failed++;
		p_warn("flight recorder: cannot start dump %llu: %s", (unsigned long long)fl->child_index,
		       strerror(errno));
		return;
	}
	if (!fl->child) {
		/* the child: a snapshot of the store; Ctrl-C is the recorder's, not the dump's */
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGUSR1, SIG_IGN);
		_exit(fr_dump_write(fl, &p, env));
	}
	if (now_anyway)
		fr_poll(fl, env, true); /* waits for it */
}

/* Counters now and then: a dump reports the drops of its window. */
static void fr_snapshot(struct flight_rt *fl, struct tet_session *sess, uint64_t now)
{
	if (now < fl->next_snap)
		return;
	fl->next_snap = now + fl->snap_every;
	if (tet_session_counters(sess, &fl->snaps[fl->snap_next].c))
		return;
	if (tet_session_decoder(sess))
		tb_totals(tet_session_decoder(sess), fl->snaps[fl->snap_next].exact);
	fl->snaps[fl->snap_next].ts = now;
	fl->snap_next = (fl->snap_next + 1) % FR_SNAPS_MAX;
	if (fl->nsnaps < FR_SNAPS_MAX)
		fl->nsnaps++;
}

int cmd_trace(int argc, char **argv)
{
	struct fallback_meta_buf fbm;
	struct report_batch rbatch;
	struct tet_session_opts so = { 0 };
	struct tet_targets targets = { 0 };
	struct tet_session *sess = NULL;
	struct report_file *rfiles = NULL;
	struct report_meta meta = { 0 };
	struct iofd iofd = { 0 };
	struct analyzer *an = NULL;
	struct event_ctx ectx = { 0 };
	struct why_report why = { 0 };
	struct prom_server *metrics = NULL;
	struct flight_rt fl = { 0 };
	struct loss_track lt = { 0 };
	struct dump_env denv;
	struct trace_opts o;
	struct sigaction sa;
	char err[TET_ERR_LEN], cls[160], errbuf[1024];
	const char *root = getenv("TET_SYSFS_ROOT");
	uint64_t start, now, next_tick, next_interval = 0, next_metrics = 0;
	FILE *summary = stdout;
	int ret, status = TET_EXIT_CANNOT;
	bool gone = false, batched;

	/* JSON on stdout (--output -): errors are JSON there too, from the first one */
	for (int i = 1; i < argc; i++)
		if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc &&
		    !strcmp(argv[i + 1], "-"))
			json_output = true;
		else if (!strcmp(argv[i], "--output=-") || !strcmp(argv[i], "-o-"))
			json_output = true;
	ret = parse_args(argc, argv, &o);
	if (ret)
		return ret > 0 ? TET_EXIT_OK : TET_EXIT_USAGE;

	/* the target must exist */
	if (o.pid && kill(o.pid, 0) && errno == ESRCH) {
		p_err("no process with PID %d", o.pid);
		return TET_EXIT_INPUT;
	}
	if (o.binary && access(o.binary, F_OK)) {
		p_err("%s: %s", o.binary, strerror(errno));
		return TET_EXIT_INPUT;
	}
	if (o.fl.on && fr_dir_check(o.fl.dir, err, sizeof(err))) {
		p_err("%s", err);
		return TET_EXIT_INPUT;
	}
	ret = tet_discover(o.pid, o.binary, o.mode, root, &targets, err, sizeof(err));
	if (ret) {
		p_err("%s", err);
		return tet_discover_exit(ret);
	}
	/* batched when the probes allow it, unless told otherwise */
	batched = !targets.fallback && targets.batch && o.capture != CAPTURE_PER_EVENT;
	if (!batched && (o.capture == CAPTURE_BATCHED || o.sample_rate > 1)) {
		p_err("%s: %s", targets.exe ? targets.exe : "the target",
		      targets.fallback ? "stock Tokio (traced through uprobes) has no batched capture, hence no --capture batched or --sample-rate: rebuild it with scripts/tokio-usdt-build" :
		      "no tokio:event_batch probe (built by an older kit?), hence no --capture batched or --sample-rate: rebuild it with scripts/tokio-usdt-build");
		tet_targets_free(&targets);
		return TET_EXIT_CANNOT;
	}
	if (batched && o.probes_given)
		p_warn("--probes applies to per-event capture; batched capture records every probe class");
	if (batched) {
		o.probes = targets.probes;
		o.probes_given = false;
	}
	if (!o.ringbuf)
		o.ringbuf = batched ? 64u << 20 : 16u << 20;
	if (o.probes_given && (o.probes & ~targets.probes)) {
		unsigned missing = o.probes & ~targets.probes;

		for (unsigned i = 0; i < TET_EV_COUNT; i++)
			if (missing & (1u << i))
				p_warn("tokio:%s is not in the target: %s", an_event_name(i),
				       "its figures will be missing");
	}
	if (outputs_open(&o.outs, errbuf, sizeof(errbuf))) {
		p_err("%s", errbuf);
		tet_targets_free(&targets);
		return TET_EXIT_INPUT;
	}
	if (outputs_stdout(&o.outs))
		summary = stderr;
	/* before any thread starts (they inherit it); raising it needs no privilege */
	if (o.nice && setpriority(PRIO_PROCESS, 0, o.nice))
		p_warn("--nice %d: %s (the tracer keeps its priority)", o.nice, strerror(errno));
	if (o.metrics_addr) {
		ret = prom_start(&metrics, o.metrics_addr, o.metrics_sites, err, sizeof(err));
		if (ret) {
			p_err("%s", err);
			outputs_abort(&o.outs);
			tet_targets_free(&targets);
			return TET_EXIT_CANNOT;
		}
	}

	if (targets.fallback) {
		/* no task ids (header pointers), no spawns: live waker counts are unknown, so
		 * waker_clone/drop (the most frequent calls of all) only when asked for */
		o.an.key_by_header = true;
		if (!o.probes_given)
			o.probes &= ~TET_CLASS_WAKER;
		for (int k = 0; k < TSYM_KINDS; k++)
			if (!targets.syms->count[k] && k != TSYM_DEALLOC)
				p_warn("%s: %s not found (inlined?): %s", targets.fb_path,
				       tsym_kind_name(k), fallback_missing_impact(k));
	}
	o.an.no_wakes = !(o.probes & targets.probes & TET_PROBE_BIT(TET_EV_WAKE));
	o.an.waker_events = (o.probes & targets.probes & TET_CLASS_WAKER) == TET_CLASS_WAKER &&
			    (o.probes & targets.probes & TET_CLASS_SPAWN);
	/* batched capture records every event whatever --probes says */
	o.an.wait_events = !targets.fallback && (targets.probes & TET_PROBE_BIT(TET_EV_WAIT)) &&
			   (batched || (o.probes & TET_PROBE_BIT(TET_EV_WAIT)));
	if (o.fl.on) {
		struct an_opts live = o.an;
		bool need_live = o.metrics_addr || o.interval_ns;

		fl.o = &o.fl;
		for (size_t i = 0; i < o.fl.ntrig; i++) {
			const struct fr_trigger *t = &o.fl.trig[i];

			if (t->kind == FR_TRIG_DETECTOR) {
				fl.detectors |= 1u << t->detector;
				need_live = true;
			} else if (t->kind == FR_TRIG_POLL) {
				if (!live.trig_poll_ns || t->threshold_ns < live.trig_poll_ns)
					live.trig_poll_ns = t->threshold_ns;
				need_live = true;
			} else if (t->kind == FR_TRIG_SCHED) {
				if (!live.trig_sched_ns || t->threshold_ns < live.trig_sched_ns)
					live.trig_sched_ns = t->threshold_ns;
				need_live = true;
			} else if (t->kind == FR_TRIG_EXIT) {
				fl.any_exit = true;
			}
		}
		/* the dumps find what the triggers fired on; the HTML and the trace are drawn */
		o.an.detect |= fl.detectors;
		o.an.timeline_cap = o.timeline_events;
		fl.store = fr_store_new(o.fl.window_ns, o.fl.window_bytes);
		fl.snaps = calloc(FR_SNAPS_MAX, sizeof(*fl.snaps));
		fl.snap_every = o.fl.window_ns / FR_SNAPS_MAX > NSEC_PER_SEC ?
				o.fl.window_ns / FR_SNAPS_MAX : NSEC_PER_SEC;
		if (!fl.store || !fl.snaps) {
			p_err("out of memory");
			goto out;
		}
		ectx.fl = &fl;
		if (need_live) {
			/* bounded for weeks: no timeline, no terminated-task records */
			live.detect |= fl.detectors;
			live.timeline_cap = 0;
			live.max_task_records = 0;
			live.on_detect = fr_on_detect;
			live.detect_ctx = &fl;
			an = an_new(&live);
			if (!an) {
				p_err("out of memory");
				goto out;
			}
		}
	} else {
		an = an_new(&o.an);
		if (!an) {
			p_err("out of memory");
			goto out;
		}
	}
	if (an)
		ur_set_fd_fn(an_uring(an), fd_target, NULL);
	if (an && targets.fallback &&
	    an_set_types(an, (const char *const *)targets.syms->types, targets.syms->ntypes)) {
		p_err("out of memory");
		goto out;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (o.fl.on)
		sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	tet_libbpf_setup(o.verbose);
	so.pid = o.pid;
	so.probes = o.probes;
	so.ringbuf_bytes = o.ringbuf;
	so.batched = batched;
	so.sample_rate = o.sample_rate;
	so.verbose = o.verbose;
	so.sched = o.sched;
	so.no_uring = o.no_uring;
	so.on_event = on_event;
	so.msgs = &cli_msgs;
	ectx.an = an;
	ectx.ss = ss_new();
	if (!ectx.ss) {
		p_err("out of memory");
		goto out;
	}
	so.ctx = &ectx;
	ret = tet_session_open(&sess, &so, &targets, err, sizeof(err));
	if (ret) {
		p_err("%s", err);
		goto out;
	}
	{
		const struct tet_sched_info *si = tet_session_sched(sess);

		if (an)
			an_set_kernel(an, si->on, si->profile_hz > 0);
		if (!o.sched.off && !si->on)
			p_warn("%s", si->why_no_sched);
		if (!o.sched.off && o.sched.profile_hz && !si->profile_hz)
			p_warn("%s", si->why_no_profile);
		if (o.fl.on && !si->exits)
			p_warn("%s: a crash will not dump", si->why_no_exits);
		/* io_uring off on this kernel: worth a word when the target has io_uring code */
		if (!o.no_uring && targets.uring_code && !tet_session_uring(sess)->on)
			p_warn("io_uring: %s", tet_session_uring(sess)->why_not);
		if (o.pid && (si->on || si->profile_hz)) {
			ectx.pids[ectx.npids++] = (uint32_t)o.pid;
			if (ss_add_pid(ectx.ss, (uint32_t)o.pid, err, sizeof(err)))
				p_warn("stacks of PID %d: %s", o.pid, err);
		}
	}
	/* the capture (and --duration) starts once every probe is attached */
	clock_gettime(CLOCK_REALTIME, &meta.wall_start);
	start = mono_ns();
	if (batched) /* the moment the event_batch sites began to be attached */
		start = tet_session_batch_info(sess)->start_ns;
	if (batched) {
		const struct tet_bc_info *bi = tet_session_batch_info(sess);

		if (o.sample_rate > 1)
			snprintf(cls, sizeof(cls), "batched capture, %zu event_batch sites, 1 task in %u",
				 bi->sites, o.sample_rate);
		else
			snprintf(cls, sizeof(cls), "batched capture, %zu event_batch sites, every task",
				 bi->sites);
		if (!bi->sweeps)
			p_warn("%s: threads' buffers are only seen when they flush (events may wait up to 2 s to be put in order)",
			       bi->why_no_sweeps);
	} else {
		class_list(tet_session_probes(sess), cls, sizeof(cls));
	}
	if (o.pid)
		fprintf(stderr, "%s: attached %zu probe attachment%s (%s) to PID %d (%s); Ctrl-C to stop\n",
			TET_PROG, tet_session_links(sess), tet_session_links(sess) == 1 ? "" : "s",
			cls, o.pid, targets.exe ? targets.exe : "?");
	else
		fprintf(stderr, "%s: attached %zu probe attachment%s (%s) to %s, every process; Ctrl-C to stop\n",
			TET_PROG, tet_session_links(sess), tet_session_links(sess) == 1 ? "" : "s",
			cls, o.binary);
	if (o.verbose) {
		uint32_t ids[TET_EV_COUNT];
		const char *names[TET_EV_COUNT];
		size_t n = tet_session_prog_ids(sess, ids, names, TET_EV_COUNT);

		for (size_t i = 0; i < n; i++)
			fprintf(stderr, "%s: prog %s id %u\n", TET_PROG, names[i], ids[i]);
	}

	meta.mode = targets.fallback ? "uprobe-fallback" : "usdt";
	if (!targets.fallback && targets.dialect) {
		meta.dialect = targets.dialect->id;
		meta.dialect_lacks = targets.dialect->lacks;
	}
	meta.uring = tet_session_uring(sess);
	meta.io_fd = io_fd;
	meta.io_ctx = &iofd;
	meta.capture = batched ? "batched" : "per-event";
	meta.sample_rate = batched ? o.sample_rate : 1;
	meta.batch = batch_meta(&rbatch, sess);
	if (targets.fallback)
		meta.fallback = fallback_meta(&fbm, &targets, tet_session_fallback(sess), o.verbose);
	meta.pid = o.pid;
	meta.binary = o.binary;
	meta.executable = targets.exe;
	meta.probes = tet_session_probes(sess);
	meta.requested_ns = o.duration_ns;
	meta.start_ns = start;
	meta.top = o.top;
	meta.ringbuf = o.ringbuf;
	rfiles = calloc(targets.n ? targets.n : 1, sizeof(*rfiles));
	if (!rfiles) {
		p_err("out of memory");
		goto out;
	}
	if (targets.fallback) {
		rfiles[0].path = targets.fb_path;
		rfiles[0].probes = targets.probes;
		rfiles[0].sites = tet_session_links(sess);
		meta.nfiles = 1;
	}
	for (size_t i = 0; i < targets.n; i++) {
		rfiles[i].path = targets.v[i].path;
		rfiles[i].probes = targets.v[i].probes;
		for (int e = 0; e < TET_EV_COUNT; e++)
			rfiles[i].sites += targets.v[i].sites[e];
	}
	meta.files = rfiles;
	if (!targets.fallback)
		meta.nfiles = targets.n;
	if (metrics) {
		meta.end_ns = start;
		prom_update(metrics, an, &meta);
		next_metrics = start + NSEC_PER_SEC;
		fprintf(stderr, "%s: serving Prometheus metrics at %s\n", TET_PROG, prom_url(metrics));
	}

	if (o.fl.on) {
		char w[32], trig[400] = "SIGUSR1, crash";
		size_t n = strlen(trig);

		denv = (struct dump_env){ &o, &targets, sess, &ectx, &meta };
		for (size_t i = 0; i < o.fl.ntrig && n < sizeof(trig); i++)
			if (o.fl.trig[i].kind != FR_TRIG_CRASH)
				n += (size_t)snprintf(trig + n, sizeof(trig) - n, ", %s", o.fl.trig[i].spec);
		if (o.fl.window_ns)
			fprintf(stderr, "%s: flight recorder: keeping the last %s of events (at most %llu MiB); dumps into %s on: %s\n",
				TET_PROG, fmt_duration(o.fl.window_ns, w, sizeof(w)),
				(unsigned long long)(o.fl.window_bytes >> 20), o.fl.dir, trig);
		else
			fprintf(stderr, "%s: flight recorder: keeping the last %llu MiB of events; dumps into %s on: %s\n",
				TET_PROG, (unsigned long long)(o.fl.window_bytes >> 20), o.fl.dir, trig);
	}
	next_tick = start + DETECT_TICK_NS;
	lt.since = start;
	lt.margin = batched ? 2 * NSEC_PER_SEC : 0;
	if (o.interval_ns)
		next_interval = start + o.interval_ns;
	for (;;) {
		uint64_t wait = o.drain_ns;

		now = mono_ns();
		if (o.duration_ns && now - start + wait > o.duration_ns)
			wait = now - start >= o.duration_ns ? 0 : o.duration_ns - (now - start);
		if (wait && !stop_signal)
			sleep_ns(wait);
		ret = tet_session_drain(sess);
		if (ret < 0 && ret != -EINTR) {
			p_err("reading the ring buffer failed: %s", strerror(-ret));
			goto out;
		}
		now = mono_ns();
		if (stop_signal)
			break;
		if (o.duration_ns && now - start >= o.duration_ns)
			break;
		if (o.pid && process_gone(o.pid)) {
			gone = true;
			break;
		}
		if (now >= next_tick && an) {
			if (!tet_session_counters(sess, &meta.counters)) {
				an_note_drops(an, meta.counters.drops);
				loss_track(&lt, an, &meta.counters, now);
			}
			note_batch_loss(an, sess);
			an_tick(an, now);
			next_tick = now + DETECT_TICK_NS;
		}
		if (o.fl.on) {
			uint64_t edge = now;

			if (usr1_signal) {
				struct report_trigger t = { 0 };

				usr1_signal = 0;
				t.kind = t.spec = "sigusr1";
				t.ts = t.at_ns = now;
				snprintf(t.detail, sizeof(t.detail), "SIGUSR1 received");
				fr_fire(&fl, &t, 0, o.pid ? (uint32_t)o.pid : fl.last_pid, false, false);
			}
			/* a queued dump's window stays whole until it is written */
			for (size_t i = 0; i < fl.nq; i++)
				if (fl.q[i].t.at_ns < edge)
					edge = fl.q[i].t.at_ns;
			fr_store_trim(fl.store, edge);
			fr_snapshot(&fl, sess, now);
			fr_poll(&fl, &denv, false);
		}
		if (metrics && now >= next_metrics) {
			/* rendered here, served by the metrics thread: the drain never waits for it */
			meta.end_ns = now;
			meta.counters_valid = !tet_session_counters(sess, &meta.counters);
			pmem_get_stats(&meta.pmem);
			meta.batch = batch_meta(&rbatch, sess);
			prom_update(metrics, an, &meta);
			next_metrics = now + NSEC_PER_SEC;
		}
		if (o.interval_ns && now >= next_interval) {
			meta.end_ns = now;
			meta.ended_by = "running";
			meta.counters_valid = !tet_session_counters(sess, &meta.counters);
			pmem_get_stats(&meta.pmem);
			meta.batch = batch_meta(&rbatch, sess);
			if (!o.quiet)
				report_terminal(summary, an, &meta, false);
			next_interval += o.interval_ns;
			if (next_interval <= now)
				next_interval = now + o.interval_ns;
		}
	}

	/* Detach first (nothing new comes in; the semaphores go back to 0), then take what is
	 * still in the ring, then the counters — every event that was submitted is analyzed. */
	now = mono_ns(); /* the capture ends here; detaching takes ~0.1s per probe (an RCU
			  * grace period per uprobe in the kernel), not part of it */
	tet_session_end(sess, now); /* the end, for every probe at once */
	while ((ret = tet_session_drain(sess)) > 0)
		;
	if (gone) { /* how it ended (TET_REC_EXIT, drained just now) */
		const struct proc_exit *x = exit_of(&ectx, (uint32_t)o.pid);

		meta.exit_status = -1;
		if (x && (x->code & 0x7f)) {
			meta.exit_signal = (int)(x->code & 0x7f);
			meta.exit_core = x->code & 0x80;
		} else if (x) {
			meta.exit_status = (int)((x->code >> 8) & 0xff);
		}
	}
	if (o.fl.on) {
		struct fr_stats fs;

		fr_poll(&fl, &denv, true); /* what is queued is written now, then waited for */
		fr_store_stats(fl.store, &fs);
		if (gone && meta.exit_signal)
			fprintf(stderr, "%s: process %d was killed by %s%s\n", TET_PROG, o.pid,
				report_signal_name(meta.exit_signal, cls, sizeof(cls)),
				meta.exit_core ? " (core dumped)" : "");
		else if (gone)
			fprintf(stderr, "%s: process %d exited\n", TET_PROG, o.pid);
		else if (stop_signal)
			fprintf(stderr, "%s: stopped by %s\n", TET_PROG, strsignal(stop_signal));
		fprintf(stderr, "%s: flight recorder: %llu dump%s written, %llu failed, %llu trigger%s suppressed (cooldown); %llu records held in %llu MiB at the end, %llu evicted\n",
			TET_PROG, (unsigned long long)fl.dumps, fl.dumps == 1 ? "" : "s",
			(unsigned long long)fl.failed, (unsigned long long)fl.suppressed,
			fl.suppressed == 1 ? "" : "s", (unsigned long long)fs.records,
			(unsigned long long)(fs.bytes >> 20), (unsigned long long)fs.evicted);
		if (fs.spawns_not_kept)
			fprintf(stderr, "%s: flight recorder: %llu spawns of tasks could not be kept beyond the window (%d tasks, 1/8 of the memory bound): dumps show those tasks as spawned before the trace\n",
				TET_PROG, (unsigned long long)fs.spawns_not_kept, FR_SPAWNS_MAX);
		status = TET_EXIT_OK;
		goto out;
	}
	meta.counters_valid = !tet_session_counters(sess, &meta.counters);
	pmem_get_stats(&meta.pmem);
	if (meta.counters_valid) {
		an_note_drops(an, meta.counters.drops);
		loss_track(&lt, an, &meta.counters, now);
	}
	note_batch_loss(an, sess);
	lost_tasks_to(an, sess, meta.counters_valid ? &meta.counters : NULL);
	meta.batch = batch_meta(&rbatch, sess);
	an_finish(an, now);
	why_meta(&why, sess, an, ectx.ss, meta.counters_valid ? &meta.counters : NULL);
	meta.why = &why;
	meta.end_ns = now;
	meta.ended_by = stop_signal ? "signal" : gone && meta.exit_signal ? "process_crash" :
			gone ? "process_exit" : "duration";
	if (gone && meta.exit_signal)
		fprintf(stderr, "%s: process %d was killed by %s%s; the report covers what was seen until then\n",
			TET_PROG, o.pid, report_signal_name(meta.exit_signal, cls, sizeof(cls)),
			meta.exit_core ? " (core dumped)" : "");
	else if (gone)
		fprintf(stderr, "%s: process %d exited; the report covers what was seen until then\n",
			TET_PROG, o.pid);
	else if (stop_signal)
		fprintf(stderr, "%s: stopped by %s\n", TET_PROG, strsignal(stop_signal));
	if (!o.quiet)
		report_terminal(summary, an, &meta, true);
	status = TET_EXIT_OK;
	if (metrics)
		prom_update(metrics, an, &meta);
	if (outputs_write(&o.outs, an, &meta, &cli_msgs))
		status = TET_EXIT_CANNOT;
out:
	if (fl.child > 0) /* a dump being written finishes */
		waitpid(fl.child, NULL, 0);
	outputs_abort(&o.outs);
	prom_stop(metrics);
	tet_session_close(sess);
	an_free(an);
	iofd_free(&iofd);
	why_free(&why);
	ss_free(ectx.ss);
	free(rfiles);
	fr_store_free(fl.store);
	free(fl.snaps);
	tet_targets_free(&targets);
	return status;
}
