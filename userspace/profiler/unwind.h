/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The guest's call chain at a sample, from its own state: the registers
 * QEMU keeps in env and what the BPF program read of the guest's stack.
 * --call-graph=fp follows the frame-pointer chain the BPF program walked,
 * with the leaf's caller fixed up from the guest ELF's CFI (a leaf often
 * has no frame of its own); --call-graph=dwarf unwinds a copy of the
 * stack with libdwfl, from the CFI of every guest image.
 */
#ifndef QJ_UNWIND_H
#define QJ_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "naming/guest.h"
#include "qemu-jitbpf.h"
#include "sample.h"
#include "profiler/profile.h"

/* Most guest frames of one sample. */
#define UNWIND_MAX 128

/*
 * Guest pcs at sample R, whose leaf is at LEAF: PCS[0] = LEAF, then the
 * return addresses of its callers, callee first.  Returns the count.
 */
size_t unwind_fp(struct guest *g, const struct qj_sample *r, uint64_t leaf, uint64_t *pcs,
		 size_t max);
size_t unwind_dwarf(struct guest *g, const struct qj_sample *r, uint64_t leaf, uint64_t *pcs,
		    size_t max);
/*
 * unwind_dwarf(), with how each frame was found into HOW[]: from CFI (or
 * the sample's registers), or from its function's prologue, for code
 * without CFI.
 */
enum { UNWIND_CFI, UNWIND_PROLOGUE };
size_t unwind_dwarf_how(struct guest *g, const struct qj_sample *r, uint64_t leaf, uint64_t *pcs,
			uint8_t *how, size_t max);
void unwind_free(void);

#endif
