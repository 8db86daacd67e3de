// SPDX-License-Identifier: GPL-2.0-or-later
#include "session.h"
#include "util.h"
#include <linux/types.h>

#include "qemu-jitbpf.h"
#include "profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

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
struct tb_record {
	uint64_t ts;
	uint64_t pc;
	uint64_t host;
	uint32_t size;
	uint16_t icount;
	uint16_t pad;
	uint32_t len;
	uint32_t pad2;
};

void session_init(struct session *s, struct target *t, bool perfmap_insn, bool jitdump,
		  struct uftrace *uft)
{
	memset(s, 0, sizeof(*s));
	s->target = t;
	s->perfmap_insn = perfmap_insn;
	s->want_jitdump = jitdump;
	s->page_bits = 12;
	guest_init(&s->guest, t ? t->pid : 0);
	if (jitdump)
		s->jd = jitdump_new(t->pid, t->uid, t->host_machine);
	s->uft = uft;
}

/*
 * Make sure the image of each call target is known by the time the uftrace
 * data is written: libraries the guest maps itself are found in QEMU's
 * /proc/PID/maps, which is gone once QEMU exits.  Each target once.
 */
static void see_target(struct session *s, uint64_t addr)
{
	uint64_t *recent = &s->recent[(addr >> 2) & 255];
	struct guest_loc loc;
	size_t i;

	if (*recent == (addr | 1))
		return;
	*recent = addr | 1;

	if (s->ntargets * 2 >= s->targets_cap) {
		size_t cap = s->targets_cap ? s->targets_cap * 2 : 4096;
		uint64_t *t = xcalloc(cap, sizeof(*t));

		for (i = 0; i < s->targets_cap; i++) {
			size_t k;

			if (!s->targets[i])
				continue;
			for (k = (s->targets[i] * 0x9e3779b97f4a7c15ull) & (cap - 1); t[k];
			     k = (k + 1) & (cap - 1))
				;
			t[k] = s->targets[i];
		}
		free(s->targets);
		s->targets = t;
		s->targets_cap = cap;
	}
	for (i = ((addr | 1) * 0x9e3779b97f4a7c15ull) & (s->targets_cap - 1); s->targets[i];
	     i = (i + 1) & (s->targets_cap - 1))
		if (s->targets[i] == (addr | 1))
			return;
	s->targets[i] = addr | 1;
	s->ntargets++;
	guest_lookup(&s->guest, addr, &loc);
}

/*
 * The uftrace task of a batch of calls: its thread; for a VM, one task per
 * vCPU and privilege level, as QEMU's uftrace plugin keeps them apart
 * (whichever threads run the vCPUs): 10 * (vCPU + 1) + level, the level
 * being the x86 CPL or the Arm EL.
 */
static uint32_t calls_task(const struct session *s, const struct qj_calls *r)
{
	if (!s->target->system || r->cpu < 0)
		return r->hdr.tid;
	return 10 * ((uint32_t)r->cpu + 1) + (r->level >= 0 && r->level <= 9 ? r->level : 0);
}

static void on_calls(struct session *s, const struct qj_calls *r)
{
	uint32_t n = r->n > QJ_CALLS_PER_REC ? QJ_CALLS_PER_REC : r->n;

	uftrace_events(s->uft, calls_task(s, r), r->ev, n, r->lost);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t a;

		memcpy(&a, r->ev + i * QJ_CALL_EVENT_SIZE + 8, sizeof(a));
		if (QJ_CALL_KIND(a) == 1)
			see_target(s, QJ_CALL_ADDR(a));
	}
}

static struct partial *get_partial(struct session *s, uint64_t batch)
{
	struct partial **pp, *p;
	size_t n = 0;

	for (pp = &s->partials; *pp; pp = &(*pp)->next, n++)
		if ((*pp)->batch == batch)
			return *pp;
	if (n >= MAX_PARTIALS) {
		/* The oldest, at the end, lost a part: drop it. */
		for (pp = &s->partials; (*pp)->next; pp = &(*pp)->next)
			;
		p = *pp;
		*pp = NULL;
		s->tbs_incomplete += p->count;
	} else if (s->free_partials) {
		p = s->free_partials;
		s->free_partials = p->next;
	} else {
		p = xmalloc(sizeof(*p));
	}
	p->batch = batch;
	p->got = 0;
	p->next = s->partials;
	s->partials = p;
	return p;
}

static void put_partial(struct session *s, struct partial *p)
{
	struct partial **pp;

	for (pp = &s->partials; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	p->next = s->free_partials;
	s->free_partials = p;
}

/* Per-insn state of the TB being processed. */
static uint64_t gpc[QJ_TB_MAX_INSNS];
static uint32_t ins_start[QJ_TB_MAX_INSNS + 1];
static struct guest_loc locs[QJ_TB_MAX_INSNS];
static struct jd_line lines[QJ_TB_MAX_INSNS];

static const char *run_name(const struct guest_loc *loc, uint64_t pc)
{
	return loc->name ? loc->name : internf("guest-0x%" PRIx64, pc);
}

static void emit_jitdump(struct session *s, const struct tb_record *tb, uint32_t tid,
			 const uint8_t *code, uint32_t first, uint32_t last, const char *name)
{
	uint32_t from = ins_start[first], to = ins_start[last + 1];
	size_t nl = 0;

	for (uint32_t i = first; i <= last; i++) {
		const char *file;
		int line;

		if (!locs[i].img || !locs[i].img->elf ||
		    !elf_file_line(locs[i].img->elf, locs[i].link, &file, &line))
			continue;
		lines[nl++] = (struct jd_line){tb->host + ins_start[i], line, file};
	}
	jitdump_load(s->jd, tb->ts, tid, tb->host + from, code + from, to - from, name, lines, nl);
}

/* One TB: name each run of instructions of one guest function. */
static void process_tb(struct session *s, const struct tb_record *tb, uint32_t tid,
		       const uint64_t *pcs, const uint16_t *end_off, const uint8_t *code)
{
	uint32_t n = tb->icount, page = 1u << s->page_bits;
	bool pcrel;

	s->tbs++;
	if (s->flush_pending) {
		codemap_flush(&s->code);
		codemap_flush(&s->insns);
		s->flush_pending = false;
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
	for (uint32_t i = 0; i < n; i++)
		guest_lookup(&s->guest, gpc[i], &locs[i]);
	if (s->smp)
		for (uint32_t i = 0; i < n; i++)
			codemap_add_insn(&s->insns, tb->host + ins_start[i],
					 ins_start[i + 1] - ins_start[i], NULL, gpc[i], i == n - 1);

	if (s->perfmap_insn) {
		for (uint32_t i = 0; i < n; i++) {
			const char *name = locs[i].name ? internf("%s+0x%" PRIx64, locs[i].name,
								  gpc[i] - locs[i].sym_start)
							: internf("guest-0x%" PRIx64, gpc[i]);

			codemap_add(&s->code, tb->host + ins_start[i],
				    ins_start[i + 1] - ins_start[i], name);
		}
	}
	/* Runs of instructions of one function. */
	for (uint32_t first = 0, i = 1; i <= n; i++) {
		const char *name;

		if (i < n && locs[i].name == locs[first].name &&
		    (locs[i].name || locs[i].img == locs[first].img))
			continue;
		name = run_name(&locs[first], gpc[first]);
		if (!s->perfmap_insn)
			codemap_add(&s->code, tb->host + ins_start[first],
				    ins_start[i] - ins_start[first], name);
		if (s->jd)
			emit_jitdump(s, tb, tid, code, first, i - 1, name);
		first = i;
	}
}

/* A complete batch: a sequence of records (struct tb_record + tables + code). */
static void process_batch(struct session *s, const uint8_t *data, uint32_t total, uint32_t tid)
{
	uint32_t off = 0;

	while (off + sizeof(struct tb_record) <= total) {
		struct tb_record tb;
		uint32_t n, offs;

		memcpy(&tb, data + off, sizeof(tb));
		n = tb.icount;
		offs = (n * 2 + 7) & ~7u;
		if (!n || n > QJ_TB_MAX_INSNS || tb.size > QJ_TB_MAX_CODE || tb.len % 8 ||
		    tb.len != sizeof(tb) + n * 8 + offs + ((tb.size + 7) & ~7u) ||
		    tb.len > total - off) {
			pr_warn("malformed TB report in a batch from QEMU");
			s->tbs_incomplete++;
			return;
		}
		/* The record is 8-byte aligned in the batch, and so are its parts. */
		process_tb(s, &tb, tid, (const uint64_t *)(data + off + sizeof(tb)),
			   (const uint16_t *)(data + off + sizeof(tb) + n * 8),
			   data + off + sizeof(tb) + n * 8 + offs);
		off += tb.len;
	}
}

static void on_tbs(struct session *s, const struct qj_tbs *r)
{
	struct partial *p;

	if (!s->layout_known) {
		/* Before the prologue (and page size) was reported. */
		s->tbs_early += r->count;
		return;
	}
	if (r->total > QJ_TBS_MAX_BATCH || r->len > QJ_TBS_CHUNK || r->off + r->len > r->total)
		return;
	if (r->off == 0 && r->len == r->total) {
		/* A batch in one part: no copy. */
		process_batch(s, r->data, r->total, r->hdr.tid);
		return;
	}
	p = get_partial(s, r->batch);
	p->total = r->total;
	p->count = r->count;
	memcpy(p->data + r->off, r->data, r->len);
	p->got += r->len;
	if (p->got == p->total) {
		process_batch(s, p->data, p->total, r->hdr.tid);
		put_partial(s, p);
	}
}

static void on_prologue(struct session *s, const struct qj_prologue *r)
{
	s->page_bits = r->page_bits > 0 && r->page_bits < 31 ? r->page_bits : 12;
	s->layout_known = true;
	codemap_set_prologue(&s->code, r->host, r->size);
	if (s->jd && r->size && r->size <= QJ_TB_MAX_CODE) {
		/* The prologue never changes: read it from QEMU now. */
		uint8_t *buf = xmalloc(r->size);
		struct iovec local = {buf, r->size}, remote = {(void *)r->host, r->size};

		if (!s->prologue_loaded && process_vm_readv(s->target->pid, &local, 1, &remote, 1,
							    0) == (ssize_t)r->size) {
			s->prologue_loaded = true;
			jitdump_load(s->jd, r->hdr.ts, r->hdr.tid, r->host, buf, r->size,
				     "qemu-tcg-prologue", NULL, 0);
		}
		free(buf);
	}
}

static void on_marker(struct session *s, const struct qj_marker *r)
{
	if (!s->jd || jitdump_is_open(s->jd))
		return;
	if (!r->path[0] || jitdump_open(s->jd, r->path, r->addr))
		return;
	free(s->marker_path);
	s->marker_path = xstrdup(r->path);
	pr_dbg("jitdump: %s", r->path);
}

/* An ELF image QEMU reports: linux-user's, at its bias, or one a VM loaded. */
static void on_image(struct session *s, const struct qj_image *r)
{
	char path[QJ_PATH_MAX + 1];

	memcpy(path, r->path, QJ_PATH_MAX);
	path[QJ_PATH_MAX] = 0;
	if (r->hdr.type == QJ_EV_LOADED_ELF) {
		guest_add_loaded(&s->guest, path);
		return;
	}
	if (!s->exe_path && path[0] == '/')
		s->exe_path = xstrdup(path);
	guest_add_image(&s->guest, path, r->bias, r->start, r->end + 1, false);
}

int session_event(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const struct qj_hdr *h = data;

	if (size < sizeof(*h))
		return 0;
	switch (h->type) {
	case QJ_EV_TBS:
		if (size >= sizeof(struct qj_tbs))
			on_tbs(s, data);
		break;
	case QJ_EV_PROLOGUE:
		if (size >= sizeof(struct qj_prologue))
			on_prologue(s, data);
		break;
	case QJ_EV_FLUSH:
		if (s->smp)
			samples_flush(s);
		s->flushes++;
		/* QEMU also flushes right before it exits: keep the last
		 * generation of code unless new code replaces it. */
		s->flush_pending = true;
		break;
	case QJ_EV_ATTACH:
		if (size >= sizeof(struct qj_attach))
			handshake_event(&s->hs, ((const struct qj_attach *)data)->poll_ns);
		break;
	case QJ_EV_MARKER:
		if (size >= sizeof(struct qj_marker))
			on_marker(s, data);
		break;
	case QJ_EV_IMAGE:
	case QJ_EV_LOADED_ELF:
		if (size >= sizeof(struct qj_image))
			on_image(s, data);
		break;
	case QJ_EV_CALLS:
		if (s->uft && size >= sizeof(struct qj_calls))
			on_calls(s, data);
		break;
	case QJ_EV_SAMPLE:
		if (s->smp)
			samples_add(s, data, size);
		break;
	case QJ_EV_GUEST_BASE:
		if (size >= sizeof(struct qj_guest_base))
			guest_set_base(&s->guest, ((const struct qj_guest_base *)data)->base);
		break;
	}
	return 0;
}

void session_fork(struct session *child, const struct session *parent)
{
	for (size_t i = 0; i < parent->guest.nimgs; i++) {
		const struct guest_image *img = &parent->guest.imgs[i];

		guest_add_image(&child->guest, img->path, img->bias, img->start, img->end,
				img->user);
	}
	if (parent->guest.base_known)
		guest_set_base(&child->guest, parent->guest.base);
	codemap_copy(&child->code, &parent->code);
	codemap_copy(&child->insns, &parent->insns);
	if (parent->exe_path && !child->exe_path)
		child->exe_path = xstrdup(parent->exe_path);
	child->page_bits = parent->page_bits;
	child->layout_known = parent->layout_known;
	child->flush_pending = parent->flush_pending;
	child->hs.answered = parent->hs.answered;
}

int session_check_handshake(struct session *s, bool need_prologue)
{
	const char *missing = NULL;

	if (need_prologue && !s->layout_known)
		missing = "the prologue";
	else if (!s->guest.nimgs && !s->target->system)
		missing = "the guest's images";
	else if (s->want_jitdump && !s->marker_path)
		missing = "a jitdump marker";
	if (!missing)
		return 0;
	pr_err("QEMU (pid %d) answered without %s; files would be nameless or incomplete",
	       s->target->pid, missing);
	return -EPROTO;
}

void session_free(struct session *s)
{
	struct partial *p;

	while ((p = s->partials)) {
		s->partials = p->next;
		free(p);
	}
	while ((p = s->free_partials)) {
		s->free_partials = p->next;
		free(p);
	}
	if (s->smp) {
		samples_free(s->smp);
		free(s->smp);
	}
	guest_free(&s->guest);
	codemap_free(&s->code);
	codemap_free(&s->insns);
	free(s->marker_path);
	free(s->targets);
	free(s->exe_path);
}
