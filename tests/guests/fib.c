/*
 * W2: a call-heavy guest.  Usage: fib [N [CLOCKS]]; prints fib(N), after
 * reading the clock CLOCKS times (code of the vDSO QEMU gives the guest).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long __attribute__((noinline)) fib(long n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 30;
	struct timespec ts;

	for (long i = argc > 2 ? atol(argv[2]) : 0; i > 0; i--)
		clock_gettime(CLOCK_MONOTONIC, &ts);

	printf("fib(%ld) = %ld\n", n, fib(n));
	return 0;
}
