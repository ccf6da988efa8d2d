/* SPDX-License-Identifier: MIT */
/*
 * htab.h — a small open-addressing hash table, (k1, k2) → non-NULL pointer, linear probing with
 * backward-shift deletion (no tombstones). Iterate by walking e[0 .. cap) for non-NULL v.
 */
#ifndef TET_HTAB_H
#define TET_HTAB_H
#include <stddef.h>
#include <stdint.h>

struct hent {
	uint64_t k1, k2;
	void *v;
};
struct htab {
	struct hent *e;
	size_t cap, len; /* cap: power of two */
};

void *htab_get(const struct htab *t, uint64_t k1, uint64_t k2);
/* Inserts or replaces; 0 or -ENOMEM. */
int htab_put(struct htab *t, uint64_t k1, uint64_t k2, void *v);
void htab_del(struct htab *t, uint64_t k1, uint64_t k2);

/* FNV-1a of n bytes, the string tables' hash (their own open addressing, or a key here). */
static inline uint64_t fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static inline uint64_t fnv1a_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

#endif
