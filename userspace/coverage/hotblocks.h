/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The hot-block table (--coverage=FILE.csv, --coverage-counts): every TB
 * that ran while QEMU counted, by process and first guest pc, most run
 * first, with the columns of QEMU's hotblocks plugin (pc, tcount, icount,
 * ecount) and where it lies: function, source line, process.
 */
#ifndef QJ_HOTBLOCKS_H
#define QJ_HOTBLOCKS_H

#include <stdio.h>

struct coverage;

int hotblocks_write(FILE *f, const struct coverage *c);

#endif
