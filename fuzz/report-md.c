// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --report=FILE.md on any rows: up to 3000 processes whose command lines
 * and program names hold any bytes (pipes, backquotes, line ends), parents
 * among them, written under a limit from 2 KiB to 1 MiB.  The summary must
 * fit the limit; each table line must have its header's cells (a pipe in a
 * command is escaped, a line end is not one), and the rows shown with
 * those said to be left out must be every row.
 */
#include "fuzz.h"
#include "report/report.h"

#include <stdbool.h>

static char *text_of(struct fuzz_in *in, size_t max)
{
	size_t len = fuzz_u64_n(in, 2) % (max + 1), i;
	char *s = malloc(len + 1);

	for (i = 0; i < len; i++) {
		uint8_t c = (uint8_t)fuzz_u64_n(in, 1);

		/* The bytes that matter most, often; never a NUL inside. */
		s[i] = c < 32 ? "|`\n\r\\ *_<>&"[c % 12] : c ? (char)c : 'x';
	}
	s[len] = 0;
	return s;
}

/* Unescaped pipes of a table line. */
static size_t cells(const char *line, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		if (line[i] == '\\' && i + 1 < len) {
			i++;
			continue;
		}
		n += line[i] == '|';
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data, size};
	struct report r = {0};
	struct report_view v;
	size_t nrows = fuzz_u64_n(&in, 2) % 3001;
	size_t limit = 2048 + fuzz_u64_n(&in, 3) % (1024 * 1024 - 2048 + 1);
	size_t len = 0, shown = 0, left = 0, header = 0, total;
	char *out = NULL, *line, *end;
	FILE *f;

	for (size_t i = 0; i < nrows; i++) {
		struct report_proc *p = report_add(&r, (pid_t)(i + 1));
		char *program = text_of(&in, 40);

		p->ppid = i ? (pid_t)(fuzz_u64_n(&in, 2) % i) : 0;
		p->command = text_of(&in, 400);
		report_set_program(&r, p, program);
		free(program);
		p->cpu_ns = fuzz_u64_n(&in, 5);
		p->start_ns = fuzz_u64_n(&in, 4);
		p->end_ns = p->start_ns + fuzz_u64_n(&in, 4);
		p->tbs = fuzz_u64_n(&in, 3);
		p->running = fuzz_u64_n(&in, 1) & 1;
	}
	report_view(&r, &v);
	total = v.nrows + v.nprogs + v.ntrees;
	report_view_free(&v);
	f = open_memstream(&out, &len);
	report_write_markdown(&r, f, limit);
	fclose(f);
	if (len > limit)
		abort();
	for (line = out; line < out + len; line = end + 1) {
		size_t n;

		end = memchr(line, '\n', (size_t)(out + len - line));
		if (!end)
			end = out + len;
		n = (size_t)(end - line);
		if (!strncmp(line, "| CPU s |", 9)) {
			header = cells(line, n);
		} else if (!strncmp(line, "| … | ", strlen("| … | "))) {
			left += strtoul(line + strlen("| … | "), NULL, 10);
		} else if (n && line[0] == '|' && strncmp(line, "|---", 4)) {
			if (cells(line, n) != header)
				abort();
			shown++;
		}
	}
	if (shown + left != total)
		abort();
	free(out);
	report_free(&r);
	return 0;
}
