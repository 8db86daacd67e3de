// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/u64set.h"
#include "util/u64map.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

static inline size_t hash(uint64_t v, size_t cap)
{
	v *= 0x9e3779b97f4a7c15ull;
	return (size_t)(v >> 17) & (cap - 1);
}

static void put(uint64_t *slots, size_t cap, uint64_t slot)
{
	size_t i = hash(slot, cap);

	while (slots[i] && slots[i] != slot)
		i = (i + 1) & (cap - 1);
	slots[i] = slot;
}

bool u64set_add(struct u64set *s, uint64_t key)
{
	uint64_t slot = key + 1;
	size_t i;

	if (s->cap) {
		for (i = hash(slot, s->cap); s->slots[i]; i = (i + 1) & (s->cap - 1))
			if (s->slots[i] == slot)
				return false;
	}
	if (2 * (s->n + 1) > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		uint64_t *slots = xcalloc(cap, sizeof(*slots));

		for (i = 0; i < s->cap; i++)
			if (s->slots[i])
				put(slots, cap, s->slots[i]);
		free(s->slots);
		s->slots = slots;
		s->cap = cap;
	}
	put(s->slots, s->cap, slot);
	s->n++;
	return true;
}

uint64_t *u64set_sorted(const struct u64set *s, size_t *n)
{
	uint64_t *a = xmalloc((s->n ? s->n : 1) * sizeof(*a));
	size_t k = 0;

	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i])
			a[k++] = s->slots[i] - 1;
	u64_sort(a, k);
	*n = k;
	return a;
}

void u64set_free(struct u64set *s)
{
	free(s->slots);
	memset(s, 0, sizeof(*s));
}
