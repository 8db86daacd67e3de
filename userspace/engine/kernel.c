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
/* MEMBER's offset in the struct or union T, looked for in its anonymous
 * members too (mm_struct's fields are in one). */
static int member_offset(const struct btf *btf, const struct btf_type *t, const char *member,
			 uint32_t *off, int depth)
{
	const struct btf_member *m = btf_members(t);

	for (int i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(btf, m->name_off);
		const struct btf_type *mt;
		uint32_t in;

		if (n && *n) {
			if (strcmp(n, member))
				continue;
			*off = btf_member_bit_offset(t, i) / 8;
			return 0;
		}
		mt = btf__type_by_id(btf, m->type);
		while (mt && (btf_is_mod(mt) || btf_is_typedef(mt)))
			mt = btf__type_by_id(btf, mt->type);
		if (mt && depth < 4 && (btf_is_struct(mt) || btf_is_union(mt)) &&
		    !member_offset(btf, mt, member, &in, depth + 1)) {
			*off = btf_member_bit_offset(t, i) / 8 + in;
			return 0;
		}
	}
	return -ENOENT;
}

static int offset_of(const struct btf *btf, const char *name, const char *member, uint32_t *off)
{
	int id = btf__find_by_name_kind(btf, name, BTF_KIND_STRUCT);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;

	return t ? member_offset(btf, t, member, off, 0) : -ENOENT;
}

/* A member the programs read, and where its offset goes in the layout. */
struct member {
	const char *type, *name;
	size_t at; /* offsetof(struct kernel_layout, ...) */
};

#define LAYOUT(field) offsetof(struct kernel_layout, field)

static const struct member members[] = {
	{"task_struct", "pid", LAYOUT(task_pid)},
	{"task_struct", "tgid", LAYOUT(task_tgid)},
	{"task_struct", "signal", LAYOUT(task_signal)},
	{"signal_struct", "live", LAYOUT(signal_live)},
	{"signal_struct", "sum_sched_runtime", LAYOUT(signal_runtime)},
	{"task_struct", "se", LAYOUT(task_se)},
	{"sched_entity", "sum_exec_runtime", LAYOUT(se_runtime)},
	{"task_struct", "start_time", LAYOUT(task_start)},
	{"task_struct", "group_leader", LAYOUT(task_group_leader)},
	{"linux_binprm", "interp", LAYOUT(bprm_interp)},
	{"task_struct", "mm", LAYOUT(task_mm)},
	{"mm_struct", "arg_start", LAYOUT(mm_arg_start)},
	{"mm_struct", "arg_end", LAYOUT(mm_arg_end)},
	{"task_struct", "thread_pid", LAYOUT(pidns.task_thread_pid)},
	{"task_struct", "group_leader", LAYOUT(pidns.task_group_leader)},
	{"pid", "level", LAYOUT(pidns.pid_level)},
	{"pid", "numbers", LAYOUT(pidns.pid_numbers)},
	{"upid", "ns", LAYOUT(pidns.upid_ns)},
	{"pid_namespace", "ns", LAYOUT(pidns.ns_inum)}, /* + ns_common's inum */
};

static int from_btf(struct kernel_layout *kl)
{
	struct btf *btf = btf__load_vmlinux_btf();
	uint32_t inum = 0, nr = 1;
	long long upid_size = -1;
	int err = 0, upid;

	if (!btf) {
		err = -errno;
		pr_err("cannot read the kernel's BTF (/sys/kernel/btf/vmlinux): %s",
		       strerror(-err));
		return err;
	}
	for (size_t i = 0; !err && i < sizeof(members) / sizeof(members[0]); i++) {
		const struct member *m = &members[i];

		err = offset_of(btf, m->type, m->name, (uint32_t *)((char *)kl + m->at));
		if (err)
			pr_err("the kernel's BTF has no %s in struct %s", m->name, m->type);
	}
	if (!err && (err = offset_of(btf, "ns_common", "inum", &inum)))
		pr_err("the kernel's BTF has no inum in struct ns_common");
	kl->pidns.ns_inum += inum;
	/* A struct upid: its number first, then its namespace. */
	upid = btf__find_by_name_kind(btf, "upid", BTF_KIND_STRUCT);
	if (upid > 0)
		upid_size = btf__resolve_size(btf, upid);
	if (!err && (upid_size <= 0 || offset_of(btf, "upid", "nr", &nr) || nr)) {
		pr_err("the kernel's BTF has no struct upid with nr first");
		err = -ENOENT;
	}
	kl->pidns.upid_size = upid_size;
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
