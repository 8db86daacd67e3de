/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The host kernel's function names, from /proc/kallsyms, read on first use. */
#ifndef QJ_KSYMS_H
#define QJ_KSYMS_H

#include <stdint.h>

/* The kernel function at ADDR, or NULL. */
const char *ksym_name(uint64_t addr);

/*
 * Code the caller knows of outside the kernel's text (its own BPF
 * programs): FILL is called once, when an address outside the text is
 * first looked up, and calls ksym_add() for each range.
 */
void ksym_extras(void (*fill)(void *ctx), void *ctx);
void ksym_add(uint64_t addr, uint64_t len, const char *name);

#endif
