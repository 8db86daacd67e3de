/*
 * A deterministic call graph, for comparing call counts with uftrace on
 * the host (built with -pg) and checking nesting.
 *   calls count N   many calls: loops, recursion, shared callees
 *   calls tree      the small tree of cg_tree(), see tests/uftrace
 *   calls slow      three cg_sleepy() that sleep 2 ms in cg_nap(), each
 *                   followed by a quick cg_mid(): for -t
 * Prints a checksum that depends only on its arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int __attribute__((noinline)) cg_leaf(int x)
{
	return x * 3 + 1;
}

int __attribute__((noinline)) cg_mid(int x)
{
	int s = 0;

	for (int i = 0; i < 3; i++)
		s += cg_leaf(x + i);
	return s;
}

int __attribute__((noinline)) cg_rec(int n)
{
	if (n <= 0)
		return 0;
	return 1 + cg_rec(n - 1) + (n % 2 ? cg_mid(n) : 0);
}

int __attribute__((noinline)) cg_top(int n)
{
	int s = 0;

	for (int i = 0; i < n; i++)
		s += cg_mid(i) + cg_rec(i % 7);
	return s;
}

void __attribute__((noinline)) cg_b(void)
{
	__asm__ volatile("" ::: "memory");
}

void __attribute__((noinline)) cg_c(void)
{
	cg_b();
}

void __attribute__((noinline)) cg_a(void)
{
	cg_b();
	cg_b();
	cg_c();
}

void __attribute__((noinline)) cg_tree(void)
{
	cg_a();
	cg_c();
}

void __attribute__((noinline)) cg_nap(void)
{
	usleep(2000);
}

int __attribute__((noinline)) cg_sleepy(int x)
{
	cg_nap();
	return cg_leaf(x);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "slow")) {
		int s = 0;

		for (int i = 0; i < 3; i++)
			s += cg_sleepy(i) + cg_mid(i);
		printf("slow %d\n", s);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "tree")) {
		cg_tree();
		printf("tree\n");
		return 0;
	}
	int n = argc > 2 ? atoi(argv[2]) : 100;

	printf("calls %d %d\n", n, cg_top(n));
	return 0;
}
