// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/u64sum.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

/* The log sorted, and summed with the sorted part into one. */
static void settle(struct u64sum *s)
{
	struct u64map_ent *a = s->v, *b, *out;
	size_t na = s->sorted, nb = s->n - s->sorted, i = 0, j = 0, k = 0;

	if (!nb)
		return; /* (nothing added: S->v may be NULL) */
	b = s->v + s->sorted;
	u64map_sort(b, nb);
	/* (In place when nothing was sorted before: the usual case.) */
	out = na ? xmalloc((na + nb) * sizeof(*out)) : s->v;
	while (i < na || j < nb) {
		struct u64map_ent e =
			j == nb || (i < na && a[i].slot <= b[j].slot) ? a[i++] : b[j++];

		if (k && out[k - 1].slot == e.slot)
			out[k - 1].val += e.val;
		else
			out[k++] = e;
	}
	if (na) {
		free(s->v);
		s->v = out;
		s->cap = na + nb;
	}
	s->sorted = s->n = k;
}

void u64sum_add(struct u64sum *s, uint64_t key, uint64_t val)
{
	if (s->n == s->cap) {
		/* A log twice as large as what it adds to is summed in
		 * first: the memory stays within three times the keys (and
		 * 1 Mi entries, 16 MiB), and a burst is sorted once. */
		if (s->n - s->sorted >= (1u << 20) && s->n - s->sorted >= 2 * s->sorted)
			settle(s);
		if (s->n == s->cap) {
			s->cap = s->cap ? 2 * s->cap : 1024;
			s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
		}
	}
	s->v[s->n++] = (struct u64map_ent){key, val};
}

const struct u64map_ent *u64sum_sorted(struct u64sum *s, size_t *n)
{
	settle(s);
	*n = s->sorted;
	return s->v;
}

void u64sum_free(struct u64sum *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}
