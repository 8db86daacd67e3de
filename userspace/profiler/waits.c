// SPDX-License-Identifier: GPL-2.0-or-later
#include "profiler/waits.h"
#include "profiler/profiler.h"
#include "profiler/stacks.h"
#include "util/util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

/* A wait's stack: as much as the BPF side copies for one. */
#define WAIT_STACK_BYTES 8192

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
	r = xcalloc(1, sizeof(*r) + WAIT_STACK_BYTES);
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
	ok = stacks_guest_sample(pid, jm->guest.base, v, r, WAIT_STACK_BYTES);
	if (ok)
		samples_add_named(ss, jm, r, sizeof(*r) + r->stack_len, t->kstack, t->nkstack);
	free(r);
	return ok;
}

int waits_take_open(struct profiler *pr, struct samples *ss, struct jitmap *jm, pid_t pid,
		    uint64_t since, uint64_t until)
{
	char path[64];
	struct dirent *d;
	int n = 0;
	DIR *dir;

	if (!sampler_off_period(pr->sm))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	while (dir && (d = readdir(dir))) {
		struct thread_stack t = {0};
		struct qj_off o = {0};
		struct qj_vcpu v;
		uint32_t state;
		uint64_t from;
		bool kept;

		if (atoi(d->d_name) <= 0)
			continue;
		stacks_read_host(pid, atoi(d->d_name), &t);
		if (t.state != 'S' && t.state != 'D')
			continue;
		if (!sampler_vcpu_thread(pr->sm, pid, t.qemu_tid, &v))
			continue;
		/* Seen leaving its CPU: since then; not seen: since we came. */
		kept = sampler_wait(pr->sm, t.tid, &o);
		if (kept && !o.ts)
			continue; /* back on a CPU meanwhile */
		from = kept ? o.ts : since;
		if (from >= until)
			continue;
		state = t.state == 'D' ? QJ_OFF_UNINTERRUPTIBLE : QJ_OFF_SLEEPING;
		if (take(pr, ss, jm, pid, &t, &v, from, until, state)) {
			sampler_wait_from(pr->sm, t.tid, until, state);
			n++;
		}
	}
	if (dir)
		closedir(dir);
	return n;
}
