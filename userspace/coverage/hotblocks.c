// SPDX-License-Identifier: GPL-2.0-or-later
#include "coverage/hotblocks.h"
#include "coverage/coverage.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int hot_cmp(const void *a, const void *b)
{
	const struct cov_hot *x = *(const struct cov_hot *const *)a,
			     *y = *(const struct cov_hot *const *)b;

	if (x->ecount != y->ecount)
		return x->ecount > y->ecount ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->pc > y->pc) - (x->pc < y->pc);
}

/* A CSV field: quoted when it holds a comma, a quote or a line end. */
static void field(FILE *f, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

int hotblocks_write(FILE *f, const struct coverage *c)
{
	const struct cov_hot **v = xmalloc((c->nhot ? c->nhot : 1) * sizeof(*v));

	for (size_t i = 0; i < c->nhot; i++)
		v[i] = &c->hot[i];
	qsort(v, c->nhot, sizeof(*v), hot_cmp);
	fputs("pc,tcount,icount,ecount,function,source,process\n", f);
	for (size_t i = 0; i < c->nhot; i++) {
		fprintf(f, "0x%" PRIx64 ",%u,%u,%" PRIu64 ",", v[i]->pc, v[i]->tcount, v[i]->icount,
			v[i]->ecount);
		field(f, v[i]->fn);
		fputc(',', f);
		if (v[i]->file) {
			char *src = xasprintf("%s:%d", v[i]->file, v[i]->line);

			field(f, src);
			free(src);
		}
		fprintf(f, ",%d\n", v[i]->pid);
	}
	free(v);
	return ferror(f) ? -1 : 0;
}
