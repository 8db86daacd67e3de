// SPDX-License-Identifier: GPL-2.0-or-later
#include "stacks/waits.h"
#include "profiler/profiler.h"
#include "stacks/stacks.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>

/* Thread TID of PID, blocked: one sample of its wait [FROM, UNTIL). */
static bool take(struct profiler *pr, struct samples *ss, struct jitmap *jm, pid_t pid,
		 const struct thread_stack *t, const struct qj_vcpu *v, uint64_t from,
		 uint64_t until, uint32_t state)
{
	uint64_t period = sampler_off_period(pr->sm);
	uint64_t ticks = until / period - from / period;
	struct qj_sample *r;
	bool ok;

	if (!ticks)
		return false;
	r = xcalloc(1, sizeof(*r) + QJ_OFF_STACK);
	r->hdr.type = QJ_EV_SAMPLE;
	r->hdr.pid = pid;
	r->hdr.tid = t->tid;
	r->hdr.ts = until - 1;
	r->flags = QJ_SAMPLE_OFFCPU;
	r->state = state;
	r->period = ticks * period;
	r->size = 8;
	r->cpu_index = -1;
	if (t->host_pc) {
		r->ustack[0] = t->host_pc;
		r->nuser = 1;
	}
	ok = stacks_guest_sample(pid, jm->guest.base, v, r, QJ_OFF_STACK);
	if (ok)
		samples_add_named(ss, jm, r, sizeof(*r) + r->stack_len, t->kstack, t->nkstack);
	free(r);
	return ok;
}

struct open_waits {
	struct profiler *pr;
	struct samples *ss;
	struct jitmap *jm;
	pid_t pid;
	uint64_t since, until;
	int n;
};

/* Thread T, a vCPU's: its wait so far, if it is blocked. */
static bool take_open(void *ctx, struct thread_stack *t, const struct qj_vcpu *v)
{
	struct open_waits *w = ctx;
	struct qj_off o = {0};
	uint32_t state;
	uint64_t from;
	bool kept;

	if (t->state != 'S' && t->state != 'D')
		return true;
	/* Seen leaving its CPU: since then; not seen: since we came; and
	 * from where we took it last.  (BPF's map is only read: the thread
	 * may come back while we take its wait, and its own sample of the
	 * wait then leaves out what we took, by when the wait began.) */
	kept = sampler_wait(w->pr->sm, t->tid, &o);
	if (kept && !o.ts)
		return true; /* back on a CPU meanwhile */
	from = kept ? o.ts : w->since;
	if (samples_wait_taken_until(w->ss, t->tid) > from)
		from = samples_wait_taken_until(w->ss, t->tid);
	if (from >= w->until)
		return true;
	state = t->state == 'D' ? QJ_OFF_UNINTERRUPTIBLE : QJ_OFF_SLEEPING;
	if (!kept)
		sampler_wait_since(w->pr->sm, t->tid, from, state);
	if (take(w->pr, w->ss, w->jm, w->pid, t, v, from, w->until, state)) {
		samples_wait_taken(w->ss, t->tid, w->until);
		w->n++;
	}
	return true;
}

int waits_take_open(struct profiler *pr, struct samples *ss, struct jitmap *jm, pid_t pid,
		    uint64_t since, uint64_t until)
{
	struct open_waits w = {pr, ss, jm, pid, since, until, 0};

	if (sampler_off_period(pr->sm))
		stacks_each_vcpu(pr->sm, pid, take_open, &w);
	return w.n;
}
