/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --push's spool: a directory of files, one per part of an interval,
 * named FROM-UNTIL-PART.pb.gz (unix seconds, zero-padded, so that names
 * sort as times do), each a pprof within the servers' limits.
 */
#ifndef QJ_PUSH_SPOOL_H
#define QJ_PUSH_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "profiler/profile.h"

#define SPOOL_NAME_MAX 35 /* a name's length */

/* Whether S is a spooled part's name, and of which interval. */
bool spool_name(const char *s, long long *from, long long *until);
/* The parts in DIRFD, oldest first; *N of them (spool_list_free()). */
char **spool_list(int dirfd, size_t *n);
void spool_list_free(char **v, size_t n);
/*
 * Spool PROF, the interval [FROM, UNTIL), in DIRFD: in halves, and halves
 * of them, until each part holds at most MAX_SAMPLES stacks and 1 MiB;
 * BY_LABELS: a part for each set of its samples' string labels.
 */
int spool_interval(int dirfd, const struct profile *prof, time_t from, time_t until,
		   unsigned int max_samples, bool by_labels);

#endif
