// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A bare-metal aarch64 guest for system mode (-M virt -kernel bare):
 * no OS, MMU off, output and exit through Arm semihosting.  Its work has
 * a known shape, as tests/guests/hot.c's: hot_main() does three times the
 * work of hot_side(), and each round calls each once, so call counts are
 * known exactly.  The number of rounds comes from -append (default 2000);
 * 0 runs until the VM is stopped.
 */
#include <stdint.h>

#define SYS_WRITE0	0x04
#define SYS_GET_CMDLINE 0x15
#define SYS_EXIT	0x18
#define APP_EXIT	0x20026

static uint64_t semihost(uint64_t op, uint64_t arg)
{
	register uint64_t x0 asm("x0") = op;
	register uint64_t x1 asm("x1") = arg;

	asm volatile("hlt #0xf000" : "+r"(x0) : "r"(x1) : "memory");
	return x0;
}

static void put(const char *s)
{
	semihost(SYS_WRITE0, (uint64_t)s);
}

static void put_num(uint64_t n)
{
	char buf[24], *p = buf + sizeof(buf);

	*--p = 0;
	do
		*--p = '0' + n % 10;
	while (n /= 10);
	put(p);
}

void semi_exit(int code)
{
	uint64_t block[2] = {APP_EXIT, (uint64_t)code};

	semihost(SYS_EXIT, (uint64_t)block);
}

/* QEMU's semihosting command line is "KERNEL -APPEND": the rounds are its
 * last word. */
static uint64_t rounds_wanted(void)
{
	static char cmdline[256];
	uint64_t block[2] = {(uint64_t)cmdline, sizeof(cmdline) - 1}, n = 0;
	const char *p, *word = cmdline;

	if (semihost(SYS_GET_CMDLINE, (uint64_t)block) != 0)
		return 2000;
	for (p = cmdline; *p; p++)
		if (*p == ' ' && p[1])
			word = p + 1;
	if (*word < '0' || *word > '9')
		return 2000;
	for (p = word; *p >= '0' && *p <= '9'; p++)
		n = n * 10 + (uint64_t)(*p - '0');
	return n;
}

static volatile uint64_t sink;

__attribute__((noinline)) uint64_t mix(uint64_t x)
{
	x ^= x >> 13;
	x *= 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 29);
}

__attribute__((noinline)) void hot_main(uint64_t r)
{
	uint64_t acc = r;

	for (int i = 0; i < 30000; i++)
		acc = acc * 6364136223846793005ull + (uint64_t)i;
	sink = mix(acc);
}

__attribute__((noinline)) void hot_side(uint64_t r)
{
	uint64_t acc = r;

	for (int i = 0; i < 10000; i++)
		acc = acc * 6364136223846793005ull + (uint64_t)i;
	sink = mix(acc);
}

__attribute__((noinline)) void one_round(uint64_t r)
{
	hot_main(r);
	hot_side(r);
}

int main(void)
{
	uint64_t rounds = rounds_wanted();

	put("bare: start\n");
	for (uint64_t r = 0; !rounds || r < rounds; r++) {
		one_round(r);
		if (r % 1000 == 999) {
			put("bare: round ");
			put_num(r + 1);
			put("\n");
		}
	}
	put("bare: done ");
	put_num(rounds);
	put(" rounds\n");
	return 0;
}
