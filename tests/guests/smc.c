/*
 * Self-modifying code as QEMU sees it: each round the guest stores a byte
 * of smc_target back into its own code page (the same value), so QEMU
 * throws away that page's translations and translates smc_target again.
 * Usage: smc [ROUNDS [data]]; prints a checksum that depends only on
 * ROUNDS.  With "data", the byte is stored to a page of data instead: the
 * same work with the code left alone (what keeping written data off code
 * pages saves).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Alone at the start of its page. */
unsigned long __attribute__((noinline, aligned(4096))) smc_target(unsigned long x)
{
	for (int i = 0; i < 100; i++)
		x = x * 31 + (unsigned long)i;
	return x;
}

/* Written instead of the code with "data". */
static unsigned char data_page[4096] __attribute__((aligned(4096)));

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 1000;
	long page = sysconf(_SC_PAGESIZE);
	volatile unsigned char *code = (volatile unsigned char *)smc_target;
	uintptr_t base = (uintptr_t)code & ~(uintptr_t)(page - 1);
	unsigned long x = 1;
	volatile unsigned char *store = argc > 2 && argv[2][0] == 'd' ? data_page : code;

	if (mprotect((void *)base, page, PROT_READ | PROT_WRITE | PROT_EXEC)) {
		perror("smc: mprotect");
		return 1;
	}
	for (long r = 0; r < rounds; r++) {
		x = smc_target(x);
		store[0] = code[0];
	}
	printf("smc %ld %lx\n", rounds, x);
	return 0;
}
