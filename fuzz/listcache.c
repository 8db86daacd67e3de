// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A file of the listing cache (coverage/listcache.c) as a damaged disk or
 * another version of the tool could leave it: refused, or read as a
 * listing every span of which lies within it; a listing read is stored
 * again and read back the same.  The input is the file; its tool and key
 * fields are made this process's, so that the rest is what is tried.
 */
#include "fuzz.h"
#include "coverage/listcache.h"
#include "coverage/listing.h"

#include <dirent.h>
#include <fcntl.h>

/* The header's tool field, and its key's, in a cache file. */
#define TOOL_OFF 8
#define KEY_OFF	 40

static struct listcache *lc;
static char tool[32];
static volatile uint64_t sink;

/* A cache in a new directory, and the tool field of the files it writes. */
static void open_cache(void)
{
	static char dir[] = "/tmp/qj-fuzz-listcache-XXXXXX";
	struct listing_key k = {{0}};
	struct listing empty = {0};
	const char *why;
	struct dirent *de;
	DIR *d;

	if (!mkdtemp(dir) || !(lc = listcache_open(dir, &why))) {
		perror("listcache_open");
		exit(1);
	}
	listcache_store(lc, &k, &empty);
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		char path[128];
		int fd;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0 || pread(fd, tool, sizeof(tool), TOOL_OFF) != sizeof(tool))
			exit(1);
		close(fd);
	}
	if (d)
		closedir(d);
}

static void same(const struct listing *a, const struct listing *b)
{
	if (a->nsrcs != b->nsrcs || a->nfns != b->nfns || a->nlines != b->nlines ||
	    a->nranges != b->nranges ||
	    memcmp(a->ranges, b->ranges, a->nranges * sizeof(*a->ranges)))
		abort();
	for (size_t i = 0; i < a->nsrcs; i++)
		if (strcmp(a->srcs[i].path, b->srcs[i].path) || a->srcs[i].fns != b->srcs[i].fns ||
		    a->srcs[i].nfns != b->srcs[i].nfns || a->srcs[i].lines != b->srcs[i].lines ||
		    a->srcs[i].nlines != b->srcs[i].nlines)
			abort();
	for (size_t i = 0; i < a->nfns; i++)
		if (strcmp(a->fns[i].name, b->fns[i].name) || a->fns[i].line != b->fns[i].line ||
		    a->fns[i].first != b->fns[i].first || a->fns[i].n != b->fns[i].n)
			abort();
	for (size_t i = 0; i < a->nlines; i++)
		if (a->lines[i].line != b->lines[i].line ||
		    a->lines[i].first != b->lines[i].first || a->lines[i].n != b->lines[i].n)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct listing_key k = {{0}};
	struct listing ls, again;
	uint64_t sum = 0;
	char *b;

	if (!lc)
		open_cache();
	b = malloc(size ? size : 1);
	memcpy(b, data, size);
	if (size >= KEY_OFF + sizeof(k)) {
		memcpy(b + TOOL_OFF, tool, sizeof(tool));
		memcpy(&k, b + KEY_OFF, sizeof(k));
	}
	if (listcache_parse(lc, &k, b, size, &ls)) {
		/* Every span read through, as the writer reads it. */
		for (size_t i = 0; i < ls.nsrcs; i++) {
			const struct listing_src *s = &ls.srcs[i];

			sum += strlen(s->path);
			for (uint32_t f = s->fns; f < s->fns + s->nfns; f++)
				for (uint32_t r = ls.fns[f].first;
				     r < ls.fns[f].first + ls.fns[f].n; r++)
					sum += ls.ranges[r].lo + strlen(ls.fns[f].name);
			for (uint32_t l = s->lines; l < s->lines + s->nlines; l++)
				for (uint32_t r = ls.lines[l].first;
				     r < ls.lines[l].first + ls.lines[l].n; r++)
					sum += ls.ranges[r].hi;
		}
		listcache_store(lc, &k, &ls);
		if (!listcache_load(lc, &k, &again))
			abort();
		same(&ls, &again);
		listing_free(&again);
		listing_free(&ls);
	}
	free(b);
	sink = sum;
	return 0;
}
