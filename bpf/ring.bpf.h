/* SPDX-License-Identifier: GPL-2.0 */
/* How every program hands a record to user space. */
#ifndef QJ_RING_BPF_H
#define QJ_RING_BPF_H

/*
 * User space drains the ring on a timer, so a record does
 * not wake it: a wakeup is an irq_work self-IPI, a VM exit on virtual
 * machines and a context switch.  Two kinds do: a record user space waits
 * for (the handshake), and any record submitted while the ring holds more
 * than wake_bytes (a quarter of it, set by user space), so that a burst is
 * read long before the ring fills.
 */
static __always_inline void qj_submit(void *ring, void *r, __u64 wake_bytes, bool urgent)
{
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (urgent || bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >= wake_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(r, flags);
}

#endif
