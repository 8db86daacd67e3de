/*
 * Non-local control flow, for comparing --uftrace with native uftrace
 * record:
 *   nonlocal longjmp      nl_jump() longjmps out of four nl_deep() frames,
 *                         then calls nl_after(), as does main()
 *   nonlocal signal       nl_raise() raises SIGUSR1: nl_handler() runs,
 *                         calls nl_handler_work(), returns
 *   nonlocal siglongjmp   the handler of SIGUSR2, raised two nl_deep()
 *                         frames down, siglongjmps out of them all
 * Prints "nonlocal MODE HITS".
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static jmp_buf env;
static sigjmp_buf senv;
static volatile sig_atomic_t hits;
static int jump_sig;

void __attribute__((noinline)) nl_handler_work(void)
{
	hits++;
}

void __attribute__((noinline)) nl_handler(int sig)
{
	nl_handler_work();
	if (sig == SIGUSR2)
		siglongjmp(senv, 1);
}

void __attribute__((noinline)) nl_deep(int n)
{
	if (n == 0) {
		if (jump_sig)
			raise(jump_sig);
		else
			longjmp(env, 1);
	}
	nl_deep(n - 1);
}

void __attribute__((noinline)) nl_after(void)
{
	__asm__ volatile("" ::: "memory");
}

void __attribute__((noinline)) nl_jump(void)
{
	if (!setjmp(env))
		nl_deep(3);
	nl_after();
}

void __attribute__((noinline)) nl_raise(void)
{
	raise(SIGUSR1);
	nl_after();
}

void __attribute__((noinline)) nl_sigjump(void)
{
	jump_sig = SIGUSR2;
	if (!sigsetjmp(senv, 1))
		nl_deep(1);
	nl_after();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "longjmp";

	signal(SIGUSR1, nl_handler);
	signal(SIGUSR2, nl_handler);
	if (!strcmp(mode, "longjmp")) {
		nl_jump();
	} else if (!strcmp(mode, "signal")) {
		nl_raise();
	} else if (!strcmp(mode, "siglongjmp")) {
		nl_sigjump();
	} else {
		fprintf(stderr, "usage: nonlocal longjmp|signal|siglongjmp\n");
		return 2;
	}
	nl_after();
	printf("nonlocal %s %d\n", mode, (int)hits);
	return 0;
}
