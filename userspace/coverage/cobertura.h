/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Coverage as Cobertura XML (coverage-04.dtd), as gcovr writes it for C
 * and GitLab's coverage_report, Codecov and diff-cover read it: one
 * source root (the directory all sources share, or "." when some are
 * relative), a package per directory under it, a class per source file
 * with its functions as methods (their declaration's line) and its lines.
 * No branches: a TB report says which blocks ran, not which way they left.
 */
#ifndef QJ_COBERTURA_H
#define QJ_COBERTURA_H

#include <stdio.h>

struct sources;

/* -1 on a write error. */
int cobertura_write(FILE *f, const struct sources *s);

#endif
