/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Coverage of guest code, from the TB reports: QEMU translates a block
 * when it is about to run it, so every guest instruction of a TB report
 * ran (up to a trap inside the block).  What ran is kept per ELF file, as
 * link addresses of instructions, over every process of the run: the same
 * file in two processes (or two containers) is one file (elfcache.c), and
 * its coverage is theirs together.  Files are held until the coverage is
 * freed, so that its writers can read their line tables and symbols.
 */
#ifndef QJ_COVERAGE_H
#define QJ_COVERAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "util/keep.h"
#include "util/strtab.h"
#include "util/u64map.h"
#include "util/u64sum.h"
#include "util/u64bits.h"

struct elf_file;
struct guest;
struct guest_loc;

/* A source path prefix to rewrite: OLD=NEW (--coverage-prefix). */
struct cov_prefix {
	const char *old, *new;
};

/* What to write (--coverage, --coverage-prefix, and --interval's). */
struct coverage_opts {
	const char **files;
	int nfiles;
	struct cov_prefix *px;
	int npx;
	unsigned int interval; /* seconds; 0: once, at the end */
	struct keep keep;      /* of the interval files (--keep-profiles) */
	bool counts;	       /* --coverage-counts */
	const char *cache_dir; /* of listings (listcache.h); NULL: none */
};

enum cov_format {
	COV_LCOV,      /* .info */
	COV_COBERTURA, /* .xml */
	COV_DRCOV,     /* .drcov: one file per process (drcov.h) */
	COV_HOT,       /* .csv: hot blocks, by execution count (hotblocks.h) */
	COV_BAD,
};

/* The format of FILE, by its name. */
enum cov_format coverage_format(const char *file);

struct cov_file {
	struct elf_file *elf;	     /* held */
	struct u64bits set;	     /* link addresses that ran */
	struct u64sum counts;	     /* --coverage-counts: link address -> executions */
	uint64_t used;		     /* the coverage's clock when it last ran */
	struct listing_job *listing; /* its lines, read meanwhile (listing.h) */
};

/* Files no process holds any more, beyond this many, are folded. */
#define COV_IDLE_FILES 16

struct src_item;
struct lister;
struct listcache;
struct listing_job;

/* A TB's first guest pc in one process, and how often it ran (.csv). */
struct cov_hot {
	int pid;
	uint64_t pc;
	uint32_t icount;       /* guest instructions */
	uint32_t tcount;       /* translations */
	uint64_t ecount;       /* executions */
	const char *fn, *file; /* in names; NULL when unknown */
	int line;
};

struct coverage {
	struct cov_file *files;
	size_t nfiles, cap;
	struct cov_file *last; /* the file of the last instruction */
	uint64_t clock;
	/* Lines are written (.info, .xml): each file's are read on the
	 * lister's thread from its first instruction on. */
	bool lines_wanted;
	struct lister *lister;
	struct listcache *cache;
	/* Files folded into their sources' lines and functions, and let go
	 * (coverage_bound()): their items, by raw path (sources.h). */
	struct src_item *folded;
	size_t nfolded, folded_cap, folded_merged;
	struct strtab folded_names;
	uint64_t files_folded;
	/* --coverage-counts: TBs by process and pc (HOT_WANTED: a .csv is
	 * asked for), and counts unplaced. */
	bool counts, hot_wanted;
	struct cov_hot *hot;
	size_t nhot, hot_cap;
	struct strtab hot_names;
	uint64_t uncounted;	/* TBs QEMU could not count (max over processes) */
	uint64_t unplaced;	/* executions of TBs whose report never came */
	uint64_t never_counted; /* processes that ran code but were never counted */
	uint64_t split_ns;	/* --interval: when the interval under way ends */
	time_t interval_start;	/* and when it began (wall clock) */
};

/* The instruction at link address LINK of ELF ran. */
void coverage_insn(struct coverage *c, struct elf_file *elf, uint64_t link);
/* It ran N more times (--coverage-counts). */
void coverage_count(struct coverage *c, struct elf_file *elf, uint64_t link, uint64_t n);
/* A row of the hot-block table: process PID's TB at PC, translated once
 * more; its index, for coverage_hot_ran(). */
size_t coverage_hot(struct coverage *c, int pid, uint64_t pc, uint32_t icount,
		    const struct guest_loc *loc);
/* Every ELF image of G is listed, whether any of its code ran or not. */
void coverage_images(struct coverage *c, const struct guest *g);
/*
 * Bound the memory of a long run (-a, a test suite's many programs): the
 * files no process holds, beyond COV_IDLE_FILES, least recently run
 * first, are folded into their lines and functions (what the writers
 * need of them) and let go, so that the ELF cache can free them.
 */
void coverage_bound(struct coverage *c);
/* Start counting intervals (--interval), at NOW (CLOCK_MONOTONIC). */
void coverage_start(struct coverage *c, const struct coverage_opts *o, uint64_t now);
/* --interval: at an interval's end, its files (FILE with the interval's
 * start in their names), all that ran since the start; -errno if one
 * could not be written. */
int coverage_tick(struct coverage *c, const struct coverage_opts *o, uint64_t now);
/* The end: every file of O (with --interval, the last interval's). */
int coverage_finish(struct coverage *c, const struct coverage_opts *o);
void coverage_free(struct coverage *c);

#endif
