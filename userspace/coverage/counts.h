/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Execution counts of one QEMU process (--coverage-counts).  QEMU counts
 * each TB's executions in a slot of an array per vCPU, and reports the
 * slot with the TB (docs/probes.md, jit_counts).  The counts come as the
 * arrays' values: final ones (before a flush zeroes them, when a thread or
 * the process ends) add to the instructions of the slot's TB; snapshots
 * (asked for at an interval's end, or before detaching) add what they grew
 * by since the array's last report, so that what the coverage holds is
 * always every count reported.  Counts of a slot whose TB report has not
 * come yet wait for it; a flush ends every slot's TB.
 */
#ifndef QJ_COUNTS_H
#define QJ_COUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/u64map.h"

struct coverage;
struct elf_file;
struct jit_run;
struct qj_counts;

struct tb_counts {
	/* Each slot's TB: its instructions in refs, and its hot-block row. */
	struct slot_tb {
		uint32_t first, n; /* (none when no image with an ELF file holds it) */
		size_t hot;	   /* 1 + its row in the coverage's table, or 0 */
		bool reported;
	} * slots;
	size_t nslots;
	struct insn_ref {
		struct elf_file *elf;
		uint64_t link;
	} * refs;
	size_t nrefs, refs_cap;
	struct u64map pending; /* slot -> executions, its TB report still to come */
	struct u64map live;    /* array << 32 | slot -> its last snapshot's count */
	struct u64map rows;    /* first guest pc -> 1 + its hot-block row */
	uint32_t cur_slot;     /* the TB whose runs come (they come together) */
	uint64_t cur_pending;
	uint64_t sync;	    /* QEMU's JitCountsSync, once told */
	uint64_t requested; /* the last snapshot asked for, */
	uint64_t answered;  /* and the last QEMU answered */
	bool started;	    /* QEMU said it counts (or the parent's did, before the fork) */
	bool ran;	    /* a TB of this process was reported */
	int pid;
};

/* A run of a TB's code. */
void tb_counts_run(struct tb_counts *t, struct coverage *c, const struct jit_run *run);
/* A record of counts. */
void tb_counts_event(struct tb_counts *t, struct coverage *c, const struct qj_counts *r);
/* CHILD, a process PARENT's QEMU forked, runs the TBs it inherited. */
void tb_counts_fork(struct tb_counts *child, const struct tb_counts *parent);
/* QEMU flushed its code: no slot has a TB. */
void tb_counts_flush(struct tb_counts *t, struct coverage *c);
/* Ask QEMU (its /proc/PID/mem, MEM_FD) for a snapshot: the value to wait
 * for in t->answered, or 0 when QEMU cannot be asked. */
uint64_t tb_counts_request(struct tb_counts *t, int mem_fd);
void tb_counts_free(struct tb_counts *t, struct coverage *c);

#endif
