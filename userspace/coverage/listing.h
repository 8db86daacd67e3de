/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What an ELF file gives a tracefile whatever ran in it: each source line
 * with the code it covers, and where each function is declared.  For a
 * file with debug info (glibc's, from libc6-dbg) reading them is most of
 * the cost of a tracefile, and it would come after QEMU exits: so the
 * coverage asks for a file's listing when the first instruction in it
 * runs, and a thread of its own reads it on the other core while the
 * guest runs (naming/linesrc.h: handles of its own).  The writer waits for
 * a listing the thread is reading, or reads it itself when the thread has
 * not come to it.
 */
#ifndef QJ_LISTING_H
#define QJ_LISTING_H

#include <stddef.h>
#include <stdint.h>

#include "util/strtab.h"

struct decl;
struct elf_file;

struct listing {
	/* Lines by file (any order) and line: each with its code, the
	 * ranges [first, first + n) of RANGES. */
	struct listing_line {
		const char *file; /* in FILES */
		int line;
		uint32_t first, n;
	} * lines;
	size_t nlines;
	struct listing_range {
		uint64_t lo, hi; /* link addresses */
	} * ranges;
	size_t nranges;
	struct decl *decls; /* sorted by address (decls.h) */
	size_t ndecls;
	struct strtab files;
};

struct lister;
struct listing_job;

/* Read E's listing on the lister's thread (started on first use). */
struct listing_job *lister_request(struct lister **l, const struct elf_file *e);
/* E's listing read here and now, with no lister (NULL: E is no file). */
struct listing_job *listing_read(const struct elf_file *e);
/* The job's listing, once read (L: its lister, NULL for listing_read()'s);
 * NULL if there is no job. */
const struct listing *listing_wait(struct lister *l, struct listing_job *j);
/* Forget the job (its listing, or its reading if not begun). */
void listing_job_free(struct lister *l, struct listing_job *j);
/* Stop the thread (its jobs all freed). */
void lister_free(struct lister *l);

#endif
