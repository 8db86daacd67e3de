/*
 * A guest that forces a flush of QEMU's code cache between two phases
 * with different hot functions: starting its first extra thread makes
 * QEMU retranslate everything for parallel execution.
 * Usage: flush [ROUNDS]; prints a checksum that depends only on ROUNDS.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long rounds = 20000;

static unsigned long __attribute__((noinline)) phase_one(unsigned long x)
{
	for (int i = 0; i < 2000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

static unsigned long __attribute__((noinline)) phase_two(unsigned long x)
{
	for (int i = 0; i < 2000; i++)
		x = (x ^ (x >> 11)) * 0xbf58476d1ce4e5b9UL + 1;
	return x;
}

static void *second_phase(void *arg)
{
	unsigned long *x = arg;

	for (long r = 0; r < rounds; r++)
		*x = phase_two(*x);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long x = 3;
	pthread_t t;

	if (argc > 1)
		rounds = atol(argv[1]);
	for (long r = 0; r < rounds; r++)
		x = phase_one(x);
	if (pthread_create(&t, NULL, second_phase, &x) != 0 ||
	    pthread_join(t, NULL) != 0) {
		perror("flush: thread");
		return 1;
	}
	printf("flush %ld %lx\n", rounds, x);
	return 0;
}
