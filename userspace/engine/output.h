/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a run writes, each kind of file behind one interface (as perf's
 * struct perf_tool): the run's start, each process followed (when it is
 * taken in, when its records begin, when its program ends), the run's
 * end.  The engine calls every output asked for, in the order of
 * engine_outputs[]; an output keeps its state in the engine or the
 * process, and nothing else knows what it writes.
 */
#ifndef QJ_OUTPUT_H
#define QJ_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>

struct engine;
struct engine_opts;
struct kept;
struct proc;

/* A process whose program has ended (or that we stop following). */
struct proc_end {
	struct proc *p;
	const char *why; /* "exit", "exec", "still running", ... */
	bool running;	 /* it runs on: we stop following it */
	const char *exe; /* the guest program, as the files name it */
	bool named;	 /* its handshake came complete: files are written */
	bool root;	 /* the QEMU the user named */
	struct kept *k;	 /* --keep-exited: its files, removed in time */
};

struct output {
	const char *name;
	/* Is it asked for? */
	bool (*wanted)(const struct engine_opts *o);
	/* The run starts, before anything is attached: 0 or -errno (said). */
	int (*begin)(struct engine *e);
	/* P is followed from now on; its session is made. */
	void (*proc_new)(struct engine *e, struct proc *p);
	/* P's records begin at TS: forked by PARENT's thread TID, or not. */
	void (*proc_begin)(struct engine *e, struct proc *p, const struct proc *parent,
			   uint32_t tid, uint64_t ts);
	/* Its program has ended: complete its files. */
	void (*proc_end)(struct engine *e, struct proc_end *pe);
	/* Each turn of the loop (REAP: once a second, the ring drained). */
	void (*tick)(struct engine *e, uint64_t now, bool reap);
	/* The run ends (its processes have): complete the run's files. */
	void (*end)(struct engine *e);
	/* P is forgotten (its files completed, or dropped after an error). */
	void (*proc_free)(struct engine *e, struct proc *p);
	/* Free what is left, after an error too. */
	void (*free)(struct engine *e);
};

extern const struct output output_report, output_profile, output_perfmap, output_jitdump,
	output_uftrace, output_coverage, output_stacks;

#endif
