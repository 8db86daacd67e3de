// SPDX-License-Identifier: GPL-2.0-or-later
#include "naming/symtable.h"
#include "util/util.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void sym_builder_add(struct sym_builder *b, const char *name, size_t len, struct raw_sym r)
{
	grow(&b->v, &b->cap, b->n + 1, sizeof(*b->v));
	grow(&b->names, &b->names_cap, b->names_len + len + 1, 1);
	memcpy(b->names + b->names_len, name, len);
	text_clean(b->names + b->names_len, len);
	b->names[b->names_len + len] = 0;
	r.name_off = b->names_len;
	b->v[b->n++] = r;
	b->names_len += len + 1;
}

static int cmp_raw(const void *a, const void *b)
{
	const struct raw_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return x->size > y->size ? -1 : x->size < y->size;
}

struct sym *sym_builder_finish(struct sym_builder *b, size_t *count, char **names)
{
	struct sym *syms = xcalloc(b->n, sizeof(*syms));
	uint64_t *limits = xcalloc(b->n, sizeof(*limits));
	size_t n = 0;

	sort_by_key(b->v, b->n, sizeof(*b->v), offsetof(struct raw_sym, addr), cmp_raw);
	for (size_t i = 0; i < b->n; i++) {
		if (n && syms[n - 1].addr == b->v[i].addr)
			continue; /* the best name for this address came first */
		syms[n] = (struct sym){
			.addr = b->v[i].addr,
			.size = b->v[i].size,
			.name = (const char *)b->v[i].name_off,
		};
		limits[n++] = b->v[i].limit;
	}
	for (size_t i = 0; i < n; i++) {
		struct sym *sy = &syms[i];
		/* Bytes up to the end of the address space, which no symbol
		 * runs past. */
		uint64_t room = sy->addr ? 0 - sy->addr : UINT64_MAX, len;

		sy->name = b->names + (size_t)sy->name;
		if (sy->size > room)
			sy->size = room;
		if (sy->size)
			continue;
		/* Assembly functions often have no size: up to the next one,
		 * within their section. */
		len = i + 1 < n ? syms[i + 1].addr - sy->addr : room < 16 ? room : 16;
		if (limits[i] > sy->addr && limits[i] - sy->addr < len)
			len = limits[i] - sy->addr;
		sy->size = len ? len : 1;
	}
	free(limits);
	free(b->v);
	*count = n;
	*names = b->names;
	return syms;
}
