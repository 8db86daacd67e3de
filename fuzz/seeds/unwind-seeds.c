// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The seeds of fuzz/unwind.c: samples of guest.c's programs in
 * corpus/elf, stopped in leaf() called by fib(1), called by fib(3),
 * called by main(), as the frame-pointer walk (fp) and the stack copy
 * (dwarf) report them.  Return addresses are those of the programs'
 * calls, at the biases fuzz/unwind.c loads them at.
 *
 *	cc -o /tmp/unwind-seeds fuzz/seeds/unwind-seeds.c &&
 *	/tmp/unwind-seeds fuzz/corpus/unwind
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define X86  0x555555554000ull
#define A64  0x5500000000ull
#define ARM  0x40000000ull
#define RV64 0x2aaaaaa000ull
#define LIBC 0x7f0000012345ull /* main's caller: in no image */

struct seed {
	uint8_t buf[4096];
	size_t len;
};

static void put(struct seed *s, uint64_t v, size_t n)
{
	memcpy(s->buf + s->len, &v, n); /* little-endian host */
	s->len += n;
}

/* The fixed part of the input (fuzz/unwind.c says which). */
static void head(struct seed *s, uint8_t ctl, uint8_t size, uint8_t nguest, uint8_t nwords,
		 uint16_t machine, uint32_t stack_len, uint64_t leaf, uint64_t sp, uint64_t fp,
		 uint64_t lr)
{
	s->len = 0;
	put(s, ctl, 1);
	put(s, size, 1);
	put(s, 0, 1); /* little-endian */
	put(s, nguest, 1);
	put(s, nwords, 1);
	put(s, machine, 2);
	put(s, 4242, 4); /* tid */
	put(s, stack_len, 4);
	put(s, 1, 4); /* QJ_SAMPLE_VCPU */
	put(s, leaf, 8);
	put(s, sp, 8);
	put(s, fp, 8);
	put(s, lr, 8);
}

static void save(const char *dir, const char *name, const struct seed *s)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(s->buf, 1, s->len, f) != s->len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	const uint64_t sp = 0x7ffffff000ull, sp32 = 0xfffe000;
	struct seed s;
	int i;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}

	/*
	 * x86_64: leaf() at its entry, its return address at sp; fib keeps
	 * 24 bytes (rbp, rbx, padding) below its own, main 8.
	 */
	head(&s, 0, 8, 3, 32, 62, 0, X86 + 0x1149, sp, sp + 0x40, 0);
	put(&s, X86 + 0x116f, 8); /* the chain: fib(3)'s caller, fib */
	put(&s, X86 + 0x1192, 8); /* main */
	put(&s, LIBC, 8);
	for (i = 0; i < 32; i++)
		put(&s, i ? 0 : X86 + 0x1160, 8); /* leaf's return into fib */
	save(argv[1], "x86_64-fp", &s);

	head(&s, 0, 8, 0, 0, 62, 96, X86 + 0x1149, sp, 0, 0);
	put(&s, X86 + 0x1160, 8); /* sp: leaf returns into fib(1) */
	put(&s, 0, 8), put(&s, 3, 8), put(&s, 0, 8);
	put(&s, X86 + 0x116f, 8); /* sp + 32: fib(1) returns into fib(3) */
	put(&s, 0, 8), put(&s, 10, 8), put(&s, 0, 8);
	put(&s, X86 + 0x1192, 8); /* sp + 64: fib(3) returns into main */
	put(&s, 0, 8);
	put(&s, LIBC, 8); /* sp + 80: main returns into libc */
	put(&s, 0, 8);
	save(argv[1], "x86_64-dwarf", &s);

	/* The same leaf, found as symbol 9 of the image (ctl bit 3), after
	 * a Dwfl built again (bits 6-7). */
	s.buf[0] = 0xc8;
	memset(s.buf + 19, 0, 8); /* the leaf */
	s.buf[20] = 9;
	save(argv[1], "x86_64-dwarf-sym", &s);

	/* The same stack, in a program exec'd where another was (bits 6-7). */
	s.buf[0] = 0x80;
	save(argv[1], "x86_64-dwarf-exec", &s);

	/*
	 * AArch64: leaf() returns through x30; fib's frame record {x29, x30}
	 * at x29 = sp (32 bytes with x19, x20), main's 16 bytes above.
	 */
	head(&s, 1, 8, 3, 8, 183, 0, A64 + 0x7d4, sp, sp, A64 + 0x7fc);
	put(&s, A64 + 0x810, 8);
	put(&s, A64 + 0x83c, 8);
	put(&s, LIBC, 8);
	put(&s, sp + 32, 8), put(&s, A64 + 0x810, 8), put(&s, 1, 8), put(&s, 0, 8);
	put(&s, sp + 64, 8), put(&s, A64 + 0x83c, 8), put(&s, 3, 8), put(&s, 2, 8);
	save(argv[1], "aarch64-fp", &s);

	head(&s, 1, 8, 0, 0, 183, 96, A64 + 0x7d4, sp, sp, A64 + 0x7fc);
	put(&s, sp + 32, 8), put(&s, A64 + 0x810, 8), put(&s, 1, 8), put(&s, 0, 8);
	put(&s, sp + 64, 8), put(&s, A64 + 0x83c, 8), put(&s, 3, 8), put(&s, 2, 8);
	put(&s, 0, 8), put(&s, LIBC, 8), put(&s, 0, 8), put(&s, 0, 8);
	save(argv[1], "aarch64-dwarf", &s);
	s.buf[0] = 0x81;
	save(argv[1], "aarch64-dwarf-exec", &s);

	/*
	 * Arm (Thumb, 32-bit words): leaf() returns through lr; fib pushes
	 * {r3, r4, r5, lr}, main {r3, lr}.  Return addresses have bit 0 set.
	 */
	head(&s, 2, 4, 2, 8, 40, 0, ARM + 0x530, sp32, sp32 + 16, ARM + 0x545);
	put(&s, ARM + 0x54d, 8);
	put(&s, ARM + 0x567, 8);
	put(&s, 0, 4), put(&s, 1, 4), put(&s, 0, 4), put(&s, ARM + 0x54d, 4);
	put(&s, 0, 4), put(&s, 3, 4), put(&s, 0, 4), put(&s, ARM + 0x567, 4);
	put(&s, 0, 4), put(&s, 0x7f001235, 4), put(&s, 0, 4), put(&s, 0, 4);
	put(&s, 0, 8), put(&s, 0, 8), put(&s, 0, 8), put(&s, 0, 8);
	save(argv[1], "arm-fp", &s);

	head(&s, 2, 4, 0, 0, 40, 48, ARM + 0x530, sp32, 0, ARM + 0x545);
	put(&s, 0, 4), put(&s, 1, 4), put(&s, 0, 4), put(&s, ARM + 0x54d, 4);
	put(&s, 0, 4), put(&s, 3, 4), put(&s, 0, 4), put(&s, ARM + 0x567, 4);
	put(&s, 0, 4), put(&s, 0x7f001235, 4), put(&s, 0, 4), put(&s, 0, 4);
	save(argv[1], "arm-dwarf", &s);

	/*
	 * RISC-V: leaf() returns through ra; fib keeps 32 bytes, ra at the
	 * CFA - 8, main 16.  The chain's records {fp, ra} are below fp.
	 */
	head(&s, 3, 8, 3, 8, 243, 0, RV64 + 0x6b8, sp, sp + 32, RV64 + 0x6d6);
	put(&s, RV64 + 0x6e6, 8);
	put(&s, RV64 + 0x704, 8);
	put(&s, LIBC, 8);
	put(&s, 0, 8), put(&s, 0, 8), put(&s, sp + 64, 8), put(&s, RV64 + 0x6e6, 8);
	put(&s, 0, 8), put(&s, 0, 8), put(&s, sp + 80, 8), put(&s, RV64 + 0x704, 8);
	save(argv[1], "riscv64-fp", &s);

	head(&s, 3, 8, 0, 0, 243, 80, RV64 + 0x6b8, sp, sp + 32, RV64 + 0x6d6);
	put(&s, 0, 8), put(&s, 0, 8), put(&s, sp + 64, 8), put(&s, RV64 + 0x6e6, 8);
	put(&s, 0, 8), put(&s, 0, 8), put(&s, sp + 80, 8), put(&s, RV64 + 0x704, 8);
	put(&s, 0, 8), put(&s, LIBC, 8);
	save(argv[1], "riscv64-dwarf", &s);

	/* A guest without images: the leaf alone. */
	head(&s, 4, 8, 1, 1, 62, 16, X86 + 0x1149, sp, sp, 0);
	put(&s, X86 + 0x116f, 8);
	put(&s, X86 + 0x1160, 8);
	put(&s, X86 + 0x1160, 8), put(&s, 0, 8);
	save(argv[1], "no-image", &s);
	return 0;
}
