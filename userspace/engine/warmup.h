/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel makes the first uprobe registration of a quiet system wait
 * for an RCU grace period (~10-25 ms here: the rcu_sync of uprobe
 * registration).  A thread attaches a trivial program to our own entry
 * point (code that never runs again) as soon as we start, so that QEMU's
 * probes attach without that wait.  Nothing depends on it: a failure only
 * costs the time it was meant to save.
 */
#ifndef QJ_WARMUP_H
#define QJ_WARMUP_H

struct warmup;

/* Start warming up; NULL if it cannot. */
struct warmup *warmup_start(void);
/*
 * Wait for the thread; returns the BPF link it made (or -1).  Keep it
 * until the real probes are attached, and release it with them: releasing
 * a uprobe takes as long as detaching one.
 */
int warmup_finish(struct warmup *w);

#endif
