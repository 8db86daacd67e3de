/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Symbols for PLT entries (symbols.c adds them): NAME@plt at each entry
 * that jumps through a GOT slot a relocation names (x86-64, AArch64).
 */
#ifndef QJ_PLTSYMS_H
#define QJ_PLTSYMS_H

#include <gelf.h>
#include <stdint.h>
#include <string.h>

#include "util/util.h"

typedef void plt_sym_fn(void *arg, const char *name, uint64_t addr, uint64_t size);

/* The length of the function's name in NAME, a PLT entry's symbol
 * (NAME@plt), or 0 for another symbol's. */
static inline size_t plt_func_len(const char *name)
{
	return name ? before_suffix(name, "@plt") : 0;
}

/* Call FN for each PLT entry of ELF that can be named. */
void elf_plt_syms(Elf *elf, plt_sym_fn *fn, void *arg);

#endif
