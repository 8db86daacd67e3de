/*
 * A compute-bound guest that never makes a syscall until it is done:
 * once started, it stays inside translated code.
 * Usage: spin [ROUNDS]; prints a checksum that depends only on ROUNDS.
 */
#include <stdio.h>
#include <stdlib.h>

static unsigned long __attribute__((noinline)) spin_round(unsigned long x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 2862933555777941757UL + 3037000493UL;
	return x;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 1000;
	unsigned long x = 7;

	for (long r = 0; r < rounds; r++)
		x = spin_round(x);
	printf("spin %ld %lx\n", rounds, x);
	return 0;
}
