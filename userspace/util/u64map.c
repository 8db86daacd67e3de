// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/u64map.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

static inline size_t hash(uint64_t v, size_t cap)
{
	v *= 0x9e3779b97f4a7c15ull;
	return (size_t)(v >> 17) & (cap - 1);
}

static struct u64map_ent *find(const struct u64map *m, uint64_t slot)
{
	if (!m->cap)
		return NULL;
	for (size_t i = hash(slot, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->e[i].slot == slot)
			return &m->e[i];
		if (!m->e[i].slot)
			return NULL;
	}
}

static struct u64map_ent *put(struct u64map_ent *e, size_t cap, uint64_t slot)
{
	size_t i = hash(slot, cap);

	while (e[i].slot && e[i].slot != slot)
		i = (i + 1) & (cap - 1);
	e[i].slot = slot;
	return &e[i];
}

uint64_t *u64map_at(struct u64map *m, uint64_t key)
{
	struct u64map_ent *f = find(m, key + 1);

	if (f)
		return &f->val;
	if (2 * (m->n + 1) > m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 256;
		struct u64map_ent *e = xcalloc(cap, sizeof(*e));

		for (size_t i = 0; i < m->cap; i++)
			if (m->e[i].slot)
				put(e, cap, m->e[i].slot)->val = m->e[i].val;
		free(m->e);
		m->e = e;
		m->cap = cap;
	}
	m->n++;
	f = put(m->e, m->cap, key + 1);
	f->val = 0;
	return &f->val;
}

uint64_t u64map_get(const struct u64map *m, uint64_t key)
{
	const struct u64map_ent *f = find(m, key + 1);

	return f ? f->val : 0;
}

uint64_t u64map_take(struct u64map *m, uint64_t key)
{
	struct u64map_ent *f = find(m, key + 1);
	uint64_t val;
	size_t i, j;

	if (!f)
		return 0;
	val = f->val;
	/* Backward-shift deletion: later entries of the run move up. */
	i = (size_t)(f - m->e);
	for (j = (i + 1) & (m->cap - 1); m->e[j].slot; j = (j + 1) & (m->cap - 1)) {
		size_t h = hash(m->e[j].slot, m->cap);

		/* Does H lie cyclically in (i, j]?  Then it stays. */
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		m->e[i] = m->e[j];
		i = j;
	}
	m->e[i].slot = 0;
	m->n--;
	return val;
}

/*
 * V[0, N), elements of SIZE bytes that start with their u64 key, by key
 * ascending, equal ones in their order: least significant byte first,
 * each pass stable; bytes all keys share are skipped (most of an
 * address's).  Inlined for each SIZE, so that the copies are one move.
 */
static inline __attribute__((always_inline)) void radix(void *v, size_t n, size_t size)
{
	size_t(*count)[256];
	char *a = v, *b, *tmp;

	if (n < 2)
		return;
	b = xmalloc(n * size);
	count = xcalloc(8, sizeof(*count));
	for (size_t i = 0; i < n; i++) {
		uint64_t k;

		memcpy(&k, a + i * size, sizeof(k));
		for (int d = 0; d < 8; d++)
			count[d][(k >> (8 * d)) & 255]++;
	}
	for (int d = 0; d < 8; d++) {
		size_t pos = 0, shift = 8 * (size_t)d;
		uint64_t k;

		memcpy(&k, a, sizeof(k));
		if (count[d][(k >> shift) & 255] == n)
			continue;
		for (int j = 0; j < 256; j++) {
			size_t c = count[d][j];

			count[d][j] = pos;
			pos += c;
		}
		for (size_t i = 0; i < n; i++) {
			memcpy(&k, a + i * size, sizeof(k));
			memcpy(b + count[d][(k >> shift) & 255]++ * size, a + i * size, size);
		}
		tmp = a;
		a = b;
		b = tmp;
	}
	if (a != (char *)v) {
		memcpy(v, a, n * size);
		b = a;
	}
	free(b);
	free(count);
}

void u64map_sort(struct u64map_ent *v, size_t n)
{
	radix(v, n, sizeof(*v));
}

void u64_sort(uint64_t *v, size_t n)
{
	radix(v, n, sizeof(*v));
}

struct u64map_ent *u64map_sorted(const struct u64map *m, size_t *n)
{
	struct u64map_ent *a = xmalloc((m->n ? m->n : 1) * sizeof(*a));
	size_t k = 0;

	for (size_t i = 0; i < m->cap; i++)
		if (m->e[i].slot)
			a[k++] = (struct u64map_ent){m->e[i].slot - 1, m->e[i].val};
	u64map_sort(a, k);
	*n = k;
	return a;
}

void u64map_clear(struct u64map *m)
{
	if (m->cap)
		memset(m->e, 0, m->cap * sizeof(*m->e));
	m->n = 0;
}

void u64map_copy(struct u64map *to, const struct u64map *from)
{
	u64map_free(to);
	if (!from->cap)
		return;
	to->e = xmalloc(from->cap * sizeof(*to->e));
	memcpy(to->e, from->e, from->cap * sizeof(*to->e));
	to->n = from->n;
	to->cap = from->cap;
}

void u64map_free(struct u64map *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}
