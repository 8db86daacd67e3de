/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A set of 64-bit keys: open addressing, at most half full. */
#ifndef QJ_U64SET_H
#define QJ_U64SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct u64set {
	uint64_t *slots; /* key + 1; 0: free */
	size_t n, cap;
};

/* Add KEY (any but UINT64_MAX): was it new? */
bool u64set_add(struct u64set *s, uint64_t key);
/* The keys, ascending, *N of them: to free(). */
uint64_t *u64set_sorted(const struct u64set *s, size_t *n);
void u64set_free(struct u64set *s);

#endif
