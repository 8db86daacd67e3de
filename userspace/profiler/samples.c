// SPDX-License-Identifier: GPL-2.0-or-later
#include "profiler/samples.h"
#include "naming/ksyms.h"
#include "naming/syscalls.h"
#include "profiler/unwind.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Host frames of one sample, leaf first, and the rest of the sample. */
#define HOST_MAX (QJ_KSTACK_MAX + QJ_USTACK_MAX)

struct pending {
	struct pending *next;
	struct frame host[HOST_MAX]; /* kernel then QEMU frames, leaf first */
	uint32_t nhost;
	uint64_t jit;	    /* host address in translated code the guest was at, or 0 */
	bool jit_ret;	    /* JIT is a return address (a helper's caller) */
	struct qj_sample r; /* followed by r.stack_len bytes */
};

void samples_init(struct samples *ss, struct profile *prof, pid_t pid, bool dwarf)
{
	memset(ss, 0, sizeof(*ss));
	ss->prof = prof;
	ss->dwarf = dwarf;
	ss->tail = &ss->head;
	ss->pid = pid;
	guest_init(&ss->host, pid);
	guest_set_base(&ss->host, 0);
}

void samples_free(struct samples *ss)
{
	struct pending *p;

	while ((p = ss->head)) {
		ss->head = p->next;
		free(p);
	}
	for (size_t i = 0; i < ss->preempted.cap; i++)
		if (ss->preempted.e[i].slot)
			free((struct pending *)(uintptr_t)ss->preempted.e[i].val);
	u64map_free(&ss->preempted);
	guest_free(&ss->host);
	strtab_free(&ss->names);
	u64map_free(&ss->taken);
}

/* P, a preempted thread's sample: held until its wait ends. */
static void hold_preempted(struct samples *ss, struct pending *p)
{
	uint64_t *slot = u64map_at(&ss->preempted, (uint64_t)p->r.hdr.tid);

	/* (An earlier one whose wait crossed no tick has no end.) */
	free((struct pending *)(uintptr_t)*slot);
	*slot = (uintptr_t)p;
}

void samples_wait_end(struct samples *ss, const struct qj_wait_end *e)
{
	struct pending *p =
		(struct pending *)(uintptr_t)u64map_take(&ss->preempted, (uint64_t)e->hdr.tid);

	if (!p)
		return;
	p->r.period = e->period;
	p->r.hdr.ts = e->hdr.ts;
	p->r.flags &= ~QJ_SAMPLE_PREEMPTED;
	*ss->tail = p;
	ss->tail = &p->next;
}

void samples_wait_taken(struct samples *ss, pid_t tid, uint64_t until)
{
	*u64map_at(&ss->taken, (uint64_t)tid) = until;
}

uint64_t samples_wait_taken_until(const struct samples *ss, pid_t tid)
{
	return u64map_get(&ss->taken, (uint64_t)tid);
}

/*
 * BPF's sample of a wait, R, that user space took a part of while it was
 * under way: the rest, in the same ticks, from where that part ended.
 * False if nothing is left.
 */
static bool leave_taken(struct samples *ss, struct qj_sample *r)
{
	uint64_t until = u64map_take(&ss->taken, (uint64_t)r->hdr.tid), P = ss->off_period;
	uint64_t taken;

	if (!P || until <= r->wait_from)
		return true;
	taken = (until / P - r->wait_from / P) * P;
	r->period = taken < r->period ? r->period - taken : 0;
	r->wait_from = until;
	return r->period > 0;
}

struct code_buffer {
	uint64_t addr, lo, hi;
};

/*
 * The buffer is one mapping, or, when vCPU threads translate into regions
 * of their own (system mode, MTTCG), one per region with guard pages
 * between: anonymous mappings that follow each other.
 */
static bool holds(const struct map_entry *m, void *ctx)
{
	struct code_buffer *c = ctx;

	if (c->hi) {
		if (m->start != c->hi || m->path[0])
			return true;
		c->hi = m->end;
		return false;
	}
	if (c->addr >= m->start && c->addr < m->end) {
		c->lo = m->start;
		c->hi = m->end;
	}
	return false;
}

/*
 * QEMU's code buffer: the mappings from the one that holds the prologue.
 * Once QEMU has gone (a short QEMU whose records we read late), what its
 * TB reports say (from the prologue up to the highest TB), or any address
 * above the prologue that no file of QEMU's we know of maps.
 */
static bool in_code(struct samples *ss, struct jitmap *jm, uint64_t pc)
{
	if (!ss->code_hi && jm->code.prologue.size) {
		struct code_buffer c = {jm->code.prologue.host, 0, 0};
		struct guest_loc loc;

		maps_find(ss->pid, holds, &c);
		if (!c.hi) {
			if (pc < jm->code.prologue.host)
				return false;
			guest_lookup(&ss->host, pc, &loc);
			return pc < jm->host_hi || !loc.img;
		}
		ss->code_lo = c.lo;
		ss->code_hi = c.hi;
	}
	return pc >= ss->code_lo && pc < ss->code_hi;
}

void samples_prepare(struct samples *ss, struct jitmap *jm)
{
	guest_add_mapped(&ss->host);
	in_code(ss, jm, 0);
}

static bool in_prologue(const struct jitmap *jm, uint64_t pc)
{
	return pc >= jm->code.prologue.host && pc < jm->code.prologue.host + jm->code.prologue.size;
}

/* A host frame of QEMU's (or a library's); false when PC is in no file. */
static bool qemu_frame(struct samples *ss, uint64_t pc, bool ret, struct frame *f)
{
	struct guest_loc loc;

	guest_lookup(&ss->host, ret ? pc - 1 : pc, &loc);
	if (!loc.img)
		return false;
	*f = (struct frame){
		.name = loc.name
				? loc.name
				: strtab_addf(&ss->names, "%s+0x%" PRIx64, loc.img->path, loc.link),
		.addr = ret ? pc - 1 : pc,
		.elf = loc.img->elf,
		.bias = loc.img->bias,
		.kind = FRAME_QEMU,
	};
	return true;
}

/* Name QEMU's and the kernel's frames now, while QEMU's maps exist. */
static void host_frames(struct samples *ss, struct jitmap *jm, struct pending *p)
{
	const struct qj_sample *r = &p->r;
	uint32_t nk = r->nkern < QJ_KSTACK_MAX ? r->nkern : QJ_KSTACK_MAX;
	uint32_t nu = r->nuser < QJ_USTACK_MAX ? r->nuser : QJ_USTACK_MAX;

	for (uint32_t i = 0; i < nk; i++) {
		const char *name = ksym_name(r->kstack[i]);

		/* An off-CPU sample's leaves are the switch's own: the
		 * kernel's wait is below them, from schedule() on. */
		if (!p->nhost && r->flags & QJ_SAMPLE_OFFCPU && name &&
		    (!strncmp(name, "__switch_to", 11) || !strcmp(name, "__schedule")))
			continue;
		p->host[p->nhost++] = (struct frame){
			.name = name ? name : "[unknown]",
			.addr = r->kstack[i],
			.kind = FRAME_KERNEL,
		};
	}
	for (uint32_t i = 0; i < nu; i++) {
		uint64_t pc = r->ustack[i];

		if (in_prologue(jm, pc)) {
			p->host[p->nhost++] = (struct frame){
				.name = "qemu-tcg-prologue",
				.addr = pc,
				.kind = FRAME_QEMU,
			};
			break;
		}
		if (in_code(ss, jm, pc)) {
			/* Translated code: the guest takes over from here. */
			p->jit = pc;
			p->jit_ret = i > 0;
			break;
		}
		if (!qemu_frame(ss, pc, i > 0, &p->host[p->nhost])) {
			/* The end of the frame-pointer chain, or garbage. */
			if (!i)
				p->host[p->nhost++] = (struct frame){
					.name = "[unknown]", .addr = pc, .kind = FRAME_QEMU};
			break;
		}
		p->nhost++;
	}
}

static void add(struct samples *ss, struct jitmap *jm, const struct qj_sample *r, size_t size,
		const char (*knames)[64], int nk)
{
	size_t extra;
	struct pending *p;

	/* The size first: stack_len is near the record's end. */
	if (size < sizeof(*r))
		return;
	extra = r->stack_len;
	if (extra > QJ_STACK_MAX || sizeof(*r) + extra > size)
		return;
	p = xmalloc(sizeof(*p) + extra);
	p->next = NULL;
	p->nhost = 0;
	p->jit = 0;
	p->jit_ret = false;
	memcpy(&p->r, r, sizeof(*r) + extra);
	if (!knames && r->flags & QJ_SAMPLE_OFFCPU && r->wait_from && !leave_taken(ss, &p->r)) {
		free(p);
		return;
	}
	for (int i = 0; i < nk && i < QJ_KSTACK_MAX; i++)
		p->host[p->nhost++] = (struct frame){
			.name = strtab_add(&ss->names, knames[i]),
			.kind = FRAME_KERNEL,
		};
	host_frames(ss, jm, p);
	if (p->r.flags & QJ_SAMPLE_PREEMPTED) {
		hold_preempted(ss, p);
		return;
	}
	*ss->tail = p;
	ss->tail = &p->next;
}

void samples_add(struct samples *ss, struct jitmap *jm, const struct qj_sample *r, size_t size)
{
	add(ss, jm, r, size, NULL, 0);
}

void samples_add_named(struct samples *ss, struct jitmap *jm, const struct qj_sample *r,
		       size_t size, const char (*knames)[64], int nk)
{
	add(ss, jm, r, size, knames, nk);
}

/*
 * R in the profile, with FRAMES.  A wait taken after an --interval's end
 * that began before it is split at the end, in its own ticks: the part
 * before goes to the interval that ended (a wait that spans the end, and
 * ends before user space could take it, is not the next interval's whole).
 */
static void add_to_profile(struct samples *ss, const struct qj_sample *r, enum sample_where w,
			   const struct frame *frames, size_t n)
{
	const struct profile *prof = ss->prof;
	uint64_t P = ss->off_period, before = 0;

	if (r->flags & QJ_SAMPLE_OFFCPU && r->wait_from && P && prof->after &&
	    r->wait_from < prof->split_ns && r->hdr.ts >= prof->split_ns) {
		before = (prof->split_ns / P - r->wait_from / P) * P;
		if (before > r->period)
			before = r->period;
		profile_add(ss->prof, r->hdr.pid, r->hdr.tid, w, frames, n, before,
			    prof->split_ns - 1);
	}
	if (r->period > before)
		profile_add(ss->prof, r->hdr.pid, r->hdr.tid, w, frames, n, r->period - before,
			    r->hdr.ts);
}

/* The guest's name for PC, as the perf map and uftrace give it. */
static void guest_frame(struct jitmap *jm, uint64_t pc, struct frame *f)
{
	struct guest_loc loc;

	guest_lookup(&jm->guest, pc, &loc);
	*f = (struct frame){
		.name = guest_loc_name(&jm->guest, &loc, pc),
		.addr = pc,
		.elf = loc.img ? loc.img->elf : NULL,
		.bias = loc.img ? loc.img->bias : 0,
		.kind = FRAME_GUEST,
	};
}

/*
 * A caller outside every guest image is not one: a frame-pointer walk
 * through code built without frame pointers reads data as frames.  The
 * chain ends before it.
 */
static size_t plausible(struct jitmap *jm, const uint64_t *pcs, size_t n)
{
	struct guest_loc loc;

	for (size_t i = 1; i < n; i++) {
		guest_lookup(&jm->guest, pcs[i] - 1, &loc);
		if (!loc.img)
			return i;
	}
	return n;
}

static enum sample_where where(const struct pending *p)
{
	if (p->r.flags & QJ_SAMPLE_OFFCPU)
		return IN_OFFCPU;
	if (p->r.nkern)
		return IN_KERNEL;
	if (p->jit)
		return p->jit_ret ? IN_HELPER : IN_GUEST;
	for (uint32_t i = 0; i < p->nhost; i++)
		if (strstr(p->host[i].name, "tb_gen_code"))
			return IN_TRANSLATION;
	return IN_QEMU;
}

/* The part of the CPU sample P was in. */
static enum cpu_part part_of(const struct pending *p)
{
	const char *names[HOST_MAX];
	size_t n = 0;

	for (uint32_t i = 0; i < p->nhost; i++)
		if (p->host[i].kind == FRAME_QEMU && p->host[i].name)
			names[n++] = p->host[i].name;
	return cpu_part_of(p->r.nkern, p->jit, p->jit_ret, names, n);
}

/* The guest's system call P was in (QEMU emulating it, or the kernel
 * serving it), as "mremap" or "syscall 4321"; NULL if none. */
static const char *guest_syscall(const struct pending *p, char *buf, size_t size)
{
	const char *name;
	uint32_t i;

	if (!(p->r.flags & QJ_SAMPLE_VCPU) || p->jit)
		return NULL;
	/* (Waits are in safe_syscall(), whose frame ends the chain.) */
	for (i = 0; i < p->nhost; i++)
		if (p->host[i].kind == FRAME_QEMU && (strstr(p->host[i].name, "do_syscall") ||
						      strstr(p->host[i].name, "safe_syscall")))
			break;
	if (i == p->nhost)
		return NULL;
	if (p->r.gnr == QJ_NR_UNKNOWN)
		return "syscall ?";
	name = syscall_name(p->r.machine, p->r.gnr);
	if (name)
		return name;
	snprintf(buf, size, "syscall %" PRIu64, (uint64_t)p->r.gnr);
	return buf;
}

/*
 * --off-cpu: why P's thread waited, as the frame above QEMU's: the guest's
 * system call it was blocked in, or QEMU's own wait, or a CPU.
 */
static const char *off_cpu_frame(struct samples *ss, const struct pending *p)
{
	char buf[32];
	const char *sys = guest_syscall(p, buf, sizeof(buf));

	if (p->r.state == QJ_OFF_RUNNABLE)
		return "[off-CPU: waiting for a CPU]";
	if (sys)
		return strtab_addf(&ss->names, "[off-CPU: %s]", sys);
	return p->r.state == QJ_OFF_UNINTERRUPTIBLE ? "[off-CPU: in QEMU, uninterruptible]"
						    : "[off-CPU: in QEMU]";
}

/* --report: P's CPU into its part, its helper's function, its system call. */
static void split_sample(struct cpu_split *s, const struct pending *p, enum cpu_part part)
{
	char buf[32];
	const char *sys = guest_syscall(p, buf, sizeof(buf));

	if (p->r.flags & QJ_SAMPLE_OFFCPU)
		return; /* CPU time only */
	s->ns[part] += p->r.period;
	s->samples++;
	if (p->r.flags & QJ_SAMPLE_VCPU && p->r.size > s->reg_bytes)
		s->reg_bytes = p->r.size;
	if (sys) {
		s->syscall_ns += p->r.period;
		if (part == PART_KERNEL)
			s->syscall_kernel_ns += p->r.period;
		split_item_add(s->sys, sys, p->r.period);
	}
	/* The helper translated code called: QEMU's outermost frame. */
	if (cpu_part_is_helper(part) && p->jit)
		for (uint32_t i = p->nhost; i-- > 0;)
			if (p->host[i].kind == FRAME_QEMU) {
				split_item_add(s->fn, p->host[i].name, p->r.period);
				break;
			}
	if (s->phases)
		cpu_phases_add(s->phases, p->r.hdr.ts, p->r.period, part);
}

static void resolve(struct samples *ss, struct jitmap *jm, struct pending *p)
{
	static struct frame frames[UNWIND_MAX + HOST_MAX + 2];
	const struct qj_sample *r = &p->r;
	enum cpu_part part = part_of(p);
	const char *work =
		r->flags & QJ_SAMPLE_OFFCPU ? off_cpu_frame(ss, p) : cpu_part_frame(part);
	bool vcpu = r->flags & QJ_SAMPLE_VCPU, known = true;
	uint64_t pcs[UNWIND_MAX], leaf = 0;
	size_t n = 0, np = 0;

	if (ss->split_only) {
		if (ss->split)
			split_sample(ss->split, p, part);
		return;
	}
	if (p->jit) {
		/*
		 * Where the code at the host address came from, in the
		 * generation of code the sample ran.  Samples before a flush
		 * are named when it comes (samples_flush()), so a sample still
		 * pending while the flush is not applied came after it: the
		 * map holds none of its code.
		 */
		const struct code_range *c =
			jm->flush_pending ? NULL : codemap_find(&jm->insns, p->jit - p->jit_ret);

		if (!c)
			known = false;
		else if (p->jit_ret && c->tb_end && vcpu)
			/* A helper of the TB's last instruction, a jump: env
			 * holds the state after the jump, exactly. */
			leaf = r->gregs[QJ_PC];
		else
			leaf = c->guest;
	} else if (vcpu) {
		/* In QEMU (translating, emulating a syscall): the guest pc in
		 * env is exact there. */
		leaf = r->gregs[QJ_PC];
	}
	if (!known) {
		ss->unknown_jit++;
	} else if (vcpu) {
		np = ss->dwarf || r->stack_len ? unwind_dwarf(&jm->guest, r, leaf, pcs, UNWIND_MAX)
					       : unwind_fp(&jm->guest, r, leaf, pcs, UNWIND_MAX);
		np = plausible(jm, pcs, np);
	} else if (p->jit) {
		/* A thread not (yet) reported as a vCPU's: the leaf alone. */
		pcs[np++] = leaf;
	}
	if (ss->seen)
		ss->seen(ss->seen_ctx, r, where(p), work, pcs, np, known);
	/* Root first: the guest's callers, its leaf, then the host's. */
	for (size_t i = np; i-- > 0;)
		guest_frame(jm, i ? pcs[i] - 1 : pcs[i], &frames[n++]);
	if (!known)
		frames[n++] = (struct frame){
			.name = "[unknown guest code]", .addr = p->jit, .kind = FRAME_GUEST};
	/* QEMU's own work, named as such: [translate], [helper: pauth]. */
	if (work)
		frames[n++] = (struct frame){.name = work, .kind = FRAME_QEMU};
	for (uint32_t i = p->nhost; i-- > 0;)
		if (p->host[i].kind == FRAME_QEMU)
			frames[n++] = p->host[i];
	for (uint32_t i = p->nhost; i-- > 0;)
		if (p->host[i].kind == FRAME_KERNEL)
			frames[n++] = p->host[i];
	if (!ss->commanded && jm->exe_path) {
		/* Its label "command": the guest program, which QEMU has said. */
		profile_set_command(ss->prof, ss->pid, path_base(jm->exe_path));
		ss->commanded = true;
	}
	add_to_profile(ss, r, where(p), frames, n);
	if (ss->split)
		split_sample(ss->split, p, part);
}

static void resolve_until(struct samples *ss, struct jitmap *jm, uint64_t before)
{
	struct pending *p;

	while ((p = ss->head) && p->r.hdr.ts < before) {
		ss->head = p->next;
		if (!ss->head)
			ss->tail = &ss->head;
		resolve(ss, jm, p);
		free(p);
	}
}

void samples_flush(struct samples *ss, struct jitmap *jm)
{
	/* Everything pending ran code of the generation that ends. */
	if (!jm->flush_pending)
		resolve_until(ss, jm, UINT64_MAX);
}

void samples_resolve(struct samples *ss, struct jitmap *jm, uint64_t now, uint64_t age_ns)
{
	/* Not while the map still holds a generation that ended. */
	if (jm->flush_pending && age_ns)
		return;
	resolve_until(ss, jm, age_ns ? now - age_ns : UINT64_MAX);
}
