/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where a QEMU spends its CPU, from its samples: the guest's own code,
 * translating, finding and entering the next block, helpers by family,
 * the host kernel, the rest of QEMU.  Each sample is put in one part by
 * its QEMU frames' names and where its leaf was.
 */
#ifndef QJ_CPUSPLIT_H
#define QJ_CPUSPLIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cpu_part {
	PART_GUEST,	/* translated code: the guest's own */
	PART_TRANSLATE, /* QEMU's translator and code generator */
	PART_LOOKUP,	/* finding and entering the next block: the execution loop */
	PART_FP,	/* helpers: floating point (softfloat) */
	PART_PAUTH,	/* helpers: pointer authentication */
	PART_CRYPTO,	/* helpers: other crypto (AES, SHA, CRC, carry-less) */
	PART_VECTOR,	/* helpers: vector (SVE, Neon, SSE, gvec) */
	PART_ATOMIC,	/* helpers: atomics and exclusive monitors */
	PART_MMU,	/* helpers: memory management (system mode) */
	PART_HELPER,	/* other helpers */
	PART_KERNEL,	/* the host kernel: system calls, faults */
	PART_QEMU,	/* the rest of QEMU: system call emulation, its loop */
	PART_MAX,
};

/* What a stretch of a process's time was mostly spent on (a timeline's). */
enum cpu_phase_kind {
	PHASE_TRANSLATE, /* translating */
	PHASE_RUN,	 /* running the guest: its code, lookup, helpers */
	PHASE_KERNEL,	 /* in the host kernel */
	PHASE_QEMU,	 /* the rest of QEMU */
	PHASE_KINDS,
};

struct cpu_phase {
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
	enum cpu_phase_kind kind;
};

/*
 * The phases of a process in time order, at most PHASES_MAX: its samples
 * in windows of PHASE_WINDOW_NS (4 sample periods at least), each window
 * the kind most of its samples were, and windows of a kind in a row one
 * phase.
 */
struct cpu_phases {
	struct cpu_phase *v;
	size_t n, cap;
	uint64_t dropped; /* windows past the last phase kept */
	uint64_t win_start, win_end, win_len;
	uint32_t win[PHASE_KINDS];
};

#define PHASES_MAX	100000
#define PHASE_WINDOW_NS (10ull * 1000 * 1000)

/*
 * What a part's CPU went to, the most first: kept as the space-saving
 * count keeps its top items (a newcomer takes the smallest one's place
 * and count), so an item's time is exact while the table has room, and
 * over by at most the smallest's after.
 */
#define SPLIT_TOP 8
struct split_item {
	char name[40];
	uint64_t ns;
};

/* Sampled CPU time by part. */
struct cpu_split {
	uint64_t ns[PART_MAX];
	uint64_t samples;
	uint64_t syscall_ns;		 /* in the guest's system calls (QEMU's and the kernel's) */
	uint64_t syscall_kernel_ns;	 /* of which in the host kernel */
	uint8_t reg_bytes;		 /* the guest's register width: 4 or 8, 0 if not known */
	struct split_item fn[SPLIT_TOP]; /* helpers, by the one translated code called */
	struct split_item sys[SPLIT_TOP]; /* system calls, by name */
	struct cpu_phases *phases;	  /* when a timeline is wanted; not summed */
};

/* The part of a sample: in the kernel (IN_KERNEL), in translated code
 * (JIT; JIT_RET: in a helper it called), and QEMU's frames' names. */
enum cpu_part cpu_part_of(bool in_kernel, bool jit, bool jit_ret, const char *const *qemu_frames,
			  size_t n);
/* Its name in reports and JSON: "guest", "translate", "helper:fp", ... */
const char *cpu_part_name(enum cpu_part p);
/* Its frame in a profile, between the guest's and QEMU's ("[translate]",
 * "[helper: pauth]"); NULL for the guest's own code. */
const char *cpu_part_frame(enum cpu_part p);
/* Is it one of the helper families? */
bool cpu_part_is_helper(enum cpu_part p);
uint64_t cpu_split_total(const struct cpu_split *s);
void cpu_split_add(struct cpu_split *to, const struct cpu_split *from);
/* NS more for item NAME of table T (fn or sys). */
void split_item_add(struct split_item t[SPLIT_TOP], const char *name, uint64_t ns);
/* T's items sorted by time, the most first; the count of those in use. */
size_t split_items_sorted(const struct split_item t[SPLIT_TOP], struct split_item out[SPLIT_TOP]);
/* A sample at TS of PERIOD ns in PART. */
void cpu_phases_add(struct cpu_phases *ph, uint64_t ts, uint64_t period, enum cpu_part part);
/* The window under way ends: its phase is in. */
void cpu_phases_flush(struct cpu_phases *ph);
const char *cpu_phase_name(enum cpu_phase_kind k);
void cpu_phases_free(struct cpu_phases *ph);

#endif
