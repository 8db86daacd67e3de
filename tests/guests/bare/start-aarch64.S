/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Entry of the bare-metal aarch64 guest: QEMU's -M virt starts it at EL1
 * with the MMU off.  Set the stack, clear .bss, run main() and hand its
 * result to the semihosting exit.
 */
	.section .text.start, "ax"
	.global _start
_start:
	ldr	x0, =__stack_top
	mov	sp, x0
	mov	x29, #0
	mov	x30, #0
	ldr	x0, =__bss_start
	ldr	x1, =__bss_end
1:	cmp	x0, x1
	b.hs	2f
	str	xzr, [x0], #8
	b	1b
2:	bl	main
	bl	semi_exit
3:	wfi
	b	3b
