// SPDX-License-Identifier: MIT
/* text.c — untrusted text made printable, and HTML-escaped (text.h). */
#include <stdio.h>
#include <string.h>

#include "text.h"

const char *text_sanitize(const char *s, size_t n, size_t max_chars, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0, chars = 0;

	if (!len)
		return buf;
	if (!s) {
		snprintf(buf, len, "?");
		return buf;
	}
	for (size_t i = 0; i < n;) {
		size_t l = utf8_seq_len(p + i, n - i, true); /* no U+2028/9 on a terminal */
		char tmp[8];
		size_t tl;

		if (max_chars && chars >= max_chars) {
			if (o + 4 <= len) {
				memcpy(buf + o, "\xe2\x80\xa6", 3);
				o += 3;
			}
			break;
		}
		if (l == 1 && p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\') {
			tmp[0] = (char)p[i];
			tl = 1;
		} else if (l == 1 && p[i] == '\\') {
			memcpy(tmp, "\\\\", 2);
			tl = 2;
		} else if (l > 1) {
			memcpy(tmp, p + i, l);
			tl = l;
		} else {
			snprintf(tmp, sizeof(tmp), "\\x%02x", p[i]);
			tl = 4;
			l = 1;
		}
		if (o + tl + 1 > len)
			break;
		memcpy(buf + o, tmp, tl);
		o += tl;
		i += l;
		chars++;
	}
	buf[o] = 0;
	return buf;
}

void text_html_escn(FILE *out, const char *s, size_t n)
{
	for (const char *e = s + n; s < e && *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default: fputc(*s, out);
		}
	}
}

void text_html_esc(FILE *out, const char *s)
{
	text_html_escn(out, s, strlen(s));
}
