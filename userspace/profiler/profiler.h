/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --profile and --top: the sampling profiler of one run, from the BPF
 * sampler through the samples' stacks to the profile files.
 */
#ifndef QJ_PROFILER_H
#define QJ_PROFILER_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "profiler/profile.h"
#include "profiler/samples.h"
#include "profiler/sampler.h"
#include "util/keep.h"

struct profiler_opts {
	const char **files; /* --profile FILEs */
	int nfiles;
	unsigned int freq;	  /* -F */
	unsigned int stack_bytes; /* --call-graph=dwarf,BYTES; 0 for fp */
	unsigned int interval;	  /* --interval=SECONDS, 0 for one profile */
	struct keep keep;	  /* --keep-profiles: interval files per FILE */
	bool chain;		  /* --profile-chain: roots under the parents' */
	bool stacks;		  /* name the stacks (else only the split) */
	bool off_cpu;		  /* --off-cpu: wall-clock profiles */
};

struct profiler {
	struct profiler_opts opts;
	struct profile prof;
	struct sampler *sm;
	uint64_t unknown_jit; /* of the sessions ended so far */
	/* --interval: PROF holds the current interval, NEXT what came after
	 * its end (SPLIT_NS), until all of it is named and it is written. */
	struct profile next;
	uint64_t split_ns;
	time_t interval_start; /* wall clock */
	uint64_t written;      /* samples in the interval files so far */
	unsigned int intervals;
	uint64_t pruned;      /* interval files removed (--keep-profiles) */
	uint64_t started_ns;  /* CLOCK_MONOTONIC, when the sampler started */
	uint64_t waits_until; /* --off-cpu: waits under way counted up to */
	/* Called with each interval written and its wall-clock span (--push). */
	int (*on_interval)(void *ctx, const struct profile *prof, time_t from, time_t until);
	void *on_interval_ctx;
};

/*
 * Load the sampler into the main object's ring buffer and process map,
 * numbering tasks as it does (PIDNS), with the frame-chain WALKERS its
 * guests need (sampler_walkers()), for up to THREADS vCPU threads at once
 * (the least recently used forgotten).
 */
int profiler_open(struct profiler *pr, const struct profiler_opts *o, int ringbuf_fd, int procs_fd,
		  const struct qj_pidns *pidns, unsigned int walkers, unsigned int threads);
/* Sample process PID: its samples go to the profile, named with its maps;
 * where its CPU went to SPLIT too, if not NULL (--report). */
struct samples *profiler_follow(struct profiler *pr, pid_t pid, struct cpu_split *split);
/* Its process has gone, or we stop: name what is left, free SS. */
void profiler_end(struct profiler *pr, struct samples *ss, struct jitmap *jm);
/* Attach to the jit_vcpu probe of BINARY in PID (-1: all its processes);
 * the link is the caller's, NULL with the reason printed. */
struct bpf_link *profiler_attach(struct profiler *pr, pid_t pid, const char *binary);
/* And to its jit_vcpu_thread probe, which says where every vCPU thread's
 * registers are at a handshake: NULL with the reason printed. */
struct bpf_link *profiler_attach_threads(struct profiler *pr, pid_t pid, const char *binary);
/* Start the CPU clocks; -errno with the reason printed. */
int profiler_start(struct profiler *pr);
/* Name the samples of SS old enough for their TB reports to have come. */
void profiler_resolve(struct samples *ss, struct jitmap *jm, uint64_t now);
/*
 * --interval: once the current interval's samples are all named, write
 * them to files named after the profile files with the interval's start
 * time in them, and start counting again.
 */
int profiler_interval(struct profiler *pr, uint64_t now, uint64_t *bytes);
int profiler_finish(struct profiler *pr, bool write, uint64_t *bytes);
/* Samples taken so far, in files written and to be written. */
uint64_t profiler_samples(const struct profiler *pr);
uint64_t profiler_lost(const struct profiler *pr);
void profiler_free(struct profiler *pr);

#endif
