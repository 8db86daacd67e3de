/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The exit(0) programs of checks/, built for their architectures, in the
 * entrypoint's read-only data: check_ARCH to check_ARCH_end.  The
 * directory that holds them is given to the assembler with -I.
 */
#define CHECK(arch, file)                                                      \
	.section .rodata;                                                      \
	.globl check_##arch, check_##arch##_end;                               \
	check_##arch:                                                          \
	.incbin file;                                                          \
	check_##arch##_end:

CHECK(arm64, "exit-arm64")
CHECK(riscv64, "exit-riscv64")
CHECK(ppc64le, "exit-ppc64le")
CHECK(s390x, "exit-s390x")
CHECK(i386, "exit-386")
CHECK(arm, "exit-arm")

	.section .note.GNU-stack, "", @progbits
