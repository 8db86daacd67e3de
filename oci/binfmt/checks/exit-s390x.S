/* exit(0) on linux/s390x. */
	.globl _start
_start:
	lghi	%r2, 0
	svc	1		/* exit */
