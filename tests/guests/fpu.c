/*
 * Floating-point arithmetic in a loop: a series summed in long double,
 * which is x87's 80-bit format on x86_64 (QEMU computes it in softfloat,
 * without the host FPU), or in double when built with -DREAL=double
 * (SSE, where QEMU uses the host FPU for +, -, *, / rounding to nearest).
 * Usage: fpu [N]; prints the sum, the same to 6 digits in both builds.
 */
#include <stdio.h>
#include <stdlib.h>

#ifndef REAL
#define REAL long double
#endif

static REAL __attribute__((noinline)) series(long n)
{
	REAL s = 0, x = 1;

	for (long i = 1; i <= n; i++) {
		x = x * (REAL)1.0000001 + (REAL)1 / i;
		s += x / (i + (REAL)0.5);
	}
	return s;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;

	printf("fpu %ld %.6g\n", n, (double)series(n));
	return 0;
}
