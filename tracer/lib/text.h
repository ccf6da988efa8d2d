/* SPDX-License-Identifier: MIT */
/* text.h — checks on untrusted text read from the traced process. */
#ifndef TET_TEXT_H
#define TET_TEXT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Length (1–4) of the well-formed UTF-8 sequence at p (n ≥ 1 bytes available), or 0 if it is
 * not one: a stray continuation or invalid lead byte, a truncated sequence, an overlong form,
 * a surrogate, a code point above U+10FFFF, or a C1 control (U+0080–U+009F). With
 * reject_line_seps, U+2028 and U+2029 are refused too (not for a terminal).
 */
static inline size_t utf8_seq_len(const unsigned char *p, size_t n, bool reject_line_seps)
{
	unsigned char c = p[0];
	size_t need;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		need = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		need = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 4, cp = c & 0x07;
	else
		return 0;
	if (n < need)
		return 0;
	for (size_t i = 1; i < need; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((need == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (need == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	if (cp >= 0x80 && cp < 0xa0)
		return 0;
	if (reject_line_seps && (cp == 0x2028 || cp == 0x2029))
		return 0;
	return need;
}

/* Untrusted bytes → printable UTF-8: control characters and invalid bytes as \xNN,
 * backslash as \\, cut at max_chars characters with "…". Returns buf. */
const char *text_sanitize(const char *p, size_t n, size_t max_chars, char *buf, size_t len);

/* The first n bytes of s (to its NUL) written to out HTML-escaped: & < > " ' as entities (for
 * element text and quoted attributes). text_html_esc: the whole string. */
void text_html_escn(FILE *out, const char *s, size_t n);
void text_html_esc(FILE *out, const char *s);

#endif
