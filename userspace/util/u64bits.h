/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A set of 64-bit keys as a sparse bitmap: a bit per key in chunks of
 * 32 Ki keys, made when a key of theirs is first added.  For addresses
 * that cluster (the instructions of a program that ran): adding is a bit
 * set, asking whether any key lies in a range needs no sorting first,
 * and a byte of bitmap holds 8 addresses where a hash set took 16 bytes
 * or more for each.
 */
#ifndef QJ_U64BITS_H
#define QJ_U64BITS_H

#include "util/u64map.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct u64bits {
	struct u64map chunks; /* key >> U64BITS_SHIFT -> its chunk (uint64_t *) */
	uint64_t last_c;      /* the chunk added to last, */
	uint64_t *last;	      /* and where it is */
	size_t n;	      /* keys in the set */
};

#define U64BITS_SHIFT 15

/* Add KEY: was it new? */
bool u64bits_add(struct u64bits *s, uint64_t key);
/* Is any key of [LO, HI) in S? */
bool u64bits_any(const struct u64bits *s, uint64_t lo, uint64_t hi);
/* Is KEY in S? */
bool u64bits_has(const struct u64bits *s, uint64_t key);
/* TO gets every key of FROM, which is left empty. */
void u64bits_move_into(struct u64bits *to, struct u64bits *from);
/* TO (whose keys go) becomes a copy of FROM. */
void u64bits_copy(struct u64bits *to, const struct u64bits *from);
void u64bits_free(struct u64bits *s);

#endif
