/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --report: what each emulated command cost.  A row per process followed
 * (its command line, its parent, its wall and CPU time from the kernel,
 * that CPU split by where its samples were, its code), rolled up by
 * program (every run of cc1 together) and by subtree (a process with all
 * it ran); written as a table for people or as JSON.  Bounded: once more
 * than `keep` rows have ended, the oldest without rows below them are
 * folded into their program's and their ancestors' totals.
 */
#ifndef QJ_REPORT_H
#define QJ_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "profiler/cpusplit.h"
#include "report/diagnose.h"
#include "util/strtab.h"
#include "util/u64map.h"

/* What rows add up to: a program's runs, a subtree, what was folded. */
struct report_tally {
	size_t n;	 /* rows */
	uint64_t cpu_ns; /* the kernel's */
	struct cpu_split split;
	uint64_t tbs, flushes;
	uint64_t again_flush, again_other; /* blocks translated again */
};

struct report_proc {
	pid_t pid, ppid;
	char *command;	     /* the guest's command line, as ps shows it */
	const char *program; /* the guest program's name (the report's) */
	char *parent_name;   /* the parent's, when the report has no row of it */
	uint64_t start_ns;   /* CLOCK_MONOTONIC; 0: unknown */
	uint64_t end_ns;     /* its exit, or the report's time */
	uint64_t cpu_ns;     /* the kernel's accounting of its threads */
	bool running;	     /* still running at the report */
	bool final;	     /* its process is gone: nothing comes into it */
	bool argv0;	     /* QEMU's command line has the path, then argv[0] */
	struct cpu_split split;
	uint64_t tbs, flushes;
	/* Blocks translated again after a flush, and without one (the guest
	 * wrote to its code, an invalidation, another CPU state). */
	uint64_t again_flush, again_other;
	struct cpu_phases phases; /* --timeline: where its samples were, in time */
	/* The report's own. */
	struct report_tally below; /* rows under it folded */
	size_t at;		   /* its index in v */
	struct report_proc *prev;  /* the row of the program its pid ran before */
	bool has_kids, gone;
};

/* A program's folded runs. */
struct report_prog {
	const char *program;
	struct report_tally t;
};

struct report {
	struct report_proc **v; /* in the order they came */
	size_t n, cap;
	struct u64map at; /* pid -> 1 + the index of its latest row */
	struct strtab names;
	/* Rows kept once their process is gone; beyond, the oldest leaves
	 * are folded into their program's and their ancestors' totals. */
	size_t keep;
	size_t nfinal, folded;
	struct report_prog *progs; /* what was folded, by program */
	size_t nprogs, progs_cap;
	struct u64map prog_at; /* interned name -> 1 + index in progs */
};

/* A new row for PID (zeroed but for it): the report's. */
struct report_proc *report_add(struct report *r, pid_t pid);
/* Its program's name, kept by the report. */
void report_set_program(struct report *r, struct report_proc *p, const char *program);
/* P's process is gone and P is complete: it may be folded from now on. */
void report_final(struct report *r, struct report_proc *p);
/* The row of P's parent, if the report has it. */
struct report_proc *report_parent(const struct report *r, const struct report_proc *p);
/* A total: a program's runs, or a subtree. */
struct report_sum {
	const char *key;	       /* a program's name */
	const struct report_proc *top; /* a subtree's root */
	struct report_tally t;
};

/* The report's tables as the writers show them, the most CPU first. */
struct report_view {
	struct report_proc **rows; /* every row kept */
	size_t nrows;
	struct report_sum *progs; /* by program */
	size_t nprogs;
	struct report_sum *trees; /* by subtree: each row with rows below it */
	size_t ntrees;
	struct report_tally all;
	struct diagnosis *diag; /* by program, in the programs' order */
	size_t ndiag;
	size_t folded; /* rows in the totals only */
};

void report_view(const struct report *r, struct report_view *v);
void report_view_free(struct report_view *v);
/* Is diagnosis I the first of its kind (its change said after it)? */
bool report_diagnosis_first(const struct report_view *v, size_t i);
/* P's wall time, or 0 when its start is unknown. */
uint64_t report_wall_ns(const struct report_proc *p);

/* The tables' columns: where the CPU went, in per cent of a split. */
#define REPORT_COLS 6
extern const char *const report_col_names[REPORT_COLS];
void report_shares(const struct cpu_split *s, double pct[REPORT_COLS]);

/* The report as a table for people, as JSON for scripts, or as Markdown
 * for a CI job's summary (report-md.c): at most LIMIT bytes, the rows
 * that do not fit left out, and said so. */
void report_write_text(const struct report *r, FILE *f);
void report_write_json(const struct report *r, FILE *f);
void report_write_markdown(const struct report *r, FILE *f, size_t limit);
void report_free(struct report *r);

#endif
