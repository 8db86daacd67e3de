// SPDX-License-Identifier: GPL-2.0-or-later
#include "coverage/hotblocks.h"
#include "coverage/coverage.h"
#include "util/util.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A row, by its key: most executions first. */
struct ranked {
	uint64_t key; /* UINT64_MAX - ecount */
	const struct cov_hot *h;
};

static int ranked_cmp(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->h->pid != y->h->pid)
		return x->h->pid < y->h->pid ? -1 : 1;
	return (x->h->pc > y->h->pc) - (x->h->pc < y->h->pc);
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
	struct ranked *r = xmalloc((c->nhot ? c->nhot : 1) * sizeof(*r));

	for (size_t i = 0; i < c->nhot; i++)
		r[i] = (struct ranked){UINT64_MAX - c->hot[i].ecount, &c->hot[i]};
	sort_by_key(r, c->nhot, sizeof(*r), offsetof(struct ranked, key), ranked_cmp);
	fputs("pc,tcount,icount,ecount,function,source,process\n", f);
	for (size_t i = 0; i < c->nhot; i++) {
		const struct cov_hot *h = r[i].h;

		fputs_unlocked("0x", f);
		fput_hex(f, h->pc);
		putc_unlocked(',', f);
		fput_dec(f, h->tcount, false);
		putc_unlocked(',', f);
		fput_dec(f, h->icount, false);
		putc_unlocked(',', f);
		fput_dec(f, h->ecount, false);
		putc_unlocked(',', f);
		field(f, h->fn);
		putc_unlocked(',', f);
		if (h->file && strpbrk(h->file, ",\"\r\n")) {
			char *src = xasprintf("%s:%d", h->file, h->line);

			field(f, src);
			free(src);
		} else if (h->file) {
			fputs_unlocked(h->file, f);
			putc_unlocked(':', f);
			fput_int(f, h->line);
		}
		putc_unlocked(',', f);
		fput_int(f, h->pid);
		putc_unlocked('\n', f);
	}
	free(r);
	return ferror(f) ? -1 : 0;
}
