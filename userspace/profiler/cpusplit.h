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

/* Sampled CPU time by part. */
struct cpu_split {
	uint64_t ns[PART_MAX];
	uint64_t samples;
};

/* The part of a sample: in the kernel (IN_KERNEL), in translated code
 * (JIT; JIT_RET: in a helper it called), and QEMU's frames' names. */
enum cpu_part cpu_part_of(bool in_kernel, bool jit, bool jit_ret, const char *const *qemu_frames,
			  size_t n);
/* Its name in reports and JSON: "guest", "translate", "helper:fp", ... */
const char *cpu_part_name(enum cpu_part p);
/* Is it one of the helper families? */
bool cpu_part_is_helper(enum cpu_part p);
uint64_t cpu_split_total(const struct cpu_split *s);
void cpu_split_add(struct cpu_split *to, const struct cpu_split *from);

#endif
