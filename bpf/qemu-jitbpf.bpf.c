// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * BPF side of qemu-jitbpf: USDT programs on the probes of a patched QEMU
 * (docs/probes.md).  Everything that must be read while the probe fires
 * is read here: the per-instruction tables, which the translating thread
 * reuses for its next TB, and the host code bytes, which a flush
 * overwrites.  Records go to user space through one ring buffer; every
 * record that finds no room is counted.
 *
 * No vmlinux.h and no CO-RE: its preserve_access_index types would turn
 * usdt.bpf.h's PT_REGS_IP into CO-RE relocations, and libbpf would parse
 * the whole kernel BTF (~20 ms) and search it at every start.  The few
 * fields of a task the fork, exec and exit programs read are at offsets
 * user space sets before load.
 */
#include <linux/types.h>
#include <linux/bpf.h>
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

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24); /* resized by user space */
} events SEC(".maps");

__u64 counters[QJ_COUNTERS];

/*
 * The processes whose guest memory is known, by pid: what the sampler
 * (sample.bpf.c) samples, and, with -a, the QEMUs whose forks, execs and
 * exits are reported.  A process enters when QEMU reports guest_base, a
 * forked child with its parent, and leaves when it execs or exits.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, QJ_PROCS_MAX);
	__type(key, __u32);
	__type(value, struct qj_proc);
} procs SEC(".maps");

/*
 * The process tree a run follows (-p, a launched QEMU): the QEMU the user
 * named, put here by user space, and every process forked from one in
 * it; a process stays in it when it runs another program.  With -a it
 * stays empty (one element, user space sizes it): procs says which
 * processes are followed.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, QJ_PROCS_MAX);
	__type(key, __u32);
	__type(value, __u32);
} tree SEC(".maps");

/* Set by user space before load: follow the tree map, not procs. */
const volatile bool follow_tree;
/* Set by user space before load: the QEMUs are stock ones (stock.bpf.h). */
const volatile bool stock;

/*
 * Call events each thread lost since its last delivered record, so that
 * user space knows where the gaps are: the next record carries them, or
 * the thread's exit does (qemu_exit).  LRU, so that threads no one saw
 * exit never fill it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} calls_lost SEC(".maps");
__u64 tb_seq;

static __always_inline void count(enum qj_counter c, __u64 n)
{
	__sync_fetch_and_add(&counters[c], n);
}

static __always_inline void fill_hdr(struct qj_hdr *h, __u32 type, __u64 ts)
{
	__u64 id = qj_current_ids();

	h->type = type;
	h->tid = (__u32)id;
	h->pid = id >> 32;
	h->pad = 0;
	h->ts = ts;
}

/* Set by user space before load: see qj_submit(). */
const volatile __u64 wake_bytes;

static __always_inline void submit(void *r)
{
	qj_submit(&events, r, wake_bytes, false);
}

/* Reserve a record, or count it lost. */
static __always_inline void *reserve(__u64 size)
{
	void *r = bpf_ringbuf_reserve(&events, size, 0);

	if (!r)
		count(QJ_LOST_RECORDS, 1);
	return r;
}

#include "stock.bpf.h"

/* State of one tb_gen_code_batch hit, shared with the bpf_loop callback. */
struct tbs_ctx {
	__u64 ts;
	__u64 batch;
	__u64 records;
	__u32 len;
	__u32 count;
	__u32 lost;
};

static long send_tbs(__u32 idx, struct tbs_ctx *c)
{
	__u64 off = (__u64)idx * QJ_TBS_CHUNK, len;
	struct qj_tbs *r;

	if (off >= c->len || off >= QJ_TBS_MAX_BATCH)
		return 1;
	r = reserve(sizeof(*r));
	if (!r) {
		/* A flag, not a count: a count the verifier would follow
		 * through every iteration (7 200 instructions, 3 ms). */
		c->lost = 1;
		return 0;
	}
	fill_hdr(&r->hdr, QJ_EV_TBS, c->ts);
	r->batch = c->batch;
	r->off = off;
	r->total = c->len;
	r->count = c->count;
	len = c->len - off;
	asm volatile("" : "+r"(len));
	if (len > QJ_TBS_CHUNK)
		len = QJ_TBS_CHUNK;
	r->len = len;
	/* (Sleepable: a page of the batch that is not present at this
	 * moment, one the kernel is migrating, say, is faulted in, where
	 * bpf_probe_read_user() would fail.)  A part not read leaves its
	 * batch incomplete: its TBs are lost, and said so. */
	if (bpf_copy_from_user(r->data, len, (void *)(c->records + off))) {
		r->len = 0;
		c->lost = 1;
	}
	submit(r);
	return 0;
}

/*
 * tb_gen_code_batch(records, len, count): reports of TBs whose code is
 * final, with their host code, copied while it is still in place.
 */
SEC("usdt.s")
int BPF_USDT(tb_gen_code_batch, __u64 records, __u64 len, __u32 n)
{
	struct tbs_ctx c = {
		.ts = bpf_ktime_get_ns(),
		.batch = __sync_fetch_and_add(&tb_seq, 1),
		.records = records,
		.len = len > QJ_TBS_MAX_BATCH ? QJ_TBS_MAX_BATCH : len,
		.count = n,
	};

	count(QJ_TBS, n);
	bpf_loop(QJ_TBS_MAX_BATCH / QJ_TBS_CHUNK + 1, send_tbs, &c, 0);
	if (c.lost)
		count(QJ_LOST_TBS, n);
	return 0;
}

/* State of one jit_counts hit, shared with the bpf_loop callback. */
struct counts_ctx {
	__u64 ts, counts, array, seq, missed, sync;
	__u32 first, n, kind;
	__s32 cpu;
};

static long send_counts(__u32 idx, struct counts_ctx *c)
{
	__u32 off = idx * QJ_COUNTS_PER_REC, n;
	struct qj_counts *r;
	__u64 len;

	/* (The first record goes even without counts.) */
	if ((idx && off >= c->n) || off > QJ_COUNTS_MAX_HIT)
		return 1;
	n = c->n - off;
	if (n > QJ_COUNTS_PER_REC)
		n = QJ_COUNTS_PER_REC;
	r = reserve(sizeof(*r));
	if (!r) {
		count(QJ_LOST_COUNTS, n);
		return 0;
	}
	fill_hdr(&r->hdr, QJ_EV_COUNTS, c->ts);
	r->array = c->array;
	r->seq = c->seq;
	r->missed = c->missed;
	r->sync = c->sync;
	r->first = c->first + off;
	r->cpu = c->cpu;
	r->kind = c->kind;
	r->n = n;
	len = (__u64)n * sizeof(__u64);
	/* (Bounded where the helper reads it, not in a copy.) */
	asm volatile("" : "+r"(len));
	if (len > sizeof(r->counts))
		len = sizeof(r->counts);
	/* (Sleepable: pages of the array that are not present are faulted
	 * in, where bpf_probe_read_user() would fail.) */
	if (len &&
	    bpf_copy_from_user(r->counts, len, (void *)(c->counts + (__u64)off * sizeof(__u64)))) {
		count(QJ_LOST_COUNTS, n);
		r->n = 0;
	}
	submit(r);
	return 0;
}

/*
 * jit_counts(counts, n, first, cpu, array, kind, seq, missed, sync): TB
 * execution counts, in records of QJ_COUNTS_PER_REC (or one without
 * counts: a final report of an empty array, an answer, a start).
 */
SEC("usdt.s")
int BPF_USDT(jit_counts, __u64 counts, __u32 n, __u32 first, __s32 cpu, __u64 array, __s32 kind,
	     __u64 seq, __u64 missed, __u64 sync)
{
	struct counts_ctx c = {
		.ts = bpf_ktime_get_ns(),
		.counts = counts,
		.array = array,
		.seq = seq,
		.missed = missed,
		.sync = sync,
		.first = first,
		.n = n > QJ_COUNTS_MAX_HIT ? QJ_COUNTS_MAX_HIT : n,
		.kind = kind,
		.cpu = cpu,
	};

	bpf_loop(QJ_COUNTS_MAX_HIT / QJ_COUNTS_PER_REC + 1, send_counts, &c, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(tcg_prologue, __u64 host, __u64 size, __u32 words, __u32 word_size, __s32 page_bits)
{
	struct qj_prologue *r;

	r = reserve(sizeof(*r));
	if (!r)
		return 0;
	fill_hdr(&r->hdr, QJ_EV_PROLOGUE, bpf_ktime_get_ns());
	r->host = host;
	r->size = size;
	r->insn_words = words;
	r->word_size = word_size;
	r->page_bits = page_bits;
	submit(r);
	return 0;
}

SEC("usdt")
int BPF_USDT(tb_flush)
{
	struct qj_hdr *r;

	if (stock) {
		/* (A stock QEMU outside the tree is none of ours.) */
		if (!stock_followed(qj_current_ids() >> 32))
			return 0;
		stock_flush();
	}
	r = reserve(sizeof(*r));
	if (!r)
		return 0;
	fill_hdr(r, QJ_EV_FLUSH, bpf_ktime_get_ns());
	submit(r);
	return 0;
}

SEC("usdt")
int BPF_USDT(jit_attach, __u32 n, __u32 request, __u64 poll_ns, __u32 flushes)
{
	struct qj_attach *r = reserve(sizeof(*r));

	if (!r)
		return 0;
	fill_hdr(&r->hdr, QJ_EV_ATTACH, bpf_ktime_get_ns());
	r->count = n;
	r->request = request;
	r->poll_ns = poll_ns;
	r->flushes = flushes;
	r->pad = 0;
	qj_submit(&events, r, wake_bytes, true);
	return 0;
}

SEC("usdt")
int BPF_USDT(jitdump_marker, __u64 path, __u64 addr)
{
	struct qj_marker *r = reserve(sizeof(*r));

	if (!r)
		return 0;
	fill_hdr(&r->hdr, QJ_EV_MARKER, bpf_ktime_get_ns());
	r->addr = addr;
	if (bpf_probe_read_user_str(r->path, sizeof(r->path), (void *)path) < 0)
		r->path[0] = 0;
	submit(r);
	return 0;
}

/* A guest image record (struct qj_image) of TYPE. */
static __always_inline void send_image(__u32 type, __u64 path, __u64 bias, __u64 start, __u64 end)
{
	struct qj_image *r = reserve(sizeof(*r));

	if (!r)
		return;
	fill_hdr(&r->hdr, type, bpf_ktime_get_ns());
	r->bias = bias;
	r->start = start;
	r->end = end;
	if (bpf_probe_read_user_str(r->path, sizeof(r->path), (void *)path) < 0)
		r->path[0] = 0;
	submit(r);
}

SEC("usdt")
int BPF_USDT(linux_user_elf_image, __u64 path, __u64 bias, __u64 start, __u64 end)
{
	send_image(QJ_EV_IMAGE, path, bias, start, end);
	return 0;
}

/* linux-user: code the guest mapped from a file (its loader mapping a
 * library), the file offset at START in place of a bias. */
SEC("usdt")
int BPF_USDT(linux_user_guest_mmap, __u64 path, __u64 start, __u64 end, __u64 offset)
{
	send_image(QJ_EV_MMAP, path, offset, start, end);
	return 0;
}

/* System mode: an ELF file QEMU loaded into guest memory (-kernel,
 * -device loader), with the guest-physical range it occupies. */
SEC("usdt")
int BPF_USDT(loader_elf_image, __u64 path, __u64 low, __u64 high)
{
	send_image(QJ_EV_LOADED_ELF, path, 0, low, high);
	return 0;
}

/*
 * System mode: a range of guest-physical RAM and where QEMU maps it.  The
 * profiler reads guest stacks from the largest range (sample.h).
 */
SEC("usdt")
int BPF_USDT(jit_guest_ram, __u64 phys, __u64 size, __u64 host)
{
	__u32 pid = qj_current_ids() >> 32;
	struct qj_proc *old = bpf_map_lookup_elem(&procs, &pid);
	struct qj_proc p = {.guest_base = host - phys, .lo = phys, .hi = phys + size};

	if (pid && (!old || size > old->hi - old->lo))
		bpf_map_update_elem(&procs, &pid, &p, BPF_ANY);
	return 0;
}

SEC("usdt")
int BPF_USDT(linux_user_guest_base, __u64 base, __s32 page_bits)
{
	struct qj_guest_base *r = reserve(sizeof(*r));
	struct qj_proc p = {};

	if (!r)
		return 0;
	fill_hdr(&r->hdr, QJ_EV_GUEST_BASE, bpf_ktime_get_ns());
	/* (A QEMU outside the tool's pid namespace: -a in a container.) */
	if (!r->hdr.pid) {
		bpf_ringbuf_discard(r, 0);
		return 0;
	}
	p.guest_base = base;
	bpf_map_update_elem(&procs, &r->hdr.pid, &p, BPF_ANY);
	r->base = base;
	r->page_bits = page_bits;
	submit(r);
	return 0;
}

/* State of one jit_calls hit, shared with the bpf_loop callback. */
struct calls_ctx {
	__u64 ts;
	__u64 events;
	__u32 count;
	__s32 cpu;
	__s32 level;
	__u32 tid;
	__u64 *lost; /* this thread's entry in calls_lost */
	__u64 clock[4];
	__u64 seq, sync;
};

/* Fill record R with the N (<= MAX) events from FIRST on, and submit it. */
static __always_inline void fill_calls(struct qj_calls *r, struct calls_ctx *c, __u64 first,
				       __u64 n, __u64 max)
{
	__u64 len = n * QJ_CALL_EVENT_SIZE;

	fill_hdr(&r->hdr, QJ_EV_CALLS, c->ts);
	r->hdr.tid = c->tid;
	r->cpu = c->cpu;
	r->level = c->level;
	r->pad = 0;
	r->n = n;
	__builtin_memcpy(r->clock, c->clock, sizeof(r->clock));
	r->seq = c->seq;
	r->sync = c->sync;
	/* Only this thread writes its entry: no other can race. */
	r->lost = *c->lost;
	*c->lost = 0;
	asm volatile("" : "+r"(len));
	if (len > max * QJ_CALL_EVENT_SIZE)
		len = max * QJ_CALL_EVENT_SIZE;
	if (bpf_probe_read_user(r->ev, len, (void *)(c->events + first * QJ_CALL_EVENT_SIZE)))
		r->n = 0;
	submit(r);
}

#define QJ_CALLS_SMALL_SIZE \
	(offsetof(struct qj_calls, ev) + QJ_CALLS_PER_SMALL * QJ_CALL_EVENT_SIZE)

/*
 * Record IDX of a batch: its events from IDX * QJ_CALLS_PER_REC on.  The
 * first event follows from IDX, not from what earlier iterations counted:
 * the verifier then checks one iteration, not each (11 200 instructions).
 */
static long send_calls(__u32 idx, struct calls_ctx *c)
{
	__u64 first = (__u64)idx * QJ_CALLS_PER_REC, n;
	struct qj_calls *r;

	if (first >= c->count || first >= QJ_CALLS_MAX_BATCH)
		return 1;
	n = c->count - first;
	if (n > QJ_CALLS_PER_REC)
		n = QJ_CALLS_PER_REC;
	if (n > QJ_CALLS_PER_SMALL) {
		r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
		if (r) {
			fill_calls(r, c, first, n, QJ_CALLS_PER_REC);
			return 0;
		}
	} else {
		r = bpf_ringbuf_reserve(&events, QJ_CALLS_SMALL_SIZE, 0);
		if (r) {
			fill_calls(r, c, first, n, QJ_CALLS_PER_SMALL);
			return 0;
		}
	}
	count(QJ_LOST_CALLS, n);
	__sync_fetch_and_add(c->lost, n);
	return 0;
}

SEC("usdt")
int BPF_USDT(jit_calls, __u64 events, __u32 n, __s32 cpu, __s32 level, __u64 clock, __s32 held,
	     __u64 seq, __u64 sync)
{
	__u64 id = qj_current_ids();
	struct calls_ctx c = {
		.ts = bpf_ktime_get_ns(),
		.events = events,
		.count = n > QJ_CALLS_MAX_BATCH ? QJ_CALLS_MAX_BATCH : n,
		.cpu = cpu,
		.level = level,
		/* A batch held while we attached is reported by another
		 * thread: it is the main thread's (held is 0 before 10.2.2's
		 * patch 27, and for every batch not held). */
		.tid = held ? id >> 32 : (__u32)id,
		.seq = seq,
		.sync = sync,
	};
	__u64 zero = 0;

	c.lost = bpf_map_lookup_elem(&calls_lost, &c.tid);
	if (!c.lost) {
		bpf_map_update_elem(&calls_lost, &c.tid, &zero, BPF_NOEXIST);
		c.lost = bpf_map_lookup_elem(&calls_lost, &c.tid);
		if (!c.lost) {
			count(QJ_LOST_CALLS, c.count);
			return 0;
		}
	}
	/* QEMU 7.2 has no clock argument: its events are in nanoseconds.
	 * Events in ticks that cannot be converted are lost. */
	if (clock && bpf_probe_read_user(c.clock, sizeof(c.clock), (void *)clock)) {
		count(QJ_LOST_CALLS, c.count);
		__sync_fetch_and_add(c.lost, c.count);
		return 0;
	}
	bpf_loop(QJ_CALLS_MAX_BATCH / QJ_CALLS_PER_REC + 2, send_calls, &c, 0);
	return 0;
}

/*
 * QEMU waits for us to read its call batches (we fell 64 behind, or came
 * after batches we never saw): it waits, instead of handing over more,
 * because we listen here.
 */
SEC("usdt")
int BPF_USDT(jit_calls_wait, __u64 unread, __u64 seq, __u64 sync)
{
	struct qj_calls_wait *r = reserve(sizeof(*r));

	if (r) {
		fill_hdr(&r->hdr, QJ_EV_CALLS_WAIT, bpf_ktime_get_ns());
		r->seq = seq;
		r->sync = sync;
		qj_submit(&events, r, wake_bytes, true);
	}
	return 0;
}

/*
 * What becomes of the processes followed: raw tracepoints of the
 * scheduler, which need neither tracefs nor the kernel's BTF.  What they
 * read of a task is at offsets user space found in the kernel's BTF and
 * sets before load (engine/kernel.c): with CO-RE, libbpf would look them
 * up at every start.
 */
const volatile __u32 task_pid_off, task_tgid_off, task_signal_off, signal_live_off;
const volatile __u32 signal_runtime_off, task_runtime_off, task_start_off, task_leader_off;
const volatile __u32 bprm_interp_off, task_mm_off, mm_arg_start_off, mm_arg_end_off;

/*
 * A fork, exec or exit of a followed process.  In a followed tree, user
 * space acts on each at once (a forked child waits for its probes), so
 * these wake it.
 */
static __always_inline void task_event(__u32 type, __u32 pid, __u32 child)
{
	struct qj_fork *r = reserve(sizeof(*r));

	if (!r)
		return;
	fill_hdr(&r->hdr, type, bpf_ktime_get_ns());
	r->hdr.pid = pid;
	r->child = child;
	r->pad = 0;
	qj_submit(&events, r, wake_bytes, follow_tree);
}

/*
 * Process PID execs, or its last thread exits (TYPE): its CPU time so far
 * is what the threads released before this one left in its signal_struct,
 * this one's, and a group leader's that exited first and waits to be
 * reaped (after an exec, the others are gone into the signal_struct).
 */
static __always_inline void cpu_fill(struct qj_exit *r, __u32 type, __u32 pid)
{
	__u64 task = bpf_get_current_task(), leader = 0, signal = 0;

	fill_hdr(&r->hdr, type, bpf_ktime_get_ns());
	bpf_probe_read_kernel(&signal, sizeof(signal), (void *)(task + task_signal_off));
	r->hdr.pid = pid;
	bpf_probe_read_kernel(&leader, sizeof(leader), (void *)(task + task_leader_off));
	r->cpu_ns = (signal ? kernel_u64(signal + signal_runtime_off) : 0) +
		    kernel_u64(task + task_runtime_off);
	if (leader && leader != task)
		r->cpu_ns += kernel_u64(leader + task_runtime_off);
	r->start_ns = leader ? kernel_u64(leader + task_start_off) : 0;
}

/* Is PID one of the processes this run follows? */
static __always_inline bool followed(__u32 pid)
{
	return bpf_map_lookup_elem(follow_tree ? (void *)&tree : (void *)&procs, &pid);
}

/*
 * A followed process forked: a QEMU's child runs the same translated code.
 * sched_process_fork(parent, child) fires in the parent.
 */
SEC("raw_tp/sched_process_fork")
int qemu_fork(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 cpid = kernel_u32(ctx->args[1] + task_pid_off), pid, one = 1;
	struct qj_proc *p;

	/* A thread (every host's most frequent fork: checked first), or not
	 * ours? */
	if (kernel_u32(ctx->args[1] + task_tgid_off) != cpid)
		return 0;
	pid = qj_current_ids() >> 32;
	if (!followed(pid))
		return 0;
	cpid = qj_tid_of(ctx->args[1], cpid);
	/* A full map (user space sizes them) loses the child: counted. */
	if (follow_tree && bpf_map_update_elem(&tree, &cpid, &one, BPF_ANY))
		count(QJ_LOST_RECORDS, 1);
	p = bpf_map_lookup_elem(&procs, &pid);
	if (p && bpf_map_update_elem(&procs, &cpid, p, BPF_ANY))
		count(QJ_LOST_RECORDS, 1);
	task_event(QJ_EV_FORK, pid, cpid);
	return 0;
}

/*
 * A followed process runs another program: its QEMU, if any, reports
 * anew.  In a tree it stays followed, QEMU or not, with its children.
 */
SEC("raw_tp/sched_process_exec")
int qemu_exec(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 pid = qj_current_ids() >> 32;
	struct qj_exec *r;
	__u64 interp, mm, start, len;

	if (follow_tree ? !followed(pid) : !!bpf_map_delete_elem(&procs, &pid))
		return 0;
	bpf_map_delete_elem(&procs, &pid);
	r = reserve(sizeof(*r));
	if (!r)
		return 0;
	cpu_fill(&r->x, QJ_EV_EXEC, pid);
	/* sched_process_exec(p, old_pid, bprm) */
	interp = kernel_u64(ctx->args[2] + bprm_interp_off);
	if (!interp || bpf_probe_read_kernel_str(r->interp, sizeof(r->interp), (void *)interp) < 0)
		r->interp[0] = 0;
	/* Its arguments, which exec has just copied to its new stack. */
	mm = kernel_u64(bpf_get_current_task() + task_mm_off);
	start = mm ? kernel_u64(mm + mm_arg_start_off) : 0;
	len = mm ? kernel_u64(mm + mm_arg_end_off) - start : 0;
	if (len > QJ_ARGS_MAX)
		len = QJ_ARGS_MAX;
	r->args_len = 0;
	if (start && len &&
	    !bpf_probe_read_user(r->args, len & (2 * QJ_ARGS_MAX - 1), (void *)start))
		r->args_len = len;
	qj_submit(&events, r, wake_bytes, follow_tree);
	return 0;
}

/*
 * A thread of a followed process exits: the calls it lost since its last
 * record go to user space, in order after its records.  If the ring has
 * no room, the entry stays for user space to read at the end.
 */
static __always_inline void calls_lost_at_exit(__u32 tid)
{
	__u64 *lost = bpf_map_lookup_elem(&calls_lost, &tid);
	struct qj_calls_lost *r;

	if (!lost)
		return;
	if (*lost) {
		r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
		if (!r)
			return;
		fill_hdr(&r->hdr, QJ_EV_CALLS_LOST, bpf_ktime_get_ns());
		r->lost = *lost;
		submit(r);
	}
	bpf_map_delete_elem(&calls_lost, &tid);
}

/* A thread of a followed process exits; the last one (signal->live is 0)
 * ends the process. */
SEC("raw_tp/sched_process_exit")
int qemu_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 id = qj_current_ids(), signal = 0;
	__u32 pid = id >> 32, tid = (__u32)id;
	struct qj_exit *r;

	if (!followed(pid))
		return 0;
	calls_lost_at_exit(tid);
	bpf_probe_read_kernel(&signal, sizeof(signal),
			      (void *)(bpf_get_current_task() + task_signal_off));
	if (!signal || kernel_u32(signal + signal_live_off))
		return 0;
	if (bpf_map_delete_elem(follow_tree ? (void *)&tree : (void *)&procs, &pid))
		return 0;
	bpf_map_delete_elem(&procs, &pid);
	r = reserve(sizeof(*r));
	if (r) {
		cpu_fill(r, QJ_EV_EXIT, pid);
		qj_submit(&events, r, wake_bytes, follow_tree);
	}
	return 0;
}

/*
 * Nothing to do: attached in the processes of a followed tree, it raises
 * the semaphore of qemu:jit_fork_wait, which makes each child such a
 * QEMU forks wait until we have attached to it (docs/probes.md).
 */
SEC("usdt")
int BPF_USDT(jit_fork_wait, __s32 ms)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
