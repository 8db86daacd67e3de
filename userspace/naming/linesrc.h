/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An ELF file's source lines and function declarations, read on any
 * thread: its line table's (elf_file_line()'s) and decls_read()'s, through
 * handles of its own (a libelf or libdw handle is used by one
 * thread at a time, and the main thread names code with the file's), so
 * that a tracefile's lines can be read on another core while the guest
 * runs (coverage/listing.c).
 */
#ifndef QJ_LINESRC_H
#define QJ_LINESRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "naming/decls.h"
#include "naming/symbols.h"

struct lines_src;

/* On E's thread: what reading E's lines needs (descriptors of its own, a
 * copy of where its code lies); NULL when E is no file (a symbol map). */
struct lines_src *lines_src_new(const struct elf_file *e);
/* What identifies the files S reads: device, inode, size and modification
 * time of the file, then of the one its line table is in. */
void lines_src_ids(const struct lines_src *s, uint64_t id[8]);
/* On any one thread at a time: each statement row that covers code, as
 * line_table_each() gives them (lines.h), read by libdw for DWARF 2-4 (a
 * file under a relative directory after the unit's, as lines.c names
 * it).  FILE is FN's only during the call; code the linker dropped
 * (rows at address 0) is left out. */
void lines_src_each(struct lines_src *s, line_fn fn, void *ctx);
/* The line of ADDR, as elf_file_line() gives it (FILE: until S is freed). */
bool lines_src_line(struct lines_src *s, uint64_t addr, const char **file, int *line);
/* The declarations of its functions, as decls_read() (for decls_free()). */
struct decl *lines_src_decls(struct lines_src *s, size_t *n);
void lines_src_free(struct lines_src *s);

#endif
