/*
 * The program forktree's child execs (tests/tree.bats): a known tree of
 * its own, called ROUNDS times.  Usage: exectree ROUNDS
 */
#include <stdio.h>
#include <stdlib.h>

static unsigned long __attribute__((noinline)) e_leaf(unsigned long x)
{
	for (int i = 0; i < 50; i++)
		x = x * 2862933555777941757UL + 3037000493UL;
	return x;
}

static unsigned long __attribute__((noinline)) e_a(unsigned long x)
{
	return e_leaf(x) ^ e_leaf(x >> 1);
}

static unsigned long __attribute__((noinline)) e_tree(unsigned long x)
{
	return e_a(x) + e_leaf(x + 5);
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 1;
	unsigned long x = 3;

	for (long i = 0; i < rounds; i++)
		x = e_tree(x + i);
	printf("exec %lx\n", x);
	return 0;
}
