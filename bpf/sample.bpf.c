// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The sampling profiler: a perf_event program on the CPU clock of every
 * CPU, and a USDT program on QEMU's jit_vcpu probe, which says where each
 * vCPU thread keeps its guest registers.  A sample of a profiled process
 * takes the host stacks (kernel, and QEMU's own by frame pointers) and
 * the guest's state: its registers from env, then either the guest's
 * frame-pointer chain (--call-graph=fp) or a copy of its stack for user
 * space to unwind (--call-graph=dwarf).  Samples go to the ring buffer of
 * qemu-jitbpf.bpf.c, shared by user space before load.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <linux/ptrace.h>
#include <stdbool.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "usdt-args.bpf.h"
#include "qemu-jitbpf.h"
#include "sample.h"
#include "ring.bpf.h"
#include "ids.bpf.h"

/* Set before load. */
const volatile __u64 wake_bytes;  /* see qj_submit() */
const volatile __u32 stack_bytes; /* 0: walk the guest's frame pointers */
/* --off-cpu: stack bytes copied for a wait's sample, unwound by CFI even
 * with frame pointers: a wait is in a C library's system call wrapper,
 * which keeps no frame pointer. */
const volatile __u32 off_stack_bytes;
const volatile __u32 walkers = QJ_WALK_ALL;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24); /* qemu-jitbpf.bpf.c's, reused */
} events SEC(".maps");

/*
 * vCPU threads, by tid; threads that are gone age out.  Sized by user
 * space (an LRU map is preallocated: 16384 entries cost ~5 ms to create).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct qj_vcpu);
} vcpus SEC(".maps");

/* The processes to sample, by pid: qemu-jitbpf.bpf.c's, reused. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, QJ_PROCS_MAX);
	__type(key, __u32);
	__type(value, struct qj_proc);
} procs SEC(".maps");

__u64 lost_samples;

/*
 * Where in env the register is that holds a system call's number while
 * QEMU emulates it, from where the stack and frame pointers are: x86_64's
 * rax (regs[0], sp regs[4]), AArch64's x8 (fp x29), Arm's r7 (sp r13),
 * RISC-V's a7 (x17, sp x2), POWER's r0 (sp r1).  s390x keeps the number
 * of an svc apart: -1.
 */
static __always_inline __s32 nr_offset(const struct qj_vcpu *v)
{
	__s32 sp = v->off[QJ_SP], fp = v->off[QJ_FP], size = v->size;

	if (sp < 0 || fp < 0)
		return -1;
	switch (v->machine) {
	case QJ_EM_X86_64:
		return sp - 4 * size;
	case QJ_EM_AARCH64:
		return fp - 21 * size;
	case QJ_EM_ARM:
		return sp - 6 * size;
	case QJ_EM_RISCV:
		return sp + 15 * size;
	case QJ_EM_PPC64:
		return sp - size;
	default:
		return -1;
	}
}

/*
 * Every vCPU thread's, as the watcher reports them at a handshake
 * (jit_vcpu_thread): threads blocked outside the execution loop too.  By
 * pid << 32 | the thread's id as QEMU sees it (its pid namespace's).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct qj_vcpu);
} vcpu_threads SEC(".maps");

/* Arguments from SIZE on are 0 where QEMU does not give them (7.2's series). */
static __always_inline void vcpu_of(struct qj_vcpu *v, __s32 cpu_index, __u64 env, __s32 pc,
				    __s32 sp, __s32 fp, __s32 lr, __s32 size, __s32 machine,
				    __s32 big_endian)
{
	*v = (struct qj_vcpu){
		.env = env,
		.off = {pc, sp, fp, lr},
		.cpu_index = cpu_index,
		.machine = machine,
		.size = size == 4 ? 4 : 8,
		.big_endian = big_endian != 0,
	};
	/* 7.2's series gives no machine: x86_64 or AArch64, told apart by
	 * where rbp is from rsp, x29 from sp. */
	if (!v->machine && fp - sp == 8)
		v->machine = QJ_EM_X86_64;
	else if (!v->machine && fp - sp == -16)
		v->machine = QJ_EM_AARCH64;
	v->off_nr = nr_offset(v);
}

SEC("usdt")
int BPF_USDT(jit_vcpu, __s32 cpu_index, __u64 env, __s32 pc, __s32 sp, __s32 fp, __s32 lr,
	     __s32 size, __s32 machine, __s32 big_endian)
{
	__u32 tid = (__u32)qj_current_ids();
	struct qj_vcpu v;

	vcpu_of(&v, cpu_index, env, pc, sp, fp, lr, size, machine, big_endian);
	if (tid)
		bpf_map_update_elem(&vcpus, &tid, &v, BPF_ANY);
	return 0;
}

SEC("usdt")
int BPF_USDT(jit_vcpu_thread, __s32 tid, __s32 cpu_index, __u64 env, __s32 pc, __s32 sp, __s32 fp,
	     __s32 lr, __s32 size, __s32 machine, __s32 big_endian)
{
	__u64 key = (qj_current_ids() & ~0xffffffffull) | (__u32)tid;
	struct qj_vcpu v;

	vcpu_of(&v, cpu_index, env, pc, sp, fp, lr, size, machine, big_endian);
	if (tid > 0 && key >> 32)
		bpf_map_update_elem(&vcpu_threads, &key, &v, BPF_ANY);
	return 0;
}

static __always_inline __u64 read_at(const struct qj_vcpu *v, __s32 off)
{
	__u64 val = 0;

	if (off >= 0)
		bpf_probe_read_user(&val, sizeof(val), (void *)(v->env + off));
	return v->size == 4 ? (__u32)val : val;
}

static __always_inline __u64 read_reg(const struct qj_vcpu *v, int reg)
{
	return read_at(v, v->off[reg & (QJ_NREGS - 1)]);
}

/* Can LEN bytes at guest address ADDR be read (struct qj_proc)? */
static __always_inline bool readable(const struct qj_proc *p, __u64 addr, __u64 len)
{
	return !p->hi || (addr >= p->lo && addr < p->hi && len <= p->hi - addr);
}

/*
 * State of one guest frame-chain walk, shared with the bpf_loop callbacks.
 * Three shapes of chain, one callback each (small ones keep the
 * verifier's work small):
 * - 64-bit records at the frame pointer (x86_64, AArch64, RISC-V): the
 *   caller's frame pointer at fp + next_off, the return address at
 *   fp + ra_off;
 * - 32-bit Arm records: GCC's {fp, lr} with fp pointing at lr, or APCS
 *   frames {fp, sp, lr, pc} with fp pointing at pc;
 * - back chains (ppc64, s390x with -mbackchain): the stack pointer points
 *   at the caller's stack pointer, and each function's return address is
 *   saved at ra_off in its caller's frame; big-endian on s390x.
 * On RISC-V and Arm a leaf that keeps its return address in the link
 * register saves only the caller's frame pointer, where others keep the
 * return address: a stack address there, in the first record, is that.
 */
struct walk_ctx {
	struct qj_sample *r;
	const struct qj_proc *p;
	__u64 fp, sp;
	__u32 n;
	__s32 next_off, ra_off;
	bool big_endian, leaf_check;
};

/* SIZE bytes at guest address ADDR, a multiple of WORD, as stored. */
static __always_inline bool read_guest(const struct walk_ctx *c, __u64 addr, void *val, __u32 size,
				       __u32 word)
{
	return addr && !(addr & (word - 1)) && readable(c->p, addr, size) &&
	       !bpf_probe_read_user(val, size, (void *)(c->p->guest_base + addr));
}

/* Note return address RA, go on at NEXT if it lies above FP. */
static __always_inline long walk_step(struct walk_ctx *c, __u64 fp, __u64 next, __u64 ra)
{
	__u32 n = c->n;

	if (ra && n < QJ_GSTACK_MAX) {
		c->r->gstack[n & (QJ_GSTACK_MAX - 1)] = ra;
		c->n = n + 1;
	}
	/* Callers' frames lie above: anything else ends the chain. */
	if (next <= fp || c->n >= QJ_GSTACK_MAX)
		return 1;
	c->fp = next;
	return 0;
}

/* A stack address where a return address was expected: a leaf's record. */
static __always_inline bool leaf_record(const struct walk_ctx *c, __u32 idx, __u64 fp, __u64 ra)
{
	return !idx && c->leaf_check && ra > fp && ra - c->sp < (1 << 23);
}

static long walk_record64(__u32 idx, struct walk_ctx *c)
{
	__u64 fp = c->fp, next, ra;

	if (!read_guest(c, fp + c->next_off, &next, 8, 8) ||
	    !read_guest(c, fp + c->ra_off, &ra, 8, 8))
		return 1;
	if (leaf_record(c, idx, fp, ra)) {
		next = ra;
		ra = 0;
	}
	return walk_step(c, fp, next, ra);
}

static long walk_arm(__u32 idx, struct walk_ctx *c)
{
	__u64 fp = c->fp;
	__u32 rec[4], next, ra;

	/* {fp, sp, lr, pc} from fp - 12 on: APCS if the sp saved is fp + 4. */
	if (read_guest(c, fp - 12, rec, sizeof(rec), 4) && rec[1] == fp + 4) {
		next = rec[0];
		ra = rec[2];
	} else if (read_guest(c, fp - 4, rec, 8, 4)) {
		next = rec[0];
		ra = rec[1];
		if (leaf_record(c, idx, fp, ra)) {
			next = ra;
			ra = 0;
		}
	} else {
		return 1;
	}
	return walk_step(c, fp, next, ra);
}

static long walk_backchain(__u32 idx, struct walk_ctx *c)
{
	__u64 sp = c->fp, next, ra;

	if (!read_guest(c, sp, &next, 8, 8))
		return 1;
	if (c->big_endian)
		next = __builtin_bswap64(next);
	if (next <= sp || !read_guest(c, next + c->ra_off, &ra, 8, 8))
		return 1;
	if (c->big_endian)
		ra = __builtin_bswap64(ra);
	return walk_step(c, sp, next, ra);
}

/* Walk the guest's frame chain from its registers in R. */
static __always_inline void walk_guest(struct qj_sample *r, const struct qj_vcpu *v,
				       const struct qj_proc *p)
{
	struct walk_ctx c = {.r = r, .p = p, .fp = r->gregs[QJ_FP], .sp = r->gregs[QJ_SP]};

	switch (v->machine) {
	case QJ_EM_RISCV:
		if (!(walkers & QJ_WALK_RISCV))
			break;
		c.next_off = -16;
		c.ra_off = -8;
		c.leaf_check = true;
		bpf_loop(QJ_GSTACK_MAX, walk_record64, &c, 0);
		break;
	case QJ_EM_ARM:
		if (!(walkers & QJ_WALK_ARM))
			break;
		c.leaf_check = true;
		bpf_loop(QJ_GSTACK_MAX, walk_arm, &c, 0);
		break;
	case QJ_EM_PPC64:
	case QJ_EM_S390:
		if (!(walkers & QJ_WALK_BACKCHAIN))
			break;
		c.fp = c.sp;
		c.ra_off = v->machine == QJ_EM_S390 ? 112 : 16;
		c.big_endian = v->big_endian;
		bpf_loop(QJ_GSTACK_MAX, walk_backchain, &c, 0);
		break;
	default:
		/* x86_64, AArch64: {caller's fp, return address} at fp. */
		if (!(walkers & QJ_WALK_RECORD64))
			break;
		c.next_off = 0;
		c.ra_off = 8;
		bpf_loop(QJ_GSTACK_MAX, walk_record64, &c, 0);
		break;
	}
	r->nguest = c.n;
}

/* BYTES: of stack to copy (0: walk frame pointers), at most what R has. */
static __always_inline void guest_state(struct qj_sample *r, const struct qj_vcpu *v,
					const struct qj_proc *p, __u32 bytes)
{
	__u64 base = p->guest_base, sp;

	r->flags |= QJ_SAMPLE_VCPU;
	r->cpu_index = v->cpu_index;
	r->machine = v->machine;
	r->size = v->size;
	r->big_endian = v->big_endian;
	r->gregs[QJ_PC] = read_reg(v, QJ_PC);
	r->gregs[QJ_SP] = sp = read_reg(v, QJ_SP);
	r->gregs[QJ_FP] = read_reg(v, QJ_FP);
	r->gregs[QJ_LR] = read_reg(v, QJ_LR);
	r->gnr = v->off_nr >= 0 ? read_at(v, v->off_nr) : QJ_NR_UNKNOWN;
	/*
	 * A VM's RAM serves guest addresses as they are only while its MMU
	 * is off, when code runs from RAM too: with the pc elsewhere (a Linux
	 * kernel at 0xffff...), a stack word that happens to fall inside RAM
	 * would be read at the wrong place.  Leaf (and LR) only, then.
	 */
	if (!readable(p, r->gregs[QJ_PC], 1))
		return;
	if (bytes) {
		/* As much of the requested stack as is mapped. */
		for (__u32 len = bytes; len >= 64; len >>= 1) {
			if (len > QJ_STACK_MAX || len > bytes || !readable(p, sp, len))
				continue;
			if (!bpf_probe_read_user(r->stack, len, (void *)(base + sp))) {
				r->stack_len = len;
				break;
			}
		}
		return;
	}
	if (readable(p, sp, sizeof(r->words)) &&
	    !bpf_probe_read_user(r->words, sizeof(r->words), (void *)(base + sp)))
		r->nwords = QJ_GWORDS;
	else if (readable(p, sp, 8 * 8) &&
		 !bpf_probe_read_user(r->words, 8 * 8, (void *)(base + sp)))
		r->nwords = 8;
	walk_guest(r, v, p);
}

/* Where thread ID's guest registers are, if it runs a vCPU. */
static __always_inline struct qj_vcpu *vcpu_of_thread(__u64 id)
{
	__u32 tid = (__u32)id;
	struct qj_vcpu *v = bpf_map_lookup_elem(&vcpus, &tid);

	/* A thread not (yet) seen entering the execution loop since the
	 * handshake: as the watcher reported it (its ids are ours unless
	 * QEMU is in another pid namespace). */
	if (!v)
		v = bpf_map_lookup_elem(&vcpu_threads, &id);
	return v;
}

/*
 * --off-cpu: the wall-clock time vCPU threads spend off their CPU,
 * sampled as the CPU clock samples the time on it: every OFF_PERIOD ns of
 * a global clock that pass while a thread is off its CPU make one tick,
 * and a wait's ticks make one sample that stands for them all (a wait
 * shorter than the period crosses a tick as often as it lasts).
 *
 * A thread that goes to sleep is not read when it leaves its CPU.  When it
 * is switched back in, a wait that crossed a tick gets the thread's kernel
 * stack, which still shows what it waited in; the rest is read in the
 * thread itself, whose user space is still as it was, when its system call
 * returns (every sleep is one).  A preempted thread has made no call, and
 * runs on when it comes back, maybe into a sleep: it is sampled as it
 * leaves, and its wait's period follows when it comes back
 * (QJ_EV_WAIT_END).
 */
const volatile __u64 off_period; /* ns per tick; 0: no off-CPU time */

struct task_struct;

/* Each followed vCPU thread's, while it lives. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct qj_off);
} offcpu SEC(".maps");

/*
 * Per CPU: the task last switched in there if it has a wait to take (its
 * task_struct's address), else 0.  Every system call's return looks here
 * first: the others' cost one array read.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} taker SEC(".maps");

/*
 * A sample of the current thread (ID), of process P, standing for PERIOD
 * ns: its stacks from CTX (a perf event's, a tracepoint's), or the kernel's
 * from the wait O; its guest state from V.  PREEMPTED: the thread is being
 * preempted, and its wait's period comes when it runs again.
 */
static __always_inline void capture(void *ctx, __u64 id, const struct qj_proc *p,
				    const struct qj_vcpu *v, __u64 period, const struct qj_off *o,
				    bool preempted)
{
	__u32 bytes = o || preempted ? off_stack_bytes : stack_bytes;
	struct qj_sample *r;
	long n;

	r = bpf_ringbuf_reserve(&events, sizeof(*r) + bytes, 0);
	if (!r) {
		__sync_fetch_and_add(&lost_samples, 1);
		return;
	}
	r->hdr.type = QJ_EV_SAMPLE;
	r->hdr.tid = (__u32)id;
	r->hdr.pid = id >> 32;
	r->hdr.pad = 0;
	r->hdr.ts = bpf_ktime_get_ns();
	r->flags = 0;
	r->machine = 0;
	r->size = 8;
	r->big_endian = 0;
	r->period = period;
	r->cpu_index = -1;
	r->gnr = 0;
	r->nkern = r->nuser = r->nguest = r->nwords = 0;
	r->stack_len = 0;
	r->state = 0;
	r->wait_from = 0;
	n = 0;
	if (preempted) {
		/* (Its kernel stack is the scheduler's: nothing of the guest's.) */
		r->flags = QJ_SAMPLE_OFFCPU | QJ_SAMPLE_PREEMPTED;
		r->state = QJ_OFF_RUNNABLE;
		r->wait_from = r->hdr.ts;
	} else if (o) {
		r->flags = QJ_SAMPLE_OFFCPU;
		r->state = o->state;
		r->wait_from = o->from;
		__builtin_memcpy(r->kstack, o->kstack, sizeof(r->kstack));
		n = o->nkern < QJ_KSTACK_MAX ? o->nkern * 8 : 0;
	} else {
		n = bpf_get_stack(ctx, r->kstack, sizeof(r->kstack), 0);
	}
	if (n > 0) {
		r->nkern = n / 8;
		r->flags |= QJ_SAMPLE_KERNEL;
	}
	n = bpf_get_stack(ctx, r->ustack, sizeof(r->ustack), BPF_F_USER_STACK);
	if (n > 0)
		r->nuser = n / 8;
	if (v)
		guest_state(r, v, p, bytes);
	qj_submit(&events, r, wake_bytes, false);
}

/* The current thread's wait not taken yet, if any. */
static __always_inline struct qj_off *wait_to_take(void)
{
	struct qj_off *o;

	if (!off_period)
		return NULL;
	o = bpf_task_storage_get(&offcpu, bpf_get_current_task_btf(), 0, 0);
	return o && o->ns ? o : NULL;
}

SEC("perf_event")
int sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = qj_current_ids();
	__u32 pid = id >> 32;
	struct qj_proc *p = bpf_map_lookup_elem(&procs, &pid);
	struct qj_vcpu *v;
	struct qj_off *o;

	if (!p)
		return 0;
	v = vcpu_of_thread(id);
	capture(ctx, id, p, v, ctx->sample_period, NULL, false);
	o = wait_to_take();
	if (o) {
		if (v)
			capture(ctx, id, p, v, o->ns, o, false);
		o->ns = 0;
	}
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(switch_cpu, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 id, now = bpf_ktime_get_ns(), ticks, *t;
	__u32 pid, zero = 0;
	struct qj_wait_end *e;
	struct qj_proc *p;
	struct qj_vcpu *v;
	struct qj_off *o;
	long n;

	/*
	 * PREV, current still, leaves: a followed vCPU thread, not dying.  Its
	 * storage says so once it has been seen; the ids are looked up for
	 * the others (most switches are another task's: one lookup).
	 */
	o = bpf_task_storage_get(&offcpu, prev, 0, 0);
	if (!o && !(prev_state & 0x80 /* TASK_DEAD */)) {
		id = qj_current_ids();
		pid = id >> 32;
		if ((__u32)id && bpf_map_lookup_elem(&procs, &pid) && vcpu_of_thread(id))
			o = bpf_task_storage_get(&offcpu, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	}
	if (o) {
		o->ts = now;
		o->preempted = 0;
		if (preempt || !(prev_state & 0xff))
			o->leaving = QJ_OFF_RUNNABLE;
		else if (prev_state & 2 /* TASK_UNINTERRUPTIBLE */)
			o->leaving = QJ_OFF_UNINTERRUPTIBLE;
		else
			o->leaving = QJ_OFF_SLEEPING;
	}
	/*
	 * Preempted, it is sampled where it is now: when it runs again it may
	 * run on into a system call and sleep before its next CPU sample,
	 * and the stack of that sleep is not where it waited for a CPU.
	 */
	if (o && o->leaving == QJ_OFF_RUNNABLE) {
		id = qj_current_ids();
		pid = id >> 32;
		p = bpf_map_lookup_elem(&procs, &pid);
		v = vcpu_of_thread(id);
		if (p && v) {
			o->ids = id;
			o->preempted = 1;
			capture(ctx, id, p, v, 0, NULL, true);
		}
	}
	/* NEXT comes back. */
	o = bpf_task_storage_get(&offcpu, next, 0, 0);
	if (o && o->ts && o->preempted) {
		/* Its sample is taken: its period follows, if any. */
		ticks = now / off_period - o->ts / off_period;
		o->ts = 0;
		o->preempted = 0;
		e = ticks ? bpf_ringbuf_reserve(&events, sizeof(*e), 0) : NULL;
		if (e) {
			e->hdr.type = QJ_EV_WAIT_END;
			e->hdr.tid = (__u32)o->ids;
			e->hdr.pid = o->ids >> 32;
			e->hdr.pad = 0;
			e->hdr.ts = now;
			e->period = ticks * off_period;
			qj_submit(&events, e, wake_bytes, false);
		} else if (ticks) {
			__sync_fetch_and_add(&lost_samples, 1);
		}
	} else if (o && o->ts) {
		ticks = now / off_period - o->ts / off_period;
		if (ticks && !o->ns) {
			n = bpf_get_task_stack(next, o->kstack, sizeof(o->kstack), 0);
			o->nkern = n > 0 ? (__u32)n / 8 : 0;
			o->state = o->leaving;
		}
		/* (User space may have taken its start: --interval.) */
		if (ticks)
			o->from = o->ts;
		o->ts = 0;
		o->ns += ticks * off_period;
	}
	t = bpf_map_lookup_elem(&taker, &zero);
	if (t)
		*t = o && o->ns ? (__u64)next : 0;
	return 0;
}

/* A system call returns: after a wait, where the thread waited. */
SEC("tp_btf/sys_exit")
int BPF_PROG(wait_end)
{
	__u32 zero = 0, pid;
	__u64 *t = bpf_map_lookup_elem(&taker, &zero), id;
	struct qj_proc *p;
	struct qj_vcpu *v;
	struct qj_off *o;

	if (!t || *t != bpf_get_current_task())
		return 0;
	*t = 0;
	o = wait_to_take();
	if (!o)
		return 0;
	id = qj_current_ids();
	pid = id >> 32;
	p = bpf_map_lookup_elem(&procs, &pid);
	v = vcpu_of_thread(id);
	if (p && v)
		capture(ctx, id, p, v, o->ns, o, false);
	o->ns = 0;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
