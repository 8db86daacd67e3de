// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/procfile.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/openat2.h>

static int openat2_path(int dirfd, const char *path, int flags, uint64_t resolve)
{
	struct open_how how = {
		.flags = (uint64_t)flags | O_CLOEXEC,
		.resolve = resolve,
	};
	int fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

	return fd < 0 ? -errno : fd;
}

/* Open the regular file that O_PATH descriptor FD is, with FLAGS; closes FD. */
static int reopen_regular(int fd, int flags)
{
	char self[64];
	struct stat st;
	int rfd;

	if (fstat(fd, &st)) {
		rfd = -errno;
	} else if (!S_ISREG(st.st_mode)) {
		rfd = -EINVAL;
	} else {
		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
		rfd = open(self, flags | O_CLOEXEC | O_NOCTTY);
		if (rfd < 0)
			rfd = -errno;
	}
	close(fd);
	return rfd;
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static pid_t ns_pid(pid_t pid)
{
	char path[64], *text, *line, *end;
	pid_t ns = pid;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	text = read_all(path, &len, 4096);
	if (!text)
		return pid;
	line = strstr(text, "\nNStgid:");
	if (line) {
		line += strlen("\nNStgid:");
		end = line + strcspn(line, "\n");
		*end = 0;
		/* The innermost namespace's pid is the last. */
		while (*line) {
			char *next;
			long v = strtol(line, &next, 10);

			if (next == line)
				break;
			ns = v;
			line = next;
		}
	}
	free(text);
	return ns;
}

void proc_view_open(struct proc_view *v, pid_t pid)
{
	char root[64], mnt[64];

	memset(v, 0, sizeof(*v));
	v->root_fd = -1;
	v->pid = pid;
	v->nspid = pid;
	if (pid <= 0)
		return;
	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	v->root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (v->root_fd < 0)
		return;
	snprintf(mnt, sizeof(mnt), "/proc/%d/ns/mnt", pid);
	v->foreign = !same_file(mnt, "/proc/self/ns/mnt") || !same_file(root, "/");
	v->nspid = ns_pid(pid);
	if (v->foreign) {
		/* Its /tmp now, to tell it from what lies beneath later. */
		int fd = view_open_dir(v, "/tmp");
		struct stat st;

		if (fd >= 0 && !fstat(fd, &st)) {
			v->tmp_dev = st.st_dev;
			v->tmp_ino = st.st_ino;
		}
		if (fd >= 0)
			close(fd);
	}
}

void proc_view_close(struct proc_view *v)
{
	if (v->root_fd >= 0)
		close(v->root_fd);
	v->root_fd = -1;
}

void proc_view_copy(struct proc_view *dst, const struct proc_view *src, pid_t pid)
{
	*dst = *src;
	dst->pid = pid;
	dst->nspid = ns_pid(pid);
	if (src->root_fd >= 0)
		dst->root_fd = fcntl(src->root_fd, F_DUPFD_CLOEXEC, 0);
}

/* The O_PATH descriptor of PATH (a directory if DIR) as V sees it. */
static int view_path(const struct proc_view *v, const char *path, bool dir)
{
	int flags = O_PATH | (dir ? O_DIRECTORY : 0), fd;

	if (v->root_fd < 0)
		fd = openat2_path(AT_FDCWD, path, flags, 0);
	else
		fd = openat2_path(v->root_fd, path, flags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
	/* No openat2 (a kernel before 5.6, valgrind): a view of our own root
	 * needs no confinement; another's stays closed. */
	if (fd == -ENOSYS && !v->foreign) {
		fd = openat(v->root_fd < 0 ? AT_FDCWD : v->root_fd, path, flags | O_CLOEXEC);
		fd = fd < 0 ? -errno : fd;
	}
	return fd;
}

int view_open(const struct proc_view *v, const char *path, int flags)
{
	int fd = view_path(v, path, false);

	return fd < 0 ? fd : reopen_regular(fd, flags);
}

int view_open_dir(const struct proc_view *v, const char *path)
{
	return view_path(v, path, true);
}

int view_open_tmp(const struct proc_view *v)
{
	int fd = view_open_dir(v, "/tmp");
	struct stat st;

	if (fd < 0 || !v->tmp_ino)
		return fd;
	if (fstat(fd, &st) || st.st_dev != v->tmp_dev || st.st_ino != v->tmp_ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

bool view_exists(const struct proc_view *v, const char *path)
{
	int fd = view_path(v, path, false);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* /proc/PID/stat's fields after the name (which may hold anything), from
 * the state (field 3) on, into BUF; NULL if it cannot be read. */
static const char *stat_fields(pid_t pid, char *buf, size_t size)
{
	char path[64], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] ? p + 2 : NULL;
}

/* Field N (3: the state) of FIELDS, a stat_fields(). */
static const char *stat_field(const char *fields, int n)
{
	for (int field = 3; field < n && fields; field++)
		if ((fields = strchr(fields, ' ')))
			fields++;
	return fields;
}

bool proc_stat(pid_t pid, char *state, uint64_t *start)
{
	char buf[512];
	const char *f = stat_fields(pid, buf, sizeof(buf)), *st = stat_field(f, 22);
	unsigned long long v;

	if (!f || !st || sscanf(st, "%llu", &v) != 1)
		return false;
	*state = f[0];
	*start = v;
	return true;
}

bool proc_parent_cpu(pid_t pid, pid_t *ppid, uint64_t *cpu_ns)
{
	char buf[512];
	const char *f = stat_fields(pid, buf, sizeof(buf)), *pp = stat_field(f, 4),
		   *ut = stat_field(f, 14);
	unsigned long long u, s;
	int parent;
	long tck = sysconf(_SC_CLK_TCK);

	if (!pp || !ut || sscanf(pp, "%d", &parent) != 1 || sscanf(ut, "%llu %llu", &u, &s) != 2)
		return false;
	*ppid = parent;
	*cpu_ns = (u + s) * (1000000000ull / (tck > 0 ? (unsigned long long)tck : 100));
	return true;
}

bool proc_running(pid_t pid)
{
	uint64_t start;
	char state;

	return proc_stat(pid, &state, &start) && state != 'Z' && state != 'X';
}

int mapped_open(pid_t pid, uint64_t start, uint64_t end, int flags)
{
	char link[96];
	int fd;

	snprintf(link, sizeof(link), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
	fd = open(link, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return reopen_regular(fd, flags);
}

bool file_changeable(int fd, bool foreign)
{
	struct stat st;

	if (foreign || fstat(fd, &st))
		return true;
	/* Root's, and written by root only: changed only by root. */
	return st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH));
}

int file_snapshot(int fd, const char *name, uint64_t max)
{
	uint64_t copied = 0;
	struct stat st;
	int mfd, err = 0;

	if (fstat(fd, &st)) {
		err = -errno;
		goto out;
	}
	if ((uint64_t)st.st_size > max) {
		err = -EFBIG;
		goto out;
	}
	mfd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0) {
		err = -errno;
		goto out;
	}
	/* The file may grow while we copy: never beyond MAX. */
	for (;;) {
		ssize_t n = sendfile(mfd, fd, NULL, 1 << 20);

		if (n < 0) {
			err = -errno;
			break;
		}
		if (!n)
			break;
		copied += n;
		if (copied > max) {
			err = -EFBIG;
			break;
		}
	}
	if (!err &&
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL))
		err = -errno;
	if (err)
		close(mfd);
	else
		err = mfd;
out:
	close(fd);
	return err;
}

bool proc_auxv(pid_t pid, uint64_t type, uint64_t *val)
{
	char path[64];
	uint64_t av[2];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fread(av, sizeof(av), 1, f) == 1 && av[0])
		if (av[0] == type) {
			*val = av[1];
			found = true;
		}
	fclose(f);
	return found;
}

bool proc_mem_read(pid_t pid, uint64_t addr, void *buf, size_t size)
{
	struct iovec local = {.iov_base = buf, .iov_len = size};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = size};

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)size;
}
