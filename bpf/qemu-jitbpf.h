/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Records the BPF programs send to user space through the ring buffer.
 * Fixed-size types only: this header is shared by both sides.
 */
#ifndef QEMU_JITBPF_H
#define QEMU_JITBPF_H

/* Guest instructions carried by one TB record, and by each continuation. */
#define QJ_INSNS_PER_REC 16
/* Per-insn guest data: at most 3 words of 8 bytes per instruction. */
#define QJ_INSN_STRIDE_MAX 24
#define QJ_INSN_DATA_MAX   (QJ_INSNS_PER_REC * QJ_INSN_STRIDE_MAX)
/* TCG limits a TB to 512 instructions and less than 64 KiB of host code. */
#define QJ_TB_MAX_INSNS 512
#define QJ_TB_MAX_CODE	65536
#define QJ_CODE_CHUNK	1024
#define QJ_PATH_MAX	256
/* Guest call events: QEMU hands over up to 4096 per batch (jit-calls.c). */
#define QJ_CALL_EVENT_SIZE 24
#define QJ_CALLS_PER_REC   170
#define QJ_CALLS_MAX_BATCH 4096

enum qj_event_type {
	QJ_EV_TB = 1,	  /* struct qj_tb, after its insn and code records */
	QJ_EV_TB_INSNS,	  /* struct qj_tb_insns: instructions 16.. of a TB */
	QJ_EV_CODE,	  /* struct qj_code: host code bytes of a TB */
	QJ_EV_PROLOGUE,	  /* struct qj_prologue */
	QJ_EV_FLUSH,	  /* struct qj_hdr: every host range may be reused */
	QJ_EV_ATTACH,	  /* struct qj_attach: late-attach handshake done */
	QJ_EV_MARKER,	  /* struct qj_marker: jitdump marker file */
	QJ_EV_IMAGE,	  /* struct qj_image: guest ELF image loaded by QEMU */
	QJ_EV_GUEST_BASE, /* struct qj_guest_base */
	QJ_EV_CALLS,	  /* struct qj_calls: guest calls and returns */
};

/* Counters in the BPF program's .bss, read by user space. */
enum qj_counter {
	QJ_LOST_RECORDS, /* records the ring buffer had no room for */
	QJ_LOST_TBS,	 /* TBs whose header or some part was lost */
	QJ_TBS,		 /* TBs seen by the BPF program */
	QJ_NO_LAYOUT,	 /* TBs before the insn layout was known */
	QJ_LOST_CALLS,	 /* call/return events that found no room */
	QJ_COUNTERS,
};

struct qj_hdr {
	__u32 type;
	__u32 tid;
	__u64 ts; /* CLOCK_MONOTONIC ns, when the probe fired */
};

struct qj_tb {
	struct qj_hdr hdr;
	__u64 seq;  /* joins a TB with its continuation and code records */
	__u64 pc;   /* guest pc of the first instruction */
	__u64 host; /* host code start */
	__u64 phys;
	__u32 size; /* host code size, whole tc.size */
	__u32 cflags;
	__u32 flags;
	__s32 cpu;
	__u16 icount;
	__u16 stride;	 /* bytes per insn in insn_data, 0: layout unknown */
	__u16 insn_recs; /* QJ_EV_TB_INSNS records sent before this one */
	__u16 code_recs; /* QJ_EV_CODE records sent before this one */
	__u16 lost;	 /* records of this TB that could not be sent */
	__u16 pad[3];
	__u16 end_off[QJ_INSNS_PER_REC];
	__u8 insn_data[QJ_INSN_DATA_MAX];
};

struct qj_tb_insns {
	struct qj_hdr hdr;
	__u64 seq;
	__u16 first; /* index of end_off[0] in the TB */
	__u16 n;
	__u32 pad;
	__u16 end_off[QJ_INSNS_PER_REC];
	__u8 insn_data[QJ_INSN_DATA_MAX];
};

struct qj_code {
	struct qj_hdr hdr;
	__u64 seq;
	__u32 off;
	__u32 len;
	__u8 bytes[QJ_CODE_CHUNK];
};

struct qj_prologue {
	struct qj_hdr hdr;
	__u64 host;
	__u64 size;
	__u32 insn_words;
	__u32 word_size;
	__s32 page_bits;
	__u32 pad;
};

struct qj_attach {
	struct qj_hdr hdr;
	__u32 count;
	__u32 pad;
};

struct qj_marker {
	struct qj_hdr hdr;
	__u64 addr;
	char path[QJ_PATH_MAX];
};

struct qj_image {
	struct qj_hdr hdr;
	__u64 bias;
	__u64 start;
	__u64 end; /* inclusive */
	char path[QJ_PATH_MAX];
};

struct qj_guest_base {
	struct qj_hdr hdr;
	__u64 base;
	__s32 page_bits;
	__u32 pad;
};

/*
 * Guest call and return events of one thread, as QEMU recorded them: each
 * event is {u64 ts; u64 kind << 62 | addr; u64 sp} (QEMU's JitCallEvent).
 */
struct qj_calls {
	struct qj_hdr hdr;
	__s32 cpu;
	__u32 n;
	__u64 lost; /* events of this thread lost so far */
	__u8 ev[QJ_CALLS_PER_REC * QJ_CALL_EVENT_SIZE];
};

#endif /* QEMU_JITBPF_H */
