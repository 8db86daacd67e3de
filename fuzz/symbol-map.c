// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The System.map / kallsyms reader (--guest-symbols): any text as the
 * file, then the names of addresses the input's last bytes give, and of
 * every symbol's ends.
 */
#include "fuzz.h"
#include "naming/symbols.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data + size - (size < 32 ? size : 32), size < 32 ? size : 32};
	char path[64], why[256] = "";
	struct elf_file *e;
	int fd = fuzz_memfd(data, size);

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	e = symbol_map_get(path, why, sizeof(why));
	if (e) {
		uint64_t lo, hi;

		elf_file_range(e, &lo, &hi);
		for (size_t i = 0; i < elf_file_nsyms(e); i++) {
			const struct sym *s = elf_file_sym_at(e, i);
			const struct sym *at = elf_file_sym(e, s->addr);

			if (!at || !elf_file_sym_name(e, at)[0])
				abort(); /* a symbol that names nothing at its own start */
			elf_file_sym(e, s->addr + s->size - 1);
			elf_file_sym(e, s->addr + s->size);
		}
		for (int i = 0; i < 4; i++) {
			const struct sym *s = elf_file_sym(e, fuzz_u64(&in));

			if (s)
				elf_file_sym_name(e, s);
		}
		elf_file_sym(e, lo - 1);
		elf_file_sym(e, hi);
	} else if (!why[0]) {
		abort(); /* refused without a reason */
	}
	elf_files_forget();
	close(fd);
	return 0;
}
