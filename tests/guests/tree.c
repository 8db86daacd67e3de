/*
 * A guest with a known call tree: two paths of different depth into one
 * shared leaf, the short one (main;short_path;leaf_work) with about 1/3
 * of the work, the long one (main;long_path;long_mid;long_inner;leaf_work)
 * with 2/3.  Everything else is noise.
 * Usage: tree [ROUNDS] | tree -u FILE (rounds until FILE exists); prints
 * the rounds and a checksum that depends only on them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned long __attribute__((noinline)) leaf_work(unsigned long x, int n)
{
	for (int i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL + (x >> 7);
	return x;
}

static unsigned long __attribute__((noinline)) short_path(unsigned long x)
{
	return leaf_work(x, 1000) + 1;
}

static unsigned long __attribute__((noinline)) long_inner(unsigned long x)
{
	return leaf_work(x, 2000) + 3;
}

static unsigned long __attribute__((noinline)) long_mid(unsigned long x)
{
	return long_inner(x) ^ 5;
}

static unsigned long __attribute__((noinline)) long_path(unsigned long x)
{
	return long_mid(x) + 7;
}

int main(int argc, char **argv)
{
	const char *until = argc > 2 && !strcmp(argv[1], "-u") ? argv[2] : NULL;
	long rounds = argc > 1 && !until ? atol(argv[1]) : 20000, r;
	unsigned long x = 1;

	for (r = 0; until ? access(until, F_OK) != 0 : r < rounds; r++) {
		x = short_path(x);
		x = long_path(x);
	}
	printf("tree %ld %lx\n", r, x);
	return 0;
}
