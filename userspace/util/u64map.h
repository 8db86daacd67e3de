/* SPDX-License-Identifier: GPL-2.0-or-later */
/* 64-bit keys to 64-bit values: open addressing, at most half full. */
#ifndef QJ_U64MAP_H
#define QJ_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map_ent {
	uint64_t slot; /* key + 1; 0: free */
	uint64_t val;
};

struct u64map {
	struct u64map_ent *e;
	size_t n, cap;
};

/* The value of KEY (any but UINT64_MAX), made 0 if it was not there. */
uint64_t *u64map_at(struct u64map *m, uint64_t key);
/* The value of KEY, or 0. */
uint64_t u64map_get(const struct u64map *m, uint64_t key);
/* The value of KEY, or 0; and KEY no more. */
uint64_t u64map_take(struct u64map *m, uint64_t key);
/* The entries, by key ascending (slot is the key, not key + 1): to free(). */
struct u64map_ent *u64map_sorted(const struct u64map *m, size_t *n);
void u64map_clear(struct u64map *m);
/* Entries V[0, N) by slot ascending, equal ones in their order: a radix
 * sort of the entries themselves. */
void u64map_sort(struct u64map_ent *v, size_t n);
/* V[0, N) ascending, by the same radix sort. */
void u64_sort(uint64_t *v, size_t n);
/* TO (whose entries go) becomes a copy of FROM. */
void u64map_copy(struct u64map *to, const struct u64map *from);
void u64map_free(struct u64map *m);

#endif
