/*
 * A guest with known hot functions: hot_main takes about 3/4 of the
 * time, hot_side about 1/4, and everything else is noise.
 * Usage: hot [ROUNDS]; prints a checksum that depends only on ROUNDS.
 */
#include <stdio.h>
#include <stdlib.h>

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
	long rounds = argc > 1 ? atol(argv[1]) : 20000;
	unsigned long x = 1;

	for (long r = 0; r < rounds; r++) {
		x = hot_main(x);
		x = hot_side(x);
	}
	printf("hot %ld %lx\n", rounds, x);
	return 0;
}
