/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Writer of /tmp/perf-PID.map (formats.md §1), from the live code map. */
#ifndef QJ_PERFMAP_H
#define QJ_PERFMAP_H

#include <sys/types.h>
#include <stdint.h>

#include "naming/codemap.h"

/*
 * Write PATH in directory DIRFD (AT_FDCWD, or a container's /tmp)
 * atomically, readable by all, owned by UID:GID; 0 or -errno.
 */
int perfmap_write(struct codemap *m, int dirfd, const char *path, uid_t uid, gid_t gid,
		  uint64_t *bytes);

#endif
