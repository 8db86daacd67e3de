// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * --coverage: what ran, of every process, merged into the run's files
 * (lcov, Cobertura, hot blocks) at each --interval and at the end; drcov
 * files per process.  With --coverage-counts, QEMU's execution counts are
 * asked for before each interval's files.
 */
#include "coverage/coverage.h"
#include "coverage/drcov.h"
#include "engine/engine.h"
#include "engine/output.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>

static bool wanted(const struct engine_opts *o)
{
	return o->cov.nfiles;
}

static int begin(struct engine *e)
{
	const struct coverage_opts *o = &e->o->cov;

	e->cov = xcalloc(1, sizeof(*e->cov));
	e->cov->counts = o->counts;
	for (int i = 0; i < o->nfiles; i++) {
		enum cov_format f = coverage_format(o->files[i]);

		e->cov->hot_wanted |= f == COV_HOT;
		e->cov->lines_wanted |= f == COV_LCOV || f == COV_COBERTURA;
	}
	coverage_start(e->cov, o, mono_ns());
	return 0;
}

static void proc_new(struct engine *e, struct proc *p)
{
	p->s.cov = e->cov;
	p->s.cov_opts = &e->o->cov;
	if (drcov_wanted(&e->o->cov))
		p->s.dc = drcov_new();
}

static void tick(struct engine *e, uint64_t now, bool reap)
{
	const struct coverage_opts *o = &e->o->cov;

	(void)now;
	if (coverage_tick(e->cov, o, e->heard_ns))
		e->err = e->err ? e->err : -EIO;
	/* --interval: each file has the counts of a second before. */
	if (reap && o->counts && o->interval)
		procs_request_counts(e);
}

static void end(struct engine *e)
{
	int err;

	if (e->nameless)
		return;
	err = coverage_finish(e->cov, &e->o->cov);
	e->err = e->err ? e->err : err;
}

static void free_all(struct engine *e)
{
	coverage_free(e->cov);
	free(e->cov);
	e->cov = NULL;
}

const struct output output_coverage = {
	.name = "coverage",
	.wanted = wanted,
	.begin = begin,
	.proc_new = proc_new,
	.tick = tick,
	.end = end,
	.free = free_all,
};
