// SPDX-License-Identifier: GPL-2.0-or-later
#include "naming/syscalls.h"

#include <stddef.h>

#include "naming/syscall-table.h"

#define TABLE(name)                                                          \
	{                                                                    \
		SYSCALLS_##name##_MACHINE, syscalls_##name,                  \
			sizeof(syscalls_##name) / sizeof(syscalls_##name[0]) \
	}

static const struct {
	uint16_t machine;
	const char *const *names;
	size_t n;
} tables[] = {
	TABLE(x86_64), TABLE(aarch64), TABLE(riscv64), TABLE(arm), TABLE(ppc64), TABLE(s390x),
};

const char *syscall_name(uint16_t machine, uint64_t nr)
{
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		if (tables[i].machine == machine)
			return nr < tables[i].n ? tables[i].names[nr] : NULL;
	return NULL;
}
