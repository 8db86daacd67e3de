/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --profile and --top: the sampling profiler of one run, from the BPF
 * sampler through the samples' stacks to the profile files.
 */
#ifndef QJ_PROFILER_H
#define QJ_PROFILER_H

#include <stdbool.h>
#include <stdint.h>

#include "profile.h"
#include "samples.h"
#include "sampler.h"
#include "session.h"

struct profiler_opts {
	const char **files; /* --profile FILEs */
	int nfiles;
	unsigned int freq;	  /* -F */
	unsigned int stack_bytes; /* --call-graph=dwarf,BYTES; 0 for fp */
};

struct profiler {
	struct profiler_opts opts;
	struct profile prof;
	struct samples samples;
	struct sampler *sm;
	bool started; /* sampling the target */
};

/* After the main BPF object is loaded: load the sampler into its ring. */
int profiler_open(struct profiler *pr, const struct profiler_opts *o, struct session *s,
		  int ringbuf_fd);
/* Before the handshake's probe: attach to jit_vcpu. */
int profiler_attach(struct profiler *pr, struct session *s);
/* From the main loop: start once guest_base is known, name older samples. */
int profiler_tick(struct profiler *pr, struct session *s, uint64_t now);
/* After the last drain: name the rest, write the files. */
int profiler_finish(struct profiler *pr, struct session *s, bool write, uint64_t *bytes);
uint64_t profiler_lost(const struct profiler *pr);
void profiler_free(struct profiler *pr);

#endif
