// SPDX-License-Identifier: GPL-2.0-or-later
#include "engine/kernel.h"
#include "util/util.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <bpf/btf.h>

#define MAGIC "QJLAYOUT2"

/* The initial pid namespace's inode (the kernel's PROC_PID_INIT_INO). */
#define INIT_PIDNS_INO 0xEFFFFFFCu

struct cache {
	char magic[sizeof(MAGIC)];
	struct kernel_layout kl;
};

/* Byte offset of MEMBER in struct NAME; -errno if the kernel has none. */
static int offset_of(const struct btf *btf, const char *name, const char *member, uint32_t *off)
{
	int id = btf__find_by_name_kind(btf, name, BTF_KIND_STRUCT);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_member *m;

	if (!t)
		return -ENOENT;
	m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(btf, m->name_off);

		if (n && !strcmp(n, member)) {
			*off = btf_member_bit_offset(t, i) / 8;
			return 0;
		}
	}
	return -ENOENT;
}

/* Where a task's pid numbers are: task_struct's thread_pid and
 * group_leader, struct pid's levels, a level's namespace and its inode. */
static int pidns_layout(const struct btf *btf, struct qj_pidns *p)
{
	int upid = btf__find_by_name_kind(btf, "upid", BTF_KIND_STRUCT);
	uint32_t ns_common = 0, inum = 0, nr = 1;
	long long size = upid > 0 ? btf__resolve_size(btf, upid) : -1;
	int err = size > 0 ? 0 : -ENOENT;

	if (!err)
		err = offset_of(btf, "task_struct", "thread_pid", &p->task_thread_pid);
	if (!err)
		err = offset_of(btf, "task_struct", "group_leader", &p->task_group_leader);
	if (!err)
		err = offset_of(btf, "pid", "level", &p->pid_level);
	if (!err)
		err = offset_of(btf, "pid", "numbers", &p->pid_numbers);
	if (!err)
		err = offset_of(btf, "upid", "nr", &nr);
	if (!err)
		err = offset_of(btf, "upid", "ns", &p->upid_ns);
	if (!err)
		err = offset_of(btf, "pid_namespace", "ns", &ns_common);
	if (!err)
		err = offset_of(btf, "ns_common", "inum", &inum);
	if (!err && nr)
		err = -ENOENT;
	p->upid_size = size;
	p->ns_inum = ns_common + inum;
	return err;
}

static int from_btf(struct kernel_layout *kl)
{
	struct btf *btf = btf__load_vmlinux_btf();
	int err;

	if (!btf) {
		err = -errno;
		pr_err("cannot read the kernel's BTF (/sys/kernel/btf/vmlinux): %s",
		       strerror(-err));
		return err;
	}
	err = offset_of(btf, "task_struct", "pid", &kl->task_pid);
	if (!err)
		err = offset_of(btf, "task_struct", "tgid", &kl->task_tgid);
	if (!err)
		err = offset_of(btf, "task_struct", "signal", &kl->task_signal);
	if (!err)
		err = offset_of(btf, "signal_struct", "live", &kl->signal_live);
	if (err)
		pr_err("the kernel's BTF has no task_struct pid, tgid, signal or signal_struct "
		       "live");
	else if ((err = pidns_layout(btf, &kl->pidns)))
		pr_err("the kernel's BTF has no task_struct thread_pid, struct pid numbers or "
		       "pid_namespace ns");
	btf__free(btf);
	return err;
}

/* Which pid namespace our numbers are in: 0 for the initial one. */
static int our_pidns(struct qj_pidns *p)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st)) {
		int err = -errno;

		pr_err("cannot read /proc/self/ns/pid: %s", strerror(-err));
		return err;
	}
	p->ns_ino = st.st_ino == INIT_PIDNS_INO ? 0 : (uint32_t)st.st_ino;
	if (p->ns_ino)
		pr_dbg("in pid namespace %u: the programs number tasks as it does", p->ns_ino);
	return 0;
}

int kernel_layout(struct kernel_layout *kl)
{
	char *boot = boot_id(), *path = boot ? xasprintf(CACHE_DIR "/layout-%s", boot) : NULL;
	struct safe_file sf;
	struct cache c;
	size_t len = 0;
	char *buf = path && cache_trusted(path) ? read_all(path, &len, sizeof(c) + 1) : NULL;
	int err = 0;

	memset(&c, 0, sizeof(c));
	memcpy(c.magic, MAGIC, sizeof(MAGIC));
	if (buf && len == sizeof(c) && !memcmp(buf, MAGIC, sizeof(MAGIC))) {
		memcpy(kl, buf + offsetof(struct cache, kl), sizeof(*kl));
	} else {
		err = from_btf(kl);
		c.kl = *kl;
		if (!err && path && !cache_create(&sf, path)) {
			fwrite(&c, sizeof(c), 1, sf.f);
			safe_file_commit(&sf);
		}
	}
	free(buf);
	free(path);
	free(boot);
	if (!err)
		err = our_pidns(&kl->pidns);
	return err;
}
