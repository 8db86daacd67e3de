/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --top: a live view of the profile on the terminal, like perf top: the
 * hottest guest functions (self and total), their images, and QEMU's own
 * share of the CPU.  Redrawn every second; q quits, z zeroes the counts.
 */
#ifndef QJ_TOP_H
#define QJ_TOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "profiler/profile.h"

struct top_info {
	pid_t pid;
	unsigned int freq;
	uint64_t lost;
};

/* Take the terminal (raw keys, alternate screen); false if stdout is none. */
bool top_start(void);
/* What the user typed: 'q' quits, 'z' zeroes; 0 when nothing. */
int top_key(void);
void top_render(const struct profile *p, const struct top_info *info);
/* Give the terminal back as it was. */
void top_stop(void);

#endif
