/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Numbers as DWARF encodes them, read from bytes others wrote: LEB128 and
 * fixed-size integers of either byte order, each read only up to END.
 * A read past END fails, and *P is then not to be used.
 */
#ifndef QJ_DWARFBYTES_H
#define QJ_DWARFBYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline bool uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;

	for (unsigned shift = 0; *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		if (shift < 64)
			r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return true;
		}
	}
	return false;
}

static inline bool sleb(const uint8_t **p, const uint8_t *end, int64_t *v)
{
	uint64_t r = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*p >= end)
			return false;
		b = *(*p)++;
		if (shift < 64)
			r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		r |= ~0ull << shift;
	*v = (int64_t)r;
	return true;
}

/* An unsigned little- or big-endian number of N bytes (N <= 8). */
static inline bool fixed(bool big, const uint8_t **p, const uint8_t *end, unsigned n, uint64_t *v)
{
	uint64_t r = 0;

	if ((size_t)(end - *p) < n)
		return false;
	for (unsigned i = 0; i < n; i++)
		r |= (uint64_t)(*p)[i] << (8 * (big ? n - 1 - i : i));
	*p += n;
	*v = r;
	return true;
}

#endif
