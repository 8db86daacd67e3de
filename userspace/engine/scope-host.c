// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The host (-a): every process of every QEMU binary with our probes,
 * those running when we start and those started later, through links for
 * all processes of each binary (pid -1), so that the kernel enables the
 * probes of a QEMU that starts later before it runs.  The run ends on
 * Ctrl-C or -d.
 */
#include "engine/engine.h"
#include "engine/scope.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/types.h>
#include "qemu-jitbpf.h"
#include "sample.h"

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

		if (pid > 0 && pid != self && scope_exe_of(pid, exe, sizeof(exe)))
			fn(e, pid, exe);
	}
	closedir(d);
}

static void find_binary(struct engine *e, pid_t pid, const char *exe)
{
	scope_binary(e, exe, pid, NULL);
}

static int find(struct engine *e, const struct binary **bin)
{
	int err = scope_watch(e, true);

	*bin = NULL;
	if (err)
		return err;
	each_process(e, find_binary);
	if (!e->nbins) {
		pr_err("no QEMU with the qemu-jitbpf probes (or the dtrace trace backend's) runs "
		       "here or is binfmt_misc's; name the binaries to watch with --qemu PATH");
		return -ENOENT;
	}
	return 0;
}

/* The guest frame chains of -a's binaries; all of them for a binary
 * whose name does not say. */
static unsigned int walkers(const struct engine *e)
{
	unsigned int w = 0;

	for (size_t i = 0; i < e->nbins; i++)
		w |= e->bins[i]->via_proc ? QJ_WALK_ALL : sampler_walkers(e->bins[i]->path);
	return w ? w : QJ_WALK_ALL;
}

static int attach_binaries(struct engine *e)
{
	for (size_t i = 0; i < e->nbins; i++) {
		int err = scope_attach_vcpus(e, e->bins[i], e->bins[i]->path, -1, &e->links);

		if (err)
			return err;
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
	if (stat(proc_exe, &st) || !scope_known(e, &st) || procs_find(e, pid))
		return;
	p = procs_new(e, pid, NULL, true);
	procs_begin(e, p, NULL, 0, mono_ns());
}

static void ask_running(struct engine *e)
{
	each_process(e, find_qemu);
	pr_dbg("attached to %zu binaries, %zu QEMU processes running", e->nbins, e->procs.n);
}

/* -a: every binary, for every process; the QEMUs that run are asked. */
static int attach(struct engine *e, const struct binary *bin)
{
	int err = probes_attach_tasks(&e->probes, &e->links);

	(void)bin;

	if (!err)
		err = attach_binaries(e);
	if (!err && e->profiling)
		err = profiler_start(&e->prof);
	if (err)
		return err;
	e->attached_ns = mono_ns();
	ask_running(e);
	return 0;
}

static void wait(struct engine *e, int fd, int timeout_ms)
{
	struct pollfd pfd = {fd, POLLIN, 0};

	(void)e;
	poll(&pfd, 1, timeout_ms);
}

/* Until Ctrl-C or -d. */
static bool following(struct engine *e)
{
	(void)e;
	return true;
}

static void forked(struct engine *e, struct proc *parent, struct proc *c, uint64_t ts)
{
	(void)parent, (void)ts;
	/* perf honours only a marker the child mapped itself: ask it for a
	 * handshake, which makes one (and flushes). */
	if (e->o->jitdump)
		procs_ask(c, false);
}

/* The new program's QEMU, if any, reports itself. */
static void execd(struct engine *e, pid_t pid, struct exec_before *before, uint64_t ts)
{
	(void)pid, (void)ts;
	scope_drop_links(e, &before->links);
}

const struct scope scope_host = {
	.name = "host",
	.every_kind = true,
	/* A host's many vCPU threads. */
	.vcpus = 16384,
	.adopts = true,
	.find = find,
	.walkers = walkers,
	.attach = attach,
	.wait = wait,
	.following = following,
	.forked = forked,
	.execd = execd,
};
