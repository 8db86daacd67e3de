// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * prologue.c's decoders of Arm's code: AArch64; A32, and Thumb-2 (Debian's armhf glibc), in which
 * a 32-bit instruction is two little-endian halfwords, the first's bits 15-11 0b11101, 0b11110 or
 * 0b11111. Conditional A32 instructions and those of an IT block may not run: the path forks.
 */
#include "naming/prologue-sim.h"

/* AArch64; register 31 is sp where an instruction reads it so, else the zero register (-1). */
void prologue_a64_step(const struct ctx *c, struct pst *s, uint64_t at, struct step *st)
{
	uint32_t i;
	int rd, rn, rt2, xd;
	bool sf, v;

	if (!fetch(c, at, 4, &i)) {
		st->flow = STOP;
		return;
	}
	st->len = 4;
	rd = (int)(i & 31);
	rn = (int)bits(i, 9, 5);
	rt2 = (int)bits(i, 14, 10);
	xd = rd == 31 ? -1 : rd;
	sf = i >> 31;
	v = bits(i, 26, 26);
	if ((i & 0xfffff01f) == 0xd503201f) /* hints: nop, paciasp, autiasp, bti */
		return;
	if ((i & 0xffe0001f) == 0xd4000001) { /* svc returns, with x0 */
		clobber(c, s, 0);
	} else if ((i & 0xff000000) == 0xd4000000) { /* brk, hlt */
		st->flow = STOP;
	} else if ((i & 0xffc00000) == 0xd5000000) { /* system: mrs writes a register */
		if (bits(i, 21, 21))
			clobber(c, s, xd);
	} else if ((i & 0xfe000000) == 0xd6000000) { /* br, blr, ret, and their PAC forms */
		unsigned opc = bits(i, 24, 21);

		st->flow = (opc & 1) ? CALL : opc == 2 || opc == 4 ? STOP : INDIRECT;
	} else if ((i & 0x7c000000) == 0x14000000) { /* b, bl */
		if (sf)
			st->flow = CALL;
		else
			jump(st, at, sext(i, 26) * 4, false);
	} else if ((i & 0xff000000) == 0x54000000 || (i & 0x7e000000) == 0x34000000) {
		jump(st, at, sext(bits(i, 23, 5), 19) * 4, true); /* b.cond, cbz, cbnz */
	} else if ((i & 0x7e000000) == 0x36000000) {		  /* tbz, tbnz */
		jump(st, at, sext(bits(i, 18, 5), 14) * 4, true);
	} else if ((i & 0x1c000000) == 0x14000000) {
		st->flow = STOP;
	} else if ((i & 0x3a000000) == 0x28000000) { /* load or store pair */
		unsigned opc = i >> 30, mode = bits(i, 24, 23), sc = v ? 2 + opc : 2 + (opc >> 1);
		int64_t off = (int64_t)((uint64_t)sext(bits(i, 21, 15), 7) << sc);
		int64_t acc = mode == 1 ? 0 : off;

		if (!v && opc == 2 && !bits(i, 22, 22)) {
			store(c, s, rd, rn, acc);
			store(c, s, rt2, rn, acc + 8);
		} else if (!v && opc == 2) {
			load(c, s, xd, rn, acc);
			load(c, s, rt2 == 31 ? -1 : rt2, rn, acc + 8);
		} else if (!v && bits(i, 22, 22)) {
			clobber(c, s, xd);
			clobber(c, s, rt2 == 31 ? -1 : rt2);
		}
		if (mode == 1 || mode == 3)
			set_add(c, s, rn, rn, -1, false, (uint64_t)off);
	} else if ((i & 0x3b000000) == 0x39000000 || (i & 0x3b200000) == 0x38000000) {
		/* load or store one register: unsigned offset, unscaled, post- or pre-indexed */
		unsigned size = i >> 30, opc = bits(i, 23, 22), mode = bits(i, 11, 10);
		bool uoff = bits(i, 24, 24), wb = !uoff && (mode == 1 || mode == 3);
		unsigned sc = v && (opc & 2) ? 4 : size;
		int64_t off = uoff ? (int64_t)bits(i, 21, 10) << sc : sext(bits(i, 20, 12), 9);
		int64_t acc = !uoff && mode == 1 ? 0 : off;

		if (!v && opc == 0 && size == 3)
			store(c, s, rd, rn, acc);
		else if (!v && opc == 1 && size == 3)
			load(c, s, xd, rn, acc);
		else if (!v && opc != 0 && !(size == 3 && opc == 2))
			clobber(c, s, xd);
		if (wb)
			set_add(c, s, rn, rn, -1, false, (uint64_t)off);
	} else if ((i & 0x0a000000) == 0x08000000) { /* other loads, exclusives, atomics */
		if (!v) {
			blur(c, s, xd);
			blur(c, s, (int)bits(i, 20, 16));
		}
	} else if ((i & 0x1f000000) == 0x11000000) { /* add, sub (immediate) */
		uint64_t imm = (uint64_t)bits(i, 21, 10) << (bits(i, 22, 22) ? 12 : 0);
		int d = bits(i, 29, 29) ? xd : rd;

		if (sf)
			set_add(c, s, d, rn, -1, false, bits(i, 30, 30) ? 0 - imm : imm);
		else
			clobber(c, s, d);
	} else if ((i & 0x1f800000) == 0x12800000) { /* movn, movz, movk */
		unsigned opc = bits(i, 30, 29), sh = 16 * bits(i, 22, 21);
		uint64_t imm = (uint64_t)bits(i, 20, 5) << sh, val = imm;

		if (opc == 0)
			val = ~imm;
		else if (opc == 3 && has(s->cst, xd))
			val = ((uint64_t)s->val[xd] & ~(0xffffull << sh)) | imm;
		if (opc == 1 || (opc == 3 && !has(s->cst, xd)))
			clobber(c, s, xd);
		else
			set_val(c, s, xd, false, sf ? val : (uint32_t)val);
	} else if ((i & 0x1f800000) == 0x12000000) { /* logical (immediate): sp unless ands */
		clobber(c, s, bits(i, 30, 29) == 3 ? xd : rd);
	} else if ((i & 0x1c000000) == 0x10000000) { /* adr, adrp, bitfields, extr */
		clobber(c, s, xd);
	} else if ((i & 0x1f200000) == 0x0b200000) { /* add, sub (extended register) */
		int d = bits(i, 29, 29) ? xd : rd, rm = (int)bits(i, 20, 16);

		if (sf && (bits(i, 15, 13) & 3) == 3 && !bits(i, 12, 10))
			set_add(c, s, d, rn, rm == 31 ? -1 : rm, bits(i, 30, 30), 0);
		else
			clobber(c, s, d);
	} else if ((i & 0xffe0ffe0) == 0xaa0003e0) { /* mov (orr with xzr) */
		int rm = (int)bits(i, 20, 16);

		set_add(c, s, xd, rm == 31 ? -1 : rm, -1, false, 0);
	} else if ((i & 0x0e000000) == 0x0a000000) { /* other data processing (register) */
		clobber(c, s, xd);
	}
}

static uint32_t ror32(uint32_t v, unsigned n)
{
	n &= 31;
	return n ? (v >> n) | (v << (32 - n)) : v;
}

/* The word a literal load reads at offset AT, if inside the code: a large frame's size. */
static void literal(const struct ctx *c, struct pst *s, int rt, uint64_t at)
{
	uint32_t w;

	if (fetch(c, at, 4, &w))
		set_val(c, s, rt, false, w);
	else
		clobber(c, s, rt);
}

/* LDM or STM of the registers in LIST from or to RN, in MODE (A32's P and U: 1 increment after,
 * 2 decrement before, 3 increment before, 0 decrement after), with writeback (WB). The lowest
 * register is at the lowest address. */
static void ldstm(const struct ctx *c, struct pst *s, int rn, uint32_t list, bool ld, unsigned mode,
		  bool wb)
{
	int64_t n = __builtin_popcount(list & 0xffff);
	int64_t off = (mode & 1) ? 4 * (mode >> 1) : -4 * n + 4 * !(mode >> 1);

	for (int r = 0; r < 16; r++) {
		if (!((list >> r) & 1))
			continue;
		if (ld)
			load(c, s, r, rn, off);
		else
			store(c, s, r, rn, off);
		off += 4;
	}
	if (wb && !(ld && ((list >> rn) & 1)))
		set_add(c, s, rn, rn, -1, false, (uint64_t)((mode & 1) ? 4 * n : -4 * n));
}

/* A32's ldr, str, ldrb, strb. */
static void a32_ldst(const struct ctx *c, struct pst *s, uint32_t i, uint64_t at, struct step *st)
{
	int rn = (int)bits(i, 19, 16), rd = (int)bits(i, 15, 12);
	bool p = bits(i, 24, 24), w = bits(i, 21, 21), l = bits(i, 20, 20);
	bool reg = bits(i, 25, 25), byte = bits(i, 22, 22);
	int64_t off = bits(i, 23, 23) ? (int64_t)bits(i, 11, 0) : -(int64_t)bits(i, 11, 0);

	if (l && rn == 15 && !reg && !byte)
		literal(c, s, rd, at + 8 + (uint64_t)off);
	else if (l && (reg || byte))
		clobber(c, s, rd);
	else if (l)
		load(c, s, rd, rn, p ? off : 0);
	else if (!reg && !byte)
		store(c, s, rd, rn, p ? off : 0);
	if ((!p || w) && reg)
		clobber(c, s, rn);
	else if (!p || w)
		set_add(c, s, rn, rn, -1, false, (uint64_t)off);
	if (l && rd == 15)
		st->flow = rn == 13 ? STOP : INDIRECT;
}

/* Arm A32. */
void prologue_a32_step(const struct ctx *c, struct pst *s, uint64_t at, struct step *st)
{
	uint32_t i, opnd;
	int rn, rd, rm;
	bool p, u, w, l;

	if (!fetch(c, at, 4, &i)) {
		st->flow = STOP;
		return;
	}
	st->len = 4;
	rn = (int)bits(i, 19, 16);
	rd = (int)bits(i, 15, 12);
	p = bits(i, 24, 24);
	u = bits(i, 23, 23);
	w = bits(i, 21, 21);
	l = bits(i, 20, 20);
	if ((i >> 28) == 15) { /* unconditional: blx (immediate), pld, barriers */
		if ((i & 0xfe000000) == 0xfa000000)
			st->flow = CALL;
		return;
	}
	st->cond = (i >> 28) != 14;
	switch (bits(i, 27, 25)) {
	case 5: /* b, bl */
		if (p)
			st->flow = CALL;
		else
			jump(st, at, 8 + sext(i, 24) * 4, false);
		return;
	case 4: /* ldm, stm: push and pop */
		ldstm(c, s, rn, i & 0xffff, l, bits(i, 24, 23), w);
		if (l && bits(i, 15, 15))
			st->flow = rn == 13 ? STOP : INDIRECT;
		return;
	case 3:
		if (bits(i, 4, 4)) { /* media instructions */
			blur(c, s, rd);
			blur(c, s, rn);
		} else { /* ldr, str (register offset) */
			a32_ldst(c, s, i, at, st);
		}
		return;
	case 2: /* ldr, str (immediate offset) */
		a32_ldst(c, s, i, at, st);
		return;
	case 6: /* coprocessor loads and stores: vpush, vpop; 64-bit moves to core registers */
		if ((i & 0x0fe00000) == 0x0c400000) {
			if (l) {
				clobber(c, s, rd);
				clobber(c, s, rn);
			}
		} else if (w) {
			set_add(c, s, rn, rn, -1, false,
				(uint64_t)(int64_t)(u ? 4 : -4) * (i & 0xff));
		}
		return;
	case 7: /* svc returns, with r0; mrc and vmov to a core register */
		if (p)
			clobber(c, s, 0);
		else if (l && bits(i, 4, 4))
			clobber(c, s, rd);
		return;
	}
	/* Data processing, multiplies, the other loads and stores, and bx. */
	if (!bits(i, 25, 25) && (i & 0x90) == 0x90) {
		if (!bits(i, 6, 5)) { /* multiplies, swp, exclusives */
			blur(c, s, rn);
			blur(c, s, rd);
			return;
		}
		/* ldrd, strd, ldrh, strh, ldrsb, ldrsh */
		if (l || bits(i, 6, 5) == 2)
			clobber(c, s, rd);
		if (!l && bits(i, 6, 5) == 2)
			clobber(c, s, rd + 1);
		if ((!p || w) && bits(i, 22, 22))
			set_add(c, s, rn, rn, -1, false,
				(uint64_t)(u ? 1 : -1) * (bits(i, 11, 8) << 4 | bits(i, 3, 0)));
		else if (!p || w)
			clobber(c, s, rn);
		return;
	}
	if ((i & 0x0ffffff0) == 0x012fff10) { /* bx */
		st->flow = (i & 15) == 14 ? STOP : INDIRECT;
		return;
	}
	if ((i & 0x0ffffff0) == 0x012fff30) { /* blx (register) */
		st->flow = CALL;
		return;
	}
	if ((i & 0x01900000) == 0x01000000) { /* movw, movt, msr, hints; mrs, clz */
		uint32_t imm = bits(i, 19, 16) << 12 | bits(i, 11, 0);

		if (!bits(i, 25, 25))
			blur(c, s, rd);
		else if (bits(i, 22, 21) == 0)
			set_val(c, s, rd, false, imm);
		else if (bits(i, 22, 21) == 2 && has(s->cst, rd))
			set_val(c, s, rd, false,
				((uint64_t)s->val[rd] & 0xffff) | (uint64_t)imm << 16);
		else if (bits(i, 22, 21) == 2)
			clobber(c, s, rd);
		return;
	}
	if ((bits(i, 24, 21) & 0xc) == 8) /* tst, teq, cmp, cmn */
		return;
	if (rd == 15) {
		st->flow = (i & 0x0fffffff) == 0x01a0f00e ? STOP : INDIRECT; /* mov pc, lr */
		return;
	}
	opnd = ror32(i & 0xff, 2 * bits(i, 11, 8));
	rm = bits(i, 25, 25) ? -1 : (int)(i & 15);
	if (!bits(i, 25, 25) && bits(i, 11, 4)) {
		clobber(c, s, rd);	   /* a shifted register */
	} else if (bits(i, 24, 21) == 4) { /* add */
		set_add(c, s, rd, rn, rm, false, rm < 0 ? opnd : 0);
	} else if (bits(i, 24, 21) == 2) { /* sub */
		set_add(c, s, rd, rn, rm, true, rm < 0 ? 0 - (uint64_t)opnd : 0);
	} else if (bits(i, 24, 21) == 13) { /* mov */
		if (rm < 0)
			set_val(c, s, rd, false, opnd);
		else
			set_add(c, s, rd, rm, -1, false, 0);
	} else if (bits(i, 24, 21) == 15 && rm < 0) { /* mvn */
		set_val(c, s, rd, false, ~opnd);
	} else {
		clobber(c, s, rd);
	}
}

/* Thumb's 16-bit instructions. */
static void t16_step(const struct ctx *c, struct pst *s, uint32_t h, uint64_t at, struct step *st)
{
	int lo = (int)(h & 7), r8 = (int)bits(h, 10, 8), rm = (int)bits(h, 6, 3);
	int d = (int)(bits(h, 7, 7) << 3 | (h & 7)), rn = (int)bits(h, 5, 3);
	uint32_t imm8 = h & 0xff, imm3 = bits(h, 8, 6);

	switch (h >> 11) {
	case 0x00: /* shifts */
	case 0x01:
	case 0x02:
		clobber(c, s, lo);
		break;
	case 0x03: /* adds, subs: register or 3-bit immediate */
		if (bits(h, 10, 10))
			set_add(c, s, lo, rn, -1, false, bits(h, 9, 9) ? 0 - (uint64_t)imm3 : imm3);
		else
			set_add(c, s, lo, rn, (int)imm3, bits(h, 9, 9), 0);
		break;
	case 0x04: /* movs */
		set_val(c, s, r8, false, imm8);
		break;
	case 0x06: /* adds, subs (8-bit immediate) */
	case 0x07:
		set_add(c, s, r8, r8, -1, false, (h >> 11) == 6 ? imm8 : 0 - (uint64_t)imm8);
		break;
	case 0x08:
		if ((h >> 10) == 0x10) { /* data processing, but tst, cmp, cmn */
			if (bits(h, 9, 6) != 8 && bits(h, 9, 6) != 10 && bits(h, 9, 6) != 11)
				clobber(c, s, lo);
		} else if ((h >> 8) == 0x44 && d != 15) { /* add (high registers) */
			set_add(c, s, d, d, rm, false, 0);
		} else if ((h >> 8) == 0x46 && d != 15) { /* mov (high registers) */
			set_add(c, s, d, rm, -1, false, 0);
		} else if ((h >> 8) == 0x47 && bits(h, 7, 7)) { /* blx */
			st->flow = CALL;
		} else if ((h >> 8) != 0x45) { /* bx; add, mov to pc */
			st->flow = rm == 14 ? STOP : INDIRECT;
		}
		break;
	case 0x09: /* ldr (literal) */
		literal(c, s, r8, ((at + 4) & ~3ull) + imm8 * 4);
		break;
	case 0x0a: /* loads and stores (register offset) */
	case 0x0b:
		if (bits(h, 11, 9) >= 3)
			clobber(c, s, lo);
		break;
	case 0x0d: /* ldr, ldrb, ldrh (immediate) */
	case 0x0f:
	case 0x11:
		clobber(c, s, lo);
		break;
	case 0x12: /* str rt, [sp, #imm] */
		store(c, s, r8, 13, imm8 * 4);
		break;
	case 0x13: /* ldr rt, [sp, #imm] */
		load(c, s, r8, 13, imm8 * 4);
		break;
	case 0x14: /* adr */
		clobber(c, s, r8);
		break;
	case 0x15: /* add rd, sp, #imm */
		set_add(c, s, r8, 13, -1, false, imm8 * 4);
		break;
	case 0x16: /* miscellaneous */
	case 0x17:
		if ((h >> 8) == 0xb0) /* add, sub sp, #imm */
			set_add(c, s, 13, 13, -1, false,
				(uint64_t)(bits(h, 7, 7) ? -4 : 4) * (h & 0x7f));
		else if ((h & 0xf500) == 0xb100) /* cbz, cbnz */
			jump(st, at, 4 + (bits(h, 9, 9) << 6 | bits(h, 7, 3) << 1), true);
		else if ((h >> 9) == 0x5a) /* push */
			ldstm(c, s, 13, imm8 | bits(h, 8, 8) << 14, false, 2, true);
		else if ((h >> 9) == 0x5e) /* pop */
			ldstm(c, s, 13, imm8 | bits(h, 8, 8) << 15, true, 1, true);
		else if ((h >> 8) == 0xbf && (h & 15)) /* it */
			s->it = (uint8_t)(4 - __builtin_ctz(h & 15));
		else if ((h >> 8) == 0xbe) /* bkpt */
			st->flow = STOP;
		else if ((h >> 8) != 0xbf) /* extends, rev, cps */
			blur(c, s, lo);
		if ((h >> 9) == 0x5e && bits(h, 8, 8))
			st->flow = STOP; /* pop {..., pc} */
		break;
	case 0x18: /* stm, ldm */
	case 0x19:
		ldstm(c, s, r8, imm8, bits(h, 11, 11), 1, true);
		break;
	case 0x1a: /* b<cond>, udf, svc */
	case 0x1b:
		if ((h >> 8) == 0xdf) /* svc returns, with r0 */
			clobber(c, s, 0);
		else if ((h >> 8) == 0xde)
			st->flow = STOP;
		else
			jump(st, at, 4 + sext(imm8, 8) * 2, true);
		break;
	case 0x1c: /* b */
		jump(st, at, 4 + sext(h & 0x7ff, 11) * 2, false);
		break;
	default: /* cmp, stores (immediate) */
		break;
	}
}

/* ThumbExpandImm: a Thumb-2 modified immediate. */
static uint32_t t_expand(uint32_t imm12)
{
	uint32_t b = imm12 & 0xff;

	if (imm12 >> 10)
		return ror32(0x80 | (imm12 & 0x7f), imm12 >> 7);
	switch (bits(imm12, 9, 8)) {
	case 0:
		return b;
	case 1:
		return b << 16 | b;
	case 2:
		return b << 24 | b << 8;
	default:
		return b * 0x01010101u;
	}
}

/* Thumb's 32-bit instructions, first halfword H, second H2. */
static void t32_step(const struct ctx *c, struct pst *s, uint32_t h, uint32_t h2, uint64_t at,
		     struct step *st)
{
	int rn = (int)(h & 15), rt = (int)(h2 >> 12), rd = (int)bits(h2, 11, 8),
	    rm = (int)(h2 & 15);
	uint32_t i12 = bits(h, 10, 10) << 11 | bits(h2, 14, 12) << 8 | (h2 & 0xff);
	unsigned op = bits(h, 8, 5);

	if ((h & 0xf800) == 0xf000 && (h2 & 0x8000)) { /* branches and miscellaneous control */
		uint32_t sg = bits(h, 10, 10), j1 = bits(h2, 13, 13), j2 = bits(h2, 11, 11);

		if (!(h2 & 0x5000) && bits(h, 9, 7) != 7) /* b<cond>.w */
			jump(st, at,
			     4 + sext(sg << 20 | j2 << 19 | j1 << 18 | bits(h, 5, 0) << 12 |
					      bits(h2, 10, 0) << 1,
				      21),
			     true);
		else if (!(h2 & 0x5000) && (h & 0xffe0) == 0xf3e0) /* mrs */
			clobber(c, s, rd);
		else if (!(h2 & 0x5000) && (h & 0xfff0) == 0xf3d0) /* subs pc, lr */
			st->flow = STOP;
		else if ((h2 & 0x5000) == 0x1000) /* b.w */
			jump(st, at,
			     4 + sext(sg << 24 | (1 ^ j1 ^ sg) << 23 | (1 ^ j2 ^ sg) << 22 |
					      bits(h, 9, 0) << 12 | bits(h2, 10, 0) << 1,
				      25),
			     false);
		else if (h2 & 0x4000) /* bl, blx */
			st->flow = CALL;
	} else if ((h & 0xfe40) == 0xe800) { /* ldm, stm: push.w, pop.w */
		if (op >> 2 == 1 || op >> 2 == 2) {
			ldstm(c, s, rn, h2, bits(h, 4, 4), op >> 2, bits(h, 5, 5));
			if (bits(h, 4, 4) && (h2 & 0x8000))
				st->flow = rn == 13 ? STOP : INDIRECT;
		} else {
			st->flow = STOP; /* srs, rfe */
		}
	} else if ((h & 0xfff0) == 0xe8d0 && (h2 & 0xffe0) == 0xf000) { /* tbb, tbh */
		st->flow = INDIRECT;
	} else if ((h & 0xfe40) == 0xe840 && (h & 0x120)) { /* ldrd, strd */
		int64_t off = (int64_t)(h2 & 0xff) * (bits(h, 7, 7) ? 4 : -4);
		int64_t acc = bits(h, 8, 8) ? off : 0;

		if (bits(h, 4, 4)) {
			load(c, s, rt, rn, acc);
			load(c, s, rd, rn, acc + 4);
		} else {
			store(c, s, rt, rn, acc);
			store(c, s, rd, rn, acc + 4);
		}
		if (bits(h, 5, 5))
			set_add(c, s, rn, rn, -1, false, (uint64_t)off);
	} else if ((h & 0xfe40) == 0xe840) { /* exclusives */
		blur(c, s, rt);
		blur(c, s, rd);
		blur(c, s, rm);
	} else if ((h & 0xfe00) == 0xea00) { /* data processing (shifted register) */
		bool plain = !(h2 & 0x70f0);

		if (rd == 15 && bits(h, 4, 4)) /* tst, teq, cmp, cmn */
			return;
		if (plain && (op == 8 || op == 13))
			set_add(c, s, rd, rn, rm, op == 13, 0);
		else if (plain && op == 2 && rn == 15)
			set_add(c, s, rd, rm, -1, false, 0);
		else
			clobber(c, s, rd);
	} else if ((h & 0xfa00) == 0xf000) { /* data processing (modified immediate) */
		uint32_t v = t_expand(i12);

		if (rd == 15 && bits(h, 4, 4))
			return;
		if (op == 8)
			set_add(c, s, rd, rn, -1, false, v);
		else if (op == 13)
			set_add(c, s, rd, rn, -1, false, 0 - (uint64_t)v);
		else if ((op == 2 || op == 3) && rn == 15)
			set_val(c, s, rd, false, op == 2 ? v : ~v);
		else
			clobber(c, s, rd);
	} else if ((h & 0xfa00) == 0xf200) { /* addw, subw, movw, movt, bitfields */
		unsigned op5 = bits(h, 8, 4);
		uint64_t w16 = (uint64_t)(h & 15) << 12 | i12;

		if (op5 == 0 || op5 == 10)
			set_add(c, s, rd, rn, -1, false, op5 ? 0 - (uint64_t)i12 : i12);
		else if (op5 == 4)
			set_val(c, s, rd, false, w16);
		else if (op5 == 12 && has(s->cst, rd))
			set_val(c, s, rd, false, ((uint64_t)s->val[rd] & 0xffff) | w16 << 16);
		else
			clobber(c, s, rd);
	} else if ((h & 0xfe00) == 0xf800) { /* ldr, str (one register) */
		bool ld = bits(h, 4, 4), word = bits(h, 6, 5) == 2, known = true, wb = false;
		int64_t off = 0, acc = 0;

		if (bits(h, 7, 7) || rn == 15) {
			acc = (int64_t)(h2 & 0xfff) * (bits(h, 7, 7) ? 1 : -1);
		} else if (h2 & 0x800) {
			off = (int64_t)(h2 & 0xff) * (bits(h2, 9, 9) ? 1 : -1);
			acc = bits(h2, 10, 10) ? off : 0;
			wb = bits(h2, 8, 8) || !bits(h2, 10, 10);
		} else {
			known = false;
		}
		if (ld && rt == 15) /* a return or a switch's jump; pld, pli when not a word */
			st->flow = !word ? NEXT : rn == 13 ? STOP : INDIRECT;
		else if (ld && rn == 15 && word)
			literal(c, s, rt, ((at + 4) & ~3ull) + (uint64_t)acc);
		else if (ld && word && known)
			load(c, s, rt, rn, acc);
		else if (ld)
			clobber(c, s, rt);
		else if (word && known)
			store(c, s, rt, rn, acc);
		if (wb)
			set_add(c, s, rn, rn, -1, false, (uint64_t)off);
	} else if ((h & 0xff00) == 0xfa00 || (h & 0xff80) == 0xfb00) { /* data processing, mul */
		clobber(c, s, rd);
	} else if ((h & 0xff80) == 0xfb80) { /* long multiplies */
		clobber(c, s, rt);
		clobber(c, s, rd);
	} else if ((h & 0xffe0) == 0xec40) { /* 64-bit moves between core and FP registers */
		if (bits(h, 4, 4)) {
			clobber(c, s, rt);
			clobber(c, s, rn);
		}
	} else if ((h & 0xee00) == 0xec00) { /* vldm, vstm, vpush, vpop, vldr, vstr */
		if (bits(h, 5, 5))
			set_add(c, s, rn, rn, -1, false,
				(uint64_t)(int64_t)(bits(h, 7, 7) ? 4 : -4) * (h2 & 0xff));
	} else if ((h & 0xef10) == 0xee10 && (h2 & 0x10)) { /* mrc, vmov to a core register */
		clobber(c, s, rt);
	}
}

void prologue_thumb_step(const struct ctx *c, struct pst *s, uint64_t at, struct step *st)
{
	uint32_t h, h2;

	if (!fetch(c, at, 2, &h)) {
		st->flow = STOP;
		return;
	}
	if (s->it) {
		st->cond = true;
		s->it--;
	}
	st->len = 2;
	if ((h >> 11) < 0x1d) {
		t16_step(c, s, h, at, st);
		return;
	}
	st->len = 4;
	if (!fetch(c, at + 2, 2, &h2))
		st->flow = STOP;
	else
		t32_step(c, s, h, h2, at, st);
}
