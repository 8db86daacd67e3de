/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Whether this run may do what it is asked: the capabilities each part
 * needs (qemu-jitbpf(8), PRIVILEGES), checked before anything is loaded.
 */
#ifndef QJ_PRIVILEGES_H
#define QJ_PRIVILEGES_H

#include <stdbool.h>

/* What a run needs to be allowed (qemu-jitbpf(8), PRIVILEGES). */
struct privilege_needs {
	bool ptrace;  /* QEMUs it did not start: -p, -a */
	bool perfmap; /* perf maps, owned by QEMU's user */
	bool jitdump; /* writing QEMU's marker */
	bool remove;  /* removing files of other users (--keep-exited) */
};
/* 0, or -errno with the first capability missing named. */
int check_privileges(const struct privilege_needs *n);
/* May we raise a thread's priority (CAP_SYS_NICE)? */
bool may_raise_priority(void);

#endif
