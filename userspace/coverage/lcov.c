// SPDX-License-Identifier: GPL-2.0-or-later
#include "coverage/lcov.h"
#include "coverage/sources.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdio.h>

int lcov_write(FILE *f, const struct sources *s)
{
	fputs("TN:\n", f);
	for (size_t i = 0; i < s->nfiles; i++) {
		const struct src_file *sf = &s->files[i];

		fprintf(f, "SF:%s\n", sf->path);
		for (size_t k = 0; k < sf->nfns; k++)
			fprintf(f, "FN:%d,%s\n", sf->fns[k].line, sf->fns[k].name);
		for (size_t k = 0; k < sf->nfns; k++)
			fprintf(f, "FNDA:%" PRIu64 ",%s\n", sf->fns[k].hits, sf->fns[k].name);
		fprintf(f, "FNF:%zu\nFNH:%" PRIu64 "\n", sf->nfns, sf->fns_hit);
		/* (Most of the file: a line each.) */
		for (size_t k = 0; k < sf->nlines; k++) {
			fputs_unlocked("DA:", f);
			fput_int(f, sf->lines[k].line);
			putc_unlocked(',', f);
			fput_dec(f, sf->lines[k].hits, false);
			putc_unlocked('\n', f);
		}
		fprintf(f, "LF:%zu\nLH:%" PRIu64 "\nend_of_record\n", sf->nlines, sf->lines_hit);
	}
	return ferror(f) ? -1 : 0;
}
