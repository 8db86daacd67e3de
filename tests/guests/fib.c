/* W2: a call-heavy guest.  Usage: fib [N]; prints fib(N). */
#include <stdio.h>
#include <stdlib.h>

static long __attribute__((noinline)) fib(long n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 30;

	printf("fib(%ld) = %ld\n", n, fib(n));
	return 0;
}
