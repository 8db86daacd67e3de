// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/u64bits.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_BITS  (1ull << U64BITS_SHIFT)
#define CHUNK_WORDS (CHUNK_BITS / 64)

bool u64bits_add(struct u64bits *s, uint64_t key)
{
	uint64_t c = key >> U64BITS_SHIFT, bit = key & (CHUNK_BITS - 1), m = 1ull << (bit & 63);
	uint64_t *w = s->last;

	if (!w || s->last_c != c) {
		uint64_t *v = u64map_at(&s->chunks, c);

		if (!*v)
			*v = (uintptr_t)xcalloc(CHUNK_WORDS, sizeof(uint64_t));
		w = s->last = (uint64_t *)(uintptr_t)*v;
		s->last_c = c;
	}
	if (w[bit / 64] & m)
		return false;
	w[bit / 64] |= m;
	s->n++;
	return true;
}

/* Is any of bits A to B (both included) of chunk W set? */
static bool chunk_any(const uint64_t *w, uint64_t a, uint64_t b)
{
	uint64_t wa = a / 64, wb = b / 64, ma = ~0ull << (a & 63), mb = ~0ull >> (63 - (b & 63));

	if (wa == wb)
		return w[wa] & ma & mb;
	if (w[wa] & ma)
		return true;
	for (uint64_t i = wa + 1; i < wb; i++)
		if (w[i])
			return true;
	return w[wb] & mb;
}

/* The part of [LO, HI) in chunk C (at W), if any. */
static bool part_any(const uint64_t *w, uint64_t c, uint64_t lo, uint64_t hi)
{
	uint64_t first = c << U64BITS_SHIFT, last = first + (CHUNK_BITS - 1);

	if (!w || hi <= first || lo > last)
		return false;
	return chunk_any(w, lo > first ? lo - first : 0,
			 hi - 1 < last ? hi - 1 - first : CHUNK_BITS - 1);
}

bool u64bits_any(const struct u64bits *s, uint64_t lo, uint64_t hi)
{
	/* A range wider than the chunks there are: ask each chunk. */
	if (lo < hi && ((hi - 1) >> U64BITS_SHIFT) - (lo >> U64BITS_SHIFT) >= s->chunks.n) {
		for (size_t i = 0; i < s->chunks.cap; i++)
			if (s->chunks.e[i].slot &&
			    part_any((uint64_t *)(uintptr_t)s->chunks.e[i].val,
				     s->chunks.e[i].slot - 1, lo, hi))
				return true;
		return false;
	}
	while (lo < hi) {
		uint64_t c = lo >> U64BITS_SHIFT, end = (c + 1) << U64BITS_SHIFT;
		/* The range's part in this chunk: [lo, stop). */
		uint64_t stop = end && end < hi ? end : hi;
		const uint64_t *w = c == s->last_c && s->last
					    ? s->last
					    : (uint64_t *)(uintptr_t)u64map_get(&s->chunks, c);

		if (part_any(w, c, lo, stop))
			return true;
		lo = stop;
	}
	return false;
}

bool u64bits_has(const struct u64bits *s, uint64_t key)
{
	uint64_t c = key >> U64BITS_SHIFT, bit = key & (CHUNK_BITS - 1);
	const uint64_t *w = c == s->last_c && s->last
				    ? s->last
				    : (uint64_t *)(uintptr_t)u64map_get(&s->chunks, c);

	return w && (w[bit / 64] >> (bit & 63) & 1);
}

void u64bits_move_into(struct u64bits *to, struct u64bits *from)
{
	for (size_t i = 0; i < from->chunks.cap; i++) {
		const struct u64map_ent *e = &from->chunks.e[i];
		uint64_t *w = (uint64_t *)(uintptr_t)e->val, *v;

		if (!e->slot)
			continue;
		v = u64map_at(&to->chunks, e->slot - 1);
		if (!*v) {
			*v = (uintptr_t)w;
			continue;
		}
		for (size_t k = 0; k < CHUNK_WORDS; k++)
			((uint64_t *)(uintptr_t)*v)[k] |= w[k];
		free(w);
	}
	to->last = NULL;
	to->n += from->n; /* (at most: a key in both counts twice) */
	u64map_free(&from->chunks);
	memset(from, 0, sizeof(*from));
}

void u64bits_copy(struct u64bits *to, const struct u64bits *from)
{
	u64bits_free(to);
	for (size_t i = 0; i < from->chunks.cap; i++) {
		const struct u64map_ent *e = &from->chunks.e[i];
		uint64_t *copy;

		if (!e->slot)
			continue;
		copy = xmalloc(CHUNK_WORDS * sizeof(uint64_t));
		memcpy(copy, (uint64_t *)(uintptr_t)e->val, CHUNK_WORDS * sizeof(uint64_t));
		*u64map_at(&to->chunks, e->slot - 1) = (uintptr_t)copy;
	}
	to->n = from->n;
}

void u64bits_free(struct u64bits *s)
{
	for (size_t i = 0; i < s->chunks.cap; i++)
		if (s->chunks.e[i].slot)
			free((void *)(uintptr_t)s->chunks.e[i].val);
	u64map_free(&s->chunks);
	memset(s, 0, sizeof(*s));
}
