// SPDX-License-Identifier: GPL-2.0-or-later
#include "engine/kernel.h"
#include "util/util.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>

#define MAGIC "QJLAYOUT1"

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
	btf__free(btf);
	return err;
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
	return err;
}
