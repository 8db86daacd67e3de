/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One QEMU process, as the ring buffer tells it: its records turn into
 * named code (naming/jitmap.h) and feed the writers (jitdump, uftrace)
 * and the profiler's samples; its handshake says whether the names are
 * complete.
 */
#ifndef QJ_SESSION_H
#define QJ_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coverage/counts.h"
#include "naming/jitmap.h"
#include "engine/handshake.h"
#include "engine/target.h"
#include "profiler/samples.h"
#include "writers/jitdump.h"
#include "writers/uftrace.h"

struct coverage;
struct coverage_opts;
struct drcov;

struct session {
	struct target *target;
	struct jitmap jm;
	struct handshake hs;
	struct samples *smp;	 /* the profiler's, or NULL */
	struct cpu_split *split; /* --report: where its CPU went, or NULL */
	struct coverage *cov;	 /* the run's, or NULL */
	struct drcov *dc;	 /* this process's blocks, when a .drcov is wanted */
	struct tb_counts *cnt;	 /* --coverage-counts: its TBs' slots and counts */
	const struct coverage_opts *cov_opts;
	bool want_jitdump;
	struct jitdump *jd;
	struct uftrace *uft;   /* where its calls go (a tree's, or its own), or NULL */
	bool prologue_loaded;  /* in the jitdump */
	int mem_fd;	       /* its /proc/PID/mem, where we say how far we read */
	uint64_t calls_seq;    /* the last batch of calls read, */
	uint64_t calls_sync;   /* where to say so (QEMU's JitCallSync), */
	uint64_t calls_told;   /* what we last said */
	uint64_t calls_waits;  /* QEMU waited for us, */
	uint64_t calls_waited; /* last at this seq */
	uint64_t bytes;
	char *marker_path;
	bool marker_refused; /* QEMU's marker is not what it made: no jitdump */
	/*
	 * Records that came before the handshake's prologue, in order (TB
	 * reports, and the flushes between them): read once it comes.  A
	 * QEMU that exits or execs before its handshake gives it then, and
	 * what it reported is all it ran.
	 */
	struct kept_rec *early, **early_tail;
	size_t early_bytes;
	uint64_t tbs_kept; /* TB reports kept so */
	/* A stock QEMU (the degraded mode): */
	uint64_t blocks_unplaced; /* TBs before its guest_base was known */
	uint64_t stock_tried_ns;  /* when a TB last had us read its mappings */
	bool refused;		  /* its TBs are laid out otherwise: no names */
};

/* KEEP_INSNS: the profiler names samples per guest instruction. */
/* COUNTS: --coverage-counts. */
void session_init(struct session *s, struct target *t, bool perfmap_insn, bool keep_insns,
		  bool jitdump, struct uftrace *uft, bool counts);
/* Its calls go to U from now on (and QEMU hears how far we read them). */
void session_set_uftrace(struct session *s, struct uftrace *u);
/* One record of the ring buffer, of this process. */
void session_event(struct session *s, const void *data, size_t size);
/*
 * A stock QEMU, once our probes are in: its guest_base from its mappings,
 * if they tell; else from the first file it maps or the first TB.  Its
 * names stand (the handshake it does not have) once that is known.
 */
void session_stock_begin(struct session *s);
/* Tell QEMU how far we have read its calls, if further than we said. */
void session_calls_read(struct session *s);
/*
 * Once our handshake came: did it bring what the files need (the prologue
 * if NEED_PROLOGUE, guest images, a jitdump marker if one is wanted)?
 * -errno with what is missing printed.
 */
int session_check_handshake(struct session *s, bool need_prologue);
/* Do the names of this process's code stand: handshake, prologue (if
 * NEED_PROLOGUE), images? */
bool session_named(const struct session *s, bool need_prologue);
/*
 * CHILD is a fresh session of a process PARENT's QEMU forked: it starts
 * with PARENT's images and live code, as the child inherits the code cache.
 */
void session_fork(struct session *child, const struct session *parent);
void session_free(struct session *s);

#endif
