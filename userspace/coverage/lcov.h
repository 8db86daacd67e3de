/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Coverage as an lcov tracefile (.info): TN, then per source file SF, FN,
 * FNDA, FNF, FNH, DA, LF, LH and end_of_record, as geninfo writes them
 * and genhtml, lcov -a, Codecov and Coveralls read them.
 */
#ifndef QJ_LCOV_H
#define QJ_LCOV_H

#include <stdio.h>

struct sources;

/* -1 on a write error. */
int lcov_write(FILE *f, const struct sources *s);

#endif
