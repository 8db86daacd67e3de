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

#include <stddef.h>
#include <stdint.h>

struct elf_file;
struct guest;

/* A source path prefix to rewrite: OLD=NEW (--coverage-prefix). */
struct cov_prefix {
	const char *old, *new;
};

/* What to write (--coverage, --coverage-prefix). */
struct coverage_opts {
	const char **files;
	int nfiles;
	struct cov_prefix *px;
	int npx;
};

enum cov_format {
	COV_LCOV,      /* .info */
	COV_COBERTURA, /* .xml */
	COV_BAD,
};

/* The format of FILE, by its name. */
enum cov_format coverage_format(const char *file);

struct cov_file {
	struct elf_file *elf; /* held */
	uint64_t *slots;      /* open addressing: link address + 1, 0 free */
	size_t n, cap;
};

struct coverage {
	struct cov_file *files;
	size_t nfiles, cap;
	struct cov_file *last; /* the file of the last instruction */
};

/* The instruction at link address LINK of ELF ran. */
void coverage_insn(struct coverage *c, struct elf_file *elf, uint64_t link);
/* Every ELF image of G is listed, whether any of its code ran or not. */
void coverage_images(struct coverage *c, const struct guest *g);
/* The link addresses that ran in F, sorted: *N of them, to free(). */
uint64_t *coverage_sorted(const struct cov_file *f, size_t *n);
/* Did any of the sorted addresses A[0..N) run in [LO, HI)? */
int coverage_any(const uint64_t *a, size_t n, uint64_t lo, uint64_t hi);
/* Write every file of O; -errno (said) if one could not be. */
int coverage_write(const struct coverage *c, const struct coverage_opts *o);
void coverage_free(struct coverage *c);

#endif
