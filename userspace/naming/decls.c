// SPDX-License-Identifier: GPL-2.0-or-later
#include "naming/decls.h"
#include "util/util.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stddef.h>
#include <stdlib.h>

struct decls {
	struct decl *v;
	size_t n, cap;
	const char *comp_dir; /* of the unit walked */
};

/* The subprograms with code among DIE's children, and in namespaces. */
static void walk(struct decls *d, Dwarf_Die *die, int depth)
{
	Dwarf_Die child;

	if (depth > 8 || dwarf_child(die, &child))
		return;
	do {
		Dwarf_Addr lo;
		const char *file;
		int line;

		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
			if (dwarf_lowpc(&child, &lo) || dwarf_decl_line(&child, &line) ||
			    line <= 0 || !(file = dwarf_decl_file(&child)))
				break;
			grow(&d->v, &d->cap, d->n + 1, sizeof(*d->v));
			/* DWARF 5 names a file under a directory relative to the
			 * unit's. */
			d->v[d->n++] = (struct decl){lo,
						     file[0] != '/' && d->comp_dir
							     ? xasprintf("%s/%s", d->comp_dir, file)
							     : xstrdup(file),
						     line};
			break;
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
			walk(d, &child, depth + 1);
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

static int decl_cmp(const void *a, const void *b)
{
	const struct decl *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

struct decl *decls_read(Dwfl_Module *mod, size_t *n)
{
	struct decls d = {0};
	Dwarf_Addr bias;
	Dwarf *dw = mod ? dwfl_module_getdwarf(mod, &bias) : NULL;
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (dw && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(dw, off + hsize, &cu)) {
			Dwarf_Attribute a;

			d.comp_dir = dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &a));
			walk(&d, &cu, 0);
		}
		off = next;
	}
	sort_by_key(d.v, d.n, sizeof(*d.v), offsetof(struct decl, addr), decl_cmp);
	*n = d.n;
	return d.v;
}

const struct decl *decls_find(const struct decl *d, size_t n, uint64_t addr)
{
	size_t i = count_le(d, n, sizeof(*d), offsetof(struct decl, addr), addr);

	return i && d[i - 1].addr == addr ? &d[i - 1] : NULL;
}

void decls_free(struct decl *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)d[i].file);
	free(d);
}
