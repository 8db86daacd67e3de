/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where the running kernel keeps what our fork, exec and exit programs
 * read of a task: offsets from the kernel's BTF, given to the programs
 * before they load.  libbpf's CO-RE would find them at every start
 * (~5 ms of candidate searches over the kernel's 100 k types, on top of
 * parsing its BTF); they are read once per boot and kept in CACHE_DIR.
 */
#ifndef QJ_KERNEL_H
#define QJ_KERNEL_H

#include <stdint.h>
#include <linux/types.h>

#include "qemu-jitbpf.h"

struct kernel_layout {
	uint32_t task_pid;    /* struct task_struct: pid */
	uint32_t task_tgid;   /* tgid */
	uint32_t task_signal; /* signal */
	uint32_t signal_live; /* struct signal_struct: live (atomic_t) */
	/* A process's CPU time and start, at its exit (--report). */
	uint32_t signal_runtime;    /* struct signal_struct: sum_sched_runtime */
	uint32_t task_se;	    /* struct task_struct: se */
	uint32_t se_runtime;	    /* struct sched_entity: sum_exec_runtime */
	uint32_t task_start;	    /* struct task_struct: start_time */
	uint32_t task_group_leader; /* group_leader */
	uint32_t bprm_interp;	    /* struct linux_binprm: interp (an exec's) */
	uint32_t task_mm;	    /* struct task_struct: mm */
	uint32_t mm_arg_start;	    /* struct mm_struct: arg_start */
	uint32_t mm_arg_end;	    /* arg_end */
	/* Our pid namespace (its ns_ino is ours, not the cache's) and where
	 * a task's numbers in it are. */
	struct qj_pidns pidns;
};

/* 0, or -errno with the reason printed. */
int kernel_layout(struct kernel_layout *kl);

#endif
