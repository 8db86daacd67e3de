/*
 * A guest that forks short children as fast as it can: each child exits
 * at once, the parent reaps it and forks the next, until FILE exists
 * (tests/tree.bats: -p attaching while children come and go).
 * Usage: forkrain FILE; prints how many children it forked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n;

	if (argc != 2) {
		fprintf(stderr, "usage: forkrain FILE\n");
		return 2;
	}
	for (n = 0; access(argv[1], F_OK) != 0; n++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0)
			_exit(0);
		if (waitpid(pid, NULL, 0) != pid) {
			perror("waitpid");
			return 1;
		}
	}
	printf("%ld children\n", n);
	return 0;
}
