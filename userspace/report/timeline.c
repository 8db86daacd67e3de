// SPDX-License-Identifier: GPL-2.0-or-later
#include "report/timeline.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The rows in the order of a walk down the tree: each after its parent,
 * children in the order they came (rows in a loop of parents, last). */
static size_t *tree_order(const struct report *r)
{
	size_t *order = xcalloc(r->n + 1, sizeof(*order)),
	       *first = xcalloc(r->n + 1, sizeof(*first));
	size_t *next = xcalloc(r->n + 1, sizeof(*next)), *last = xcalloc(r->n + 1, sizeof(*last));
	size_t *stack = xcalloc(r->n + 1, sizeof(*stack)), n = 0, sp = 0;
	bool *done = xcalloc(r->n + 1, sizeof(*done));

	/* Each row's children as a list (index + 1; 0 ends it). */
	for (size_t i = 0; i < r->n; i++) {
		const struct report_proc *up = report_parent(r, r->v[i]);

		if (!up)
			continue;
		if (last[up->at])
			next[last[up->at] - 1] = i + 1;
		else
			first[up->at] = i + 1;
		last[up->at] = i + 1;
	}
	/* The roots, the first on top. */
	for (size_t i = r->n; i-- > 0;)
		if (!report_parent(r, r->v[i]))
			stack[sp++] = i;
	while (sp) {
		size_t i = stack[--sp], nk = 0, j;

		order[n++] = i;
		done[i] = true;
		for (size_t k = first[i]; k; k = next[k - 1])
			nk++;
		j = sp + nk;
		for (size_t k = first[i]; k; k = next[k - 1])
			stack[--j] = k - 1;
		sp += nk;
	}
	for (size_t i = 0; i < r->n; i++)
		if (!done[i])
			order[n++] = i;
	free(first);
	free(next);
	free(last);
	free(stack);
	free(done);
	return order;
}

/* Microseconds since T0, to the nanosecond. */
static void put_us(FILE *f, const char *key, uint64_t ns, uint64_t t0)
{
	uint64_t d = ns > t0 ? ns - t0 : 0;

	fprintf(f, "\"%s\": %" PRIu64 ".%03" PRIu64, key, d / 1000, d % 1000);
}

static bool comma;

static void event_begin(FILE *f)
{
	fputs(comma ? ",\n" : "\n", f);
	comma = true;
}

static void put_meta(FILE *f, const char *name, pid_t pid, const char *key, const char *sval,
		     long ival)
{
	event_begin(f);
	fprintf(f,
		"{\"ph\": \"M\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"args\": {\"%s\": ",
		name, (int)pid, (int)pid, key);
	if (sval)
		json_put_string(f, sval);
	else
		fprintf(f, "%ld", ival);
	fputs("}}", f);
}

/* A complete event on PID's track from START to END. */
static void put_slice(FILE *f, const char *name, const char *cat, pid_t pid, uint64_t start,
		      uint64_t end, uint64_t t0)
{
	event_begin(f);
	fputs("{\"ph\": \"X\", \"name\": ", f);
	json_put_string(f, name);
	fprintf(f, ", \"cat\": \"%s\", \"pid\": %d, \"tid\": %d, ", cat, (int)pid, (int)pid);
	put_us(f, "ts", start, t0);
	fputs(", ", f);
	put_us(f, "dur", end, start);
}

static void put_program(FILE *f, const struct report_proc *p, uint64_t t0)
{
	uint64_t total = cpu_split_total(&p->split);

	put_slice(f, p->program ? p->program : "?", "program", p->pid, p->start_ns, p->end_ns, t0);
	fputs(", \"args\": {\"command\": ", f);
	json_put_string(f, p->command);
	fprintf(f, ", \"cpu_ms\": %.3f, \"samples\": %" PRIu64, p->cpu_ns / 1e6, p->split.samples);
	for (int i = 0; total && i < PART_MAX; i++)
		if (p->split.ns[i])
			fprintf(f, ", \"%s_pct\": %.1f", cpu_part_name(i),
				100.0 * p->split.ns[i] / total);
	fprintf(f, ", \"tbs\": %" PRIu64 ", \"tbs_again\": %" PRIu64 "}}", p->tbs,
		p->again_flush + p->again_other);
	/* Its phases, within it. */
	for (size_t i = 0; i < p->phases.n; i++) {
		const struct cpu_phase *ph = &p->phases.v[i];
		uint64_t s = ph->start_ns < p->start_ns ? p->start_ns : ph->start_ns;
		uint64_t e = ph->end_ns > p->end_ns ? p->end_ns : ph->end_ns;

		if (s >= e)
			continue;
		put_slice(f, cpu_phase_name(ph->kind), "phase", p->pid, s, e, t0);
		fputc('}', f);
	}
}

/* The arrow from the parent, at the fork, to the child's first program. */
static void put_fork(FILE *f, const struct report_proc *up, const struct report_proc *p,
		     uint64_t t0)
{
	if (p->start_ns < up->start_ns || p->start_ns > up->end_ns)
		return;
	event_begin(f);
	fprintf(f,
		"{\"ph\": \"s\", \"name\": \"fork\", \"cat\": \"process\", \"id\": %zu, \"pid\": "
		"%d, "
		"\"tid\": %d, ",
		p->at + 1, (int)up->pid, (int)up->pid);
	put_us(f, "ts", p->start_ns, t0);
	fputc('}', f);
	event_begin(f);
	fprintf(f,
		"{\"ph\": \"f\", \"bp\": \"e\", \"name\": \"fork\", \"cat\": \"process\", \"id\": "
		"%zu, "
		"\"pid\": %d, \"tid\": %d, ",
		p->at + 1, (int)p->pid, (int)p->pid);
	put_us(f, "ts", p->start_ns, t0);
	fputc('}', f);
}

void timeline_write(const struct report *r, FILE *f)
{
	size_t *order = tree_order(r);
	struct u64map named = {0}, main_row = {0};
	uint64_t t0 = UINT64_MAX;
	long sort = 0;

	for (size_t i = 0; i < r->n; i++)
		if (r->v[i]->start_ns && r->v[i]->start_ns < t0)
			t0 = r->v[i]->start_ns;
	/* Each pid's main program: the one that used the most CPU. */
	for (size_t i = 0; i < r->n; i++) {
		uint64_t *m = u64map_at(&main_row, (uint64_t)r->v[i]->pid);

		if (!*m || r->v[*m - 1]->cpu_ns < r->v[i]->cpu_ns)
			*m = i + 1;
	}
	comma = false;
	fputs("{\"displayTimeUnit\": \"ms\", \"otherData\": {\"generator\": \"qemu-jitbpf\"}, "
	      "\"traceEvents\": [",
	      f);
	for (size_t k = 0; k < r->n; k++) {
		const struct report_proc *p = r->v[order[k]], *up = report_parent(r, p);
		uint64_t *seen = u64map_at(&named, (uint64_t)p->pid);

		if (!p->start_ns || p->end_ns < p->start_ns)
			continue;
		/* A process: a track, named by its main program's command
		 * line, right below its parent's. */
		if (!*seen) {
			const struct report_proc *m =
				r->v[u64map_get(&main_row, (uint64_t)p->pid) - 1];

			*seen = 1;
			put_meta(f, "process_name", p->pid, "name", m->command ? m->command : "?",
				 0);
			put_meta(f, "process_sort_index", p->pid, "sort_index", NULL, sort++);
			put_meta(f, "thread_name", p->pid, "name", p->program ? p->program : "?",
				 0);
			if (up) {
				char *label =
					xasprintf("parent %s (%d)", up->program ? up->program : "?",
						  (int)up->pid);

				put_meta(f, "process_labels", p->pid, "labels", label, 0);
				free(label);
				if (up->pid != p->pid)
					put_fork(f, up, p, t0);
			}
		}
		put_program(f, p, t0);
	}
	fputs("\n]}\n", f);
	u64map_free(&named);
	u64map_free(&main_row);
	free(order);
}
