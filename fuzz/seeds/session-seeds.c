// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The seeds of fuzz/session.c: what the ring buffer brings of a QEMU that
 * runs x86_64-dyn-g of corpus/elf (fib() calling leaf(), called by
 * main()), in the input format fuzz/session.c reads: an options byte, a
 * byte of more, then records, each a 16-bit length (bit 15: zeroes fill
 * the rest of its structure) and its bytes.  Image paths /e/NAME are the
 * elf target's corpus (fuzz/session.c copies it to its directory).
 *
 *	cc -Ibpf -o /tmp/session-seeds fuzz/seeds/session-seeds.c &&
 *	/tmp/session-seeds fuzz/corpus/session
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>

#include "qemu-jitbpf.h"
#include "sample.h"

/* fuzz/session.c's options. */
#define OPT_PROCS    1
#define OPT_TREE     2
#define OPT_SYSTEM   4
#define OPT_INSN     8
#define OPT_PROFILE  16
#define OPT_JITDUMP  32
#define OPT_UFTRACE  64
#define OPT_FILTER   128
#define MORE_DWARF   1
#define MORE_TIME    2
#define MORE_PERFMAP 4
#define MORE_COUNTS  8
#define REC_PAD	     0x8000
#define TICK	     64

#define BIAS  0x555555554000ull /* x86_64-dyn-g, PIE, as linux-user loads it */
#define FIB   0x114e
#define LEAF  0x1149
#define MAIN  0x117d
#define HOST  0x7f1234000000ull /* QEMU's code buffer */
#define SP    0x7ffff7ff0000ull
#define CHILD 1 /* fuzz/session.c: a pid no process has */
#define OTHER 2

struct seed {
	uint8_t buf[4096];
	size_t len;
	uint64_t ts;
};

static void start(struct seed *s, uint8_t opt, uint8_t more)
{
	s->len = 0;
	s->ts = 1000;
	s->buf[s->len++] = opt;
	s->buf[s->len++] = more;
}

/* The first LEN bytes of record R; PAD: the rest is zeroes. */
static void rec(struct seed *s, const void *r, size_t len, bool pad)
{
	uint16_t w = (uint16_t)len | (pad ? REC_PAD : 0);

	if (s->len + 2 + len > sizeof(s->buf)) {
		fprintf(stderr, "seed too long\n");
		exit(1);
	}
	memcpy(s->buf + s->len, &w, 2);
	memcpy(s->buf + s->len + 2, r, len);
	s->len += 2 + len;
}

static struct qj_hdr hdr(struct seed *s, uint32_t type, uint32_t pid)
{
	return (struct qj_hdr){.type = type, .tid = 100 + pid, .pid = pid, .ts = s->ts += 1000};
}

static void simple(struct seed *s, uint32_t type, uint32_t pid)
{
	struct qj_hdr h = hdr(s, type, pid);

	rec(s, &h, sizeof(h), false);
}

/* At HOST, or (READ) in fuzz/session.c's code buffer, which it reads. */
static void prologue(struct seed *s, uint32_t pid, bool read)
{
	struct qj_prologue r = {
		hdr(s, QJ_EV_PROLOGUE, pid), read ? 0x100 : HOST, 0x100, 1, 1, 12, 0};

	rec(s, &r, sizeof(r), false);
}

static void attach(struct seed *s, uint32_t pid)
{
	struct qj_attach r = {hdr(s, QJ_EV_ATTACH, pid), 1, 1, s->ts};

	rec(s, &r, sizeof(r), false);
}

static void guest_base(struct seed *s, uint32_t pid, uint64_t base)
{
	struct qj_guest_base r = {hdr(s, QJ_EV_GUEST_BASE, pid), base, 12, 0};

	rec(s, &r, sizeof(r), false);
}

/* Image records name a path: only up to its end goes in the seed. */
static void image(struct seed *s, uint32_t type, uint32_t pid, const char *path, uint64_t bias,
		  uint64_t lo, uint64_t hi)
{
	struct qj_image r = {hdr(s, type, pid), bias, lo, hi, ""};

	strcpy(r.path, path);
	rec(s, &r, offsetof(struct qj_image, path) + strlen(path) + 1, true);
}

static void marker(struct seed *s, uint32_t pid)
{
	struct qj_marker r = {hdr(s, QJ_EV_MARKER, pid), 0, "/tmp/jit-1.dump"};

	rec(s, &r, offsetof(struct qj_marker, path) + strlen(r.path) + 1, true);
}

/* Counter slots of the TBs made, while set (jit_counts). */
static bool with_slots;
static uint32_t slots;

/* QEMU's JitTbRecord of a TB of N instructions at PCS, SIZE bytes of code. */
static size_t tb(uint8_t *out, uint64_t ts, uint64_t host, const uint64_t *pcs, uint32_t n,
		 uint32_t size)
{
	struct {
		uint64_t ts, pc, host;
		uint32_t size;
		uint16_t icount, pad;
		uint32_t len, slot;
	} t = {ts, pcs[0], host, size, (uint16_t)n, 0, 0, with_slots ? ++slots : 0};
	uint32_t offs = (n * 2 + 7) & ~7u, code = (size + 7) & ~7u;
	uint8_t *p = out + sizeof(t);

	t.len = sizeof(t) + n * 8 + offs + code;
	memcpy(out, &t, sizeof(t));
	memcpy(p, pcs, n * 8);
	p += n * 8;
	for (uint32_t i = 0; i < n; i++) {
		uint16_t end = (uint16_t)(size * (i + 1) / n);

		memcpy(p + i * 2, &end, 2);
	}
	memset(p + n * 2, 0, offs - n * 2);
	p += offs;
	memset(p, 0x90, code); /* nops */
	return t.len;
}

/* A batch of TBs in PARTS parts. */
static void tbs(struct seed *s, uint32_t pid, uint64_t batch, uint64_t base, int parts)
{
	static const uint64_t fib[] = {FIB, FIB + 4, FIB + 8};
	static const uint64_t leaf[] = {LEAF, LEAF + 1, FIB};
	static const uint64_t main_[] = {MAIN, MAIN + 4};
	uint8_t data[1024];
	uint64_t pcs[3];
	uint32_t total = 0, off = 0;

	for (int i = 0; i < 3; i++)
		pcs[i] = base + fib[i];
	total += tb(data + total, s->ts, HOST + 0x1000 + batch * 0x400, pcs, 3, 24);
	for (int i = 0; i < 3; i++)
		pcs[i] = base + leaf[i];
	total += tb(data + total, s->ts, HOST + 0x1100 + batch * 0x400, pcs, 3, 16);
	for (int i = 0; i < 2; i++)
		pcs[i] = base + main_[i];
	total += tb(data + total, s->ts, HOST + 0x1200 + batch * 0x400, pcs, 2, 12);
	for (int p = 0; p < parts; p++) {
		struct qj_tbs r = {hdr(s, QJ_EV_TBS, pid), batch, off, 0, total, 3, {0}};

		r.len = p == parts - 1 ? total - off : total / parts;
		memcpy(r.data, data + off, r.len);
		off += r.len;
		rec(s, &r, offsetof(struct qj_tbs, data) + r.len, true);
	}
}

/* Counts of slots FIRST.. of ARRAY (QJ_COUNTS_*), N of them. */
static void counts(struct seed *s, uint32_t pid, uint32_t kind, uint64_t array, uint32_t first,
		   const uint64_t *v, uint32_t n)
{
	struct qj_counts r = {.hdr = hdr(s, QJ_EV_COUNTS, pid),
			      .array = array,
			      .seq = kind == QJ_COUNTS_ANSWERED,
			      .sync = 0x1000,
			      .first = first,
			      .n = n,
			      .kind = kind};

	memcpy(r.counts, v, n * sizeof(*v));
	rec(s, &r, offsetof(struct qj_counts, counts) + n * sizeof(*v), true);
}

/* Calls: main, fib, leaf, returns, in thread TID; CPU, LEVEL for a VM. */
static void calls(struct seed *s, uint32_t pid, uint64_t base, int32_t cpu, int32_t level,
		  uint64_t lost)
{
	static const struct {
		uint64_t kind, addr, sp;
	} ev[] = {
		{1, MAIN, SP},
		{1, FIB, SP - 0x20},
		{1, LEAF, SP - 0x40},
		{2, FIB + 0x10, SP - 0x40},
		{1, FIB, SP - 0x40},
		{2, FIB + 0x20, SP - 0x40},
		{2, MAIN + 0x20, SP - 0x20},
	};
	struct qj_calls r = {hdr(s, QJ_EV_CALLS, pid), cpu, 0, lost, level, 0, {0}};

	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
		uint64_t w[3] = {s->ts + i, ev[i].kind << 62 | (base + ev[i].addr), ev[i].sp};

		memcpy(r.ev + r.n * QJ_CALL_EVENT_SIZE, w, sizeof(w));
		r.n++;
	}
	rec(s, &r, offsetof(struct qj_calls, ev) + r.n * QJ_CALL_EVENT_SIZE, true);
}

static void calls_lost(struct seed *s, uint32_t pid, uint64_t lost)
{
	struct qj_calls_lost r = {hdr(s, QJ_EV_CALLS_LOST, pid), lost};

	rec(s, &r, sizeof(r), false);
}

/* A vCPU stopped in leaf(), called by fib(), in the TB at HOST + 0x1100. */
static void sample(struct seed *s, uint32_t pid, uint64_t base, bool kernel)
{
	struct qj_sample r = {.hdr = hdr(s, QJ_EV_SAMPLE, pid),
			      .flags = QJ_SAMPLE_VCPU | (kernel ? QJ_SAMPLE_KERNEL : 0),
			      .machine = QJ_EM_X86_64,
			      .size = 8,
			      .period = 1000000,
			      .nkern = kernel,
			      .nuser = 2,
			      .nguest = 2,
			      .nwords = 2};

	r.gregs[QJ_PC] = base + LEAF + 1;
	r.gregs[QJ_SP] = SP - 0x48;
	r.gregs[QJ_FP] = SP - 0x30;
	r.kstack[0] = 0xffffffff81000000ull;
	r.ustack[0] = HOST + 0x1104;
	r.ustack[1] = HOST + 0x10;
	r.gstack[0] = base + FIB + 0x10;
	r.gstack[1] = base + MAIN + 0x20;
	r.words[0] = base + FIB + 0x10;
	r.words[1] = SP - 0x20;
	rec(s, &r, offsetof(struct qj_sample, words) + 16, true);
}

static void fork_(struct seed *s, uint32_t pid, uint32_t child)
{
	struct qj_fork r = {hdr(s, QJ_EV_FORK, pid), child, 0};

	rec(s, &r, sizeof(r), false);
}

static void tick(struct seed *s, uint64_t now)
{
	struct qj_hdr h = {TICK, 1, 0, 0, now};

	rec(s, &h, sizeof(h), false);
}

/* A linux-user QEMU attached to late: its handshake, then what it runs. */
static void handshake(struct seed *s, uint32_t pid, bool read)
{
	prologue(s, pid, read);
	guest_base(s, pid, 0);
	image(s, QJ_EV_IMAGE, pid, "/e/x86_64-dyn-g", BIAS, BIAS, BIAS + 0x4027);
	marker(s, pid);
	attach(s, pid);
}

static void save(const struct seed *s, const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(s->buf, 1, s->len, f) != s->len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	struct seed s;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	/* One QEMU, every writer: jitdump, uftrace, samples, perf map. */
	start(&s, OPT_JITDUMP | OPT_UFTRACE | OPT_PROFILE, MORE_PERFMAP);
	handshake(&s, 0, true);
	tbs(&s, 0, 1, BIAS, 1);
	calls(&s, 0, BIAS, -1, -1, 0);
	sample(&s, 0, BIAS, false);
	simple(&s, QJ_EV_FLUSH, 0);
	tbs(&s, 0, 2, BIAS, 1);
	sample(&s, 0, BIAS, false);
	calls_lost(&s, 0, 3);
	tick(&s, s.ts + 2000000000ull);
	save(&s, argv[1], "linux-user");

	/* A batch in parts, names per instruction, uftrace's filters. */
	start(&s, OPT_JITDUMP | OPT_UFTRACE | OPT_INSN | OPT_FILTER, MORE_PERFMAP);
	handshake(&s, 0, false);
	tbs(&s, 0, 7, BIAS, 3);
	calls(&s, 0, BIAS, -1, -1, 5);
	simple(&s, QJ_EV_FLUSH, 0);
	tbs(&s, 0, 8, BIAS, 2);
	save(&s, argv[1], "parts-filter");

	/* -t's filter; a dwarf sample, in the kernel. */
	start(&s, OPT_UFTRACE | OPT_FILTER | OPT_PROFILE, MORE_TIME | MORE_DWARF);
	handshake(&s, 0, false);
	tbs(&s, 0, 1, BIAS, 1);
	calls(&s, 0, BIAS, -1, -1, 0);
	sample(&s, 0, BIAS, true);
	save(&s, argv[1], "time-dwarf");

	/* A VM: the ELF file it loaded runs at its link addresses. */
	start(&s, OPT_SYSTEM | OPT_UFTRACE | OPT_PROFILE | OPT_JITDUMP, MORE_PERFMAP);
	prologue(&s, 0, true);
	image(&s, QJ_EV_LOADED_ELF, 0, "/e/x86_64-dyn-g", 0, 0, 0);
	marker(&s, 0);
	attach(&s, 0);
	tbs(&s, 0, 1, 0, 1);
	calls(&s, 0, 0, 0, 3, 0);
	calls(&s, 0, 0, 1, 0, 0);
	sample(&s, 0, 0, false);
	simple(&s, QJ_EV_FLUSH, 0);
	save(&s, argv[1], "system");

	/* Libraries the guest maps itself, past a guest_base. */
	start(&s, OPT_UFTRACE | OPT_JITDUMP, 0);
	prologue(&s, 0, false);
	guest_base(&s, 0, 0x10000);
	image(&s, QJ_EV_IMAGE, 0, "/e/x86_64-stripped", BIAS, BIAS, BIAS + 0x4027);
	image(&s, QJ_EV_MMAP, 0, "/e/x86_64-cpp-g", 0x7f0000001000ull, 0x7f0000003000ull, 0x1000);
	image(&s, QJ_EV_MMAP, 0, "/e/aarch64-dyn-g", 0x7f0000010000ull, 0x7f0000012000ull, 0);
	marker(&s, 0);
	attach(&s, 0);
	tbs(&s, 0, 1, BIAS, 1);
	tbs(&s, 0, 2, 0x7f0000000000ull, 1);
	calls(&s, 0, 0x7f0000000000ull, -1, -1, 0);
	save(&s, argv[1], "mmap");

	/* Counts: a snapshot, then final ones; counts before their TBs'
	 * reports; a flush. */
	start(&s, 0, MORE_COUNTS);
	handshake(&s, 0, false);
	with_slots = true;
	counts(&s, 0, QJ_COUNTS_STARTED, 0, 0, NULL, 0);
	tbs(&s, 0, 1, BIAS, 1);
	counts(&s, 0, QJ_COUNTS_SNAPSHOT, 1, 0, (const uint64_t[]){5, 2, 1}, 3);
	counts(&s, 0, QJ_COUNTS_ANSWERED, 0, 0, NULL, 0);
	counts(&s, 0, QJ_COUNTS_FINAL, 2, 3, (const uint64_t[]){4, 4, 4}, 3);
	tbs(&s, 0, 2, BIAS, 1);
	counts(&s, 0, QJ_COUNTS_FINAL, 1, 0, (const uint64_t[]){7, 3, 2, 1, 1, 1}, 6);
	simple(&s, QJ_EV_FLUSH, 0);
	counts(&s, 0, QJ_COUNTS_FINAL, 1, 9, (const uint64_t[]){1}, 1);
	with_slots = false;
	save(&s, argv[1], "counts");

	/* -a: this QEMU forks, its child execs, another starts, it exits. */
	start(&s, OPT_PROCS | OPT_JITDUMP | OPT_UFTRACE | OPT_PROFILE, 0);
	handshake(&s, 0, false);
	tbs(&s, 0, 1, BIAS, 1);
	calls(&s, 0, BIAS, -1, -1, 0);
	fork_(&s, 0, CHILD);
	calls(&s, CHILD, BIAS, -1, -1, 0);
	tbs(&s, CHILD, 2, BIAS, 1);
	simple(&s, QJ_EV_EXEC, CHILD);
	attach(&s, OTHER);
	tbs(&s, OTHER, 1, BIAS, 1);
	simple(&s, QJ_EV_EXIT, 0);
	tick(&s, s.ts);
	tick(&s, s.ts + 2000000000ull);
	save(&s, argv[1], "procs-all");

	/* A tree whose QEMU is this process; it execs at the end. */
	start(&s, OPT_PROCS | OPT_TREE | OPT_JITDUMP | OPT_UFTRACE | OPT_INSN, 0);
	handshake(&s, 0, false);
	tbs(&s, 0, 1, BIAS, 1);
	calls(&s, 0, BIAS, -1, -1, 0);
	calls_lost(&s, 0, 2);
	simple(&s, QJ_EV_FLUSH, 0);
	tick(&s, s.ts);
	simple(&s, QJ_EV_EXEC, 0);
	save(&s, argv[1], "procs-tree");
	return 0;
}
