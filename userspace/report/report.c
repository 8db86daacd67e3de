// SPDX-License-Identifier: GPL-2.0-or-later
#include "report/report.h"
#include "report/diagnose.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The columns of the tables: the parts people ask about first. */
enum col { COL_GUEST, COL_TRANSLATE, COL_LOOKUP, COL_HELPERS, COL_KERNEL, COL_QEMU, COL_MAX };
_Static_assert(COL_MAX == REPORT_COLS, "the report's columns");

const char *const report_col_names[REPORT_COLS] = {"guest",  "transl", "lookup",
						   "helper", "kernel", "qemu"};

static enum col col_of(enum cpu_part p)
{
	switch (p) {
	case PART_GUEST:
		return COL_GUEST;
	case PART_TRANSLATE:
		return COL_TRANSLATE;
	case PART_LOOKUP:
		return COL_LOOKUP;
	case PART_KERNEL:
		return COL_KERNEL;
	case PART_QEMU:
		return COL_QEMU;
	default:
		return COL_HELPERS;
	}
}

/* Rows kept once ended, unless the report says otherwise. */
#define KEEP_DEFAULT 4096
/* Parents followed at most (a loop of reused pids ends there). */
#define DEPTH_MAX 256

static void index_row(struct report *r, struct report_proc *p)
{
	*u64map_at(&r->at, (uint64_t)p->pid) = p->at + 1;
}

struct report_proc *report_add(struct report *r, pid_t pid)
{
	struct report_proc *p = xcalloc(1, sizeof(*p));
	uint64_t at = u64map_get(&r->at, (uint64_t)pid);

	p->pid = pid;
	p->prev = at ? r->v[at - 1] : NULL;
	grow(&r->v, &r->cap, r->n + 1, sizeof(*r->v));
	p->at = r->n;
	r->v[r->n++] = p;
	index_row(r, p);
	return p;
}

void report_set_program(struct report *r, struct report_proc *p, const char *program)
{
	p->program = strtab_add(&r->names, program);
}

struct report_proc *report_parent(const struct report *r, const struct report_proc *p)
{
	uint64_t at = u64map_get(&r->at, (uint64_t)p->ppid);
	struct report_proc *up = at ? r->v[at - 1] : NULL;

	/* The parent's program that ran when P began: an exec of the
	 * parent's since does not take its children. */
	while (up && p->start_ns && up->start_ns > p->start_ns && up->prev)
		up = up->prev;
	return up && up != p ? up : NULL;
}

static void tally_row(struct report_tally *t, const struct report_proc *p)
{
	t->n++;
	t->cpu_ns += p->cpu_ns;
	cpu_split_add(&t->split, &p->split);
	t->tbs += p->tbs;
	t->flushes += p->flushes;
	t->again_flush += p->again_flush;
	t->again_other += p->again_other;
}

static void tally_add(struct report_tally *t, const struct report_tally *from)
{
	t->n += from->n;
	t->cpu_ns += from->cpu_ns;
	cpu_split_add(&t->split, &from->split);
	t->tbs += from->tbs;
	t->flushes += from->flushes;
	t->again_flush += from->again_flush;
	t->again_other += from->again_other;
}

static struct report_tally *prog_tally(struct report *r, const char *program)
{
	uint64_t *at = u64map_at(&r->prog_at, (uint64_t)(uintptr_t)program);

	if (!*at) {
		grow(&r->progs, &r->progs_cap, r->nprogs + 1, sizeof(*r->progs));
		r->progs[r->nprogs] = (struct report_prog){.program = program};
		*at = ++r->nprogs;
	}
	return &r->progs[*at - 1].t;
}

/* Fold P into its program's total and its ancestors' (P has no rows
 * below it). */
static void fold(struct report *r, struct report_proc *p)
{
	struct report_proc *up = p;

	tally_row(prog_tally(r, p->program ? p->program : strtab_add(&r->names, "?")), p);
	for (size_t depth = 0; depth < DEPTH_MAX && (up = report_parent(r, up)); depth++)
		tally_row(&up->below, p);
	free(p->command);
	free(p->parent_name);
	cpu_phases_free(&p->phases);
	r->folded++;
	r->nfinal--;
}

/* Fold the oldest ended rows that have none below them, down to three
 * quarters of what is kept; compact the rows and their index. */
static void fold_oldest(struct report *r)
{
	size_t want = r->nfinal - r->keep * 3 / 4, kept = 0;

	for (size_t i = 0; i < r->n; i++)
		r->v[i]->has_kids = false;
	for (size_t i = 0; i < r->n; i++) {
		struct report_proc *up = report_parent(r, r->v[i]);

		if (up)
			up->has_kids = true;
	}
	for (size_t i = 0; i < r->n && want; i++) {
		struct report_proc *p = r->v[i];

		if (!p->final || p->has_kids)
			continue;
		/* (Freed after the pass: the rows' parents are found
		 * through it still.) */
		fold(r, p);
		p->gone = true;
		want--;
	}
	u64map_clear(&r->at);
	for (size_t i = 0; i < r->n; i++) {
		struct report_proc *p = r->v[i];
		uint64_t at;

		if (p->gone) {
			free(p);
			continue;
		}
		at = u64map_get(&r->at, (uint64_t)p->pid);
		p->prev = at ? r->v[at - 1] : NULL;
		p->at = kept;
		r->v[kept++] = p;
		index_row(r, p);
	}
	r->n = kept;
}

void report_final(struct report *r, struct report_proc *p)
{
	if (p->final)
		return;
	p->final = true;
	r->nfinal++;
	if (!r->keep)
		r->keep = KEEP_DEFAULT;
	if (r->nfinal > r->keep)
		fold_oldest(r);
}

uint64_t report_wall_ns(const struct report_proc *p)
{
	return p->start_ns && p->end_ns > p->start_ns ? p->end_ns - p->start_ns : 0;
}

/* By program: what was folded, and the rows. */
static struct report_sum *by_program(const struct report *r, size_t *n)
{
	struct report_sum *v = xcalloc(r->n + r->nprogs + 1, sizeof(*v));
	struct u64map at = {0};

	*n = 0;
	for (size_t i = 0; i < r->nprogs; i++) {
		v[*n].key = r->progs[i].program;
		v[*n].t = r->progs[i].t;
		*u64map_at(&at, (uint64_t)(uintptr_t)v[*n].key) = *n + 1;
		++*n;
	}
	for (size_t i = 0; i < r->n; i++) {
		const char *key = r->v[i]->program ? r->v[i]->program : "?";
		uint64_t *k = u64map_at(&at, (uint64_t)(uintptr_t)key);

		if (!*k) {
			v[*n].key = key;
			*k = ++*n;
		}
		tally_row(&v[*k - 1].t, r->v[i]);
	}
	u64map_free(&at);
	return v;
}

/* Each row that has rows below it (kept or folded): it and all it ran. */
static struct report_sum *by_subtree(const struct report *r, size_t *n)
{
	struct report_sum *all = xcalloc(r->n + 1, sizeof(*all)), *v;

	for (size_t i = 0; i < r->n; i++) {
		const struct report_proc *p = r->v[i], *up = p;

		all[i].top = p;
		tally_row(&all[i].t, p);
		tally_add(&all[i].t, &p->below);
		for (size_t depth = 0; depth < DEPTH_MAX && (up = report_parent(r, up)); depth++)
			tally_row(&all[up->at].t, p);
	}
	v = all;
	*n = 0;
	for (size_t i = 0; i < r->n; i++)
		if (all[i].t.n > 1)
			v[(*n)++] = all[i];
	return v;
}

#define DIAG_MAX 4

/* The diagnoses of each program, into *N (the caller frees them). */
static struct diagnosis *diagnoses(const struct report_sum *progs, size_t nprogs, size_t *n)
{
	struct diagnosis *d = xcalloc(nprogs * DIAG_MAX + 1, sizeof(*d));
	uint64_t run_cpu_ns = 0;

	for (size_t i = 0; i < nprogs; i++)
		run_cpu_ns += progs[i].t.cpu_ns;
	*n = 0;
	for (size_t i = 0; i < nprogs; i++) {
		struct program_sum p = {
			.program = progs[i].key,
			.runs = progs[i].t.n,
			.cpu_ns = progs[i].t.cpu_ns,
			.run_cpu_ns = run_cpu_ns,
			.tbs = progs[i].t.tbs,
			.flushes = progs[i].t.flushes,
			.again_flush = progs[i].t.again_flush,
			.again_other = progs[i].t.again_other,
			.split = progs[i].t.split,
		};

		*n += diagnose_program(&p, d + *n, DIAG_MAX);
	}
	return d;
}

static int by_cpu(const void *a, const void *b)
{
	const struct report_sum *x = a, *y = b;

	return x->t.cpu_ns < y->t.cpu_ns ? 1 : x->t.cpu_ns > y->t.cpu_ns ? -1 : 0;
}

static int rows_by_cpu(const void *a, const void *b)
{
	const struct report_proc *x = *(const struct report_proc *const *)a,
				 *y = *(const struct report_proc *const *)b;

	return x->cpu_ns < y->cpu_ns ? 1 : x->cpu_ns > y->cpu_ns ? -1 : 0;
}

void report_shares(const struct cpu_split *s, double pct[REPORT_COLS])
{
	uint64_t total = cpu_split_total(s);

	memset(pct, 0, COL_MAX * sizeof(*pct));
	for (int i = 0; total && i < PART_MAX; i++)
		pct[col_of(i)] += 100.0 * s->ns[i] / total;
}

static void put_shares(FILE *f, const struct cpu_split *s)
{
	double pct[COL_MAX];

	report_shares(s, pct);
	for (int c = 0; c < COL_MAX; c++)
		if (s->samples)
			fprintf(f, " %6.1f%%", pct[c]);
		else
			fprintf(f, " %7s", "-");
}

static void put_header(FILE *f, const char *first)
{
	fprintf(f, "  %8s", first);
	for (int c = 0; c < COL_MAX; c++)
		fprintf(f, " %7s", report_col_names[c]);
}

/* "Helpers: ..." or "System calls: ...": the top items of T, the most first. */
static void put_items(FILE *f, const char *label, const struct split_item t[SPLIT_TOP],
		      uint64_t total)
{
	struct split_item v[SPLIT_TOP];
	size_t n = split_items_sorted(t, v);

	for (size_t i = 0; i < n && i < 5; i++)
		fprintf(f, "%s %s %.1f%%", i ? "," : label, v[i].name, 100.0 * v[i].ns / total);
	if (n)
		fputc('\n', f);
}

void report_view(const struct report *r, struct report_view *v)
{
	memset(v, 0, sizeof(*v));
	v->progs = by_program(r, &v->nprogs);
	for (size_t i = 0; i < v->nprogs; i++)
		tally_add(&v->all, &v->progs[i].t);
	qsort(v->progs, v->nprogs, sizeof(*v->progs), by_cpu);
	v->rows = xcalloc(r->n ? r->n : 1, sizeof(*v->rows));
	for (size_t i = 0; i < r->n; i++)
		v->rows[i] = r->v[i];
	v->nrows = r->n;
	qsort(v->rows, v->nrows, sizeof(*v->rows), rows_by_cpu);
	v->trees = by_subtree(r, &v->ntrees);
	qsort(v->trees, v->ntrees, sizeof(*v->trees), by_cpu);
	v->diag = diagnoses(v->progs, v->nprogs, &v->ndiag);
	v->folded = r->folded;
}

void report_view_free(struct report_view *v)
{
	free(v->progs);
	free(v->rows);
	free(v->trees);
	free(v->diag);
}

bool report_diagnosis_first(const struct report_view *v, size_t i)
{
	for (size_t k = 0; k < i; k++)
		if (!strcmp(v->diag[k].id, v->diag[i].id))
			return false;
	return true;
}

void report_write_text(const struct report *r, FILE *f)
{
	struct report_view v;
	const struct report_tally *all = &v.all;

	report_view(r, &v);
	fprintf(f,
		"qemu-jitbpf report: %zu process%s, %.3f s of CPU (the kernel's), split by %" PRIu64
		" samples\n",
		all->n, all->n == 1 ? "" : "es", all->cpu_ns / 1e9, all->split.samples);
	if (v.folded)
		fprintf(f, "(the %zu that ended first are in the totals below only)\n", v.folded);
	put_header(f, "CPU s");
	fprintf(f, " %8s %8s %7s %7s %7s  %s\n", "wall s", "TBs", "again", "flushes", "PID",
		"COMMAND");
	for (size_t i = 0; i < v.nrows; i++) {
		const struct report_proc *p = v.rows[i];

		fprintf(f, "  %8.3f", p->cpu_ns / 1e9);
		put_shares(f, &p->split);
		fprintf(f, " %8.3f %8" PRIu64 " %7" PRIu64 " %7" PRIu64 " %7d  %s%s\n",
			report_wall_ns(p) / 1e9, p->tbs, p->again_flush + p->again_other,
			p->flushes, (int)p->pid, p->command ? p->command : "?",
			p->running ? " (running)" : "");
	}
	fprintf(f, "By program:\n");
	put_header(f, "CPU s");
	fprintf(f, " %6s %8s %7s  %s\n", "runs", "TBs", "again", "PROGRAM");
	for (size_t i = 0; i < v.nprogs; i++) {
		const struct report_tally *t = &v.progs[i].t;

		fprintf(f, "  %8.3f", t->cpu_ns / 1e9);
		put_shares(f, &t->split);
		fprintf(f, " %6zu %8" PRIu64 " %7" PRIu64 "  %s\n", t->n, t->tbs,
			t->again_flush + t->again_other, v.progs[i].key);
	}
	if (v.ntrees) {
		fprintf(f, "By subtree (a process and all it ran):\n");
		put_header(f, "CPU s");
		fprintf(f, " %6s %7s  %s\n", "procs", "PID", "COMMAND");
		for (size_t i = 0; i < v.ntrees; i++) {
			fprintf(f, "  %8.3f", v.trees[i].t.cpu_ns / 1e9);
			put_shares(f, &v.trees[i].t.split);
			fprintf(f, " %6zu %7d  %s\n", v.trees[i].t.n, (int)v.trees[i].top->pid,
				v.trees[i].top->command ? v.trees[i].top->command : "?");
		}
	}
	/* The helpers by family, where any ran. */
	if (all->split.samples) {
		uint64_t total = cpu_split_total(&all->split);
		bool any = false;

		for (int i = 0; i < PART_MAX; i++)
			if (cpu_part_is_helper(i) && all->split.ns[i]) {
				fprintf(f, "%s %s %.1f%%", any ? "," : "Helpers:", cpu_part_name(i),
					100.0 * all->split.ns[i] / total);
				any = true;
			}
		if (any)
			fputc('\n', f);
		put_items(f, "  most in:", all->split.fn, total);
		if (all->split.syscall_ns)
			fprintf(f, "System calls: %.1f%% of the CPU\n",
				100.0 * all->split.syscall_ns / total);
		put_items(f, "  most in:", all->split.sys, total);
	}
	if (v.ndiag)
		fprintf(f, "Diagnoses:\n");
	/* Each kind's programs, then what to change, once. */
	for (size_t i = 0; i < v.ndiag; i++) {
		if (!report_diagnosis_first(&v, i))
			continue;
		for (size_t k = i; k < v.ndiag; k++)
			if (!strcmp(v.diag[k].id, v.diag[i].id))
				fprintf(f, "  %s: %s: %s.\n", v.diag[k].id, v.diag[k].program,
					v.diag[k].evidence);
		fprintf(f, "    Change: %s.\n", v.diag[i].fix);
	}
	report_view_free(&v);
}

static void put_json_code(FILE *f, uint64_t tbs, uint64_t flushes, uint64_t again_flush,
			  uint64_t again_other)
{
	fprintf(f,
		"\"tbs\": %" PRIu64 ", \"flushes\": %" PRIu64
		", \"tbs_again\": {\"after_flush\": %" PRIu64 ", \"other\": %" PRIu64 "}, ",
		tbs, flushes, again_flush, again_other);
}

/* KEY: {NAME: ns, ...}, the most first. */
static void put_json_items(FILE *f, const char *key, const struct split_item t[SPLIT_TOP])
{
	struct split_item v[SPLIT_TOP];
	size_t n = split_items_sorted(t, v);

	fprintf(f, ", \"%s\": {", key);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ", " : "", f);
		json_put_string(f, v[i].name);
		fprintf(f, ": %" PRIu64, v[i].ns);
	}
	fputc('}', f);
}

static void put_json_split(FILE *f, const struct cpu_split *s)
{
	fprintf(f, "\"samples\": %" PRIu64 ", \"sampled_ns\": {", s->samples);
	for (int i = 0; i < PART_MAX; i++)
		fprintf(f, "%s\"%s\": %" PRIu64, i ? ", " : "", cpu_part_name(i), s->ns[i]);
	fprintf(f, "}, \"syscalls_ns\": %" PRIu64 ", \"syscalls_kernel_ns\": %" PRIu64,
		s->syscall_ns, s->syscall_kernel_ns);
	put_json_items(f, "syscalls", s->sys);
	put_json_items(f, "helpers", s->fn);
}

void report_write_json(const struct report *r, FILE *f)
{
	struct report_sum *progs, *trees;
	size_t nprogs, ntrees;

	fprintf(f, "{\"folded\": %zu, \"processes\": [", r->folded);
	for (size_t i = 0; i < r->n; i++) {
		const struct report_proc *p = r->v[i], *up;
		size_t depth = 0;

		fprintf(f, "%s\n  {\"pid\": %d, \"ppid\": %d, \"parents\": [", i ? "," : "",
			(int)p->pid, (int)p->ppid);
		for (up = report_parent(r, p); up && depth++ < DEPTH_MAX; up = report_parent(r, up))
			fprintf(f, "%s%d", depth > 1 ? ", " : "", (int)up->pid);
		fprintf(f, "], \"parent_name\": ");
		json_put_string(f, p->parent_name ? p->parent_name : "");
		fprintf(f, ", \"command\": ");
		json_put_string(f, p->command ? p->command : "");
		fprintf(f, ", \"program\": ");
		json_put_string(f, p->program ? p->program : "");
		fprintf(f, ", \"running\": %s, \"wall_ns\": %" PRIu64 ", \"cpu_ns\": %" PRIu64 ", ",
			p->running ? "true" : "false", report_wall_ns(p), p->cpu_ns);
		put_json_code(f, p->tbs, p->flushes, p->again_flush, p->again_other);
		put_json_split(f, &p->split);
		fputc('}', f);
	}
	progs = by_program(r, &nprogs);
	fprintf(f, "\n], \"programs\": [");
	for (size_t i = 0; i < nprogs; i++) {
		fprintf(f, "%s\n  {\"program\": ", i ? "," : "");
		json_put_string(f, progs[i].key);
		fprintf(f, ", \"runs\": %zu, \"cpu_ns\": %" PRIu64 ", ", progs[i].t.n,
			progs[i].t.cpu_ns);
		put_json_code(f, progs[i].t.tbs, progs[i].t.flushes, progs[i].t.again_flush,
			      progs[i].t.again_other);
		put_json_split(f, &progs[i].t.split);
		fputc('}', f);
	}
	trees = by_subtree(r, &ntrees);
	fprintf(f, "\n], \"subtrees\": [");
	for (size_t i = 0; i < ntrees; i++) {
		fprintf(f, "%s\n  {\"pid\": %d, \"command\": ", i ? "," : "",
			(int)trees[i].top->pid);
		json_put_string(f, trees[i].top->command ? trees[i].top->command : "");
		fprintf(f, ", \"processes\": %zu, \"cpu_ns\": %" PRIu64 ", ", trees[i].t.n,
			trees[i].t.cpu_ns);
		put_json_code(f, trees[i].t.tbs, trees[i].t.flushes, trees[i].t.again_flush,
			      trees[i].t.again_other);
		put_json_split(f, &trees[i].t.split);
		fputc('}', f);
	}
	{
		size_t nd;
		struct diagnosis *d = diagnoses(progs, nprogs, &nd);

		fprintf(f, "\n], \"diagnoses\": [");
		for (size_t i = 0; i < nd; i++) {
			fprintf(f, "%s\n  {\"id\": ", i ? "," : "");
			json_put_string(f, d[i].id);
			fprintf(f, ", \"program\": ");
			json_put_string(f, d[i].program);
			fprintf(f, ", \"evidence\": ");
			json_put_string(f, d[i].evidence);
			fprintf(f, ", \"change\": ");
			json_put_string(f, d[i].fix);
			fputc('}', f);
		}
		free(d);
	}
	fprintf(f, "\n]}\n");
	free(progs);
	free(trees);
}

void report_free(struct report *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->v[i]->command);
		free(r->v[i]->parent_name);
		cpu_phases_free(&r->v[i]->phases);
		free(r->v[i]);
	}
	free(r->v);
	free(r->progs);
	u64map_free(&r->at);
	u64map_free(&r->prog_at);
	strtab_free(&r->names);
	*r = (struct report){0};
}
