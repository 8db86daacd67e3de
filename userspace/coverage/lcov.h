/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Coverage as source lines and functions: an lcov tracefile (.info), as
 * genhtml, lcov -a, Codecov and Coveralls read it.  A line ran when any
 * of its statement rows (DWARF's is_stmt) covers an instruction that ran;
 * every line and function of the files' line tables is listed, run or
 * not.  Files of several images (a header's inline code, a program and
 * its libraries) are merged per source file, as lcov -a merges.
 */
#ifndef QJ_LCOV_H
#define QJ_LCOV_H

#include <stddef.h>
#include <stdint.h>

struct coverage;
struct cov_prefix;

struct cov_totals {
	uint64_t files, lines, lines_hit, fns, fns_hit;
};

/* Write C to PATH (written beside and renamed); -errno, message printed. */
int lcov_write(const struct coverage *c, const char *path, const struct cov_prefix *px,
	       size_t npx, struct cov_totals *tot);

#endif
