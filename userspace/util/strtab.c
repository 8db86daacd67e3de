// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/strtab.h"
#include "util/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Each slot's hash is beside its string, so that a probe reads a string
 * only when the hashes match. */
struct strtab_slot {
	uint64_t hash; /* 0: empty */
	const char *s;
};

/* The strings are copied into blocks, from 4 KiB up to 256 KiB: a W1 run
 * keeps 35 000 names, most of them once, and malloc() per name was a third
 * of the cost; a table of a few names stays small. */
struct strtab_block {
	struct strtab_block *next;
	char data[];
};
#define BLOCK_MIN (4u << 10)
#define BLOCK_MAX (256u << 10)
/* A longer string gets a block of its own. */
#define LONG_STRING 4096

static uint64_t hash_str(const char *s, size_t *len)
{
	uint64_t h = 1469598103934665603ull;
	const char *p = s;

	while (*p)
		h = (h ^ (unsigned char)*p++) * 1099511628211ull;
	*len = p - s;
	return h | 1;
}

static void grow_slots(struct strtab *t)
{
	size_t cap = t->cap ? t->cap * 2 : 64;
	struct strtab_slot *v = xcalloc(cap, sizeof(*v));

	for (size_t i = 0; i < t->cap; i++) {
		size_t k;

		if (!t->slots[i].hash)
			continue;
		for (k = t->slots[i].hash & (cap - 1); v[k].hash; k = (k + 1) & (cap - 1))
			;
		v[k] = t->slots[i];
	}
	free(t->slots);
	t->slots = v;
	t->cap = cap;
}

static char *new_block(struct strtab *t, size_t size)
{
	struct strtab_block *b = xmalloc(sizeof(*b) + size);

	b->next = t->blocks;
	t->blocks = b;
	t->bytes += size;
	return b->data;
}

static const char *copy(struct strtab *t, const char *s, size_t len)
{
	char *p;

	if (len >= LONG_STRING) {
		p = new_block(t, len + 1);
	} else {
		if (len + 1 > t->left) {
			size_t size = t->bytes < BLOCK_MIN   ? BLOCK_MIN
				      : t->bytes < BLOCK_MAX ? t->bytes
							     : BLOCK_MAX;

			t->next = new_block(t, size);
			t->left = size;
		}
		p = t->next;
		t->next += len + 1;
		t->left -= len + 1;
	}
	memcpy(p, s, len + 1);
	return p;
}

const char *strtab_add(struct strtab *t, const char *s)
{
	size_t len, i;
	uint64_t h = hash_str(s, &len);

	if ((t->n + 1) * 2 > t->cap)
		grow_slots(t);
	for (i = h & (t->cap - 1); t->slots[i].hash; i = (i + 1) & (t->cap - 1))
		if (t->slots[i].hash == h && !strcmp(t->slots[i].s, s))
			return t->slots[i].s;
	t->slots[i].hash = h;
	t->slots[i].s = copy(t, s, len);
	t->n++;
	return t->slots[i].s;
}

const char *strtab_addf(struct strtab *t, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return strtab_add(t, buf);
}

void strtab_free(struct strtab *t)
{
	while (t->blocks) {
		struct strtab_block *b = t->blocks;

		t->blocks = b->next;
		free(b);
	}
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

void strtab_swap(struct strtab *a, struct strtab *b)
{
	struct strtab tmp = *a;

	*a = *b;
	*b = tmp;
}
