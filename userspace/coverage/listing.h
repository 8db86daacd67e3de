/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What an ELF file gives a tracefile whatever ran in it: its source files,
 * each with its functions and lines and the code each covers, sorted as
 * the tracefile lists them, so that the writer only looks up what ran.  For a
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

struct elf_file;
struct listcache;

struct listing {
	/* Its source files by path, each with its functions (by name, then
	 * line) and its lines (in order): [fns, fns + nfns) of FNS and
	 * [lines, lines + nlines) of LINES. */
	struct listing_src {
		const char *path; /* in STRS */
		uint32_t fns, nfns, lines, nlines;
	} * srcs;
	size_t nsrcs;
	/* A function at its declaration's line (where gcov and lcov put it),
	 * else at its entry's; its entries (one per copy of that name and
	 * line) are its ranges [first, first + n) of RANGES, each one byte. */
	struct listing_fn {
		const char *name; /* in STRS */
		int line;
		uint32_t first, n;
	} * fns;
	size_t nfns;
	/* A line with its code (touching rows joined: a line counts what its
	 * most run instruction did, wherever it lies), and the entries of the
	 * functions declared there. */
	struct listing_line {
		int line;
		uint32_t first, n;
	} * lines;
	size_t nlines;
	struct listing_range {
		uint64_t lo, hi; /* link addresses */
	} * ranges;
	size_t nranges;
	struct strtab strs;
	char *blob; /* the strings of a listing from the cache (listcache.h) */
};

struct lister;
struct listing_job;

/* Read E's listing on the lister's thread (started on first use), or
 * take it from LC (NULL: no cache); its functions are taken from E's
 * symbols here and now. */
struct listing_job *lister_request(struct lister **l, struct elf_file *e, struct listcache *lc);
/* E's listing read here and now, with no lister (NULL: E is no file). */
struct listing_job *listing_read(struct elf_file *e, struct listcache *lc);
/* The job's listing, once read (L: its lister, NULL for listing_read()'s);
 * NULL if there is no job. */
const struct listing *listing_wait(struct lister *l, struct listing_job *j);
/* Forget the job (its listing, or its reading if not begun). */
void listing_job_free(struct lister *l, struct listing_job *j);
/* Free what LS holds. */
void listing_free(struct listing *ls);
/* Stop the thread (its jobs all freed). */
void lister_free(struct lister *l);

#endif
