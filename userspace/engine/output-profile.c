// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --profile (and what samples for --top and --push): each process's
 * samples are named as its code is known, its last ones when its program
 * ends; the profile files are written at each --interval and at the end.
 * The sampler itself is opened with the BPF programs (engine.c, load()).
 */
#include "engine/engine.h"
#include "engine/output.h"
#include "stacks/waits.h"
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

/* --off-cpu: P's waits under way, counted up to UNTIL. */
static void take_waits(struct engine *e, struct proc *p, uint64_t until)
{
	if (e->o->prof.off_cpu && p->s.smp)
		waits_take_open(&e->prof, p->s.smp, &p->s.jm, p->t->pid, e->prof.started_ns, until);
}

static void proc_end(struct engine *e, struct proc_end *pe)
{
	struct session *s = &pe->p->s;

	/* We stop following it: its waits count up to now. */
	if (pe->running)
		take_waits(e, pe->p, mono_ns());
	if (s->smp) {
		profiler_end(&e->prof, s->smp, &s->jm);
		s->smp = NULL;
	}
}

static void tick(struct engine *e, uint64_t now, bool reap)
{
	(void)now, (void)reap;
	/* --interval: an interval ends, its waits under way with it. */
	if (e->profiling && e->o->prof.off_cpu && e->o->prof.interval &&
	    e->prof.waits_until < e->prof.split_ns && mono_ns() >= e->prof.split_ns) {
		pidtab_for_each(&e->procs, n) take_waits(e, proc_of(n), e->prof.split_ns);
		e->prof.waits_until = e->prof.split_ns;
	}
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
