/*
 * A mapping grown in place, retried while it fails, as JavaScript engines
 * grow their code space: two pages mapped, the second unmapped, the first
 * grown back over it with mremap(2) and no MREMAP_MAYMOVE.  Linux grows it
 * at once.  Under qemu-user, a 32-bit guest's address space is reserved
 * whole on the host, so the freed page is still taken there and each try
 * fails with ENOMEM.  Usage: remap [TRIES]; prints the tries it took.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
	long tries = argc > 1 ? atol(argv[1]) : 10000, i;
	char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *q = MAP_FAILED;

	if (p == MAP_FAILED || munmap(p + 4096, 4096))
		return 2;
	for (i = 0; i < tries && q == MAP_FAILED; i++)
		q = mremap(p, 4096, 8192, 0);
	printf("remap %ld tries: %s\n", i, q == MAP_FAILED ? "failed" : "grown");
	return q == MAP_FAILED;
}
