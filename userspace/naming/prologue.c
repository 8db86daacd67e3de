// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Where a function's caller is, from the function's own code, for code no CFI covers: most of
 * Debian's static riscv64 glibc (__lll_lock_wait, pthread_mutex_lock), and Arm glibc's Thumb-2
 * code. The instructions from the function's entry to the pc are simulated on an abstract state:
 * which registers hold the CFA plus a known offset (sp first), which hold known constants (a
 * large frame's `li t0,-N`), which still hold the caller's values, and where the return address
 * and the caller's frame pointer were stored.
 *
 * GCC shrink-wraps: a test and a branch often come before the prologue, and an epilogue and a
 * tail call before the body's other blocks (riscv64's pthread_mutex_lock). So on RISC-V, AArch64
 * and Arm the function's branches are followed, each address once, until a path reaches the pc:
 * compiled code has one frame state per pc, whichever path reaches it. Calls are taken to return
 * (system calls too); code reached only through a switch's table or as an exception's landing
 * pad is followed from the frame the other paths leave. On x86_64, whose code nearly always has
 * CFI and whose instructions would need a decoder of their lengths, only the straight prologue is
 * read, as gdb does: the rule is then right in the prologue and in a body that keeps sp still.
 *
 * The bytes may be an attacker's: every read is bounded by the length given, every path by the
 * addresses visited, and arithmetic on their values is unsigned.
 */
#include "naming/prologue-sim.h"

#include <stdlib.h>
#include <string.h>

#define WORK	 128	      /* paths waiting to be followed */
#define NLIN	 512	      /* lineages of paths after calls told apart */
#define MAX_CODE (256u << 10) /* the most of a function followed: 2 bytes per halfword */

/* RISC-V's compressed instructions (RV64C). */
static void rvc_step(const struct ctx *c, struct pst *s, uint32_t i, uint64_t at, struct step *st)
{
	int r = (int)bits(i, 11, 7), r2 = (int)bits(i, 6, 2), rd = r ? r : -1;
	int rp = 8 + (int)bits(i, 4, 2), rs1p = 8 + (int)bits(i, 9, 7);
	int64_t ci = sext(bits(i, 12, 12) << 5 | bits(i, 6, 2), 6);
	uint32_t dsd = bits(i, 12, 10) << 3 | bits(i, 6, 5) << 6; /* c.ld, c.sd */

	switch ((i & 3) << 3 | bits(i, 15, 13)) {
	case 000: /* c.addi4spn */
		if (!i)
			st->flow = STOP;
		set_add(c, s, rp, 2, -1, false,
			bits(i, 12, 11) << 4 | bits(i, 10, 7) << 6 | bits(i, 6, 6) << 2 |
				bits(i, 5, 5) << 3);
		break;
	case 002: /* c.lw */
		clobber(c, s, rp);
		break;
	case 003: /* c.ld */
		load(c, s, rp, rs1p, dsd);
		break;
	case 004: /* Zcb, not in RV64GC */
		st->flow = STOP;
		break;
	case 007: /* c.sd */
		store(c, s, rp, rs1p, dsd);
		break;
	case 010: /* c.addi */
		set_add(c, s, rd, r, -1, false, (uint64_t)ci);
		break;
	case 011: /* c.addiw */
		if (has(s->cst, r))
			set_val(c, s, rd, false,
				(uint64_t)sext((uint64_t)s->val[r] + (uint64_t)ci, 32));
		else
			clobber(c, s, rd);
		break;
	case 012: /* c.li */
		set_val(c, s, rd, false, (uint64_t)ci);
		break;
	case 013:
		if (r == 2) /* c.addi16sp */
			set_add(c, s, 2, 2, -1, false,
				(uint64_t)sext(bits(i, 12, 12) << 9 | bits(i, 4, 3) << 7 |
						       bits(i, 5, 5) << 6 | bits(i, 2, 2) << 5 |
						       bits(i, 6, 6) << 4,
					       10));
		else /* c.lui */
			set_val(c, s, rd, false, (uint64_t)sext((uint64_t)(uint32_t)ci << 12, 18));
		break;
	case 014: /* c.srli, c.srai, c.andi, c.sub, c.xor, c.or, c.and, c.subw, c.addw */
		clobber(c, s, rs1p);
		break;
	case 015: /* c.j */
		jump(st, at,
		     sext(bits(i, 12, 12) << 11 | bits(i, 11, 11) << 4 | bits(i, 10, 9) << 8 |
				  bits(i, 8, 8) << 10 | bits(i, 7, 7) << 6 | bits(i, 6, 6) << 7 |
				  bits(i, 5, 3) << 1 | bits(i, 2, 2) << 5,
			  12),
		     false);
		break;
	case 016: /* c.beqz */
	case 017: /* c.bnez */
		jump(st, at,
		     sext(bits(i, 12, 12) << 8 | bits(i, 11, 10) << 3 | bits(i, 6, 5) << 6 |
				  bits(i, 4, 3) << 1 | bits(i, 2, 2) << 5,
			  9),
		     true);
		break;
	case 020: /* c.slli */
	case 022: /* c.lwsp */
		clobber(c, s, rd);
		break;
	case 023: /* c.ldsp */
		load(c, s, rd, 2, bits(i, 12, 12) << 5 | bits(i, 6, 5) << 3 | bits(i, 4, 2) << 6);
		break;
	case 024:
		if (!bits(i, 12, 12) && !r2) /* c.jr: ret when to ra */
			st->flow = r == 1 ? STOP : INDIRECT;
		else if (!bits(i, 12, 12)) /* c.mv */
			set_add(c, s, rd, r2, -1, false, 0);
		else if (!r2) /* c.ebreak, c.jalr */
			st->flow = r ? CALL : STOP;
		else /* c.add */
			set_add(c, s, rd, r, r2, false, 0);
		break;
	case 027: /* c.sdsp */
		store(c, s, r2, 2, bits(i, 12, 10) << 3 | bits(i, 9, 7) << 6);
		break;
	default: /* floating-point loads and stores, c.swsp */
		break;
	}
}

/* RISC-V, RV64GC. */
static void rv_step(const struct ctx *c, struct pst *s, uint64_t at, struct step *st)
{
	uint32_t i;
	int rd, rs1, rs2;
	int64_t imm;

	if (!fetch(c, at, 2, &i)) {
		st->flow = STOP;
		return;
	}
	st->len = 2;
	if ((i & 3) != 3) {
		rvc_step(c, s, i, at, st);
		return;
	}
	st->len = 4;
	if (!fetch(c, at, 4, &i) || (i & 0x1f) == 0x1f) { /* cut short, or longer than 32 bits */
		st->flow = STOP;
		return;
	}
	rd = bits(i, 11, 7) ? (int)bits(i, 11, 7) : -1;
	rs1 = (int)bits(i, 19, 15);
	rs2 = (int)bits(i, 24, 20);
	imm = sext(i >> 20, 12);
	switch (i & 0x7f) {
	case 0x13: /* OP-IMM: addi */
		if (bits(i, 14, 12) == 0)
			set_add(c, s, rd, rs1, -1, false, (uint64_t)imm);
		else
			clobber(c, s, rd);
		break;
	case 0x1b: /* OP-IMM-32: addiw of a constant (li) */
		if (bits(i, 14, 12) == 0 && has(s->cst, rs1))
			set_val(c, s, rd, false,
				(uint64_t)sext((uint64_t)s->val[rs1] + (uint64_t)imm, 32));
		else
			clobber(c, s, rd);
		break;
	case 0x37: /* lui */
		set_val(c, s, rd, false, (uint64_t)sext(i & 0xfffff000u, 32));
		break;
	case 0x33: /* OP: add, sub */
		if (bits(i, 14, 12) == 0 && (i >> 25) == 0)
			set_add(c, s, rd, rs1, rs2, false, 0);
		else if (bits(i, 14, 12) == 0 && (i >> 25) == 0x20)
			set_add(c, s, rd, rs1, rs2, true, 0);
		else
			clobber(c, s, rd);
		break;
	case 0x03: /* LOAD */
		if (bits(i, 14, 12) == 3)
			load(c, s, rd, rs1, imm);
		else
			clobber(c, s, rd);
		break;
	case 0x23: /* STORE: sd */
		if (bits(i, 14, 12) == 3)
			store(c, s, rs2, rs1, sext(bits(i, 31, 25) << 5 | bits(i, 11, 7), 12));
		break;
	case 0x63: /* BRANCH */
		jump(st, at,
		     sext(bits(i, 31, 31) << 12 | bits(i, 30, 25) << 5 | bits(i, 11, 8) << 1 |
				  bits(i, 7, 7) << 11,
			  13),
		     true);
		break;
	case 0x6f: /* jal: a jump, or a call with any link register */
		if (rd < 0)
			jump(st, at,
			     sext(bits(i, 31, 31) << 20 | bits(i, 30, 21) << 1 |
					  bits(i, 20, 20) << 11 | bits(i, 19, 12) << 12,
				  21),
			     false);
		else
			st->flow = CALL;
		break;
	case 0x67: /* jalr */
		st->flow = rd >= 0 ? CALL : rs1 == 1 && imm == 0 ? STOP : INDIRECT;
		break;
	case 0x73: /* SYSTEM: ecall returns (with a0); ebreak, wfi, xret stop; else CSRs */
		if (i == 0x73)
			clobber(c, s, 10);
		else if (bits(i, 14, 12) == 0)
			st->flow = STOP;
		else
			clobber(c, s, rd);
		break;
	case 0x53: /* OP-FP: fcmp, fcvt to an integer, fmv.x and fclass write an x register */
		if ((i >> 27) == 0x14 || (i >> 27) == 0x18 || (i >> 27) == 0x1c)
			clobber(c, s, rd);
		break;
	case 0x17: /* auipc */
	case 0x2f: /* AMO */
	case 0x3b: /* OP-32 */
		clobber(c, s, rd);
		break;
	case 0x07: /* LOAD-FP */
	case 0x27: /* STORE-FP */
	case 0x0f: /* MISC-MEM */
	case 0x43: /* fused multiply-adds */
	case 0x47:
	case 0x4b:
	case 0x4f:
		break;
	default: /* vector, custom: not followed */
		st->flow = STOP;
		break;
	}
}

/* x86_64: the straight prologue GCC writes, read until the first instruction not of it. */
static void x86_scan(const struct ctx *c, struct pst *s, uint64_t pc)
{
	for (uint64_t at = 0; at < pc;) {
		const uint8_t *p = c->code + at;
		uint64_t n = c->len - at;
		unsigned rex = (p[0] & 0xf0) == 0x40;
		int64_t imm;

		if (n >= 4 && !memcmp(p, "\xf3\x0f\x1e\xfa", 4)) { /* endbr64 */
			at += 4;
		} else if (p[0] >= 0x50 && p[0] <= 0x57) { /* push */
			set_add(c, s, 4, 4, -1, false, (uint64_t)-8);
			store(c, s, p[0] - 0x50, 4, 0);
			at += 1;
		} else if (n >= 2 && p[0] == 0x41 && p[1] >= 0x50 &&
			   p[1] <= 0x57) { /* push r8-r15 */
			set_add(c, s, 4, 4, -1, false, (uint64_t)-8);
			at += 2;
		} else if (n >= 3 &&
			   (!memcmp(p, "\x48\x89\xe5", 3) || !memcmp(p, "\x48\x8b\xec", 3))) {
			set_add(c, s, 5, 4, -1, false, 0); /* mov %rsp,%rbp */
			at += 3;
		} else if (n >= 4 && p[0] == 0x48 && p[1] == 0x83 &&
			   (p[2] == 0xec || p[2] == 0xc4)) {
			imm = sext(p[3], 8); /* sub, add $imm8,%rsp */
			set_add(c, s, 4, 4, -1, false, (uint64_t)(p[2] == 0xec ? -imm : imm));
			at += 4;
		} else if (n >= 7 && p[0] == 0x48 && p[1] == 0x81 &&
			   (p[2] == 0xec || p[2] == 0xc4)) {
			imm = sext((uint64_t)p[3] | p[4] << 8 | p[5] << 16 | (uint64_t)p[6] << 24,
				   32);
			set_add(c, s, 4, 4, -1, false, (uint64_t)(p[2] == 0xec ? -imm : imm));
			at += 7;
		} else if (n >= 5 && !memcmp(p, "\x48\x8d\x64\x24", 4)) { /* lea disp8(%rsp),%rsp */
			set_add(c, s, 4, 4, -1, false, (uint64_t)sext(p[4], 8));
			at += 5;
		} else if (n >= 8 &&
			   !memcmp(p, "\x48\x8d\xa4\x24", 4)) { /* lea disp32(%rsp),%rsp */
			imm = sext((uint64_t)p[4] | p[5] << 8 | p[6] << 16 | (uint64_t)p[7] << 24,
				   32);
			set_add(c, s, 4, 4, -1, false, (uint64_t)imm);
			at += 8;
		} else if (n >= 2u + rex && (p[rex] == 0x89 || p[rex] == 0x8b) &&
			   p[rex + 1] >= 0xc0) {
			/* mov between registers, which GCC puts between the pushes */
			uint8_t m = p[rex + 1], b = rex ? p[0] : 0x40;
			int d = p[rex] == 0x89 ? (m & 7) | (b & 1) << 3
					       : (m >> 3 & 7) | (b & 4) << 1;

			if (d == 4)
				break;
			clobber(c, s, d);
			at += 2u + rex;
		} else {
			break;
		}
	}
}

/*
 * The register the CFA is found from: the frame pointer, which an alloca does not move; but in
 * Thumb code, where r7 may as well be a pointer into the frame, sp while it is known, unless
 * paths met with the same r7 but another sp (SP_VARIES: an alloca on one of them).
 */
static int cfa_base(const struct ctx *c, const struct pst *s, bool sp_varies)
{
	if (!s->fp_frame || !has(s->rel, c->fp) || (c->thumb && has(s->rel, c->sp) && !sp_varies))
		return c->sp;
	return c->fp;
}

/* The rule state S gives, in the machine's DWARF numbers. */
static bool rule_of(const struct ctx *c, const struct pst *s, bool sp_varies,
		    struct prologue_rule *r)
{
	int b = cfa_base(c, s, sp_varies);

	memset(r, 0, sizeof(*r));
	if (!has(s->rel, b))
		return false;
	r->cfa_reg = b == c->fp ? c->dfp : c->dsp;
	r->cfa_off = (int64_t)(0 - (uint64_t)s->val[b]);
	r->fp_reg = c->dfp;
	if (c->ra < 0 || s->ra_saved) {
		r->ra_saved = true;
		r->ra_off = c->ra < 0 ? -8 : s->ra_off;
	} else if (!has(s->orig, c->ra)) {
		return false; /* lost: a call before it was saved */
	}
	if (s->fp_saved) {
		r->fp_saved = true;
		r->fp_off = s->fp_off;
	} else if (!has(s->orig, c->fp)) {
		return false;
	}
	r->abi_fp_saved = s->abi_fp_saved;
	r->abi_fp_off = s->abi_fp_saved ? s->abi_fp_off : 0;
	/* Saved wins: the register may have been reused on another path joining this one. */
	r->abi_fp_kept = !s->abi_fp_saved && has(s->orig, c->abi_fp);
	return true;
}

static bool same_rule(const struct prologue_rule *a, const struct prologue_rule *b)
{
	return a->cfa_reg == b->cfa_reg && a->cfa_off == b->cfa_off && a->ra_saved == b->ra_saved &&
	       a->ra_off == b->ra_off && a->fp_saved == b->fp_saved && a->fp_off == b->fp_off;
}

/* Whether R is the rule inside a frame rather than at the function's entry. */
static bool framed(const struct ctx *c, const struct prologue_rule *r)
{
	return r->cfa_reg != c->dsp || r->cfa_off || r->ra_saved;
}

/* The state of the jumps through a register, or of the calls, if they all agree. */
struct frame {
	struct pst s;
	struct prologue_rule r;
	int n; /* 0: none seen; 1: all agree; -1: they do not */
	/* They disagree on where the ABI's frame pointer is saved, or on whether it is kept. */
	bool abi_off_differs, abi_kept_differs;
};

struct item {
	uint64_t at;
	struct pst s;
	int lin; /* after which call the path goes on, a lineage: 0 none */
};

/* What the work map says of a halfword of code: seen; a path ended before it (another block may
 * begin there); and hashes of sp's and the frame pointer's offsets there (frame_bits()). */
enum { SEEN = 1, END = 2, SP_BITS = 0x7f << 2, FP_BITS = 0x7f << 9 };

/*
 * The paths waiting to be followed, and what the paths followed found. Paths going on after a
 * call are taken last, in the order of their calls: the code after a call to a function that
 * does not return (abort) is often a block a branch or a switch's table reaches in another
 * frame, or data. Such a path gives itself away where it joins code followed before in another
 * frame: a pc reached after the same calls is then not answered.
 */
struct work {
	struct item *it;
	uint16_t *map; /* for each halfword of code: SEEN, END, and the frame seen there */
	int nmain, nlate, first; /* main paths, a stack; paths after a call, in turn from FIRST */
	bool lost;		 /* a path was dropped: the work list was full */
	struct frame ind, call;
	bool sp_varies;	     /* paths met with the same frame pointer, another sp */
	struct pst pc_state; /* the state at the pc */
	int nlin, pc_lin;    /* the lineages; that of the path that reached the pc, or -1 */
	uint16_t up[NLIN];   /* each lineage's parent, the lineage of the path with the call */
	bool conflict[NLIN]; /* a path of the lineage joined another in another frame */
};

/* A path to follow from AT in state S, of lineage LIN; AFTER_CALL: it goes on after a call,
 * and starts a lineage of its own. */
static void push(struct work *w, uint64_t at, const struct pst *s, int lin, bool after_call)
{
	struct item *slot;

	if (after_call ? w->nlate >= WORK : w->nmain >= WORK) {
		w->lost = true;
		return;
	}
	if (after_call && w->nlin < NLIN - 1) {
		w->up[w->nlin] = (uint16_t)lin;
		lin = w->nlin++;
	} else if (after_call) { /* too many calls to tell apart: none is answered after */
		lin = NLIN - 1;
		w->conflict[lin] = true;
	}
	slot = after_call ? &w->it[WORK + (w->first + w->nlate++) % WORK] : &w->it[w->nmain++];
	slot->at = at;
	slot->s = *s;
	slot->lin = lin;
}

/* Whether the pc was reached after calls of which one is followed by a path that conflicts.
 * (A call after them may not return, and conflict, with no harm to them.) */
static bool pc_conflicts(const struct work *w)
{
	for (int k = w->pc_lin; k > 0; k = w->up[k])
		if (w->conflict[k])
			return true;
	return false;
}

/*
 * One more state of F's kind: a frame's state wins over the entry's (a tail call's). States of
 * the same rule that disagree on the ABI's frame pointer (in Thumb code, where it is not fp)
 * leave it unknown: not saved, or not kept, as they disagree.
 */
static void note(const struct ctx *c, struct frame *f, const struct pst *s)
{
	struct prologue_rule r;
	bool same;

	if (f->n < 0 || !rule_of(c, s, false, &r) || (f->n && framed(c, &f->r) && !framed(c, &r)))
		return;
	same = f->n && framed(c, &f->r) == framed(c, &r);
	if (same && !same_rule(&r, &f->r)) {
		f->n = -1;
		return;
	}
	f->abi_off_differs = same && (f->abi_off_differs || r.abi_fp_saved != f->r.abi_fp_saved ||
				      r.abi_fp_off != f->r.abi_fp_off);
	f->abi_kept_differs = same && (f->abi_kept_differs || r.abi_fp_kept != f->r.abi_fp_kept);
	f->s = *s;
	if (f->abi_off_differs)
		f->s.abi_fp_saved = false;
	if (f->abi_kept_differs)
		f->s.orig &= ~(1u << c->abi_fp);
	f->r = r;
	f->n = 1;
}

/* Seven bits of register R's offset from the CFA, never 0: 0 stands for not known. */
static unsigned hash7(const struct pst *s, int r)
{
	unsigned h = (unsigned)(((uint64_t)s->val[r] * 0x9e3779b97f4a7c15ull) >> 57);

	return h ? h : 1;
}

/* Where S puts sp and the frame pointer, for the work map, 0 for either not known. */
static uint16_t frame_bits(const struct ctx *c, const struct pst *s)
{
	unsigned sp = has(s->rel, c->sp) ? hash7(s, c->sp) : 0;
	unsigned fp = s->fp_frame && has(s->rel, c->fp) ? hash7(s, c->fp) : 0;

	return (uint16_t)(sp << 2 | fp << 9);
}

/* Whether frames A and B, of the work map, differ: in sp, unless both have the same frame
 * pointer (an alloca moves sp); or in the frame pointer, where sp is not known to both. */
static bool frames_differ(uint16_t a, uint16_t b)
{
	if ((a & FP_BITS) && (a & FP_BITS) == (b & FP_BITS))
		return false;
	if ((a & SP_BITS) && (b & SP_BITS))
		return (a & SP_BITS) != (b & SP_BITS);
	return (a & FP_BITS) && (b & FP_BITS);
}

/* Follow the path IT; true when it reaches PC and no other path needs following. */
static bool walk(const struct ctx *c, struct work *w, const struct item *it, uint64_t pc)
{
	struct pst s = it->s;
	uint64_t at = it->at;
	int lin = it->lin; /* before pushes reuse the item */

	while (at < c->len) {
		struct step st = {.len = 2, .flow = NEXT};
		uint16_t *m = &w->map[at / 2];
		struct pst before;

		if (*m & SEEN) { /* a join: say whether the frames differ, or only sp does */
			uint16_t now = frame_bits(c, &s);

			w->conflict[lin] |= lin && frames_differ(*m, now);
			w->sp_varies |= (now & FP_BITS) && !((*m ^ now) & FP_BITS) &&
					((*m ^ now) & SP_BITS);
			return false;
		}
		if (at == pc) {
			w->pc_state = s;
			w->pc_lin = lin;
			if (!lin && !(c->thumb && s.fp_frame))
				return true;
		}
		*m |= SEEN | frame_bits(c, &s);
		if (c->machine == EM_ARM) /* only Arm's instructions but branches are conditional */
			before = s;
		c->step(c, &s, at, &st);
		if (st.cond && c->machine == EM_ARM) {
			before.it = s.it;
			push(w, at + st.len, &before, lin, false);
		} else if (st.cond) {
			push(w, at + st.len, &s, lin, false);
		}
		if (s.dead)
			return false;
		if (st.flow == CALL) {
			note(c, &w->call, &s);
			s.rel &= c->callee;
			s.cst &= c->callee;
			s.orig &= c->callee;
			push(w, at + st.len, &s, lin, true);
			return false;
		}
		if (st.flow == INDIRECT)
			note(c, &w->ind, &s);
		if (st.flow == NEXT || (st.flow == JUMP && st.cond)) {
			at = st.flow == JUMP ? st.target : at + st.len;
			continue;
		}
		if (!st.cond && at + st.len < c->len)
			w->map[(at + st.len) / 2] |= END;
		if (st.flow != JUMP)
			return false;
		at = st.target;
	}
	return false;
}

/* Follow the paths waiting; true when the pc is answered. */
static bool explore(const struct ctx *c, struct work *w, uint64_t pc)
{
	while (w->nmain || w->nlate) {
		struct item *it = w->nmain ? &w->it[--w->nmain] : &w->it[WORK + w->first];

		if (it >= w->it + WORK) {
			w->first = (w->first + 1) % WORK;
			w->nlate--;
		}
		if (walk(c, w, it, pc))
			return true;
	}
	return w->pc_lin >= 0 && !pc_conflicts(w);
}

/*
 * Follow the function's paths from its entry until one reaches PC. If none does, PC is in code
 * reached through a switch's table, or an exception's landing pad, in the frame the jumps
 * through a register, or else the calls, leave: follow the blocks after the paths' ends from it.
 */
static bool follow(const struct ctx *c, const struct pst *entry, uint64_t pc,
		   struct prologue_rule *r)
{
	size_t nmap = c->len / 2 + 1;
	struct work *w = malloc(sizeof(*w) + 2 * WORK * sizeof(struct item) + nmap * 2);
	const struct frame *f;
	bool found, more = true;

	if (!w)
		return false;
	memset(w, 0, sizeof(*w));
	w->it = (struct item *)(w + 1);
	w->map = (uint16_t *)(w->it + 2 * WORK);
	memset(w->map, 0, nmap * 2);
	w->nlin = 1;
	w->pc_lin = -1;
	push(w, 0, entry, 0, false);
	found = explore(c, w, pc);
	f = w->ind.n > 0 ? &w->ind : w->call.n > 0 ? &w->call : NULL;
	/* A few passes: a block followed may end before one already passed. */
	for (int pass = 0; !found && w->pc_lin < 0 && !w->lost && f && more && pass < 4; pass++) {
		more = false;
		for (uint64_t at = 0; !found && at < c->len; at += 2) {
			if ((w->map[at / 2] & (SEEN | END)) == END) {
				push(w, at, &f->s, 0, false);
				found = explore(c, w, pc);
				more = true;
			}
		}
	}
	found = found && rule_of(c, &w->pc_state, w->sp_varies, r);
	free(w);
	return found;
}

/*
 * Each machine's registers, in struct ctx's order: the decoder's sp, fp, ra; sp and fp in DWARF's
 * numbers; the decoder's ABI frame pointer; those calls keep; its decoder.
 */
static const struct ctx machines[] = {
	{NULL, 0, EM_X86_64, false, 4, 5, -1, 7, 6, 5, 0, NULL},
	/* sp, x19-x29 */
	{NULL, 0, EM_AARCH64, false, 31, 29, 30, 31, 29, 29, 0xbff80000u, prologue_a64_step},
	/* x0, sp, gp, tp, s0-s11 */
	{NULL, 0, EM_RISCV, false, 2, 8, 1, 2, 8, 8, 0x0ffc031du, rv_step},
	/* r4-r11, sp; GCC's frame pointer: r11 in A32 code, r7 in Thumb code; the ABI's: r11 */
	{NULL, 0, EM_ARM, false, 13, 11, 14, 13, 11, 11, 0x2ff0u, prologue_a32_step},
	{NULL, 0, EM_ARM, true, 13, 7, 14, 13, 7, 11, 0x2ff0u, prologue_thumb_step},
};

bool prologue_rule(uint16_t machine, bool thumb, const uint8_t *code, size_t len, uint64_t func,
		   uint64_t pc, struct prologue_rule *r)
{
	const struct ctx *m = NULL;
	struct ctx c;
	struct pst s;

	thumb = thumb && machine == EM_ARM;
	for (size_t k = 0; k < sizeof(machines) / sizeof(machines[0]); k++)
		if (machines[k].machine == machine && machines[k].thumb == thumb)
			m = &machines[k];
	if (thumb) {
		func &= ~1ull;
		pc &= ~1ull;
	}
	if (!m || !code || pc < func || pc - func >= len || pc - func >= MAX_CODE)
		return false;
	c = *m;
	c.code = code;
	c.len = len < MAX_CODE ? len : MAX_CODE;
	memset(&s, 0, sizeof(s));
	s.orig = ~0u;
	s.cst = machine == EM_RISCV; /* x0 is 0 */
	s.rel = 1u << c.sp;
	s.val[c.sp] = machine == EM_X86_64 ? -8 : 0; /* the call pushed the return address */
	if (machine == EM_X86_64) {
		x86_scan(&c, &s, pc - func);
		return rule_of(&c, &s, false, r);
	}
	return c.step && follow(&c, &s, pc - func, r);
}
