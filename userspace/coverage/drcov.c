// SPDX-License-Identifier: GPL-2.0-or-later
#include "coverage/drcov.h"
#include "naming/guest.h"
#include "naming/symbols.h"
#include "util/u64set.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A guest image, as the module table lists it. */
struct module {
	char *path;
	uint64_t start, end;
};

struct drcov {
	struct module *mods;
	size_t nmods, cap;
	size_t last; /* the module of the last block */
	/*
	 * Blocks: module id in bits 48-63, offset in its module in 16-47,
	 * size in 0-15, so that they sort as the file lists them.  A block
	 * translated again (after a flush) is one key.
	 */
	struct u64set blocks;
	uint64_t too_far; /* blocks beyond what an entry can say */
};

bool drcov_wanted(const struct coverage_opts *o)
{
	for (int i = 0; i < o->nfiles; i++)
		if (coverage_format(o->files[i]) == COV_DRCOV)
			return true;
	return false;
}

struct drcov *drcov_new(void)
{
	return xcalloc(1, sizeof(struct drcov));
}

/*
 * Where IMG's module starts and ends: an ELF file's from the page of its
 * first PT_LOAD segment, where a disassembler puts its image base (the
 * range QEMU reports for a program may start at its code).
 */
static void module_range(const struct guest_image *img, uint64_t *start, uint64_t *end)
{
	uint64_t lo, hi;

	*start = img->start;
	*end = img->end;
	if (!img->elf)
		return;
	elf_file_range(img->elf, &lo, &hi);
	*start = (lo & ~0xfffull) + img->bias;
	*end = hi + img->bias;
}

static bool same(const struct module *m, const struct guest_image *img, uint64_t start)
{
	return m->start == start && !strcmp(m->path, img->path);
}

static size_t module_of(struct drcov *d, const struct guest_image *img)
{
	uint64_t start, end;

	module_range(img, &start, &end);
	if (d->nmods && same(&d->mods[d->last], img, start))
		return d->last;
	for (size_t i = 0; i < d->nmods; i++)
		if (same(&d->mods[i], img, start))
			return d->last = i;
	grow(&d->mods, &d->cap, d->nmods + 1, sizeof(*d->mods));
	d->mods[d->nmods] = (struct module){xstrdup(img->path), start, end};
	return d->last = d->nmods++;
}

void drcov_block(struct drcov *d, const struct guest_image *img, uint64_t first, uint64_t last)
{
	size_t mod = module_of(d, img);
	uint64_t off = first - d->mods[mod].start;
	/*
	 * Up to the last instruction's first byte: a TB report does not say
	 * how long the last instruction is, and every reader maps a block to
	 * the instructions that start in it, so this names exactly those
	 * that ran.
	 */
	uint64_t size = last - first + 1;

	if (first < d->mods[mod].start || last < first || off > UINT32_MAX || size > UINT16_MAX ||
	    mod > UINT16_MAX) {
		d->too_far++;
		return;
	}
	u64set_add(&d->blocks, (uint64_t)mod << 48 | off << 16 | size);
}

void drcov_images(struct drcov *d, const struct guest *g)
{
	for (size_t i = 0; i < g->nimgs; i++)
		module_of(d, &g->imgs[i]);
	for (size_t i = 0; i < g->nretired; i++)
		module_of(d, &g->retired[i]);
}

/* Version 2, the module table's version 2, blocks by module and offset. */
static int write_one(const struct drcov *d, const char *path)
{
	struct safe_file sf;
	int err = safe_file_create(&sf, path, 0644, (uid_t)-1, (gid_t)-1);
	uint64_t *v;
	size_t n;

	if (err)
		return err;
	v = u64set_sorted(&d->blocks, &n);
	fprintf(sf.f, "DRCOV VERSION: 2\nDRCOV FLAVOR: drcov-64\n");
	fprintf(sf.f, "Module Table: version 2, count %zu\n", d->nmods);
	fprintf(sf.f, "Columns: id, base, end, entry, path\n");
	for (size_t i = 0; i < d->nmods; i++)
		fprintf(sf.f, "%2zu, 0x%016" PRIx64 ", 0x%016" PRIx64 ", 0x%016" PRIx64 ", %s\n", i,
			d->mods[i].start, d->mods[i].end, (uint64_t)0, d->mods[i].path);
	fprintf(sf.f, "BB Table: %zu bbs\n", n);
	for (size_t i = 0; i < n; i++) {
		uint32_t start = (uint32_t)(v[i] >> 16);
		uint16_t size = (uint16_t)v[i], mod = (uint16_t)(v[i] >> 48);
		unsigned char e[8] = {start, start >> 8, start >> 16, start >> 24,
				      size,  size >> 8,	 mod,	      mod >> 8};

		fwrite(e, sizeof(e), 1, sf.f);
	}
	free(v);
	if (fflush(sf.f)) {
		pr_err("cannot write %s", path);
		safe_file_abort(&sf);
		return -EIO;
	}
	return safe_file_commit(&sf);
}

int drcov_write_files(const struct drcov *d, const struct coverage_opts *o, pid_t pid)
{
	int err = 0;

	if (d->too_far)
		pr_warn("pid %d: %" PRIu64 " blocks too far into their module for drcov, left out",
			pid, d->too_far);
	for (int i = 0; i < o->nfiles; i++) {
		const char *f = o->files[i];
		char *path;
		int e;

		if (coverage_format(f) != COV_DRCOV)
			continue;
		path = xasprintf("%.*s.%d.drcov", (int)before_suffix(f, ".drcov"), f, (int)pid);
		e = write_one(d, path);
		if (!e)
			fprintf(stderr, "qemu-jitbpf: coverage: %s: %zu blocks in %zu modules\n",
				path, d->blocks.n, d->nmods);
		err = err ? err : e;
		free(path);
	}
	return err;
}

void drcov_free(struct drcov *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nmods; i++)
		free(d->mods[i].path);
	free(d->mods);
	u64set_free(&d->blocks);
	free(d);
}
