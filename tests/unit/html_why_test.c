// SPDX-License-Identifier: MIT
/*
 * html_why_test — report.html's "Where the time went" (tracer/report/html.c, tracer/report/html/report.js) on a
 * synthetic capture, looked at by headless Chromium (tests/browser.py).
 *
 * Intent: a why_report (tracer/analyze/why.h) reaches the page as data and is drawn under the page's CSP
 * with text kept text: the analyzer is fed two spawn sites with one long poll each; the
 * why_report gives site A a CPU profile (3 levels deep, kernel, library, program and unsymbolized
 * frames, one frame holding `</script><img src=x onerror=alert(1)>`, one holding U+2028) and
 * site B two blocked stacks; each long poll gets its split, site B's its blocking stack, site A's
 * its hot frames. Chromium must see no console error, CSP violation or request; one flame graph
 * with one block per distinct stack prefix (+ the root), zoom in and out by clicking, hover
 * details; site B's blocked stacks as a table; the findings' why lines; the hostile frame as text
 * and no <img>. Also: with m->why NULL the page has no such section (the sections as before),
 * a why_report with only notes shows the notes and no flame graph, and a big one (40 sites × 312
 * stacks × 64 frames) is cut to its bounds (30 sites, 200 + 10 stacks, 150000 frames), under
 * 2 MB, and draws every site without error.
 * A flight-recorder dump (m->flight) of the same capture, triggered by site B's long poll, with
 * a hostile trigger detail (`<script>alert(1)</script>` and a \x01 byte) and a crash: the banner
 * (as text, escaped in the file), the crash line, the trigger's moment as a line over the
 * timeline labelled with its kind (where the timeline's scale puts it, before and after a zoom;
 * hover says the trigger), its task on the first timeline row, the triggering finding
 * highlighted (and only it), in the findings and the tasks table. Without a dump none of it.
 *
 * Build and run, from the repository root (no top-level make needed):
 *   D=/tmp/html-why; mkdir -p $D
 *   python3 scripts/embed-html.py tracer/report/html/report.html tracer/report/html/report.css \
 *       tracer/report/html/report.js $D/html_assets.h
 *   gcc -O2 -g -Wall -Wextra -Werror -Wformat-signedness -Wmissing-field-initializers \
 *       -Wno-unused-parameter -std=gnu11 -D_GNU_SOURCE -I$D -Itracer -Ibpf \
 *       -o $D/html_why_test tests/unit/html_why_test.c tracer/report/html.c tracer/lib/json.c \
 *       tracer/lib/units.c tracer/lib/hist.c tracer/report/report.c tracer/analyze/analyzer.c tracer/lib/htab.c tracer/analyze/uring.c -lm
 *   $D/html_why_test $D            # [BROWSER_PY, default tests/browser.py]
 * Writes $D/why.html, $D/why-none.html, $D/why-notes.html, $D/why-big.html, $D/flight.html and
 * screenshots $D/why.png, $D/why-notes.png, $D/flight.png.
 * Prints "ok - …" / "not ok - …"; exits 1 when a check failed, 2 when the browser could not run.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analyzer.h"
#include "report.h"
#include "reporters.h"
#include "why.h"

#include "check.h"

#define PID 4242
#define W0 4243
#define OUT 4250
#define MS 1000000ull

/* report.c's terminal and JSON reports call why.c's why_finding_line; report_html does not.
 * why.c needs libbpf and the symbolizer: not linked here, so a stand-in (the real one wins if
 * why.c is linked too). */
__attribute__((weak)) const char *why_finding_line(const struct why_finding *wf, char *buf,
						    size_t len)
{
	if (len)
		buf[0] = 0;
	return buf;
}

/* ---- the capture: two sites, one long poll each ---- */
static struct analyzer *A;

static void ev(uint32_t type, uint64_t ts, uint32_t tid, uint64_t id, uint64_t a)
{
	struct tet_event_rec r = { { ts, type, PID, tid, 0 }, id, 0x1000 + id, a, 0, 0 };

	an_event(A, &r, sizeof(r));
}

static void spawn(uint64_t ts, uint64_t id, const char *file, uint32_t line, const char *type)
{
	struct tet_spawn_rec r;

	memset(&r, 0, sizeof(r));
	r.h = (struct tet_hdr){ ts, TET_EV_SPAWN, PID, OUT, 0 };
	r.task_id = id;
	r.header_ptr = 0x1000 + id;
	r.line = line;
	r.col = 5;
	r.file_len = r.file_copied = (uint16_t)strlen(file);
	r.type_len = r.type_copied = (uint16_t)strlen(type);
	memcpy(r.data, file, r.file_len);
	memcpy(r.data + TET_FILE_MAX, type, r.type_len);
	an_event(A, &r, sizeof(r));
}

/* spawn, a poll of poll_ms (Pending), a wake, a short poll (Ready), terminate */
static void task(uint64_t t, uint64_t id, const char *file, uint32_t line, const char *type,
		 uint64_t poll_ms)
{
	spawn(t, id, file, line, type);
	ev(TET_EV_POLL_BEGIN, t + MS, W0, id, 0);
	ev(TET_EV_POLL_END, t + MS + poll_ms * MS, W0, id, TET_POLL_PENDING);
	ev(TET_EV_WAKE, t + 2 * MS + poll_ms * MS, OUT, id, 0);
	ev(TET_EV_POLL_BEGIN, t + 3 * MS + poll_ms * MS, W0, id, 0);
	ev(TET_EV_POLL_END, t + 3 * MS + poll_ms * MS + 50000, W0, id, TET_POLL_READY);
	ev(TET_EV_TERMINATE, t + 4 * MS + poll_ms * MS, W0, id, 0);
}

static const struct an_site *site_at(uint32_t line)
{
	const struct an_site *const *s;
	size_t n = an_sites(A, &s);

	for (size_t i = 0; i < n; i++)
		if (!s[i]->unknown && s[i]->line == line)
			return s[i];
	return NULL;
}

/* ---- the why_report: frames LEAF FIRST, as why.c gives them ---- */
#define HOSTILE "</script><img src=x onerror=alert(1)>"
#define LSEP "work::parse\xe2\x80\xa8line (src/work.rs:77)" /* U+2028 inside */
#define HARNESS "tokio::runtime::task::harness::Harness<T,S>::poll (/root/.cargo/registry/src/tokio-1.53.0/src/runtime/task/harness.rs:153)"
#define CRUNCH "work::crunch::{{closure}} (src/work.rs:12)"
#define HASH "work::hash_block (src/work.rs:40)"
#define SLEEP "std::thread::sleep (/rustc/1a2b3c/library/std/src/thread/mod.rs:900)"

static char *s_hash[] = { HASH, CRUNCH, HARNESS };
static char *s_hostile[] = { HOSTILE, CRUNCH, HARNESS };
static char *s_kernel[] = { "[kernel] asm_exc_page_fault", CRUNCH, HARNESS };
static char *s_utf8[] = { "core::str::from_utf8 (/rustc/1a2b3c/library/core/src/str/mod.rs:88)",
			  LSEP, HARNESS };
static char *s_libc[] = { "libc.so.6+0x2a1ca", "std::rt::lang_start" };
static struct why_stack cpu_a[] = { /* by samples: the order why.c promises */
	{ .frames = s_hash, .nframes = 3, .user_leaf = 0, .count = 50 },
	{ .frames = s_hostile, .nframes = 3, .user_leaf = 1, .count = 20 },
	{ .frames = s_utf8, .nframes = 3, .user_leaf = 1, .count = 15 },
	{ .frames = s_kernel, .nframes = 3, .user_leaf = 1, .count = 10 },
	{ .frames = s_libc, .nframes = 2, .user_leaf = UINT32_MAX, .count = 5 },
};

static char *b_sleep[] = { SLEEP, "io::fetch::{{closure}} (src/io.rs:25)", HARNESS };
static char *b_futex[] = { "std::sys::sync::mutex::futex::Mutex::lock_contended", "io::fetch::{{closure}} (src/io.rs:31)", HARNESS };
static struct why_stack blocked_b[] = {
	{ .frames = b_sleep, .nframes = 3, .user_leaf = 1, .syscall = "clock_nanosleep",
	  .count = 1, .ns = 49900000 },
	{ .frames = b_futex, .nframes = 3, .user_leaf = 1, .syscall = "futex", .count = 4,
	  .ns = 2100000 },
};

/* Blocks a flame graph of `v` draws: the root, plus one per distinct (root-first) prefix of
 * the stacks whose root frame is `under` (NULL: of every stack). */
static size_t flame_blocks(const struct why_stack *v, size_t n, const char *under)
{
	size_t blocks = 1;

	for (size_t i = 0; i < n; i++) {
		if (under && strcmp(v[i].frames[v[i].nframes - 1], under))
			continue;
		for (uint32_t len = 1; len <= v[i].nframes; len++) {
			bool seen = false;

			for (size_t j = 0; j < i && !seen; j++) {
				bool same = v[j].nframes >= len;

				for (uint32_t k = 1; same && k <= len; k++)
					same = !strcmp(v[i].frames[v[i].nframes - k],
						       v[j].frames[v[j].nframes - k]);
				seen = same;
			}
			blocks += !seen;
		}
	}
	return blocks;
}

static void why_fill(struct why_report *w, struct why_site sites[2], struct why_finding *wf)
{
	const struct an_finding *f;
	size_t nf = an_findings(A, &f);

	memset(w, 0, sizeof(*w));
	w->sched = true;
	w->profile_hz = 99;
	w->samples = 130;
	w->samples_in_polls = 100;
	w->offcpu_periods = 5;
	w->notes[w->nnotes++] = "/synthetic: no frame pointers, user stacks cut to their leaf frame";
	sites[0] = (struct why_site){ .site = site_at(10), .samples = 100, .on_cpu_ns = 58 * MS,
		.preempted_ns = 2 * MS, .cpu = cpu_a, .ncpu = 5 };
	sites[1] = (struct why_site){ .site = site_at(20), .on_cpu_ns = 1600000,
		.preempted_ns = 500000, .blocked_ns = 52 * MS, .blocked = blocked_b, .nblocked = 2 };
	w->sites = sites;
	w->nsites = 2;
	for (size_t i = 0; i < nf; i++) {
		memset(&wf[i], 0, sizeof(wf[i]));
		if (f[i].kind != AN_LONG_POLL)
			continue;
		wf[i].known = true;
		if (f[i].site == sites[0].site) {
			wf[i].on_cpu_ns = 57 * MS;
			wf[i].preempted_ns = 3 * MS;
			wf[i].samples = 100;
			wf[i].hot[0] = (struct why_hot){ HASH, 50, 0.5 };
			wf[i].hot[1] = (struct why_hot){ HOSTILE, 20, 0.2 };
			wf[i].hot[2] = (struct why_hot){ LSEP, 15, 0.15 };
			wf[i].nhot = 3;
		} else {
			wf[i].on_cpu_ns = 1600000;
			wf[i].preempted_ns = 500000;
			wf[i].blocked_ns = 49900000;
			wf[i].blocked_top = &blocked_b[0];
			wf[i].doubtful = true; /* rendered as given (why.c judges it) */
		}
	}
	w->findings = wf;
	w->nfindings = nf;
}

/* ---- a big report: more sites, stacks and frames than the page keeps ---- */
#define BIG_SITES 40
#define BIG_CPU 300
#define BIG_DEPTH 64
#define BIG_BLOCKED 12

struct big {
	struct why_report w;
	struct why_site sites[BIG_SITES];
	struct why_stack *stacks;         /* BIG_SITES × (BIG_CPU + BIG_BLOCKED) */
	char **frames;                    /* their frames */
	char *pool[BIG_DEPTH][8];         /* frame strings: 8 functions per depth */
};

/* Every site gets the same analyzer site (A's): the page only needs a site per entry. */
static int big_fill(struct big *b, const struct an_site *site)
{
	size_t per = BIG_CPU + BIG_BLOCKED;

	memset(b, 0, sizeof(*b));
	b->stacks = calloc(BIG_SITES * per, sizeof(*b->stacks));
	b->frames = calloc(BIG_SITES * per * BIG_DEPTH, sizeof(*b->frames));
	if (!b->stacks || !b->frames)
		return -ENOMEM;
	for (int d = 0; d < BIG_DEPTH; d++)
		for (int v = 0; v < 8; v++)
			if (asprintf(&b->pool[d][v], "big::level_%d::function_%d (src/big/mod_%d.rs:%d)",
				     d, v, d, 10 + v) < 0)
				return -ENOMEM;
	for (size_t i = 0; i < BIG_SITES; i++) {
		struct why_stack *st = &b->stacks[i * per];

		for (size_t k = 0; k < per; k++) {
			st[k].frames = &b->frames[(i * per + k) * BIG_DEPTH];
			st[k].nframes = BIG_DEPTH;
			st[k].user_leaf = 0;
			st[k].count = k < BIG_CPU ? BIG_CPU - k : 1;
			st[k].ns = k < BIG_CPU ? 0 : (per - k) * MS;
			st[k].syscall = k < BIG_CPU ? NULL : "futex";
			for (int d = 0; d < BIG_DEPTH; d++) /* leaf first: level 63 … level 0 */
				st[k].frames[d] = b->pool[BIG_DEPTH - 1 - d][(k >> (d / 8)) % 8];
		}
		b->sites[i] = (struct why_site){ .site = site, .samples = BIG_CPU * (BIG_CPU + 1) / 2,
			.on_cpu_ns = 10 * MS, .cpu = st, .ncpu = BIG_CPU, .blocked = st + BIG_CPU,
			.nblocked = BIG_BLOCKED, .blocked_ns = 5 * MS };
	}
	b->w.sched = true;
	b->w.profile_hz = 99;
	b->w.sites = b->sites;
	b->w.nsites = BIG_SITES;
	return 0;
}

static void big_free(struct big *b)
{
	for (int d = 0; d < BIG_DEPTH; d++)
		for (int v = 0; v < 8; v++)
			free(b->pool[d][v]);
	free(b->stacks);
	free(b->frames);
}

/* ---- writing the page, reading it in Chromium ---- */
static int write_page(const char *path, const struct report_meta *m)
{
	FILE *fp = fopen(path, "w");
	int ret;

	if (!fp)
		return -errno;
	ret = report_html(fp, A, m);
	if (fclose(fp) && !ret)
		ret = -EIO;
	return ret;
}

/* Runs browser.py on the page; its JSON line into out. Returns its exit status, -1 on failure. */
static int browse(const char *py, const char *page, const char *eval, const char *after,
		  const char *shot, char *out, size_t len)
{
	const char *argv[] = { "python3", py, "--page", page, "--eval", eval, "--eval-after", after,
			       "--settle-ms", "400", shot ? "--screenshot" : NULL, shot, NULL };
	int fd[2], status;
	size_t n = 0;
	ssize_t r;
	pid_t pid;

	if (pipe(fd))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execvp("python3", (char *const *)argv);
		_exit(127);
	}
	close(fd[1]);
	while (n + 1 < len && (r = read(fd[0], out + n, len - n - 1)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(fd[0]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* The value of key=N in a browser.py answer's "eval" or "eval_after" string ("a=1;b=2;"). */
static long field(const char *out, const char *which, const char *key)
{
	char sect[32], k[64];
	const char *s, *e;
	size_t kl;

	snprintf(sect, sizeof(sect), "\"%s\": \"", which);
	kl = (size_t)snprintf(k, sizeof(k), "%s=", key);
	s = strstr(out, sect);
	if (!s)
		return -1;
	s += strlen(sect);
	e = strchr(s, '"');
	for (const char *p = s; e && p && p < e; p = strchr(p, ';') ? strchr(p, ';') + 1 : NULL)
		if (!strncmp(p, k, kl))
			return strtol(p + kl, NULL, 10);
	return -1;
}

/* A JS expression returning "key=value;…" from an object of numbers (and the section list). */
#define JS_PAIRS(body) \
	"(() => { const q = (s) => [...document.querySelectorAll(s)]; const r = {}; " body \
	" return Object.entries(r).map(([k, v]) => k + '=' + (v === true ? 1 : v === false ? 0 : v)).join(';') + ';'; })()"

static const char EVAL_WHY[] = JS_PAIRS(
	"const D = JSON.parse(document.getElementById('report-data').textContent);"
	"const why = document.getElementById('why'), fgs = q('#why .fg');"
	"const blocks = fgs.length ? [...fgs[0].querySelectorAll('.fg-b')] : [];"
	"const ftext = document.getElementById('findings').textContent;"
	"r.rendered = document.body.dataset.rendered === 'yes';"
	"r.section = !!why && !why.hidden;"
	"r.nav = !!document.getElementById('nav-why') && !document.getElementById('nav-why').hidden;"
	"r.why_second = q('main section').map(s => s.id).join(' ') === "
	"  'findings why distributions timeline heatmap stalled sites tasks';"
	"r.flames = fgs.length;"
	"r.blocks = blocks.length;"
	"r.kernel = blocks.filter(b => b.classList.contains('fg-kernel')).length;"
	"r.own = blocks.filter(b => b.classList.contains('fg-own')).length;"
	"r.addr = blocks.filter(b => b.classList.contains('fg-addr')).length;"
	"r.root_full = blocks.length > 0 && blocks[0].style.width === '100%';"
	"r.hostile_text = blocks.some(b => b.textContent === '" "<\\/script><img src=x onerror=alert(1)>" "');"
	"r.lsep_text = blocks.some(b => b.textContent.includes('\\u2028'));"
	"r.imgs = q('img').length + document.images.length;"
	"r.blocked_rows = q('#why .why-blocked tbody tr').length;"
	"r.blocked_first = (q('#why .why-blocked tbody tr')[0] || {textContent: ''}).textContent"
	"  .includes('clock_nanosleep') && q('#why .why-blocked tbody tr')[0].textContent"
	"  .includes('std::thread::sleep (/rustc/1a2b3c/library/std/src/thread/mod.rs:900) \\u2190 io::fetch');"
	"r.notes = q('#why .why-notes li').length;"
	"r.split = ftext.includes('on CPU 1.6ms \\u00b7 preempted 500\\u00b5s \\u00b7 blocked 49.9ms');"
	"r.doubt = ftext.includes('blocked 49.9ms (doubtful: not one CPU sample in that time on CPU)') &&"
	"  (ftext.match(/doubtful/g) || []).length === 1;"
	"r.blocked_line = ftext.includes('blocked 49.9ms in clock_nanosleep \\u2190 std::thread::sleep');"
	"r.hottest = ftext.includes('hottest of 100 CPU samples: work::hash_block (src/work.rs:40) (50 %), <\\/script><img');"
	"r.data_sites = D.why.sites.length;"
	"r.data_frames = D.why.frames.length;"
	"r.data_site_key = D.why.sites[0].site === D.sites.find(s => s.loc === 'src/work.rs:10:5').id;"
	"r.data_root_first = D.why.frames[D.why.sites[0].cpu[0][1][0]].startsWith('tokio::runtime');"
	"r.data_finding_why = D.findings.filter(f => f.why).length;"
	"r.data_blocked_top = D.findings.some(f => f.why && f.why.blocked_top &&"
	"  f.why.blocked_top.syscall === 'clock_nanosleep' && f.why.blocked_top.frames.length === 3);");

/* interactions: hover, zoom into the root's biggest child, zoom back out */
static const char AFTER_WHY[] = JS_PAIRS(
	"const fg = document.querySelector('#why .fg'); const bl = () => [...fg.querySelectorAll('.fg-b')];"
	"const info = fg.parentNode.querySelector('.fg-info');"
	"const r0 = bl()[0].getBoundingClientRect();"
	"bl()[1].dispatchEvent(new MouseEvent('mousemove', {bubbles: true, clientX: r0.left + 5, clientY: r0.top + 5}));"
	"r.hover = info.textContent.includes('samples') && info.textContent.includes('%');"
	"r.tip = !document.getElementById('tip').hidden;"
	"bl()[1].click();"
	"r.zoomed_blocks = bl().length;"
	"r.zoomed_anc = fg.querySelectorAll('.fg-anc').length;"
	"r.zoomed_full = bl()[1].style.width === '100%';"
	"bl()[0].click();"
	"r.out_blocks = bl().length;");

static const char EVAL_NONE[] = JS_PAIRS(
	"const D = JSON.parse(document.getElementById('report-data').textContent);"
	"r.rendered = document.body.dataset.rendered === 'yes';"
	"r.flight = !!document.getElementById('flight') || q('.tl-trigger, .trigger, .trigger-note').length > 0 ||"
	"  'flight' in D || D.findings.some(f => 'trigger' in f);"
	"r.section = !!document.getElementById('why');"
	"r.nav = !!document.getElementById('nav-why');"
	"r.sections = q('main section').map(s => s.id).join(' ') === "
	"  'findings distributions timeline heatmap stalled sites tasks';"
	"r.data_why = 'why' in JSON.parse(document.getElementById('report-data').textContent);"
	"r.why_lines = q('#findings .why').length;");

/* a flight-recorder dump: the trigger at +101ms (site B's long poll, task 2), the timeline from
 * 0 to 300ms, its label column 280 px wide and 8 px kept free on the right (report.js) */
#define FLIGHT_DETAIL "<script>alert(1)</script>\x01 io::fetch"
#define JS_MARK_X(v0, v1) \
	"(280 + (101e6 - (" v0 ")) / ((" v1 ") - (" v0 ")) * (parseFloat(document.getElementById('tl-canvas').style.width) - 288))"

static const char EVAL_FLIGHT[] = JS_PAIRS(
	"const D = JSON.parse(document.getElementById('report-data').textContent);"
	"const b = document.getElementById('flight'), mk = q('#tl-wrap .tl-trigger');"
	"const li = q('#findings li.trigger');"
	"r.rendered = document.body.dataset.rendered === 'yes';"
	"r.banner = !!b && b.textContent.includes('Flight-recorder dump 1: trigger long_poll at +0.101s "
	"(<script>alert(1)<\\/script>\\\\x01 io::fetch), window +0.000s..+0.300s');"
	"r.banner_more = !!b && b.textContent.includes('1234 records replayed (55.5 KiB in memory); "
	"the memory bound cut the window short; 3 triggers suppressed (cooldown)');"
	"r.scripts = document.scripts.length;"
	"r.crash = (document.getElementById('exit-crash') || {textContent: ''}).textContent === "
	"  'The process was killed by SIGSEGV (core dumped).';"
	"r.marks = mk.length;"
	"r.mark_shown = mk.length === 1 && !mk[0].hidden;"
	"r.mark_label = mk.length === 1 && mk[0].textContent === 'long_poll';"
	"r.mark_x = mk.length === 1 && Math.abs(parseFloat(mk[0].style.left) - " JS_MARK_X("0", "300e6") ") <= 1;"
	"r.mark_height = mk.length === 1 && mk[0].style.height === document.getElementById('tl-canvas').style.height;"
	"r.data_at = D.flight.at_ns === 101e6 && D.flight.task === 2 && D.flight.pid === 4242;"
	"r.data_detail = D.flight.detail === '<script>alert(1)<\\/script>\\\\x01 io::fetch';"
	"r.data_trigger = D.findings.filter(f => f.trigger).map(f => f.kind + ':' + f.task).join() === 'long_poll:2';"
	"r.data_false = D.findings.filter(f => f.trigger === false).length;"
	"r.first_row = D.timeline.tasks[0].id === 2;"
	"r.li = li.length;"
	"r.li_site = li.length === 1 && li[0].textContent.includes('src/io.rs:20:5') &&"
	"  li[0].querySelector('.trigger-note').textContent === 'task 2 fired the flight-recorder dump.';"
	"r.task_rows = q('#tasks-table tr.trigger').length;"
	"r.imgs = q('img').length;");

/* hover on the line says the trigger; a zoom moves the line where the new scale puts it */
static const char AFTER_FLIGHT[] = JS_PAIRS(
	"const c = document.getElementById('tl-canvas'), cr = c.getBoundingClientRect();"
	"const mk = document.querySelector('#tl-wrap .tl-trigger'), tip = document.getElementById('tip');"
	"c.dispatchEvent(new MouseEvent('mousemove', {bubbles: true, clientX: cr.left + parseFloat(mk.style.left), clientY: cr.top + 26 + 11}));"
	"r.tip = !tip.hidden && tip.textContent.startsWith('flight-recorder trigger: long_poll at +101ms\\n<script>alert(1)');"
	"document.getElementById('tl-in').click();"
	"r.zoom_x = !mk.hidden && Math.abs(parseFloat(mk.style.left) - " JS_MARK_X("75e6", "225e6") ") <= 1;");

static const char EVAL_NOTES[] = JS_PAIRS(
	"r.rendered = document.body.dataset.rendered === 'yes';"
	"r.section = !!document.getElementById('why') && !document.getElementById('why').hidden;"
	"r.notes = q('#why .why-notes li').length;"
	"r.flames = q('#why .fg').length;");

static const char EVAL_BIG[] = JS_PAIRS(
	"const W = JSON.parse(document.getElementById('report-data').textContent).why;"
	"r.rendered = document.body.dataset.rendered === 'yes';"
	"r.sites = W.sites.length;"
	"r.max_stacks = Math.max(...W.sites.map(s => s.cpu.length));"
	"r.min_stacks = Math.min(...W.sites.map(s => s.cpu.length));"
	"r.refs = W.sites.reduce((a, s) => a + s.cpu.reduce((b, c) => b + c[1].length, 0), 0);"
	"r.blocked = Math.max(...W.sites.map(s => s.blocked.length));"
	"r.other_ok = W.sites.every(s => s.cpu.reduce((a, c) => a + c[0], 0) + s.cpu_other === s.samples);"
	"r.flames = q('#why .fg').length;");

/* every site opened: each draws its flame graph */
static const char AFTER_BIG[] = JS_PAIRS(
	"const t0 = performance.now();"
	"q('#why details.why-site').forEach(d => { d.open = true; d.dispatchEvent(new Event('toggle')); });"
	"r.flames = q('#why .fg').length;"
	"r.blocks = q('#why .fg-b').length;"
	"r.ms = Math.round(performance.now() - t0);");

static bool browser_ok(const char *what, int rc, const char *out)
{
	if (rc) {
		printf("# browser.py exited %d: %s\n", rc, out);
		return false;
	}
	CHECK(strstr(out, "\"errors\": []") != NULL, "%s: no console error, exception or CSP violation", what);
	CHECK(strstr(out, "\"requests\": []") != NULL, "%s: no network request", what);
	return true;
}

#define EXPECT(out, which, key, want, ...) do { long g_ = field(out, which, key); \
	if (!CHECK(g_ == (long)(want), __VA_ARGS__)) printf("#   %s: got %ld, want %ld\n", key, g_, (long)(want)); \
	} while (0)

/* the file itself: no raw markup from the frames, no raw U+2028 inside the data element */
static void check_file(const char *path)
{
	FILE *fp = fopen(path, "r");
	static char buf[4 << 20];
	size_t n = fp ? fread(buf, 1, sizeof(buf) - 1, fp) : 0;
	const char *data, *end;

	if (fp)
		fclose(fp);
	buf[n] = 0;
	data = strstr(buf, "<script type=\"application/json\" id=\"report-data\">");
	end = data ? strstr(data, "</script>") : NULL;
	CHECK(n > 0 && !strstr(buf, "<img") && !strstr(buf, "</script><img"),
	      "why.html: the hostile frame is escaped everywhere (no raw <img, no </script><img)");
	CHECK(data && end && !memmem(data, (size_t)(end - data), "\xe2\x80\xa8", 3),
	      "why.html: U+2028 is escaped inside the data element");
	CHECK(data && end && memmem(data, (size_t)(end - data), "\\u2028", 6),
	      "why.html: … as \\u2028");
}

static size_t count_of(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
		n++;
	return n;
}

static long file_size(const char *path)
{
	FILE *fp = fopen(path, "r");
	long n = -1;

	if (fp && !fseek(fp, 0, SEEK_END))
		n = ftell(fp);
	if (fp)
		fclose(fp);
	return n;
}

static int run_big(const char *dir, const char *py, struct report_meta *m)
{
	static char out[1 << 16];
	const struct why_report *why = m->why;
	char page[4096];
	struct big *b = malloc(sizeof(*b));
	int rc = -1;

	snprintf(page, sizeof(page), "%s/why-big.html", dir);
	if (b && !big_fill(b, site_at(10))) {
		m->why = &b->w;
		CHECK(!write_page(page, m), "report_html writes %s (%d sites × %d stacks × %d frames)",
		      page, BIG_SITES, BIG_CPU + BIG_BLOCKED, BIG_DEPTH);
		m->why = why;
		rc = browse(py, page, EVAL_BIG, AFTER_BIG, NULL, out, sizeof(out));
	}
	if (b)
		big_free(b);
	free(b);
	if (!browser_ok("why-big.html", rc, out))
		return 2;
	printf("# why-big.html: %ld bytes; %s\n", file_size(page), out);
	CHECK(file_size(page) < 2 << 20, "why-big.html: under 2 MB");
	EXPECT(out, "eval", "rendered", 1, "why-big.html: the script ran to the end");
	EXPECT(out, "eval", "sites", 30, "why-big.html: the 30 busiest sites");
	EXPECT(out, "eval", "blocked", 10, "why-big.html: the 10 longest blocked stacks per site");
	CHECK(field(out, "eval", "max_stacks") <= 200, "why-big.html: at most 200 stacks a site");
	CHECK(field(out, "eval", "min_stacks") > 0, "why-big.html: stacks for every site (the budget shared)");
	CHECK(field(out, "eval", "refs") <= 150000, "why-big.html: at most 150000 frames in all");
	EXPECT(out, "eval", "other_ok", 1, "why-big.html: listed + cpu_other = the site's samples");
	EXPECT(out, "eval", "flames", 3, "why-big.html: the 3 busiest sites drawn at load");
	EXPECT(out, "eval_after", "flames", 30, "why-big.html: every site drawn when opened");
	CHECK(field(out, "eval_after", "ms") >= 0 && field(out, "eval_after", "ms") < 5000,
	      "why-big.html: drawn in %ld ms", field(out, "eval_after", "ms"));
	return 0;
}

static int run_pages(const char *dir, const char *py, struct report_meta *m,
		     const struct why_report *notes_only)
{
	static char out[1 << 16];
	char page[4096], shot[4096];
	const struct why_report *why = m->why;
	int rc;

	snprintf(page, sizeof(page), "%s/why.html", dir);
	snprintf(shot, sizeof(shot), "%s/why.png", dir);
	CHECK(!write_page(page, m), "report_html writes %s", page);
	check_file(page);
	rc = browse(py, page, EVAL_WHY, AFTER_WHY, shot, out, sizeof(out));
	if (!browser_ok("why.html", rc, out))
		return 2;
	printf("# %s\n", out);
	EXPECT(out, "eval", "rendered", 1, "why.html: the script ran to the end");
	EXPECT(out, "eval", "section", 1, "why.html: the section is shown");
	EXPECT(out, "eval", "nav", 1, "why.html: … and linked from the header");
	EXPECT(out, "eval", "why_second", 1, "why.html: right after the findings");
	EXPECT(out, "eval", "flames", 1, "why.html: one flame graph (site B has no samples)");
	EXPECT(out, "eval", "blocks", flame_blocks(cpu_a, 5, NULL),
	       "why.html: a block per distinct stack prefix + the root");
	EXPECT(out, "eval", "kernel", 1, "why.html: the kernel frame coloured as kernel");
	EXPECT(out, "eval", "own", 3, "why.html: 3 blocks of the program's own code");
	EXPECT(out, "eval", "addr", 1, "why.html: the unsymbolized frame coloured as such");
	EXPECT(out, "eval", "root_full", 1, "why.html: the root spans the width");
	EXPECT(out, "eval", "hostile_text", 1, "why.html: the hostile frame is a block's text");
	EXPECT(out, "eval", "lsep_text", 1, "why.html: the U+2028 frame is a block's text");
	EXPECT(out, "eval", "imgs", 0, "why.html: no <img> was created");
	EXPECT(out, "eval", "blocked_rows", 2, "why.html: site B's 2 blocked stacks in a table");
	EXPECT(out, "eval", "blocked_first", 1, "why.html: longest first, frames joined with ←");
	EXPECT(out, "eval", "notes", 1, "why.html: the note shown");
	EXPECT(out, "eval", "split", 1, "why.html: finding: on CPU · preempted · blocked");
	EXPECT(out, "eval", "doubt", 1, "why.html: finding: a doubtful split says so, once");
	EXPECT(out, "eval", "blocked_line", 1, "why.html: finding: blocked … in clock_nanosleep ← …");
	EXPECT(out, "eval", "hottest", 1, "why.html: finding: hottest frames with shares, as text");
	EXPECT(out, "eval", "data_sites", 2, "DATA: why.sites");
	EXPECT(out, "eval", "data_frames", 13, "DATA: why.frames, each frame once");
	EXPECT(out, "eval", "data_site_key", 1, "DATA: why.sites[].site is the id of DATA's sites");
	EXPECT(out, "eval", "data_root_first", 1, "DATA: CPU stacks root first");
	EXPECT(out, "eval", "data_finding_why", 2, "DATA: findings[].why for both long polls");
	EXPECT(out, "eval", "data_blocked_top", 1, "DATA: findings[].why.blocked_top");
	EXPECT(out, "eval_after", "hover", 1, "why.html: hovering a block says its samples and share");
	EXPECT(out, "eval_after", "tip", 1, "why.html: … in the tooltip too");
	EXPECT(out, "eval_after", "zoomed_blocks", flame_blocks(cpu_a, 5, HARNESS),
	       "why.html: a click zooms into the frame (its ancestors + its subtree)");
	EXPECT(out, "eval_after", "zoomed_anc", 1, "why.html: … the root above it, dimmed");
	EXPECT(out, "eval_after", "zoomed_full", 1, "why.html: … the frame full width");
	EXPECT(out, "eval_after", "out_blocks", flame_blocks(cpu_a, 5, NULL),
	       "why.html: clicking the root zooms back out");

	m->why = NULL;
	snprintf(page, sizeof(page), "%s/why-none.html", dir);
	CHECK(!write_page(page, m), "report_html writes %s (m->why NULL)", page);
	rc = browse(py, page, EVAL_NONE, "null", NULL, out, sizeof(out));
	if (!browser_ok("why-none.html", rc, out))
		return 2;
	EXPECT(out, "eval", "rendered", 1, "why-none.html: the script ran to the end");
	EXPECT(out, "eval", "section", 0, "why-none.html: no section");
	EXPECT(out, "eval", "nav", 0, "why-none.html: no header link");
	EXPECT(out, "eval", "sections", 1, "why-none.html: the sections as before");
	EXPECT(out, "eval", "data_why", 0, "why-none.html: no why in DATA");
	EXPECT(out, "eval", "why_lines", 0, "why-none.html: no why lines under the findings");
	EXPECT(out, "eval", "flight", 0, "why-none.html: not a dump: no banner, line, highlight, flight data");

	if (run_big(dir, py, m))
		return 2;
	m->why = notes_only;
	snprintf(page, sizeof(page), "%s/why-notes.html", dir);
	snprintf(shot, sizeof(shot), "%s/why-notes.png", dir);
	CHECK(!write_page(page, m), "report_html writes %s (notes only)", page);
	rc = browse(py, page, EVAL_NOTES, "null", shot, out, sizeof(out));
	m->why = why;
	if (!browser_ok("why-notes.html", rc, out))
		return 2;
	EXPECT(out, "eval", "rendered", 1, "why-notes.html: the script ran to the end");
	EXPECT(out, "eval", "section", 1, "why-notes.html: the section is shown for its notes");
	EXPECT(out, "eval", "notes", 3, "why-notes.html: why_no_profile, why_no_sched and the note");
	EXPECT(out, "eval", "flames", 0, "why-notes.html: no flame graph");
	return 0;
}

static void check_flight_file(const char *path)
{
	FILE *fp = fopen(path, "r");
	static char buf[4 << 20];
	size_t n = fp ? fread(buf, 1, sizeof(buf) - 1, fp) : 0;

	if (fp)
		fclose(fp);
	buf[n] = 0;
	CHECK(n > 0 && !strstr(buf, "<script>alert") && count_of(buf, "<script") == 2,
	      "flight.html: the hostile detail is no script element (the page's 2 only)");
	CHECK(n > 0 && !memchr(buf, 1, n), "flight.html: no raw \\x01 byte anywhere");
	CHECK(strstr(buf, "<div class=\"flight\" id=\"flight\"><b>Flight-recorder</b> dump 1: trigger long_poll at +0.101s (&lt;script&gt;alert(1)&lt;/script&gt;\\x01 io::fetch)") != NULL,
	      "flight.html: the banner's detail made printable, then HTML-escaped");
	CHECK(strstr(buf, "\"detail\":\"\\u003cscript\\u003ealert(1)\\u003c/script\\u003e\\\\x01 io::fetch\"") != NULL,
	      "flight.html: … and in the data, JSON- and HTML-safe");
}

static int run_flight(const char *dir, const char *py, struct report_meta *m)
{
	static char out[1 << 16];
	struct report_meta fm = *m;
	struct report_flight fl;
	struct report_trigger *tr = &fl.trigger;
	char page[4096], shot[4096];
	int rc;

	memset(&fl, 0, sizeof(fl));
	fl.window_ns = 30000 * MS;
	fl.window_bytes = 64 << 20;
	fl.to_ns = 300 * MS;
	fl.records = 1234;
	fl.bytes = 56832;
	fl.cut_by_memory = true;
	fl.dump_index = 1;
	fl.triggers_suppressed = 3;
	fl.basename = "synthetic-4242-20251130T105320Z-long_poll";
	tr->kind = tr->spec = "long_poll";
	tr->ts = 101 * MS;                /* task 2's long poll began */
	tr->at_ns = 153 * MS;
	tr->pid = PID;
	tr->tid = W0;
	tr->has_task = true;
	tr->task_id = 2;
	tr->header_ptr = 0x1002;
	tr->value_ns = 52 * MS;
	tr->threshold_ns = 10 * MS;
	snprintf(tr->detail, sizeof(tr->detail), "%s", FLIGHT_DETAIL);
	fm.flight = &fl;
	fm.ended_by = "process_crash";
	fm.exit_signal = SIGSEGV;
	fm.exit_core = true;
	fm.exit_status = -1;
	snprintf(page, sizeof(page), "%s/flight.html", dir);
	snprintf(shot, sizeof(shot), "%s/flight.png", dir);
	CHECK(!write_page(page, &fm), "report_html writes %s (a flight-recorder dump)", page);
	check_flight_file(page);
	rc = browse(py, page, EVAL_FLIGHT, AFTER_FLIGHT, shot, out, sizeof(out));
	if (!browser_ok("flight.html", rc, out))
		return 2;
	printf("# %s\n", out);
	EXPECT(out, "eval", "rendered", 1, "flight.html: the script ran to the end");
	EXPECT(out, "eval", "banner", 1, "flight.html: the banner: dump, trigger, moment, detail as text, window");
	EXPECT(out, "eval", "banner_more", 1, "flight.html: … records, memory, cut, suppressed triggers");
	EXPECT(out, "eval", "scripts", 2, "flight.html: no script element from the detail");
	EXPECT(out, "eval", "crash", 1, "flight.html: the process was killed by SIGSEGV (core dumped)");
	EXPECT(out, "eval", "marks", 1, "flight.html: one trigger line over the timeline");
	EXPECT(out, "eval", "mark_shown", 1, "flight.html: … shown");
	EXPECT(out, "eval", "mark_label", 1, "flight.html: … labelled with the trigger's kind");
	EXPECT(out, "eval", "mark_x", 1, "flight.html: … at +101ms on the timeline's scale");
	EXPECT(out, "eval", "mark_height", 1, "flight.html: … across every row");
	EXPECT(out, "eval", "data_at", 1, "DATA: flight.at_ns, task, pid");
	EXPECT(out, "eval", "data_detail", 1, "DATA: flight.detail made printable");
	EXPECT(out, "eval", "data_trigger", 1, "DATA: findings[].trigger true for task 2's long poll only");
	EXPECT(out, "eval", "data_false", 1, "DATA: … false for the other");
	EXPECT(out, "eval", "first_row", 1, "flight.html: the trigger's task on the first timeline row");
	EXPECT(out, "eval", "li", 1, "flight.html: one finding highlighted");
	EXPECT(out, "eval", "li_site", 1, "flight.html: … site B's, saying its task fired the dump");
	EXPECT(out, "eval", "task_rows", 1, "flight.html: the trigger's task highlighted in the tasks table");
	EXPECT(out, "eval", "imgs", 0, "flight.html: no <img>");
	EXPECT(out, "eval_after", "tip", 1, "flight.html: hovering the line says the trigger and its detail, as text");
	EXPECT(out, "eval_after", "zoom_x", 1, "flight.html: zoomed in, the line moves with the scale");
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/tmp/html-why";
	const char *py = argc > 2 ? argv[2] : "tests/browser.py";
	struct why_report why, notes_only;
	struct why_site sites[2];
	struct why_finding wf[16];
	struct report_meta m;
	struct an_opts o;
	int rc;

	an_opts_default(&o);
	o.timeline_cap = 1000;
	A = an_new(&o);
	if (!A)
		return 2;
	task(1 * MS, 1, "src/work.rs", 10, "work::crunch", 60);
	task(100 * MS, 2, "src/io.rs", 20, "io::fetch", 52);
	an_finish(A, 300 * MS);
	CHECK(site_at(10) && site_at(20), "two spawn sites");
	CHECK(an_findings(A, &(const struct an_finding *){ NULL }) == 2, "two long polls");
	if (an_findings(A, &(const struct an_finding *){ NULL }) > 16)
		return 2;
	why_fill(&why, sites, wf);

	memset(&notes_only, 0, sizeof(notes_only));
	notes_only.why_no_profile = "perf_event_open: Permission denied (perf_event_paranoid 3)";
	notes_only.why_no_sched = "no BTF-enabled sched_switch tracepoint";
	notes_only.notes[notes_only.nnotes++] = "/synthetic: stripped, frames named by address";

	memset(&m, 0, sizeof(m));
	m.mode = "usdt";
	m.capture = "per-event";
	m.sample_rate = 1;
	m.pid = PID;
	m.executable = "/synthetic";
	m.probes = (1u << TET_EV_COUNT) - 1;
	m.start_ns = 0;
	m.end_ns = 300 * MS;
	m.wall_start.tv_sec = 1764500000;
	m.ended_by = "duration";
	m.counters_valid = true;
	m.top = 5;
	m.why = &why;
	rc = run_pages(dir, py, &m, &notes_only);
	if (!rc)
		rc = run_flight(dir, py, &m);
	an_free(A);
	printf("# %d checks, %d failed\n", run, failed);
	return rc ? rc : failed ? 1 : 0;
}
