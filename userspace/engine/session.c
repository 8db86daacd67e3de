// SPDX-License-Identifier: GPL-2.0-or-later
#include "engine/session.h"
#include "coverage/coverage.h"
#include "coverage/drcov.h"
#include "naming/guestbase.h"
#include "util/procfile.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Where we tell QEMU how far we have read its calls (and ask for its
 * counts).  Opened now, while the pid is surely this process's: the file
 * stays bound to its memory (an exec ends it).
 */
static void open_mem(struct session *s)
{
	pid_t pid = s->target->pid;
	char path[32];

	if (pid <= 0 || s->mem_fd >= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	s->mem_fd = open(path, O_RDWR | O_CLOEXEC);
	if (s->mem_fd < 0)
		pr_dbg("pid %d: cannot open %s (%s): QEMU will not know how far we read its calls",
		       (int)pid, path, strerror(errno));
}

void session_init(struct session *s, struct target *t, bool perfmap_insn, bool keep_insns,
		  bool jitdump, struct uftrace *uft, bool counts)
{
	memset(s, 0, sizeof(*s));
	s->target = t;
	s->want_jitdump = jitdump;
	jitmap_init(&s->jm, t->pid, perfmap_insn, keep_insns);
	if (jitdump)
		s->jd = jitdump_new(t->pid, t->uid, t->host_machine, t->view.foreign);
	s->uft = uft;
	s->mem_fd = -1;
	if (counts) {
		s->cnt = xcalloc(1, sizeof(*s->cnt));
		s->cnt->pid = t->pid;
	}
	if (uft || counts)
		open_mem(s);
}

void session_set_uftrace(struct session *s, struct uftrace *u)
{
	s->uft = u;
	if (u)
		open_mem(s);
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

/*
 * QEMU 10.2.2 stamps call events with the host's cycle counter, and reads
 * both clocks before a batch's first event and after its last: an event's
 * nanoseconds lie on the line between the two readings (a stamp outside
 * them, from a thread that changed CPUs, is held to the nearest).  Events
 * of 7.2 come in nanoseconds, with no readings.
 */
_Static_assert(sizeof(struct qj_call_event) == QJ_CALL_EVENT_SIZE, "QEMU's JitCallEvent");
_Static_assert(offsetof(struct qj_calls, ev) % 8 == 0, "events read in place");

/* The events of R in nanoseconds: R's own, or converted into BUF. */
static const struct qj_call_event *calls_to_ns(const struct qj_calls *r, uint32_t n,
					       struct qj_call_event *buf)
{
	const struct qj_call_event *ev = (const struct qj_call_event *)r->ev; /* 8-aligned */
	uint64_t t0 = r->clock[0], n0 = r->clock[1], t1 = r->clock[2], n1 = r->clock[3];
	double scale;

	if (!t0 && !n0 && !t1 && !n1)
		return ev;
	scale = t1 > t0 && n1 > n0 ? (double)(n1 - n0) / (double)(t1 - t0) : 0;
	memcpy(buf, ev, n * sizeof(*ev));
	for (uint32_t i = 0; i < n; i++) {
		uint64_t t = buf[i].ts;

		if (t <= t0)
			buf[i].ts = n0;
		else if (t >= t1)
			buf[i].ts = scale ? n1 : n0;
		else
			buf[i].ts = n0 + (uint64_t)((double)(t - t0) * scale);
	}
	return buf;
}

/* QEMU's batches of calls up to SEQ are read; SYNC is where to say so. */
static void calls_seen(struct session *s, uint64_t seq, uint64_t sync)
{
	if (seq > s->calls_seq) {
		s->calls_seq = seq;
		s->calls_sync = sync;
	}
}

static void on_calls(struct session *s, const struct qj_calls *r, size_t size)
{
	static struct qj_call_event buf[QJ_CALLS_PER_REC];
	size_t room = (size - offsetof(struct qj_calls, ev)) / QJ_CALL_EVENT_SIZE;
	uint32_t n = r->n > QJ_CALLS_PER_REC ? QJ_CALLS_PER_REC : r->n;
	const struct qj_call_event *ev;

	if (n > room)
		n = room;
	ev = calls_to_ns(r, n, buf);
	uftrace_events(s->uft, s->target->pid, calls_task(s, r), ev, n, r->lost, &s->jm.guest);
	for (uint32_t i = 0; i < n; i++)
		if (QJ_CALL_KIND(ev[i].addr) == QJ_CALL_CALL)
			guest_see(&s->jm.guest, QJ_CALL_ADDR(ev[i].addr));
	/* QEMU waits once 64 full batches' weight is unread: say it as we go. */
	calls_seen(s, r->seq, r->sync);
	if (s->calls_seq - s->calls_told >= QJ_CALLS_TELL)
		session_calls_read(s);
}

void session_calls_read(struct session *s)
{
	/* A QEMU that cannot be told (it exited) needs it no more, or
	 * waits for us a second once. */
	if (s->calls_seq != s->calls_told && s->mem_fd >= 0 &&
	    pwrite(s->mem_fd, &s->calls_seq, sizeof(s->calls_seq), s->calls_sync + 8) < 0)
		pr_dbg("pid %d: cannot say where we read its calls: %s", s->target->pid,
		       strerror(errno));
	s->calls_told = s->calls_seq;
}

/* A run of one guest function's code: a jitdump record, with its lines. */
static void emit_jitdump(void *ctx, const struct jit_run *run)
{
	static struct jd_line lines[QJ_TB_MAX_INSNS];
	struct session *s = ctx;
	size_t nl = 0;

	for (uint32_t i = 0; i < run->n; i++) {
		const struct guest_loc *loc = &run->locs[i];
		const char *file;
		int line;

		if (!loc->img || !loc->img->elf ||
		    !elf_file_line(loc->img->elf, loc->link, &file, &line))
			continue;
		lines[nl++] = (struct jd_line){run->host + run->insn_off[i] - run->insn_off[0],
					       line, file};
	}
	jitdump_load(s->jd, run->ts, run->tid, run->host, run->code, run->size, run->name, lines,
		     nl);
}

/* A run of translated code: what ran, and its jitdump record. */
static void on_run(void *ctx, const struct jit_run *run)
{
	struct session *s = ctx;

	if (s->cov)
		for (uint32_t i = 0; i < run->n; i++)
			if (run->locs[i].img && run->locs[i].img->elf)
				coverage_insn(s->cov, run->locs[i].img->elf, run->locs[i].link);
	if (s->cnt && s->cov)
		tb_counts_run(s->cnt, s->cov, run);
	/* A run is one function's instructions: of one image. */
	if (s->dc && run->n && run->locs[0].img) {
		const struct guest_image *img = run->locs[0].img;

		drcov_block(s->dc, img, run->locs[0].link + img->bias,
			    run->locs[run->n - 1].link + img->bias);
	}
	/* (The code cache's TBs at a handshake come without their code,
	 * which the handshake's flush is about to free.) */
	if (s->jd && run->code)
		emit_jitdump(s, run);
}

/* A record kept before the prologue came, 8-byte aligned as the ring's. */
struct kept_rec {
	struct kept_rec *next;
	size_t size;
	uint64_t data[];
};

/* What the records kept before the prologue may take, per process. */
#define EARLY_MAX_BYTES (64u << 20)

/*
 * Before the prologue, the layout of QEMU's reports is not known: keep
 * its TB reports, and the flushes among them, to be read once it is.
 * False when the record is not one to keep, or there is no room left
 * (it is then dropped, and counted, as before the handshake).
 */
static bool keep_early(struct session *s, const void *data, size_t size)
{
	const struct qj_hdr *h = data;
	struct kept_rec *k;

	if (s->jm.layout_known || s->target->stock ||
	    (h->type != QJ_EV_TBS && (h->type != QJ_EV_FLUSH || !s->early)) ||
	    (h->type == QJ_EV_TBS && size < sizeof(struct qj_tbs)) ||
	    s->early_bytes + size > EARLY_MAX_BYTES)
		return false;
	k = xmalloc(sizeof(*k) + size);
	k->next = NULL;
	k->size = size;
	memcpy(k->data, data, size);
	if (!s->early)
		s->early_tail = &s->early;
	*s->early_tail = k;
	s->early_tail = &k->next;
	s->early_bytes += size;
	if (h->type == QJ_EV_TBS)
		s->tbs_kept += ((const struct qj_tbs *)data)->count;
	return true;
}

static void free_early(struct session *s)
{
	for (struct kept_rec *k = s->early, *next; k; k = next) {
		next = k->next;
		free(k);
	}
	s->early = NULL;
	s->early_bytes = 0;
}

/* The prologue came: what was kept before it, in order. */
static void read_early(struct session *s)
{
	struct kept_rec *k = s->early;

	s->early = NULL;
	s->early_bytes = 0;
	while (k) {
		struct kept_rec *next = k->next;

		session_event(s, k->data, k->size);
		free(k);
		k = next;
	}
}

static void on_prologue(struct session *s, const struct qj_prologue *r)
{
	jitmap_prologue(&s->jm, r);
	if (s->jd && r->size && r->size <= QJ_TB_MAX_CODE) {
		/* The prologue never changes: read it from QEMU now. */
		uint8_t *buf = xmalloc(r->size);

		if (!s->prologue_loaded && proc_mem_read(s->target->pid, r->host, buf, r->size)) {
			s->prologue_loaded = true;
			jitdump_load(s->jd, r->hdr.ts, r->hdr.tid, r->host, buf, r->size,
				     "qemu-tcg-prologue", NULL, 0);
		}
		free(buf);
	}
	if (s->smp)
		samples_prepare(s->smp, &s->jm);
	read_early(s);
}

static void on_marker(struct session *s, const struct qj_marker *r)
{
	if (!s->jd || jitdump_is_open(s->jd))
		return;
	int err;

	if (!r->path[0])
		return;
	err = jitdump_open(s->jd, r->path, r->addr);
	/* (A marker replaced in QEMU's filesystem costs the jitdump only.) */
	s->marker_refused = err == -EPERM || err == -ENOENT;
	if (err)
		return;
	free(s->marker_path);
	s->marker_path = xstrdup(r->path);
	pr_dbg("pid %d: jitdump %s", s->target->pid, r->path);
}

static void on_attach(struct session *s, const struct qj_attach *r)
{
	bool was = s->hs.answered;

	handshake_event(&s->hs, r->poll_ns);
	if (s->hs.answered && !s->jm.answered_ns)
		s->jm.answered_ns = r->poll_ns;
	/* Our handshake: QEMU reports its code cache, not what it flushed. */
	if (s->hs.answered && !was && s->cov && r->flushes)
		pr_warn("pid %d: QEMU flushed its code cache %u time%s before we attached: the "
			"coverage misses code that ran only before %s",
			s->target->pid, r->flushes, r->flushes == 1 ? "" : "s",
			r->flushes == 1 ? "it" : "the last one");
}

/* A stock QEMU's guest_base is known: its names can stand. */
static void stock_placed(struct session *s, uint64_t base, const char *how)
{
	guest_set_base(&s->jm.guest, base);
	guest_add_mapped(&s->jm.guest);
	s->jm.layout_known = true;
	s->hs.answered = true;
	s->jm.answered_ns = mono_ns();
	pr_dbg("pid %d: guest_base 0x%llx, from %s", s->target->pid, (unsigned long long)base, how);
}

/* QEMU's own binary, no guest's. */
static bool qemu_file(const struct session *s, struct stat *st)
{
	char exe[64];

	snprintf(exe, sizeof(exe), "/proc/%d/exe", s->target->pid);
	return !stat(exe, st);
}

/*
 * Is a stock QEMU's guest_base still unknown after its mappings alone were
 * read?  Then *ST is QEMU's own binary, for the other ways to find it.
 */
static bool stock_unplaced(struct session *s, struct stat *st)
{
	uint64_t base;

	if (s->jm.guest.base_known || !qemu_file(s, st))
		return false;
	if (!guestbase_from_maps(s->target->pid, st->st_dev, st->st_ino, &base))
		return true;
	stock_placed(s, base, "its program's mapping");
	return false;
}

void session_stock_begin(struct session *s)
{
	struct stat st;

	stock_unplaced(s, &st);
}

/*
 * Coverage of a stock QEMU's TB: its instructions' bounds are unknown,
 * so every byte of its guest code counts as translated, and so run.
 */
static void stock_cover(struct session *s, const struct qj_block *r)
{
	struct guest_loc loc;

	guest_lookup(&s->jm.guest, r->pc, &loc);
	if (!loc.img || !loc.img->elf)
		return;
	for (uint64_t a = r->pc; a < r->pc + r->guest_size && a < loc.img->end; a++)
		coverage_insn(s->cov, loc.img->elf, a - loc.img->bias);
}

static void on_stock(struct session *s, const void *data, size_t size)
{
	const struct qj_hdr *h = data;
	struct stat st;
	uint64_t base;

	if (s->refused)
		return;
	if (h->type == QJ_EV_LAYOUT && size >= sizeof(struct qj_layout)) {
		const struct qj_layout *r = data;

		pr_err("QEMU (pid %d) keeps its TBs otherwise than QEMU 10.2.2 (tb 0x%llx holds "
		       "0x%llx where its code 0x%llx should be): refused rather than misread; "
		       "use a QEMU built with our probes (make qemu)",
		       s->target->pid, (unsigned long long)r->tb, (unsigned long long)r->seen,
		       (unsigned long long)r->code);
		s->refused = true;
	} else if (h->type == QJ_EV_GUEST_MAP && size >= sizeof(struct qj_guest_map)) {
		const struct qj_guest_map *r = data;

		if (stock_unplaced(s, &st) &&
		    guestbase_from_mmap(s->target->pid, st.st_dev, st.st_ino, r->start, r->offset,
					r->fd, &base))
			stock_placed(s, base, "a file it mapped");
	} else if (h->type == QJ_EV_BLOCK && size >= sizeof(struct qj_block)) {
		const struct qj_block *r = data;

		/* (-a: a process that was forked, or that we came to late;
		 * its mappings read at most every 100 ms.) */
		if (!s->jm.guest.base_known && mono_ns() - s->stock_tried_ns >= 100000000ull) {
			s->stock_tried_ns = mono_ns();
			if (stock_unplaced(s, &st) &&
			    guestbase_identity(s->target->pid, st.st_dev, st.st_ino, r->pc, &base))
				stock_placed(s, base, "a TB in a file at its own address");
		}
		if (!s->jm.guest.base_known) {
			s->blocks_unplaced++;
			return;
		}
		jitmap_block(&s->jm, r, s->dc ? on_run : NULL, s);
		if (s->cov)
			stock_cover(s, r);
	}
}

void session_event(struct session *s, const void *data, size_t size)
{
	const struct qj_hdr *h = data;

	if (keep_early(s, data, size))
		return;
	switch (h->type) {
	case QJ_EV_TBS:
		if (size >= sizeof(struct qj_tbs))
			jitmap_tbs(&s->jm, data, s->jd || s->cov ? on_run : NULL, s);
		break;
	case QJ_EV_PROLOGUE:
		if (size >= sizeof(struct qj_prologue))
			on_prologue(s, data);
		break;
	case QJ_EV_FLUSH:
		if (s->cnt && s->cov)
			tb_counts_flush(s->cnt, s->cov);
		if (s->smp)
			samples_flush(s->smp, &s->jm);
		jitmap_flush(&s->jm);
		break;
	case QJ_EV_ATTACH:
		if (size >= sizeof(struct qj_attach))
			on_attach(s, data);
		break;
	case QJ_EV_MARKER:
		if (size >= sizeof(struct qj_marker))
			on_marker(s, data);
		break;
	case QJ_EV_IMAGE:
	case QJ_EV_LOADED_ELF:
	case QJ_EV_MMAP:
		if (size >= sizeof(struct qj_image))
			jitmap_image(&s->jm, data);
		break;
	case QJ_EV_CALLS:
		if (s->uft && size >= offsetof(struct qj_calls, ev))
			on_calls(s, data, size);
		break;
	case QJ_EV_CALLS_WAIT:
		/* What came before it is read: that is all we will see. */
		if (s->uft && size >= sizeof(struct qj_calls_wait)) {
			const struct qj_calls_wait *w = data;

			/* (It says so every 10 ms while it waits.) */
			s->calls_waits += w->seq != s->calls_waited;
			s->calls_waited = w->seq;
			calls_seen(s, w->seq, w->sync);
			session_calls_read(s);
		}
		break;
	case QJ_EV_CALLS_LOST:
		/* A VM's tasks are vCPUs: its threads' ends are not theirs. */
		if (s->uft && !s->target->system && size >= sizeof(struct qj_calls_lost))
			uftrace_lost_at_end(s->uft, ((const struct qj_calls_lost *)data)->hdr.tid,
					    ((const struct qj_calls_lost *)data)->lost);
		break;
	case QJ_EV_COUNTS:
		if (s->cnt && s->cov && size >= sizeof(struct qj_counts))
			tb_counts_event(s->cnt, s->cov, data);
		break;
	case QJ_EV_SAMPLE:
		if (s->smp)
			samples_add(s->smp, &s->jm, data, size);
		break;
	case QJ_EV_WAIT_END:
		if (s->smp && size >= sizeof(struct qj_wait_end))
			samples_wait_end(s->smp, data);
		break;
	case QJ_EV_BLOCK:
	case QJ_EV_GUEST_MAP:
	case QJ_EV_LAYOUT:
		on_stock(s, data, size);
		break;
	case QJ_EV_GUEST_BASE:
		if (size >= sizeof(struct qj_guest_base))
			guest_set_base(&s->jm.guest, ((const struct qj_guest_base *)data)->base);
		break;
	}
}

void session_fork(struct session *child, const struct session *parent)
{
	jitmap_fork(&child->jm, &parent->jm);
	if (child->cnt && parent->cnt)
		tb_counts_fork(child->cnt, parent->cnt);
	child->hs.answered = parent->hs.answered;
	child->hs.checked = parent->hs.checked;
}

bool session_named(const struct session *s, bool need_prologue)
{
	return s->hs.answered && (s->jm.layout_known || !need_prologue) &&
	       (s->jm.guest.nimgs || s->target->system);
}

int session_check_handshake(struct session *s, bool need_prologue)
{
	const char *missing = NULL;

	if (need_prologue && !s->jm.layout_known)
		missing = "the prologue";
	else if (!s->jm.guest.nimgs && !s->target->system)
		missing = "the guest's images";
	else if (s->want_jitdump && !s->marker_path && !s->marker_refused)
		missing = "a jitdump marker";
	if (!missing)
		return 0;
	pr_err("QEMU (pid %d) answered without %s; files would be nameless or incomplete",
	       s->target->pid, missing);
	return -EPROTO;
}

void session_free(struct session *s)
{
	free_early(s);
	if (s->blocks_unplaced)
		pr_dbg("pid %d: %llu TBs came before its guest_base was known: unnamed",
		       s->target->pid, (unsigned long long)s->blocks_unplaced);
	/* Its images are listed, whether their code ran or not. */
	if (s->cov)
		coverage_images(s->cov, &s->jm.guest);
	if (s->cnt) {
		if (s->cov)
			tb_counts_free(s->cnt, s->cov);
		free(s->cnt);
	}
	if (s->dc) {
		drcov_images(s->dc, &s->jm.guest);
		drcov_write_files(s->dc, s->cov_opts, s->target->pid);
		drcov_free(s->dc);
		s->dc = NULL;
	}
	if (s->smp) {
		samples_free(s->smp);
		free(s->smp);
	}
	if (s->jd)
		jitdump_discard(s->jd);
	if (s->mem_fd >= 0)
		close(s->mem_fd);
	jitmap_free(&s->jm);
	free(s->marker_path);
}
