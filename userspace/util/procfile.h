/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A process's files as the process sees them.  A QEMU in a container names
 * files by paths of its own mount namespace: the same path on the host may
 * be another file, or a link planted to lead a root tool elsewhere.  So a
 * file is opened through the process: the very file it maps, by
 * /proc/PID/map_files, or its path resolved inside /proc/PID/root, where
 * no link leads out.  Only regular files are ever opened (a FIFO would
 * block, a device could act on an open).
 */
#ifndef QJ_PROCFILE_H
#define QJ_PROCFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* A process's view of the filesystem. */
struct proc_view {
	pid_t pid;    /* 0: the tool's own */
	int root_fd;  /* O_PATH of /proc/PID/root, or -1 for ours */
	bool foreign; /* another mount namespace than the tool's */
	pid_t nspid;  /* PID in its innermost PID namespace */
	/* Its /tmp when the view was opened (tmp_ino 0: it had none). */
	dev_t tmp_dev;
	ino_t tmp_ino;
};

/*
 * PID's view, while PID lives (the root stays reachable afterwards); the
 * tool's own view for PID 0, or when /proc/PID is gone.
 */
void proc_view_open(struct proc_view *v, pid_t pid);
void proc_view_close(struct proc_view *v);
/* DST, new, is SRC's view for PID (a forked child shares its root). */
void proc_view_copy(struct proc_view *dst, const struct proc_view *src, pid_t pid);

/*
 * Open regular file PATH as V sees it, with FLAGS (O_RDONLY, O_WRONLY...):
 * a link is followed only inside V's root.  -errno; -EINVAL for a file
 * that is not a regular one.
 */
int view_open(const struct proc_view *v, const char *path, int flags);
/* The directory PATH as V sees it, for openat(): -errno. */
int view_open_dir(const struct proc_view *v, const char *path);
/*
 * The directory /tmp as V sees it, for openat(): -errno, and -ESTALE when
 * it is no longer the one the process had when V was opened (a container's
 * own /tmp goes with its mount namespace, leaving the directory beneath).
 */
int view_open_tmp(const struct proc_view *v);
/* Is PATH, as V sees it, readable?  (access(2) through the view.) */
bool view_exists(const struct proc_view *v, const char *path);

/*
 * PID's state letter (R, S, Z...) and start time (clock ticks after boot,
 * which tell one process from a later one with its pid); false once
 * /proc/PID is gone.
 */
bool proc_stat(pid_t pid, char *state, uint64_t *start);
/* PID's parent, and its threads' CPU time (user and system, in clock
 * ticks: 10 ms); false if it is gone. */
bool proc_parent_cpu(pid_t pid, pid_t *ppid, uint64_t *cpu_ns);
/* Is PID running: there, and neither a zombie nor dead? */
bool proc_running(pid_t pid);

/*
 * The regular file process PID maps at [START, END), with FLAGS: the file
 * itself, whatever its path has become.  -errno.
 */
int mapped_open(pid_t pid, uint64_t start, uint64_t end, int flags);

/*
 * Is the open regular file FD one that its owner (or a container) could
 * change while we read it?  Then it is read from a private copy
 * (file_snapshot).
 */
bool file_changeable(int fd, bool foreign);
/*
 * A private copy of regular file FD, at most MAX bytes (-EFBIG beyond):
 * a memfd nobody else can truncate under a mapping of ours.  Closes FD.
 */
int file_snapshot(int fd, const char *name, uint64_t max);

/* SIZE bytes at ADDR in PID's memory into BUF (process_vm_readv: the
 * process is not stopped); false unless all were read. */
bool proc_mem_read(pid_t pid, uint64_t addr, void *buf, size_t size);

/* Entry TYPE of PID's auxiliary vector (a 64-bit process's), if it has one. */
bool proc_auxv(pid_t pid, uint64_t type, uint64_t *val);

#endif
