/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The degraded mode: programs on the trace events an unpatched QEMU
 * built with the dtrace backend has (Fedora's, RHEL's, Azure Linux's),
 * part of qemu-jitbpf.bpf.c, whose ring and helpers they use.
 *
 * qemu:translate_block(tb, pc, tb_code) fires in tb_gen_code() before
 * the code is generated: its size is not known yet, and the TB may still
 * be discarded (an identical one was linked first), abandoned (the
 * translator longjmp'ed out, the buffer overflowed) or retranslated.  A
 * TB is kept here, by process and address, and finished when its thread
 * translates the next one: by then tb_gen_code() has returned, and the TB
 * read back tells its final size.  A discarded or abandoned TB gives its
 * memory back, so the next translation, of any thread, reuses its
 * address: it replaces the entry, and the thread that made the old one
 * finds it gone.  A flush drops the process's entries (their code is
 * going).  A TB no later translation follows (the last ones of a loop
 * that runs on) is finished by user space, which reads it the same way.
 */
#ifndef QJ_STOCK_BPF_H
#define QJ_STOCK_BPF_H

/* Set by user space before load: where TranslationBlock keeps its code. */
const volatile struct qj_tb_layout tb_layout;

/* TBs translated, not finished yet: read by user space too. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct qj_stock_key);
	__type(value, struct qj_stock_block);
} stock_blocks SEC(".maps");

/* Each thread's last TB. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} stock_last SEC(".maps");

struct stock_mmap {
	__u64 len;
	__u64 offset;
	__s32 fd;
	__s32 prot;
};

/* Each thread's target_mmap() under way. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct stock_mmap);
} stock_mmaps SEC(".maps");

/* The processes whose TBs are not laid out as tb_layout says: told once. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u8);
} stock_refused SEC(".maps");

/* TB TB of PID, made by thread TID: its final size, reported. */
static __always_inline void stock_finish(__u32 pid, __u32 tid, __u64 tb)
{
	struct qj_stock_key key = {.pid = pid, .tb = tb};
	struct qj_stock_block *b = bpf_map_lookup_elem(&stock_blocks, &key);
	__u64 ptr = 0, size = 0;
	__u16 gsize = 0;
	struct qj_block *r;

	if (!b || b->tid != tid)
		return;
	bpf_probe_read_user(&ptr, sizeof(ptr), (void *)(tb + tb_layout.ptr_off));
	bpf_probe_read_user(&size, sizeof(size), (void *)(tb + tb_layout.size_off));
	bpf_probe_read_user(&gsize, sizeof(gsize), (void *)(tb + tb_layout.guest_size_off));
	if (ptr == b->code && size && size <= QJ_TB_MAX_CODE) {
		r = reserve(sizeof(*r));
		if (r) {
			fill_hdr(&r->hdr, QJ_EV_BLOCK, b->ts);
			r->pc = b->pc;
			r->host = ptr;
			r->size = size;
			r->guest_size = gsize;
			r->pad = 0;
			submit(r);
		}
	}
	bpf_map_delete_elem(&stock_blocks, &key);
}

/*
 * In a tree (-p, a launched command) a stock binary's probes are attached
 * for every process that runs it, so that a QEMU the tree execs or forks
 * is seen from its first TB: only the tree's own count.
 */
static __always_inline bool stock_followed(__u32 pid)
{
	return !follow_tree || bpf_map_lookup_elem(&tree, &pid);
}

SEC("usdt")
int BPF_USDT(translate_block, __u64 tb, __u64 pc, __u64 code)
{
	__u64 id = qj_current_ids(), seen = 0, *last;
	__u32 pid = id >> 32, tid = (__u32)id;
	struct qj_stock_key key = {.pid = pid, .tb = tb};
	struct qj_stock_block b = {.pc = pc, .code = code, .tid = tid};
	struct qj_layout *r;

	if (!pid || !stock_followed(pid) || bpf_map_lookup_elem(&stock_refused, &pid))
		return 0;
	bpf_probe_read_user(&seen, sizeof(seen), (void *)(tb + tb_layout.ptr_off));
	if (seen != code) {
		__u8 one = 1;

		bpf_map_update_elem(&stock_refused, &pid, &one, BPF_ANY);
		r = reserve(sizeof(*r));
		if (r) {
			fill_hdr(&r->hdr, QJ_EV_LAYOUT, bpf_ktime_get_ns());
			r->tb = tb;
			r->code = code;
			r->seen = seen;
			qj_submit(&events, r, wake_bytes, true);
		}
		return 0;
	}
	last = bpf_map_lookup_elem(&stock_last, &tid);
	if (last && *last != tb)
		stock_finish(pid, tid, *last);
	b.ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&stock_blocks, &key, &b, BPF_ANY);
	bpf_map_update_elem(&stock_last, &tid, &tb, BPF_ANY);
	return 0;
}

/* The TB under way is abandoned: a flush or another try follows. */
SEC("usdt")
int BPF_USDT(tb_gen_code_buffer_overflow)
{
	__u64 id = qj_current_ids(), *last;
	__u32 tid = (__u32)id;
	struct qj_stock_key key = {.pid = id >> 32};

	last = bpf_map_lookup_elem(&stock_last, &tid);
	if (!last)
		return 0;
	key.tb = *last;
	bpf_map_delete_elem(&stock_blocks, &key);
	bpf_map_delete_elem(&stock_last, &tid);
	return 0;
}

static long stock_drop(void *map, struct qj_stock_key *key, struct qj_stock_block *b, __u32 *pid)
{
	if (key->pid == *pid)
		bpf_map_delete_elem(map, key);
	return 0;
}

/* At a flush: the process's TBs not finished yet are gone. */
static __always_inline void stock_flush(void)
{
	__u32 pid = qj_current_ids() >> 32;

	bpf_for_each_map_elem(&stock_blocks, stock_drop, &pid, 0);
}

SEC("usdt")
int BPF_USDT(target_mmap, __u64 start, __u64 len, __s32 prot, __s32 flags, __s32 fd, __u64 offset)
{
	__u64 id = qj_current_ids();
	__u32 tid = (__u32)id;
	struct stock_mmap m = {.len = len, .offset = offset, .fd = fd, .prot = prot};

	if (stock_followed(id >> 32))
		bpf_map_update_elem(&stock_mmaps, &tid, &m, BPF_ANY);
	return 0;
}

SEC("usdt")
int BPF_USDT(target_mmap_complete, __u64 start)
{
	__u32 tid = (__u32)qj_current_ids();
	struct stock_mmap *m = bpf_map_lookup_elem(&stock_mmaps, &tid);
	struct qj_guest_map *r;

	if (!m)
		return 0;
	if (m->fd >= 0 && start < (__u64)-4096) {
		r = reserve(sizeof(*r));
		if (r) {
			fill_hdr(&r->hdr, QJ_EV_GUEST_MAP, bpf_ktime_get_ns());
			r->start = start;
			r->len = m->len;
			r->offset = m->offset;
			r->fd = m->fd;
			r->prot = m->prot;
			/* User space reads QEMU's mappings while they last. */
			qj_submit(&events, r, wake_bytes, true);
		}
	}
	bpf_map_delete_elem(&stock_mmaps, &tid);
	return 0;
}

#endif
