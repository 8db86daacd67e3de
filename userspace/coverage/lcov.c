// SPDX-License-Identifier: GPL-2.0-or-later
#include "coverage/lcov.h"
#include "coverage/coverage.h"
#include "naming/decls.h"
#include "naming/symbols.h"
#include "util/strtab.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A line, or a function (NAME set), of a source file. */
struct src_item {
	const char *file; /* as DWARF gives it */
	const char *name; /* a function's, or NULL for a line */
	int line;
	uint64_t hits;
};

struct items {
	struct src_item *v;
	size_t n, cap;
	/* The file being read. */
	struct strtab names; /* the files, for the write */
	struct elf_file *elf;
	const uint64_t *ran;
	size_t nran;
	/* Declarations read, whose file names items use. */
	struct decl_set {
		struct decl *v;
		size_t n;
	} *decls;
	size_t ndecls, decls_cap;
};

static void add(struct items *it, const char *file, const char *name, int line, uint64_t hits)
{
	grow(&it->v, &it->cap, it->n + 1, sizeof(*it->v));
	it->v[it->n++] = (struct src_item){file, name, line, hits};
}

static void on_row(void *ctx, uint64_t lo, uint64_t hi, const char *file, int line)
{
	struct items *it = ctx;

	/* (Code the linker dropped keeps its rows, at address 0.) */
	if (!elf_file_in_code(it->elf, lo))
		return;
	add(it, strtab_add(&it->names, file), NULL, line, coverage_any(it->ran, it->nran, lo, hi));
}

/*
 * The functions of E with a line: at their declaration's line (where gcov
 * and lcov put them, with their entry block), else at their entry's.
 */
static void functions(struct items *it, struct elf_file *e)
{
	size_t nd;
	struct decl *d = decls_read(elf_file_dwfl(e), &nd);
	uint64_t prev = UINT64_MAX;

	grow(&it->decls, &it->decls_cap, it->ndecls + 1, sizeof(*it->decls));
	it->decls[it->ndecls++] = (struct decl_set){d, nd};
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
		hit = coverage_any(it->ran, it->nran, s->addr, s->addr + 1);
		if ((dc = decls_find(d, nd, s->addr))) {
			add(it, dc->file, name, dc->line, hit);
			add(it, dc->file, NULL, dc->line, hit);
		} else if (elf_file_line(e, s->addr, &file, &line)) {
			add(it, file, name, line, hit);
		}
	}
}

static int item_cmp(const void *a, const void *b)
{
	const struct src_item *x = a, *y = b;
	int c = strcmp(x->file, y->file);

	if (c)
		return c;
	/* Functions first, by name; then lines. */
	if (!x->name != !y->name)
		return x->name ? -1 : 1;
	if (x->name && (c = strcmp(x->name, y->name)))
		return c;
	return (x->line > y->line) - (x->line < y->line);
}

static void put_path(FILE *f, const char *file, const struct cov_prefix *px, size_t npx)
{
	for (size_t i = 0; i < npx; i++) {
		size_t n = strlen(px[i].old);

		if (!strncmp(file, px[i].old, n) && (file[n] == '/' || !file[n] || !n)) {
			fprintf(f, "SF:%s%s\n", px[i].new, file + n);
			return;
		}
	}
	fprintf(f, "SF:%s\n", file);
}

/* One source file's record: ITEMS[0..N) are its functions, then lines. */
static void record(FILE *f, const struct src_item *v, size_t n, const struct cov_prefix *px,
		   size_t npx, struct cov_totals *tot)
{
	uint64_t fns = 0, fns_hit = 0, lines = 0, lines_hit = 0;
	size_t i;

	put_path(f, v[0].file, px, npx);
	for (i = 0; i < n && v[i].name; i++)
		fprintf(f, "FN:%d,%s\n", v[i].line, v[i].name);
	for (i = 0; i < n && v[i].name; i++) {
		fprintf(f, "FNDA:%" PRIu64 ",%s\n", v[i].hits, v[i].name);
		fns++;
		fns_hit += v[i].hits > 0;
	}
	fprintf(f, "FNF:%" PRIu64 "\nFNH:%" PRIu64 "\n", fns, fns_hit);
	for (; i < n; i++) {
		fprintf(f, "DA:%d,%" PRIu64 "\n", v[i].line, v[i].hits);
		lines++;
		lines_hit += v[i].hits > 0;
	}
	fprintf(f, "LF:%" PRIu64 "\nLH:%" PRIu64 "\nend_of_record\n", lines, lines_hit);
	tot->files++;
	tot->fns += fns;
	tot->fns_hit += fns_hit;
	tot->lines += lines;
	tot->lines_hit += lines_hit;
}

/* Merge equal items (a line in several rows or images): the most hits. */
static size_t merge(struct src_item *v, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (k && !item_cmp(&v[k - 1], &v[i])) {
			if (v[i].hits > v[k - 1].hits)
				v[k - 1].hits = v[i].hits;
			continue;
		}
		v[k++] = v[i];
	}
	return k;
}

int lcov_write(const struct coverage *c, const char *path, const struct cov_prefix *px,
	       size_t npx, struct cov_totals *tot)
{
	struct items it = {0};
	char *tmp = xasprintf("%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	int err = 0;

	memset(tot, 0, sizeof(*tot));
	if (!f) {
		err = -errno;
		pr_err("cannot write %s: %s", tmp, strerror(errno));
		free(tmp);
		return err;
	}
	for (size_t i = 0; i < c->nfiles; i++) {
		struct elf_file *e = c->files[i].elf;
		uint64_t *ran = coverage_sorted(&c->files[i], &it.nran);

		it.elf = e;
		it.ran = ran;
		elf_file_lines_each(e, on_row, &it);
		functions(&it, e);
		free(ran);
	}
	qsort(it.v, it.n, sizeof(*it.v), item_cmp);
	it.n = merge(it.v, it.n);
	fputs("TN:\n", f);
	for (size_t i = 0, j; i < it.n; i = j) {
		for (j = i + 1; j < it.n && !strcmp(it.v[j].file, it.v[i].file); j++)
			;
		record(f, &it.v[i], j - i, px, npx, tot);
	}
	free(it.v);
	for (size_t i = 0; i < it.ndecls; i++)
		decls_free(it.decls[i].v, it.decls[i].n);
	free(it.decls);
	strtab_free(&it.names);
	if (ferror(f) | fclose(f)) {
		err = -EIO;
		pr_err("cannot write %s", tmp);
	} else if (rename(tmp, path)) {
		err = -errno;
		pr_err("cannot rename %s to %s: %s", tmp, path, strerror(errno));
	}
	if (err)
		unlink(tmp);
	free(tmp);
	return err;
}
