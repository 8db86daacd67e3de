/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --report: what each emulated command cost.  A row per process followed
 * (its command line, its parent, its wall and CPU time from the kernel,
 * that CPU split by where its samples were, its code), rolled up by
 * program (every run of cc1 together) and by subtree (a process with all
 * it ran); written as a table for people or as JSON.
 */
#ifndef QJ_REPORT_H
#define QJ_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "profiler/cpusplit.h"

struct report_proc {
	pid_t pid, ppid;
	char *command;	   /* the guest's command line, as ps shows it */
	char *program;	   /* the guest program's name */
	char *parent_name; /* the parent's, when the report has no row of it */
	uint64_t start_ns; /* CLOCK_MONOTONIC; 0: unknown */
	uint64_t end_ns;   /* its exit, or the report's time */
	uint64_t cpu_ns;   /* the kernel's accounting of its threads */
	bool running;	   /* still running at the report */
	struct cpu_split split;
	uint64_t tbs, flushes;
};

struct report {
	struct report_proc **v;
	size_t n, cap;
};

/* A new row for PID (zeroed but for it): the report's. */
struct report_proc *report_add(struct report *r, pid_t pid);
/* The report as a table for people, or as JSON for scripts. */
void report_write_text(const struct report *r, FILE *f);
void report_write_json(const struct report *r, FILE *f);
void report_free(struct report *r);

#endif
