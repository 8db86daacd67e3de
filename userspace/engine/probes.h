/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Our BPF programs and where they are attached: the object is loaded
 * once per run, with only the programs the run needs; its USDT programs
 * are attached to a QEMU binary for one process (a followed tree: each
 * of its QEMUs) or for every process of the binary (-a); its tracepoint
 * programs report forks, execs and exits.  Links are dropped in
 * parallel, or handed to the detach helper (detach.c).
 */
#ifndef QJ_PROBES_H
#define QJ_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#include "engine/kernel.h"

struct bpf_link;
struct qj_block;
struct qemu_jitbpf_bpf;
struct sampler;

/* A QEMU binary with our probes, and which of the optional ones it has. */
struct binary {
	char *path;
	dev_t dev;
	ino_t ino;
	bool system;	   /* a system emulator: loader_elf_image, jit_guest_ram */
	bool fork_wait;	   /* qemu:jit_fork_wait: a child waits for us */
	bool guest_mmap;   /* qemu:linux_user_guest_mmap: libraries as mapped */
	bool calls_wait;   /* qemu:jit_calls_wait: it waits for us to read its calls */
	bool counts;	   /* qemu:jit_counts: it counts TB executions (--coverage-counts) */
	bool vcpu_threads; /* qemu:jit_vcpu_thread: every vCPU's registers at a handshake */
	/* No probes of ours: QEMU's own trace events as USDT probes (the
	 * dtrace backend), qemu:translate_block and the rest stock.bpf.h
	 * reads; the degraded mode. */
	bool stock;
	bool stock_overflow; /* qemu:tb_gen_code_buffer_overflow (10.x) */
	/* A stock one's probes are attached for every process running it
	 * (a tree: the BPF side keeps the tree's). */
	bool attached_all;
	bool via_proc; /* PATH is a process's /proc/PID/exe (see scope.c) */
};

struct linkset {
	struct bpf_link **v;
	size_t n, cap;
	__u32 *ids; /* the kernel's ids of the links, once noted */
	size_t nids;
};

struct probe_opts {
	bool code;		 /* TB reports, prologue, flushes: perf map, jitdump, profile */
	bool jitdump;		 /* the marker */
	bool calls;		 /* --uftrace */
	bool counts;		 /* --coverage-counts */
	bool profile;		 /* guest RAM of a VM */
	bool linux_user, system; /* which image probes to load */
	bool tree;		 /* follow a process tree, not every QEMU */
	bool stock;		 /* stock QEMUs' programs (stock.bpf.h) */
	size_t ring_bytes;
	struct kernel_layout layout; /* for the fork, exec and exit programs */
};

struct probes {
	struct qemu_jitbpf_bpf *skel;
	struct probe_opts o;
	__u32 link_cursor; /* the last link id probes_note() saw */
};

/*
 * A binary with our probes (tb_gen_code_batch, jit_attach_request), or a
 * stock linux-user QEMU with the dtrace backend's (translate_block,
 * tb_flush, target_mmap: STOCK), or -ENOTSUP, quietly; -errno when PATH
 * cannot be read.
 */
int binary_init(struct binary *b, const char *path);
/* Is PATH a stock QEMU: none of our probes, the stock ones the degraded
 * mode reads? */
bool binary_is_stock(const char *path);

/*
 * QEMU 10.2.2's TranslationBlock (include/exec/translation-block.h): pc
 * (vaddr), cs_base, flags, cflags, size (u16, guest bytes), icount, then
 * struct tb_tc {ptr, size}.  translate_block's tb_code must be what
 * tc.ptr holds: a QEMU laid out otherwise is refused (QJ_EV_LAYOUT).
 */
#define QJ_STOCK_TB_GUEST_SIZE 24
#define QJ_STOCK_TB_PTR	       32
void binary_free(struct binary *b);

/* Open and load what O asks for; -errno with the reason printed. */
int probes_load(struct probes *p, const struct probe_opts *o);
int probes_ring_fd(const struct probes *p);
int probes_procs_fd(const struct probes *p);
/*
 * Attach every USDT program loaded to BINARY for process PID (-1: every
 * process of it, now and later), jit_attach last (attaching it starts
 * the handshake of a QEMU that runs); the links go to LS.  -errno with
 * the reason printed.
 */
int probes_attach(struct probes *p, const struct binary *b, pid_t pid, struct linkset *ls);
/*
 * A tree: make the children process PID forks from now on wait for us
 * (qemu:jit_fork_wait), before any other probe of ours is in it, so that
 * a child either reports nothing of its own until we attach to it, or
 * waits for that; probes_attach() leaves it out.
 */
int probes_attach_follow(struct probes *p, const struct binary *b, pid_t pid, struct linkset *ls);
/* Fork, exec and exit of the processes followed; the links go to LS. */
int probes_attach_tasks(struct probes *p, struct linkset *ls);
/*
 * A stock QEMU's guest_base is known: PID enters the procs map as a
 * patched QEMU does when it reports it, so that its forks, execs and
 * exits are reported too.
 */
int probes_known(struct probes *p, pid_t pid, uint64_t guest_base);
/* PID is the first process of the followed tree. */
int probes_follow(struct probes *p, pid_t pid);
/*
 * FN(CTX, tid, lost) for each thread with call events lost after its last
 * record; the entries FN marks (returns true for) are deleted.
 */
void probes_each_calls_lost(struct probes *p, bool (*fn)(void *ctx, uint32_t tid, uint64_t lost),
			    void *ctx);
/*
 * Stock QEMUs: each TB translated before NOW - AGE_NS that no later
 * translation of its thread has finished (the last ones of a loop that
 * runs on), read from its process now, as the BPF side would have: FN
 * gets it as the ring would have brought it.
 */
void probes_stock_sweep(struct probes *p, uint64_t now, uint64_t age_ns,
			void (*fn)(void *ctx, const struct qj_block *r), void *ctx);
/* Events the ring buffer had no room for, so far. */
unsigned long long probes_lost(const struct probes *p);
/* TB reports of batches a part of which was lost (no room, or not read). */
unsigned long long probes_lost_tbs(const struct probes *p);
/* Of those, guest call and return events. */
unsigned long long probes_lost_calls(const struct probes *p);
/* Of those, execution counts (--coverage-counts). */
unsigned long long probes_lost_counts(const struct probes *p);
/*
 * Links are dropped in three steps: new fds for them, from the kernel;
 * linkset_clear() on every set that holds them, which costs nothing
 * then; and probes_drop(), where the kernel waits for its grace periods,
 * all in parallel, here or (BACKGROUND) in the detach helper.  SM: the
 * profiler's sampler, or NULL.
 *
 * probes_collect(): fds for every link of our programs; the count.
 */
int probes_collect(struct probes *p, const struct sampler *sm, int **fds);
void probes_drop(int *fds, int n, bool background);
/*
 * LS holds the links just attached to process PID: note their ids, as
 * the kernel no longer says whose they are once PID has gone.
 */
void probes_note(struct probes *p, const struct sampler *sm, pid_t pid, struct linkset *ls);
/* Drop LS, noted, whose process has gone, in the background. */
void probes_release(struct probes *p, const struct sampler *sm, struct linkset *ls);
/* -v: what each program cost in the kernel. */
void probes_report_time(const struct probes *p, const struct sampler *sm);
/*
 * Tell naming/ksyms.c where the programs are in the kernel: ours (the
 * sampler's too), then the host's others (with CAP_SYS_ADMIN).
 */
void probes_name_progs(const struct probes *p, const struct sampler *sm);
void probes_free(struct probes *p);

void linkset_add(struct linkset *ls, struct bpf_link *l);
/* Destroy the library's objects, whatever the kernel does with the links. */
void linkset_clear(struct linkset *ls);

#endif
