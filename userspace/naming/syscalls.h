/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Linux system call names of the guest architectures, by ELF machine and
 * number (syscall-table.h, from the kernel's headers).
 */
#ifndef QJ_SYSCALLS_H
#define QJ_SYSCALLS_H

#include <stdint.h>

/* The name of system call NR on MACHINE (EM_*), or NULL if not known. */
const char *syscall_name(uint16_t machine, uint64_t nr);

#endif
