// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A guest's ELF file, as QEMU reports it: loaded as an image of a guest
 * (symbols, PLT entries, CFI functions of a stripped file, segments), then
 * asked what the tool asks of it while it names code: the function and
 * call target of addresses, source lines, frame rules, code bytes.  The
 * input is the file; its last bytes also give the addresses asked about.
 */
#include "fuzz.h"
#include "naming/guest.h"
#include "naming/symbols.h"

#include <elf.h>

/* Ask about guest address PC as jitmap and the writers do. */
static void ask(struct guest *g, uint64_t pc)
{
	struct guest_loc loc;
	uint8_t code[64];
	const char *file;
	int line;

	guest_lookup(g, pc, &loc);
	guest_loc_name(g, &loc, pc);
	guest_call_target(g, pc, &loc);
	if (!loc.img || !loc.img->elf)
		return;
	elf_file_read(loc.img->elf, loc.link, code, sizeof(code));
	elf_file_line(loc.img->elf, loc.link, &file, &line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data + size - (size < 48 ? size : 48), size < 48 ? size : 48};
	uint64_t bias = fuzz_u64(&in) & ~0xfffull, lo = 0, hi = 0;
	struct frame_rule rule;
	struct guest g;
	char path[64];
	int fd = fuzz_memfd(data, size);

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	guest_init(&g, 0);
	guest_add_image(&g, path, 0, 0, 1ull << 47, false);
	if (g.nimgs && g.imgs[0].elf) {
		struct elf_file *e = g.imgs[0].elf;
		const unsigned char *id;
		size_t n = elf_file_nsyms(e);

		elf_file_range(e, &lo, &hi);
		elf_file_build_id(e, &id);
		/* Every symbol's start and last byte, named; a few demangled. */
		for (size_t i = 0; i < n; i++) {
			const struct sym *s = elf_file_sym_at(e, i);

			if (elf_file_sym(e, s->addr) != s)
				abort(); /* a symbol that does not name its own start */
			elf_file_sym(e, s->addr + s->size - 1);
			if (i < 64)
				elf_file_sym_name(e, s);
		}
		for (int i = 0; i < 3; i++) {
			uint64_t a = fuzz_u64(&in);

			ask(&g, a);
			ask(&g, lo + (hi > lo ? a % (hi - lo) : 0));
			elf_file_frame_rule(e, lo + (hi > lo ? a % (hi - lo) : 0),
					    elf_file_machine(e) == EM_AARCH64 ? 30 : 16, &rule);
		}
		for (size_t i = 0; i < n && i < 8; i++)
			ask(&g, elf_file_sym_at(e, i)->addr);
		elf_file_seg_at_offset(e, fuzz_u64(&in));
	}
	/* The same file mapped again by the guest, at another place. */
	guest_add_mmap(&g, path, bias, bias + (hi - lo), fuzz_u64(&in));
	guest_free(&g);
	elf_files_forget();
	close(fd);
	return 0;
}
