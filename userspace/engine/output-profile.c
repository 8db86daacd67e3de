// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --profile (and what samples for --top and --push): each process's
 * samples are named as its code is known, its last ones when its program
 * ends; the profile files are written at each --interval and at the end.
 * The sampler itself is opened with the BPF programs (engine.c, load()).
 */
#include "engine/engine.h"
#include "engine/output.h"
#include "util/procfile.h"
#include "util/util.h"

#include <errno.h>

static bool wanted(const struct engine_opts *o)
{
	return o->profile;
}

static void proc_new(struct engine *e, struct proc *p)
{
	pid_t ppid;
	uint64_t cpu;

	if (!e->profiling)
		return;
	p->s.smp = profiler_follow(&e->prof, p->t->pid, p->s.split);
	/* Under its parent's stacks, if we follow it (a fork, an exec, a
	 * QEMU a QEMU started through binfmt_misc). */
	if (e->o->prof.chain && proc_parent_cpu(p->t->pid, &ppid, &cpu))
		profile_set_parent(&e->prof.prof, p->t->pid, ppid);
}

static void proc_end(struct engine *e, struct proc_end *pe)
{
	struct session *s = &pe->p->s;

	if (s->smp) {
		profiler_end(&e->prof, s->smp, &s->jm);
		s->smp = NULL;
	}
}

static void tick(struct engine *e, uint64_t now, bool reap)
{
	(void)now, (void)reap;
	if (e->profiling && profiler_interval(&e->prof, e->heard_ns, &e->bytes)) {
		pr_warn("could not write an interval's profile");
		e->err = e->err ? e->err : -EIO;
	}
}

static void end(struct engine *e)
{
	int err;

	if (!e->profiling)
		return;
	err = profiler_finish(&e->prof, !e->nameless, &e->bytes);
	e->err = e->err ? e->err : err;
}

static void free_all(struct engine *e)
{
	if (e->profiling)
		profiler_free(&e->prof);
	e->profiling = false;
}

const struct output output_profile = {
	.name = "profile",
	.wanted = wanted,
	.proc_new = proc_new,
	.proc_end = proc_end,
	.tick = tick,
	.end = end,
	.free = free_all,
};
