// SPDX-License-Identifier: GPL-2.0-or-later
#include "coverage/lcov.h"
#include "coverage/sources.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

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

int lcov_write(FILE *f, const struct sources *s)
{
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
		/* (Most of the file: a line each.) */
		for (size_t k = 0; k < sf->nlines; k++) {
			fputs_unlocked("DA:", f);
			fput_int(f, sf->lines[k].line);
			putc_unlocked(',', f);
			fput_dec(f, sf->lines[k].hits, false);
			putc_unlocked('\n', f);
		}
		put_line(f, "LF:", sf->nlines, NULL);
		put_line(f, "LH:", sf->lines_hit, NULL);
		fputs_unlocked("end_of_record\n", f);
	}
	return ferror(f) ? -1 : 0;
}
