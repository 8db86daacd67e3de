/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel makes the first uprobe of a quiet system wait for two RCU
 * grace periods (~20 ms here): one to turn on perf's context-switch hooks
 * for per-task events, one for the rcu_sync of uprobe registration.  A
 * thread opens a disabled uprobe on QEMU while the BPF programs load, so
 * the real probes attach without that wait.  Nothing depends on it: any
 * failure only costs the time it was meant to save.
 */
#ifndef QJ_WARMUP_H
#define QJ_WARMUP_H

#include <sys/types.h>

struct warmup;

/* Start warming up for probes on EXE in process PID; NULL if it cannot. */
struct warmup *warmup_start(const char *exe, pid_t pid);
/*
 * Wait for the thread; returns the perf event it opened (or -1).  Keep it
 * open until the real probes are attached, and close it with them: closing
 * a uprobe takes as long as detaching one.
 */
int warmup_finish(struct warmup *w);

#endif
