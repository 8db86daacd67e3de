/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One tracing session: turns the records of the BPF programs into guest
 * names per host range, and feeds the writers (perf map, jitdump).
 */
#ifndef QJ_SESSION_H
#define QJ_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codemap.h"
#include "guest.h"
#include "handshake.h"
#include "jitdump.h"
#include "samples.h"
#include "target.h"
#include "uftrace.h"

struct partial;

struct session {
	struct target *target;
	bool perfmap_insn; /* one perf map line per guest instruction */
	bool want_jitdump;
	struct guest guest;
	struct handshake hs;
	struct codemap code;
	struct codemap insns; /* one range per guest instruction, for samples */
	struct samples *smp;  /* the profiler's, or NULL */
	struct jitdump *jd;
	struct uftrace *uft;
	uint64_t *targets; /* call targets looked up already (open addressing) */
	size_t ntargets, targets_cap;
	uint64_t recent[256]; /* direct-mapped cache in front of targets */
	char *exe_path;	      /* the first image QEMU reported */
	int page_bits;
	bool layout_known;
	bool flush_pending;	  /* the code map is retired by the next TB */
	bool prologue_loaded;	  /* in the jitdump */
	struct partial *partials; /* parts of TBs whose TB record is to come */
	struct partial *free_partials;
	/* What happened, for the summary. */
	uint64_t tbs;
	uint64_t flushes;
	uint64_t tbs_incomplete; /* parts lost in the ring buffer */
	uint64_t tbs_early;	 /* before the handshake: retranslated later */
	uint64_t bytes;
	uint64_t bytes_pending; /* jitdump bytes not yet counted */
	char *marker_path;
};

void session_init(struct session *s, struct target *t, bool perfmap_insn, bool jitdump,
		  struct uftrace *uft);
/* ring_buffer_sample_fn */
int session_event(void *ctx, void *data, size_t size);
/*
 * Once our handshake came: did it bring what the files need (the prologue
 * if NEED_PROLOGUE, guest images, a jitdump marker if one is wanted)?
 * -errno with what is missing printed.
 */
int session_check_handshake(struct session *s, bool need_prologue);
/*
 * CHILD is a fresh session of a process PARENT's QEMU forked: it starts
 * with PARENT's images and live code, as the child inherits the code cache.
 */
void session_fork(struct session *child, const struct session *parent);
void session_free(struct session *s);

#endif
