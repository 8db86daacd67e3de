/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Where a function's caller is, read from the function's own code (prologue.c). */
#ifndef QEMU_JITBPF_PROLOGUE_H
#define QEMU_JITBPF_PROLOGUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Where the caller's frame is at a pc inside a function, found from the function's
 * prologue. Registers are DWARF numbers of the machine (x86_64: rsp 7, rbp 6, ra column 16;
 * AArch64: sp 31, x29 29, x30 30; RISC-V: sp 2, s0/fp 8, ra 1; Arm: sp 13, r11 11, r7 7, lr 14).
 * On AArch64 a return address saved after paciasp or pacibsp is signed: strip its PAC bits.
 */
struct prologue_rule {
	int cfa_reg; /* the CFA (the caller's sp) is cfa_reg + cfa_off */
	int64_t cfa_off;
	bool ra_saved; /* the return address is at CFA + ra_off; else still in the link register */
	int64_t ra_off;
	bool fp_saved; /* the caller's fp is at CFA + fp_off; else the fp register still holds it */
	int64_t fp_off;
	int fp_reg; /* the frame pointer this rule speaks of (Arm: r11 in A32 code, r7 in Thumb) */
	/* The ABI's frame-pointer register (rbp, x29, s0, r11), whatever FP_REG is: the caller's
	 * value is at CFA + abi_fp_off (ABI_FP_SAVED), else still in the register (ABI_FP_KEPT), or
	 * unknown (neither: the function changed it and kept no copy the simulation saw). */
	bool abi_fp_saved, abi_fp_kept;
	int64_t abi_fp_off;
};

/*
 * Decode the prologue of the function whose first instruction is at link address FUNC and
 * whose bytes (from FUNC on, LEN of them, little-endian) are CODE, up to PC (exclusive: the
 * instructions before PC have run), for machine MACHINE (EM_X86_64, EM_AARCH64, EM_RISCV,
 * EM_ARM; THUMB: Arm code in the Thumb instruction set, FUNC's and PC's bit 0 ignored). False
 * when the machine is not one of those, PC is not inside CODE, or the prologue is one it cannot
 * follow (then the caller must not guess).
 *
 * On RISC-V (RV64GC), AArch64 and Arm the function's branches are followed from FUNC to PC: code
 * before a shrink-wrapped prologue, an epilogue on the way, a frame pointer set up before sp moves
 * by a variable amount (alloca) are all understood. Give the whole function (its symbol's size)
 * as LEN: a PC reached only through a branch past LEN is not found. On x86_64 only the straight
 * prologue from FUNC is read, as x86_64 code nearly always has CFI of its own. Reentrant; it
 * allocates some 80 KiB and 2 bytes per 2 bytes of code for the time of the call.
 */
bool prologue_rule(uint16_t machine, bool thumb, const uint8_t *code, size_t len, uint64_t func,
		   uint64_t pc, struct prologue_rule *r);

#endif
