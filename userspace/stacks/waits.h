/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --off-cpu: the waits still under way when a profile is written.  The
 * BPF side counts a wait when the thread comes back from it; a thread
 * blocked through a whole interval (a deadlock, a read that never
 * returns) never does.  Its time so far is counted from user space, from
 * what --stacks reads of a blocked thread, and the BPF side counts on
 * from there.
 */
#ifndef QJ_WAITS_H
#define QJ_WAITS_H

#include <stdint.h>
#include <sys/types.h>

struct profiler;
struct samples;
struct jitmap;

/*
 * Each blocked vCPU thread of process PID: its wait's ticks from its start
 * (or from SINCE, when the profiler started, if it began before) to UNTIL
 * (CLOCK_MONOTONIC), as one off-CPU sample of SS taken at UNTIL - 1;
 * the rest of the wait counts from UNTIL.  Samples added.
 */
int waits_take_open(struct profiler *pr, struct samples *ss, struct jitmap *jm, pid_t pid,
		    uint64_t since, uint64_t until);

#endif
