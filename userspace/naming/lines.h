/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Source lines of an ELF file's code, read from its DWARF 5 .debug_line
 * section alone.  libdw (0.188) would first decompress every debug section
 * of the file (for libc6-dbg's libc, 9 MB: most of the tool's CPU on a
 * jitdump run), where a line needs only .debug_line and its strings.
 *
 * Opening a table reads where each sequence of rows starts and ends; a
 * sequence's rows are decoded when an address in it is first asked about.
 * Answers are libdw's: the last row at or below the address, its file
 * named "DIR/NAME" unless NAME is absolute (a relative DIR after the
 * compilation directory).  Line programs older than
 * DWARF 5 name their first directory only in .debug_info: for those the
 * caller asks libdw instead.
 */
#ifndef QJ_LINES_H
#define QJ_LINES_H

#include <stdbool.h>
#include <stdint.h>

typedef struct Elf Elf;
struct line_table;

enum lines_found {
	LINES_READ,  /* *t is the table */
	LINES_NONE,  /* no .debug_line section */
	LINES_OTHER, /* a form this reader leaves to libdw (DWARF 2-4, .zdebug) */
};

/* Whether ELF has a .debug_line section (or .zdebug_line), not reading it. */
bool line_table_present(Elf *elf);
/*
 * The line table of ELF, which must stay open while the table lives (its
 * sections are read as they are needed).  Units that are damaged are left
 * out: their addresses have no line.
 */
enum lines_found line_table_open(Elf *elf, struct line_table **t);
/* The file and line of ADDR (a link-time address); false if none. */
bool line_table_find(struct line_table *t, uint64_t addr, const char **file, int *line);
/*
 * Each row of T that starts a statement (is_stmt) and covers code: FN gets
 * its addresses [LO, HI) (link-time; HI the next row's at a higher
 * address), file and line.  Sequences in address
 * order; a line may come in several rows.
 */
#ifndef QJ_LINE_FN
#define QJ_LINE_FN
typedef void (*line_fn)(void *ctx, uint64_t lo, uint64_t hi, const char *file, int line);
#endif
void line_table_each(struct line_table *t, line_fn fn, void *ctx);
void line_table_free(struct line_table *t);

#endif
