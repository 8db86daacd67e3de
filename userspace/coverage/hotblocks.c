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
		fputs_unlocked("0x", f);
		fput_hex(f, v[i]->pc);
		putc_unlocked(',', f);
		fput_dec(f, v[i]->tcount, false);
		putc_unlocked(',', f);
		fput_dec(f, v[i]->icount, false);
		putc_unlocked(',', f);
		fput_dec(f, v[i]->ecount, false);
		putc_unlocked(',', f);
		field(f, v[i]->fn);
		putc_unlocked(',', f);
		if (v[i]->file && strpbrk(v[i]->file, ",\"\r\n")) {
			char *src = xasprintf("%s:%d", v[i]->file, v[i]->line);

			field(f, src);
			free(src);
		} else if (v[i]->file) {
			fputs_unlocked(v[i]->file, f);
			putc_unlocked(':', f);
			fput_int(f, v[i]->line);
		}
		putc_unlocked(',', f);
		fput_int(f, v[i]->pid);
		putc_unlocked('\n', f);
	}
	free(v);
	return ferror(f) ? -1 : 0;
}
