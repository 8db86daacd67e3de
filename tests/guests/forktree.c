/*
 * A guest that forks, each side calling a known tree of its own, for the
 * tests that follow a process tree (tests/tree.bats).
 * Usage: forktree [-w FILE] [-n ROUNDS] [-e PROGRAM]
 *   -w FILE     spin (in p_spin) until FILE exists, then fork
 *   -n ROUNDS   times each side calls its tree (default 1)
 *   -e PROGRAM  the child then execs PROGRAM ROUNDS
 * The parent calls p_tree ROUNDS times, the child c_tree; the parent
 * waits for the child and prints both sums.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long sink;

static unsigned long __attribute__((noinline)) p_leaf(unsigned long x)
{
	for (int i = 0; i < 50; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

static unsigned long __attribute__((noinline)) p_a(unsigned long x)
{
	return p_leaf(x) + p_leaf(x + 1);
}

static unsigned long __attribute__((noinline)) p_b(unsigned long x)
{
	return p_leaf(x ^ 3);
}

static unsigned long __attribute__((noinline)) p_tree(unsigned long x)
{
	return p_a(x) + p_b(x);
}

static unsigned long __attribute__((noinline)) c_leaf(unsigned long x)
{
	for (int i = 0; i < 50; i++)
		x = (x ^ (x << 13)) + (x >> 3) + 0x9e3779b97f4a7c15UL;
	return x;
}

static unsigned long __attribute__((noinline)) c_a(unsigned long x)
{
	return c_leaf(c_leaf(x));
}

static unsigned long __attribute__((noinline)) c_tree(unsigned long x)
{
	return c_a(x) + c_leaf(x + 7);
}

static void __attribute__((noinline)) p_spin(const char *file)
{
	while (access(file, F_OK) != 0)
		sink = p_leaf(sink);
}

int main(int argc, char **argv)
{
	const char *wait_file = NULL, *prog = NULL;
	unsigned long x = 1;
	long rounds = 1;
	int status, opt;
	pid_t pid;

	while ((opt = getopt(argc, argv, "w:n:e:")) != -1) {
		switch (opt) {
		case 'w':
			wait_file = optarg;
			break;
		case 'n':
			rounds = strtol(optarg, NULL, 10);
			break;
		case 'e':
			prog = optarg;
			break;
		default:
			fprintf(stderr, "usage: forktree [-w FILE] [-n ROUNDS] [-e PROGRAM]\n");
			return 2;
		}
	}
	if (wait_file)
		p_spin(wait_file);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		for (long i = 0; i < rounds; i++)
			x = c_tree(x + i);
		printf("child %lx\n", x);
		fflush(stdout);
		if (prog) {
			char arg[32];

			snprintf(arg, sizeof(arg), "%ld", rounds);
			execl(prog, prog, arg, (char *)NULL);
			perror(prog);
			return 127;
		}
		return 0;
	}
	for (long i = 0; i < rounds; i++)
		x = p_tree(x + i);
	waitpid(pid, &status, 0);
	printf("parent %lx\n", x);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
