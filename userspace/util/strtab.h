/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A table of strings, each kept once: adding a string already there gives
 * the same pointer, so that holders compare names by pointer.  The
 * strings live as long as the table: each holder of names (a process's
 * guest, a profile, a writer) has its own, freed with it, so that the
 * tool's memory follows what it holds, not everything it ever saw.
 */
#ifndef QJ_STRTAB_H
#define QJ_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct strtab_block;

struct strtab {
	struct strtab_slot *slots; /* open addressing */
	size_t cap, n;
	struct strtab_block *blocks; /* the strings, newest block first */
	char *next;
	size_t left;
	size_t bytes; /* allocated for the strings */
};

/* S as kept in T (added if it was not). */
const char *strtab_add(struct strtab *t, const char *s);
const char *strtab_addf(struct strtab *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Free every string of T; T is empty again. */
void strtab_free(struct strtab *t);
/* Exchange the contents of A and B. */
void strtab_swap(struct strtab *a, struct strtab *b);

#endif
