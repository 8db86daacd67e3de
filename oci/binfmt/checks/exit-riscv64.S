/* exit(0) on linux/riscv64. */
	.globl _start
_start:
	li	a0, 0
	li	a7, 93		/* exit */
	ecall
