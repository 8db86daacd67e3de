// SPDX-License-Identifier: GPL-2.0-or-later
#include "coverage/lcov.h"
#include "coverage/sources.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* KEY, V, then ",NAME" if NAME: a line, without printf's parsing (a
 * tracefile has a line per function and two per file). */
static void put_line(FILE *f, const char *key, uint64_t v, const char *name)
{
	fputs_unlocked(key, f);
	fput_dec(f, v, false);
	if (name) {
		putc_unlocked(',', f);
		fputs_unlocked(name, f);
	}
	putc_unlocked('\n', f);
}

/*
 * The DA lines of SF, most of a tracefile (a line per source line): made
 * in BUF (grown as needed, *CAP bytes) and written at once, not through
 * stdio's calls a field at a time.
 */
static void put_lines(FILE *f, const struct src_file *sf, char **buf, size_t *cap)
{
	char *p;

	/* "DA:" -2147483648 "," 18446744073709551615 "\n" */
	grow(buf, cap, sf->nlines * 36 + 1, 1);
	p = *buf;
	for (size_t k = 0; k < sf->nlines; k++) {
		memcpy(p, "DA:", 3);
		p = sput_int(p + 3, sf->lines[k].line);
		*p++ = ',';
		p = sput_dec(p, sf->lines[k].hits, false);
		*p++ = '\n';
	}
	fwrite_unlocked(*buf, 1, (size_t)(p - *buf), f);
}

int lcov_write(FILE *f, const struct sources *s)
{
	char *buf = NULL;
	size_t cap = 0;

	fputs("TN:\n", f);
	for (size_t i = 0; i < s->nfiles; i++) {
		const struct src_file *sf = &s->files[i];

		fputs_unlocked("SF:", f);
		fputs_unlocked(sf->path, f);
		putc_unlocked('\n', f);
		for (size_t k = 0; k < sf->nfns; k++) {
			fputs_unlocked("FN:", f);
			fput_int(f, sf->fns[k].line);
			putc_unlocked(',', f);
			fputs_unlocked(sf->fns[k].name, f);
			putc_unlocked('\n', f);
		}
		for (size_t k = 0; k < sf->nfns; k++)
			put_line(f, "FNDA:", sf->fns[k].hits, sf->fns[k].name);
		put_line(f, "FNF:", sf->nfns, NULL);
		put_line(f, "FNH:", sf->fns_hit, NULL);
		put_lines(f, sf, &buf, &cap);
		put_line(f, "LF:", sf->nlines, NULL);
		put_line(f, "LH:", sf->lines_hit, NULL);
		fputs_unlocked("end_of_record\n", f);
	}
	free(buf);
	return ferror(f) ? -1 : 0;
}
