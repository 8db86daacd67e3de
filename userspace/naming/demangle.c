// SPDX-License-Identifier: GPL-2.0-or-later
#include "naming/demangle.h"

#include <libiberty/demangle.h>
#include <string.h>

static bool enabled = true;

void demangle_enable(bool on)
{
	enabled = on;
}

char *demangle(const char *name)
{
	/* The Itanium C++ ABI's and Rust v0's prefixes; legacy Rust names
	 * are Itanium-mangled.  Anything else is left alone, at no cost. */
	if (!enabled || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
}
