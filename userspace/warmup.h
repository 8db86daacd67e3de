/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel makes the first uprobe of a quiet system wait for two RCU
 * grace periods (~10 ms each here): one to turn on perf's context-switch
 * hooks for per-task events, one for the rcu_sync of uprobe registration.
 * A thread opens a disabled uprobe on our own entry point (code that never
 * runs again) as soon as we start, so that QEMU's probes attach without
 * that wait.  Nothing depends on it: a failure only costs the time it was
 * meant to save.
 */
#ifndef QJ_WARMUP_H
#define QJ_WARMUP_H

struct warmup;

/* Start warming up; NULL if it cannot. */
struct warmup *warmup_start(void);
/*
 * Wait for the thread; returns the perf event it opened (or -1).  Keep it
 * open until the real probes are attached, and close it with them: closing
 * a uprobe takes as long as detaching one.
 */
int warmup_finish(struct warmup *w);

#endif
