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
		  unsigned int walkers)
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
	pr->sm = sampler_open(ringbuf_fd, procs_fd, o->freq, o->stack_bytes, walkers);
	return pr->sm ? 0 : -EINVAL;
}

struct samples *profiler_follow(struct profiler *pr, pid_t pid)
{
	struct samples *ss = xcalloc(1, sizeof(*ss));

	samples_init(ss, &pr->prof, pid, pr->opts.stack_bytes > 0);
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

int profiler_start(struct profiler *pr)
{
	return sampler_start(pr->sm);
}

void profiler_resolve(struct samples *ss, struct jitmap *jm, uint64_t now)
{
	samples_resolve(ss, jm, now, RESOLVE_AGE_NS);
}

/* FILE with STAMP before its suffix: p.pb.gz -> p.STAMP.pb.gz. */
static char *stamped(const char *file, const char *stamp)
{
	const char *base = path_base(file), *dot;
	size_t len = strlen(file);

	if (len > 6 && !strcmp(file + len - 6, ".pb.gz"))
		dot = file + len - 6;
	else if ((dot = strrchr(base, '.')) == base)
		dot = NULL;
	if (!dot)
		return xasprintf("%s.%s", file, stamp);
	return xasprintf("%.*s.%s%s", (int)(dot - file), file, stamp, dot);
}

#define STAMP_FMT "%Y%m%dT%H%M%SZ"
#define STAMP_LEN 16

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* NAME is PREFIX, a stamp, then SUFFIX: its time, else -1. */
static time_t stamp_of(const char *name, const char *prefix, const char *suffix)
{
	size_t n = strlen(name), np = strlen(prefix), ns = strlen(suffix);
	struct tm tm = {0};
	char stamp[STAMP_LEN + 1];
	const char *end;

	if (n != np + STAMP_LEN + ns || strncmp(name, prefix, np) || strcmp(name + n - ns, suffix))
		return -1;
	memcpy(stamp, name + np, STAMP_LEN);
	stamp[STAMP_LEN] = 0;
	end = strptime(stamp, STAMP_FMT, &tm);
	return end && !*end ? timegm(&tm) : -1;
}

/*
 * --keep-profiles: FILE's interval files (its stamped names in its
 * directory, whichever run of the tool wrote them) beyond the count or
 * older than the age, oldest first, are removed.
 */
static void prune(struct profiler *pr, const char *file, time_t now)
{
	const struct keep *k = &pr->opts.keep;
	char *pattern = stamped(file, "\x01"), *mark = strchr(pattern, 1);
	const char *prefix = path_base(pattern), *suffix = mark + 1;
	char *dirpath = prefix > pattern ? strndup(pattern, prefix - pattern) : xstrdup("./");
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int fd;

	*mark = 0;
	d = dirpath ? opendir(dirpath) : NULL;
	fd = d ? dirfd(d) : -1;
	while (d && (de = readdir(d)))
		if (stamp_of(de->d_name, prefix, suffix) >= 0) {
			grow(&names, &cap, n + 1, sizeof(*names));
			names[n++] = xstrdup(de->d_name);
		}
	sort_array(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		time_t t = stamp_of(names[i], prefix, suffix);
		/* (Never the newest: the file just written.) */
		bool over = k->count && n - i > k->count && i + 1 < n;
		bool old = k->age_ns && t + (time_t)(k->age_ns / 1000000000ull) < now && i + 1 < n;

		if ((over || old) && !unlinkat(fd, names[i], 0)) {
			pr_dbg("removed %s%s (--keep-profiles)", dirpath, names[i]);
			pr->pruned++;
		}
		free(names[i]);
	}
	free(names);
	if (d)
		closedir(d);
	free(dirpath);
	free(pattern);
}

/* Write PROF, the profile of the interval from START (wall clock). */
static int write_interval(struct profiler *pr, const struct profile *prof, time_t start,
			  uint64_t *bytes)
{
	char stamp[32];
	struct tm tm;
	int err = 0;

	gmtime_r(&start, &tm);
	strftime(stamp, sizeof(stamp), STAMP_FMT, &tm);
	for (int i = 0; i < pr->opts.nfiles; i++) {
		char *path = stamped(pr->opts.files[i], stamp);
		int e = profile_write(prof, path, (uid_t)-1, (gid_t)-1, bytes);

		if (!e)
			pr_dbg("interval %u: %" PRIu64 " samples in %s", pr->intervals + 1,
			       prof->samples, path);
		err = err ? err : e;
		free(path);
		if (pr->opts.keep.on)
			prune(pr, pr->opts.files[i], time(NULL));
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
