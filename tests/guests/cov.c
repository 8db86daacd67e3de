/*
 * Coverage's oracle guest: built natively with gcc --coverage (gcov says
 * which lines ran and how often each function was called) and as static
 * -O0 guests.  Branches taken one way only, a switch, a loop, a function
 * never called, threads and a fork; what runs depends only on argc.
 * Usage: cov [ARGS...] | cov -u FILE (runs init_once(), then loops until
 * FILE exists: for an attach late) | cov -U FILE (the same after in_child()
 * and a thread, for which QEMU flushes its code cache) | cov -s GO STOP
 * (calls looped(3) 1000 times once GO exists, says so, and waits for STOP:
 * for counts between an attach and a detach)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int never_called(int x)
{
	int y = x * 3;

	if (y > 10)
		y -= 10;
	return y;
}

static int classify(int v)
{
	switch (v % 4) {
	case 0:
		return 10;
	case 1:
		return 11;
	case 2:
		return 12;
	default:
		break;
	}
	return -1;
}

static int looped(int n)
{
	int sum = 0;

	for (int i = 0; i < n; i++) {
		if (i % 2)
			sum += i;
		else
			sum -= 1;
	}
	return sum;
}

static void *worker(void *arg)
{
	long v = (long)arg;

	v = looped((int)v);
	return (void *)v;
}

static int in_child(int v)
{
	if (v > 1000)
		return 1;
	return 0;
}

static int init_once(void)
{
	return classify(7) * 2;
}

int main(int argc, char **argv)
{
	pthread_t t[2];
	long total = 0;
	int status = 0;
	pid_t pid;

	if (argc == 4 && !strcmp(argv[1], "-s")) {
		while (access(argv[2], F_OK))
			usleep(10000);
		for (int i = 0; i < 1000; i++)
			total += looped(3);
		printf("counted %ld\n", total);
		fflush(stdout);
		while (access(argv[3], F_OK))
			usleep(10000);
		return 0;
	}
	if (argc == 3 && (!strcmp(argv[1], "-u") || !strcmp(argv[1], "-U"))) {
		if (argv[1][1] == 'U') {
			total = in_child(argc);
			pthread_create(&t[0], NULL, worker, (void *)3L);
			pthread_join(t[0], NULL);
		}
		total = init_once();
		while (access(argv[2], F_OK))
			total += looped(3);
		printf("cov-u %ld\n", total > 0);
		return 0;
	}
	/* Taken one way only. */
	if (argc > 100) {
		total = never_called(argc);
		printf("many arguments\n");
	}
	total += classify(argc) + classify(argc + 1);
	total += looped(10 + argc);
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 5));
	for (int i = 0; i < 2; i++) {
		void *r;

		pthread_join(t[i], &r);
		total += (long)r;
	}
	pid = fork();
	if (pid == 0)
		exit(in_child(argc));
	waitpid(pid, &status, 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 42)
		total = 0;
	printf("cov %ld\n", total);
	return 0;
}
