// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What a run follows.  A tree: the QEMU the user named, and each process
 * forked from it or from its descendants, whose probes are attached one
 * process at a time (a QEMU that nobody follows runs as if we were not
 * there).  The host (-a): every process of every QEMU binary with our
 * probes, through links for all processes of the binary (pid -1), so the
 * kernel enables the probes of a QEMU that starts later before it runs.
 */
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

/* What /proc/PID/exe resolves to, into EXE; false if gone or deleted. */
static bool exe_of(pid_t pid, char *exe, size_t size)
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

static const struct binary *known(struct engine *e, const struct stat *st)
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
	b = known(e, &st);
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
	grow(&e->bins, &e->bins_cap, e->nbins + 1, sizeof(*e->bins));
	e->bins[e->nbins++] = nb;
	pr_dbg("QEMU binary %s", path);
	return nb;
}

const struct binary *scope_binary(struct engine *e, const char *path, pid_t pid)
{
	char exe[PATH_MAX];

	if (!path) {
		if (!exe_of(pid, exe, sizeof(exe)))
			return NULL;
		path = exe;
	}
	return lookup(e, path, pid, NULL);
}

int scope_attach(struct engine *e, struct proc *p, const struct binary *b)
{
	pid_t pid = p->t->pid;
	struct binary here = *b;
	char proc_exe[64];
	int err = 0;

	p->bin = b;
	if (e->o->cov.counts && !b->counts) {
		/* Asked for one QEMU: an error; -a warns once per binary. */
		if (e->tree) {
			pr_err("%s cannot count executions (no qemu:jit_counts probe: QEMU "
			       "10.2.2 with our patch series): no --coverage-counts",
			       b->path);
			return -ENOTSUP;
		}
		if (!b->counts_warned)
			pr_warn("%s cannot count executions (no qemu:jit_counts probe): its "
				"coverage counts 1 for what ran",
				b->path);
		((struct binary *)b)->counts_warned = true;
	}
	/* A binary known by a process's /proc/PID/exe: this one's. */
	if (b->via_proc) {
		snprintf(proc_exe, sizeof(proc_exe), "/proc/%d/exe", pid);
		here.path = proc_exe;
	}
	if (e->profiling) {
		struct bpf_link *l = profiler_attach(&e->prof, pid, here.path);

		if (l)
			linkset_add(&p->links, l);
		else
			err = -errno;
	}
	if (!err)
		err = probes_attach(&e->probes, &here, pid, &p->links);
	/* Whose links they are, while the kernel can still say it. */
	probes_note(&e->probes, e->profiling ? e->prof.sm : NULL, pid, &p->links);
	p->attached_ns = mono_ns();
	return err;
}

/* Each process of this host but ours: FN(e, pid, exe). */
static void each_process(struct engine *e, void (*fn)(struct engine *e, pid_t pid, const char *exe))
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t self = getpid();

	if (!d)
		return;
	while ((de = readdir(d))) {
		char exe[PATH_MAX];
		pid_t pid = atoi(de->d_name);

		if (pid > 0 && pid != self && exe_of(pid, exe, sizeof(exe)))
			fn(e, pid, exe);
	}
	closedir(d);
}

static void find_binary(struct engine *e, pid_t pid, const char *exe)
{
	lookup(e, exe, pid, NULL);
}

int scope_host(struct engine *e)
{
	for (int i = 0; i < e->o->nqemus; i++) {
		int err = 0;

		if (!lookup(e, e->o->qemus[i], 0, &err)) {
			pr_err("%s: %s", e->o->qemus[i],
			       err == -ENOTSUP
				       ? "not a QEMU with the qemu-jitbpf probes (make qemu)"
				       : strerror(-err));
			return err;
		}
	}
	each_process(e, find_binary);
	if (!e->nbins) {
		pr_err("no QEMU with the qemu-jitbpf probes runs here; name the binaries to "
		       "watch with --qemu PATH");
		return -ENOENT;
	}
	return 0;
}

int scope_host_attach(struct engine *e)
{
	for (size_t i = 0; i < e->nbins; i++) {
		int err;

		if (e->profiling) {
			struct bpf_link *l = profiler_attach(&e->prof, -1, e->bins[i]->path);

			if (!l)
				return -errno;
			linkset_add(&e->links, l);
		}
		err = probes_attach(&e->probes, e->bins[i], -1, &e->links);
		if (err)
			return err;
	}
	return 0;
}

/* A QEMU that predates us: ask it for its handshake, as with -p. */
static void find_qemu(struct engine *e, pid_t pid, const char *exe)
{
	char proc_exe[64];
	struct stat st;
	struct proc *p;

	(void)exe; /* the path may name another file here: the file itself */
	snprintf(proc_exe, sizeof(proc_exe), "/proc/%d/exe", pid);
	if (stat(proc_exe, &st) || !known(e, &st) || procs_find(e, pid))
		return;
	p = procs_new(e, pid, NULL, true);
	if (p->s.uft)
		uftrace_begin(p->s.uft, pid, mono_ns());
}

void scope_host_running(struct engine *e)
{
	each_process(e, find_qemu);
	pr_dbg("attached to %zu binaries, %zu QEMU processes running", e->nbins, e->nprocs);
}
