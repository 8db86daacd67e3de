/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Dropping our BPF links: in parallel, so that their RCU grace periods
 * overlap, and, once QEMU is gone, in a helper process shared by all
 * tools, so that nobody waits for them (detach.c says why).
 */
#ifndef QJ_DETACH_H
#define QJ_DETACH_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

/* Most links one tool hands over. */
#define DETACH_MAX_FDS 64

struct bpf_object;
struct sampler;

/* The fds of every program OBJ loaded, and SM's if not NULL; the count. */
int detach_prog_fds(struct bpf_object *obj, const struct sampler *sm, int *fds, int max);
/*
 * New fds for the BPF links on the system that run one of the programs
 * PROG_FDS: the links are then ours to drop, whatever the library that
 * made them keeps.  Only those of process PID if PID is not 0 (a USDT
 * program attached to it); only those from link id *FROM on if FROM is
 * not NULL, which then gets the last id seen.  The fds go to *FDS, and
 * if IDS is not NULL the links' ids to *IDS (free both); returns the
 * count.
 */
int detach_collect(const int *prog_fds, int nprogs, pid_t pid, __u32 *from, int **fds, __u32 **ids);
/* New fds for those of the links IDS that still run one of PROG_FDS. */
int detach_reopen(const int *prog_fds, int nprogs, const __u32 *ids, size_t nids, int **fds);
/* Close FDS now, each in its own thread; returns when all are closed. */
void detach_close(int *fds, int n);
/* Give FDS to the helper (started if none runs), which closes them. */
void detach_handoff(int *fds, int n);
/* Reap the helpers we started that have left (call it now and then). */
void detach_reap(void);
/* Is this process, by its arguments, a helper that a tool started? */
bool detach_helper_asked(int argc, char **argv);
/* The helper's life: takes links and closes them until idle; the exit code. */
int detach_helper_main(char **argv);

#endif
