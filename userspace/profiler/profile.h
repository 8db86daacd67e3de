/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A CPU profile: the distinct stacks sampled, each with its count and
 * CPU time.  A stack is a process (COMM-PID, its root), the guest's call
 * chain root first, then QEMU's frames and the kernel's, where the sample
 * was in them.  The writers (folded, pprof, flame graph SVG) and the live
 * view read it.
 */
#ifndef QJ_PROFILE_H
#define QJ_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "naming/symbols.h"
#include "util/strtab.h"

enum frame_kind {
	FRAME_GUEST,  /* the emulated program */
	FRAME_QEMU,   /* QEMU's own code and its libraries: mark _[q] */
	FRAME_KERNEL, /* the host kernel: mark _[k] */
};

/* What the writers need of a frame's file: a profile keeps this, not the
 * file, which goes when the processes that mapped it are gone. */
struct frame_image {
	const char *path;     /* NULL: the frame is in no file */
	const char *build_id; /* hex; "" when the file has none */
	uint64_t lo, hi;      /* the file's addresses in the process */
};

struct frame {
	const char *name; /* in a profile: in its names */
	uint64_t addr;	  /* guest or host address looked up */
	/* The file of ADDR (NULL: none), where profile_add() finds what a
	 * profile keeps; NULL in a profile. */
	struct elf_file *elf;
	uint64_t bias; /* addr = link address + bias, when elf */
	uint8_t kind;
	/* In a profile: */
	int line;	  /* source line of a guest frame, 0 when unknown */
	const char *file; /* its source file, or NULL */
	struct frame_image img;
};
/* Where a sample found the CPU, for the live view's QEMU share. */
enum sample_where {
	IN_GUEST,	/* translated code */
	IN_HELPER,	/* a helper called from translated code */
	IN_TRANSLATION, /* QEMU translating guest code */
	IN_QEMU,	/* the rest of QEMU: its loop, syscall emulation */
	IN_KERNEL,	/* the host kernel (syscalls, faults, interrupts) */
	IN_OFFCPU,	/* --off-cpu: off its CPU, waiting */
	IN_MAX,
};

/* What a fleet tells processes apart by (pprof labels), or NULL. */
struct proc_labels {
	const char *qemu;    /* the QEMU binary's name */
	const char *arch;    /* the guest architecture, as the binary's name says */
	const char *cgroup;  /* its cgroup (v2) path: a container's, a unit's */
	const char *command; /* the guest program's name, once QEMU said it */
};

struct stack {
	const char *root; /* COMM-PID, or PARENT-ROOT;COMM-PID (a chain) */
	struct proc_labels labels;
	pid_t pid, tid;
	uint8_t where;
	uint32_t n;
	uint64_t count;
	uint64_t ns;
	uint64_t hash;
	struct frame *frames; /* root first */
};

struct profile {
	struct stack **tab; /* open addressing, by hash */
	size_t cap, n;
	struct stack **v; /* in order of first sight */
	size_t vcap;
	uint64_t samples;
	uint64_t ns;
	uint64_t off_ns; /* of NS, off the CPU (IN_OFFCPU stacks) */
	/* --off-cpu: a wall-clock profile, each stack weighed by its time
	 * (on and off CPU, in ns) in folded stacks and flame graphs, not by
	 * its count of samples. */
	bool wall;
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC of the first and last sample */
	unsigned int freq;
	struct strtab names;	 /* of its stacks: frames, roots, labels */
	struct proc_name *procs; /* the processes followed now */
	size_t nprocs, procs_cap;
	/* --interval: samples from SPLIT_NS on go to *AFTER (the next one). */
	uint64_t split_ns;
	struct profile *after;
};

void profile_init(struct profile *p, unsigned int freq);
/* Count one sample of FRAMES (root first) that stands for NS of CPU. */
void profile_add(struct profile *p, pid_t pid, pid_t tid, enum sample_where where,
		 const struct frame *frames, size_t n, uint64_t ns, uint64_t ts);
/* Remember COMM of PID, while it runs: the root frame of its stacks from
 * now on is COMM-PID. */
void profile_see_process(struct profile *p, pid_t pid);
/* PID's stacks go under those of PPID, if the profile knows it: roots are
 * the chain of programs (make-1;gcc-2;cc1-3), frames split by ';'. */
void profile_set_parent(struct profile *p, pid_t pid, pid_t ppid);
/* The next frame of a stack's root from *AT (a chain: ';' between) into
 * BUF, moving *AT past it; NULL when there is none. */
const char *profile_root_next(const char **at, char *buf, size_t size);
/* PID's guest program is COMMAND (its file's name): its stacks from now on
 * carry it as a label. */
void profile_set_command(struct profile *p, pid_t pid, const char *command);
/* PID's program has ended: its stacks keep their names. */
void profile_forget_process(struct profile *p, pid_t pid);
/* PID's root name (in BUF if it is not followed). */
const char *profile_root(const struct profile *p, pid_t pid, char buf[32]);
/* Drop every stack, keep the process names. */
void profile_reset(struct profile *p);
/* Drop DST's stacks and move SRC's there; SRC is left empty. */
void profile_take(struct profile *dst, struct profile *src);
void profile_free(struct profile *p);

/* What S weighs in P's folded stacks and flame graphs: its samples, or
 * in a wall-clock profile its ns. */
uint64_t profile_weight(const struct profile *p, const struct stack *s);

/* A frame as flamegraph.pl and stackcollapse write it: name plus mark. */
const char *frame_label(const struct frame *f, char *buf, size_t size);

/*
 * Write P to PATH in the format its name asks for: .pb.gz pprof, .svg
 * flame graph, anything else folded stacks.  0 or -errno, reason printed.
 */
int profile_write(const struct profile *p, const char *path, uid_t uid, gid_t gid, uint64_t *bytes);

/* The writers, one per format. */
int folded_write(const struct profile *p, FILE *f);
/* COMM-PID;frame;... of one stack (free it). */
char *folded_stack(const struct stack *s);
int pprof_write(const struct profile *p, FILE *f);
struct pprof_opts {
	/* The cgroup as the outermost frame, not a label: a fleet store
	 * makes a series of each string label's values. */
	bool cgroup_root;
	size_t *raw_len;    /* gets the size before compression */
	int64_t time_nanos; /* the first sample's wall-clock time, or 0 */
};
/* When PROF's first sample was taken, as wall-clock time (ns); 0 if none. */
int64_t profile_time_nanos(const struct profile *prof);
int pprof_write_opts(const struct profile *p, const struct pprof_opts *o, FILE *f);
int flamegraph_write(const struct profile *p, FILE *f, const char *title);

#endif
