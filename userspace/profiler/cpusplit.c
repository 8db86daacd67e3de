// SPDX-License-Identifier: GPL-2.0-or-later
#include "profiler/cpusplit.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Words in a helper's (or the functions it calls') name, by family: the
 * first family one of its QEMU frames names is the sample's. */
static const struct {
	enum cpu_part part;
	const char *words[12];
} families[] = {
	{PART_PAUTH, {"pauth", "helper_pac", "helper_aut", "helper_xpac"}},
	{PART_CRYPTO,
	 {"crypto", "aes", "sha1", "sha256", "sha512", "sm3", "sm4", "crc32", "clmul", "polymul"}},
	{PART_ATOMIC, {"atomic", "cmpxchg", "exclusive", "helper_cas"}},
	{PART_VECTOR, {"gvec", "sve", "neon", "simd", "helper_vec", "_xmm", "_ymm", "_mmx"}},
	{PART_FP,
	 {"float", "vfp", "softfloat", "parts64", "parts128", "fpu", "_fp_", "helper_fp", "fcvt"}},
	{PART_MMU, {"tlb_fill", "tlb_", "mmu", "ptw", "page_walk"}},
};

/* QEMU's execution loop and its lookup of the next block. */
static const char *const loop_words[] = {"cpu_exec", "cpu_tb_exec", "tb_lookup", "lookup_tb_ptr",
					 "tb_htable_lookup"};

/*
 * The block lookup's own helper, and what only it calls from translated
 * code: the CPU state a block is looked up by (each target's
 * get_tb_cpu_state) and the compile flags.  Their callers set up no frame
 * on the fast path, so a sample in them often names no lookup_tb_ptr.
 */
static const char *const lookup_words[] = {"lookup_tb_ptr", "get_tb_cpu_state", "curr_cflags"};

static bool has_word(const char *name, const char *const *words, size_t n)
{
	for (size_t i = 0; i < n && words[i]; i++)
		if (strstr(name, words[i]))
			return true;
	return false;
}

enum cpu_part cpu_part_of(bool in_kernel, bool jit, bool jit_ret, const char *const *qemu_frames,
			  size_t n)
{
	const size_t nloop = sizeof(loop_words) / sizeof(loop_words[0]);
	const size_t nlookup = sizeof(lookup_words) / sizeof(lookup_words[0]);

	if (in_kernel)
		return PART_KERNEL;
	if (jit && !jit_ret)
		return PART_GUEST;
	if (jit) {
		/* A helper called from translated code: the block lookup's
		 * own helper is the loop's work. */
		for (size_t i = 0; i < n; i++)
			if (qemu_frames[i] && has_word(qemu_frames[i], lookup_words, nlookup))
				return PART_LOOKUP;
		for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++)
			for (size_t i = 0; i < n; i++)
				if (qemu_frames[i] &&
				    has_word(qemu_frames[i], families[f].words, 12))
					return families[f].part;
		return PART_HELPER;
	}
	/* An atomic operation QEMU runs with every other vCPU stopped (and
	 * the block it translates for that alone). */
	for (size_t i = 0; i < n; i++)
		if (qemu_frames[i] && strstr(qemu_frames[i], "cpu_exec_step_atomic"))
			return PART_ATOMIC;
	for (size_t i = 0; i < n; i++)
		if (qemu_frames[i] && strstr(qemu_frames[i], "tb_gen_code"))
			return PART_TRANSLATE;
	for (size_t i = 0; i < n; i++)
		if (qemu_frames[i] && has_word(qemu_frames[i], loop_words, nloop))
			return PART_LOOKUP;
	return PART_QEMU;
}

const char *cpu_part_name(enum cpu_part p)
{
	static const char *const names[PART_MAX] = {
		[PART_GUEST] = "guest",		 [PART_TRANSLATE] = "translate",
		[PART_LOOKUP] = "lookup",	 [PART_FP] = "helper:fp",
		[PART_PAUTH] = "helper:pauth",	 [PART_CRYPTO] = "helper:crypto",
		[PART_VECTOR] = "helper:vector", [PART_ATOMIC] = "helper:atomic",
		[PART_MMU] = "helper:mmu",	 [PART_HELPER] = "helper:other",
		[PART_KERNEL] = "kernel",	 [PART_QEMU] = "qemu",
	};

	return p < PART_MAX ? names[p] : "?";
}

const char *cpu_part_frame(enum cpu_part p)
{
	static const char *const frames[PART_MAX] = {
		[PART_GUEST] = NULL,
		[PART_TRANSLATE] = "[translate]",
		[PART_LOOKUP] = "[lookup]",
		[PART_FP] = "[helper: fp]",
		[PART_PAUTH] = "[helper: pauth]",
		[PART_CRYPTO] = "[helper: crypto]",
		[PART_VECTOR] = "[helper: vector]",
		[PART_ATOMIC] = "[helper: atomic]",
		[PART_MMU] = "[helper: mmu]",
		[PART_HELPER] = "[helper]",
		[PART_KERNEL] = "[kernel]",
		[PART_QEMU] = "[qemu]",
	};

	return p < PART_MAX ? frames[p] : NULL;
}

bool cpu_part_is_helper(enum cpu_part p)
{
	return p >= PART_FP && p <= PART_HELPER;
}

uint64_t cpu_split_total(const struct cpu_split *s)
{
	uint64_t t = 0;

	for (int i = 0; i < PART_MAX; i++)
		t += s->ns[i];
	return t;
}

void split_item_add(struct split_item t[SPLIT_TOP], const char *name, uint64_t ns)
{
	struct split_item *least = &t[0];

	for (int i = 0; i < SPLIT_TOP; i++) {
		if (!t[i].ns || !strncmp(t[i].name, name, sizeof(t[i].name) - 1)) {
			if (!t[i].ns)
				snprintf(t[i].name, sizeof(t[i].name), "%s", name);
			t[i].ns += ns;
			return;
		}
		if (t[i].ns < least->ns)
			least = &t[i];
	}
	snprintf(least->name, sizeof(least->name), "%s", name);
	least->ns += ns;
}

static int by_ns(const void *a, const void *b)
{
	const struct split_item *x = a, *y = b;

	return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : strcmp(x->name, y->name);
}

size_t split_items_sorted(const struct split_item t[SPLIT_TOP], struct split_item out[SPLIT_TOP])
{
	size_t n = 0;

	for (int i = 0; i < SPLIT_TOP; i++)
		if (t[i].ns)
			out[n++] = t[i];
	qsort(out, n, sizeof(*out), by_ns);
	return n;
}

void cpu_split_add(struct cpu_split *to, const struct cpu_split *from)
{
	for (int i = 0; i < PART_MAX; i++)
		to->ns[i] += from->ns[i];
	to->samples += from->samples;
	to->syscall_ns += from->syscall_ns;
	to->syscall_kernel_ns += from->syscall_kernel_ns;
	if (from->reg_bytes > to->reg_bytes)
		to->reg_bytes = from->reg_bytes;
	for (int i = 0; i < SPLIT_TOP; i++) {
		if (from->fn[i].ns)
			split_item_add(to->fn, from->fn[i].name, from->fn[i].ns);
		if (from->sys[i].ns)
			split_item_add(to->sys, from->sys[i].name, from->sys[i].ns);
	}
}

static enum cpu_phase_kind kind_of(enum cpu_part p)
{
	switch (p) {
	case PART_TRANSLATE:
		return PHASE_TRANSLATE;
	case PART_KERNEL:
		return PHASE_KERNEL;
	case PART_QEMU:
		return PHASE_QEMU;
	default:
		return PHASE_RUN;
	}
}

const char *cpu_phase_name(enum cpu_phase_kind k)
{
	static const char *const names[PHASE_KINDS] = {"translate", "run", "kernel", "qemu"};

	return k < PHASE_KINDS ? names[k] : "?";
}

void cpu_phases_flush(struct cpu_phases *ph)
{
	enum cpu_phase_kind k = PHASE_TRANSLATE;
	struct cpu_phase *last = ph->n ? &ph->v[ph->n - 1] : NULL;
	uint32_t total = 0;

	for (int i = 0; i < PHASE_KINDS; i++) {
		total += ph->win[i];
		if (ph->win[i] > ph->win[k])
			k = i;
	}
	if (!total)
		return;
	memset(ph->win, 0, sizeof(ph->win));
	/* The window goes on the last phase of its kind that it touches. */
	if (last && last->kind == k && ph->win_start <= last->end_ns + ph->win_len) {
		last->end_ns = ph->win_end;
	} else if (ph->n >= PHASES_MAX) {
		ph->dropped++;
	} else {
		uint64_t start =
			last && ph->win_start < last->end_ns ? last->end_ns : ph->win_start;

		grow(&ph->v, &ph->cap, ph->n + 1, sizeof(*ph->v));
		ph->v[ph->n++] =
			(struct cpu_phase){.start_ns = start, .end_ns = ph->win_end, .kind = k};
	}
}

void cpu_phases_add(struct cpu_phases *ph, uint64_t ts, uint64_t period, enum cpu_part part)
{
	uint64_t len = period * 4 > PHASE_WINDOW_NS ? period * 4 : PHASE_WINDOW_NS;

	if (ts >= ph->win_start + ph->win_len || !ph->win_len) {
		cpu_phases_flush(ph);
		ph->win_start = ts;
		ph->win_end = ts + period;
		ph->win_len = len;
	}
	ph->win[kind_of(part)]++;
	if (ts + period > ph->win_end)
		ph->win_end = ts + period;
}

void cpu_phases_free(struct cpu_phases *ph)
{
	free(ph->v);
	*ph = (struct cpu_phases){0};
}
