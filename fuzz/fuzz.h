/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the fuzz targets share: libFuzzer's entry point, and the input as a
 * file, since the parsers fuzzed read files (a guest's ELF, a System.map).
 */
#ifndef QJ_FUZZ_H
#define QJ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <libelf.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

extern int verbose;

/*
 * What main() sets up; FUZZ_VERBOSE=1: the tool's -v messages, to see why
 * an input is refused.
 */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	verbose = getenv("FUZZ_VERBOSE") != NULL;
	elf_version(EV_CURRENT); /* as main() does */
	return 0;
}

/* A memfd holding DATA, its offset at 0; exits if it cannot be made. */
static inline int fuzz_memfd(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-input", MFD_CLOEXEC);
	size_t done = 0;

	if (fd < 0) {
		perror("memfd_create");
		exit(1);
	}
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);

		if (n <= 0) {
			perror("write");
			exit(1);
		}
		done += (size_t)n;
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/*
 * Reads of the input's tail as numbers, for the addresses and sizes a
 * target asks about: 0 once the input runs out.
 */
struct fuzz_in {
	const uint8_t *p;
	size_t left;
};

/* The next BYTES bytes (at most 8), little-endian. */
static inline uint64_t fuzz_u64_n(struct fuzz_in *in, size_t bytes)
{
	uint64_t v = 0;
	size_t n = in->left < bytes ? in->left : bytes;

	memcpy(&v, in->p, n);
	in->p += n;
	in->left -= n;
	return v;
}

static inline uint64_t fuzz_u64(struct fuzz_in *in)
{
	return fuzz_u64_n(in, sizeof(uint64_t));
}

#endif
