/*
 * A guest that forks, with parent and child hot in different functions.
 * Before the fork the parent runs child_work too, so the child starts in
 * code its parent translated (the code cache it inherits).
 * Usage: forker FILE: both run until FILE exists; the parent waits for
 * the child and prints both round counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long __attribute__((noinline)) parent_work(unsigned long x)
{
	for (int i = 0; i < 2000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL + (x >> 7);
	return x;
}

static unsigned long __attribute__((noinline)) child_work(unsigned long x)
{
	for (int i = 0; i < 2000; i++)
		x = (x ^ (x << 13)) + (x >> 3) + 0x9e3779b97f4a7c15UL;
	return x;
}

static long run(const char *until, unsigned long (*work)(unsigned long))
{
	unsigned long x = 1;
	long r;

	for (r = 0; access(until, F_OK) != 0; r++)
		x = work(x);
	return x ? r : -r;
}

int main(int argc, char **argv)
{
	unsigned long warm = 1;
	int status;
	pid_t pid;
	long r;

	if (argc != 2) {
		fprintf(stderr, "usage: forker FILE\n");
		return 2;
	}
	for (int i = 0; i < 100; i++)
		warm = child_work(parent_work(warm));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		printf("child %ld\n", run(argv[1], child_work));
		return 0;
	}
	r = run(argv[1], parent_work);
	waitpid(pid, &status, 0);
	printf("parent %ld %lx\n", r, warm);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
