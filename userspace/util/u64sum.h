/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Sums of 64-bit values by 64-bit key, for many adds in a burst (a QEMU's
 * final counts: every instruction of every block at once).  An add only
 * appends; the log is sorted and summed into the sorted part when it has
 * grown as large as that part, or when the sums are read: sequential
 * work where a hash table would miss the cache on every add.
 */
#ifndef QJ_U64SUM_H
#define QJ_U64SUM_H

#include <stddef.h>
#include <stdint.h>

#include "util/u64map.h"

struct u64sum {
	struct u64map_ent *v; /* [0, sorted): by key, unique; then the log */
	size_t sorted, n, cap;
};

/* KEY's sum grows by VAL. */
void u64sum_add(struct u64sum *s, uint64_t key, uint64_t val);
/* The sums, by key ascending (slot is the key), *N of them: S's own,
 * good until the next add. */
const struct u64map_ent *u64sum_sorted(struct u64sum *s, size_t *n);
/* The sums as the last u64sum_sorted() left them (all of them if nothing
 * was added since), for a reader that may not sort. */
static inline const struct u64map_ent *u64sum_summed(const struct u64sum *s, size_t *n)
{
	*n = s->sorted;
	return s->v;
}
void u64sum_free(struct u64sum *s);

#endif
