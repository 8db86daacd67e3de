// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --stacks: each QEMU's guest threads (-p's, or with -a every one running),
 * once its handshake has come (the watcher then reports every vCPU's
 * registers, blocked ones too), then the run ends.  profiler/stacks.c reads and writes them.
 */
#include "engine/engine.h"
#include "engine/output.h"
#include "profiler/sampler.h"
#include "stacks/stacks.h"
#include "util/util.h"

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

/*
 * A running thread's registers in env are those of its last exit from
 * translated code: it is sampled instead, once the code it runs is
 * reported again after the handshake, for up to SAMPLE_NS; samples are
 * named SAMPLE_AGE_NS after they are taken, when their TB reports have
 * come (the watcher hands batches over within two polls).
 */
#define SAMPLE_NS     (600ull * 1000 * 1000)
#define SAMPLE_AGE_NS (250ull * 1000 * 1000)

static void seen(void *ctx, const struct qj_sample *r, enum sample_where where, const char *work,
		 const uint64_t *pcs, size_t n, bool known)
{
	struct proc *p = ctx;
	int i;

	if (!known || r->flags & QJ_SAMPLE_OFFCPU || r->hdr.ts < p->named_ns)
		return;
	for (i = 0; i < p->nsampled && p->sampled[i].tid != (pid_t)r->hdr.tid; i++)
		;
	if (i == p->nsampled)
		p->sampled = xrealloc(p->sampled, ++p->nsampled * sizeof(*p->sampled));
	stacks_sample(&p->sampled[i], r->hdr.tid, where, work, pcs, n);
}

static const struct thread_sample *sample_of(const struct proc *p, pid_t tid)
{
	for (int i = 0; i < p->nsampled; i++)
		if (p->sampled[i].tid == tid)
			return &p->sampled[i];
	return NULL;
}

struct running {
	const struct proc *p;
	bool all; /* sampled, so far */
};

/* A running vCPU thread not sampled yet: stop looking. */
static bool check_sampled(void *ctx, struct thread_stack *t, const struct qj_vcpu *v)
{
	struct running *r = ctx;

	(void)v;
	r->all = t->state != 'R' || sample_of(r->p, t->tid);
	return r->all;
}

/* Has every vCPU thread of P that runs a sample? */
static bool running_sampled(struct engine *e, struct proc *p)
{
	struct running r = {p, true};

	stacks_each_vcpu(e->prof.sm, p->t->pid, check_sampled, &r);
	return r.all;
}

struct dumped {
	struct proc *p;
	struct qj_proc mem;	/* a VM's RAM */
	struct thread_stack *v; /* the threads read */
	int n, cap;
};

/* vCPU thread T of D's process: its guest side, in D's list. */
static bool read_thread(void *ctx, struct thread_stack *t, const struct qj_vcpu *vc)
{
	struct dumped *d = ctx;
	struct guest *g = &d->p->s.jm.guest;

	stacks_read_guest(d->p->t->pid, g, vc, &d->mem, t);
	if (t->state == 'R')
		stacks_running(g, sample_of(d->p, t->tid), t);
	if (d->n == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 16;
		d->v = xrealloc(d->v, d->cap * sizeof(*d->v));
	}
	d->v[d->n++] = *t;
	return true;
}

/* P's threads, now. */
static void dump(struct engine *e, struct proc *p)
{
	pid_t pid = p->t->pid;
	struct dumped d = {.p = p};
	char *command, *qemu_cmdline;
	int others;

	sampler_proc(e->prof.sm, pid, &d.mem);
	others = stacks_each_vcpu(e->prof.sm, pid, read_thread, &d);
	stacks_waits(pid, p->s.jm.guest.base, d.v, d.n);
	qemu_cmdline = p->cmdline ? NULL : target_cmdline(p->t);
	command = proc_command(p->cmdline     ? p->cmdline
			       : qemu_cmdline ? qemu_cmdline
					      : p->t->exe,
			       proc_preserves_argv0(pid), p->t->system);
	free(qemu_cmdline);
	if (json_file(e->o->stacks_file))
		stacks_write_json(e->stacks_out, !e->stacks_dumped, pid, command, d.v, d.n, others);
	else
		stacks_write_text(e->stacks_out, pid, command, d.v, d.n, others);
	fflush(e->stacks_out);
	e->stacks_dumped++;
	free(command);
	free(d.v);
}

static void tick(struct engine *e, uint64_t now, bool reap)
{
	bool all = true;

	(void)now, (void)reap;
	pidtab_for_each(&e->procs, n)
	{
		struct proc *p = proc_of(n);
		uint64_t t = mono_ns();

		if (p->stacked || p->given_up)
			continue;
		if (!session_named(&p->s, false)) {
			all = false;
			continue;
		}
		if (!p->named_ns && p->s.smp) {
			p->named_ns = t;
			p->s.smp->seen = seen;
			p->s.smp->seen_ctx = p;
		}
		if (p->s.smp) {
			samples_resolve(p->s.smp, &p->s.jm, t, SAMPLE_AGE_NS);
			if (t < p->named_ns + SAMPLE_NS && !running_sampled(e, p)) {
				all = false;
				continue;
			}
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

static void proc_free(struct engine *e, struct proc *p)
{
	(void)e;
	if (p->s.smp)
		p->s.smp->seen = NULL;
	free(p->sampled);
	p->sampled = NULL;
	p->nsampled = 0;
}

const struct output output_stacks = {
	.name = "stacks",
	.wanted = wanted,
	.begin = begin,
	.tick = tick,
	.end = end,
	.proc_free = proc_free,
};
