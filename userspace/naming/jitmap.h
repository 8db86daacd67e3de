/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One QEMU process's translated code, named.  QEMU reports each TB once
 * its code is final, in batches that may reach us in parts; each guest
 * instruction's host code is named after the guest function it runs, in
 * runs of one function (the perf map's lines, the jitdump's records)
 * and, for the profiler, one range per instruction.  The guest address
 * space that names them goes with it.
 */
#ifndef QJ_JITMAP_H
#define QJ_JITMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#include "qemu-jitbpf.h"
#include "naming/codemap.h"
#include "naming/guest.h"
#include "util/u64bits.h"

struct partial;

struct jitmap {
	struct guest guest;
	struct codemap code;  /* runs of one guest function */
	struct codemap insns; /* one range per guest instruction, if kept */
	bool perfmap_insn;    /* code: one range per instruction, sym+0xoff */
	bool keep_insns;      /* for the profiler */
	int page_bits;
	bool layout_known;	  /* the prologue (and the page size) came */
	bool flush_pending;	  /* the next TB retires the code maps */
	char *exe_path;		  /* the first image QEMU reported */
	uint64_t host_hi;	  /* the end of the highest TB's host code so far */
	struct partial *partials; /* batches whose last part is to come */
	struct partial *free_partials;
	/* What happened, for the summary. */
	uint64_t tbs;
	uint64_t flushes;
	uint64_t tbs_incomplete; /* parts lost in the ring buffer */
	uint64_t tbs_early;	 /* before the prologue: retranslated later */
	uint64_t answered_ns;	 /* when QEMU answered our first request */
	uint64_t tbs_held;	 /* translated before that: held by QEMU */
	uint64_t tbs_cached;	 /* in the code cache at a handshake */
	/* Blocks translated again (count_again): after a flush, and without
	 * one (the guest wrote to its code, an invalidation, another CPU
	 * state), from the generation each guest pc was last translated in. */
	bool count_again;
	struct u64bits again, again_old; /* guest pcs translated since the last
					  * flush, and before it */
	uint64_t tbs_again_flush, tbs_again_other;
};

/*
 * A run of guest instructions of one function in a TB, for writers that
 * want the code itself (jitdump): host range, its bytes, the name, and
 * where each instruction's code starts, with its guest location.
 */
struct jit_run {
	uint64_t ts; /* when QEMU reported the TB */
	uint32_t tid;
	uint64_t host;
	const uint8_t *code; /* NULL: a TB of the code cache at a handshake */
	uint32_t size;
	const char *name;
	uint32_t n;		      /* instructions */
	const uint32_t *insn_off;     /* of each, from host */
	const struct guest_loc *locs; /* of each */
	/* Its TB: 1 + the slot QEMU counts its executions in (0: none), its
	 * first guest pc and instructions; FIRST: the TB's first run. */
	uint32_t slot;
	uint64_t tb_pc;
	uint32_t tb_icount;
	bool first;
};
typedef void (*jit_run_fn)(void *ctx, const struct jit_run *run);

/* PID: the process whose maps name the libraries its guest maps, or 0. */
void jitmap_init(struct jitmap *m, pid_t pid, bool perfmap_insn, bool keep_insns);
/* A part of a batch of TB reports; FN (if not NULL) gets each run. */
void jitmap_tbs(struct jitmap *m, const struct qj_tbs *r, jit_run_fn fn, void *ctx);
void jitmap_prologue(struct jitmap *m, const struct qj_prologue *r);
/*
 * A stock QEMU's TB (the degraded mode): its first guest pc and its host
 * code, with no instruction boundaries, named as one run; FN as above.
 */
void jitmap_block(struct jitmap *m, const struct qj_block *r, jit_run_fn fn, void *ctx);
/* Every host range may be reused: the next TB retires the maps. */
void jitmap_flush(struct jitmap *m);
/* An ELF image QEMU reports: linux-user's, at its bias, or one a VM loaded. */
void jitmap_image(struct jitmap *m, const struct qj_image *r);
/* CHILD, new, starts as a copy of PARENT: a forked QEMU's code cache. */
void jitmap_fork(struct jitmap *child, const struct jitmap *parent);
void jitmap_free(struct jitmap *m);

#endif
