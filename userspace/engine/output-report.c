// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --report: a row per program each process ran (profiler/report.c): its
 * command line and parent, its wall and CPU time as the kernel counts its
 * threads (from the exit and exec records; /proc for one still running),
 * where its samples say that CPU went, and its code.  Written at the end:
 * each FILE, JSON when its name ends in .json; "-", text on stderr; with
 * --interval, each FILE every interval too, with the rows so far.
 */
#include "engine/engine.h"
#include "engine/output.h"
#include "report/timeline.h"
#include "util/procfile.h"
#include "util/util.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/binfmts.h>

static bool wanted(const struct engine_opts *o)
{
	return o->report;
}

/* When PID started, on CLOCK_MONOTONIC (from its start on the boot clock,
 * in clock ticks); now if it cannot be read. */
static uint64_t started(pid_t pid)
{
	uint64_t now = mono_ns(), ticks, start_ns, boot_ns;
	long tck = sysconf(_SC_CLK_TCK);
	struct timespec boot;
	char state;

	if (!proc_stat(pid, &state, &ticks) || tck <= 0 || clock_gettime(CLOCK_BOOTTIME, &boot))
		return now;
	start_ns = ticks * (1000000000ull / (uint64_t)tck);
	boot_ns = boot.tv_sec * 1000000000ull + boot.tv_nsec;
	return boot_ns > start_ns && now > boot_ns - start_ns ? now - (boot_ns - start_ns) : now;
}

static int begin(struct engine *e)
{
	e->report_at = mono_ns();
	e->report.keep = e->o->report_rows;
	return 0;
}

static void proc_new(struct engine *e, struct proc *p)
{
	struct report_proc *row = report_add(&e->report, p->t->pid);
	uint64_t cpu;
	pid_t ppid;

	p->row = row;
	p->s.split = &row->split;
	row->argv0 = proc_preserves_argv0(p->t->pid);
	p->s.jm.count_again = true;
	if (e->o->timeline)
		row->split.phases = &row->phases;
	/* (A fork or an exec says when, in proc_begin().) */
	row->start_ns = started(p->t->pid);
	if (proc_parent_cpu(p->t->pid, &ppid, &cpu)) {
		char path[64], *comm;
		size_t len;

		row->ppid = ppid;
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)ppid);
		comm = read_all(path, &len, 256);
		if (comm) {
			comm[strcspn(comm, "\n")] = 0;
			row->parent_name = comm;
		}
	}
}

static void proc_begin(struct engine *e, struct proc *p, const struct proc *parent, uint32_t tid,
		       uint64_t ts)
{
	(void)e, (void)tid;
	if (!p->row)
		return;
	/* A fork or an exec: then (else the process's start). */
	if (parent || p->after_exec)
		p->row->start_ns = ts;
	if (parent)
		p->row->ppid = parent->t->pid;
}

/* P's row as of now: its program EXE has ended, or runs on. */
static void fill_row(struct report *r, struct proc *p, const char *exe)
{
	struct report_proc *row = p->row;
	uint64_t cpu = 0;
	pid_t ppid;

	free(row->command);
	row->command = proc_command(p->cmdline ? p->cmdline : p->t->exe, row->argv0, p->t->system);
	report_set_program(r, row, path_base(exe));
	row->tbs = p->s.jm.tbs;
	row->flushes = p->s.jm.flushes;
	row->again_flush = p->s.jm.tbs_again_flush;
	row->again_other = p->s.jm.tbs_again_other;
	cpu_phases_flush(&row->phases);
	if (p->cpu_ns) {
		/* Its exit or exec: the kernel's count, to the nanosecond. */
		row->cpu_ns = p->cpu_ns > p->cpu_base_ns ? p->cpu_ns - p->cpu_base_ns : 0;
		row->end_ns = p->end_ns;
		row->running = false;
		/* A process's first program started with the process. */
		if (p->start_ns && !p->cpu_base_ns)
			row->start_ns = p->start_ns;
	} else {
		/* Still running as we stop. */
		row->running = proc_parent_cpu(p->t->pid, &ppid, &cpu);
		row->cpu_ns = cpu > p->cpu_base_ns ? cpu - p->cpu_base_ns : 0;
		row->end_ns = mono_ns();
	}
}

static void proc_end(struct engine *e, struct proc_end *pe)
{
	if (!pe->p->row)
		return;
	fill_row(&e->report, pe->p, pe->exe);
	pe->p->row_ended = true;
	/* (Its last samples are named after this: into the row still.) */
}

/* Its samples are all in (the profile's proc_end named them): the row is
 * complete, and may be folded. */
static void proc_free(struct engine *e, struct proc *p)
{
	if (p->row) {
		cpu_phases_flush(&p->row->phases);
		report_final(&e->report, p->row);
	}
	p->row = NULL;
}

/* A CI job's summary holds 1 MiB a step ($GITHUB_STEP_SUMMARY). */
#define REPORT_MD_LIMIT (1024 * 1024)

static int write_one(const struct report *r, const char *path, bool timeline)
{
	struct safe_file sf;
	int err = safe_file_create(&sf, path, 0644, (uid_t)-1, (gid_t)-1);

	if (err)
		return err;
	if (timeline)
		timeline_write(r, sf.f);
	else if (before_suffix(path, ".json"))
		report_write_json(r, sf.f);
	else if (before_suffix(path, ".md"))
		report_write_markdown(r, sf.f, REPORT_MD_LIMIT);
	else
		report_write_text(r, sf.f);
	return safe_file_commit(&sf);
}

/* --interval: the report so far, every interval, into each FILE (the
 * table on stderr waits for the end). */
static void tick(struct engine *e, uint64_t now, bool reap)
{
	const struct engine_opts *o = e->o;

	if (!reap || !o->prof.interval)
		return;
	if (now - e->report_at < o->prof.interval * 1000000000ull)
		return;
	e->report_at = now;
	pidtab_for_each(&e->procs, n)
	{
		struct proc *p = proc_of(n);

		if (p->row && !p->row_ended)
			fill_row(&e->report, p, p->s.jm.exe_path ? p->s.jm.exe_path : p->t->exe);
	}
	for (int i = 0; i < o->nreports; i++)
		if (strcmp(o->reports[i], "-") && write_one(&e->report, o->reports[i], false))
			pr_warn("could not write the report %s", o->reports[i]);
	if (o->timeline && write_one(&e->report, o->timeline, true))
		pr_warn("could not write the timeline %s", o->timeline);
}

static void end(struct engine *e)
{
	const struct engine_opts *o = e->o;

	if (e->nameless)
		return;
	for (int i = 0; i < o->nreports; i++) {
		int err;

		if (!strcmp(o->reports[i], "-")) {
			report_write_text(&e->report, stderr);
			continue;
		}
		err = write_one(&e->report, o->reports[i], false);

		if (err) {
			pr_err("writing the report %s: %s", o->reports[i], strerror(-err));
			e->err = e->err ? e->err : err;
		} else {
			pr_dbg("wrote the report %s", o->reports[i]);
		}
	}
	if (o->timeline) {
		int err = write_one(&e->report, o->timeline, true);

		if (err) {
			pr_err("writing the timeline %s: %s", o->timeline, strerror(-err));
			e->err = e->err ? e->err : err;
		}
	}
}

static void free_all(struct engine *e)
{
	report_free(&e->report);
}

const struct output output_report = {
	.name = "report",
	.wanted = wanted,
	.begin = begin,
	.proc_new = proc_new,
	.proc_begin = proc_begin,
	.proc_end = proc_end,
	.proc_free = proc_free,
	.tick = tick,
	.end = end,
	.free = free_all,
};
