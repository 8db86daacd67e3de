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
	const uint64_t *ran;
	size_t nran;
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
	uint64_t most = (uint64_t)coverage_any(it->ran, it->nran, lo, hi);
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
 * The functions of E with a line: at their declaration's line (where gcov
 * and lcov put them, with their entry block), else at their entry's.
 */
static void functions(struct items *it, struct elf_file *e, const struct decl *d, size_t nd)
{
	uint64_t prev = UINT64_MAX;

	for (size_t i = 0; i < elf_file_nsyms(e); i++) {
		const struct sym *s = elf_file_sym_at(e, i);
		const struct decl *dc;
		const char *file, *name;
		uint64_t hit;
		int line;

		/* Aliases: the first name of an address. */
		if (s->addr == prev || !elf_file_in_code(e, s->addr))
			continue;
		prev = s->addr;
		if (!(name = elf_file_sym_name(e, s)))
			continue;
		hit = hits(it, s->addr, s->addr + 1);
		if ((dc = decls_find(d, nd, s->addr))) {
			add(it, dc->file, name, dc->line, hit);
			add(it, dc->file, NULL, dc->line, hit);
		} else if (elf_file_line(e, s->addr, &file, &line)) {
			add(it, file, name, line, hit);
		}
	}
}

/* The lines of a listing, each with its most run instruction's hits. */
static void listed_lines(struct items *it, const struct listing *ls)
{
	for (size_t i = 0; i < ls->nlines; i++) {
		const struct listing_line *l = &ls->lines[i];
		uint64_t most = 0;

		for (uint32_t k = l->first; k < l->first + l->n; k++) {
			uint64_t h = hits(it, ls->ranges[k].lo, ls->ranges[k].hi);

			if (h > most)
				most = h;
		}
		add(it, l->file, NULL, l->line, most);
	}
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

/* The items of one file: its lines and functions, run or not (from its
 * listing, read meanwhile by LISTER, else here and now). */
static void read_file(struct items *it, const struct cov_file *f, struct lister *lister)
{
	struct elf_file *e = f->elf;
	uint64_t *ran = u64set_sorted(&f->set, &it->nran);
	struct u64map_ent *cnt = u64map_sorted(&f->counts, &it->ncnt);

	it->ran = ran;
	it->cnt = cnt;
	if (elf_file_fd(e) < 0) {
		map_functions(it, e);
	} else {
		struct listing_job *now = f->listing ? NULL : listing_read(e);
		const struct listing *ls =
			now ? listing_wait(NULL, now) : listing_wait(lister, f->listing);

		if (ls) {
			listed_lines(it, ls);
			functions(it, e, ls->decls, ls->ndecls);
		}
		listing_job_free(NULL, now);
	}
	free(ran);
	free(cnt);
}

void sources_fold(struct coverage *c, const struct cov_file *f)
{
	struct items it = {.names = &c->folded_names};

	read_file(&it, f, c->lister);
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

void sources_read(struct sources *s, const struct coverage *c, const struct cov_prefix *px,
		  size_t npx)
{
	struct items it = {.names = &s->names, .px = px, .npx = npx};
	size_t cap = 0;

	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < c->nfolded; i++)
		add(&it, c->folded[i].file, c->folded[i].name, c->folded[i].line,
		    c->folded[i].hits);
	for (size_t i = 0; i < c->nfiles; i++) {
		size_t from = it.n;

		read_file(&it, &c->files[i], c->lister);
		if (c->counts)
			merge_file(&it, from);
	}
	qsort(it.v, it.n, sizeof(*it.v), item_cmp);
	it.n = merge(it.v, it.n, c->counts);
	s->items = it.v;
	for (size_t i = 0, j; i < it.n; i = j) {
		struct src_file *f;

		for (j = i + 1; j < it.n && !strcmp(it.v[j].file, it.v[i].file); j++)
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
