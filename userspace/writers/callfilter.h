/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uftrace record's filters, with its names and meanings:
 *   -F/--filter FUNC     only FUNC and what it calls
 *   -N/--notrace FUNC    not FUNC, nor what it calls
 *   -D/--depth N         N levels of calls (from the top, or from each -F function)
 *   -t/--time-filter T   only functions that ran T or longer (ns, us, ms, s)
 * FUNC is a name, or a regular expression (POSIX extended, unanchored) if
 * it has one of .?*+-^$|()[]{}, as uftrace's default --match=regex does;
 * it is matched against the raw and the demangled name without its
 * parameters.  The uftrace writer applies them as it writes (uftrace.c).
 */
#ifndef QJ_CALLFILTER_H
#define QJ_CALLFILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct callfilter_pat;

struct callfilter {
	struct callfilter_pat *pats;
	size_t npats;
	bool any_in;	  /* some -F */
	uint32_t depth;	  /* -D, 0: no limit */
	uint64_t time_ns; /* -t, 0: none */
};

enum {
	CALLFILTER_IN = 1,	/* an -F function */
	CALLFILTER_NOTRACE = 2, /* an -N function */
};

/* Add -F (NOTRACE false) or -N FUNC; -EINVAL with WHY (LEN bytes) filled. */
int callfilter_add(struct callfilter *f, const char *func, bool notrace, char *why, size_t len);
/* -t's TIME ("100", "1us", "2.5ms", "1s") in ns; false if it is not one. */
bool callfilter_parse_time(const char *s, uint64_t *ns);
/* CALLFILTER_* bits of a function named RAW in the file, SHOWN demangled
 * (either may be NULL). */
unsigned int callfilter_match(const struct callfilter *f, const char *raw, const char *shown);
/* Anything to do per function name? */
static inline bool callfilter_by_name(const struct callfilter *f)
{
	return f && f->npats;
}
void callfilter_free(struct callfilter *f);

#endif
