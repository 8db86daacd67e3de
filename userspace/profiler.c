// SPDX-License-Identifier: GPL-2.0-or-later
#include "profiler.h"
#include "unwind.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

/* A sample's TB report has arrived by then (QEMU hands batches over
 * within two polls of its watcher, 200 ms). */
#define RESOLVE_AGE_NS (1000ull * 1000 * 1000)

int profiler_open(struct profiler *pr, const struct profiler_opts *o, struct session *s,
		  int ringbuf_fd)
{
	memset(pr, 0, sizeof(*pr));
	pr->opts = *o;
	profile_init(&pr->prof, o->freq);
	samples_init(&pr->samples, &pr->prof, s->target->pid, o->stack_bytes > 0);
	s->smp = &pr->samples;
	pr->sm = sampler_open(ringbuf_fd, o->freq, o->stack_bytes);
	return pr->sm ? 0 : -EINVAL;
}

int profiler_attach(struct profiler *pr, struct session *s)
{
	return sampler_attach_probe(pr->sm, s->target);
}

int profiler_tick(struct profiler *pr, struct session *s, uint64_t now)
{
	int err;

	/* Guest memory is at guest_base: sample once QEMU said where. */
	if (!pr->started && s->guest.base_known) {
		pr->started = true;
		profile_see_process(&pr->prof, s->target->pid);
		err = sampler_add_process(pr->sm, s->target->pid, s->guest.base);
		if (!err)
			err = sampler_start(pr->sm);
		if (err)
			return err;
		pr_dbg("sampling pid %d at %u Hz", s->target->pid, pr->opts.freq);
	}
	samples_resolve(s, now, RESOLVE_AGE_NS);
	return 0;
}

int profiler_finish(struct profiler *pr, struct session *s, bool write, uint64_t *bytes)
{
	int err = 0;

	samples_resolve(s, 0, 0);
	unwind_free();
	if (pr->samples.unknown_jit)
		pr_dbg("%" PRIu64 " samples in translated code no TB report covered",
		       pr->samples.unknown_jit);
	for (int i = 0; write && i < pr->opts.nfiles; i++) {
		/* Files of the user who profiles, unlike QEMU's perf map. */
		int e = profile_write(&pr->prof, pr->opts.files[i], (uid_t)-1, (gid_t)-1, bytes);

		err = err ? err : e;
	}
	return err;
}

uint64_t profiler_lost(const struct profiler *pr)
{
	return pr->sm ? sampler_lost(pr->sm) : 0;
}

void profiler_free(struct profiler *pr)
{
	sampler_free(pr->sm);
	samples_free(&pr->samples);
	profile_free(&pr->prof);
	memset(pr, 0, sizeof(*pr));
}
