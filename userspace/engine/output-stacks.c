// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --stacks: each QEMU's guest threads (-p's, or with -a every one running),
 * once its handshake has come (the watcher then reports every vCPU's
 * registers, blocked ones too), then the run ends.  profiler/stacks.c reads and writes them.
 */
#include "engine/engine.h"
#include "engine/output.h"
#include "profiler/sampler.h"
#include "profiler/stacks.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool wanted(const struct engine_opts *o)
{
	return o->stacks;
}

/* FILE ends in .json: JSON, as --report's FILEs. */
static bool json_file(const char *path)
{
	return path && before_suffix(path, ".json");
}

static int begin(struct engine *e)
{
	const char *path = e->o->stacks_file;

	e->stacks_out = stdout;
	if (path && strcmp(path, "-")) {
		e->stacks_out = fopen(path, "we");
		if (!e->stacks_out) {
			pr_err("cannot write %s: %s", path, strerror(errno));
			return -errno;
		}
	}
	if (json_file(path))
		fputs("{\"processes\": [", e->stacks_out);
	return 0;
}

/* P's threads, now. */
static void dump(struct engine *e, struct proc *p)
{
	pid_t pid = p->t->pid;
	struct thread_stack *v = NULL;
	struct qj_proc mem = {0};
	int n = 0, cap = 0, others = 0;
	char path[64], *command, *qemu_cmdline;
	struct dirent *d;
	DIR *dir;

	sampler_proc(e->prof.sm, pid, &mem);
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	while (dir && (d = readdir(dir))) {
		pid_t tid = atoi(d->d_name);
		struct thread_stack t = {0};
		struct qj_vcpu vc;

		if (tid <= 0)
			continue;
		stacks_read_host(pid, tid, &t);
		if (!sampler_vcpu_thread(e->prof.sm, pid, t.qemu_tid, &vc)) {
			others++;
			continue;
		}
		stacks_read_guest(pid, &p->s.jm.guest, &vc, &mem, &t);
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			v = xrealloc(v, cap * sizeof(*v));
		}
		v[n++] = t;
	}
	if (dir)
		closedir(dir);
	stacks_waits(pid, p->s.jm.guest.base, v, n);
	qemu_cmdline = p->cmdline ? NULL : target_cmdline(p->t);
	command = proc_command(p->cmdline     ? p->cmdline
			       : qemu_cmdline ? qemu_cmdline
					      : p->t->exe,
			       p->s.jm.exe_path, proc_preserves_argv0(pid));
	free(qemu_cmdline);
	if (json_file(e->o->stacks_file))
		stacks_write_json(e->stacks_out, !e->stacks_dumped, pid, command, v, n, others);
	else
		stacks_write_text(e->stacks_out, pid, command, v, n, others);
	fflush(e->stacks_out);
	e->stacks_dumped++;
	free(command);
	free(v);
}

static void tick(struct engine *e, uint64_t now, bool reap)
{
	bool all = true;

	(void)now, (void)reap;
	pidtab_for_each(&e->procs, n)
	{
		struct proc *p = proc_of(n);

		if (p->stacked || p->given_up)
			continue;
		if (!session_named(&p->s, false)) {
			all = false;
			continue;
		}
		dump(e, p);
		p->stacked = true;
	}
	/* -a: the QEMUs running when we attached, each once it answers. */
	if (all && (e->stacks_dumped || (e->o->all && !e->procs.n)))
		e->done = true;
}

static void end(struct engine *e)
{
	if (!e->stacks_out)
		return;
	if (json_file(e->o->stacks_file))
		fputs("\n]}\n", e->stacks_out);
	if (e->stacks_out != stdout && fclose(e->stacks_out)) {
		pr_err("cannot write %s: %s", e->o->stacks_file, strerror(errno));
		e->err = e->err ? e->err : -EIO;
	} else if (e->stacks_out == stdout) {
		fflush(stdout);
	}
	e->stacks_out = NULL;
}

const struct output output_stacks = {
	.name = "stacks",
	.wanted = wanted,
	.begin = begin,
	.tick = tick,
	.end = end,
};
