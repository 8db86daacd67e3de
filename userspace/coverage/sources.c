// SPDX-License-Identifier: GPL-2.0-or-later
#include "coverage/sources.h"
#include "coverage/coverage.h"
#include "coverage/listing.h"
#include "naming/decls.h"
#include "naming/symbols.h"
#include "util/util.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct items {
	struct src_item *v;
	size_t n, cap;
	struct strtab *names; /* files and functions, rewritten */
	const struct cov_prefix *px;
	size_t npx;
	/* The file being read. */
	const struct u64bits *ran;    /* NULL: the counts say what ran */
	const struct u64map_ent *cnt; /* --coverage-counts: executions, by address */
	size_t ncnt;
};

/*
 * How often code in [LO, HI) ran: its most run instruction's count (a
 * line's instructions run together, unless a branch leaves it midway);
 * 1 at least where it ran uncounted (before QEMU counted: attached late).
 */
static uint64_t hits(const struct items *it, uint64_t lo, uint64_t hi)
{
	uint64_t most = it->ran && u64bits_any(it->ran, lo, hi);
	size_t l = 0, r = it->ncnt;

	while (l < r) {
		size_t m = l + (r - l) / 2;

		if (it->cnt[m].slot < lo)
			l = m + 1;
		else
			r = m;
	}
	for (; l < it->ncnt && it->cnt[l].slot < hi; l++)
		if (it->cnt[l].val > most)
			most = it->cnt[l].val;
	return most;
}

/* FILE as kept, under its new prefix if one matches. */
static const char *path_of(struct items *it, const char *file)
{
	for (size_t i = 0; i < it->npx; i++) {
		size_t n = strlen(it->px[i].old);

		if (!strncmp(file, it->px[i].old, n) && (file[n] == '/' || !file[n]))
			return strtab_addf(it->names, "%s%s", it->px[i].new, file + n);
	}
	return strtab_add(it->names, file);
}

static void add(struct items *it, const char *file, const char *name, int line, uint64_t hits)
{
	struct src_item *last = it->n ? &it->v[it->n - 1] : NULL;

	file = path_of(it, file);
	name = name ? strtab_add(it->names, name) : NULL;
	/* The rows of a line often come one after another: one item. */
	if (last && last->file == file && last->name == name && last->line == line) {
		if (hits > last->hits)
			last->hits = hits;
		return;
	}
	grow(&it->v, &it->cap, it->n + 1, sizeof(*it->v));
	it->v[it->n++] = (struct src_item){file, name, line, hits};
}

/*
 * A symbol map (--guest-symbols: a guest kernel's kallsyms or System.map)
 * has functions and no lines: each function is listed under the map's
 * path, at its rank in address order, run when its entry ran.
 */
static void map_functions(struct items *it, struct elf_file *e)
{
	const char *path = elf_file_path(e), *name;
	uint64_t prev = UINT64_MAX;
	int rank = 0;

	for (size_t i = 0; i < elf_file_nsyms(e); i++) {
		const struct sym *s = elf_file_sym_at(e, i);

		if (s->addr == prev || !(name = elf_file_sym_name(e, s)))
			continue;
		prev = s->addr;
		add(it, path, name, ++rank, hits(it, s->addr, s->addr + 1));
	}
}

static int item_cmp(const void *a, const void *b)
{
	const struct src_item *x = a, *y = b;
	int c;

	/* (Names are kept once: one pointer, one string.) */
	if (x->file != y->file && (c = strcmp(x->file, y->file)))
		return c;
	/* Functions first, by name; then lines. */
	if (!x->name != !y->name)
		return x->name ? -1 : 1;
	if (x->name && x->name != y->name && (c = strcmp(x->name, y->name)))
		return c;
	return (x->line > y->line) - (x->line < y->line);
}

/*
 * Merge equal items: a line's rows in one file, the most hits; with SUM,
 * counts of several files (or processes folded one after another) add up,
 * as lcov -a adds tracefiles.
 */
static size_t merge(struct src_item *v, size_t n, bool sum)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (k && !item_cmp(&v[k - 1], &v[i])) {
			if (sum)
				v[k - 1].hits += v[i].hits;
			else if (v[i].hits > v[k - 1].hits)
				v[k - 1].hits = v[i].hits;
			continue;
		}
		v[k++] = v[i];
	}
	return k;
}

/* The items of one file from FROM on, one per line and function. */
static void merge_file(struct items *it, size_t from)
{
	qsort(it->v + from, it->n - from, sizeof(*it->v), item_cmp);
	it->n = from + merge(it->v + from, it->n - from, false);
}

/* How often any of LS's ranges [first, first + n) ran. */
static uint64_t most_hits(const struct items *it, const struct listing *ls, uint32_t first,
			  uint32_t n)
{
	uint64_t most = 0;

	for (uint32_t k = first; k < first + n; k++) {
		uint64_t h = hits(it, ls->ranges[k].lo, ls->ranges[k].hi);

		if (h > most)
			most = h;
	}
	return most;
}

/* The items of SRC of LS under PATH, in order (as LS lists them). */
static void src_items(struct items *it, const struct listing *ls, const struct listing_src *src,
		      const char *path)
{
	grow(&it->v, &it->cap, it->n + src->nfns + src->nlines, sizeof(*it->v));
	for (uint32_t i = src->fns; i < src->fns + src->nfns; i++) {
		const struct listing_fn *f = &ls->fns[i];

		it->v[it->n++] = (struct src_item){path, strtab_add(it->names, f->name), f->line,
						   most_hits(it, ls, f->first, f->n)};
	}
	for (uint32_t i = src->lines; i < src->lines + src->nlines; i++) {
		const struct listing_line *l = &ls->lines[i];

		it->v[it->n++] =
			(struct src_item){path, NULL, l->line, most_hits(it, ls, l->first, l->n)};
	}
}

/* What ran of one file, and its listing (read meanwhile by the lister,
 * else here and now into NOW; none for a symbol map). */
struct seen {
	const struct u64bits *ran;
	const struct u64map_ent *cnt;
	size_t ncnt;
	const struct listing *ls;
	struct listing_job *now;
};

static void seen_read(struct seen *sn, const struct cov_file *f, const struct coverage *c)
{
	/* (Summed by the caller: coverage.c.) */
	sn->cnt = u64sum_summed(&f->counts, &sn->ncnt);
	/* Every instruction that ran has a count (counted from the start):
	 * the counts say all that the set would. */
	sn->ran = sn->ncnt && sn->ncnt == f->set.n ? NULL : &f->set;
	sn->now = NULL;
	if (elf_file_fd(f->elf) < 0)
		sn->ls = NULL;
	else if (!f->listing)
		sn->ls = listing_wait(NULL, sn->now = listing_read(f->elf, c->cache));
	else
		sn->ls = listing_wait(c->lister, f->listing);
}

static void seen_use(struct items *it, const struct seen *sn)
{
	it->ran = sn->ran;
	it->cnt = sn->cnt;
	it->ncnt = sn->ncnt;
}

static void seen_free(struct seen *sn)
{
	listing_job_free(NULL, sn->now);
}

/* F's items, a symbol map's or its listing's. */
static void file_items(struct items *it, const struct seen *sn, const struct cov_file *f)
{
	seen_use(it, sn);
	if (elf_file_fd(f->elf) < 0)
		map_functions(it, f->elf);
	for (size_t i = 0; sn->ls && i < sn->ls->nsrcs; i++)
		src_items(it, sn->ls, &sn->ls->srcs[i], path_of(it, sn->ls->srcs[i].path));
}

void sources_fold(struct coverage *c, const struct cov_file *f)
{
	struct items it = {.names = &c->folded_names};
	struct seen sn;

	seen_read(&sn, f, c);
	file_items(&it, &sn, f);
	seen_free(&sn);
	merge_file(&it, 0);
	grow(&c->folded, &c->folded_cap, c->nfolded + it.n, sizeof(*c->folded));
	memcpy(c->folded + c->nfolded, it.v, it.n * sizeof(*it.v));
	c->nfolded += it.n;
	free(it.v);
	/* A program run again and again is folded again and again: merged
	 * whenever the items doubled, they stay one per line. */
	if (c->nfolded > 2 * c->folded_merged) {
		qsort(c->folded, c->nfolded, sizeof(*c->folded), item_cmp);
		c->nfolded = c->folded_merged = merge(c->folded, c->nfolded, c->counts);
	}
}

/*
 * A source file's items from one place: a file's listing (SEEN set), or
 * items kept ready (folded ones, a symbol map's): RAW[first, first + n).
 */
struct part {
	const char *path; /* after --coverage-prefix */
	const struct seen *seen;
	const struct listing_src *src;
	size_t first, n;
};

static int part_cmp(const void *a, const void *b)
{
	const struct part *x = a, *y = b;

	return x->path == y->path ? 0 : strcmp(x->path, y->path);
}

/*
 * Every item of C, sorted and merged.  A listing comes sorted (from the
 * lister's thread), so only the files with items from several places (a
 * header's inline code in a program and its libraries, a file folded
 * and seen again) are sorted here.
 */
static void all_items(struct items *it, const struct coverage *c)
{
	struct items raw = {.names = it->names, .px = it->px, .npx = it->npx};
	struct seen *sn = xcalloc(c->nfiles + 1, sizeof(*sn));
	struct part *parts = NULL;
	size_t nparts = 0, cap = 0, total = 0;

	for (size_t i = 0; i < c->nfolded; i++)
		add(&raw, c->folded[i].file, c->folded[i].name, c->folded[i].line,
		    c->folded[i].hits);
	for (size_t i = 0; i < c->nfiles; i++) {
		const struct listing *ls;

		seen_read(&sn[i], &c->files[i], c);
		if (!(ls = sn[i].ls)) {
			file_items(&raw, &sn[i], &c->files[i]);
			continue;
		}
		grow(&parts, &cap, nparts + ls->nsrcs, sizeof(*parts));
		for (size_t k = 0; k < ls->nsrcs; k++) {
			parts[nparts++] = (struct part){path_of(it, ls->srcs[k].path), &sn[i],
							&ls->srcs[k], 0, 0};
			total += ls->srcs[k].nfns + ls->srcs[k].nlines;
		}
	}
	/* All the items, at most: made once, not grown (each growth a copy of
	 * MiBs, and page faults on the new copy). */
	grow(&it->v, &it->cap, it->n + total + raw.n, sizeof(*it->v));
	qsort(raw.v, raw.n, sizeof(*raw.v), item_cmp);
	for (size_t i = 0, j; i < raw.n; i = j) {
		for (j = i + 1; j < raw.n && raw.v[j].file == raw.v[i].file; j++)
			;
		grow(&parts, &cap, nparts + 1, sizeof(*parts));
		parts[nparts++] = (struct part){raw.v[i].file, NULL, NULL, i, j - i};
	}
	qsort(parts, nparts, sizeof(*parts), part_cmp);
	for (size_t i = 0, j; i < nparts; i = j) {
		size_t from = it->n;

		for (j = i; j < nparts && !part_cmp(&parts[j], &parts[i]); j++) {
			const struct part *p = &parts[j];

			if (p->seen) {
				seen_use(it, p->seen);
				src_items(it, p->seen->ls, p->src, parts[i].path);
				continue;
			}
			grow(&it->v, &it->cap, it->n + p->n, sizeof(*it->v));
			for (size_t k = p->first; k < p->first + p->n; k++) {
				it->v[it->n] = raw.v[k];
				it->v[it->n++].file = parts[i].path;
			}
		}
		/* Several places: summed as lcov -a adds tracefiles. */
		if (j - i > 1) {
			qsort(it->v + from, it->n - from, sizeof(*it->v), item_cmp);
			it->n = from + merge(it->v + from, it->n - from, c->counts);
		}
	}
	for (size_t i = 0; i < c->nfiles; i++)
		seen_free(&sn[i]);
	free(sn);
	free(parts);
	free(raw.v);
}

void sources_read(struct sources *s, const struct coverage *c, const struct cov_prefix *px,
		  size_t npx)
{
	struct items it = {.names = &s->names, .px = px, .npx = npx};
	size_t cap = 0;

	memset(s, 0, sizeof(*s));
	all_items(&it, c);
	s->items = it.v;
	for (size_t i = 0, j; i < it.n; i = j) {
		struct src_file *f;

		/* (Items of a file share its path: one string.) */
		for (j = i + 1; j < it.n && it.v[j].file == it.v[i].file; j++)
			;
		grow(&s->files, &cap, s->nfiles + 1, sizeof(*s->files));
		f = &s->files[s->nfiles++];
		*f = (struct src_file){.path = it.v[i].file, .fns = &it.v[i]};
		for (size_t k = i; k < j; k++) {
			if (it.v[k].name) {
				f->nfns++;
				f->fns_hit += it.v[k].hits > 0;
			} else {
				if (!f->lines)
					f->lines = &it.v[k];
				f->nlines++;
				f->lines_hit += it.v[k].hits > 0;
			}
		}
		s->fns += f->nfns;
		s->fns_hit += f->fns_hit;
		s->lines += f->nlines;
		s->lines_hit += f->lines_hit;
	}
}

void sources_free(struct sources *s)
{
	free(s->items);
	free(s->files);
	strtab_free(&s->names);
	memset(s, 0, sizeof(*s));
}
