// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The containers coverage counts with, against the plainest code that
 * does the same: the sparse bitmap of what ran (u64bits: adds, and
 * whether any key lies in a range, across chunks, at the top of the
 * address space, wider than the chunks there are), the sums by key
 * (u64sum) and the radix sorts (u64_sort, u64map_sort: stable).  The
 * input is a program: an opcode byte, then its operands.
 */
#include "fuzz.h"
#include "util/u64bits.h"
#include "util/u64map.h"
#include "util/u64sum.h"

#define MAX_KEYS 2048

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* A key near the last one (often), or anywhere. */
static uint64_t next_key(struct fuzz_in *in, uint64_t last)
{
	uint8_t how = (uint8_t)fuzz_u64_n(in, 1);

	switch (how & 3) {
	case 0:
		return last + (how >> 2);
	case 1:
		return last - (how >> 2);
	case 2:
		return last + (fuzz_u64_n(in, 2) << 3);
	default:
		return fuzz_u64(in);
	}
}

static bool ref_has(const uint64_t *keys, size_t n, uint64_t k)
{
	for (size_t i = 0; i < n; i++)
		if (keys[i] == k)
			return true;
	return false;
}

static bool ref_any(const uint64_t *keys, size_t n, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < n; i++)
		if (keys[i] >= lo && keys[i] < hi)
			return true;
	return false;
}

/* u64_sort and u64map_sort of KEYS against qsort: the same order, and
 * equal keys in their order (VAL is the index). */
static void check_sorts(const uint64_t *keys, size_t n)
{
	uint64_t *a = malloc((n + 1) * sizeof(*a)), *b = malloc((n + 1) * sizeof(*b));
	struct u64map_ent *e = malloc((n + 1) * sizeof(*e));

	for (size_t i = 0; i < n; i++) {
		a[i] = b[i] = keys[i] & 0xffff00000000ffffull; /* equal keys, too */
		e[i] = (struct u64map_ent){a[i], i};
	}
	u64_sort(a, n);
	qsort(b, n, sizeof(*b), cmp_u64);
	u64map_sort(e, n);
	for (size_t i = 0; i < n; i++) {
		if (a[i] != b[i] || e[i].slot != b[i])
			abort();
		if (i && e[i].slot == e[i - 1].slot && e[i].val < e[i - 1].val)
			abort(); /* not stable */
	}
	free(a);
	free(b);
	free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data, size};
	static uint64_t keys[MAX_KEYS], sums[MAX_KEYS], sumkeys[MAX_KEYS];
	size_t nkeys = 0, nsums = 0;
	struct u64bits set = {0};
	struct u64sum sum = {0};
	uint64_t last = 0;

	while (in.left) {
		uint8_t op = (uint8_t)fuzz_u64_n(&in, 1);

		if (op < 128 && nkeys < MAX_KEYS) {
			/* Add a key. */
			uint64_t k = last = next_key(&in, last);
			bool was = ref_has(keys, nkeys, k);

			if (u64bits_add(&set, k) == was)
				abort();
			if (!was)
				keys[nkeys++] = k;
			if (set.n != nkeys)
				abort();
		} else if (op < 224) {
			/* Any key in [lo, hi)?  Near the last key, or any range. */
			uint64_t lo = op & 1 ? fuzz_u64(&in) : last - fuzz_u64_n(&in, 2);
			uint64_t hi = op & 2 ? fuzz_u64(&in) : lo + fuzz_u64_n(&in, 3);

			if (u64bits_any(&set, lo, hi) != ref_any(keys, nkeys, lo, hi))
				abort();
		} else if (nsums < MAX_KEYS) {
			/* A sum grows (the key one of the set's, or another). */
			uint64_t k = op & 1 && nkeys ? keys[fuzz_u64_n(&in, 2) % nkeys]
						     : next_key(&in, last);
			uint64_t v = fuzz_u64_n(&in, 3);
			size_t i;

			u64sum_add(&sum, k, v);
			for (i = 0; i < nsums && sumkeys[i] != k; i++)
				;
			if (i == nsums) {
				sumkeys[nsums] = k;
				sums[nsums++] = 0;
			}
			sums[i] += v;
		}
	}
	/* The sums, by key: each the reference's. */
	{
		size_t n;
		const struct u64map_ent *e = u64sum_sorted(&sum, &n);

		if (n != nsums)
			abort();
		for (size_t i = 0; i < n; i++) {
			size_t k;

			if (i && e[i].slot <= e[i - 1].slot)
				abort();
			for (k = 0; k < nsums && sumkeys[k] != e[i].slot; k++)
				;
			if (k == nsums || sums[k] != e[i].val)
				abort();
		}
	}
	check_sorts(keys, nkeys);
	u64bits_free(&set);
	u64sum_free(&sum);
	return 0;
}
