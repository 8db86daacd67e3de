// SPDX-License-Identifier: GPL-2.0-or-later
#include "coverage/coverage.h"
#include "coverage/cobertura.h"
#include "coverage/hotblocks.h"
#include "coverage/lcov.h"
#include "coverage/listcache.h"
#include "coverage/listing.h"
#include "coverage/sources.h"
#include "naming/guest.h"
#include "naming/symbols.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum cov_format coverage_format(const char *file)
{
	if (before_suffix(file, ".info"))
		return COV_LCOV;
	if (before_suffix(file, ".xml"))
		return COV_COBERTURA;
	if (before_suffix(file, ".drcov"))
		return COV_DRCOV;
	if (before_suffix(file, ".csv"))
		return COV_HOT;
	return COV_BAD;
}

static struct cov_file *file_of(struct coverage *c, struct elf_file *elf)
{
	if (c->last && c->last->elf == elf)
		return c->last;
	for (size_t i = 0; i < c->nfiles; i++)
		if (c->files[i].elf == elf) {
			c->last = &c->files[i];
			c->last->used = ++c->clock;
			return c->last;
		}
	grow(&c->files, &c->cap, c->nfiles + 1, sizeof(*c->files));
	c->files[c->nfiles] = (struct cov_file){
		.elf = elf_file_ref(elf),
		.used = ++c->clock,
		.listing = c->lines_wanted ? lister_request(&c->lister, elf, c->cache) : NULL,
	};
	return c->last = &c->files[c->nfiles++];
}

void coverage_insn(struct coverage *c, struct elf_file *elf, uint64_t link)
{
	u64bits_add(&file_of(c, elf)->set, link);
}

void coverage_count(struct coverage *c, struct elf_file *elf, uint64_t link, uint64_t n)
{
	u64sum_add(&file_of(c, elf)->counts, link, n);
}

size_t coverage_hot(struct coverage *c, int pid, uint64_t pc, uint32_t icount,
		    const struct guest_loc *loc)
{
	struct cov_hot *h;
	const char *file;
	int line;

	grow(&c->hot, &c->hot_cap, c->nhot + 1, sizeof(*c->hot));
	h = &c->hot[c->nhot];
	*h = (struct cov_hot){.pid = pid, .pc = pc, .icount = icount, .tcount = 1};
	/* Named now: the file may be folded and let go before the end. */
	if (loc->img && loc->img->elf) {
		if (loc->name)
			h->fn = strtab_add(&c->hot_names, loc->name);
		if (elf_file_line(loc->img->elf, loc->link, &file, &line)) {
			h->file = strtab_add(&c->hot_names, file);
			h->line = line;
		}
	}
	return c->nhot++;
}

void coverage_images(struct coverage *c, const struct guest *g)
{
	for (size_t i = 0; i < g->nimgs; i++)
		if (g->imgs[i].elf)
			file_of(c, g->imgs[i].elf);
	for (size_t i = 0; i < g->nretired; i++)
		if (g->retired[i].elf)
			file_of(c, g->retired[i].elf);
}

/* F's counts summed, for sources.c to read. */
static void settle(struct cov_file *f)
{
	size_t n;

	u64sum_sorted(&f->counts, &n);
}

void coverage_bound(struct coverage *c)
{
	for (;;) {
		struct cov_file *oldest = NULL;
		size_t idle = 0;

		for (size_t i = 0; i < c->nfiles; i++) {
			struct cov_file *f = &c->files[i];

			if (elf_file_holders(f->elf) > 1)
				continue; /* a process still maps it */
			idle++;
			if (!oldest || f->used < oldest->used)
				oldest = f;
		}
		if (idle <= COV_IDLE_FILES)
			return;
		settle(oldest);
		sources_fold(c, oldest);
		listing_job_free(c->lister, oldest->listing);
		elf_file_put(oldest->elf);
		u64bits_free(&oldest->set);
		u64sum_free(&oldest->counts);
		*oldest = c->files[--c->nfiles];
		c->last = NULL;
		c->files_folded++;
	}
}

void coverage_free(struct coverage *c)
{
	for (size_t i = 0; i < c->nfiles; i++) {
		listing_job_free(c->lister, c->files[i].listing);
		elf_file_put(c->files[i].elf);
		u64bits_free(&c->files[i].set);
		u64sum_free(&c->files[i].counts);
	}
	lister_free(c->lister);
	listcache_free(c->cache);
	free(c->files);
	free(c->hot);
	strtab_free(&c->hot_names);
	free(c->folded);
	strtab_free(&c->folded_names);
	memset(c, 0, sizeof(*c));
}

/* One file: made beside it, never through a planted link, and renamed. */
static int write_one(const struct coverage *c, const struct sources *src, const char *path)
{
	struct safe_file sf;
	int err = safe_file_create(&sf, path, 0644, (uid_t)-1, (gid_t)-1);

	if (err)
		return err;
	/* A tracefile of a few MiB: writes of 64 KiB, not of 4 KiB; and a
	 * buffer from the heap, not a mapping of its own, which the end of a
	 * run would wait for while our ring is unmapped. */
	safe_file_buffer(&sf, 64 << 10);
	switch (coverage_format(path)) {
	case COV_LCOV:
		err = lcov_write(sf.f, src);
		break;
	case COV_HOT:
		err = hotblocks_write(sf.f, c);
		break;
	case COV_COBERTURA:
		err = cobertura_write(sf.f, src);
		break;
	case COV_DRCOV:
	case COV_BAD:
		err = -1;
		break;
	}
	if (err || fflush(sf.f)) {
		pr_err("cannot write %s", path);
		safe_file_abort(&sf);
		return -EIO;
	}
	return safe_file_commit(&sf);
}

/* A hot-block table, written beside the lines (it needs none of them). */
struct hot_job {
	const struct coverage *c;
	const char *path;
	pthread_t thread;
	bool started;
	int err;
};

static void *hot_write(void *arg)
{
	struct hot_job *j = arg;

	j->err = write_one(j->c, NULL, j->path);
	return NULL;
}

/* Every file of O, or its interval file from START; -errno (said) if one
 * could not be written.  The lines (sources_read(), the longest part of
 * the end of a run) are read and written while another thread writes the
 * hot-block tables. */
static int write_files(struct coverage *c, const struct coverage_opts *o, time_t start)
{
	struct sources src = {0};
	struct hot_job *hot = xcalloc(o->nfiles ? o->nfiles : 1, sizeof(*hot));
	char **paths = xcalloc(o->nfiles ? o->nfiles : 1, sizeof(*paths));
	int err = 0, lines = 0;

	for (int i = 0; i < o->nfiles; i++) {
		enum cov_format f = coverage_format(o->files[i]);

		if (f == COV_DRCOV)
			continue; /* each process's, as it ends */
		lines += f != COV_HOT;
		paths[i] =
			o->interval ? keep_interval_name(o->files[i], start) : xstrdup(o->files[i]);
		if (f == COV_HOT) {
			hot[i] = (struct hot_job){.c = c, .path = paths[i]};
			hot[i].started = !pthread_create(&hot[i].thread, NULL, hot_write, &hot[i]);
		}
	}
	if (lines) {
		for (size_t i = 0; i < c->nfiles; i++)
			settle(&c->files[i]);
		sources_read(&src, c, o->px, o->npx);
	}
	for (int i = 0; i < o->nfiles; i++) {
		int e;

		if (!paths[i])
			continue;
		if (coverage_format(paths[i]) == COV_HOT) {
			if (hot[i].started)
				pthread_join(hot[i].thread, NULL);
			else
				hot_write(&hot[i]);
			if (!(e = hot[i].err))
				fprintf(stderr, "qemu-jitbpf: coverage: %s: %zu blocks\n", paths[i],
					c->nhot);
		} else if (!(e = write_one(c, &src, paths[i]))) {
			fprintf(stderr,
				"qemu-jitbpf: coverage: %s: %" PRIu64 " of %" PRIu64
				" lines, %" PRIu64 " of %" PRIu64
				" functions in %zu source files\n",
				paths[i], src.lines_hit, src.lines, src.fns_hit, src.fns,
				src.nfiles);
			if (o->interval && o->keep.on)
				keep_prune_intervals(o->files[i], &o->keep, time(NULL),
						     "--keep-profiles");
		}
		err = err ? err : e;
		free(paths[i]);
	}
	sources_free(&src);
	free(paths);
	free(hot);
	return err;
}

void coverage_start(struct coverage *c, const struct coverage_opts *o, uint64_t now)
{
	const char *why;

	c->split_ns = now + o->interval * 1000000000ull;
	c->interval_start = time(NULL);
	if (c->lines_wanted && o->cache_dir && !(c->cache = listcache_open(o->cache_dir, &why)))
		pr_dbg("coverage: no listing cache in %s: %s", o->cache_dir, why);
}

int coverage_tick(struct coverage *c, const struct coverage_opts *o, uint64_t now)
{
	int err;

	if (!o->interval || now < c->split_ns)
		return 0;
	err = write_files(c, o, c->interval_start);
	c->interval_start += o->interval;
	c->split_ns += o->interval * 1000000000ull;
	return err;
}

int coverage_finish(struct coverage *c, const struct coverage_opts *o)
{
	int err;

	if (c->uncounted)
		pr_warn("coverage: QEMU ran out of counter slots: %" PRIu64
			" blocks were not counted (their lines count 1 where they ran)",
			c->uncounted);
	if (c->never_counted)
		pr_warn("coverage: %" PRIu64 " QEMU process%s ended before %s counted its blocks "
			"(their lines count 1 where they ran)",
			c->never_counted, c->never_counted == 1 ? "" : "es",
			c->never_counted == 1 ? "it" : "each");
	if (c->unplaced)
		pr_warn("coverage: %" PRIu64
			" executions of blocks whose report never came are not counted",
			c->unplaced);
	if (c->files_folded)
		pr_dbg("coverage: %" PRIu64
		       " files folded into %zu lines and functions and let go, "
		       "%zu held",
		       c->files_folded, c->nfolded, c->nfiles);
	err = write_files(c, o, c->interval_start);
	if (c->cache) {
		uint64_t hits, stored;

		listcache_stats(c->cache, &hits, &stored);
		pr_dbg("coverage: %" PRIu64 " listings from the cache, %" PRIu64 " stored in it",
		       hits, stored);
	}
	return err;
}
