/*
 * A guest with known hot functions: hot_main takes about 3/4 of the
 * time, hot_side about 1/4, and everything else is noise.
 * Usage: hot [ROUNDS] | hot -u FILE (rounds until FILE exists, a length a
 * test controls); prints the rounds and a checksum that depends only on
 * them, so that a native run of hot ROUNDS tells what it must be.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned long __attribute__((noinline)) hot_main(unsigned long x)
{
	for (int i = 0; i < 3000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL + (x >> 7);
	return x;
}

static unsigned long __attribute__((noinline)) hot_side(unsigned long x)
{
	for (int i = 0; i < 1000; i++)
		x = (x ^ (x << 13)) + (x >> 3) + 0x9e3779b97f4a7c15UL;
	return x;
}

int main(int argc, char **argv)
{
	const char *until = argc > 2 && !strcmp(argv[1], "-u") ? argv[2] : NULL;
	long rounds = argc > 1 && !until ? atol(argv[1]) : 20000, r;
	unsigned long x = 1;

	for (r = 0; until ? access(until, F_OK) != 0 : r < rounds; r++) {
		x = hot_main(x);
		x = hot_side(x);
	}
	printf("hot %ld %lx\n", r, x);
	return 0;
}
