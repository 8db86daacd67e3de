/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where each function of an ELF file is declared: the file and line of its
 * DW_TAG_subprogram (DW_AT_decl_file, DW_AT_decl_line), by the address of
 * its entry.  gcov and lcov put a function, and its entry block, on that
 * line (the one with its name), where the line table's first row has the
 * line of its opening brace.  Read by libdw, from .debug_info.
 */
#ifndef QJ_DECLS_H
#define QJ_DECLS_H

#include <stddef.h>
#include <stdint.h>

typedef struct Dwfl_Module Dwfl_Module;

struct decl {
	uint64_t addr; /* entry, link address */
	const char *file;
	int line;
};

/* The declarations of MOD's functions with code, sorted by address: *N
 * of them, for decls_free().  Files are absolute when the unit's
 * directory is. */
struct decl *decls_read(Dwfl_Module *mod, size_t *n);
void decls_free(struct decl *d, size_t n);
/* The declaration of the function at ADDR in D[0..N), or NULL. */
const struct decl *decls_find(const struct decl *d, size_t n, uint64_t addr);

#endif
