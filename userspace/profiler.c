// SPDX-License-Identifier: GPL-2.0-or-later
#include "profiler.h"
#include "unwind.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A sample's TB report has arrived by then (QEMU hands batches over
 * within two polls of its watcher, 200 ms). */
#define RESOLVE_AGE_NS (1000ull * 1000 * 1000)

int profiler_open(struct profiler *pr, const struct profiler_opts *o, int ringbuf_fd, int procs_fd)
{
	memset(pr, 0, sizeof(*pr));
	pr->opts = *o;
	profile_init(&pr->prof, o->freq);
	if (o->interval) {
		profile_init(&pr->next, o->freq);
		pr->split_ns = mono_ns() + o->interval * 1000000000ull;
		pr->interval_start = time(NULL);
		pr->prof.split_ns = pr->split_ns;
		pr->prof.after = &pr->next;
	}
	pr->sm = sampler_open(ringbuf_fd, procs_fd, o->freq, o->stack_bytes);
	return pr->sm ? 0 : -EINVAL;
}

void profiler_add_session(struct profiler *pr, struct session *s)
{
	s->smp = xcalloc(1, sizeof(*s->smp));
	samples_init(s->smp, &pr->prof, s->target->pid, pr->opts.stack_bytes > 0);
	/* Its name, while /proc says it. */
	profile_see_process(&pr->prof, s->target->pid);
}

void profiler_end_session(struct profiler *pr, struct session *s)
{
	if (!s->smp)
		return;
	samples_resolve(s, 0, 0);
	pr->unknown_jit += s->smp->unknown_jit;
	samples_free(s->smp);
	free(s->smp);
	s->smp = NULL;
}

int profiler_attach(struct profiler *pr, pid_t pid, const char *binary)
{
	return sampler_attach_probe(pr->sm, pid, binary);
}

int profiler_start(struct profiler *pr)
{
	int err = sampler_start(pr->sm);

	pr->started = !err;
	return err;
}

int profiler_tick(struct profiler *pr, struct session *s, uint64_t now)
{
	/*
	 * Guest memory is at guest_base: sample once QEMU said where.  A VM's
	 * RAM enters the BPF map as QEMU reports it (jit_guest_ram): sample
	 * once the code buffer is known.
	 */
	if (!pr->started && (s->target->system ? s->layout_known : s->guest.base_known)) {
		int err = s->target->system
				  ? 0
				  : sampler_add_process(pr->sm, s->target->pid, s->guest.base);

		if (!err)
			err = profiler_start(pr);
		if (err)
			return err;
		pr_dbg("sampling pid %d at %u Hz", s->target->pid, pr->opts.freq);
	}
	profiler_resolve(s, now);
	return 0;
}

void profiler_resolve(struct session *s, uint64_t now)
{
	if (s->smp)
		samples_resolve(s, now, RESOLVE_AGE_NS);
}

/* FILE with STAMP before its suffix: p.pb.gz -> p.STAMP.pb.gz. */
static char *stamped(const char *file, const char *stamp)
{
	const char *base = strrchr(file, '/'), *dot;
	size_t len = strlen(file);

	base = base ? base + 1 : file;
	if (len > 6 && !strcmp(file + len - 6, ".pb.gz"))
		dot = file + len - 6;
	else if ((dot = strrchr(base, '.')) == base)
		dot = NULL;
	if (!dot)
		return xasprintf("%s.%s", file, stamp);
	return xasprintf("%.*s.%s%s", (int)(dot - file), file, stamp, dot);
}

/* Write PROF, the profile of the interval from START (wall clock). */
static int write_interval(struct profiler *pr, const struct profile *prof, time_t start,
			  uint64_t *bytes)
{
	char stamp[32];
	struct tm tm;
	int err = 0;

	gmtime_r(&start, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	for (int i = 0; i < pr->opts.nfiles; i++) {
		char *path = stamped(pr->opts.files[i], stamp);
		int e = profile_write(prof, path, (uid_t)-1, (gid_t)-1, bytes);

		if (!e)
			pr_dbg("interval %u: %" PRIu64 " samples in %s", pr->intervals + 1,
			       prof->samples, path);
		err = err ? err : e;
		free(path);
	}
	pr->written += prof->samples;
	pr->intervals++;
	return err;
}

int profiler_interval(struct profiler *pr, uint64_t now, uint64_t *bytes)
{
	int err;

	if (!pr->opts.interval || now < pr->split_ns + RESOLVE_AGE_NS)
		return 0;
	err = write_interval(pr, &pr->prof, pr->interval_start, bytes);
	profile_take(&pr->prof, &pr->next);
	pr->interval_start += pr->opts.interval;
	pr->split_ns += pr->opts.interval * 1000000000ull;
	pr->prof.split_ns = pr->split_ns;
	return err;
}

int profiler_finish(struct profiler *pr, bool write, uint64_t *bytes)
{
	int err = 0;

	unwind_free();
	if (pr->unknown_jit)
		pr_dbg("%" PRIu64 " samples in translated code no TB report covered",
		       pr->unknown_jit);
	if (write && pr->opts.interval) {
		/* The interval under way, and what came after its end. */
		err = write_interval(pr, &pr->prof, pr->interval_start, bytes);
		if (pr->next.samples) {
			int e = write_interval(pr, &pr->next,
					       pr->interval_start + pr->opts.interval, bytes);

			err = err ? err : e;
		}
		profile_reset(&pr->prof);
		profile_reset(&pr->next);
		return err;
	}
	for (int i = 0; write && i < pr->opts.nfiles; i++) {
		/* Files of the user who profiles, unlike QEMU's perf map. */
		int e = profile_write(&pr->prof, pr->opts.files[i], (uid_t)-1, (gid_t)-1, bytes);

		err = err ? err : e;
	}
	return err;
}

uint64_t profiler_samples(const struct profiler *pr)
{
	return pr->written + pr->prof.samples + pr->next.samples;
}

uint64_t profiler_lost(const struct profiler *pr)
{
	return pr->sm ? sampler_lost(pr->sm) : 0;
}

void profiler_free(struct profiler *pr)
{
	sampler_free(pr->sm);
	profile_free(&pr->prof);
	if (pr->opts.interval)
		profile_free(&pr->next);
	memset(pr, 0, sizeof(*pr));
}
