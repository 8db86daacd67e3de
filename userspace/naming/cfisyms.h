/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Functions of a stripped ELF file, from its unwind tables (cfisyms.c). */
#ifndef QEMU_JITBPF_CFISYMS_H
#define QEMU_JITBPF_CFISYMS_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

typedef void (*cfi_fn_cb)(void *arg, uint64_t start, uint64_t size);

/* Call CB for each function .eh_frame or .ARM.exidx of ELF starts, at its
 * link address; returns how many. */
size_t cfi_functions(Elf *elf, cfi_fn_cb cb, void *arg);

#endif
