// SPDX-License-Identifier: MIT
/* htab.c — see htab.h. */
#include <errno.h>
#include <stdlib.h>

#include "htab.h"

static uint64_t hmix(uint64_t a, uint64_t b)
{
	uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);

	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void *htab_get(const struct htab *t, uint64_t k1, uint64_t k2)
{
	if (!t->len) /* an empty table is looked up at every event too (no kernel records) */
		return NULL;
	for (size_t i = hmix(k1, k2) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		if (!t->e[i].v)
			return NULL;
		if (t->e[i].k1 == k1 && t->e[i].k2 == k2)
			return t->e[i].v;
	}
}

static int htab_grow(struct htab *t)
{
	struct htab n = { NULL, t->cap ? t->cap * 2 : 64, 0 };

	n.e = calloc(n.cap, sizeof(*n.e));
	if (!n.e)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++)
		if (t->e[i].v)
			htab_put(&n, t->e[i].k1, t->e[i].k2, t->e[i].v);
	free(t->e);
	*t = n;
	return 0;
}

/* Inserts or replaces. */
int htab_put(struct htab *t, uint64_t k1, uint64_t k2, void *v)
{
	if ((t->len + 1) * 10 > t->cap * 7 && htab_grow(t))
		return -ENOMEM;
	for (size_t i = hmix(k1, k2) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		if (!t->e[i].v) {
			t->e[i] = (struct hent){ k1, k2, v };
			t->len++;
			return 0;
		}
		if (t->e[i].k1 == k1 && t->e[i].k2 == k2) {
			t->e[i].v = v;
			return 0;
		}
	}
}

void htab_del(struct htab *t, uint64_t k1, uint64_t k2)
{
	size_t mask = t->cap - 1, i, j;

	if (!t->cap)
		return;
	for (i = hmix(k1, k2) & mask;; i = (i + 1) & mask) {
		if (!t->e[i].v)
			return;
		if (t->e[i].k1 == k1 && t->e[i].k2 == k2)
			break;
	}
	t->e[i].v = NULL;
	t->len--;
	/* shift back the entries of the cluster that follow */
	for (j = (i + 1) & mask; t->e[j].v; j = (j + 1) & mask) {
		size_t home = hmix(t->e[j].k1, t->e[j].k2) & mask;

		/* move e[j] to the hole at i unless its home lies cyclically in (i, j] */
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		t->e[i] = t->e[j];
		t->e[j].v = NULL;
		i = j;
	}
}
