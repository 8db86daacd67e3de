/*
 * A guest whose length a test controls and whose output depends only on
 * how long it ran: it runs until FILE exists (looked at every round), or
 * for N rounds, and prints the rounds and a checksum of them, which the
 * same program run natively with -n reproduces.
 * Usage: loop FILE | loop -n N; prints "loop ROUNDS CHECKSUM".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned long __attribute__((noinline)) loop_hot(unsigned long x)
{
	for (int i = 0; i < 3000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL + (x >> 9);
	return x;
}

static unsigned long __attribute__((noinline)) loop_side(unsigned long x)
{
	for (int i = 0; i < 1000; i++)
		x = (x ^ (x << 7)) + (x >> 5) + 0x9e3779b97f4a7c15UL;
	return x;
}

int main(int argc, char **argv)
{
	const char *stop = NULL;
	long n = -1, r;
	unsigned long x = 1;

	if (argc == 3 && !strcmp(argv[1], "-n"))
		n = atol(argv[2]);
	else if (argc == 2)
		stop = argv[1];
	else {
		fprintf(stderr, "usage: loop FILE | loop -n N\n");
		return 2;
	}
	for (r = 0; stop ? access(stop, F_OK) != 0 : r < n; r++) {
		x = loop_hot(x);
		x = loop_side(x);
	}
	printf("loop %ld %lx\n", r, x);
	return 0;
}
