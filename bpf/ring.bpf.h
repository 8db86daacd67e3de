/* SPDX-License-Identifier: GPL-2.0 */
/* How every program hands a record to user space. */
#ifndef QJ_RING_BPF_H
#define QJ_RING_BPF_H

/*
 * User space drains the ring on a timer, so a record does
 * not wake it: a wakeup is an irq_work self-IPI, a VM exit on virtual
 * machines and a context switch.  Two kinds do: a record user space waits
 * for (the handshake), and a record submitted while the ring holds
 * wake_bytes or more (QJ_WAKE_BYTES(), set by user space), once for each
 * time user space has read from the ring, and at most every QJ_WAKE_NS
 * unless the ring is a quarter full.  What QEMU leaves in the ring when
 * it exits is what user space still has to read before it can exit, so
 * it reads while QEMU runs, a few hundred KiB at a time; but a tool
 * working beside a call-heavy guest every 0.4 ms slows it (fib(30)
 * --uftrace: 4 % of its wall time).
 */
static __u64 qj_woken_at; /* the consumer's position at the last wakeup, + 1 */
static __u64 qj_woken_ns; /* when */

static __always_inline void qj_submit(void *ring, void *r, __u64 wake_bytes, bool urgent)
{
	__u64 flags = BPF_RB_NO_WAKEUP, avail, cons, now;

	if (urgent) {
		flags = BPF_RB_FORCE_WAKEUP;
	} else if ((avail = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA)) >= wake_bytes) {
		cons = bpf_ringbuf_query(ring, BPF_RB_CONS_POS) + 1;
		if (qj_woken_at != cons) {
			now = bpf_ktime_get_ns();
			if (avail >= wake_bytes * QJ_WAKE_SOON || now - qj_woken_ns >= QJ_WAKE_NS) {
				qj_woken_at = cons;
				qj_woken_ns = now;
				flags = BPF_RB_FORCE_WAKEUP;
			}
		}
	}
	bpf_ringbuf_submit(r, flags);
}

#endif
