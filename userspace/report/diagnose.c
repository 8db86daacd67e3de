// SPDX-License-Identifier: GPL-2.0-or-later
#include "report/diagnose.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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
 * again what the last one did.  (A compiler's cc1 in a real build spends
 * 40-46 %: the rule asks for less than what it shows.)
 */
static bool short_runs(const struct program_sum *p, struct diagnosis *d)
{
	double t = share(p, PART_TRANSLATE);

	if (p->runs < 10 || t < 30)
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

/* The share of P's sampled CPU in its helpers whose names hold any of WORDS. */
static double helpers_share(const struct program_sum *p, const char *const *words, size_t n)
{
	uint64_t total = cpu_split_total(&p->split), ns = 0;

	for (int i = 0; i < SPLIT_TOP; i++)
		for (size_t w = 0; w < n; w++)
			if (p->split.fn[i].ns && strstr(p->split.fn[i].name, words[w])) {
				ns += p->split.fn[i].ns;
				break;
			}
	return total ? 100.0 * ns / total : 0;
}

/* " (helper_a 25%, helper_b 18%)": the top items of T, of P's sampled CPU. */
static void top_items(const struct program_sum *p, const struct split_item t[SPLIT_TOP], char *buf,
		      size_t size)
{
	uint64_t total = cpu_split_total(&p->split);
	struct split_item v[SPLIT_TOP];
	size_t n = split_items_sorted(t, v), len = 0;

	buf[0] = 0;
	for (size_t i = 0; i < n && i < 3 && total && len < size; i++)
		len += snprintf(buf + len, size - len, "%s%s %.0f%%", i ? ", " : " (", v[i].name,
				100.0 * v[i].ns / total);
	if (n && len < size)
		snprintf(buf + len, size - len, ")");
}

/*
 * Floating point computed in softfloat helpers.  x87's 80-bit arithmetic
 * (its helpers work on ST0, FT0, STn) has no fast path at all; QEMU hands
 * double and float +, -, *, / to the host's FPU when rounding to nearest.
 */
static bool softfloat(const struct program_sum *p, struct diagnosis *d)
{
	static const char *const x87[] = {"_ST0", "_FT0", "_STN"};
	double t = share(p, PART_FP);
	char top[160];

	if (t < 25)
		return false;
	d->id = "softfloat";
	if (helpers_share(p, x87, 3) * 2 >= t)
		d->fix = "x87's 80-bit arithmetic (long double on x86, -mfpmath=387) is all "
			 "computed in softfloat, while QEMU hands double and float +, -, *, / to "
			 "the host's FPU: double where its precision will do, or this step run "
			 "natively";
	else
		d->fix = "QEMU computes the guest's floating point in helpers, tens of host "
			 "instructions an operation: this step run natively (a cross-built tool), "
			 "or in integer or fixed-point arithmetic";
	top_items(p, p->split.fn, top, sizeof(top));
	snprintf(d->evidence, sizeof(d->evidence),
		 "floating-point helpers took %.0f%% of %.3f s of CPU%s", t, p->cpu_ns / 1e9, top);
	return true;
}

/*
 * Compare-and-swap helpers: a store-exclusive (AArch64's STXR, RISC-V's
 * SC, Arm's STREX) is one, and so is each round of a compare-and-swap
 * loop; each fails and goes round again when another thread wrote the
 * word first.  Even with no other thread, an ARMv8.0 loop of exclusives
 * makes 15-30 % of its CPU a helper that LSE's single instructions halve.
 */
static bool atomic_retry(const struct program_sum *p, struct diagnosis *d)
{
	static const char *const cas[] = {"cmpxchg"};
	double t = helpers_share(p, cas, 1);
	char top[160];

	if (t < 15)
		return false;
	d->id = "atomic-retry";
	d->fix = "each store-exclusive or compare-and-swap is a helper call, made again each "
		 "time another thread wrote the word first: single-instruction atomics make one "
		 "call an operation (AArch64 LSE: -march=armv8.1-a, or GCC's -moutline-atomics; "
		 "RISC-V AMOs: a fetch-and-add rather than a compare-and-swap loop), and fewer "
		 "threads writing one word (a count per thread, summed at the end) fewer";
	top_items(p, p->split.fn, top, sizeof(top));
	snprintf(d->evidence, sizeof(d->evidence),
		 "compare-and-swap helpers took %.0f%% of %.3f s of CPU%s", t, p->cpu_ns / 1e9,
		 top);
	return true;
}

/*
 * One system call takes most of the program's CPU, in QEMU's emulation
 * of it and in the kernel: a call made again and again.
 */
static bool syscall_spin(const struct program_sum *p, struct diagnosis *d)
{
	uint64_t total = cpu_split_total(&p->split);
	struct split_item v[SPLIT_TOP];
	double t;

	if (!split_items_sorted(p->split.sys, v) || !total)
		return false;
	t = 100.0 * v[0].ns / total;
	if (t < 50)
		return false;
	d->id = "syscall";
	if (!strcmp(v[0].name, "mremap") && p->split.reg_bytes == 4)
		d->fix = "qemu-user reserves a 32-bit guest's whole address space on the host, so "
			 "mremap cannot grow a mapping in place over pages the guest freed, and "
			 "fails (ENOMEM) where Linux grows it: the program's 64-bit build (arm64 "
			 "rather than arm/v7), or mremap with MREMAP_MAYMOVE";
	else
		d->fix = "a call made again and again: see what it returns (QEMU_STRACE=1 prints "
			 "each call of the guest and its result) and what the program retries";
	snprintf(d->evidence, sizeof(d->evidence),
		 "its %s system calls took %.0f%% of %.3f s of CPU (system calls: %.0f%% in "
		 "QEMU, %.0f%% in the host kernel)",
		 v[0].name, t, p->cpu_ns / 1e9,
		 100.0 * (p->split.syscall_ns - p->split.syscall_kernel_ns) / p->split.syscall_ns,
		 100.0 * p->split.syscall_kernel_ns / p->split.syscall_ns);
	return true;
}

size_t diagnose_program(const struct program_sum *p, struct diagnosis *d, size_t dmax)
{
	static bool (*const rules[])(const struct program_sum *, struct diagnosis *) = {
		code_cache, short_runs, code_written, pauth, softfloat, atomic_retry, syscall_spin,
	};
	size_t n = 0;

	if (p->split.samples < MIN_SAMPLES || p->cpu_ns * 100 < p->run_cpu_ns)
		return 0;
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]) && n < dmax; i++)
		if (rules[i](p, &d[n])) {
			d[n].program = p->program;
			n++;
		}
	return n;
}
