/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Checks of what the writers wrote, for the fuzz targets that run them:
 * a file must read back as its format says, whatever names and sizes went
 * in.  A failed check aborts, which libFuzzer reports as a crash.
 */
#ifndef QJ_FUZZ_OUTPUTS_H
#define QJ_FUZZ_OUTPUTS_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The perf map at PATH: a line per live range (LIVE), each one perf reads. */
static inline void fuzz_check_perfmap(const char *path, size_t live)
{
	FILE *f = fopen(path, "re");
	size_t lines = 0, cap = 0;
	char *line = NULL;
	ssize_t n;

	if (!f)
		abort();
	while ((n = getline(&line, &cap, f)) > 0) {
		char *p = line, *end;

		lines++;
		strtoull(p, &end, 16);
		if (end == p || *end != ' ')
			abort(); /* no address */
		p = end + 1;
		strtoull(p, &end, 16);
		if (end == p || *end != ' ' || line[n - 1] != '\n' || n - (end + 1 - line) < 4)
			abort(); /* no size, or a name perf drops */
	}
	free(line);
	fclose(f);
	if (lines != live)
		abort(); /* a name broke a line */
}

/* The jitdump at PATH: empty, or a header then records that add up to the
 * file.  Returns its size. */
static inline uint64_t fuzz_check_jitdump(const char *path)
{
	struct stat st;
	uint8_t *b;
	uint64_t off;
	uint32_t size;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st))
		abort();
	if (!st.st_size) {
		close(fd);
		return 0;
	}
	b = malloc(st.st_size);
	if (st.st_size < 40 || pread(fd, b, st.st_size, 0) != st.st_size)
		abort();
	close(fd);
	memcpy(&size, b + 8, 4); /* the header's total_size */
	for (off = size; off + 8 <= (uint64_t)st.st_size; off += size) {
		memcpy(&size, b + off + 4, 4);
		if (size < 8)
			abort();
	}
	if (off != (uint64_t)st.st_size)
		abort(); /* records that do not add up to the file */
	free(b);
	return st.st_size;
}

#endif
