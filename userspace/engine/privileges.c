// SPDX-License-Identifier: GPL-2.0-or-later
#include "engine/privileges.h"
#include "util/util.h"

#include <errno.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif
#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif

static bool has_cap(const struct __user_cap_data_struct *d, int cap)
{
	return d[cap / 32].effective & (1u << (cap % 32));
}

bool may_raise_priority(void)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2] = {0};

	return !syscall(SYS_capget, &h, d) && has_cap(d, CAP_SYS_NICE);
}

int check_privileges(const struct privilege_needs *n)
{
	static const struct {
		int cap;
		const char *name, *why;
	} caps[] = {
		{CAP_BPF, "CAP_BPF", "to load BPF programs"},
		{CAP_PERFMON, "CAP_PERFMON", "to attach to QEMU's probes and sample"},
		{CAP_SYS_PTRACE, "CAP_SYS_PTRACE",
		 "to read a running QEMU's /proc files and memory"},
		{CAP_CHECKPOINT_RESTORE, "CAP_CHECKPOINT_RESTORE",
		 "to open the guest files QEMU maps (/proc/PID/map_files)"},
		{CAP_CHOWN, "CAP_CHOWN", "to give a perf map to QEMU's user, as perf wants"},
		{CAP_FOWNER, "CAP_FOWNER",
		 "to replace and remove perf maps of other users in /tmp"},
		{CAP_DAC_OVERRIDE, "CAP_DAC_OVERRIDE", "to write the jitdump marker QEMU made"},
	};
	bool need[] = {true,	  true, n->ptrace, true, n->perfmap, n->perfmap || n->remove,
		       n->jitdump};
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2] = {0};

	if (syscall(SYS_capget, &h, d))
		return -errno;
	/* Root, or what root can do. */
	if (has_cap(d, CAP_SYS_ADMIN) && has_cap(d, CAP_SYS_PTRACE) &&
	    has_cap(d, CAP_DAC_OVERRIDE) && has_cap(d, CAP_CHOWN) && has_cap(d, CAP_FOWNER))
		return 0;
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		/* CAP_SYS_ADMIN does what CAP_BPF, CAP_PERFMON and
		 * CAP_CHECKPOINT_RESTORE do. */
		bool admin = has_cap(d, CAP_SYS_ADMIN) &&
			     (caps[i].cap == CAP_BPF || caps[i].cap == CAP_PERFMON ||
			      caps[i].cap == CAP_CHECKPOINT_RESTORE);

		if (need[i] && !admin && !has_cap(d, caps[i].cap)) {
			pr_err("missing capability %s: needed %s (run as root, or see PRIVILEGES "
			       "in qemu-jitbpf(8))",
			       caps[i].name, caps[i].why);
			return -EPERM;
		}
	}
	return 0;
}
