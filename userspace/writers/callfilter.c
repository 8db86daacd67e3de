// SPDX-License-Identifier: GPL-2.0-or-later
#include "writers/callfilter.h"
#include "util/util.h"

#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct callfilter_pat {
	char *text;
	bool notrace;
	bool is_regex;
	regex_t re;
};

int callfilter_add(struct callfilter *f, const char *func, bool notrace, char *why, size_t len)
{
	struct callfilter_pat p = {.notrace = notrace};
	int err;

	if (!*func) {
		snprintf(why, len, "an empty function name");
		return -EINVAL;
	}
	/* uftrace's test for a regular expression. */
	p.is_regex = strpbrk(func, ".?*+-^$|()[]{}") != NULL;
	if (p.is_regex && (err = regcomp(&p.re, func, REG_EXTENDED | REG_NOSUB))) {
		char msg[128];

		regerror(err, &p.re, msg, sizeof(msg));
		snprintf(why, len, "not a regular expression: %s", msg);
		return -EINVAL;
	}
	p.text = xstrdup(func);
	f->pats = xrealloc(f->pats, (f->npats + 1) * sizeof(*f->pats));
	f->pats[f->npats++] = p;
	f->any_in |= !notrace;
	return 0;
}

bool callfilter_parse_time(const char *s, uint64_t *ns)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"", 1}, {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return false;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit)) {
			v *= units[i].ns;
			if (v >= 1e18)
				return false;
			*ns = (uint64_t)(v + 0.5);
			return true;
		}
	return false;
}

/* A demangled name without its parameters and qualifiers, as uftrace's
 * default (simple) demangling shows it: "ns::f(int) const" -> "ns::f". */
static size_t name_len(const char *shown)
{
	size_t n = strlen(shown), depth = 0;

	/* The last top-level parameter list. */
	for (size_t i = n; i > 0; i--) {
		if (shown[i - 1] == ')')
			depth++;
		else if (shown[i - 1] == '(' && depth && !--depth)
			return i - 1 ? i - 1 : n;
	}
	return n;
}

static bool pat_match(const struct callfilter_pat *p, const char *name, size_t len)
{
	char buf[512];

	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, name, len);
	buf[len] = 0;
	if (!p->is_regex)
		return !strcmp(p->text, buf);
	return !regexec(&p->re, buf, 0, NULL, 0);
}

unsigned int callfilter_match(const struct callfilter *f, const char *raw, const char *shown)
{
	unsigned int v = 0;

	for (size_t i = 0; f && i < f->npats; i++) {
		const struct callfilter_pat *p = &f->pats[i];

		if ((raw && pat_match(p, raw, strlen(raw))) ||
		    (shown && shown != raw && pat_match(p, shown, name_len(shown))))
			v |= p->notrace ? CALLFILTER_NOTRACE : CALLFILTER_IN;
	}
	return v;
}

void callfilter_free(struct callfilter *f)
{
	for (size_t i = 0; i < f->npats; i++) {
		if (f->pats[i].is_regex)
			regfree(&f->pats[i].re);
		free(f->pats[i].text);
	}
	free(f->pats);
	f->pats = NULL;
	f->npats = 0;
}
