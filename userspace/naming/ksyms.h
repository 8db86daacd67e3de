/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The host kernel's function names, from /proc/kallsyms, read on first use. */
#ifndef QJ_KSYMS_H
#define QJ_KSYMS_H

#include <stdint.h>

/* The kernel function at ADDR, or NULL. */
const char *ksym_name(uint64_t addr);

#endif
