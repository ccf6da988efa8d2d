/* SPDX-License-Identifier: MIT */
/*
 * json.h — the one streaming JSON writer of the tracer (list, check, trace reports).
 * Strings are escaped for JSON *and* made safe to embed inside an HTML <script> element
 * ('<', '>', '&' and U+2028/2029 are written as \uXXXX), so untrusted text read from a
 * traced process can go anywhere. Invalid UTF-8 bytes are written as U+FFFD.
 * The writer tracks nesting and inserts commas itself; with pretty=true it indents.
 */
#ifndef TET_JSON_H
#define TET_JSON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct jw;

struct jw *jw_new(FILE *out, bool pretty);
/* Returns 0, or -EIO when any write failed or nesting is unbalanced. Frees the writer. */
int jw_finish(struct jw *w);

void jw_obj_begin(struct jw *w);
void jw_obj_end(struct jw *w);
void jw_arr_begin(struct jw *w);
void jw_arr_end(struct jw *w);
void jw_key(struct jw *w, const char *key);
void jw_str(struct jw *w, const char *s);            /* NULL → null */
void jw_strn(struct jw *w, const char *s, size_t n); /* n bytes, may hold NULs */
void jw_u64(struct jw *w, uint64_t v);
void jw_i64(struct jw *w, int64_t v);
void jw_double(struct jw *w, double v);              /* non-finite → null */
void jw_bool(struct jw *w, bool v);
void jw_null(struct jw *w);

/* key + value shorthands */
void jw_kstr(struct jw *w, const char *key, const char *s);
void jw_ku64(struct jw *w, const char *key, uint64_t v);
void jw_ki64(struct jw *w, const char *key, int64_t v);
void jw_kdouble(struct jw *w, const char *key, double v);
void jw_kbool(struct jw *w, const char *key, bool v);

#endif
