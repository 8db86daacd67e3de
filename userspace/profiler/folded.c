// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Folded stacks, the input of flamegraph.pl and speedscope: one line per
 * distinct stack, frames root first separated by ';', then the count (in a
 * wall-clock profile, the ns: offcputime's folded output is in time too).
 * Threads of a process fold together, as stackcollapse-perf --pid does.
 */
#include "profiler/profile.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct line {
	char *text;
	uint64_t count;
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

/* The folded form of S: COMM-PID;frame;frame... */
char *folded_stack(const struct stack *s)
{
	size_t len = 0, cap = 256;
	char *out = xmalloc(cap), buf[1024];
	const char *root = s->root;

	for (uint32_t i = 0; i <= s->n; i++) {
		const char *label = i ? frame_label(&s->frames[i - 1], buf, sizeof(buf)) : root;
		size_t l = strlen(label);

		grow(&out, &cap, len + l + 2, 1);
		if (i)
			out[len++] = ';';
		memcpy(out + len, label, l);
		len += l;
	}
	out[len] = 0;
	return out;
}

int folded_write(const struct profile *p, FILE *f)
{
	struct line *v = xcalloc(p->n ? p->n : 1, sizeof(*v));
	size_t n = 0;

	for (size_t i = 0; i < p->n; i++)
		v[n++] = (struct line){folded_stack(p->v[i]), profile_weight(p, p->v[i])};
	sort_array(v, n, sizeof(*v), cmp_line);
	for (size_t i = 0; i < n; i++) {
		uint64_t count = v[i].count;

		while (i + 1 < n && !strcmp(v[i].text, v[i + 1].text)) {
			free(v[i].text);
			count += v[++i].count;
		}
		fprintf(f, "%s %" PRIu64 "\n", v[i].text, count);
		free(v[i].text);
	}
	free(v);
	return ferror(f) ? -EIO : 0;
}
