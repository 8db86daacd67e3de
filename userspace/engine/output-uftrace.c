// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --uftrace: a tree's calls go into one uftrace data directory, each
 * process a task of it, forks and execs as uftrace records them; with -a,
 * each process gets a directory of its own in DIR (DIR/PID, and
 * DIR/PID.1 ... after an exec of that pid).
 */
#include "engine/engine.h"
#include "engine/output.h"
#include "util/util.h"
#include "writers/uftrace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool wanted(const struct engine_opts *o)
{
	return o->uftrace;
}

static int begin(struct engine *e)
{
	const char *dir = e->o->uftrace;

	if (!e->o->all) {
		e->uft = uftrace_open(dir, &e->o->ufilter);
		return e->uft ? 0 : -EINVAL;
	}
	/* -a: one directory per process in DIR. */
	if (mkdir(dir, 0755) && errno != EEXIST) {
		pr_err("cannot create %s: %s", dir, strerror(errno));
		return -errno;
	}
	return 0;
}

/* -a: the data directory of PID, a new one after an exec of that pid. */
static struct uftrace *open_own(const char *dir, const struct callfilter *f, pid_t pid)
{
	struct uftrace *u;
	char *path = xasprintf("%s/%d", dir, pid);

	for (int i = 1; !access(path, F_OK); i++) {
		free(path);
		path = xasprintf("%s/%d.%d", dir, pid, i);
	}
	u = uftrace_open(path, f);
	free(path);
	return u;
}

static void proc_new(struct engine *e, struct proc *p)
{
	if (e->uft) {
		session_set_uftrace(&p->s, e->uft);
		return;
	}
	session_set_uftrace(&p->s, open_own(e->o->uftrace, &e->o->ufilter, p->t->pid));
	p->own_uft = true;
}

static void proc_begin(struct engine *e, struct proc *p, const struct proc *parent, uint32_t tid,
		       uint64_t ts)
{
	if (parent && e->uft)
		uftrace_fork(e->uft, parent->t->pid, tid, p->t->pid, ts);
	else if (p->s.uft)
		uftrace_begin(p->s.uft, p->t->pid, ts);
}

static void proc_end(struct engine *e, struct proc_end *pe)
{
	struct proc *p = pe->p;
	struct session *s = &p->s;
	char *dir;

	if (!s->uft)
		return;
	uftrace_end(s->uft, p->t->pid, &s->jm.guest, pe->exe);
	if (p->own_uft) {
		dir = xstrdup(uftrace_dir(s->uft));
		if (pe->named &&
		    !uftrace_close(s->uft, pe->exe, p->cmdline ? p->cmdline : "", &s->bytes)) {
			e->uftraces++;
			if (pe->k)
				retention_add(&e->ret, pe->k, NULL, dir, true);
		} else if (!pe->named) {
			uftrace_discard(s->uft);
		}
		free(dir);
	}
	s->uft = NULL;
}

/* Call events lost at the end, after the last record of their thread. */
static bool mark_lost(void *ctx, uint32_t tid, uint64_t lost)
{
	return uftrace_lost_at_end(ctx, tid, lost);
}

/* A tree's data directory, complete (or dropped with the rest). */
static void end(struct engine *e)
{
	long long records;
	int err;

	if (!e->uft)
		return;
	if (e->nameless) {
		uftrace_discard(e->uft);
		e->uft = NULL;
		return;
	}
	records = uftrace_records(e->uft);
	/* A VM's tasks are vCPUs, not threads: its losses are marked where
	 * they show, and counted in the summary. */
	if (!e->root.system)
		probes_each_calls_lost(&e->probes, mark_lost, e->uft);
	err = uftrace_close(e->uft, e->root_exe ? e->root_exe : e->root.exe,
			    e->root_cmdline ? e->root_cmdline : e->root.exe, &e->bytes);
	e->uft = NULL;
	if (err) {
		pr_err("writing %s: %s", e->o->uftrace, strerror(-err));
		e->err = e->err ? e->err : err;
		return;
	}
	e->uftraces++;
	e->uft_records = records;
}

static void proc_free(struct engine *e, struct proc *p)
{
	(void)e;
	if (p->own_uft && p->s.uft) {
		uftrace_discard(p->s.uft);
		p->s.uft = NULL;
	}
}

static void free_all(struct engine *e)
{
	if (e->uft)
		uftrace_discard(e->uft);
	e->uft = NULL;
}

const struct output output_uftrace = {
	.name = "uftrace",
	.wanted = wanted,
	.begin = begin,
	.proc_new = proc_new,
	.proc_begin = proc_begin,
	.proc_end = proc_end,
	.end = end,
	.proc_free = proc_free,
	.free = free_all,
};
