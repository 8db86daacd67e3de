/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A file's function symbols as they are read (symbols.c): from .symtab,
 * .dynsym, PLT entries, unwind tables or a System.map, in any order and
 * with duplicates, into the table symbols.h looks names up in: sorted,
 * one per address (the best-ranked), every symbol with a size.
 */
#ifndef QJ_SYMTABLE_H
#define QJ_SYMTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "naming/symbols.h"

struct raw_sym {
	uint64_t addr, size;
	uint64_t limit; /* end of its section: a size-less symbol stops there */
	int rank;	/* prefer GLOBAL over WEAK over LOCAL at one address */
	size_t name_off;
};

struct sym_builder {
	struct raw_sym *v;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	const char *broken; /* why the file's symbols could not all be read */
};

/* Add R, named NAME (LEN bytes, not terminated; control bytes become '?'). */
void sym_builder_add(struct sym_builder *b, const char *name, size_t len, struct raw_sym r);
/*
 * The table, *N symbols whose names are in *NAMES (one block, to free
 * with the table); B is used up.
 */
struct sym *sym_builder_finish(struct sym_builder *b, size_t *n, char **names);

#endif
