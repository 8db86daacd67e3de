/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * For prologue.c and prologue-arm.c only: the state prologue.c simulates on
 * a path through a function, and the helpers its decoders change it with.
 */
#ifndef QEMU_JITBPF_PROLOGUE_SIM_H
#define QEMU_JITBPF_PROLOGUE_SIM_H

#include "naming/prologue.h"

#include <elf.h>

#ifndef EM_RISCV
#define EM_RISCV 243
#endif

#define NREG 32

struct step;

/*
 * The machine's state on one path through a function. Registers are the decoder's numbers
 * (x86_64: the encoding's, rsp 4 and rbp 5); offsets are from the CFA, the caller's sp.
 */
struct pst {
	int64_t val[NREG]; /* REL: the register holds CFA + val; CST: it holds val */
	uint32_t rel, cst;
	uint32_t orig; /* the registers still holding the caller's values */
	int64_t ra_off, fp_off;
	bool ra_saved, fp_saved; /* the caller's ra, fp are at CFA + ra_off, fp_off */
	bool fp_frame;		 /* the fp register is the frame pointer, set from sp */
	/* The caller's value of the ABI's frame pointer (struct ctx's abi_fp) is at CFA +
	 * abi_fp_off; where abi_fp is fp, these are fp_saved and fp_off again. */
	bool abi_fp_saved;
	int64_t abi_fp_off;
	bool dead;  /* sp was written in a way not followed, and no frame pointer stands in */
	uint8_t it; /* Thumb: the instructions left in an IT block */
};

/* The function and the machine. */
struct ctx {
	const uint8_t *code;
	uint64_t len;
	uint16_t machine;
	bool thumb;
	int sp, fp, ra;	 /* the decoder's numbers; ra -1: always on the stack (x86_64) */
	int dsp, dfp;	 /* the DWARF numbers of sp and fp */
	int abi_fp;	 /* the decoder's number of the ABI's frame pointer (Thumb: r11, not fp) */
	uint32_t callee; /* the registers a call preserves */
	/* The decoder: the instruction at offset AT, run on S; where the path goes then, in ST. */
	void (*step)(const struct ctx *c, struct pst *s, uint64_t at, struct step *st);
};

/* Where the path goes after an instruction: on; to TARGET; on after a call; nowhere (a return,
 * an instruction not followed); nowhere known (a jump through a register: a switch's table). */
enum flow { NEXT, JUMP, CALL, STOP, INDIRECT };

struct step {
	unsigned len;
	enum flow flow;
	bool cond;	 /* the instruction may not run: the path also goes on without it */
	uint64_t target; /* JUMP: an offset from the function's entry */
};

static inline uint32_t bits(uint32_t v, unsigned hi, unsigned lo)
{
	return (v >> lo) & ((2u << (hi - lo)) - 1);
}

/* V's low WIDTH bits as a signed number. */
static inline int64_t sext(uint64_t v, unsigned width)
{
	uint64_t m = 1ull << (width - 1);

	v &= (m << 1) - 1;
	return (int64_t)((v ^ m) - m);
}

/* N bytes at offset AT, little-endian, if all are inside the code. */
static inline bool fetch(const struct ctx *c, uint64_t at, unsigned n, uint32_t *v)
{
	if (at >= c->len || c->len - at < n)
		return false;
	*v = 0;
	for (unsigned k = 0; k < n; k++)
		*v |= (uint32_t)c->code[at + k] << (8 * k);
	return true;
}

/* Whether register R is in MASK. */
static inline bool has(uint32_t mask, int r)
{
	return r >= 0 && r < NREG && ((mask >> r) & 1);
}

/* sp is lost: a frame pointer can still find the CFA, else the path cannot be followed. */
static inline void sp_lost(const struct ctx *c, struct pst *s)
{
	s->rel &= ~(1u << c->sp);
	if (!s->fp_frame)
		s->dead = true;
}

/* R may have been written with a value not followed: forget what is known of it, but keep it
 * as the caller's (a decoder's guess at a destination must not make the caller's fp lost). */
static inline void blur(const struct ctx *c, struct pst *s, int r)
{
	if (r < 0 || r >= NREG || r == c->sp)
		return;
	s->rel &= ~(1u << r);
	s->cst &= ~(1u << r);
	if (r == c->fp)
		s->fp_frame = false;
}

/* R was written with a value not followed. */
static inline void clobber(const struct ctx *c, struct pst *s, int r)
{
	if (r == c->sp) {
		sp_lost(c, s);
		return;
	}
	blur(c, s, r);
	if (r >= 0 && r < NREG)
		s->orig &= ~(1u << r);
}

/* Whether the fp register, just set from sp, is set as the machine's frame pointer is: after the
 * caller's fp was saved, and pointing where GCC's frames point. */
static inline bool frame_like(const struct ctx *c, const struct pst *s)
{
	int64_t v = s->val[c->fp];

	if (!s->fp_saved)
		return false;
	switch (c->machine) {
	case EM_RISCV: /* s0 is the CFA, less a variadic function's register save area */
		return v > s->fp_off;
	case EM_ARM:
		/* GCC's Thumb frame sets r7 to sp after the frame is allocated. */
		return c->thumb || v == s->fp_off || (s->ra_saved && v == s->ra_off);
	default:
		return v == s->fp_off;
	}
}

/* R = V, relative to the CFA (REL) or a constant. */
static inline void set_val(const struct ctx *c, struct pst *s, int r, bool rel, uint64_t v)
{
	uint32_t b;

	if (r < 0 || r >= NREG)
		return;
	b = 1u << r;
	if (r == c->sp && !rel) {
		sp_lost(c, s);
		return;
	}
	if (c->machine == EM_ARM) /* 32-bit registers: -N is -N, not 2^32 - N */
		v = (uint64_t)sext(v, 32);
	s->orig &= ~b;
	s->rel = rel ? s->rel | b : s->rel & ~b;
	s->cst = rel ? s->cst & ~b : s->cst | b;
	s->val[r] = (int64_t)v;
	if (r == c->fp)
		s->fp_frame = rel && frame_like(c, s);
}

/* RD = RN + IMM, +/- RM (NEG); -1 for a register absent (or the zero register). */
static inline void set_add(const struct ctx *c, struct pst *s, int rd, int rn, int rm, bool neg,
			   uint64_t imm)
{
	const int src[2] = {rn, rm};
	uint64_t v = imm;
	int k = 0;

	for (int n = 0; n < 2; n++) {
		int r = src[n];
		bool minus = n && neg;

		if (r < 0)
			continue;
		if (!has(s->rel | s->cst, r)) {
			clobber(c, s, rd);
			return;
		}
		if (has(s->rel, r))
			k += minus ? -1 : 1;
		v = minus ? v - (uint64_t)s->val[r] : v + (uint64_t)s->val[r];
	}
	if (k == 0 || k == 1)
		set_val(c, s, rd, k, v);
	else
		clobber(c, s, rd);
}

/* RT stored at BASE + OFF: the first store of the caller's ra, fp or ABI fp saves it. */
static inline void store(const struct ctx *c, struct pst *s, int rt, int base, int64_t off)
{
	int64_t at = (int64_t)((uint64_t)s->val[base & (NREG - 1)] + (uint64_t)off);

	if (!has(s->rel, base))
		return;
	if (rt == c->ra && has(s->orig, rt) && !s->ra_saved) {
		s->ra_saved = true;
		s->ra_off = at;
	} else if (rt == c->fp && has(s->orig, rt) && !s->fp_saved) {
		s->fp_saved = true;
		s->fp_off = at;
	}
	if (rt == c->abi_fp && has(s->orig, rt) && !s->abi_fp_saved) {
		s->abi_fp_saved = true;
		s->abi_fp_off = at;
	}
}

/* RT loaded from BASE + OFF: from the slot it was saved in, it holds the caller's value again. */
static inline void load(const struct ctx *c, struct pst *s, int rt, int base, int64_t off)
{
	int64_t at = (int64_t)((uint64_t)s->val[base & (NREG - 1)] + (uint64_t)off);
	bool known = has(s->rel, base);

	clobber(c, s, rt);
	if (known && rt == c->ra && s->ra_saved && at == s->ra_off) {
		s->ra_saved = false;
		s->orig |= 1u << rt;
	} else if (known && rt == c->fp && s->fp_saved && at == s->fp_off) {
		s->fp_saved = false;
		s->orig |= 1u << rt;
	}
	if (known && rt == c->abi_fp && s->abi_fp_saved && at == s->abi_fp_off) {
		s->abi_fp_saved = false;
		s->orig |= 1u << rt;
	}
}

/* A branch by DISP from AT; COND: the path may also go on. */
static inline void jump(struct step *st, uint64_t at, int64_t disp, bool cond)
{
	st->flow = JUMP;
	st->target = at + (uint64_t)disp;
	st->cond |= cond;
}

/* A decoder, as struct ctx's step. */
typedef void step_fn(const struct ctx *c, struct pst *s, uint64_t at, struct step *st);

/* AArch64, Arm A32 and Thumb: prologue-arm.c's, since prologue.c's 700 lines cannot hold them. */
step_fn prologue_a64_step, prologue_a32_step, prologue_thumb_step;

#endif
