// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the two scopes share (scope.h): the QEMU binaries a run knows, by
 * device and inode, each read once for its probes.
 */
#include "engine/scope.h"
#include "engine/binfmt.h"
#include "engine/engine.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool scope_exe_of(pid_t pid, char *exe, size_t size)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	n = readlink(link, exe, size - 1);
	if (n <= 0)
		return false;
	exe[n] = 0;
	return !strstr(exe, " (deleted)");
}

const struct binary *scope_known(struct engine *e, const struct stat *st)
{
	for (size_t i = 0; i < e->nbins; i++)
		if (e->bins[i]->dev == st->st_dev && e->bins[i]->ino == st->st_ino)
			return e->bins[i];
	return NULL;
}

/*
 * The binary PATH, or the one process PID runs (PATH is then what its
 * /proc/PID/exe says), as a binary with our probes: NULL if not; ERR (if
 * not NULL) says why.  A binary is known by device and inode: a container's
 * emulator (binfmt_misc's F flag) may have a path that names nothing here,
 * or another file; the process's own /proc/PID/exe is then its path.
 */
static const struct binary *lookup(struct engine *e, const char *path, pid_t pid, int *err)
{
	const struct binary *b;
	struct binary *nb;
	struct stat st, at_path;
	char proc_exe[64];
	int rc;

	if (pid > 0)
		snprintf(proc_exe, sizeof(proc_exe), "/proc/%d/exe", pid);
	if (stat(pid > 0 ? proc_exe : path, &st)) {
		if (err)
			*err = -errno;
		return NULL;
	}
	b = scope_known(e, &st);
	if (b)
		return b;
	if (pid > 0 && (!path || stat(path, &at_path) || at_path.st_dev != st.st_dev ||
			at_path.st_ino != st.st_ino))
		path = proc_exe;
	nb = xmalloc(sizeof(*nb));
	rc = binary_init(nb, path);
	if (rc) {
		free(nb);
		if (err)
			*err = rc;
		return NULL;
	}
	nb->via_proc = path == proc_exe;
	rc = scope_stock_check(e, nb);
	if (rc) {
		binary_free(nb);
		free(nb);
		if (err)
			*err = rc;
		return NULL;
	}
	grow(&e->bins, &e->bins_cap, e->nbins + 1, sizeof(*e->bins));
	e->bins[e->nbins++] = nb;
	pr_dbg("QEMU binary %s", path);
	return nb;
}

const struct binary *scope_binary(struct engine *e, const char *path, pid_t pid, int *err)
{
	char exe[PATH_MAX];

	if (!path) {
		if (!scope_exe_of(pid, exe, sizeof(exe)))
			return NULL;
		path = exe;
	}
	return lookup(e, path, pid, err);
}

/* Where binfmt_misc is: here, or, in a container (the tool's image, run
 * with --pid=host), where the host's first process sees it. */
static const char *binfmt_dir(void)
{
	if (access("/proc/sys/fs/binfmt_misc/status", F_OK) &&
	    !access("/proc/1/root/proc/sys/fs/binfmt_misc/status", F_OK))
		return "/proc/1/root/proc/sys/fs/binfmt_misc";
	return "/proc/sys/fs/binfmt_misc";
}

/*
 * The emulator of each enabled binfmt_misc entry: with the probes, the
 * QEMU every foreign executable will start.  An entry registered with
 * flag F runs the file the kernel opened then, whatever its path names
 * now (nothing, for an emulator image's): that file, reached through a
 * process it starts (binfmt.c), held open for the run.
 */
static void each_binfmt(struct engine *e)
{
	const char *dir = binfmt_dir();
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		char path[PATH_MAX], fd_path[64];
		struct stat opened, named;
		struct binfmt_entry b;
		int fd;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, "register") ||
		    !strcmp(de->d_name, "status"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (binfmt_entry_read(path, &b) || !b.enabled)
			continue;
		if (!b.fix_binary || (fd = binfmt_emulator_fd(&b)) < 0) {
			scope_binary(e, b.interpreter, 0, NULL);
			continue;
		}
		/* Its path names that file still: the path, as without F. */
		if (!fstat(fd, &opened) && !stat(b.interpreter, &named) &&
		    opened.st_dev == named.st_dev && opened.st_ino == named.st_ino) {
			close(fd);
			scope_binary(e, b.interpreter, 0, NULL);
			continue;
		}
		snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", fd);
		if (!scope_binary(e, fd_path, 0, NULL)) {
			close(fd);
			continue;
		}
		grow(&e->emulator_fds, &e->emulator_fds_cap, e->nemulator_fds + 1,
		     sizeof(*e->emulator_fds));
		e->emulator_fds[e->nemulator_fds++] = fd;
		pr_dbg("binfmt_misc %s: the emulator it opened (%s when registered) is %s",
		       de->d_name, b.interpreter, fd_path);
	}
	if (d)
		closedir(d);
}

int scope_watch(struct engine *e, bool binfmt)
{
	for (int i = 0; i < e->o->nqemus; i++) {
		int err = 0;

		if (!scope_binary(e, e->o->qemus[i], 0, &err)) {
			pr_err("%s: %s", e->o->qemus[i],
			       err == -ENOTSUP
				       ? "not a QEMU with the qemu-jitbpf probes (make "
					 "qemu), nor a linux-user one with the dtrace trace "
					 "backend's"
				       : strerror(-err));
			return err;
		}
	}
	if (binfmt)
		each_binfmt(e);
	return 0;
}

int scope_stock_check(struct engine *e, const struct binary *b)
{
	const struct engine_opts *o = e->o;
	const char *no = o->jitdump	   ? "--jitdump"
			 : o->uftrace	   ? "--uftrace"
			 : o->cov.counts   ? "--coverage-counts"
			 : o->perfmap_insn ? "--perfmap-insn"
			 : o->stacks	   ? "--stacks"
			 : o->report	   ? "--report"
			 : o->profile	   ? "--profile, --top and --push"
			 : o->nguest_elves ? "--guest-elf"
			 : o->nguest_syms  ? "--guest-symbols"
					   : NULL;

	if (!b->stock)
		return 0;
	if (no) {
		pr_err("%s is a QEMU without our probes (its own trace events only): no %s; build "
		       "one with them: make qemu (see README.md)",
		       b->path, no);
		return -ENOTSUP;
	}
	if (!e->stock_noted)
		pr_warn("%s is a QEMU without our probes: perf map and coverage of the blocks it "
			"translates from now on, named per block; no jitdump (perf honours only a "
			"marker QEMU maps itself), no code translated before we attached, no guest "
			"calls, counts, profiles or stacks: for those, build one with our probes "
			"(make qemu)",
			b->path);
	e->stock_noted = true;
	return 0;
}

void scope_drop_links(struct engine *e, struct linkset *links)
{
	if (links->n)
		probes_release(&e->probes, e->profiling ? e->prof.sm : NULL, links);
	free(links->v);
	free(links->ids);
	*links = (struct linkset){0};
}

int scope_attach_vcpus(struct engine *e, const struct binary *b, const char *path, pid_t pid,
		       struct linkset *ls)
{
	struct bpf_link *l;

	if (e->o->stacks && !b->vcpu_threads) {
		pr_err("%s has no jit_vcpu_thread probe, which --stacks needs: a QEMU built from "
		       "probes/ before it (make qemu)",
		       b->path);
		return -ENOTSUP;
	}
	if (!e->profiling)
		return 0;
	l = profiler_attach(&e->prof, pid, path);
	if (!l)
		return -errno;
	linkset_add(ls, l);
	/* A profile takes these too, for a thread that has not entered the
	 * execution loop since the handshake (a compute-bound one). */
	if (b->vcpu_threads) {
		l = profiler_attach_threads(&e->prof, pid, path);
		if (!l)
			return -errno;
		linkset_add(ls, l);
	}
	return 0;
}
