/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Coverage by source file, as lcov and Cobertura report it: each file's
 * functions and lines, run or not.  A line ran when any of its statement
 * rows (DWARF's is_stmt) covers an instruction that ran; a function, and
 * the line of its declaration (where gcov puts it and its entry block),
 * when its entry ran.  Every line and function of the files' line tables
 * is listed, so that a percentage means something.  Files of several
 * images (a header's inline code, a program and its libraries) are
 * merged per source file, as lcov -a merges, after --coverage-prefix.
 * A symbol map (--guest-symbols) lists its functions only, under its own
 * path, each at its rank in address order.
 */
#ifndef QJ_SOURCES_H
#define QJ_SOURCES_H

#include <stddef.h>
#include <stdint.h>

#include "util/strtab.h"

struct coverage;
struct cov_file;
struct cov_prefix;

/* A line, or a function (NAME set), of a source file. */
struct src_item {
	const char *file;
	const char *name; /* a function's, or NULL for a line */
	int line;
	uint64_t hits;
};

/* One file's items: its functions by name, then its lines in order. */
struct src_file {
	const char *path;
	const struct src_item *fns, *lines;
	size_t nfns, nlines;
	uint64_t fns_hit, lines_hit;
};

struct sources {
	struct src_file *files; /* by path */
	size_t nfiles;
	uint64_t lines, lines_hit, fns, fns_hit;
	struct src_item *items;
	struct strtab names;
};

/* Everything C covers: its folded items, then its files. */
void sources_read(struct sources *s, const struct coverage *c, const struct cov_prefix *px,
		  size_t npx);
/* Add F's items (raw paths) to C's folded ones, merged now and then. */
void sources_fold(struct coverage *c, const struct cov_file *f);
void sources_free(struct sources *s);

#endif
