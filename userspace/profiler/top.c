// SPDX-License-Identifier: GPL-2.0-or-later
#include "profiler/top.h"
#include "naming/codemap.h"
#include "util/util.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static struct termios saved;
static bool raw_keys, started;

bool top_start(void)
{
	struct termios t;

	if (!isatty(STDOUT_FILENO))
		return false;
	if (isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &saved)) {
		t = saved;
		t.c_lflag &= ~(ICANON | ECHO);
		t.c_cc[VMIN] = 0;
		t.c_cc[VTIME] = 0;
		raw_keys = !tcsetattr(STDIN_FILENO, TCSANOW, &t);
	}
	/* The alternate screen, cursor hidden. */
	fputs("\033[?1049h\033[?25l", stdout);
	fflush(stdout);
	started = true;
	return true;
}

int top_key(void)
{
	struct pollfd p = {STDIN_FILENO, POLLIN, 0};
	char c;

	if (!raw_keys || poll(&p, 1, 0) <= 0 || read(STDIN_FILENO, &c, 1) != 1)
		return 0;
	return c;
}

void top_stop(void)
{
	if (!started)
		return;
	if (raw_keys)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	started = raw_keys = false;
}

struct row {
	const char *name;
	const char *image;
	uint64_t self, total;
};

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* The rows, and an index of them by interned name. */
struct rows {
	struct row *v;
	size_t n, cap;
	size_t *idx; /* open addressing: row + 1, 0 for empty */
	size_t icap;
};

static size_t slot(const struct rows *t, const char *name)
{
	return ((uintptr_t)name * 0x9e3779b97f4a7c15ull >> 20) & (t->icap - 1);
}

static struct row *row_of(struct rows *t, const struct frame *f)
{
	const char *image = f->img.path ? strrchr(f->img.path, '/') : NULL;
	size_t k;

	if ((t->n + 1) * 2 > t->icap) {
		free(t->idx);
		t->icap = t->icap ? t->icap * 2 : 256;
		t->idx = xcalloc(t->icap, sizeof(*t->idx));
		for (size_t i = 0; i < t->n; i++) {
			for (k = slot(t, t->v[i].name); t->idx[k]; k = (k + 1) & (t->icap - 1))
				;
			t->idx[k] = i + 1;
		}
	}
	for (k = slot(t, f->name); t->idx[k]; k = (k + 1) & (t->icap - 1))
		if (t->v[t->idx[k] - 1].name == f->name)
			return &t->v[t->idx[k] - 1];
	grow(&t->v, &t->cap, t->n + 1, sizeof(*t->v));
	t->v[t->n] = (struct row){f->name, image ? image + 1 : "?", 0, 0};
	t->idx[k] = ++t->n;
	return &t->v[t->n - 1];
}

static double pct(uint64_t part, uint64_t all)
{
	return all ? 100.0 * part / all : 0;
}

void top_render(const struct profile *p, const struct top_info *info)
{
	static const char *const where[IN_MAX] = {
		[IN_GUEST] = "guest code",	  [IN_HELPER] = "helpers",
		[IN_TRANSLATION] = "translation", [IN_QEMU] = "QEMU loop/syscalls",
		[IN_KERNEL] = "kernel",
	};
	uint64_t share[IN_MAX] = {0};
	struct rows t = {0};
	struct row *rows;
	size_t n;
	struct winsize ws = {.ws_row = 24, .ws_col = 80};
	int lines;
	char root[32];

	ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws);
	for (size_t i = 0; i < p->n; i++) {
		const struct stack *s = p->v[i];
		int leaf = -1;

		share[s->where] += s->count;
		for (uint32_t k = 0; k < s->n; k++) {
			struct row *r;
			bool again = false;

			if (s->frames[k].kind != FRAME_GUEST)
				continue;
			leaf = k;
			/* A recursive function counts once per sample. */
			for (uint32_t j = 0; j < k; j++)
				again |= s->frames[j].name == s->frames[k].name;
			r = row_of(&t, &s->frames[k]);
			if (!again)
				r->total += s->count;
		}
		if (leaf >= 0 && s->where == IN_GUEST)
			row_of(&t, &s->frames[leaf])->self += s->count;
	}
	rows = t.v;
	n = t.n;
	sort_array(rows, n, sizeof(*rows), cmp_row);
	printf("\033[H\033[2J");
	printf("qemu-jitbpf --top: %s, %u Hz, %" PRIu64 " samples, %" PRIu64
	       " lost   (q quits, z zeroes)\n",
	       profile_root(p, info->pid, root), info->freq, p->samples, info->lost);
	printf("CPU:");
	/* CPU samples only: --top takes no --off-cpu. */
	for (int w = 0; w < IN_OFFCPU; w++)
		printf(" %s %.1f%%%s", where[w], pct(share[w], p->samples),
		       w + 1 < IN_OFFCPU ? "," : "");
	printf("\n\n\033[7m %7s %7s  %-40s %s\033[0m\n", "self%", "total%", "guest function",
	       "image");
	lines = ws.ws_row - 5;
	for (size_t i = 0; i < n && (int)i < lines; i++)
		printf(" %6.2f%% %6.2f%%  %-40.40s %s\n", pct(rows[i].self, p->samples),
		       pct(rows[i].total, p->samples), rows[i].name, rows[i].image);
	fflush(stdout);
	free(t.v);
	free(t.idx);
}
