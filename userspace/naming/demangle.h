/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Readable names of C++ and Rust (legacy and v0) symbols, through
 * libiberty's demangler, as binutils and perf use it.  perf does not
 * demangle what it reads from a perf map or jitdump, so the names we
 * write there, and in profiles, must already be readable; uftrace data
 * keeps the raw names (uftrace demangles them itself).
 */
#ifndef QJ_DEMANGLE_H
#define QJ_DEMANGLE_H

#include <stdbool.h>

/* On by default; --no-demangle turns it off. */
void demangle_enable(bool on);
/* NAME demangled with its parameters (malloc'd), or NULL when NAME is not
 * a mangled name, or demangling is off. */
char *demangle(const char *name);

#endif
