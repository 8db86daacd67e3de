/*
 * A guest that gives profilers and tracers a hard time (tests/hostile.bats).
 * Usage: hostile MODE [N]; prints a line that depends only on MODE and N.
 *   fploop N    N rounds of a loop whose frame pointer points at itself:
 *               a frame chain that never ends
 *   fpwild N    the same with the frame pointer in unmapped memory
 *   sptop N     the same with the stack and frame pointers at the top of
 *               the address space
 *   threads N   N threads at once, each calling a few functions
 *   churn N     N threads one after another, each calling a few functions
 *   exec N      exec itself N times (through /proc/self/exe), then print
 *   deep N      N recursions 3000 calls deep: a call tracer's stack deeper
 *               than uftrace's max_stack (1024) most of the time
 * The loops touch no memory, so the bad registers harm nobody but a
 * profiler that believes them.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned long frame[2]; /* a frame record: saved fp, return address */

/* COUNT rounds with the frame pointer (and, if SP, the stack pointer) set
 * to FP: nothing but registers is used meanwhile. */
static unsigned long __attribute__((noinline))
bad_frames(unsigned long fp, unsigned long count, int sp)
{
	unsigned long x = 7;

#if defined(__x86_64__)
	if (sp)
		__asm__ volatile("mov %%rbp, %%r12\n\tmov %%rsp, %%r13\n\t"
				 "mov %2, %%rbp\n\tmov %2, %%rsp\n"
				 "1:\timul $5, %0, %0\n\tadd $3, %0\n\tdec %1\n\tjnz 1b\n\t"
				 "mov %%r13, %%rsp\n\tmov %%r12, %%rbp"
				 : "+r"(x), "+r"(count)
				 : "r"(fp)
				 : "r12", "r13", "memory", "cc");
	else
		__asm__ volatile("mov %%rbp, %%r12\n\tmov %2, %%rbp\n"
				 "1:\timul $5, %0, %0\n\tadd $3, %0\n\tdec %1\n\tjnz 1b\n\t"
				 "mov %%r12, %%rbp"
				 : "+r"(x), "+r"(count)
				 : "r"(fp)
				 : "r12", "memory", "cc");
#elif defined(__aarch64__)
	if (sp)
		__asm__ volatile("mov x19, x29\n\tmov x20, sp\n\t"
				 "mov x29, %2\n\tmov sp, %2\n"
				 "1:\tadd %0, %0, %0, lsl #2\n\tadd %0, %0, #3\n\t"
				 "subs %1, %1, #1\n\tb.ne 1b\n\t"
				 "mov sp, x20\n\tmov x29, x19"
				 : "+r"(x), "+r"(count)
				 : "r"(fp)
				 : "x19", "x20", "memory", "cc");
	else
		__asm__ volatile("mov x19, x29\n\tmov x29, %2\n"
				 "1:\tadd %0, %0, %0, lsl #2\n\tadd %0, %0, #3\n\t"
				 "subs %1, %1, #1\n\tb.ne 1b\n\t"
				 "mov x29, x19"
				 : "+r"(x), "+r"(count)
				 : "r"(fp)
				 : "x19", "memory", "cc");
#else
	(void)fp;
	(void)sp;
	while (count--)
		x = x * 5 + 3;
#endif
	return x;
}

static unsigned long __attribute__((noinline)) leaf(unsigned long x)
{
	return x * 2862933555777941757UL + 3037000493UL;
}

static void *__attribute__((noinline)) worker(void *arg)
{
	unsigned long x = (unsigned long)arg;

	for (int i = 0; i < 100; i++)
		x = leaf(x);
	return (void *)x;
}

/* N threads one after another: what each leaves behind adds up. */
static unsigned long churn(long n)
{
	unsigned long sum = 0;

	for (long i = 0; i < n; i++) {
		pthread_t t;
		void *r;

		if (pthread_create(&t, NULL, worker, (void *)i)) {
			fprintf(stderr, "thread %ld: cannot create\n", i);
			exit(1);
		}
		pthread_join(t, &r);
		sum ^= (unsigned long)r;
	}
	return sum;
}

static int threads(long n)
{
	pthread_t *t = calloc(n, sizeof(*t));
	pthread_attr_t a;
	unsigned long sum = 0;
	long i;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], &a, worker, (void *)i)) {
			fprintf(stderr, "thread %ld: cannot create\n", i);
			return 1;
		}
	for (i = 0; i < n; i++) {
		void *r;

		pthread_join(t[i], &r);
		sum ^= (unsigned long)r;
	}
	printf("threads %ld %lx\n", n, sum);
	free(t);
	return 0;
}

/* D calls deep, each calling leaf() on its way back. */
static unsigned long __attribute__((noinline)) deep(unsigned long d)
{
	if (!d)
		return 1;
	return deep(d - 1) * 3 + leaf(d);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long n = argc > 2 ? atol(argv[2]) : 1000;
	unsigned long x;

	frame[0] = (unsigned long)frame; /* its saved fp: itself */
	frame[1] = (unsigned long)leaf + 4;
	if (!strcmp(mode, "fploop"))
		x = bad_frames((unsigned long)frame, n * 1000000UL, 0);
	else if (!strcmp(mode, "fpwild"))
		x = bad_frames(0x0000100000000000UL, n * 1000000UL, 0);
	else if (!strcmp(mode, "sptop"))
		x = bad_frames(~0xfUL, n * 1000000UL, 1);
	else if (!strcmp(mode, "threads"))
		return threads(n);
	else if (!strcmp(mode, "churn"))
		x = churn(n);
	else if (!strcmp(mode, "deep"))
		for (long i = x = 0; i < n; i++)
			x += deep(3000);
	else if (!strcmp(mode, "exec") && n > 0) {
		char left[32];

		snprintf(left, sizeof(left), "%ld", n - 1);
		execl("/proc/self/exe", argv[0], "exec", left, (char *)NULL);
		perror("exec");
		return 1;
	} else if (!strcmp(mode, "exec"))
		x = leaf(n);
	else {
		fprintf(stderr, "usage: hostile fploop|fpwild|sptop|threads|churn|exec|deep [N]\n");
		return 2;
	}
	printf("%s %ld %lx\n", mode, n, x);
	return 0;
}
