/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One process's coverage as drcov (DynamoRIO's format, which Lighthouse,
 * bncov and Cartographer read): its guest images as the module table, and
 * each block of guest code that ran as an offset into its module.
 */
#ifndef QJ_DRCOV_H
#define QJ_DRCOV_H

#include <stdint.h>
#include <sys/types.h>

#include "coverage/coverage.h"

struct guest;
struct guest_image;
struct drcov;

/* Will any file of O be drcov? */
bool drcov_wanted(const struct coverage_opts *o);
struct drcov *drcov_new(void);
/*
 * The guest instructions from guest address FIRST to LAST (the start of
 * the last one) of IMG ran, one after another: a block.
 */
void drcov_block(struct drcov *d, const struct guest_image *img, uint64_t first, uint64_t last);
/* Every image of G is a module, whether any of its code ran or not. */
void drcov_images(struct drcov *d, const struct guest *g);
/* Each .drcov file of O, for process PID: NAME.PID.drcov for NAME.drcov.
 * -errno (said) if one could not be written. */
int drcov_write_files(const struct drcov *d, const struct coverage_opts *o, pid_t pid);
void drcov_free(struct drcov *d);

#endif
