/*
 * Non-local control flow, for comparing --uftrace with native uftrace
 * record:
 *   nonlocal longjmp      nl_jump() longjmps out of four nl_deep() frames,
 *                         then calls nl_after(), as does main()
 *   nonlocal signal       nl_raise() raises SIGUSR1: nl_handler() runs,
 *                         calls nl_handler_work(), returns
 *   nonlocal siglongjmp   the handler of SIGUSR2, raised two nl_deep()
 *                         frames down, siglongjmps out of them all
 *   nonlocal nested       nl_apply() calls the nested function nl_inner()
 *                         through its trampoline on the stack, twice
 *   nonlocal context      nl_context() runs nl_co() on a context of its
 *                         own (makecontext), which switches back once and
 *                         is resumed
 *   nonlocal tail         nl_tail() ends in a tail call (a jump) of
 *                         nl_leaf(), which calls nl_after()
 *   nonlocal ucontext     as uftrace's own s-ucontext test: the context's
 *                         stack is in nl_ucontext()'s frame, above the
 *                         nl_swap() that switches to it; nl_target() runs
 *                         there, and returns through uc_link
 * Prints "nonlocal MODE HITS".
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

static jmp_buf env;
static sigjmp_buf senv;
static volatile sig_atomic_t hits;
static int jump_sig;
static ucontext_t main_ctx, co_ctx;
static char co_stack[64 * 1024];

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

void __attribute__((noinline)) nl_co(void)
{
	hits++;
	nl_after();
	swapcontext(&co_ctx, &main_ctx);
	nl_after();
}

void __attribute__((noinline)) nl_context(void)
{
	getcontext(&co_ctx);
	co_ctx.uc_stack.ss_sp = co_stack;
	co_ctx.uc_stack.ss_size = sizeof(co_stack);
	co_ctx.uc_link = &main_ctx;
	makecontext(&co_ctx, nl_co, 0);
	swapcontext(&main_ctx, &co_ctx);
	nl_after();
	swapcontext(&main_ctx, &co_ctx);
}

void __attribute__((noinline)) nl_swap(ucontext_t *old, ucontext_t *new)
{
	swapcontext(old, new);
}

void __attribute__((noinline)) nl_target(int n)
{
	hits += n;
	nl_after();
}

void __attribute__((noinline)) nl_ucontext(void)
{
	char stack[8192];
	ucontext_t curr, new;

	getcontext(&new);
	new.uc_link = &curr;
	new.uc_stack.ss_sp = stack;
	new.uc_stack.ss_size = sizeof(stack);
	makecontext(&new, (void (*)(void))nl_target, 1, 1);
	nl_swap(&curr, &new);
	nl_after();
}

void __attribute__((noinline)) nl_apply(void (*fn)(int), int n)
{
	fn(n);
}

/* GCC's nested functions: their address is a trampoline on the stack. */
void __attribute__((noinline)) nl_nested(void)
{
	int sum = 0;

	void __attribute__((noinline)) nl_inner(int k)
	{
		sum += k;
		nl_after();
	}
	nl_apply(nl_inner, 1);
	nl_apply(nl_inner, 2);
	hits = sum == 3;
}

void __attribute__((noinline)) nl_leaf(int n)
{
	hits += n;
	nl_after();
}

/* A jump to nl_leaf(), also at -O1 and with -pg. */
void __attribute__((noinline, optimize("optimize-sibling-calls"))) nl_tail(int n)
{
	hits--;
	nl_leaf(n);
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
	} else if (!strcmp(mode, "nested")) {
		nl_nested();
	} else if (!strcmp(mode, "context")) {
		nl_context();
	} else if (!strcmp(mode, "tail")) {
		nl_tail(2);
	} else if (!strcmp(mode, "ucontext")) {
		nl_ucontext();
	} else {
		fprintf(stderr,
			"usage: nonlocal longjmp|signal|siglongjmp|nested|context|tail|ucontext\n");
		return 2;
	}
	nl_after();
	printf("nonlocal %s %d\n", mode, (int)hits);
	return 0;
}
