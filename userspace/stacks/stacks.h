/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --stacks: every guest thread of a QEMU, now, without stopping it and
 * without ptrace: where QEMU keeps each vCPU's registers (the jit_vcpu
 * probes), read with process_vm_readv(); the guest's stack unwound from
 * them by its CFI; what the thread does, from /proc (on a CPU, or blocked
 * in the host kernel, where, and in which system call of the guest).
 */
#ifndef QJ_STACKS_H
#define QJ_STACKS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <linux/types.h>

#include "profiler/profile.h"
#include "qemu-jitbpf.h"
#include "sample.h"

struct guest;
struct sampler;

#define STACK_FRAMES_MAX  64
#define STACK_KFRAMES_MAX 16

struct stack_frame {
	uint64_t pc;
	const char *name; /* function, FILE+0xADDR, or guest-0xPC (the guest's) */
	uint64_t off;	  /* from the function's start */
	const char *file; /* source file, or NULL */
	int line;
	bool by_prologue; /* found from its callee's code: that function has no CFI */
};

/* One guest thread, as --stacks shows it. */
struct thread_stack {
	pid_t tid;	/* as we number it */
	pid_t qemu_tid; /* as the guest sees it (its pid namespace) */
	char comm[32];
	char state; /* /proc's: R running, S sleeping, D disk, ... */
	int cpu_index;
	bool regs; /* its registers were read */
	uint64_t pc, sp, fp;
	/* The guest's system call its registers show it in (the instruction
	 * before its pc makes one), by number and name, with six arguments. */
	bool in_syscall;
	uint64_t nr, args[6];
	const char *syscall; /* name, or NULL when unknown */
	/* The host's view: the system call the QEMU thread blocks in (-1: none,
	 * it runs), the kernel function it waits in, the kernel stack. */
	long host_nr;
	uint64_t host_pc; /* where in QEMU it made that call, or 0 */
	char wchan[64];
	char kstack[STACK_KFRAMES_MAX][64];
	int nkstack;
	struct stack_frame frames[STACK_FRAMES_MAX];
	int nframes;
	/* A running thread sampled (struct thread_sample): what it did, in
	 * words; NULL if it was not. */
	const char *doing;
	/* Waiting on a futex word (FUTEX_WAIT, _BITSET, LOCK_PI): its guest
	 * address, and the thread whose id the word 8 bytes on holds, as
	 * glibc's mutex keeps its owner (-1: none of this process's). */
	uint64_t futex;
	int owner; /* index in the process's threads, or -1 */
};

/*
 * --stacks: a running thread's sample, taken once QEMU's code is reported
 * again after the handshake: where it was (in the guest's code, exactly,
 * by the code map, or in QEMU, doing what), and the guest's frames.
 */
struct thread_sample {
	pid_t tid; /* as we number it */
	char doing[96];
	bool in_qemu;			/* out of translated code: in QEMU's loop or the kernel */
	uint64_t pcs[STACK_FRAMES_MAX]; /* leaf first; return addresses after it */
	int n;
};

/* The sample of a thread from what the profiler made of it. */
void stacks_sample(struct thread_sample *s, pid_t tid, enum sample_where where, const char *work,
		   const uint64_t *pcs, size_t n);
/* Running thread T's frames and what it does, from its sample S (NULL:
 * none was taken) named through G. */
void stacks_running(struct guest *g, const struct thread_sample *s, struct thread_stack *t);

/*
 * Who waits for whom among V's N threads: each one waiting on a futex,
 * its word and (read in PID's memory at G_BASE + word + 8) its owner.
 */
void stacks_waits(pid_t pid, uint64_t g_base, struct thread_stack *v, int n);

/*
 * What a sample of thread V (where its vCPU's registers are) in PID's
 * memory holds of the guest (QJ_SAMPLE_VCPU): its registers, and up to
 * BYTES of its stack (guest memory at G_BASE) in R->stack, which has room
 * for them.  False if its registers could not be read.
 */
bool stacks_guest_sample(pid_t pid, uint64_t g_base, const struct qj_vcpu *v, struct qj_sample *r,
			 uint32_t bytes);
/*
 * THREAD's guest state, from V (where its vCPU's registers are) in PID's
 * memory, named through G; MEM, the process's record (a VM's RAM), or
 * NULL.  False if its registers could not be read.
 */
bool stacks_read_guest(pid_t pid, struct guest *g, const struct qj_vcpu *v,
		       const struct qj_proc *mem, struct thread_stack *t);
/* The host side of thread TID of PID: /proc's state, system call, wait. */
void stacks_read_host(pid_t pid, pid_t tid, struct thread_stack *t);
/*
 * Each thread of PID that runs a vCPU, as SM's last handshake reported it:
 * its host side read (T), where its registers are (V); FN returns false to
 * stop.  The threads that run no vCPU (QEMU's own), counted.
 */
int stacks_each_vcpu(const struct sampler *sm, pid_t pid,
		     bool (*fn)(void *ctx, struct thread_stack *t, const struct qj_vcpu *v),
		     void *ctx);
/* A process's threads as text (like eu-stack) or JSON; FIRST: the first
 * process written to F. */
void stacks_write_text(FILE *f, pid_t pid, const char *command, const struct thread_stack *v, int n,
		       int others);
void stacks_write_json(FILE *f, bool first, pid_t pid, const char *command,
		       const struct thread_stack *v, int n, int others);

#endif
