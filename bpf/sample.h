/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Samples of the profiler (sample.bpf.c), shared by both sides.  They go
 * through the ring buffer of qemu-jitbpf.bpf.c, in order with the TB
 * reports and flushes, so that user space knows which generation of
 * translated code each sample ran.
 */
#ifndef QEMU_JITBPF_SAMPLE_H
#define QEMU_JITBPF_SAMPLE_H

#define QJ_KSTACK_MAX 32 /* kernel frames */
#define QJ_USTACK_MAX 32 /* QEMU's own frames, host frame pointers */
#define QJ_GSTACK_MAX 64 /* guest return addresses, guest frame pointers */
#define QJ_GWORDS     32 /* words at the guest's sp, to find a leaf's caller */
/* --call-graph=dwarf: guest stack bytes copied per sample, at most. */
#define QJ_STACK_MAX 65536

enum qj_guest_reg { QJ_PC, QJ_SP, QJ_FP, QJ_LR, QJ_NREGS };

/* ELF machines whose frame chains the profiler walks (elf.h's EM_*). */
enum qj_machine {
	QJ_EM_PPC64 = 21,
	QJ_EM_S390 = 22,
	QJ_EM_ARM = 40,
	QJ_EM_X86_64 = 62,
	QJ_EM_AARCH64 = 183,
	QJ_EM_RISCV = 243,
};

/*
 * The frame-chain walkers the sampler is loaded with (rodata: the
 * verifier checks only those, ~25 ms each): those of the guest
 * architectures of the QEMUs to follow, all when not known.
 */
#define QJ_WALK_RECORD64  (1u << 0) /* x86_64, AArch64 and machine 0 */
#define QJ_WALK_RISCV	  (1u << 1)
#define QJ_WALK_ARM	  (1u << 2)
#define QJ_WALK_BACKCHAIN (1u << 3) /* ppc64, s390x */
#define QJ_WALK_ALL	  15u

/*
 * Where one vCPU thread's guest registers are (QEMU's jit_vcpu probe), how
 * wide they are, and the guest's ELF machine and byte order, which say
 * how its frames are linked.  A QEMU from before the machine was
 * reported (7.2's series) gives machine 0: 64-bit records {fp, ra} as on
 * x86_64 and AArch64.
 */
struct qj_vcpu {
	__u64 env;
	__s32 off[QJ_NREGS]; /* offset in env, or -1 */
	__s32 off_nr;	     /* of the register with a system call's number, or -1 */
	__s32 cpu_index;
	__u16 machine;	 /* EM_*, or 0 */
	__u8 size;	 /* bytes per register: 4 or 8 */
	__u8 big_endian; /* the guest's memory */
};

/* A process being profiled; with -a, every traced QEMU. */
#define QJ_PROCS_MAX	  16384
#define QJ_TREE_PROCS_MAX 4096 /* a process tree's, at once */
struct qj_proc {
	__u64 guest_base; /* host address = guest address + guest_base */
	/*
	 * System mode: the guest memory that can be read, [lo, hi), one range
	 * of guest-physical RAM, read for guest addresses as they are (right
	 * while the guest's MMU is off).  hi 0: all of it (linux-user).
	 */
	__u64 lo, hi;
};

#define QJ_SAMPLE_VCPU	 1 /* the thread runs a vCPU: gregs and guest stack valid */
#define QJ_SAMPLE_KERNEL 2 /* taken in the kernel */
#define QJ_SAMPLE_OFFCPU 4 /* --off-cpu: the thread's wait, from its return */
/* --off-cpu: taken as the thread was preempted; its period comes with the
 * thread's next QJ_EV_WAIT_END, if the wait crossed a tick. */
#define QJ_SAMPLE_PREEMPTED 8

/* Why an off-CPU sample's thread was off its CPU (struct qj_sample state). */
enum qj_off_state {
	QJ_OFF_SLEEPING = 1,	/* waiting, interruptibly (S) */
	QJ_OFF_UNINTERRUPTIBLE, /* waiting, not interruptibly (D) */
	QJ_OFF_RUNNABLE,	/* preempted, or yielded: waiting for a CPU */
};

/* gnr where the register with a system call's number is not known (s390x). */
#define QJ_NR_UNKNOWN (~0ull)

/* --off-cpu: bytes of guest stack a wait's sample copies, at least. */
#define QJ_OFF_STACK 8192

/*
 * --off-cpu: a followed vCPU thread's wait, kept in its task storage (and
 * read and restarted by user space for a wait still under way).
 */
struct qj_off {
	__u64 ts;		     /* when it left its CPU; 0 while it is on one */
	__u64 ns;		     /* a wait's ticks not taken yet, in ns; 0 if none */
	__u32 state;		     /* that wait's: QJ_OFF_* */
	__u32 leaving;		     /* the current wait's */
	__u32 nkern;		     /* frames in kstack */
	__u32 preempted;	     /* the current wait's sample is taken: its end is due */
	__u64 ids;		     /* the thread's, as user space numbers them */
	__u64 from;		     /* when the last wait counted in ns began */
	__u64 kstack[QJ_KSTACK_MAX]; /* that wait's, leaf first */
};

/* QJ_EV_WAIT_END: the thread of HDR, preempted, runs again after PERIOD
 * ns of waits (whole ticks): its QJ_SAMPLE_PREEMPTED sample's. */
struct qj_wait_end {
	struct qj_hdr hdr;
	__u64 period;
};

struct qj_sample {
	struct qj_hdr hdr;
	__u32 flags;
	__u16 machine;	 /* of the vCPU (struct qj_vcpu), 0 if unknown */
	__u8 size;	 /* bytes per guest register and stack word */
	__u8 big_endian; /* guest memory, words[] and stack[] included */
	__u64 period;	 /* ns of CPU (or off-CPU) time the sample stands for */
	__s32 cpu_index;
	__u8 nkern, nuser, nguest, nwords;
	__u64 gregs[QJ_NREGS]; /* guest pc, sp, fp, lr from env, zero-extended */
	__u64 gnr;	       /* the register a system call's number is in (off_nr) */
	__u64 kstack[QJ_KSTACK_MAX];
	__u64 ustack[QJ_USTACK_MAX]; /* [0] is the host pc */
	__u64 gstack[QJ_GSTACK_MAX]; /* return addresses, callee first */
	__u64 words[QJ_GWORDS];	     /* the guest's memory at sp, as it is */
	__u64 wait_from;	     /* off-CPU: when the last wait counted began */
	__u32 stack_len;	     /* bytes of stack[] (dwarf mode) */
	__u32 state;		     /* off-CPU: enum qj_off_state; else 0 */
	__u8 stack[];		     /* the guest stack from sp on */
};

#endif /* QEMU_JITBPF_SAMPLE_H */
