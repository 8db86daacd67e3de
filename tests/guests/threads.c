/*
 * A multi-threaded guest: THREADS threads each call cg_work() ROUNDS
 * times.  Usage: threads [ROUNDS]; prints a checksum.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4

static int rounds = 1000;

int __attribute__((noinline)) cg_work(int x)
{
	return x * 7 + 3;
}

void *__attribute__((noinline)) cg_thread(void *arg)
{
	long s = (long)arg;

	for (int i = 0; i < rounds; i++)
		s += cg_work(i);
	return (void *)s;
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS];
	long sum = 0;

	if (argc > 1)
		rounds = atoi(argv[1]);
	for (long i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, cg_thread, (void *)i)) {
			perror("threads: pthread_create");
			return 1;
		}
	for (int i = 0; i < THREADS; i++) {
		void *r;

		pthread_join(t[i], &r);
		sum += (long)r;
	}
	printf("threads %d %ld\n", rounds, sum);
	return 0;
}
