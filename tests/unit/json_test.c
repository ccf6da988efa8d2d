// SPDX-License-Identifier: MIT
/*
 * json_test.c — unit tests of the JSON writer (tracer/lib/json.c): exact output for structure,
 * pretty printing, every escape (JSON, HTML-safe, U+2028/2029), invalid UTF-8 (one U+FFFD
 * per maximal subpart), numbers, and misuse / write errors reported by jw_finish().
 *   json_test                 run the cases, "ok - …" / "not ok - …" lines, exit 1 on failure
 *   json_test random N SEED   N lines "HEX<TAB>JSON" of random strings, for a decoder to check
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

static int failed, run;

static void expect(const char *what, const char *got, const char *want)
{
	run++;
	if (strcmp(got, want) == 0) {
		printf("ok - %s\n", what);
	} else {
		failed++;
		printf("not ok - %s\n#   want: %s\n#    got: %s\n", what, want, got);
	}
}

static void expect_int(const char *what, long got, long want)
{
	char a[32], b[32];

	snprintf(a, sizeof(a), "%ld", got);
	snprintf(b, sizeof(b), "%ld", want);
	expect(what, a, b);
}

/* a writer on a memory buffer; done() returns the text and jw_finish's result */
static char *buf;
static size_t buflen;
static FILE *mem;

static struct jw *open_w(bool pretty)
{
	mem = open_memstream(&buf, &buflen);
	return jw_new(mem, pretty);
}

static const char *done(struct jw *w, int *ret)
{
	static char out[8192];
	int r = jw_finish(w);

	if (ret)
		*ret = r;
	fclose(mem);
	snprintf(out, sizeof(out), "%s", buf);
	free(buf);
	buf = NULL;
	return out;
}

static const char *str1(const char *s, size_t n)
{
	struct jw *w = open_w(false);

	jw_strn(w, s, n);
	return done(w, NULL);
}

#define S(lit) str1(lit, sizeof(lit) - 1)

static void random_mode(long n, unsigned seed)
{
	long i;

	srand(seed);
	for (i = 0; i < n; i++) {
		unsigned char s[64];
		size_t len = (size_t)(rand() % 64), k;
		struct jw *w;
		const char *out;

		for (k = 0; k < len; k++) {
			int r = rand() % 8;
			/* mix ASCII, controls, HTML chars, UTF-8 leads/continuations, anything */
			s[k] = r < 3 ? (unsigned char)(0x20 + rand() % 95)
			     : r == 3 ? (unsigned char)(rand() % 32)
			     : r == 4 ? (unsigned char)"<>&\"\\"[rand() % 5]
			     : r == 5 ? (unsigned char)(0xc0 + rand() % 64)
			     : r == 6 ? (unsigned char)(0x80 + rand() % 64)
			     : (unsigned char)(rand() % 256);
		}
		for (k = 0; k < len; k++)
			printf("%02x", s[k]);
		w = open_w(false);
		jw_strn(w, (const char *)s, len);
		out = done(w, NULL);
		printf("\t%s", out);  /* ends with the document's newline */
	}
}

int main(int argc, char **argv)
{
	struct jw *w;
	int ret;
	const char *o;

	if (argc == 4 && strcmp(argv[1], "random") == 0) {
		random_mode(atol(argv[2]), (unsigned)atoi(argv[3]));
		return 0;
	}

	w = open_w(false);
	jw_obj_begin(w);
	jw_ku64(w, "a", 1);
	jw_key(w, "b");
	jw_arr_begin(w);
	jw_bool(w, true);
	jw_bool(w, false);
	jw_null(w);
	jw_arr_end(w);
	jw_kstr(w, "s", "x");
	jw_kstr(w, "n", NULL);
	jw_key(w, "e");
	jw_obj_begin(w);
	jw_obj_end(w);
	jw_key(w, "ea");
	jw_arr_begin(w);
	jw_arr_end(w);
	jw_obj_end(w);
	o = done(w, &ret);
	expect("compact document", o, "{\"a\":1,\"b\":[true,false,null],\"s\":\"x\",\"n\":null,\"e\":{},\"ea\":[]}\n");
	expect_int("compact document: jw_finish 0", ret, 0);

	w = open_w(true);
	jw_obj_begin(w);
	jw_ki64(w, "a", -1);
	jw_key(w, "b");
	jw_arr_begin(w);
	jw_u64(w, 2);
	jw_obj_begin(w);
	jw_kbool(w, "c", true);
	jw_obj_end(w);
	jw_arr_end(w);
	jw_key(w, "e");
	jw_arr_begin(w);
	jw_arr_end(w);
	jw_obj_end(w);
	o = done(w, &ret);
	expect("pretty document", o,
	       "{\n  \"a\": -1,\n  \"b\": [\n    2,\n    {\n      \"c\": true\n    }\n  ],\n  \"e\": []\n}\n");

	expect("JSON escapes", S("\"\\\b\f\n\r\t\x01\x1f\x7f/"),
	       "\"\\\"\\\\\\b\\f\\n\\r\\t\\u0001\\u001f\x7f/\"\n");
	expect("HTML-safe escapes", S("</script><!--&x"),
	       "\"\\u003c/script\\u003e\\u003c!--\\u0026x\"\n");
	expect("U+2028 U+2029 escaped", S("a\xe2\x80\xa8" "b\xe2\x80\xa9"), "\"a\\u2028b\\u2029\"\n");
	expect("valid UTF-8 kept", S("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"),
	       "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"\n");
	expect("NUL in jw_strn", S("a\0b"), "\"a\\u0000b\"\n");
	expect("invalid byte FF", S("\xff"), "\"\\ufffd\"\n");
	expect("lone continuation byte", S("a\x80z"), "\"a\\ufffdz\"\n");
	expect("truncated 2-byte sequence at end", S("\xc3"), "\"\\ufffd\"\n");
	expect("truncated 3-byte sequence: one U+FFFD", S("\xe2\x82" "A"), "\"\\ufffdA\"\n");
	expect("truncated 4-byte sequence at end: one U+FFFD", S("\xf0\x9f\x98"), "\"\\ufffd\"\n");
	expect("surrogate ED A0 80: three U+FFFD", S("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"\n");
	expect("overlong C0 AF: two U+FFFD", S("\xc0\xaf"), "\"\\ufffd\\ufffd\"\n");
	expect("overlong E0 80 80: three U+FFFD", S("\xe0\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\"\n");
	expect("above U+10FFFF: four U+FFFD", S("\xf4\x90\x80\x80"),
	       "\"\\ufffd\\ufffd\\ufffd\\ufffd\"\n");
	expect("U+10FFFF kept", S("\xf4\x8f\xbf\xbf"), "\"\xf4\x8f\xbf\xbf\"\n");
	expect("escaped key", (w = open_w(false), jw_obj_begin(w), jw_kstr(w, "<\"k\n", "v"),
			       jw_obj_end(w), done(w, NULL)),
	       "{\"\\u003c\\\"k\\n\":\"v\"}\n");

	w = open_w(false);
	jw_arr_begin(w);
	jw_u64(w, UINT64_MAX);
	jw_i64(w, INT64_MIN);
	jw_double(w, 0.1);
	jw_double(w, 1e300);
	jw_double(w, -0.0);
	jw_double(w, 2.5);
	jw_double(w, 1.0 / 3.0);
	jw_double(w, NAN);
	jw_double(w, INFINITY);
	jw_arr_end(w);
	expect("numbers", done(w, NULL),
	       "[18446744073709551615,-9223372036854775808,0.1,1e+300,-0,2.5,0.33333333333333331,null,null]\n");

	w = open_w(false);
	jw_obj_begin(w);
	jw_u64(w, 1);
	jw_obj_end(w);
	done(w, &ret);
	expect_int("value without a key in an object: -EIO", ret, -EIO);

	w = open_w(false);
	jw_arr_begin(w);
	jw_key(w, "k");
	jw_arr_end(w);
	done(w, &ret);
	expect_int("key inside an array: -EIO", ret, -EIO);

	w = open_w(false);
	jw_obj_begin(w);
	jw_key(w, "k");
	jw_obj_end(w);
	done(w, &ret);
	expect_int("key without a value: -EIO", ret, -EIO);

	w = open_w(false);
	jw_arr_begin(w);
	done(w, &ret);
	expect_int("unclosed array: -EIO", ret, -EIO);

	w = open_w(false);
	jw_arr_begin(w);
	jw_obj_end(w);
	done(w, &ret);
	expect_int("mismatched end: -EIO", ret, -EIO);

	w = open_w(false);
	jw_arr_end(w);
	done(w, &ret);
	expect_int("end without begin: -EIO", ret, -EIO);

	w = open_w(false);
	jw_u64(w, 1);
	jw_u64(w, 2);
	done(w, &ret);
	expect_int("two top-level values: -EIO", ret, -EIO);

	{
		int i;

		w = open_w(false);
		for (i = 0; i < 256; i++)
			jw_arr_begin(w);
		for (i = 0; i < 256; i++)
			jw_arr_end(w);
		done(w, &ret);
		expect_int("nesting 256 deep: 0", ret, 0);
		w = open_w(false);
		for (i = 0; i < 257; i++)
			jw_arr_begin(w);
		for (i = 0; i < 257; i++)
			jw_arr_end(w);
		done(w, &ret);
		expect_int("nesting 257 deep: -EIO", ret, -EIO);
	}

	{
		FILE *full = fopen("/dev/full", "w");
		int i;

		if (!full) {
			failed++;
			printf("not ok - /dev/full: %s\n", strerror(errno));
		} else {
			w = jw_new(full, false);
			jw_arr_begin(w);
			for (i = 0; i < 10000; i++)
				jw_str(w, "fill the stdio buffer so that a write happens");
			jw_arr_end(w);
			expect_int("write error (/dev/full): -EIO", jw_finish(w), -EIO);
			fclose(full);
		}
	}
	expect_int("jw_finish(NULL): -EIO", jw_finish(NULL), -EIO);

	printf("# %d cases, %d failed\n", run, failed);
	return failed ? 1 : 0;
}
