/*
 * A program that waits most of its time, for wall-clock profiles: each
 * round sleeps in snooze() for SLEEP_US, then works in work() until WORK_US
 * more have passed, for SECONDS in all.  It prints the share of the wall
 * time it spent in snooze(), measured with its own clock, as the oracle
 * of an off-CPU profile.  With THREADS > 1, that many threads do the same.
 * Usage: waits [SECONDS [SLEEP_US WORK_US [THREADS]]] (default 4, 8000,
 * 2000, 1: 80 % asleep).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds, sleep_us, work_us;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static double snooze(double us)
{
	struct timespec t = {(time_t)(us / 1e6), (long)(us * 1e3) % 1000000000};
	double start = now();

	nanosleep(&t, NULL);
	return now() - start;
}

static volatile unsigned long spins;

static void work(double us)
{
	double until = now() + us / 1e6;

	while (now() < until)
		spins++;
}

static void *run(void *arg)
{
	double *asleep = arg, start = now();

	*asleep = 0;
	while (now() - start < seconds) {
		*asleep += snooze(sleep_us);
		work(work_us);
	}
	*asleep /= now() - start;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 4 ? atoi(argv[4]) : 1;
	pthread_t tid[64];
	double asleep[64], sum = 0;

	seconds = argc > 1 ? atof(argv[1]) : 4;
	sleep_us = argc > 3 ? atof(argv[2]) : 8000;
	work_us = argc > 3 ? atof(argv[3]) : 2000;
	if (threads < 1 || threads > 64)
		return 2;
	for (int i = 1; i < threads; i++)
		if (pthread_create(&tid[i], NULL, run, &asleep[i]))
			return 2;
	run(&asleep[0]);
	for (int i = 1; i < threads; i++)
		pthread_join(tid[i], NULL);
	for (int i = 0; i < threads; i++)
		sum += asleep[i];
	printf("waits: %.1f%% of the time in snooze\n", 100 * sum / threads);
	return 0;
}
