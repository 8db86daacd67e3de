/*
 * A program that hangs the way programs under emulation are reported to:
 *   hang deadlock   two threads each holding the mutex the other wants;
 *   hang read       a thread blocked reading a pipe nobody writes;
 *   hang sleep      a thread in nanosleep for an hour;
 *   hang spin       a thread retrying mremap(2) as in remap.c, for ever
 *                   where it fails (a 32-bit guest under qemu-user).
 * The main thread joins them.  Before it blocks, each thread prints its
 * own call stack as glibc's backtrace() gives it, one line per frame,
 * "NAME #N 0xADDR", from its caller on; then "ready NAME" once all are set.
 */
#define _GNU_SOURCE
#include <execinfo.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both;
static pthread_mutex_t out = PTHREAD_MUTEX_INITIALIZER;
static int fds[2];

/* The stack of its caller: frame 0 is this function's. */
static void __attribute__((noinline)) print_stack(const char *name)
{
	void *pcs[64];
	int n = backtrace(pcs, 64);

	pthread_mutex_lock(&out);
	for (int i = 1; i < n; i++)
		printf("%s #%d %p\n", name, i - 1, pcs[i]);
	printf("ready %s\n", name);
	fflush(stdout);
	pthread_mutex_unlock(&out);
}

static void *__attribute__((noinline)) lock_ab(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "hang-ab");
	pthread_mutex_lock(&a);
	pthread_barrier_wait(&both);
	print_stack("hang-ab");
	pthread_mutex_lock(&b); /* hang-ab blocks here */
	return NULL;
}

static void *__attribute__((noinline)) lock_ba(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "hang-ba");
	pthread_mutex_lock(&b);
	pthread_barrier_wait(&both);
	print_stack("hang-ba");
	pthread_mutex_lock(&a); /* hang-ba blocks here */
	return NULL;
}

static void *__attribute__((noinline)) read_pipe(void *arg)
{
	char c;

	(void)arg;
	pthread_setname_np(pthread_self(), "hang-read");
	print_stack("hang-read");
	if (read(fds[0], &c, 1) < 0) /* hang-read blocks here */
		perror("read");
	return NULL;
}

static void *__attribute__((noinline)) sleep_long(void *arg)
{
	struct timespec ts = {.tv_sec = 3600};

	(void)arg;
	pthread_setname_np(pthread_self(), "hang-sleep");
	print_stack("hang-sleep");
	nanosleep(&ts, NULL); /* hang-sleep blocks here */
	return NULL;
}

static void *__attribute__((noinline)) grow(void *arg)
{
	char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)arg;
	pthread_setname_np(pthread_self(), "hang-spin");
	if (p == MAP_FAILED || munmap(p + 4096, 4096))
		return NULL;
	print_stack("hang-spin");
	while (mremap(p, 4096, 8192, 0) == MAP_FAILED) /* hang-spin blocks here */
		;
	return NULL;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "deadlock";
	pthread_t t[2];
	int n = 1;

	if (!strcmp(how, "deadlock")) {
		pthread_barrier_init(&both, NULL, 2);
		pthread_create(&t[0], NULL, lock_ab, NULL);
		pthread_create(&t[1], NULL, lock_ba, NULL);
		n = 2;
	} else if (!strcmp(how, "read")) {
		if (pipe(fds))
			return 2;
		pthread_create(&t[0], NULL, read_pipe, NULL);
	} else if (!strcmp(how, "sleep")) {
		pthread_create(&t[0], NULL, sleep_long, NULL);
	} else if (!strcmp(how, "spin")) {
		pthread_create(&t[0], NULL, grow, NULL);
	} else {
		fprintf(stderr, "usage: hang deadlock|read|sleep|spin\n");
		return 2;
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("done\n");
	return 0;
}
