/*
 * Threads adding to one shared counter.  Usage: atomics [N [THREADS [cas]]]:
 * each thread adds 1 N times, with a fetch-and-add (one instruction where
 * the architecture has one: x86's LOCK XADD, RISC-V's AMOADD, AArch64's
 * LDADD from ARMv8.1) or, with "cas", a compare-and-swap loop that goes
 * round again when another thread wrote first.  Built for ARMv8.0 (no
 * LSE) both are load-exclusive/store-exclusive loops.  Prints the total.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long counter, per;
static int cas;

static void *add(void *arg)
{
	(void)arg;
	for (long i = 0; i < per; i++) {
		if (cas) {
			long old = __atomic_load_n(&counter, __ATOMIC_RELAXED);

			while (!__atomic_compare_exchange_n(&counter, &old, old + 1, 1,
							    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
				;
		} else {
			__atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 2;
	pthread_t t[64];

	per = argc > 1 ? atol(argv[1]) : 1000000;
	cas = argc > 3 && !strcmp(argv[3], "cas");
	if (n < 1 || n > 64)
		return 2;
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, add, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("atomics %ld\n", counter);
	return 0;
}
