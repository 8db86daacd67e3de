/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * From the profiler's samples to stacks in a profile.  QEMU's and the
 * kernel's frames are named as a sample arrives (QEMU's maps are gone
 * once it exits); the guest's wait until the TB reports of the code they
 * ran have arrived, and are named with the map of live code of the flush
 * generation the sample ran in: the samples between two flushes are
 * named before the older map is retired.
 */
#ifndef QJ_SAMPLES_H
#define QJ_SAMPLES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#include "naming/guest.h"
#include "naming/jitmap.h"
#include "profiler/cpusplit.h"
#include "profiler/profile.h"
#include "util/strtab.h"
#include "util/u64map.h"
#include "qemu-jitbpf.h"
#include "sample.h"

struct pending;

struct samples {
	struct profile *prof;
	pid_t pid;
	bool dwarf;		   /* --call-graph=dwarf */
	struct guest host;	   /* QEMU's own images, from its maps */
	struct strtab names;	   /* names of QEMU's frames not its files' */
	uint64_t code_lo, code_hi; /* QEMU's code buffer, once known */
	struct pending *head, **tail;
	/* What happened, for the summary and -v. */
	uint64_t unknown_jit; /* in translated code no TB report covered */
	/* Where the CPU went (--report), or NULL: its holder's. */
	struct cpu_split *split;
	/*
	 * --off-cpu: ns per off-CPU tick; and per thread, up to when user
	 * space took the wait it was in (--interval ended while it was):
	 * that part of the wait's own sample, when it comes, is left out.
	 */
	uint64_t off_period;
	struct u64map taken;
	/* --off-cpu: per thread, its sample taken as it was preempted (a
	 * struct pending *), until its wait ends (QJ_EV_WAIT_END). */
	struct u64map preempted;
	bool commanded;	 /* the profile has its guest program's name */
	bool split_only; /* no stacks wanted: only the split (--report) */
	/*
	 * Told of each sample as it is named (--stacks), or NULL: where it
	 * was, QEMU's work (cpu_part_frame(), or NULL), the guest's pcs leaf
	 * first (return addresses but the leaf's), KNOWN false for code no TB
	 * report covered.
	 */
	void (*seen)(void *ctx, const struct qj_sample *r, enum sample_where where,
		     const char *work, const uint64_t *pcs, size_t n, bool known);
	void *seen_ctx;
};

void samples_init(struct samples *ss, struct profile *prof, pid_t pid, bool dwarf);
/* A QJ_EV_SAMPLE record of SIZE bytes, of the process whose code JM names. */
void samples_add(struct samples *ss, struct jitmap *jm, const struct qj_sample *r, size_t size);
/* The same, for a sample made in user space: its kernel frames by name
 * (NK of KNAMES, leaf first), not by address. */
void samples_add_named(struct samples *ss, struct jitmap *jm, const struct qj_sample *r,
		       size_t size, const char (*knames)[64], int nk);
/* A QJ_EV_WAIT_END record: the thread's sample taken as it was preempted
 * stands for its period. */
void samples_wait_end(struct samples *ss, const struct qj_wait_end *e);
/* Thread TID's wait under way has been taken up to UNTIL in user space;
 * where from to take it next time. */
void samples_wait_taken(struct samples *ss, pid_t tid, uint64_t until);
uint64_t samples_wait_taken_until(const struct samples *ss, pid_t tid);
/* The code map is complete up to a flush: name what ran before it. */
void samples_flush(struct samples *ss, struct jitmap *jm);
/*
 * Read what samples need of QEMU's maps (its images, its code buffer) now,
 * while the process runs: with -a, a short one may be gone by the time its
 * samples are read.
 */
void samples_prepare(struct samples *ss, struct jitmap *jm);
/* Name the samples older than NOW - AGE_NS (all with AGE_NS 0). */
void samples_resolve(struct samples *ss, struct jitmap *jm, uint64_t now, uint64_t age_ns);
void samples_free(struct samples *ss);

#endif
