// SPDX-License-Identifier: MIT
/*
 * json.c — streaming JSON writer (API in json.h).
 *
 * The writer keeps a stack of open containers and, per level, whether a value was already
 * written (comma needed) and, in objects, whether a key is waiting for its value. Misuse
 * (value without key inside an object, key outside an object, unbalanced end, a second
 * top-level value) sets a sticky error that jw_finish() reports as -EIO, the same way a
 * failed write does: callers check one return value.
 *
 * Strings: JSON escapes plus HTML-safe escapes ('<' '>' '&' U+2028 U+2029 as \uXXXX), so a
 * document can be embedded in <script>. Invalid UTF-8 is replaced by U+FFFD, one per
 * "maximal subpart" of an ill-formed sequence (Unicode 15, §3.9, Table 3-8 practice), so a
 * truncated 3-byte sequence gives one U+FFFD, not three.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

#define JW_MAX_DEPTH 256

struct jw_level {
	bool is_obj;
	bool has_items;
	bool key_pending;
};

struct jw {
	FILE *out;
	bool pretty;
	bool error;
	bool top_done;  /* a complete top-level value was written */
	int depth;
	struct jw_level lv[JW_MAX_DEPTH];
};

struct jw *jw_new(FILE *out, bool pretty)
{
	struct jw *w;

	if (!out)
		return NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->out = out;
	w->pretty = pretty;
	return w;
}

static void put(struct jw *w, const char *s, size_t n)
{
	if (n && fwrite(s, 1, n, w->out) != n)
		w->error = true;
}

static void puts_(struct jw *w, const char *s)
{
	put(w, s, strlen(s));
}

static void newline_indent(struct jw *w)
{
	int i;

	if (!w->pretty)
		return;
	put(w, "\n", 1);
	for (i = 0; i < w->depth; i++)
		put(w, "  ", 2);
}

/* Called before every value (scalar or container start). */
static bool before_value(struct jw *w)
{
	struct jw_level *l;

	if (w->error)
		return false;
	if (w->depth == 0) {
		if (w->top_done) {
			w->error = true;
			return false;
		}
		return true;
	}
	l = &w->lv[w->depth - 1];
	if (l->is_obj) {
		if (!l->key_pending) {
			w->error = true;
			return false;
		}
		l->key_pending = false;
		return true;
	}
	if (l->has_items)
		put(w, ",", 1);
	l->has_items = true;
	newline_indent(w);
	return true;
}

static void after_value(struct jw *w)
{
	if (w->depth == 0)
		w->top_done = true;
}

static void write_escaped(struct jw *w, const unsigned char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char buf[8];
	size_t i = 0, run = 0;

	put(w, "\"", 1);
	while (i < n) {
		unsigned char c = s[i];
		const char *esc = NULL;
		size_t len, need, k;
		unsigned char lo = 0x80, hi = 0xbf;
		unsigned int cp;

		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && c != '<' && c != '>' &&
		    c != '&') {
			i++;
			run++;
			continue;
		}
		put(w, (const char *)s + i - run, run);
		run = 0;
		if (c < 0x80) {
			switch (c) {
			case '"': esc = "\\\""; break;
			case '\\': esc = "\\\\"; break;
			case '\b': esc = "\\b"; break;
			case '\f': esc = "\\f"; break;
			case '\n': esc = "\\n"; break;
			case '\r': esc = "\\r"; break;
			case '\t': esc = "\\t"; break;
			default:
				buf[0] = '\\'; buf[1] = 'u'; buf[2] = '0'; buf[3] = '0';
				buf[4] = hex[c >> 4]; buf[5] = hex[c & 15]; buf[6] = 0;
				esc = buf;
			}
			puts_(w, esc);
			i++;
			continue;
		}
		/* UTF-8: lead byte ranges and the allowed range of the second byte (Table 3-7). */
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			if (c == 0xe0)
				lo = 0xa0;
			else if (c == 0xed)
				hi = 0x9f;  /* no surrogates */
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			if (c == 0xf0)
				lo = 0x90;
			else if (c == 0xf4)
				hi = 0x8f;  /* <= U+10FFFF */
		} else {
			puts_(w, "\\ufffd");
			i++;
			continue;
		}
		cp = c & (need == 1 ? 0x1f : need == 2 ? 0x0f : 0x07);
		for (k = 1, len = 1; k <= need; k++) {
			unsigned char b;

			if (i + k >= n)
				break;
			b = s[i + k];
			if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf))
				break;
			cp = (cp << 6) | (b & 0x3f);
			len++;
		}
		if (len != need + 1) {
			puts_(w, "\\ufffd");  /* maximal subpart: lead + valid continuations */
			i += len;
			continue;
		}
		if (cp == 0x2028 || cp == 0x2029)
			puts_(w, cp == 0x2028 ? "\\u2028" : "\\u2029");
		else
			put(w, (const char *)s + i, len);
		i += len;
	}
	put(w, (const char *)s + i - run, run);
	put(w, "\"", 1);
}

void jw_key(struct jw *w, const char *key)
{
	struct jw_level *l;

	if (!w || w->error)
		return;
	if (w->depth == 0 || !w->lv[w->depth - 1].is_obj || w->lv[w->depth - 1].key_pending ||
	    !key) {
		w->error = true;
		return;
	}
	l = &w->lv[w->depth - 1];
	if (l->has_items)
		put(w, ",", 1);
	l->has_items = true;
	newline_indent(w);
	write_escaped(w, (const unsigned char *)key, strlen(key));
	put(w, w->pretty ? ": " : ":", w->pretty ? 2 : 1);
	l->key_pending = true;
}

static void begin(struct jw *w, bool is_obj)
{
	if (!w || !before_value(w))
		return;
	if (w->depth >= JW_MAX_DEPTH) {
		w->error = true;
		return;
	}
	put(w, is_obj ? "{" : "[", 1);
	w->lv[w->depth].is_obj = is_obj;
	w->lv[w->depth].has_items = false;
	w->lv[w->depth].key_pending = false;
	w->depth++;
}

static void end(struct jw *w, bool is_obj)
{
	struct jw_level *l;

	if (!w || w->error)
		return;
	if (w->depth == 0 || w->lv[w->depth - 1].is_obj != is_obj ||
	    w->lv[w->depth - 1].key_pending) {
		w->error = true;
		return;
	}
	l = &w->lv[w->depth - 1];
	w->depth--;
	if (l->has_items)
		newline_indent(w);
	put(w, is_obj ? "}" : "]", 1);
	after_value(w);
}

void jw_obj_begin(struct jw *w) { begin(w, true); }
void jw_obj_end(struct jw *w) { end(w, true); }
void jw_arr_begin(struct jw *w) { begin(w, false); }
void jw_arr_end(struct jw *w) { end(w, false); }

static void raw_value(struct jw *w, const char *text)
{
	if (!w || !before_value(w))
		return;
	puts_(w, text);
	after_value(w);
}

void jw_strn(struct jw *w, const char *s, size_t n)
{
	if (!w)
		return;
	if (!s) {
		jw_null(w);
		return;
	}
	if (!before_value(w))
		return;
	write_escaped(w, (const unsigned char *)s, n);
	after_value(w);
}

void jw_str(struct jw *w, const char *s)
{
	jw_strn(w, s, s ? strlen(s) : 0);
}

void jw_u64(struct jw *w, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	raw_value(w, buf);
}

void jw_i64(struct jw *w, int64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	raw_value(w, buf);
}

void jw_double(struct jw *w, double v)
{
	char buf[40];

	if (!isfinite(v)) {
		raw_value(w, "null");
		return;
	}
	/* Shortest of %.15g / %.17g that reads back exactly. */
	snprintf(buf, sizeof(buf), "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, sizeof(buf), "%.17g", v);
	raw_value(w, buf);
}

void jw_bool(struct jw *w, bool v) { raw_value(w, v ? "true" : "false"); }
void jw_null(struct jw *w) { raw_value(w, "null"); }

void jw_kstr(struct jw *w, const char *key, const char *s) { jw_key(w, key); jw_str(w, s); }
void jw_ku64(struct jw *w, const char *key, uint64_t v) { jw_key(w, key); jw_u64(w, v); }
void jw_ki64(struct jw *w, const char *key, int64_t v) { jw_key(w, key); jw_i64(w, v); }
void jw_kdouble(struct jw *w, const char *key, double v) { jw_key(w, key); jw_double(w, v); }
void jw_kbool(struct jw *w, const char *key, bool v) { jw_key(w, key); jw_bool(w, v); }

int jw_finish(struct jw *w)
{
	bool bad;

	if (!w)
		return -EIO;
	bad = w->error || w->depth != 0;
	if (!bad && w->top_done)
		put(w, "\n", 1);
	if (fflush(w->out) != 0 || ferror(w->out) || w->error)
		bad = true;
	free(w);
	return bad ? -EIO : 0;
}
