// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A tree: the QEMU the user named (launched, or running: -p), or a
 * command that is no QEMU, and every process forked from it or its
 * descendants, whose probes are attached one process at a time (a QEMU
 * that nobody follows runs as if we were not there).  The run ends with
 * the tree.
 */
#include "engine/engine.h"
#include "engine/scope.h"
#include "engine/warmup.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/types.h>
#include "qemu-jitbpf.h"
#include "sample.h"

/*
 * A stock QEMU has no fork or attach wait: what it translates before its
 * probes are attached is lost.  So its binary's are attached once, for
 * every process that runs it (HERE names it), and the BPF side keeps the
 * tree's: a QEMU the tree execs or forks is seen from its first TB.
 */
static int attach_stock(struct engine *e, const struct binary *b, const struct binary *here)
{
	for (size_t i = 0; i < e->nbins; i++) {
		struct binary *nb = e->bins[i];
		int err;

		if (nb != b)
			continue;
		if (nb->attached_all)
			return 0;
		err = probes_attach(&e->probes, here, -1, &e->links);
		nb->attached_all = !err;
		return err;
	}
	return -ENOENT;
}

/* Our probes into process P, which runs binary B. */
static int attach_proc(struct engine *e, struct proc *p, const struct binary *b)
{
	pid_t pid = p->t->pid;
	struct binary here = *b;
	char proc_exe[64];
	int err;

	p->bin = b;
	if (e->o->cov.counts && !b->counts) {
		pr_err("%s cannot count executions (no qemu:jit_counts probe: QEMU 10.2.2 with "
		       "our patch series): no --coverage-counts",
		       b->path);
		return -ENOTSUP;
	}
	/* A binary known by a process's /proc/PID/exe: this one's. */
	if (b->via_proc) {
		snprintf(proc_exe, sizeof(proc_exe), "/proc/%d/exe", pid);
		here.path = proc_exe;
	}
	err = probes_attach_follow(&e->probes, &here, pid, &p->links);
	p->follows_ns = mono_ns();
	if (!err)
		err = scope_attach_vcpus(e, b, here.path, pid, &p->links);
	if (!err && b->stock)
		err = attach_stock(e, b, &here);
	else if (!err)
		err = probes_attach(&e->probes, &here, pid, &p->links);
	/* Whose links they are, while the kernel can still say it. */
	probes_note(&e->probes, e->profiling ? e->prof.sm : NULL, pid, &p->links);
	p->attached_ns = mono_ns();
	return err;
}

/* A tree: the QEMU the user named, launched or running, and its session. */
static int find(struct engine *e, const struct binary **bin)
{
	const struct engine_opts *o = e->o;
	/*
	 * A QEMU that can hold its reports runs the guest while we attach
	 * (with calls instrumented from its first block when we want them),
	 * unless we sample: the sampler needs to know where every vCPU's
	 * registers are from the start.
	 */
	enum target_hold hold = o->profile ? HOLD_NONE : HOLD_REPORTS;
	struct proc *p;
	int err;

	if (hold && o->uftrace)
		hold = HOLD_CALLS;
	/* The first uprobe's grace period, paid while QEMU starts. */
	e->warm = warmup_start();
	if (o->cmd)
		err = target_launch(&e->root, o->cmd, o->jitdump ? o->outdir : NULL, hold,
				    o->cov.counts);
	else
		err = target_attach(&e->root, o->pid);
	if (err) {
		if (o->cmd && err == -ECHILD)
			pr_err("%s did not start", o->cmd[0]);
		return err;
	}
	if (e->root.native) {
		if (o->nguest_elves || o->nguest_syms) {
			pr_err("%s is not a QEMU: --guest-elf and --guest-symbols name one QEMU's "
			       "guest",
			       e->root.exe);
			return -EINVAL;
		}
		pr_dbg("%s is not a QEMU: following the QEMUs it runs", e->root.exe);
		/* Those it may run, binfmt_misc's for a foreign program. */
		return scope_watch(e, true);
	}
	err = scope_watch(e, false);
	if (err)
		return err;
	p = procs_new(e, e->root.pid, &e->root, false);
	procs_begin(e, p, NULL, 0, mono_ns());
	err = handshake_init(&p->s.hs, &e->root);
	for (int i = 0; !err && i < o->nguest_elves; i++)
		err = guest_add_elf_spec(&p->s.jm.guest, o->guest_elves[i]);
	for (int i = 0; !err && i < o->nguest_syms; i++)
		err = guest_add_symbols_spec(&p->s.jm.guest, o->guest_syms[i]);
	if (err)
		return err;
	*bin = scope_binary(e, e->root.exe, e->root.pid, NULL);
	return *bin ? 0 : -ENOTSUP;
}

/* The guest frame chains of the QEMU named; all of them for a command
 * that is no QEMU, or a binary whose name does not say. */
static unsigned int walkers(const struct engine *e)
{
	return e->root.native ? QJ_WALK_ALL : sampler_walkers(e->root.exe);
}

/* A tree: follow its first process, attach to it, ask for its handshake. */
static int attach(struct engine *e, const struct binary *bin)
{
	struct proc *root = procs_find(e, e->root.pid);
	int err = probes_follow(&e->probes, e->root.pid);

	/* A stock QEMU the tree may run is seen from its first TB. */
	for (size_t i = 0; !err && i < e->nbins; i++)
		if (e->bins[i]->stock)
			err = attach_stock(e, e->bins[i], e->bins[i]);
	/* A command that is no QEMU: followed, and attached to nothing yet. */
	if (!err && e->root.native) {
		err = probes_attach_tasks(&e->probes, &e->links);
		if (!err && e->profiling)
			err = profiler_start(&e->prof);
		if (!err) {
			e->attached_ns = mono_ns();
			target_resume(&e->root);
		}
		return err;
	}

	/* It came before the profiler did. */
	if (e->profiling)
		root->s.smp = profiler_follow(&e->prof, e->root.pid, root->s.split);

	if (!err)
		err = probes_attach_tasks(&e->probes, &e->links);
	if (!err)
		err = attach_proc(e, root, bin);
	if (!err && e->profiling)
		err = profiler_start(&e->prof);
	if (!err)
		err = handshake_start(&root->s.hs, 1);
	if (!err && root->s.hs.stock)
		session_stock_begin(&root->s);
	if (err)
		return err;
	e->attached_ns = root->s.hs.attached_ns;
	target_resume(&e->root);
	pr_dbg("attached to %s (pid %d)", e->root.exe, e->root.pid);
	return 0;
}

/* A tree: has the handshake of its first QEMU come, complete?  Ask again
 * while it has not; an error when it is too late or came incomplete. */
static int check(struct engine *e)
{
	struct proc *p = procs_find(e, e->root.pid);
	struct session *s;
	int err;

	if (!p || p->t != &e->root)
		return 0;
	s = &p->s;
	err = handshake_poll(&s->hs, mono_ns());
	if (err == -ETIMEDOUT && s->hs.stock)
		pr_err("cannot tell where QEMU (pid %d) keeps its guest (guest_base) after %.0f s: "
		       "no program of fixed addresses is mapped, and it has mapped no file and "
		       "translated no code in a file since",
		       e->root.pid, QJ_HANDSHAKE_TIMEOUT_NS / 1e9);
	else if (err == -ETIMEDOUT)
		pr_err("QEMU (pid %d) did not answer %u attach requests in %.0f s", e->root.pid,
		       s->hs.asks, QJ_HANDSHAKE_TIMEOUT_NS / 1e9);
	if (!err && s->refused)
		err = -EPROTO;
	if (!err && s->hs.answered && !s->hs.checked) {
		s->hs.checked = true;
		err = session_check_handshake(s, engine_wants_code(e->o));
	}
	return err;
}

/* Is there anything left to follow? */
static bool following(struct engine *e)
{
	/* A QEMU whose last thread has exited has told us all: the end of
	 * the run overlaps with the kernel freeing its memory (a few ms),
	 * and its status is collected last (exit_code()). */
	return (!e->root.ended && target_alive(&e->root)) || e->procs.n;
}

static void forked(struct engine *e, struct proc *parent, struct proc *c, uint64_t ts)
{
	/* It waits for us (qemu:jit_fork_wait) until we ask. */
	if (attach_proc(e, c, parent->bin)) {
		procs_end(e, c, "gone", true);
		return;
	}
	procs_ask(c, true);
	pr_dbg("pid %d: forked by %d, attached %.1f ms after the fork", c->t->pid, parent->t->pid,
	       (mono_ns() - ts) / 1e6);
}

/* PID, in the tree, runs another program: a QEMU of ours is followed. */
static void execd(struct engine *e, pid_t pid, struct exec_before *before, uint64_t ts)
{
	const struct binary *bin = scope_binary(e, NULL, pid, NULL);
	char exe[PATH_MAX];
	struct proc *p;

	/* A program that is gone by now (a short one, or we are behind):
	 * the emulator execve ran, by the name it had. */
	if (!bin && before->interp && !scope_exe_of(pid, exe, sizeof(exe)))
		bin = scope_binary(e, before->interp, 0, NULL);
	if (!bin) {
		/* Not a QEMU of ours: it stays in the tree, with no link. */
		scope_drop_links(e, &before->links);
		return;
	}
	p = procs_new(e, pid, NULL, false);
	p->after_exec = true;
	if (before->args && p->cmdline && !strcmp(p->cmdline, p->t->exe)) {
		/* (Gone: what procs_new() read was its exe's path.) */
		free(p->cmdline);
		p->cmdline = xstrdup(before->args);
	}
	p->links = before->links;
	p->attached_ns = before->attached_ns;
	p->follows_ns = before->follows_ns;
	procs_begin(e, p, NULL, 0, ts);
	if (bin != before->bin) {
		/* Our links into it are for another binary: it runs already. */
		if (attach_proc(e, p, bin)) {
			procs_end(e, p, "gone", true);
			return;
		}
		procs_ask(p, false);
		pr_dbg("pid %d: exec'd %s, attached %.1f ms after the exec", pid, bin->path,
		       (mono_ns() - ts) / 1e6);
		return;
	}
	p->bin = bin;
	/*
	 * Our links held through the exec, so it reports from its start; but
	 * not if it exec'd before we had attached to it (a child that did not
	 * wait for us), and one that inherited QEMU_JIT_ATTACH_WAIT with its
	 * own pid waits for a request.
	 */
	if (ts < before->attached_ns || (pid == e->root.pid && e->root.launched) || bin->stock)
		procs_ask(p, false);
}

/* CHILD, forked by P, which runs P's QEMU still, and which we never saw:
 * raise its request counter as we raise a forked child's. */
static void release(struct engine *e, const struct proc *p, pid_t child)
{
	struct target t = {.pid = child};
	struct handshake hs;
	char path[64];
	struct stat st;

	if (procs_find(e, child))
		return;
	snprintf(path, sizeof(path), "/proc/%d/exe", child);
	if (stat(path, &st) || st.st_dev != p->bin->dev || st.st_ino != p->bin->ino)
		return;
	if (!handshake_init(&hs, &t) && !handshake_start(&hs, 2))
		pr_dbg("pid %d: forked by %d as we detached, let go", child, p->t->pid);
}

/* Each child of process P, by its threads' lists, to release(). */
static void release_children(struct engine *e, const struct proc *p)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", p->t->pid);
	if (!(dir = opendir(path)))
		return;
	while ((d = readdir(dir))) {
		char *file;
		FILE *f;
		int child;

		if (d->d_name[0] == '.')
			continue;
		file = xasprintf("%s/%s/children", path, d->d_name);
		f = fopen(file, "r");
		free(file);
		if (!f)
			continue;
		while (fscanf(f, "%d", &child) == 1)
			release(e, p, child);
		fclose(f);
	}
	closedir(dir);
}

/* Do P's children wait for us as it forks? */
static bool children_wait(const struct proc *p)
{
	return p->follows_ns && p->bin && p->bin->fork_wait;
}

/*
 * We stopped while the tree runs on.  A QEMU that was forking as our
 * probes went decided, at the start of its fork, that the child waits for
 * us (qemu:jit_fork_wait), and the child's fork came after the last one
 * we saw: it would wait for our request until its wait runs out (2 s),
 * and its parent, if it waits for it, with it.  So, once any such fork is
 * done, such children are let go, as our request would have done.
 */
static void detached(struct engine *e, uint64_t detached_ns)
{
	uint64_t now = mono_ns();
	bool any = false;

	pidtab_for_each(&e->procs, n) any |= children_wait(proc_of(n));
	if (!any)
		return;
	if (now < detached_ns + FORK_SPAN_NS)
		usleep((detached_ns + FORK_SPAN_NS - now) / 1000);
	pidtab_for_each(&e->procs, n) if (children_wait(proc_of(n)))
		release_children(e, proc_of(n));
}

/* Until QEMU exits or the ring has records. */
static void wait(struct engine *e, int fd, int timeout_ms)
{
	target_wait(&e->root, fd, timeout_ms);
}

const struct scope scope_tree = {
	.name = "tree",
	.follows_forks = true,
	/* A tree's few vCPU threads. */
	.vcpus = 1024,
	.find = find,
	.walkers = walkers,
	.attach = attach,
	.wait = wait,
	.check = check,
	.detached = detached,
	.following = following,
	.forked = forked,
	.execd = execd,
};
