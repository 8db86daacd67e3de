// SPDX-License-Identifier: GPL-2.0-or-later
#include "profiler/diagnose.h"

#include <inttypes.h>
#include <stdio.h>

/* Samples a share needs before a rule reads it. */
#define MIN_SAMPLES 20

/* P's share of its sampled CPU in PART, in per cent. */
static double share(const struct program_sum *p, enum cpu_part part)
{
	uint64_t total = cpu_split_total(&p->split);

	return total ? 100.0 * p->split.ns[part] / total : 0;
}

/*
 * Its code cache is flushed again and again while it translates: the code
 * it runs does not fit, and is translated anew after each flush.  (A run
 * flushes once or twice by itself: at an attach and at its exit.)
 */
static bool code_cache(const struct program_sum *p, struct diagnosis *d)
{
	double t = share(p, PART_TRANSLATE);

	if (p->flushes < 4 * p->runs || t < 25)
		return false;
	d->id = "code-cache";
	d->fix = "give QEMU a larger code cache: QEMU_TB_SIZE=MiB or -tb-size MiB "
		 "(linux-user), -accel tcg,tb-size=MiB (system mode)";
	snprintf(d->evidence, sizeof(d->evidence),
		 "%zu run%s flushed the code cache %" PRIu64 " times and spent %.0f%% of %.3f s "
		 "of CPU translating (%" PRIu64 " blocks)",
		 p->runs, p->runs == 1 ? "" : "s", p->flushes, t, p->cpu_ns / 1e9, p->tbs);
	return true;
}

/* Pointer authentication computed in helpers (QARMA is costly). */
static bool pauth(const struct program_sum *p, struct diagnosis *d)
{
	double t = share(p, PART_PAUTH);

	if (t < 10)
		return false;
	d->id = "pauth";
	d->fix = "QEMU_CPU=max,pauth-impdef=on (a cheap signature), or max,pauth=off when the "
		 "code only signs return addresses (PACIASP/AUTIASP run as no-ops without "
		 "pointer authentication); -cpu for a QEMU run by hand";
	snprintf(d->evidence, sizeof(d->evidence),
		 "pointer authentication helpers took %.0f%% of %.3f s of CPU", t, p->cpu_ns / 1e9);
	return true;
}

/*
 * A program run many times that spends its time translating: QEMU keeps no
 * translated code from one process to the next, so each run translates
 * again what the last one did.
 */
static bool short_runs(const struct program_sum *p, struct diagnosis *d)
{
	double t = share(p, PART_TRANSLATE);

	if (p->runs < 10 || t < 40)
		return false;
	d->id = "short-runs";
	d->fix = "each run translates its code anew (QEMU keeps none from one process to the "
		 "next): fewer, longer runs (one run for many inputs, as xargs does), or this "
		 "step run natively (a cross tool)";
	snprintf(d->evidence, sizeof(d->evidence),
		 "%zu runs of %.3f s of CPU each on average spent %.0f%% of it translating, "
		 "%" PRIu64 " blocks a run",
		 p->runs, p->cpu_ns / 1e9 / p->runs, t, p->tbs / p->runs);
	return true;
}

/*
 * Most of what it translates, it translated before, with no flush between:
 * QEMU threw the translations away because the guest wrote to the pages of
 * that code (its own JIT, data beside code) or mapped them anew.
 */
static bool code_written(const struct program_sum *p, struct diagnosis *d)
{
	double t = share(p, PART_TRANSLATE);

	if (!p->tbs || p->again_other * 3 < p->tbs || t < 25)
		return false;
	d->id = "code-written";
	d->fix = "the guest writes to (or maps anew) pages it runs code from: keep written data "
		 "off code pages; a JIT in the guest (node, Java) writes its code (node --jitless "
		 "or java -Xint write none: measure both)";
	snprintf(d->evidence, sizeof(d->evidence),
		 "%" PRIu64 " of %" PRIu64 " blocks were translated again with no flush between, "
		 "and translating took %.0f%% of %.3f s of CPU",
		 p->again_other, p->tbs, t, p->cpu_ns / 1e9);
	return true;
}

size_t diagnose_program(const struct program_sum *p, struct diagnosis *d, size_t dmax)
{
	static bool (*const rules[])(const struct program_sum *, struct diagnosis *) = {
		code_cache,
		short_runs,
		code_written,
		pauth,
	};
	size_t n = 0;

	if (p->split.samples < MIN_SAMPLES)
		return 0;
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]) && n < dmax; i++)
		if (rules[i](p, &d[n])) {
			d[n].program = p->program;
			n++;
		}
	return n;
}
