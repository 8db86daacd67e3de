/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a report's numbers say to change (--report): each diagnosis names
 * a program, the numbers that show it, and the change that applies.  A
 * diagnosis says only what the numbers show; the rules and the fixes are
 * those measured in tests/report.bats.
 */
#ifndef QJ_DIAGNOSE_H
#define QJ_DIAGNOSE_H

#include <stddef.h>
#include <stdint.h>

#include "profiler/cpusplit.h"

/* What the rules read of a program: every run of it together. */
struct program_sum {
	const char *program;
	size_t runs;
	uint64_t cpu_ns;     /* the kernel's */
	uint64_t run_cpu_ns; /* every program's of the run together, or 0 */
	uint64_t tbs, flushes;
	uint64_t again_flush, again_other; /* blocks translated again */
	struct cpu_split split;		   /* sampled */
};

struct diagnosis {
	const char *id;	     /* "code-cache", "pauth" */
	const char *program; /* the program's, as in the sum */
	char evidence[256];
	const char *fix;
};

/* The diagnoses of program P into D (at most DMAX); how many.  None for
 * a program of a negligible share of the run's CPU (under 1 %): what
 * changes it would change the run by less. */
size_t diagnose_program(const struct program_sum *p, struct diagnosis *d, size_t dmax);

#endif
