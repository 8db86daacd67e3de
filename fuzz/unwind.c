// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The guest unwinders (profiler/unwind.c) on samples as a hostile or buggy
 * BPF side could send them: any registers, frame chain and stack copy, and
 * counts and lengths that need not agree with what the record holds.  The
 * guests are real: x86_64, AArch64, Arm and RISC-V programs with CFI
 * (corpus/elf), loaded once, and a guest with no image; the input picks
 * one and the leaf pc, often at one of its functions, so that frame rules
 * are found.  Each sample is unwound by unwind_fp() and unwind_dwarf(),
 * each with UNWIND_MAX, 0 and 1 frames at most, into arrays of exactly
 * that many.  A guest can also be a program just exec'd in the place of
 * another (a guest freed, then made again where it was, with another
 * image): its unwind must be the one of a Dwfl built anew.
 *
 * The input: a control byte (bits 0-2 the guest, modulo 5; bit 3 the leaf
 * at a function of its image: symbol (leaf >> 8) % nsyms, plus
 * leaf & 0x3f; bits 6-7: 3 unwind_free() first, 2 the guest exec'd), then
 * size, big_endian, nguest, nwords (u8), machine (u16), tid, stack_len,
 * flags (u32), leaf, sp, fp, lr (u64), min(nguest, 64) gstack words,
 * min(nwords, 32) words, and the stack bytes: stack_len of them (at most
 * QJ_STACK_MAX, as samples_add() lets through), zeros past the input's
 * end.  fuzz/seeds/unwind-seeds.c writes the seeds; FUZZ_SHOW=1 prints
 * the frames found.
 */
#include "fuzz.h"
#include "naming/guest.h"
#include "profiler/unwind.h"

#include <inttypes.h>
#include <libgen.h>
#include <limits.h>

/* Where the images are, in guest addresses (fuzz/seeds/unwind-seeds.c). */
static const struct {
	const char *file;
	uint64_t bias;
} images[] = {
	{"x86_64-dyn-g", 0x555555554000ull},
	{"aarch64-dyn-g", 0x5500000000ull},
	{"arm-dyn-g", 0x40000000ull},
	{"riscv64-dyn-g", 0x2aaaaaa000ull},
};
#define NIMAGES	   (sizeof(images) / sizeof(images[0]))
#define IMAGE_SPAN 0x10000

/* The last guest has no image: nothing to unwind with. */
static struct guest guests[NIMAGES + 1];
/* The exec'd program's, and the image it has. */
static struct guest exec_guest;
static char paths[NIMAGES][PATH_MAX];
static bool ready, show; /* FUZZ_SHOW=1: print the frames found */

/* corpus/elf: next to this file when run from the top of the tree, else
 * where the fuzzer's binary says (build/fuzz/bin/unwind). */
static const char *elf_dir(void)
{
	static char dir[PATH_MAX];
	char exe[PATH_MAX];
	ssize_t n;

	if (getenv("FUZZ_ELF_DIR"))
		return getenv("FUZZ_ELF_DIR");
	if (!access("fuzz/corpus/elf/x86_64-dyn-g", R_OK))
		return "fuzz/corpus/elf";
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		snprintf(dir, sizeof(dir), "%s/../../../fuzz/corpus/elf", dirname(exe));
		return dir;
	}
	return "fuzz/corpus/elf";
}

static void setup(void)
{
	const char *dir = elf_dir();
	char path[PATH_MAX];

	for (size_t i = 0; i < NIMAGES; i++) {
		struct guest *g = &guests[i];

		/* An absolute path: guest_add_image() opens only those. */
		snprintf(path, sizeof(path), "%s/%s", dir, images[i].file);
		if (!realpath(path, paths[i])) {
			fprintf(stderr, "unwind: %s/%s not found (FUZZ_ELF_DIR?)\n", dir,
				images[i].file);
			exit(1);
		}
		guest_init(g, 0);
		guest_add_image(g, paths[i], images[i].bias, images[i].bias,
				images[i].bias + IMAGE_SPAN, false);
		if (g->nimgs != 1 || !g->imgs[0].elf || !elf_file_nsyms(g->imgs[0].elf)) {
			fprintf(stderr, "unwind: %s: not loaded\n", paths[i]);
			exit(1);
		}
	}
	guest_init(&guests[NIMAGES], 0);
	guest_init(&exec_guest, 0);
	show = getenv("FUZZ_SHOW") != NULL;
	ready = true;
}

static uint8_t in_u8(struct fuzz_in *in)
{
	uint8_t v = 0;

	if (in->left) {
		v = *in->p++;
		in->left--;
	}
	return v;
}

static uint32_t in_u32(struct fuzz_in *in)
{
	uint32_t v = 0;
	size_t n = in->left < sizeof(v) ? in->left : sizeof(v);

	memcpy(&v, in->p, n);
	in->p += n;
	in->left -= n;
	return v;
}

/* Unwind R with at most MAX frames into an array of exactly MAX. */
static size_t unwind(bool dwarf, struct guest *g, const struct qj_sample *r, uint64_t leaf,
		     uint64_t *out, size_t max)
{
	uint64_t *pcs = malloc(max * sizeof(*pcs) + 1);
	size_t n = dwarf ? unwind_dwarf(g, r, leaf, pcs, max) : unwind_fp(g, r, leaf, pcs, max);

	if (n > max || (max && (!n || pcs[0] != leaf)))
		abort(); /* more than asked for, or not from the leaf */
	if (!dwarf && n > 2 + (r->nguest < QJ_GSTACK_MAX ? r->nguest : QJ_GSTACK_MAX))
		abort(); /* more than the leaf, its caller and the chain */
	if (show && max == UNWIND_MAX) {
		fprintf(stderr, "%s:", dwarf ? "dwarf" : "fp");
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, " %#" PRIx64, pcs[i]);
		fprintf(stderr, "\n");
	}
	memcpy(out, pcs, n * sizeof(*pcs));
	free(pcs);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data, size};
	uint8_t ctl = in_u8(&in);
	struct guest *g;
	struct qj_sample hdr = {0}, *r;
	uint64_t leaf, all[UNWIND_MAX], few[1];
	uint32_t stack_len, ng, nw;
	size_t n, pick = (ctl & 7) % (NIMAGES + 1);

	if (!ready)
		setup();
	g = &guests[pick];
	if ((ctl & 0xc0) == 0xc0)
		unwind_free(); /* the Dwfl built again */
	if ((ctl & 0xc0) == 0x80) {
		/* Another program where the last one was, as after an exec:
		 * the same struct guest, as many images. */
		g = &exec_guest;
		guest_free(g);
		guest_init(g, 0);
		if (pick < NIMAGES)
			guest_add_image(g, paths[pick], images[pick].bias, images[pick].bias,
					images[pick].bias + IMAGE_SPAN, false);
	}

	/* The fixed part, then what the counts say follows. */
	hdr.hdr.type = QJ_EV_SAMPLE;
	hdr.size = in_u8(&in);
	hdr.big_endian = in_u8(&in);
	hdr.nguest = in_u8(&in);
	hdr.nwords = in_u8(&in);
	hdr.machine = (uint16_t)(in_u8(&in) | in_u8(&in) << 8);
	hdr.hdr.tid = in_u32(&in);
	hdr.hdr.pid = hdr.hdr.tid;
	stack_len = in_u32(&in);
	hdr.flags = in_u32(&in);
	leaf = fuzz_u64(&in);
	hdr.gregs[QJ_SP] = fuzz_u64(&in);
	hdr.gregs[QJ_FP] = fuzz_u64(&in);
	hdr.gregs[QJ_LR] = fuzz_u64(&in);
	if ((ctl & 8) && g->nimgs) {
		const struct elf_file *e = g->imgs[0].elf;
		const struct sym *s = elf_file_sym_at(e, (leaf >> 8) % elf_file_nsyms(e));

		leaf = g->imgs[0].bias + s->addr + (leaf & 0x3f);
	}
	hdr.gregs[QJ_PC] = leaf;
	ng = hdr.nguest < QJ_GSTACK_MAX ? hdr.nguest : QJ_GSTACK_MAX;
	for (uint32_t i = 0; i < ng; i++)
		hdr.gstack[i] = fuzz_u64(&in);
	nw = hdr.nwords < QJ_GWORDS ? hdr.nwords : QJ_GWORDS;
	for (uint32_t i = 0; i < nw; i++)
		hdr.words[i] = fuzz_u64(&in);
	/* samples_add() keeps no more, and as many bytes as it says. */
	if (stack_len > QJ_STACK_MAX)
		stack_len %= QJ_STACK_MAX + 1;
	hdr.stack_len = stack_len;

	/* Exactly the record's size, as samples_add() copies it. */
	r = malloc(sizeof(*r) + stack_len);
	memcpy(r, &hdr, sizeof(*r));
	memset(r->stack, 0, stack_len);
	memcpy(r->stack, in.p, in.left < stack_len ? in.left : stack_len);

	for (int dwarf = 0; dwarf < 2; dwarf++) {
		n = unwind(dwarf, g, r, leaf, all, UNWIND_MAX);
		if (unwind(dwarf, g, r, leaf, few, 0) != 0)
			abort();
		/* One frame at most: the leaf, as with more. */
		if (unwind(dwarf, g, r, leaf, few, 1) != 1 || few[0] != all[0] || !n)
			abort();
	}
	if (g == &exec_guest) {
		/* What the Dwfl kept must be what one built now finds. */
		uint64_t fresh[UNWIND_MAX];

		n = unwind(true, g, r, leaf, all, UNWIND_MAX);
		unwind_free();
		if (unwind(true, g, r, leaf, fresh, UNWIND_MAX) != n ||
		    memcmp(all, fresh, n * sizeof(*all)))
			abort(); /* the unwind of the program exec'd before */
	}
	free(r);
	return 0;
}
