/*
 * A guest that keeps count of its progress while many of its threads are
 * blocked, for bench/stacks.sh: THREADS - 2 threads wait on a condition
 * variable for ever, one thread adds to a counter as fast as it can, and
 * the main thread prints "MONOTONIC-NS COUNT" every 10 ms for SECONDS.
 * Usage: progress [THREADS [SECONDS]].
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static volatile unsigned long count;

static void *waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m);
	for (;;)
		pthread_cond_wait(&never, &m);
	return NULL;
}

static void *__attribute__((noinline)) worker(void *arg)
{
	(void)arg;
	for (;;)
		count++;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 64;
	double seconds = argc > 2 ? atof(argv[2]) : 10;
	struct timespec now, tick = {0, 10 * 1000 * 1000};
	pthread_t t;
	double start;

	for (int i = 0; i < threads - 2; i++)
		pthread_create(&t, NULL, waiter, NULL);
	pthread_create(&t, NULL, worker, NULL);
	clock_gettime(CLOCK_MONOTONIC, &now);
	start = now.tv_sec + now.tv_nsec / 1e9;
	do {
		nanosleep(&tick, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
		printf("%lld %lu\n", (long long)now.tv_sec * 1000000000 + now.tv_nsec, count);
		fflush(stdout);
	} while (now.tv_sec + now.tv_nsec / 1e9 - start < seconds);
	return 0;
}
