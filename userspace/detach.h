/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Dropping our BPF links: in parallel, so that their RCU grace periods
 * overlap, and, once QEMU is gone, in a helper process shared by all
 * tools, so that nobody waits for them (detach.c says why).
 */
#ifndef QJ_DETACH_H
#define QJ_DETACH_H

/* Most links one tool hands over. */
#define DETACH_MAX_FDS 64

struct bpf_object;
struct sampler;

/*
 * New fds for every BPF link on the system that runs one of the programs
 * PROG_FDS: the links are then ours to drop, whatever the library that
 * made them keeps.  The array goes to *FDS (free it); returns the count.
 */
/* The fds of every program OBJ loaded, and SM's if not NULL; the count. */
int detach_prog_fds(struct bpf_object *obj, const struct sampler *sm, int *fds, int max);
int detach_collect(const int *prog_fds, int nprogs, int **fds);
/* Close FDS now, each in its own thread; returns when all are closed. */
void detach_close(int *fds, int n);
/* Give FDS to the helper (started if none runs), which closes them. */
void detach_handoff(int *fds, int n);

#endif
