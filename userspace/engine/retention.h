/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --keep-exited: the files of processes that have ended (perf maps, the
 * copies in containers, jitdumps, -a's uftrace directories) are kept for
 * a while, then removed, so that a host where QEMUs come and go for weeks
 * does not fill its /tmp.  A file goes only once the limits are past and
 * its pid no longer belongs to its process (the same pid and start time:
 * a process that exec'd another program lives on), and only if the name
 * still is the very file written (same device and inode; what replaced
 * it is another's).  Directories are held open, one per directory.
 */
#ifndef QJ_RETENTION_H
#define QJ_RETENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/keep.h"

struct kept_file {
	int dir; /* an index into the retention's directories */
	char *name;
	dev_t dev;
	ino_t ino;
	bool tree; /* a directory of files (uftrace data) */
};

#define KEPT_FILES 4

struct kept {
	pid_t pid;
	uint64_t start;	   /* its start time (proc_stat()), 0 if unknown */
	uint64_t ended_ns; /* CLOCK_MONOTONIC */
	struct kept_file f[KEPT_FILES];
	int nf;
};

struct kept_dir {
	dev_t dev;
	ino_t ino;
	int fd; /* O_PATH */
	unsigned int refs;
};

struct retention {
	struct keep keep;
	struct kept *v; /* oldest first */
	size_t n, cap;
	struct kept_dir *dirs;
	size_t ndirs, dirs_cap;
	uint64_t removed; /* files and directories removed */
	uint64_t gone;	  /* replaced or removed by someone else: forgotten */
};

void retention_init(struct retention *r, const struct keep *k);
/* Process PID, started at START, has ended at NOW: keep what comes. */
struct kept *retention_begin(struct retention *r, pid_t pid, uint64_t start, uint64_t now);
/*
 * File NAME (no slash) in directory DIRFD, just written for K; TREE: a
 * directory of files.  DIRFD stays the caller's.
 */
void retention_add_at(struct retention *r, struct kept *k, int dirfd, const char *name, bool tree);
/* The same for PATH as view V sees it (NULL: the tool's own). */
struct proc_view;
void retention_add(struct retention *r, struct kept *k, const struct proc_view *v, const char *path,
		   bool tree);
/* K has all its files: an entry without any is dropped. */
void retention_end(struct retention *r, struct kept *k);
/* A new process (started at START) has PID: an older one's files go now. */
void retention_pid_reused(struct retention *r, pid_t pid, uint64_t start);
/* Remove what is past the limits (call about once a second). */
void retention_tick(struct retention *r, uint64_t now);
/* Forget everything; the files stay. */
void retention_free(struct retention *r);

#endif
