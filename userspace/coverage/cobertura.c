// SPDX-License-Identifier: GPL-2.0-or-later
#include "coverage/cobertura.h"
#include "coverage/sources.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double rate(uint64_t hit, uint64_t all)
{
	return all ? (double)hit / all : 1.0;
}

/* The length of the directory every absolute path of S shares ("/usr/"
 * and "/usr/lib/x" share 5: "/usr/"), 0 if any path is relative. */
static size_t common_root(const struct sources *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nfiles; i++) {
		const char *p = s->files[i].path;
		size_t k = 0;

		if (p[0] != '/')
			return 0;
		if (!i) {
			n = strrchr(p, '/') - p + 1;
			continue;
		}
		while (k < n && p[k] == s->files[0].path[k])
			k++;
		while (k > 0 && p[k - 1] != '/')
			k--;
		n = k;
	}
	return n;
}

/* The files in order of their directory under the root, then their name. */
static size_t root_len;
static const struct sources *sorting;

static size_t dir_len(const char *rel)
{
	const char *slash = strrchr(rel, '/');

	return slash ? (size_t)(slash - rel) : 0;
}

static int by_dir(const void *a, const void *b)
{
	const char *x = sorting->files[*(const size_t *)a].path + root_len,
		   *y = sorting->files[*(const size_t *)b].path + root_len;
	size_t dx = dir_len(x), dy = dir_len(y);
	int c = strncmp(x, y, dx < dy ? dx : dy);

	if (c)
		return c;
	if (dx != dy)
		return dx < dy ? -1 : 1;
	return strcmp(x, y);
}

static void put_class(FILE *f, const struct src_file *sf, const char *rel)
{
	fputs("\t\t\t\t<class name=\"", f);
	put_xml(f, rel);
	fputs("\" filename=\"", f);
	put_xml(f, rel);
	fprintf(f, "\" line-rate=\"%.4f\" branch-rate=\"0.0\" complexity=\"0.0\">\n",
		rate(sf->lines_hit, sf->nlines));
	fputs("\t\t\t\t\t<methods>\n", f);
	for (size_t k = 0; k < sf->nfns; k++) {
		fputs("\t\t\t\t\t\t<method name=\"", f);
		put_xml(f, sf->fns[k].name);
		fprintf(f,
			"\" signature=\"\" line-rate=\"%s\" branch-rate=\"0.0\" "
			"complexity=\"0.0\">\n"
			"\t\t\t\t\t\t\t<lines><line number=\"%d\" hits=\"%" PRIu64
			"\" branch=\"false\"/></lines>\n\t\t\t\t\t\t</method>\n",
			sf->fns[k].hits ? "1.0" : "0.0", sf->fns[k].line, sf->fns[k].hits);
	}
	fputs("\t\t\t\t\t</methods>\n\t\t\t\t\t<lines>\n", f);
	for (size_t k = 0; k < sf->nlines; k++)
		fprintf(f,
			"\t\t\t\t\t\t<line number=\"%d\" hits=\"%" PRIu64 "\" branch=\"false\"/>\n",
			sf->lines[k].line, sf->lines[k].hits);
	fputs("\t\t\t\t\t</lines>\n\t\t\t\t</class>\n", f);
}

int cobertura_write(FILE *f, const struct sources *s)
{
	size_t *order = xmalloc((s->nfiles ? s->nfiles : 1) * sizeof(*order)), i, j;
	size_t root = common_root(s);

	for (i = 0; i < s->nfiles; i++)
		order[i] = i;
	root_len = root;
	sorting = s;
	qsort(order, s->nfiles, sizeof(*order), by_dir);
	fprintf(f,
		"<?xml version=\"1.0\" ?>\n"
		"<!DOCTYPE coverage SYSTEM "
		"'http://cobertura.sourceforge.net/xml/coverage-04.dtd'>\n"
		"<coverage line-rate=\"%.4f\" branch-rate=\"0.0\" lines-covered=\"%" PRIu64
		"\" lines-valid=\"%" PRIu64 "\" branches-covered=\"0\" branches-valid=\"0\" "
		"complexity=\"0.0\" timestamp=\"%lld\" version=\"qemu-jitbpf\">\n"
		"\t<sources>\n\t\t<source>",
		rate(s->lines_hit, s->lines), s->lines_hit, s->lines, (long long)time(NULL) * 1000);
	if (root > 1) {
		/* Without its trailing slash. */
		char *dir = xstrdup(s->files[0].path);

		dir[root - 1] = 0;
		put_xml(f, dir);
		free(dir);
	} else {
		fputs(root ? "/" : ".", f);
	}
	fputs("</source>\n\t</sources>\n\t<packages>\n", f);
	for (i = 0; i < s->nfiles; i = j) {
		const char *rel = s->files[order[i]].path + root;
		size_t dl = dir_len(rel);
		uint64_t hit = 0, all = 0;

		for (j = i; j < s->nfiles; j++) {
			const char *r = s->files[order[j]].path + root;

			if (dir_len(r) != dl || strncmp(r, rel, dl))
				break;
			hit += s->files[order[j]].lines_hit;
			all += s->files[order[j]].nlines;
		}
		/* The package: its directory, dotted, as gcovr names it. */
		fputs("\t\t<package name=\"", f);
		for (size_t k = 0; k < dl; k++)
			if (rel[k] == '/')
				fputc('.', f);
			else
				put_xml(f, (char[]){rel[k], 0});
		fprintf(f,
			"\" line-rate=\"%.4f\" branch-rate=\"0.0\" complexity=\"0.0\">\n"
			"\t\t\t<classes>\n",
			rate(hit, all));
		for (size_t k = i; k < j; k++)
			put_class(f, &s->files[order[k]], s->files[order[k]].path + root);
		fputs("\t\t\t</classes>\n\t\t</package>\n", f);
	}
	fputs("\t</packages>\n</coverage>\n", f);
	free(order);
	return ferror(f) ? -1 : 0;
}
