// SPDX-License-Identifier: GPL-2.0-or-later
#include "profiler/report.h"
#include "profiler/diagnose.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The columns of the tables: the parts people ask about first. */
enum col { COL_GUEST, COL_TRANSLATE, COL_LOOKUP, COL_HELPERS, COL_KERNEL, COL_QEMU, COL_MAX };

static const char *const col_names[COL_MAX] = {"guest",	 "transl", "lookup",
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

struct report_proc *report_add(struct report *r, pid_t pid)
{
	struct report_proc *p = xcalloc(1, sizeof(*p));

	p->pid = pid;
	grow(&r->v, &r->cap, r->n + 1, sizeof(*r->v));
	r->v[r->n++] = p;
	return p;
}

static const struct report_proc *find(const struct report *r, pid_t pid)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i]->pid == pid)
			return r->v[i];
	return NULL;
}

static uint64_t wall_ns(const struct report_proc *p)
{
	return p->start_ns && p->end_ns > p->start_ns ? p->end_ns - p->start_ns : 0;
}

/* A total: its CPU, and its sampled split. */
struct sum {
	const char *key;	       /* a program's name */
	const struct report_proc *top; /* a subtree's root */
	uint64_t cpu_ns;
	size_t n;
	struct cpu_split split;
	uint64_t tbs, flushes;
};

static void sum_add(struct sum *s, const struct report_proc *p)
{
	s->cpu_ns += p->cpu_ns;
	s->n++;
	s->tbs += p->tbs;
	s->flushes += p->flushes;
	cpu_split_add(&s->split, &p->split);
}

/* By program, in the order of first run. */
static struct sum *by_program(const struct report *r, size_t *n)
{
	struct sum *v = xcalloc(r->n ? r->n : 1, sizeof(*v));

	*n = 0;
	for (size_t i = 0; i < r->n; i++) {
		const char *key = r->v[i]->program ? r->v[i]->program : "?";
		size_t k = 0;

		while (k < *n && strcmp(v[k].key, key))
			k++;
		if (k == *n)
			v[(*n)++].key = key;
		sum_add(&v[k], r->v[i]);
	}
	return v;
}

/* Is A an ancestor of (or) B, by the rows' parents? */
static bool under(const struct report *r, const struct report_proc *a, const struct report_proc *b)
{
	for (size_t depth = 0; b && depth <= r->n; depth++) {
		if (b == a)
			return true;
		b = find(r, b->ppid);
	}
	return false;
}

/* Each row that has rows below it: it and all it ran. */
static struct sum *by_subtree(const struct report *r, size_t *n)
{
	struct sum *v = xcalloc(r->n ? r->n : 1, sizeof(*v));

	*n = 0;
	for (size_t i = 0; i < r->n; i++) {
		struct sum s = {.top = r->v[i]};

		for (size_t j = 0; j < r->n; j++)
			if (under(r, r->v[i], r->v[j]))
				sum_add(&s, r->v[j]);
		if (s.n > 1)
			v[(*n)++] = s;
	}
	return v;
}

#define DIAG_MAX 4

/* The diagnoses of each program, into *N (the caller frees them). */
static struct diagnosis *diagnoses(const struct sum *progs, size_t nprogs, size_t *n)
{
	struct diagnosis *d = xcalloc(nprogs * DIAG_MAX + 1, sizeof(*d));

	*n = 0;
	for (size_t i = 0; i < nprogs; i++) {
		struct program_sum p = {
			.program = progs[i].key,
			.runs = progs[i].n,
			.cpu_ns = progs[i].cpu_ns,
			.tbs = progs[i].tbs,
			.flushes = progs[i].flushes,
			.split = progs[i].split,
		};

		*n += diagnose_program(&p, d + *n, DIAG_MAX);
	}
	return d;
}

static int by_cpu(const void *a, const void *b)
{
	const struct sum *x = a, *y = b;

	return x->cpu_ns < y->cpu_ns ? 1 : x->cpu_ns > y->cpu_ns ? -1 : 0;
}

static int rows_by_cpu(const void *a, const void *b)
{
	const struct report_proc *x = *(const struct report_proc *const *)a,
				 *y = *(const struct report_proc *const *)b;

	return x->cpu_ns < y->cpu_ns ? 1 : x->cpu_ns > y->cpu_ns ? -1 : 0;
}

/* The columns' shares of a split, in per cent. */
static void shares(const struct cpu_split *s, double pct[COL_MAX])
{
	uint64_t total = cpu_split_total(s);

	memset(pct, 0, COL_MAX * sizeof(*pct));
	for (int i = 0; total && i < PART_MAX; i++)
		pct[col_of(i)] += 100.0 * s->ns[i] / total;
}

static void put_shares(FILE *f, const struct cpu_split *s)
{
	double pct[COL_MAX];

	shares(s, pct);
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
		fprintf(f, " %7s", col_names[c]);
}

void report_write_text(const struct report *r, FILE *f)
{
	struct report_proc **rows = xcalloc(r->n ? r->n : 1, sizeof(*rows));
	struct sum all = {0}, *progs, *trees;
	size_t nprogs, ntrees;

	for (size_t i = 0; i < r->n; i++) {
		rows[i] = r->v[i];
		sum_add(&all, r->v[i]);
	}
	qsort(rows, r->n, sizeof(*rows), rows_by_cpu);
	fprintf(f,
		"qemu-jitbpf report: %zu process%s, %.3f s of CPU (the kernel's), split by %" PRIu64
		" samples\n",
		r->n, r->n == 1 ? "" : "es", all.cpu_ns / 1e9, all.split.samples);
	put_header(f, "CPU s");
	fprintf(f, " %8s %8s %7s %7s  %s\n", "wall s", "TBs", "flushes", "PID", "COMMAND");
	for (size_t i = 0; i < r->n; i++) {
		const struct report_proc *p = rows[i];

		fprintf(f, "  %8.3f", p->cpu_ns / 1e9);
		put_shares(f, &p->split);
		fprintf(f, " %8.3f %8" PRIu64 " %7" PRIu64 " %7d  %s%s\n", wall_ns(p) / 1e9, p->tbs,
			p->flushes, (int)p->pid, p->command ? p->command : "?",
			p->running ? " (running)" : "");
	}
	progs = by_program(r, &nprogs);
	qsort(progs, nprogs, sizeof(*progs), by_cpu);
	fprintf(f, "By program:\n");
	put_header(f, "CPU s");
	fprintf(f, " %6s  %s\n", "runs", "PROGRAM");
	for (size_t i = 0; i < nprogs; i++) {
		fprintf(f, "  %8.3f", progs[i].cpu_ns / 1e9);
		put_shares(f, &progs[i].split);
		fprintf(f, " %6zu  %s\n", progs[i].n, progs[i].key);
	}
	trees = by_subtree(r, &ntrees);
	qsort(trees, ntrees, sizeof(*trees), by_cpu);
	if (ntrees) {
		fprintf(f, "By subtree (a process and all it ran):\n");
		put_header(f, "CPU s");
		fprintf(f, " %6s %7s  %s\n", "procs", "PID", "COMMAND");
		for (size_t i = 0; i < ntrees; i++) {
			fprintf(f, "  %8.3f", trees[i].cpu_ns / 1e9);
			put_shares(f, &trees[i].split);
			fprintf(f, " %6zu %7d  %s\n", trees[i].n, (int)trees[i].top->pid,
				trees[i].top->command ? trees[i].top->command : "?");
		}
	}
	/* The helpers by family, where any ran. */
	if (all.split.samples) {
		uint64_t total = cpu_split_total(&all.split);
		bool any = false;

		for (int i = 0; i < PART_MAX; i++)
			if (cpu_part_is_helper(i) && all.split.ns[i]) {
				fprintf(f, "%s %s %.1f%%", any ? "," : "Helpers:", cpu_part_name(i),
					100.0 * all.split.ns[i] / total);
				any = true;
			}
		if (any)
			fputc('\n', f);
	}
	{
		size_t nd;
		struct diagnosis *d = diagnoses(progs, nprogs, &nd);

		if (nd)
			fprintf(f, "Diagnoses:\n");
		for (size_t i = 0; i < nd; i++)
			fprintf(f, "  %s: %s: %s.\n    Change: %s.\n", d[i].id, d[i].program,
				d[i].evidence, d[i].fix);
		free(d);
	}
	free(progs);
	free(trees);
	free(rows);
}

static void put_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void put_json_split(FILE *f, const struct cpu_split *s)
{
	fprintf(f, "\"samples\": %" PRIu64 ", \"sampled_ns\": {", s->samples);
	for (int i = 0; i < PART_MAX; i++)
		fprintf(f, "%s\"%s\": %" PRIu64, i ? ", " : "", cpu_part_name(i), s->ns[i]);
	fputc('}', f);
}

void report_write_json(const struct report *r, FILE *f)
{
	struct sum *progs, *trees;
	size_t nprogs, ntrees;

	fprintf(f, "{\"processes\": [");
	for (size_t i = 0; i < r->n; i++) {
		const struct report_proc *p = r->v[i], *up;
		size_t depth = 0;

		fprintf(f, "%s\n  {\"pid\": %d, \"ppid\": %d, \"parents\": [", i ? "," : "",
			(int)p->pid, (int)p->ppid);
		for (up = find(r, p->ppid); up && depth++ < r->n; up = find(r, up->ppid))
			fprintf(f, "%s%d", depth > 1 ? ", " : "", (int)up->pid);
		fprintf(f, "], \"parent_name\": ");
		put_json_string(f, p->parent_name ? p->parent_name : "");
		fprintf(f, ", \"command\": ");
		put_json_string(f, p->command ? p->command : "");
		fprintf(f, ", \"program\": ");
		put_json_string(f, p->program ? p->program : "");
		fprintf(f,
			", \"running\": %s, \"wall_ns\": %" PRIu64 ", \"cpu_ns\": %" PRIu64
			", \"tbs\": %" PRIu64 ", \"flushes\": %" PRIu64 ", ",
			p->running ? "true" : "false", wall_ns(p), p->cpu_ns, p->tbs, p->flushes);
		put_json_split(f, &p->split);
		fputc('}', f);
	}
	progs = by_program(r, &nprogs);
	fprintf(f, "\n], \"programs\": [");
	for (size_t i = 0; i < nprogs; i++) {
		fprintf(f, "%s\n  {\"program\": ", i ? "," : "");
		put_json_string(f, progs[i].key);
		fprintf(f, ", \"runs\": %zu, \"cpu_ns\": %" PRIu64 ", ", progs[i].n,
			progs[i].cpu_ns);
		put_json_split(f, &progs[i].split);
		fputc('}', f);
	}
	trees = by_subtree(r, &ntrees);
	fprintf(f, "\n], \"subtrees\": [");
	for (size_t i = 0; i < ntrees; i++) {
		fprintf(f, "%s\n  {\"pid\": %d, \"command\": ", i ? "," : "",
			(int)trees[i].top->pid);
		put_json_string(f, trees[i].top->command ? trees[i].top->command : "");
		fprintf(f, ", \"processes\": %zu, \"cpu_ns\": %" PRIu64 ", ", trees[i].n,
			trees[i].cpu_ns);
		put_json_split(f, &trees[i].split);
		fputc('}', f);
	}
	{
		size_t nd;
		struct diagnosis *d = diagnoses(progs, nprogs, &nd);

		fprintf(f, "\n], \"diagnoses\": [");
		for (size_t i = 0; i < nd; i++) {
			fprintf(f, "%s\n  {\"id\": ", i ? "," : "");
			put_json_string(f, d[i].id);
			fprintf(f, ", \"program\": ");
			put_json_string(f, d[i].program);
			fprintf(f, ", \"evidence\": ");
			put_json_string(f, d[i].evidence);
			fprintf(f, ", \"change\": ");
			put_json_string(f, d[i].fix);
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
		free(r->v[i]->program);
		free(r->v[i]->parent_name);
		free(r->v[i]);
	}
	free(r->v);
	*r = (struct report){0};
}
