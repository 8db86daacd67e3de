// SPDX-License-Identifier: GPL-2.0-or-later
#include "writers/uftrace.h"
#include "writers/callfilter.h"
#include "writers/uftrace-records.h"
#include "naming/pltsyms.h"
#include "util/util.h"
#include <linux/types.h>
#include "qemu-jitbpf.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct uthread *thread_of(struct uftrace *u, uint32_t tid, pid_t pid)
{
	struct uthread *t;

	if (u->nthreads && u->threads[u->last].tid == tid)
		return &u->threads[u->last];
	for (size_t i = 0; i < u->nthreads; i++)
		if (u->threads[i].tid == tid) {
			u->last = i;
			return &u->threads[i];
		}
	grow(&u->threads, &u->cap, u->nthreads + 1, sizeof(*u->threads));
	t = &u->threads[u->nthreads];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->pid = pid;
	t->fd = -1;
	u->last = u->nthreads++;
	return t;
}

void uftrace_fork(struct uftrace *u, pid_t pid, uint32_t tid, pid_t child, uint64_t ts)
{
	struct uthread *t = thread_of(u, tid, pid), *c;
	struct frame *stack = NULL;
	size_t depth = t->depth, cap = 0;

	/* thread_of() may move T: copy its stack first. */
	if (depth) {
		grow(&stack, &cap, depth, sizeof(*stack));
		memcpy(stack, t->stack, depth * sizeof(*stack));
	}
	c = thread_of(u, child, child);
	free(c->stack);
	c->stack = stack;
	c->depth = depth;
	c->cap = cap;
	grow(&u->forks, &u->forks_cap, u->nforks + 1, sizeof(*u->forks));
	u->forks[u->nforks++] = (struct ufork){pid, child, ts};
}

void uftrace_flush_thread(struct uftrace *u, struct uthread *t)
{
	if (t->nout && t->fd < 0 && !u->err) {
		char *path = xasprintf("%s/%u.dat", u->dir, t->tid);

		t->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (t->fd < 0) {
			pr_err("cannot create %s: %s", path, strerror(errno));
			u->err = -errno;
		}
		free(path);
	}
	if (t->nout && t->fd >= 0 && !write_all(t->fd, t->out, t->nout * 8) && !u->err)
		u->err = -errno;
	u->bytes += t->nout * 8;
	t->nout = 0;
}

static inline void put(struct uftrace *u, struct uthread *t, uint64_t ts, int type, size_t depth,
		       uint64_t addr)
{
	if (depth >= MAX_STACK) {
		/* uftrace drops what is deeper than max_stack; a gap is
		 * marked at any depth. */
		if (type != REC_LOST)
			return;
		depth = MAX_STACK - 1;
	}
	if (!t->out)
		t->out = xmalloc(OUTBUF);
	if (t->nout * 8 + 16 > OUTBUF)
		uftrace_flush_thread(u, t);
	t->out[t->nout++] = ts;
	t->out[t->nout++] = type | REC_MAGIC << 3 | (uint64_t)depth << 6 | (addr & ADDR_MASK) << 16;
	if (!t->records++)
		t->first_ts = ts;
	t->last_ts = ts;
	if (!u->first_ts || ts < u->first_ts)
		u->first_ts = ts;
	if (ts > u->last_ts)
		u->last_ts = ts;
	u->records++;
}

/* Entries the time filter held back, of frames still open: they come
 * before any record that follows them. */
static void put_held(struct uftrace *u, struct uthread *t)
{
	for (; t->written < t->depth; t->written++) {
		struct frame *f = &t->stack[t->written];

		if ((f->flags & (FR_REC | FR_WRITTEN)) == FR_REC) {
			put(u, t, f->ts, REC_ENTRY, f->rdepth, f->addr);
			f->flags |= FR_WRITTEN;
		}
	}
}

static inline void put_pending(struct uftrace *u, struct uthread *t)
{
	if (t->written < t->depth)
		put_held(u, t);
}

static struct callee *callee_slot(struct callee *v, size_t cap, uint64_t key)
{
	size_t k = (key * 0x9e3779b97f4a7c15ull) & (cap - 1);

	while (v[k].key && v[k].key != key)
		k = (k + 1) & (cap - 1);
	return &v[k];
}

/* What a call of ADDR runs, looked up once per address. */
static const struct callee *callee_new(struct uftrace *u, struct guest *g, uint64_t addr)
{
	struct guest_loc loc = {0};
	struct callee *c;

	if (u->ncallees * 2 >= u->callees_cap) {
		struct callee *old = u->callees;
		size_t cap = u->callees_cap;

		u->callees_cap = cap ? cap * 2 : 1024;
		u->callees = xcalloc(u->callees_cap, sizeof(*u->callees));
		u->last_callee = NULL;
		for (size_t i = 0; i < cap; i++)
			if (old[i].key)
				*callee_slot(u->callees, u->callees_cap, old[i].key) = old[i];
		free(old);
	}
	c = callee_slot(u->callees, u->callees_cap, addr + 1);
	if (c->key)
		return c;
	c->key = addr + 1;
	c->func = g ? guest_call_target(g, addr, &loc) : addr;
	c->start = loc.name && loc.sym_start == c->func;
	c->hold = g && !c->start;
	c->plt = plt_func_len(loc.raw) > 0;
	c->ret_pop = loc.img && loc.img->elf && elf_file_machine(loc.img->elf) == EM_X86_64 ? 8 : 0;
	if (callfilter_by_name(u->filter))
		c->verdict = callfilter_match(u->filter, loc.raw, loc.name);
	u->ncallees++;
	return c;
}

/* The same, from the slot of the last call (loops call one function). */
static inline const struct callee *callee(struct uftrace *u, struct guest *g, uint64_t addr)
{
	if (!u->last_callee || u->last_callee->key != addr + 1)
		u->last_callee = callee_new(u, g, addr);
	return u->last_callee;
}

/*
 * Function C is entered at TS, SP.  The entry of code that is not a named
 * function's start (a PLT stub, a trampoline on the stack) is held back:
 * a jump from it to a function (QJ_CALL_JUMP) replaces it.
 */
static inline void enter(struct uftrace *u, struct uthread *t, const struct callee *c, uint64_t sp,
			 uint64_t ts)
{
	const struct callfilter *f = u->filter;
	const struct frame *p = t->depth ? &t->stack[t->depth - 1] : NULL;
	struct frame fr = {.addr = c->func, .sp = sp, .ts = ts};
	unsigned int v = c->verdict;

	fr.rdepth = p ? p->rdepth + !!(p->flags & FR_REC) : 0;
	if (fr.rdepth > MAX_STACK)
		fr.rdepth = MAX_STACK;
	fr.flags = p ? p->flags & (FR_IN | FR_NOTRACE) : (f && f->any_in ? 0 : FR_IN);
	fr.level = (fr.flags & FR_IN) && p ? p->level + 1 : 1;
	/* Each -F function starts -D's count again, as in uftrace. */
	if (v & CALLFILTER_IN) {
		fr.flags |= FR_IN;
		fr.level = 1;
	}
	if (v & CALLFILTER_NOTRACE)
		fr.flags |= FR_NOTRACE;
	if (c->plt)
		fr.flags |= FR_PLT;
	if ((fr.flags & (FR_IN | FR_NOTRACE)) == FR_IN && (!f || !f->depth || fr.level <= f->depth))
		fr.flags |= FR_REC;
	if ((fr.flags & FR_REC) && !(f && f->time_ns) && !c->hold) {
		put_pending(u, t);
		put(u, t, ts, REC_ENTRY, fr.rdepth, fr.addr);
		fr.flags |= FR_WRITTEN;
	}
	if (t->depth == t->cap)
		grow(&t->stack, &t->cap, t->depth + 1, sizeof(*t->stack));
	/* Written, on frames all written: nothing below it is pending. */
	if ((fr.flags & FR_WRITTEN) && t->written == t->depth)
		t->written++;
	t->stack[t->depth++] = fr;
}

/* The innermost frame is left at TS. */
static inline void leave(struct uftrace *u, struct uthread *t, uint64_t ts)
{
	struct frame *fr = &t->stack[t->depth - 1];

	if (fr->flags & FR_REC) {
		if (fr->flags & FR_WRITTEN || !u->filter || ts - fr->ts >= u->filter->time_ns) {
			put_pending(u, t);
			put(u, t, ts, REC_EXIT, fr->rdepth, fr->addr);
		}
	}
	t->depth--;
	if (t->written > t->depth)
		t->written = t->depth;
}

/* The record depth of what happens now, in the innermost frame. */
static size_t depth_now(const struct uthread *t)
{
	const struct frame *p = t->depth ? &t->stack[t->depth - 1] : NULL;

	return p ? p->rdepth + !!(p->flags & FR_REC) : 0;
}

/* Frames deeper than SP (AT_SP: or at it) are dead: their functions were
 * left without a return we saw (longjmp, exceptions, a gap).  End them
 * at TS.  A CALL does not end a frame switched from: it runs on another
 * context's stack, which may lie anywhere. */
static inline void unwind_below(struct uftrace *u, struct uthread *t, uint64_t sp, bool at_sp,
				bool call, uint64_t ts)
{
	while (t->depth &&
	       (t->stack[t->depth - 1].sp < sp || (at_sp && t->stack[t->depth - 1].sp == sp)) &&
	       !(call && (t->stack[t->depth - 1].flags & FR_SWITCHED)))
		leave(u, t, ts);
}

/*
 * A jump to function C at SP.  From the frame at SP that is a trampoline
 * whose entry is not written yet: C replaces it.  From another frame at
 * SP: a tail call, nested in it as in a -pg build (the return ends both).
 * From elsewhere (setcontext() to a new context): an entry there.
 */
static void jump(struct uftrace *u, struct uthread *t, const struct callee *c, uint64_t sp,
		 uint64_t ts)
{
	struct frame *top = t->depth ? &t->stack[t->depth - 1] : NULL;

	/* A PLT entry's jumps, to its function or through the lazy binder,
	 * are the entry's: it stands for the function, named as called. */
	if (top && (top->flags & FR_PLT))
		return;
	if (top && top->sp == sp && !(top->flags & FR_WRITTEN) && top->ts <= ts) {
		ts = top->ts;
		t->depth--;
		if (t->written > t->depth)
			t->written = t->depth;
	}
	enter(u, t, c, sp, ts);
}

/*
 * A return to ADDR at SP matches the call made with the same SP: it ends
 * that frame, the frames above it, which were left without a return we
 * saw (longjmp, exceptions, a switch of context), and the tail calls made
 * from its frame.  One that matches no frame is a jump in disguise when it
 * lands on a function's start (x86-64's setcontext() and swapcontext()
 * push the address and return): that function's entry, nested where the
 * switch was made, as native uftrace shows a context's function in the
 * swapcontext() that started it, whichever side of the frames its stack
 * lies.  Otherwise it left a function entered before tracing began, and
 * the frames below its SP are dead.
 */
static void ret(struct uftrace *u, struct uthread *t, struct guest *g, uint64_t addr, uint64_t sp,
		uint64_t ts)
{
	const struct callee *c;
	size_t d = t->depth;

	while (d && t->stack[d - 1].sp != sp)
		d--;
	if (d) {
		while (t->depth > d)
			leave(u, t, ts);
		while (t->depth && t->stack[t->depth - 1].sp == sp)
			leave(u, t, ts);
	} else if (g && (c = callee(u, g, addr))->start) {
		if (t->depth)
			t->stack[t->depth - 1].flags |= FR_SWITCHED;
		enter(u, t, c, sp + c->ret_pop, ts);
	} else {
		unwind_below(u, t, sp, false, false, ts);
	}
}

void uftrace_events(struct uftrace *u, pid_t pid, uint32_t tid, const void *events, uint32_t n,
		    uint64_t lost, struct guest *g)
{
	struct uthread *t = thread_of(u, tid, pid);
	const struct qj_call_event *ev = events;
	struct usession *s;

	if (!n) {
		uftrace_lost_at_end(u, tid, lost);
		return;
	}
	/* A session begins no later than its first record. */
	s = uftrace_session_of(u, pid);
	if (s && ev[0].ts <= s->ts)
		s->ts = ev[0].ts - 1;
	/* A gap: say so where it is, as uftrace does. */
	if (lost) {
		put_pending(u, t);
		put(u, t, ev[0].ts, REC_LOST, depth_now(t), lost);
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t addr = QJ_CALL_ADDR(ev[i].addr), sp = ev[i].sp;

		const struct callee *c;

		switch (QJ_CALL_KIND(ev[i].addr)) {
		case QJ_CALL_CALL:
			/* A function that calls has a stack pointer below the
			 * one of its own call: a call at that of an open frame
			 * comes from its caller, after a longjmp out of it. */
			unwind_below(u, t, sp, true, true, ev[i].ts);
			enter(u, t, callee(u, g, addr), sp, ev[i].ts);
			break;
		case QJ_CALL_RET:
			ret(u, t, g, addr, sp, ev[i].ts);
			break;
		case QJ_CALL_JUMP:
			c = g ? callee(u, g, addr) : NULL;
			if (c && c->start)
				jump(u, t, c, sp, ev[i].ts);
			break;
		}
	}
}

bool uftrace_lost_at_end(struct uftrace *u, uint32_t tid, uint64_t lost)
{
	struct uthread *t = uftrace_find_thread(u, tid);

	if (!t || !t->records || !lost)
		return false;
	put_pending(u, t);
	put(u, t, t->last_ts, REC_LOST, depth_now(t), lost);
	return true;
}
