/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Records the BPF programs send to user space through the ring buffer.
 * Fixed-size types only: this header is shared by both sides.
 */
#ifndef QEMU_JITBPF_H
#define QEMU_JITBPF_H

/* TB reports: QEMU hands over up to 128 KiB of JitTbRecords per batch. */
#define QJ_TBS_MAX_BATCH (128 * 1024)
#define QJ_TBS_CHUNK	 4032
/* TCG limits a TB to 512 instructions and less than 64 KiB of host code. */
#define QJ_TB_MAX_INSNS 512
#define QJ_TB_MAX_CODE	65536
#define QJ_PATH_MAX	256
/* Guest call events: QEMU hands over up to 4096 per batch (jit-calls.c). */
#define QJ_CALL_EVENT_SIZE 24
#define QJ_CALLS_PER_REC   680 /* a record of a full batch's events */
/* Execution counts per record: QEMU hands over up to 4096 at a time. */
#define QJ_COUNTS_PER_REC  504
#define QJ_COUNTS_MAX_HIT  4096
#define QJ_COUNTS_SLOTS	   (1u << 22) /* QEMU's JIT_COUNTS_SLOTS */
#define QJ_CALLS_PER_SMALL 170	      /* a record of a few events: 4 KiB */
#define QJ_CALLS_MAX_BATCH 4096
/*
 * An event's address word: the kind (QJ_CALL_*) in bits 63-62, the
 * target below.  QEMU clears those bits of the address, which for a guest
 * kernel's (0xffff...) were copies of bit 61: sign-extend it back.
 */
#define QJ_CALL_KIND(w) ((unsigned int)((w) >> 62))
#define QJ_CALL_CALL	1
#define QJ_CALL_RET	2
#define QJ_CALL_JUMP	3 /* through a register, as stubs and trampolines jump */
#define QJ_CALL_ADDR(w) ((unsigned long long)((long long)((w) << 2) >> 2))

/* BPF wakes user space once the ring holds this much (bpf/ring.bpf.h), at
 * most every QJ_WAKE_NS, and at once from QJ_WAKE_SOON times as much (a
 * quarter of the ring). */
#define QJ_WAKE_BYTES(ring_size) ((ring_size) / 32)
#define QJ_WAKE_SOON		 8
#define QJ_WAKE_NS		 5000000
/* User space drains at most this many records before it looks at the
 * clock again, and sleeps at most this long (ms) when nothing wakes it. */
#define QJ_CONSUME_MAX 4096
#define QJ_IDLE_MS     100
/*
 * How often we tell QEMU how far we have read its call batches, by their
 * weight (each batch weighs its events and 256 more): every 8 full
 * batches' weight; it waits for us at 64 (10.2.2's JIT_CALLS_UNREAD_MAX).
 */
#define QJ_CALLS_TELL (8 * (QJ_CALLS_MAX_BATCH + 256))

enum qj_event_type {
	QJ_EV_TBS = 1,	  /* struct qj_tbs: part of a batch of TB reports */
	QJ_EV_PROLOGUE,	  /* struct qj_prologue */
	QJ_EV_FLUSH,	  /* struct qj_hdr: every host range may be reused */
	QJ_EV_ATTACH,	  /* struct qj_attach: late-attach handshake done */
	QJ_EV_MARKER,	  /* struct qj_marker: jitdump marker file */
	QJ_EV_IMAGE,	  /* struct qj_image: guest ELF image loaded by QEMU */
	QJ_EV_GUEST_BASE, /* struct qj_guest_base */
	QJ_EV_CALLS,	  /* struct qj_calls: guest calls and returns */
	QJ_EV_SAMPLE,	  /* struct qj_sample (profile.h): a profiler sample */
	QJ_EV_FORK,	  /* struct qj_fork: a traced QEMU forked (-a) */
	QJ_EV_EXEC,	  /* struct qj_exec: a traced QEMU exec'd another program */
	QJ_EV_EXIT,	  /* struct qj_exit: a traced QEMU's last thread exited */
	QJ_EV_LOADED_ELF, /* struct qj_image: ELF file loaded by a system-mode QEMU */
	QJ_EV_CALLS_LOST, /* struct qj_calls_lost: a thread's last lost calls, at its exit */
	QJ_EV_MMAP,	  /* struct qj_image: code the guest mapped from a file; bias holds
			   * the file offset mapped at start */
	QJ_EV_CALLS_WAIT, /* struct qj_calls_wait: QEMU waits for us to read its calls */
	QJ_EV_COUNTS,	  /* struct qj_counts: TB execution counts (jit_counts) */
	/* A QEMU without our probes, built with the dtrace trace backend
	 * (the degraded mode, stock.bpf.h): */
	QJ_EV_BLOCK,	 /* struct qj_block: a TB whose code is final */
	QJ_EV_GUEST_MAP, /* struct qj_guest_map: the guest mapped a file */
	QJ_EV_LAYOUT,	 /* struct qj_layout: a TB is not laid out as we read it */
	/* --off-cpu: */
	QJ_EV_WAIT_END, /* struct qj_wait_end (sample.h): a preempted thread runs again */
};

/* Counters in the BPF program's .bss, read by user space. */
enum qj_counter {
	QJ_LOST_RECORDS, /* records the ring buffer had no room for */
	QJ_LOST_TBS,	 /* TB reports in batches of which a part was lost */
	QJ_TBS,		 /* TB reports seen by the BPF program */
	QJ_LOST_CALLS,	 /* call/return events that found no room */
	QJ_LOST_COUNTS,	 /* TB execution counts that found no room */
	QJ_COUNTERS,
};

/*
 * The pid namespace whose numbers user space knows (its own), and where
 * the kernel keeps a task's numbers, from its BTF: set before load, for
 * the programs to give pids as user space sees them (ids.bpf.h).  NS_INO
 * 0: the initial namespace, whose numbers are the kernel's own.
 */
struct qj_pidns {
	__u32 ns_ino;		 /* the namespace's inode (/proc/self/ns/pid) */
	__u32 task_thread_pid;	 /* struct task_struct: thread_pid */
	__u32 task_group_leader; /* group_leader */
	__u32 pid_level;	 /* struct pid: level */
	__u32 pid_numbers;	 /* numbers[], struct upid: nr at 0 */
	__u32 upid_size;	 /* sizeof(struct upid) */
	__u32 upid_ns;		 /* struct upid: ns */
	__u32 ns_inum;		 /* struct pid_namespace: ns.inum */
};

struct qj_hdr {
	__u32 type;
	__u32 tid;
	__u32 pid; /* the process (thread group), as user space numbers it */
	__u32 pad;
	__u64 ts; /* CLOCK_MONOTONIC ns, when the probe fired */
};

/*
 * Part of a batch of TB reports, as QEMU queued them: a sequence of
 * JitTbRecords (QEMU's accel/tcg/jit-tbs.h), each with its instruction
 * pcs, end offsets and host code.  The parts of a batch share BATCH.
 */
struct qj_tbs {
	struct qj_hdr hdr;
	__u64 batch;
	__u32 off;   /* where DATA goes in the batch */
	__u32 len;   /* bytes of DATA used */
	__u32 total; /* length of the whole batch */
	__u32 count; /* TB records in the whole batch */
	__u8 data[QJ_TBS_CHUNK];
};

struct qj_prologue {
	struct qj_hdr hdr;
	__u64 host;
	__u64 size;
	__u32 insn_words;
	__u32 word_size;
	__s32 page_bits;
	__u32 pad;
};

struct qj_attach {
	struct qj_hdr hdr;
	__u32 count;   /* handshake number in QEMU */
	__u32 request; /* value of the request counter it answers */
	__u64 poll_ns; /* when QEMU saw the request (CLOCK_MONOTONIC) */
	__u32 flushes; /* code-cache flushes before it (0 from an older QEMU) */
	__u32 pad;
};

struct qj_marker {
	struct qj_hdr hdr;
	__u64 addr;
	char path[QJ_PATH_MAX];
};

struct qj_image {
	struct qj_hdr hdr;
	__u64 bias;
	__u64 start;
	__u64 end; /* inclusive (QJ_EV_LOADED_ELF: exclusive, physical) */
	char path[QJ_PATH_MAX];
};

/* A stock QEMU's TB: its guest pc and size, its host code, final. */
struct qj_block {
	struct qj_hdr hdr;
	__u64 pc;
	__u64 host;
	__u32 size;
	__u16 guest_size;
	__u16 pad;
};

/* A stock QEMU's target_mmap() of file FD at OFFSET: guest [start, +len). */
struct qj_guest_map {
	struct qj_hdr hdr;
	__u64 start;
	__u64 len;
	__u64 offset;
	__s32 fd;
	__s32 prot;
};

/* translate_block's TB holds SEEN where its code pointer should be CODE. */
struct qj_layout {
	struct qj_hdr hdr;
	__u64 tb;
	__u64 code;
	__u64 seen;
};

/*
 * A stock QEMU's TB translated and not finished yet (stock.bpf.h's map
 * stock_blocks, which user space sweeps): by process and TB address.
 */
struct qj_stock_key {
	__u32 pid;
	__u32 pad;
	__u64 tb;
};

struct qj_stock_block {
	__u64 pc;   /* its guest pc */
	__u64 code; /* its host code, as translate_block gave it */
	__u64 ts;   /* when it was translated */
	__u32 tid;  /* by which thread */
	__u32 pad;
};

/*
 * Where a stock QEMU keeps a TB's code (TranslationBlock: tc.ptr, tc.size)
 * and its guest size (size): set by user space before load.
 */
struct qj_tb_layout {
	__u32 ptr_off;
	__u32 size_off;
	__u32 guest_size_off;
	__u32 pad;
};

struct qj_guest_base {
	struct qj_hdr hdr;
	__u64 base;
	__s32 page_bits;
	__u32 pad;
};

/*
 * Guest call and return events of one thread, as QEMU recorded them: each
 * event is {u64 ts; u64 kind << 62 | addr; u64 sp} (QEMU's JitCallEvent).
 * QEMU 10.2.2 stamps events with the host's cycle counter and reads both
 * clocks around each batch (JitCallClock): {start ticks, start ns, end
 * ticks, end ns}.  All zero: the events are stamped in nanoseconds (7.2).
 * A record holds n events; one of at most QJ_CALLS_PER_SMALL ends after
 * them (it is smaller than the struct), so few events take little room.
 */
struct qj_call_event {
	__u64 ts;
	__u64 addr; /* kind << 62 | address */
	__u64 sp;
};

struct qj_calls {
	struct qj_hdr hdr;
	__s32 cpu;
	__u32 n;
	__u64 lost;  /* events of this thread lost since its previous record */
	__s32 level; /* system mode: privilege level (x86 CPL, Arm EL), or -1 */
	__u32 pad;
	__u64 clock[4];
	/*
	 * QEMU 10.2.2 from patch 28: what its process handed over up to and
	 * with this batch, by weight (QJ_CALLS_TELL), and where we say how
	 * far we have read: SYNC + 8 (QEMU's JitCallSync).  0 and 0 before.
	 */
	__u64 seq;
	__u64 sync;
	__u8 ev[QJ_CALLS_PER_REC * QJ_CALL_EVENT_SIZE];
};

/*
 * QEMU waits for us to say that we have read its batches of calls up to
 * SEQ, at SYNC + 8 (as with struct qj_calls): a record after all those
 * batches that we will ever see.  It says so every 10 ms while it waits.
 */
struct qj_calls_wait {
	struct qj_hdr hdr;
	__u64 seq;
	__u64 sync;
};

/*
 * TB execution counts: slots FIRST to FIRST + N of a vCPU's array ARRAY
 * (QEMU's jit_counts, docs/probes.md), part of one jit_counts hit.
 * KIND: QJ_COUNTS_SNAPSHOT, _FINAL, _ANSWERED (SEQ's request), _STARTED.
 */
#define QJ_COUNTS_SNAPSHOT 0
#define QJ_COUNTS_FINAL	   1
#define QJ_COUNTS_ANSWERED 2
#define QJ_COUNTS_STARTED  3
struct qj_counts {
	struct qj_hdr hdr;
	__u64 array;
	__u64 seq;
	__u64 missed; /* TBs QEMU could not count (its slots ran out) */
	__u64 sync;   /* QEMU's JitCountsSync: where we ask for a snapshot */
	__u32 first;
	__u32 n;
	__s32 cpu;
	__u32 kind;
	__u64 counts[QJ_COUNTS_PER_REC];
};

/* Events hdr.tid lost after its last qj_calls: sent as the thread exits. */
struct qj_calls_lost {
	struct qj_hdr hdr;
	__u64 lost;
};

/* hdr.pid forked CHILD, a new process with a copy of its code cache. */
struct qj_fork {
	struct qj_hdr hdr;
	__u32 child;
	__u32 pad;
};

/* A followed process exec'd, or its last thread exited: the process's CPU
 * time so far, all its threads' (the scheduler's), and when it started. */
struct qj_exit {
	struct qj_hdr hdr;
	__u64 cpu_ns;	/* 0: unknown */
	__u64 start_ns; /* CLOCK_MONOTONIC, as hdr.ts; 0: unknown */
};

/* QJ_EV_EXEC: what an exit says, the interpreter execve ran, as it named
 * it (a binfmt_misc entry's emulator, else the program itself), and the
 * command line: user space reads /proc/PID, and these when the program is
 * already gone. */
#define QJ_ARGS_MAX 1024
struct qj_exec {
	struct qj_exit x;
	char interp[QJ_PATH_MAX];
	/* Its command line as /proc/PID/cmdline has it (NUL-separated), its
	 * first ARGS_LEN bytes. */
	__u32 args_len;
	__u32 pad;
	char args[QJ_ARGS_MAX];
};

#endif /* QEMU_JITBPF_H */
