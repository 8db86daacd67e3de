// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --report=FILE.md: the report as GitHub-flavoured Markdown, for a CI job's
 * summary ($GITHUB_STEP_SUMMARY, which takes 1 MiB a step).  The
 * diagnoses with their changes and the totals always; then the rows of
 * each table, the most CPU first, as many as fit, taken in turn from the
 * programs, the commands and the subtrees; a line says what was left out.
 */
#include "report/report.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* S as a code span: a fence longer than any run of backquotes in it, its
 * line ends spaces. */
static void put_code(FILE *f, const char *s)
{
	size_t run = 0, longest = 0;

	for (const char *c = s; *c; c++) {
		run = *c == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	for (size_t i = 0; i <= longest; i++)
		fputc('`', f);
	if (s[0] == '`' || (s[0] && s[strlen(s) - 1] == '`'))
		fputc(' ', f);
	for (const char *c = s; *c; c++) {
		if (*c == '\n' || *c == '\r')
			fputc(' ', f);
		else
			fputc(*c, f);
	}
	if (s[0] == '`' || (s[0] && s[strlen(s) - 1] == '`'))
		fputc(' ', f);
	for (size_t i = 0; i <= longest; i++)
		fputc('`', f);
}

/*
 * S as a table cell's code: <code>, every character but letters, digits
 * and a few plain ones as a character reference.  A code span will not do
 * in a table: GFM splits the row at a pipe before it sees the span, and
 * takes a backslash before the backslash of an escaped pipe for an escape
 * of its own (cmark-gfm's table scanner).  The references also keep
 * emphasis and links out of the text, which HTML's is.
 */
static void put_cell_code(FILE *f, const char *s)
{
	fputs("<code>", f);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c < 0x20 || *c == 0x7f)
			fputc(' ', f);
		else if (*c >= 0x80 || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			 (*c >= '0' && *c <= '9') || strchr(" -/=,+%", *c))
			fputc(*c, f);
		else
			fprintf(f, "&#%d;", *c);
	}
	fputs("</code>", f);
}

static void put_shares(FILE *f, const struct cpu_split *s)
{
	double pct[REPORT_COLS];

	report_shares(s, pct);
	for (int c = 0; c < REPORT_COLS; c++)
		if (s->samples)
			fprintf(f, " %.1f %% |", pct[c]);
		else
			fputs(" – |", f);
}

static void put_header(FILE *f, const char *const *tail, size_t ntail)
{
	fputs("| CPU s |", f);
	for (int c = 0; c < REPORT_COLS; c++)
		fprintf(f, " %s |", report_col_names[c]);
	for (size_t i = 0; i < ntail; i++)
		fprintf(f, " %s |", tail[i]);
	fputs("\n|---:|", f);
	for (int c = 0; c < REPORT_COLS; c++)
		fputs("---:|", f);
	for (size_t i = 0; i < ntail; i++)
		fputs(i + 1 < ntail ? "---:|" : ":---|", f);
	fputc('\n', f);
}

/* A table's rows, each rendered on its own, and how many are written. */
struct table {
	char **row;
	size_t *len;
	size_t n, shown;
};

static char *render(void (*put)(FILE *, const void *), const void *item, size_t *len)
{
	char *buf = NULL;
	FILE *f = xopen_memstream(&buf, len);

	put(f, item);
	fclose(f);
	return buf;
}

static void put_command(FILE *f, const void *item)
{
	const struct report_proc *p = item;

	fprintf(f, "| %.3f |", p->cpu_ns / 1e9);
	put_shares(f, &p->split);
	fprintf(f, " %.3f | %" PRIu64 " | %" PRIu64 " | %d | ", report_wall_ns(p) / 1e9, p->tbs,
		p->again_flush + p->again_other, (int)p->pid);
	put_cell_code(f, p->command ? p->command : "?");
	fputs(p->running ? " (running) |\n" : " |\n", f);
}

static void put_program(FILE *f, const void *item)
{
	const struct report_sum *s = item;

	fprintf(f, "| %.3f |", s->t.cpu_ns / 1e9);
	put_shares(f, &s->t.split);
	fprintf(f, " %zu | %" PRIu64 " | %" PRIu64 " | ", s->t.n, s->t.tbs,
		s->t.again_flush + s->t.again_other);
	put_cell_code(f, s->key);
	fputs(" |\n", f);
}

static void put_subtree(FILE *f, const void *item)
{
	const struct report_sum *s = item;

	fprintf(f, "| %.3f |", s->t.cpu_ns / 1e9);
	put_shares(f, &s->t.split);
	fprintf(f, " %zu | %d | ", s->t.n, (int)s->top->pid);
	put_cell_code(f, s->top->command ? s->top->command : "?");
	fputs(" |\n", f);
}

static void table_init(struct table *t, size_t n)
{
	t->row = xcalloc(n + 1, sizeof(*t->row));
	t->len = xcalloc(n + 1, sizeof(*t->len));
	t->n = n;
	t->shown = 0;
}

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->row[i]);
	free(t->row);
	free(t->len);
}

/* The header, the diagnoses and the totals: what is always written. */
static void put_head(FILE *f, const struct report_view *v)
{
	fprintf(f,
		"### qemu-jitbpf report\n\n%zu emulated process%s, %.3f s of CPU (the kernel's), "
		"split by %" PRIu64 " samples.",
		v->all.n, v->all.n == 1 ? "" : "es", v->all.cpu_ns / 1e9, v->all.split.samples);
	if (v->folded)
		fprintf(f, " The %zu that ended first are in the totals only.", v->folded);
	fputs("\n\n", f);
	if (!v->ndiag)
		return;
	fputs("#### Diagnoses\n\n", f);
	for (size_t i = 0; i < v->ndiag; i++) {
		if (!report_diagnosis_first(v, i))
			continue;
		for (size_t k = i; k < v->ndiag; k++)
			if (!strcmp(v->diag[k].id, v->diag[i].id)) {
				fprintf(f, "- **%s**: ", v->diag[k].id);
				put_code(f, v->diag[k].program);
				fprintf(f, ": %s.\n", v->diag[k].evidence);
			}
		fprintf(f, "\n  **Change:** %s.\n\n", v->diag[i].fix);
	}
}

static void put_totals(FILE *f, const struct report_view *v)
{
	const struct cpu_split *s = &v->all.split;
	uint64_t total = cpu_split_total(s);
	bool any = false;

	if (!s->samples)
		return;
	for (int i = 0; i < PART_MAX; i++)
		if (cpu_part_is_helper(i) && s->ns[i]) {
			fprintf(f, "%s %s %.1f %%", any ? "," : "**Helpers:**", cpu_part_name(i),
				100.0 * s->ns[i] / total);
			any = true;
		}
	if (any)
		fputs(".\n\n", f);
	if (s->syscall_ns)
		fprintf(f, "**System calls:** %.1f %% of the CPU.\n\n",
			100.0 * s->syscall_ns / total);
}

static void put_table(FILE *f, const char *title, const char *const *tail, size_t ntail,
		      const struct table *t)
{
	if (!t->n)
		return;
	fprintf(f, "#### %s\n\n", title);
	put_header(f, tail, ntail);
	for (size_t i = 0; i < t->shown; i++)
		fwrite(t->row[i], 1, t->len[i], f);
	if (t->shown < t->n)
		fprintf(f, "| … | %zu more |\n", t->n - t->shown);
	fputc('\n', f);
}

static const char *const cmd_tail[] = {"wall s", "TBs", "again", "PID", "command"};
static const char *const prog_tail[] = {"runs", "TBs", "again", "program"};
static const char *const tree_tail[] = {"procs", "PID", "command"};

/* The whole summary, each table with the rows it shows. */
static void put_all(FILE *f, const struct report_view *v, const struct table t[3], size_t limit)
{
	size_t left = 0;

	put_head(f, v);
	put_table(f, "Commands, the most CPU first", cmd_tail, 5, &t[1]);
	put_table(f, "By program", prog_tail, 4, &t[0]);
	put_table(f, "By subtree (a process and all it ran)", tree_tail, 3, &t[2]);
	put_totals(f, v);
	for (int k = 0; k < 3; k++)
		left += t[k].n - t[k].shown;
	if (left)
		fprintf(f,
			"_%zu rows left out to keep this summary under %zu KiB; "
			"`--report=FILE.json` holds them all._\n",
			left, limit / 1024);
}

void report_write_markdown(const struct report *r, FILE *f, size_t limit)
{
	struct report_view v;
	struct table t[3];
	char *fixed = NULL;
	size_t used;
	FILE *m;
	bool more = true;

	report_view(r, &v);
	table_init(&t[0], v.nprogs);
	table_init(&t[1], v.nrows);
	table_init(&t[2], v.ntrees);
	for (size_t i = 0; i < v.nprogs; i++)
		t[0].row[i] = render(put_program, &v.progs[i], &t[0].len[i]);
	for (size_t i = 0; i < v.nrows; i++)
		t[1].row[i] = render(put_command, v.rows[i], &t[1].len[i]);
	for (size_t i = 0; i < v.ntrees; i++)
		t[2].row[i] = render(put_subtree, &v.trees[i], &t[2].len[i]);
	/* What is written whatever the rows (with no row shown: each table's
	 * "more" line, and the line of what was left out, are in it). */
	m = xopen_memstream(&fixed, &used);
	put_all(m, &v, t, limit);
	fclose(m);
	free(fixed);
	/* Then the rows of the three tables in turn, the most CPU first,
	 * while they fit. */
	while (more) {
		more = false;
		for (int k = 0; k < 3; k++) {
			struct table *tk = &t[k];

			if (tk->shown < tk->n && used + tk->len[tk->shown] <= limit) {
				used += tk->len[tk->shown++];
				more = true;
			}
		}
	}
	put_all(f, &v, t, limit);
	for (int k = 0; k < 3; k++)
		table_free(&t[k]);
	report_view_free(&v);
}
