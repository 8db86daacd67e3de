// SPDX-License-Identifier: GPL-2.0-or-later
#include "coverage/hotblocks.h"
#include "coverage/coverage.h"
#include "util/util.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A row, by a key of its. */
struct ranked {
	uint64_t key;
	const struct cov_hot *h;
};

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

	/* Most executions first, then by process and pc: stable radix
	 * sorts by each key, the last first (a qsort of 50 000 rows, most
	 * of them run once, took 7 ms). */
	for (size_t i = 0; i < c->nhot; i++)
		r[i] = (struct ranked){c->hot[i].pc, &c->hot[i]};
	sort_by_key(r, c->nhot, sizeof(*r), offsetof(struct ranked, key), NULL);
	for (size_t i = 0; i < c->nhot; i++)
		r[i].key = (uint32_t)r[i].h->pid;
	sort_by_key(r, c->nhot, sizeof(*r), offsetof(struct ranked, key), NULL);
	for (size_t i = 0; i < c->nhot; i++)
		r[i].key = UINT64_MAX - r[i].h->ecount;
	sort_by_key(r, c->nhot, sizeof(*r), offsetof(struct ranked, key), NULL);
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
