/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A task's pid and tid as user space numbers them.  A tool in a
 * container (a CI job in docker, a PID namespace of its own) knows its
 * QEMUs by the numbers of its namespace, which the kernel's own
 * (bpf_get_current_pid_tgid()) are not: the programs number tasks in the
 * tool's namespace, found by its inode among the levels of a task's
 * struct pid, and give 0 for one it cannot see.  In the initial
 * namespace nothing changes: the kernel's numbers are user space's.
 */
#ifndef QJ_IDS_BPF_H
#define QJ_IDS_BPF_H

/* Set by user space before load. */
const volatile struct qj_pidns pidns;

/* (The kernel's MAX_PID_NS_LEVEL.) */
#define QJ_PIDNS_LEVELS 32

static __always_inline __u32 kernel_u32(__u64 addr)
{
	__u32 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), (void *)addr);
	return v;
}

static __always_inline __u64 kernel_u64(__u64 addr)
{
	__u64 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), (void *)addr);
	return v;
}

/* TASK's tid in the tool's pid namespace; 0 if the namespace cannot
 * see it.  Its own level first: a QEMU is most often where the tool is. */
static __always_inline __u32 ns_tid(__u64 task)
{
	__u64 pid = task ? kernel_u64(task + pidns.task_thread_pid) : 0, upid, ns;
	__u32 level;

	if (!pid)
		return 0;
	level = kernel_u32(pid + pidns.pid_level);
	for (__u32 i = 0; i < QJ_PIDNS_LEVELS && i <= level; i++) {
		upid = pid + pidns.pid_numbers + (__u64)(level - i) * pidns.upid_size;
		ns = kernel_u64(upid + pidns.upid_ns);
		if (ns && kernel_u32(ns + pidns.ns_inum) == pidns.ns_ino)
			return kernel_u32(upid);
	}
	return 0;
}

/* TASK's tid as user space numbers it. */
static __always_inline __u32 qj_tid_of(__u64 task, __u32 kernel_tid)
{
	return pidns.ns_ino ? ns_tid(task) : kernel_tid;
}

/* What bpf_get_current_pid_tgid() gives (tgid << 32 | tid), numbered as
 * user space numbers them: 0 for a task it cannot see. */
static __always_inline __u64 qj_current_ids(void)
{
	__u64 task;
	__u32 tid, tgid;

	if (!pidns.ns_ino)
		return bpf_get_current_pid_tgid();
	task = bpf_get_current_task();
	tid = ns_tid(task);
	tgid = ns_tid(kernel_u64(task + pidns.task_group_leader));
	return tid && tgid ? (__u64)tgid << 32 | tid : 0;
}

#endif
