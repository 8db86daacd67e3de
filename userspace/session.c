// SPDX-License-Identifier: GPL-2.0-or-later
#include "session.h"
#include "util.h"
#include <linux/types.h>

#include "qemu-jitbpf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

struct partial {
	uint64_t seq;
	uint32_t insns;	   /* continuation instructions received */
	uint32_t code_len; /* code bytes received */
	uint16_t end_off[QJ_TB_MAX_INSNS];
	uint8_t data[QJ_TB_MAX_INSNS * QJ_INSN_STRIDE_MAX];
	uint8_t code[QJ_TB_MAX_CODE];
	struct partial *next;
};

/* Partials kept for TB records that never came (ring buffer full). */
#define MAX_PARTIALS 256

void session_init(struct session *s, struct target *t, bool perfmap_insn, bool jitdump,
		  struct uftrace *uft)
{
	memset(s, 0, sizeof(*s));
	s->target = t;
	s->perfmap_insn = perfmap_insn;
	s->want_jitdump = jitdump;
	s->word_size = 8;
	s->page_bits = 12;
	guest_init(&s->guest, t ? t->pid : 0);
	if (jitdump)
		s->jd = jitdump_new(t->pid, t->host_machine);
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

static void on_calls(struct session *s, const struct qj_calls *r)
{
	uint32_t n = r->n > QJ_CALLS_PER_REC ? QJ_CALLS_PER_REC : r->n;

	uftrace_events(s->uft, r->hdr.tid, r->ev, n, r->lost);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t a;

		memcpy(&a, r->ev + i * QJ_CALL_EVENT_SIZE + 8, sizeof(a));
		if (a >> 62 == 1)
			see_target(s, a & ~(3ull << 62));
	}
}

static struct partial *get_partial(struct session *s, uint64_t seq, bool create)
{
	struct partial **pp, *p;
	size_t n = 0;

	for (pp = &s->partials; *pp; pp = &(*pp)->next, n++)
		if ((*pp)->seq == seq)
			return *pp;
	if (!create)
		return NULL;
	if (n >= MAX_PARTIALS) {
		/* The oldest, at the end, lost its TB record: reuse it. */
		for (pp = &s->partials; (*pp)->next; pp = &(*pp)->next)
			;
		p = *pp;
		*pp = NULL;
		s->tbs_incomplete++;
	} else if (s->free_partials) {
		p = s->free_partials;
		s->free_partials = p->next;
	} else {
		p = xmalloc(sizeof(*p));
	}
	p->seq = seq;
	p->insns = 0;
	p->code_len = 0;
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

static void on_insns(struct session *s, const struct qj_tb_insns *r)
{
	struct partial *p = get_partial(s, r->seq, true);
	uint32_t n = r->n > QJ_INSNS_PER_REC ? QJ_INSNS_PER_REC : r->n;

	if (r->first + n > QJ_TB_MAX_INSNS)
		return;
	memcpy(&p->end_off[r->first], r->end_off, n * sizeof(r->end_off[0]));
	memcpy(&p->data[(size_t)r->first * QJ_INSN_STRIDE_MAX], r->insn_data, sizeof(r->insn_data));
	p->insns += n;
}

static void on_code(struct session *s, const struct qj_code *r)
{
	struct partial *p = get_partial(s, r->seq, true);

	if (r->len > QJ_CODE_CHUNK || r->off + r->len > QJ_TB_MAX_CODE)
		return;
	memcpy(&p->code[r->off], r->bytes, r->len);
	p->code_len += r->len;
}

static uint64_t word0(const uint8_t *p, uint32_t size)
{
	uint64_t v = 0;

	if (size == 4) {
		uint32_t w;

		memcpy(&w, p, 4);
		v = w;
	} else {
		memcpy(&v, p, 8);
	}
	return v;
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

static void emit_jitdump(struct session *s, const struct qj_tb *tb, const uint8_t *code,
			 uint32_t first, uint32_t last, const char *name)
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
	jitdump_load(s->jd, tb->hdr.ts, tb->hdr.tid, tb->host + from, code + from, to - from, name,
		     lines, nl);
}

static void on_tb(struct session *s, const struct qj_tb *tb)
{
	struct partial *p = NULL;
	uint32_t n = tb->icount, page = 1u << s->page_bits;
	const uint8_t *code = NULL;
	bool pcrel;

	if (tb->insn_recs || tb->code_recs)
		p = get_partial(s, tb->seq, false);
	if (!tb->stride || !s->layout_known) {
		/* Translated before the handshake: the flush makes QEMU
		 * translate it again if it still runs. */
		s->tbs_early++;
		goto out;
	}
	if (!n || n > QJ_TB_MAX_INSNS || tb->stride > QJ_INSN_STRIDE_MAX || tb->lost ||
	    (n > QJ_INSNS_PER_REC && (!p || p->insns != n - QJ_INSNS_PER_REC))) {
		s->tbs_incomplete++;
		goto out;
	}
	s->tbs++;
	if (s->flush_pending) {
		codemap_flush(&s->code);
		s->flush_pending = false;
	}
	if (s->jd && p && p->code_len == tb->size)
		code = p->code;

	/* Guest pc and host range of each instruction. */
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *d = i < QJ_INSNS_PER_REC ? &tb->insn_data[i * tb->stride]
							: &p->data[(size_t)i * QJ_INSN_STRIDE_MAX];
		uint16_t end = i < QJ_INSNS_PER_REC ? tb->end_off[i] : p->end_off[i];

		gpc[i] = word0(d, s->word_size);
		ins_start[i + 1] = end > tb->size ? tb->size : end;
	}
	ins_start[0] = 0;
	ins_start[n] = tb->size; /* slow paths and pool go with the last insn */
	for (uint32_t i = 1; i <= n; i++)
		if (ins_start[i] < ins_start[i - 1])
			ins_start[i] = ins_start[i - 1];
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
		if (code)
			emit_jitdump(s, tb, code, first, i - 1, name);
		first = i;
	}
	if (s->jd && !code)
		s->tbs_incomplete++;
out:
	if (p)
		put_partial(s, p);
}

static void on_prologue(struct session *s, const struct qj_prologue *r)
{
	s->word_size = r->word_size == 4 ? 4 : 8;
	s->page_bits = r->page_bits > 0 && r->page_bits < 31 ? r->page_bits : 12;
	s->layout_known = true;
	codemap_set_prologue(&s->code, r->host, r->size);
	if (s->jd && r->size && r->size <= QJ_TB_MAX_CODE) {
		/* The prologue never changes: read it from QEMU now. */
		uint8_t *buf = xmalloc(r->size);
		struct iovec local = {buf, r->size}, remote = {(void *)r->host, r->size};

		if (process_vm_readv(s->target->pid, &local, 1, &remote, 1, 0) ==
			    (ssize_t)r->size &&
		    !s->handshakes)
			jitdump_load(s->jd, r->hdr.ts, r->hdr.tid, r->host, buf, r->size,
				     "qemu-tcg-prologue", NULL, 0);
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

int session_event(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const struct qj_hdr *h = data;

	if (size < sizeof(*h))
		return 0;
	switch (h->type) {
	case QJ_EV_TB:
		if (size >= sizeof(struct qj_tb))
			on_tb(s, data);
		break;
	case QJ_EV_TB_INSNS:
		if (size >= sizeof(struct qj_tb_insns))
			on_insns(s, data);
		break;
	case QJ_EV_CODE:
		if (size >= sizeof(struct qj_code))
			on_code(s, data);
		break;
	case QJ_EV_PROLOGUE:
		if (size >= sizeof(struct qj_prologue))
			on_prologue(s, data);
		break;
	case QJ_EV_FLUSH:
		s->flushes++;
		/* QEMU also flushes right before it exits: keep the last
		 * generation of code unless new code replaces it. */
		s->flush_pending = true;
		break;
	case QJ_EV_ATTACH:
		s->handshakes++;
		break;
	case QJ_EV_MARKER:
		if (size >= sizeof(struct qj_marker))
			on_marker(s, data);
		break;
	case QJ_EV_IMAGE:
		if (size >= sizeof(struct qj_image)) {
			const struct qj_image *r = data;
			char path[QJ_PATH_MAX + 1];

			memcpy(path, r->path, QJ_PATH_MAX);
			path[QJ_PATH_MAX] = 0;
			if (!s->exe_path && path[0] == '/')
				s->exe_path = xstrdup(path);
			guest_add_image(&s->guest, path, r->bias, r->start, r->end + 1, false);
		}
		break;
	case QJ_EV_CALLS:
		if (s->uft && size >= sizeof(struct qj_calls))
			on_calls(s, data);
		break;
	case QJ_EV_GUEST_BASE:
		if (size >= sizeof(struct qj_guest_base))
			guest_set_base(&s->guest, ((const struct qj_guest_base *)data)->base);
		break;
	}
	return 0;
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
	guest_free(&s->guest);
	codemap_free(&s->code);
	free(s->marker_path);
	free(s->targets);
	free(s->exe_path);
}
