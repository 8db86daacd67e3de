#include <stdio.h>
#include <stdlib.h>
static int __attribute__((noinline)) leaf(int x)
{
	return x * 3 + 1;
}
int __attribute__((noinline)) fib(int n)
{
	return n < 2 ? leaf(n) : fib(n - 1) + fib(n - 2);
}
int main(int argc, char **argv)
{
	printf("%d\n", fib(argc > 1 ? atoi(argv[1]) : 10));
	return 0;
}
