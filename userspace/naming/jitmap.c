// SPDX-License-Identifier: GPL-2.0-or-later
#include "naming/jitmap.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A batch of TB reports whose parts are still arriving. */
struct partial {
	uint64_t batch;
	uint32_t got;	/* bytes received */
	uint32_t total; /* bytes in the batch */
	uint32_t count; /* TB records in the batch */
	struct partial *next;
	uint8_t data[QJ_TBS_MAX_BATCH];
};

/* Batches whose last part never came (ring buffer full) are dropped when
 * this many newer ones are pending. */
#define MAX_PARTIALS 64

/* QEMU's JitTbRecord (accel/tcg/jit-tbs.h). */
#define TB_CACHED 1 /* in the code cache at a handshake: no host code */
struct tb_record {
	uint64_t ts;
	uint64_t pc;
	uint64_t host;
	uint32_t size;
	uint16_t icount;
	uint16_t flags; /* TB_CACHED */
	uint32_t len;
	uint32_t slot; /* 1 + its execution counter's slot, or 0 */
};

void jitmap_init(struct jitmap *m, pid_t pid, bool perfmap_insn, bool keep_insns)
{
	memset(m, 0, sizeof(*m));
	m->perfmap_insn = perfmap_insn;
	m->keep_insns = keep_insns;
	m->page_bits = 12;
	guest_init(&m->guest, pid);
}

static struct partial *get_partial(struct jitmap *m, uint64_t batch)
{
	struct partial **pp, *p;
	size_t n = 0;

	for (pp = &m->partials; *pp; pp = &(*pp)->next, n++)
		if ((*pp)->batch == batch)
			return *pp;
	if (n >= MAX_PARTIALS) {
		/* The oldest, at the end, lost a part: drop it. */
		for (pp = &m->partials; (*pp)->next; pp = &(*pp)->next)
			;
		p = *pp;
		*pp = NULL;
		m->tbs_incomplete += p->count;
	} else if (m->free_partials) {
		p = m->free_partials;
		m->free_partials = p->next;
	} else {
		p = xmalloc(sizeof(*p));
	}
	p->batch = batch;
	p->got = 0;
	p->next = m->partials;
	m->partials = p;
	return p;
}

static void put_partial(struct jitmap *m, struct partial *p)
{
	struct partial **pp;

	for (pp = &m->partials; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	p->next = m->free_partials;
	m->free_partials = p;
}

/* Per-insn state of the TB being processed. */
static uint64_t gpc[QJ_TB_MAX_INSNS];
static uint32_t ins_start[QJ_TB_MAX_INSNS + 1];
static struct guest_loc locs[QJ_TB_MAX_INSNS];

/*
 * The perf map's range for the code at HOST of LOC's pc PC: named by its
 * function; else FILE+0xADDR, made only when the map is written.
 */
static void add_named(struct jitmap *m, uint64_t host, uint64_t size, const struct guest_loc *loc,
		      uint64_t pc)
{
	if (!loc->name && loc->img && loc->img->path)
		codemap_add_off(&m->code, host, size, loc->img->base, loc->link);
	else
		codemap_add(&m->code, host, size, guest_loc_name(&m->guest, loc, pc));
}

/* One TB: name each run of instructions of one guest function. */
static void process_tb(struct jitmap *m, const struct tb_record *tb, uint32_t tid,
		       const uint64_t *pcs, const uint16_t *end_off, const uint8_t *code,
		       jit_run_fn fn, void *ctx)
{
	uint32_t n = tb->icount, page = 1u << m->page_bits;
	bool pcrel;

	m->tbs++;
	if (m->count_again && !(tb->flags & TB_CACHED)) {
		if (!u64bits_add(&m->again, tb->pc))
			m->tbs_again_other++;
		else if (u64bits_has(&m->again_old, tb->pc))
			m->tbs_again_flush++;
	}
	if (tb->ts < m->answered_ns)
		m->tbs_held++;
	if (tb->host + tb->size > m->host_hi)
		m->host_hi = tb->host + tb->size;
	if (m->flush_pending) {
		codemap_flush(&m->code);
		codemap_flush(&m->insns);
		m->flush_pending = false;
	}
	/* Guest pc and host range of each instruction. */
	ins_start[0] = 0;
	for (uint32_t i = 0; i < n; i++) {
		gpc[i] = pcs[i];
		ins_start[i + 1] = end_off[i] > tb->size ? tb->size : end_off[i];
		if (ins_start[i + 1] < ins_start[i])
			ins_start[i + 1] = ins_start[i];
	}
	ins_start[n] = tb->size; /* slow paths and pool go with the last insn */
	/* Under CF_PCREL word 0 is the offset in the page (probes.md). */
	pcrel = gpc[0] != tb->pc && gpc[0] == (tb->pc & (page - 1));
	if (pcrel) {
		uint64_t base = tb->pc & ~(uint64_t)(page - 1);

		for (uint32_t i = 0; i < n; i++) {
			if (i && gpc[i] < (gpc[i - 1] & (page - 1)))
				base += page;
			gpc[i] = base + gpc[i];
		}
	}
	guest_lookup(&m->guest, gpc[0], &locs[0]);
	for (uint32_t i = 1; i < n; i++)
		guest_lookup_next(&m->guest, gpc[i], &locs[i - 1], &locs[i]);
	if (m->keep_insns)
		for (uint32_t i = 0; i < n; i++)
			codemap_add_insn(&m->insns, tb->host + ins_start[i],
					 ins_start[i + 1] - ins_start[i], NULL, gpc[i], i == n - 1);

	if (m->perfmap_insn) {
		for (uint32_t i = 0; i < n; i++) {
			uint64_t host = tb->host + ins_start[i],
				 size = ins_start[i + 1] - ins_start[i];

			if (locs[i].name)
				codemap_add_off(&m->code, host, size, locs[i].name,
						gpc[i] - locs[i].sym_start);
			else
				add_named(m, host, size, &locs[i], gpc[i]);
		}
	}
	/* Runs of instructions of one function. */
	for (uint32_t first = 0, i = 1; i <= n; i++) {
		uint32_t from = ins_start[first], to = ins_start[i];
		char buf[NAME_OFF_MAX];

		if (i < n && locs[i].name == locs[first].name &&
		    (locs[i].name || locs[i].img == locs[first].img))
			continue;
		if (!m->perfmap_insn)
			add_named(m, tb->host + from, to - from, &locs[first], gpc[first]);
		if (fn) {
			struct jit_run run = {
				.ts = tb->ts,
				.tid = tid,
				.host = tb->host + from,
				.code = code ? code + from : NULL,
				.size = to - from,
				.name = guest_loc_text(&locs[first], gpc[first], buf),
				.n = i - first,
				.insn_off = &ins_start[first],
				.locs = &locs[first],
				.slot = tb->slot,
				.tb_pc = gpc[0],
				.tb_icount = n,
				.first = first == 0,
			};

			fn(ctx, &run);
		}
		first = i;
	}
}

/* A complete batch: a sequence of records (struct tb_record + tables + code). */
static void process_batch(struct jitmap *m, const uint8_t *data, uint32_t total, uint32_t tid,
			  jit_run_fn fn, void *ctx)
{
	uint32_t off = 0;

	while (off + sizeof(struct tb_record) <= total) {
		struct tb_record tb;
		uint32_t n, offs, code;

		memcpy(&tb, data + off, sizeof(tb));
		n = tb.icount;
		offs = (n * 2 + 7) & ~7u;
		code = tb.flags & TB_CACHED ? 0 : (tb.size + 7) & ~7u;
		if (!n || n > QJ_TB_MAX_INSNS || tb.size > QJ_TB_MAX_CODE || tb.len % 8 ||
		    (tb.flags & ~TB_CACHED) || tb.len != sizeof(tb) + n * 8 + offs + code ||
		    tb.len > total - off) {
			pr_warn("malformed TB report in a batch from QEMU");
			m->tbs_incomplete++;
			return;
		}
		if (tb.flags & TB_CACHED)
			m->tbs_cached++;
		/* The record is 8-byte aligned in the batch, and so are its parts. */
		process_tb(m, &tb, tid, (const uint64_t *)(data + off + sizeof(tb)),
			   (const uint16_t *)(data + off + sizeof(tb) + n * 8),
			   tb.flags & TB_CACHED ? NULL : data + off + sizeof(tb) + n * 8 + offs, fn,
			   ctx);
		off += tb.len;
	}
}

void jitmap_tbs(struct jitmap *m, const struct qj_tbs *r, jit_run_fn fn, void *ctx)
{
	struct partial *p;

	if (!m->layout_known) {
		/* Before the prologue (and page size) was reported. */
		m->tbs_early += r->count;
		return;
	}
	/* In 64 bits: an off near 2^32 would wrap past the check. */
	if (r->total > QJ_TBS_MAX_BATCH || r->len > QJ_TBS_CHUNK ||
	    (uint64_t)r->off + r->len > r->total)
		return;
	if (r->off == 0 && r->len == r->total) {
		/* A batch in one part: no copy. */
		process_batch(m, r->data, r->total, r->hdr.tid, fn, ctx);
		return;
	}
	p = get_partial(m, r->batch);
	if (!r->len && r->total) {
		/* A part BPF could not read: the batch is lost (and counted
		 * there). */
		put_partial(m, p);
		return;
	}
	p->total = r->total;
	p->count = r->count;
	memcpy(p->data + r->off, r->data, r->len);
	p->got += r->len;
	if (p->got == p->total) {
		process_batch(m, p->data, p->total, r->hdr.tid, fn, ctx);
		put_partial(m, p);
	}
}

void jitmap_block(struct jitmap *m, const struct qj_block *r, jit_run_fn fn, void *ctx)
{
	struct tb_record tb = {
		.ts = r->hdr.ts,
		.pc = r->pc,
		.host = r->host,
		.size = r->size,
		.icount = 1,
		.flags = TB_CACHED,
	};
	uint16_t end = r->size > UINT16_MAX ? UINT16_MAX : r->size;
	uint64_t pc = r->pc;

	if (!r->size || r->size > QJ_TB_MAX_CODE)
		return;
	process_tb(m, &tb, r->hdr.tid, &pc, &end, NULL, fn, ctx);
}

void jitmap_prologue(struct jitmap *m, const struct qj_prologue *r)
{
	m->page_bits = r->page_bits > 0 && r->page_bits < 31 ? r->page_bits : 12;
	m->layout_known = true;
	codemap_set_prologue(&m->code, r->host, r->size);
}

void jitmap_flush(struct jitmap *m)
{
	m->flushes++;
	if (m->count_again)
		u64bits_move_into(&m->again_old, &m->again);
	/* QEMU also flushes right before it exits: keep the last
	 * generation of code unless new code replaces it. */
	m->flush_pending = true;
}

void jitmap_image(struct jitmap *m, const struct qj_image *r)
{
	char path[QJ_PATH_MAX + 1];

	memcpy(path, r->path, QJ_PATH_MAX);
	path[QJ_PATH_MAX] = 0;
	if (r->hdr.type == QJ_EV_LOADED_ELF) {
		guest_add_loaded(&m->guest, path);
		return;
	}
	if (r->hdr.type == QJ_EV_MMAP) {
		guest_add_mmap(&m->guest, path, r->start, r->end, r->bias);
		return;
	}
	if (!m->exe_path && path[0] == '/')
		m->exe_path = xstrdup(path);
	guest_add_image(&m->guest, path, r->bias, r->start, r->end + 1, false);
}

void jitmap_fork(struct jitmap *child, const struct jitmap *parent)
{
	guest_copy(&child->guest, &parent->guest);
	codemap_copy(&child->code, &parent->code);
	codemap_copy(&child->insns, &parent->insns);
	if (parent->exe_path && !child->exe_path)
		child->exe_path = xstrdup(parent->exe_path);
	child->page_bits = parent->page_bits;
	child->host_hi = parent->host_hi;
	child->layout_known = parent->layout_known;
	child->flush_pending = parent->flush_pending;
	child->count_again = parent->count_again;
	if (parent->count_again) {
		u64bits_copy(&child->again, &parent->again);
		u64bits_copy(&child->again_old, &parent->again_old);
	}
}

void jitmap_free(struct jitmap *m)
{
	struct partial *p;

	while ((p = m->partials)) {
		m->partials = p->next;
		free(p);
	}
	while ((p = m->free_partials)) {
		m->free_partials = p->next;
		free(p);
	}
	guest_free(&m->guest);
	codemap_free(&m->code);
	codemap_free(&m->insns);
	u64bits_free(&m->again);
	u64bits_free(&m->again_old);
	free(m->exe_path);
}
