// SPDX-License-Identifier: GPL-2.0-or-later
#include "profiler/profiler.h"
#include "profiler/unwind.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A sample's TB report has arrived by then (QEMU hands batches over
 * within two polls of its watcher, 200 ms). */
#define RESOLVE_AGE_NS (1000ull * 1000 * 1000)

int profiler_open(struct profiler *pr, const struct profiler_opts *o, int ringbuf_fd, int procs_fd,
		  const struct qj_pidns *pidns, unsigned int walkers, unsigned int threads)
{
	memset(pr, 0, sizeof(*pr));
	pr->opts = *o;
	profile_init(&pr->prof, o->freq);
	pr->prof.wall = o->off_cpu;
	if (o->interval) {
		profile_init(&pr->next, o->freq);
		pr->next.wall = o->off_cpu;
		pr->split_ns = mono_ns() + o->interval * 1000000000ull;
		pr->interval_start = time(NULL);
		pr->prof.split_ns = pr->split_ns;
		pr->prof.after = &pr->next;
	}
	pr->sm = sampler_open(ringbuf_fd, procs_fd, pidns, o->freq, o->off_cpu, o->stack_bytes,
			      walkers, threads);
	return pr->sm ? 0 : -EINVAL;
}

struct samples *profiler_follow(struct profiler *pr, pid_t pid, struct cpu_split *split)
{
	struct samples *ss = xcalloc(1, sizeof(*ss));

	samples_init(ss, &pr->prof, pid, pr->opts.stack_bytes > 0);
	ss->off_period = pr->sm ? sampler_off_period(pr->sm) : 0;
	ss->split = split;
	ss->split_only = !pr->opts.stacks;
	/* Its name, while /proc says it. */
	profile_see_process(&pr->prof, pid);
	return ss;
}

void profiler_end(struct profiler *pr, struct samples *ss, struct jitmap *jm)
{
	samples_resolve(ss, jm, 0, 0);
	profile_forget_process(&pr->prof, ss->pid);
	pr->unknown_jit += ss->unknown_jit;
	samples_free(ss);
	free(ss);
}

struct bpf_link *profiler_attach(struct profiler *pr, pid_t pid, const char *binary)
{
	return sampler_attach_probe(pr->sm, pid, binary);
}

struct bpf_link *profiler_attach_threads(struct profiler *pr, pid_t pid, const char *binary)
{
	return sampler_attach_threads(pr->sm, pid, binary);
}

int profiler_start(struct profiler *pr)
{
	pr->started_ns = pr->waits_until = mono_ns();
	return sampler_start(pr->sm);
}

void profiler_resolve(struct samples *ss, struct jitmap *jm, uint64_t now)
{
	samples_resolve(ss, jm, now, RESOLVE_AGE_NS);
}

/* Write PROF, the profile of the interval from START (wall clock). */
static int write_interval(struct profiler *pr, const struct profile *prof, time_t start,
			  uint64_t *bytes)
{
	int err = 0;

	for (int i = 0; i < pr->opts.nfiles; i++) {
		char *path = keep_interval_name(pr->opts.files[i], start);
		int e = profile_write(prof, path, (uid_t)-1, (gid_t)-1, bytes);

		if (!e)
			pr_dbg("interval %u: %" PRIu64 " samples in %s", pr->intervals + 1,
			       prof->samples, path);
		err = err ? err : e;
		free(path);
		if (pr->opts.keep.on)
			pr->pruned += keep_prune_intervals(pr->opts.files[i], &pr->opts.keep,
							   time(NULL), "--keep-profiles");
	}
	if (pr->on_interval) {
		/* The last one ends now (a second at least). */
		time_t until = start + pr->opts.interval, now = time(NULL);
		int e;

		if (now < until)
			until = now > start ? now : start + 1;
		e = pr->on_interval(pr->on_interval_ctx, prof, start, until);

		err = err ? err : e;
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
