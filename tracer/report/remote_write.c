// SPDX-License-Identifier: MIT
/*
 * remote_write.c — --remote-write URL: the figures /metrics serves, pushed as Prometheus remote
 * write 1.0 (docs/reports.md) to Prometheus (--web.enable-remote-write-receiver), Mimir,
 * Thanos, Cortex, VictoriaMetrics.
 *
 * One list of figures: prom.c renders the exposition text (its own site labels, kept from one
 * push to the next as the server keeps them; --mode sampling gives sampling_prom.c's text,
 * rw_push_text), and this file turns each line of it into a
 * series: `__name__`, the line's labels, then the run's labels (host, pid, executable,
 * tokio_release, mode, capture; a line's own label of the same name wins), sorted by name.
 *
 * Wire format: a WriteRequest (Prometheus' prompb/remote.proto and types.proto: WriteRequest
 * { repeated TimeSeries timeseries = 1 }, TimeSeries { repeated Label labels = 1; repeated Sample
 * samples = 2 }, Label { string name = 1; string value = 2 }, Sample { double value = 1; int64
 * timestamp = 2 }), encoded here: four write-only messages, six fields, need no generated code;
 * the receiver's decoder is the check (tests/t_remote_write.sh). Then snappy's block format
 * (libsnappy), POSTed with libcurl (https, proxies, a threaded resolver: every step has a
 * timeout).
 *
 * Threads: the main thread (the ring's drain) renders the text once an interval and queues it
 * with its timestamp — it never waits for the network. A sender thread encodes, compresses and
 * posts each, oldest first. The queue holds RW_QUEUE_MAX pushes: when it is full the oldest
 * queued one is dropped (its samples counted). A connection error, a timeout, a 5xx or a 429 is
 * retried with exponential backoff (RW_BACKOFF_MIN_MS doubling to RW_BACKOFF_MAX_MS) until it
 * goes through or the run ends; any other status (4xx: the receiver refuses the data as it is)
 * is not retried: counted, its samples dropped, said once. Each request has a connect timeout
 * (RW_CONNECT_MS) and a total one (RW_REQUEST_MS). At the end the final figures are queued and
 * the main thread waits for the queue to empty, at most RW_FINAL_WAIT_NS: a push in backoff is
 * tried again at once; if an attempt fails then, the older pushes give way to the final one
 * (dropped, counted at exit), which is retried with waits capped by the time left. When the
 * wait runs out a transfer in progress is aborted (libcurl's progress callback) and what is
 * left is counted as dropped at exit. The sender never prints holding the mutex (the drain
 * takes it each tick).
 *
 * Header values (--remote-write-header, for auth) and the URL's credentials and query are never
 * printed: messages show scheme://host:port/path.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <snappy-c.h>

#include "reporters.h"
#include "seterr.h"
#include "text.h"
#include "units.h"

#define RW_QUEUE_MAX       32
#define RW_CONNECT_MS      2000
#define RW_REQUEST_MS      10000
#define RW_BACKOFF_MIN_MS  200
#define RW_BACKOFF_MAX_MS  5000
#define RW_LABELS_MAX      32
#define RW_BODY_KEEP       160

/* Headers the tracer sets itself: --remote-write-header cannot replace them. */
static const char *const own_headers[] = {
	"content-encoding", "content-type", "content-length", "x-prometheus-remote-write-version",
	"host", "transfer-encoding", "expect",
};

struct rw_item {
	char *text;                 /* the exposition text */
	size_t len;
	int64_t ts_ms;
	uint64_t samples;
};

struct rw {
	pthread_t thread;
	bool running;
	pthread_mutex_t mu;
	pthread_cond_t cv;          /* to the sender: queued, finishing, abort */
	pthread_cond_t idle_cv;     /* to the main thread: the sender holds nothing */
	struct rw_item q[RW_QUEUE_MAX];
	size_t qhead, qn;
	bool busy, finishing, stop;
	bool superseded;            /* finishing: a push gave way to the final one */
	int abort;                  /* read by libcurl's progress callback (atomic) */
	uint64_t deadline;          /* finishing: CLOCK_MONOTONIC */
	struct rw_stats st;
	bool warned_conn, warned_server, warned_client, warned_queue;
	uint64_t failing;           /* failed attempts since the last delivery */
	const struct tet_msgs *msgs;
	char shown[600];            /* the URL as messages show it */
	/* main thread */
	struct prom_labels *labels;
	char *extra;                /* the run's labels, as text-format label pairs */
	int64_t last_ts;
	char *tokio_release;
	/* sender thread */
	CURL *h;
	struct curl_slist *hdrs;
	char curl_err[CURL_ERROR_SIZE];
	char resp[RW_BODY_KEEP + 1];
	size_t resp_n;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static struct timespec abs_mono(uint64_t ns)
{
	return (struct timespec){ (time_t)(ns / NSEC_PER_SEC), (long)(ns % NSEC_PER_SEC) };
}

/* ---- options ---- */
/* The URL's parts; url_shown: scheme://host[:port]/path (no credentials, no query). */
static int url_parts(const char *url, char *host, size_t hlen, char *shown, size_t slen,
		     char *err, size_t len)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *h = NULL, *port = NULL, *path = NULL;
	const char *sep;
	CURLUcode rc;
	int ret = -EINVAL;

	if (!u) {
		seterr(err, len, "--remote-write: out of memory");
		return -ENOMEM;
	}
	rc = curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME);
	if (rc) {
		seterr(err, len, "--remote-write: not a URL (%s): expected http://HOST[:PORT]/PATH or https://…",
		       curl_url_strerror(rc));
		goto out;
	}
	if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
	    (strcasecmp(scheme, "http") && strcasecmp(scheme, "https"))) {
		seterr(err, len, "--remote-write: the scheme must be http or https, not '%.20s'",
		       scheme ? scheme : "");
		goto out;
	}
	sep = strstr(url, "://"); /* libcurl reads "http:///x" as host "x": not here */
	if (curl_url_get(u, CURLUPART_HOST, &h, 0) || !*h || !sep || sep[3] == '/') {
		seterr(err, len, "--remote-write: the URL has no host");
		goto out;
	}
	curl_url_get(u, CURLUPART_PORT, &port, 0);
	curl_url_get(u, CURLUPART_PATH, &path, 0);
	if (host) {
		size_t n = strlen(h);

		if (n > 1 && h[0] == '[' && h[n - 1] == ']') /* an IPv6 address */
			snprintf(host, hlen, "%.*s", (int)(n - 2), h + 1);
		else
			snprintf(host, hlen, "%s", h);
	}
	if (shown)
		snprintf(shown, slen, "%s://%s%s%s%s", scheme, h, port ? ":" : "", port ? port : "",
			 path ? path : "/");
	ret = 0;
out:
	curl_free(scheme);
	curl_free(h);
	curl_free(port);
	curl_free(path);
	curl_url_cleanup(u);
	return ret;
}

int rw_url_check(const char *url, char *err, size_t len)
{
	return url_parts(url, NULL, 0, NULL, 0, err, len);
}

int rw_header_check(const char *hd, char *err, size_t len)
{
	static const char tchar[] = "!#$%&'*+-.^_`|~";
	size_t n = 0;

	while (hd[n] && hd[n] != ':' &&
	       ((hd[n] >= '0' && hd[n] <= '9') || (hd[n] >= 'a' && hd[n] <= 'z') ||
		(hd[n] >= 'A' && hd[n] <= 'Z') || strchr(tchar, hd[n])))
		n++;
	if (!n || hd[n] != ':' || n > 64) {
		seterr(err, len, "--remote-write-header: expected 'Name: value' (a header name of letters, digits and !#$%%&'*+-.^_`|~, then a colon)");
		return -EINVAL;
	}
	if (strpbrk(hd + n + 1, "\r\n")) {
		seterr(err, len, "--remote-write-header '%.*s: …': the value holds a line break", (int)n, hd);
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(own_headers) / sizeof(own_headers[0]); i++)
		if (strlen(own_headers[i]) == n && !strncasecmp(hd, own_headers[i], n)) {
			seterr(err, len, "--remote-write-header '%.*s: …': the tracer sets this header itself",
			       (int)n, hd);
			return -EINVAL;
		}
	return 0;
}

/* ---- the WriteRequest ---- */
struct pb {
	unsigned char *p;
	size_t n, cap;
	bool oom;
};

static void pb_put(struct pb *b, const void *src, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		unsigned char *p;

		while (cap < b->n + n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, src, n);
	b->n += n;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	unsigned char buf[10];
	size_t n = 0;

	while (v >= 0x80) {
		buf[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	buf[n++] = (unsigned char)v;
	pb_put(b, buf, n);
}

/* field `f`, wire type 2 (length-delimited), then the length */
static void pb_len(struct pb *b, unsigned f, size_t len)
{
	pb_varint(b, (uint64_t)f << 3 | 2);
	pb_varint(b, len);
}

struct lab {
	const char *n, *v;
	size_t nl, vl;
};

static size_t lab_size(const struct lab *l)
{
	return 1 + varint_len(l->nl) + l->nl + 1 + varint_len(l->vl) + l->vl;
}

static int lab_cmp(const void *x, const void *y)
{
	const struct lab *a = x, *b = y;
	size_t n = a->nl < b->nl ? a->nl : b->nl;
	int c = memcmp(a->n, b->n, n);

	return c ? c : (a->nl > b->nl) - (a->nl < b->nl);
}

/* One TimeSeries: its labels (sorted here) and one sample. */
static void pb_series(struct pb *b, struct lab *l, size_t nl, double value, int64_t ts_ms)
{
	size_t sample = 1 + 8 + 1 + varint_len((uint64_t)ts_ms), size = 0;
	unsigned char fixed[8];
	uint64_t bits;

	qsort(l, nl, sizeof(*l), lab_cmp);
	for (size_t i = 0; i < nl; i++)
		size += 1 + varint_len(lab_size(&l[i])) + lab_size(&l[i]);
	size += 1 + varint_len(sample) + sample;
	pb_len(b, 1, size); /* WriteRequest.timeseries */
	for (size_t i = 0; i < nl; i++) {
		pb_len(b, 1, lab_size(&l[i])); /* TimeSeries.labels */
		pb_len(b, 1, l[i].nl);
		pb_put(b, l[i].n, l[i].nl);
		pb_len(b, 2, l[i].vl);
		pb_put(b, l[i].v, l[i].vl);
	}
	pb_len(b, 2, sample); /* TimeSeries.samples */
	pb_varint(b, 1 << 3 | 1); /* Sample.value: fixed64, little endian */
	memcpy(&bits, &value, sizeof(bits));
	for (int i = 0; i < 8; i++)
		fixed[i] = (unsigned char)(bits >> (8 * i));
	pb_put(b, fixed, 8);
	pb_varint(b, 2 << 3 | 0); /* Sample.timestamp */
	pb_varint(b, (uint64_t)ts_ms);
}

/* ---- the exposition text ---- */
static bool name_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
	       (!first && c >= '0' && c <= '9');
}

/* Label pairs `a="x",b="y"` from p up to end (or a closing '}'), values unescaped into *sp.
 * Returns where it stopped, or NULL when malformed. */
static const char *parse_pairs(const char *p, const char *end, struct lab *l, size_t *nl,
			       char **sp)
{
	while (p < end && *p != '}') {
		struct lab *x = &l[*nl];

		if (*nl == RW_LABELS_MAX || !name_char(*p, true))
			return NULL;
		x->n = p;
		while (p < end && name_char(*p, false))
			p++;
		x->nl = (size_t)(p - x->n);
		if (end - p < 2 || p[0] != '=' || p[1] != '"')
			return NULL;
		p += 2;
		x->v = *sp;
		while (p < end && *p != '"') {
			if (*p == '\\' && p + 1 < end) {
				p++;
				*(*sp)++ = *p == 'n' ? '\n' : *p;
				p++;
			} else {
				*(*sp)++ = *p++;
			}
		}
		if (p == end)
			return NULL;
		x->vl = (size_t)(*sp - x->v);
		p++;
		(*nl)++;
		if (p < end && *p == ',')
			p++;
	}
	return p;
}

/* One sample line of the text into a series of the request. Returns false: not a sample. */
static bool line_series(struct pb *b, const char *p, const char *end, const struct lab *extra,
			size_t nextra, char *scratch, int64_t ts_ms)
{
	struct lab l[RW_LABELS_MAX + 1];
	size_t nl = 1, nown;
	char num[64], *ep, *sp = scratch;
	const char *v;
	double value;

	l[0].n = "__name__";
	l[0].nl = 8;
	l[0].v = p;
	while (p < end && name_char(*p, p == l[0].v))
		p++;
	l[0].vl = (size_t)(p - l[0].v);
	if (!l[0].vl)
		return false;
	if (p < end && *p == '{') {
		size_t np = 0;

		p = parse_pairs(p + 1, end, l + 1, &np, &sp);
		if (!p || p == end)
			return false;
		for (size_t i = 1; i <= np; i++) /* an empty value is no label */
			if (l[i].vl)
				l[nl++] = l[i];
		p++;
	}
	while (p < end && *p == ' ')
		p++;
	v = p;
	while (p < end && *p != ' ')
		p++;
	if (p == v || (size_t)(p - v) >= sizeof(num))
		return false;
	memcpy(num, v, (size_t)(p - v));
	num[p - v] = 0;
	value = strtod(num, &ep);
	if (*ep)
		return false;
	nown = nl;
	for (size_t i = 0; i < nextra && nl <= RW_LABELS_MAX; i++) {
		bool dup = false;

		for (size_t k = 0; k < nown && !dup; k++)
			dup = l[k].nl == extra[i].nl && !memcmp(l[k].n, extra[i].n, l[k].nl);
		if (!dup && extra[i].vl)
			l[nl++] = extra[i];
	}
	pb_series(b, l, nl, value, ts_ms);
	return true;
}

int rw_encode(const char *text, size_t len, const char *extra_pairs, int64_t ts_ms, char **out,
	      size_t *outlen, uint64_t *series)
{
	struct lab extra[RW_LABELS_MAX];
	size_t nextra = 0, max, elen = strlen(extra_pairs);
	char *scratch = malloc(len + elen + 2), *sp, *c;
	struct pb b = { 0 };
	const char *p = text, *end = text + len;

	*series = 0;
	if (!scratch)
		return -ENOMEM;
	sp = scratch;
	if (!parse_pairs(extra_pairs, extra_pairs + elen, extra, &nextra, &sp))
		nextra = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl)
			nl = end;
		if (*p != '#' && line_series(&b, p, nl, extra, nextra, sp, ts_ms))
			(*series)++;
		p = nl + 1;
	}
	free(scratch);
	if (b.oom) {
		free(b.p);
		return -ENOMEM;
	}
	max = snappy_max_compressed_length(b.n);
	c = malloc(max ? max : 1);
	if (!c || snappy_compress((const char *)b.p, b.n, c, &max) != SNAPPY_OK) {
		free(c);
		free(b.p);
		return -ENOMEM;
	}
	free(b.p);
	*out = c;
	*outlen = max;
	return 0;
}

/* ---- HTTP ---- */
enum { SENT_OK, SENT_RETRY_CONN, SENT_RETRY_SERVER, SENT_REFUSED, SENT_ABORTED };

static size_t keep_body(char *ptr, size_t size, size_t n, void *ctx)
{
	struct rw *w = ctx;
	size_t k = size * n;

	if (w->resp_n < RW_BODY_KEEP) {
		size_t take = RW_BODY_KEEP - w->resp_n < k ? RW_BODY_KEEP - w->resp_n : k;

		memcpy(w->resp + w->resp_n, ptr, take);
		w->resp_n += take;
	}
	return k;
}

static int on_progress(void *ctx, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	struct rw *w = ctx;

	(void)a, (void)b, (void)c, (void)d;
	return __atomic_load_n(&w->abort, __ATOMIC_RELAXED) ? 1 : 0;
}

static int post(struct rw *w, const char *body, size_t len, long *status)
{
	long req = RW_REQUEST_MS, conn = RW_CONNECT_MS;
	CURLcode rc;

	pthread_mutex_lock(&w->mu);
	if (w->finishing) { /* within the final wait */
		uint64_t now = mono_ns();
		long left = w->deadline > now ? (long)((w->deadline - now) / NSEC_PER_MSEC) : 0;

		left = left < 1 ? 1 : left;
		req = left < req ? left : req;
		conn = left < conn ? left : conn;
	}
	pthread_mutex_unlock(&w->mu);
	*status = 0;
	w->resp_n = 0;
	w->curl_err[0] = 0;
	curl_easy_setopt(w->h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(w->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(w->h, CURLOPT_CONNECTTIMEOUT_MS, conn);
	curl_easy_setopt(w->h, CURLOPT_TIMEOUT_MS, req);
	rc = curl_easy_perform(w->h);
	w->resp[w->resp_n] = 0;
	if (rc == CURLE_ABORTED_BY_CALLBACK)
		return SENT_ABORTED;
	if (rc != CURLE_OK) {
		if (!w->curl_err[0])
			snprintf(w->curl_err, sizeof(w->curl_err), "%s", curl_easy_strerror(rc));
		return SENT_RETRY_CONN;
	}
	curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, status);
	if (*status >= 200 && *status < 300)
		return SENT_OK;
	if (*status >= 500 || *status == 429)
		return SENT_RETRY_SERVER;
	return SENT_REFUSED;
}

/* The receiver's answer in a message: its first line, printable, bounded. */
static const char *answer_text(struct rw *w, char *buf, size_t len)
{
	size_t n = strcspn(w->resp, "\r\n");

	return text_sanitize(w->resp, n, 100, buf, len);
}

/* What one attempt came to, counted (under the mutex). A message to say goes to msg (level in
 * *lvl; "" for none), said by the caller once it has let go of the mutex: the drain takes the
 * mutex each tick (rw_push, rw_get_stats), and a stalled stderr must not stall it. Returns
 * true: done with the push. */
static bool account(struct rw *w, const struct rw_item *it, int res, long status, char *msg,
		    size_t mlen, enum tet_msg_level *lvl)
{
	char ans[512];

	msg[0] = 0;
	*lvl = TET_MSG_WARN;
	w->st.last_status = (int)status;
	switch (res) {
	case SENT_OK:
		w->st.pushes++;
		w->st.samples += it->samples;
		if (w->failing) {
			*lvl = TET_MSG_INFO;
			snprintf(msg, mlen, "remote write to %s: delivered again, after %llu failed attempt%s",
				 w->shown, (unsigned long long)w->failing, w->failing == 1 ? "" : "s");
		}
		w->failing = 0;
		return true;
	case SENT_REFUSED:
		w->st.fail_client++;
		w->st.dropped_rejected += it->samples;
		if (!w->warned_client)
			snprintf(msg, mlen, "remote write to %s: HTTP %ld (%s): not retried, its samples are dropped; later refusals are only counted",
				 w->shown, status, answer_text(w, ans, sizeof(ans)));
		w->warned_client = true;
		return true;
	case SENT_ABORTED:
		w->st.dropped_exit += it->samples;
		return true;
	case SENT_RETRY_CONN:
		w->st.fail_connection++;
		w->failing++;
		if (!w->warned_conn)
			snprintf(msg, mlen, "remote write to %s: %s; retrying with backoff (failures are counted)",
				 w->shown, w->curl_err);
		w->warned_conn = true;
		return false;
	default:
		w->st.fail_server++;
		w->failing++;
		if (!w->warned_server)
			snprintf(msg, mlen, "remote write to %s: HTTP %ld (%s); retrying with backoff (failures are counted)",
				 w->shown, status, answer_text(w, ans, sizeof(ans)));
		w->warned_server = true;
		return false;
	}
}

/* The wait before the next attempt, while finishing: at most half the time left (at least
 * RW_BACKOFF_MIN_MS), so that attempts go on until the final wait runs out. */
static uint64_t finishing_cap(const struct rw *w, uint64_t now, uint64_t until)
{
	uint64_t left = w->deadline > now ? w->deadline - now : 0, cap = left / 2;

	if (cap < RW_BACKOFF_MIN_MS * NSEC_PER_MSEC)
		cap = RW_BACKOFF_MIN_MS * NSEC_PER_MSEC;
	return until - now > cap ? now + cap : until;
}

/* Sends one push until it is delivered, refused, or the run's end gives up on it. At the end
 * (finishing) the backoff is cut: one attempt at once, then waits capped by the time left; and
 * a push that fails then while a newer one is queued (the final figures) gives way to it,
 * dropped and counted at exit (a receiver takes no sample older than one it holds). */
static void deliver(struct rw *w, struct rw_item *it)
{
	uint64_t backoff = RW_BACKOFF_MIN_MS * NSEC_PER_MSEC;
	char *body = NULL, msg[TET_MSG_MAX];
	enum tet_msg_level lvl;
	size_t len = 0;
	uint64_t series;
	bool done = false;

	if (rw_encode(it->text, it->len, w->extra, it->ts_ms, &body, &len, &series)) {
		pthread_mutex_lock(&w->mu);
		w->st.dropped_queue += it->samples; /* out of memory: as if the queue had no room */
		pthread_mutex_unlock(&w->mu);
		return;
	}
	while (!done) {
		long status;
		int res = post(w, body, len, &status);

		pthread_mutex_lock(&w->mu);
		done = account(w, it, res, status, msg, sizeof(msg), &lvl);
		if (!done && w->finishing && w->qn) { /* superseded by the final push */
			w->st.dropped_exit += it->samples;
			w->superseded = true;
			done = true;
		} else if (!done) { /* wait out the backoff; the end cuts it short */
			bool fin = w->finishing;
			uint64_t now = mono_ns(), until = now + backoff;

			if (fin)
				until = finishing_cap(w, now, until);
			while (!w->abort && !(w->finishing && !fin) && mono_ns() < until) {
				struct timespec ts = abs_mono(until);

				pthread_cond_timedwait(&w->cv, &w->mu, &ts);
			}
			if (w->abort) {
				w->st.dropped_exit += it->samples;
				done = true;
			} else {
				w->st.retries++;
			}
			backoff = backoff * 2 > RW_BACKOFF_MAX_MS * NSEC_PER_MSEC ?
				  RW_BACKOFF_MAX_MS * NSEC_PER_MSEC : backoff * 2;
		}
		pthread_mutex_unlock(&w->mu);
		if (msg[0])
			tet_say(w->msgs, lvl, "%s", msg);
	}
	free(body);
}

static void *sender(void *p)
{
	struct rw *w = p;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct rw_item it;

		while (!w->qn && !w->finishing && !w->stop)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->abort) { /* the end: what is queued is not sent */
			for (; w->qn; w->qn--, w->qhead = (w->qhead + 1) % RW_QUEUE_MAX) {
				w->st.dropped_exit += w->q[w->qhead].samples;
				free(w->q[w->qhead].text);
			}
		}
		/* the end, after a push gave way to the final one: the older ones queued do too */
		for (; w->superseded && w->qn > 1; w->qn--, w->qhead = (w->qhead + 1) % RW_QUEUE_MAX) {
			w->st.dropped_exit += w->q[w->qhead].samples;
			free(w->q[w->qhead].text);
		}
		if (!w->qn)
			break;
		it = w->q[w->qhead];
		w->qhead = (w->qhead + 1) % RW_QUEUE_MAX;
		w->qn--;
		w->busy = true;
		pthread_mutex_unlock(&w->mu);
		deliver(w, &it);
		free(it.text);
		pthread_mutex_lock(&w->mu);
		w->busy = false;
		pthread_cond_broadcast(&w->idle_cv);
	}
	w->busy = false;
	pthread_cond_broadcast(&w->idle_cv);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* ---- the run's side ---- */
static int curl_setup(struct rw *w, const struct rw_opts *o, char *err, size_t len)
{
	static const char *const fixed[] = {
		"Content-Encoding: snappy", "Content-Type: application/x-protobuf",
		"X-Prometheus-Remote-Write-Version: 0.1.0", "Expect:",
	};
	static bool global;
	struct curl_slist *l;

	if (!global && curl_global_init(CURL_GLOBAL_DEFAULT)) {
		seterr(err, len, "--remote-write: libcurl could not be initialised");
		return -ENOMEM;
	}
	global = true;
	w->h = curl_easy_init();
	if (!w->h)
		goto oom;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		if (!(l = curl_slist_append(w->hdrs, fixed[i])))
			goto oom;
		w->hdrs = l;
	}
	for (size_t i = 0; i < o->nheaders; i++) {
		if (!(l = curl_slist_append(w->hdrs, o->headers[i])))
			goto oom;
		w->hdrs = l;
	}
	if (curl_easy_setopt(w->h, CURLOPT_URL, o->url) ||
	    curl_easy_setopt(w->h, CURLOPT_PROTOCOLS_STR, "http,https") ||
	    curl_easy_setopt(w->h, CURLOPT_NOSIGNAL, 1L) ||
	    curl_easy_setopt(w->h, CURLOPT_HTTPHEADER, w->hdrs) ||
	    curl_easy_setopt(w->h, CURLOPT_USERAGENT, "tokio-ebpf-trace") ||
	    curl_easy_setopt(w->h, CURLOPT_WRITEFUNCTION, keep_body) ||
	    curl_easy_setopt(w->h, CURLOPT_WRITEDATA, w) ||
	    curl_easy_setopt(w->h, CURLOPT_NOPROGRESS, 0L) ||
	    curl_easy_setopt(w->h, CURLOPT_XFERINFOFUNCTION, on_progress) ||
	    curl_easy_setopt(w->h, CURLOPT_XFERINFODATA, w) ||
	    curl_easy_setopt(w->h, CURLOPT_ERRORBUFFER, w->curl_err)) {
		seterr(err, len, "--remote-write %s: libcurl refused an option", w->shown);
		return -EINVAL;
	}
	return 0;
oom:
	seterr(err, len, "--remote-write: out of memory");
	return -ENOMEM;
}

int rw_start(struct rw **out, const struct rw_opts *o, const struct tet_msgs *msgs, char *err,
	     size_t len)
{
	struct addrinfo hints = { 0 }, *res = NULL;
	char host[256];
	pthread_condattr_t ca;
	struct rw *w;
	int ret, rc;

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w) {
		seterr(err, len, "--remote-write: out of memory");
		return -ENOMEM;
	}
	ret = url_parts(o->url, host, sizeof(host), w->shown, sizeof(w->shown), err, len);
	if (ret) {
		free(w);
		return ret;
	}
	/* before anything is attached: a host that does not resolve is an error now */
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc) {
		seterr(err, len, "--remote-write %s: cannot resolve '%s': %s", w->shown, host,
		       gai_strerror(rc));
		free(w);
		return -EADDRNOTAVAIL;
	}
	freeaddrinfo(res);
	w->msgs = msgs;
	w->st.url = w->shown;
	w->st.interval_ns = o->interval_ns;
	w->st.queue_max = RW_QUEUE_MAX;
	w->labels = prom_labels_new(o->max_sites);
	w->tokio_release = o->tokio_release ? strdup(o->tokio_release) : NULL;
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_cond_init(&w->idle_cv, &ca);
	pthread_condattr_destroy(&ca);
	*out = w;
	if (!w->labels || (o->tokio_release && !w->tokio_release)) {
		seterr(err, len, "--remote-write: out of memory");
		return -ENOMEM;
	}
	ret = curl_setup(w, o, err, len);
	if (ret)
		return ret;
	rc = pthread_create(&w->thread, NULL, sender, w);
	if (rc) {
		seterr(err, len, "--remote-write: cannot start the sender thread: %s", strerror(rc));
		return -rc;
	}
	w->running = true;
	return 0;
}

/* The run's labels as text-format pairs (prom.c escapes the values). */
static int build_extra(struct rw *w, const struct report_meta *m)
{
	const char *exe = m->executable ? m->executable : m->binary ? m->binary : "";
	char hostname[256] = "", pid[16] = "";
	char *v[6] = { 0 };
	const char *names[6] = { "host", "pid", "executable", "tokio_release", "mode", "capture" };
	const char *raw[6];
	size_t total = 1;
	int ret = 0;

	if (gethostname(hostname, sizeof(hostname) - 1))
		hostname[0] = 0;
	if (m->pid)
		snprintf(pid, sizeof(pid), "%d", m->pid);
	raw[0] = hostname;
	raw[1] = pid;
	raw[2] = exe;
	raw[3] = w->tokio_release ? w->tokio_release : "";
	raw[4] = m->mode ? m->mode : "";
	raw[5] = m->capture ? m->capture : "";
	for (int i = 0; i < 6; i++) {
		v[i] = prom_label_value(raw[i], strlen(raw[i]));
		if (!v[i])
			ret = -ENOMEM;
		else
			total += strlen(names[i]) + strlen(v[i]) + 4;
	}
	if (!ret && (w->extra = malloc(total))) {
		size_t n = 0;

		w->extra[0] = 0;
		for (int i = 0; i < 6; i++)
			if (*v[i]) /* empty: no such label */
				n += (size_t)snprintf(w->extra + n, total - n, "%s%s=\"%s\"", n ? "," : "",
						      names[i], v[i]);
	} else {
		ret = -ENOMEM;
	}
	for (int i = 0; i < 6; i++)
		free(v[i]);
	return ret;
}

int rw_push_text(struct rw *w, char *text, size_t len, const struct report_meta *m)
{
	struct rw_item it = { .text = text, .len = len };
	struct timespec now;
	bool warn = false;

	if (!w || !w->running || (!w->extra && build_extra(w, m))) {
		free(text);
		return w && w->running ? -ENOMEM : -EINVAL;
	}
	for (const char *p = it.text, *e = it.text + it.len; p < e;) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));

		it.samples += *p != '#' && *p != '\n';
		p = nl ? nl + 1 : e;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	it.ts_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	if (it.ts_ms <= w->last_ts) /* one sample per series and millisecond */
		it.ts_ms = w->last_ts + 1;
	w->last_ts = it.ts_ms;
	pthread_mutex_lock(&w->mu);
	if (w->qn == RW_QUEUE_MAX) {
		struct rw_item *old = &w->q[w->qhead];

		w->st.dropped_queue += old->samples;
		free(old->text);
		w->qhead = (w->qhead + 1) % RW_QUEUE_MAX;
		w->qn--;
		warn = !w->warned_queue;
		w->warned_queue = true;
	}
	w->q[(w->qhead + w->qn) % RW_QUEUE_MAX] = it;
	w->qn++;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	if (warn)
		tet_say(w->msgs, TET_MSG_WARN, "remote write to %s: %d pushes queued: the oldest are dropped (counted)",
			w->shown, RW_QUEUE_MAX);
	return 0;
}

int rw_push(struct rw *w, const struct analyzer *a, const struct report_meta *m)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int ret;

	if (!w || !w->running)
		return -EINVAL;
	f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	ret = prom_render_labels(f, a, m, w->labels);
	if (fclose(f) && !ret)
		ret = -EIO;
	if (ret) {
		free(text);
		return ret;
	}
	return rw_push_text(w, text, len, m);
}

void rw_finish(struct rw *w, uint64_t wait_ns)
{
	if (!w || !w->running)
		return;
	pthread_mutex_lock(&w->mu);
	w->finishing = true;
	w->deadline = mono_ns() + wait_ns;
	pthread_cond_broadcast(&w->cv);
	while ((w->qn || w->busy) && mono_ns() < w->deadline) {
		struct timespec ts = abs_mono(w->deadline);

		pthread_cond_timedwait(&w->idle_cv, &w->mu, &ts);
	}
	if (w->qn || w->busy) {
		__atomic_store_n(&w->abort, 1, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	w->running = false;
}

void rw_get_stats(struct rw *w, struct rw_stats *st)
{
	pthread_mutex_lock(&w->mu);
	*st = w->st;
	pthread_mutex_unlock(&w->mu);
}

void rw_stop(struct rw *w)
{
	if (!w)
		return;
	if (w->running) {
		pthread_mutex_lock(&w->mu);
		w->stop = true;
		__atomic_store_n(&w->abort, 1, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&w->cv);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->thread, NULL);
	}
	for (; w->qn; w->qn--, w->qhead = (w->qhead + 1) % RW_QUEUE_MAX)
		free(w->q[w->qhead].text);
	if (w->h)
		curl_easy_cleanup(w->h);
	curl_slist_free_all(w->hdrs);
	prom_labels_free(w->labels);
	pthread_cond_destroy(&w->cv);
	pthread_cond_destroy(&w->idle_cv);
	pthread_mutex_destroy(&w->mu);
	free(w->extra);
	free(w->tokio_release);
	free(w);
}
