// SPDX-License-Identifier: GPL-2.0-or-later
#include "coverage/counts.h"
#include "coverage/coverage.h"
#include "naming/guest.h"
#include "naming/jitmap.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qemu-jitbpf.h"

/* N more executions of SLOT's TB. */
static void ran(struct tb_counts *t, struct coverage *c, uint32_t slot, uint64_t n)
{
	const struct slot_tb *tb = slot < t->nslots ? &t->slots[slot] : NULL;

	if (!n)
		return;
	if (!tb || !tb->reported) {
		*u64map_at(&t->pending, slot) += n;
		return;
	}
	for (uint32_t i = 0; i < tb->n; i++)
		coverage_count(c, t->refs[tb->first + i].elf, t->refs[tb->first + i].link, n);
	if (tb->hot && c->hot[tb->hot - 1].pid != t->pid) {
		/* A TB a forked child inherited: a row of its own. */
		struct cov_hot h = c->hot[tb->hot - 1];
		uint64_t *row = u64map_at(&t->rows, h.pc);

		if (!*row) {
			h.pid = t->pid;
			h.ecount = 0;
			grow(&c->hot, &c->hot_cap, c->nhot + 1, sizeof(*c->hot));
			c->hot[c->nhot++] = h;
			*row = c->nhot;
		}
		t->slots[slot].hot = *row;
	}
	if (tb->hot)
		c->hot[tb->hot - 1].ecount += n;
}

void tb_counts_fork(struct tb_counts *child, const struct tb_counts *parent)
{
	child->started = parent->started;
	if (!parent->nslots)
		return;
	child->slots = xmalloc(parent->nslots * sizeof(*child->slots));
	memcpy(child->slots, parent->slots, parent->nslots * sizeof(*child->slots));
	child->nslots = parent->nslots;
	if (!parent->nrefs)
		return;
	child->refs = xmalloc(parent->nrefs * sizeof(*child->refs));
	memcpy(child->refs, parent->refs, parent->nrefs * sizeof(*child->refs));
	child->nrefs = child->refs_cap = parent->nrefs;
}

void tb_counts_run(struct tb_counts *t, struct coverage *c, const struct jit_run *run)
{
	uint32_t slot = run->slot;
	struct slot_tb *tb;

	t->ran = true;
	/* (QEMU has no more: a larger one is not a slot of ours.) */
	if (!slot || slot > QJ_COUNTS_SLOTS)
		return;
	if (slot >= t->nslots) {
		size_t n = t->nslots ? t->nslots : 1024;

		while (n <= slot)
			n *= 2;
		t->slots = xrealloc(t->slots, n * sizeof(*t->slots));
		memset(t->slots + t->nslots, 0, (n - t->nslots) * sizeof(*t->slots));
		t->nslots = n;
	}
	tb = &t->slots[slot];
	if (run->first || slot != t->cur_slot) {
		uint64_t *row;

		/* A new TB in this slot (used again after a flush): counts that
		 * waited for its report are its own, the earlier TB's went with
		 * the flush. */
		t->cur_slot = slot;
		t->cur_pending = u64map_take(&t->pending, slot);
		tb->first = (uint32_t)t->nrefs;
		tb->n = 0;
		tb->hot = 0;
		tb->reported = true;
		if (c->hot_wanted) {
			row = u64map_at(&t->rows, run->tb_pc);
			if (!*row)
				*row = 1 + coverage_hot(c, t->pid, run->tb_pc, run->tb_icount,
							run->locs);
			else
				c->hot[*row - 1].tcount++;
			tb->hot = *row;
			if (t->cur_pending)
				c->hot[*row - 1].ecount += t->cur_pending;
		}
	}
	grow(&t->refs, &t->refs_cap, t->nrefs + run->n, sizeof(*t->refs));
	for (uint32_t i = 0; i < run->n; i++) {
		const struct guest_loc *loc = &run->locs[i];

		if (!loc->img || !loc->img->elf)
			continue;
		t->refs[t->nrefs++] = (struct insn_ref){loc->img->elf, loc->link};
		tb->n++;
		if (t->cur_pending)
			coverage_count(c, loc->img->elf, loc->link, t->cur_pending);
	}
}

void tb_counts_event(struct tb_counts *t, struct coverage *c, const struct qj_counts *r)
{
	uint32_t n = r->n > QJ_COUNTS_PER_REC ? QJ_COUNTS_PER_REC : r->n;

	t->sync = r->sync;
	if (r->missed > c->uncounted)
		c->uncounted = r->missed;
	switch (r->kind) {
	case QJ_COUNTS_STARTED:
		if (!t->started)
			pr_dbg("pid %d: QEMU counts its blocks", t->pid);
		t->started = true;
		return;
	case QJ_COUNTS_ANSWERED:
		if (r->seq > t->answered)
			t->answered = r->seq;
		return;
	case QJ_COUNTS_SNAPSHOT:
	case QJ_COUNTS_FINAL:
		break;
	default:
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t slot = (uint64_t)r->first + i, key = r->array << 32 | slot, seen;

		if (slot >= QJ_COUNTS_SLOTS)
			break;
		/* Counts only grow until a final report: what was reported
		 * already is in the coverage. */
		seen = r->kind == QJ_COUNTS_FINAL ? u64map_take(&t->live, key)
						  : u64map_get(&t->live, key);
		if (r->counts[i] <= seen)
			continue;
		ran(t, c, (uint32_t)slot + 1, r->counts[i] - seen);
		if (r->kind == QJ_COUNTS_SNAPSHOT)
			*u64map_at(&t->live, key) = r->counts[i];
	}
}

void tb_counts_flush(struct tb_counts *t, struct coverage *c)
{
	size_t n;
	struct u64map_ent *e = u64map_sorted(&t->pending, &n);

	/* Counts of a TB whose report never came. */
	for (size_t i = 0; i < n; i++)
		c->unplaced += e[i].val;
	free(e);
	u64map_clear(&t->pending);
	if (t->nslots)
		memset(t->slots, 0, t->nslots * sizeof(*t->slots));
	t->nrefs = 0;
	t->cur_slot = 0;
	t->cur_pending = 0;
}

uint64_t tb_counts_request(struct tb_counts *t, int mem_fd)
{
	uint64_t want = t->requested + 1;

	if (!t->sync || mem_fd < 0 || pwrite(mem_fd, &want, sizeof(want), t->sync) < 0)
		return 0;
	t->requested = want;
	return want;
}

void tb_counts_free(struct tb_counts *t, struct coverage *c)
{
	if (t->ran && !t->started)
		c->never_counted++;
	tb_counts_flush(t, c);
	free(t->slots);
	free(t->refs);
	u64map_free(&t->pending);
	u64map_free(&t->live);
	u64map_free(&t->rows);
	memset(t, 0, sizeof(*t));
}
