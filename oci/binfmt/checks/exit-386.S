/* exit(0) on linux/386. */
	.code32
	.globl _start
_start:
	xorl	%ebx, %ebx
	movl	$1, %eax	/* exit */
	int	$0x80
