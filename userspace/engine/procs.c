// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The processes followed, by pid.  BPF reports what becomes of them in
 * order with their records: a fork (the child starts as a copy of its
 * parent, as it inherits the code cache), an exec (the pid's program
 * ends: its files are completed, and what it runs next is a new session),
 * an exit.  One path, proc_end(), completes a process's files.
 */
#include "coverage/coverage.h"
#include "coverage/drcov.h"
#include "engine/engine.h"
#include "util/util.h"
#include "writers/jitdump.h"
#include "writers/perfmap.h"
#include "writers/uftrace.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <linux/types.h>
#include "qemu-jitbpf.h"

/* A process that is gone without an exit record (lost in a full ring)
 * is ended after this long. */
#define GONE_NS (1000ull * 1000 * 1000)

static struct proc **slot(struct engine *e, pid_t pid)
{
	struct proc **pp = &e->procs[(unsigned)pid % PROC_BUCKETS];

	while (*pp && (*pp)->t->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

struct proc *procs_find(struct engine *e, pid_t pid)
{
	return *slot(e, pid);
}

/*
 * -a: uftrace data of PID in DIR/PID, or after an exec of that pid,
 * DIR/PID.1, DIR/PID.2 and so on.
 */
static struct uftrace *open_uftrace(const char *dir, const struct callfilter *f, pid_t pid)
{
	struct uftrace *u;
	char *path = xasprintf("%s/%d", dir, pid);

	for (int i = 1; !access(path, F_OK); i++) {
		free(path);
		path = xasprintf("%s/%d.%d", dir, pid, i);
	}
	u = uftrace_open(path, f);
	free(path);
	return u;
}

struct proc *procs_new(struct engine *e, pid_t pid, struct target *t, bool ask)
{
	const struct engine_opts *o = e->o;
	struct proc *p = xcalloc(1, sizeof(*p));
	struct uftrace *uft = e->uft;

	if (t) {
		p->t = t;
	} else {
		target_observe(&p->own, pid);
		p->t = &p->own;
	}
	if (o->uftrace && !e->tree) {
		uft = open_uftrace(o->uftrace, &o->ufilter, pid);
		p->own_uft = true;
	}
	session_init(&p->s, p->t, o->perfmap_insn, o->profile, o->jitdump, uft,
		     e->cov && o->cov.counts);
	p->s.cov = e->cov;
	p->s.cov_opts = &o->cov;
	if (e->cov && drcov_wanted(&o->cov))
		p->s.dc = drcov_new();
	/* Only --keep-exited tells processes of one pid apart. */
	if (pid > 0 && e->ret.keep.on) {
		char state;

		if (proc_stat(pid, &state, &p->start))
			retention_pid_reused(&e->ret, pid, p->start);
	}
	if (o->uftrace)
		p->cmdline = target_cmdline(p->t);
	p->s.hs.pid = pid;
	p->s.hs.attached_ns = e->attached_ns;
	if (ask)
		procs_ask(p);
	if (e->profiling)
		p->s.smp = profiler_follow(&e->prof, pid);
	*slot(e, pid) = p;
	e->nprocs++;
	e->seen++;
	pr_dbg("pid %d: %s", pid, p->t->exe[0] ? p->t->exe : "(gone)");
	return p;
}

void procs_ask(struct proc *p)
{
	/* A forked child's names stand on its parent's handshake until its
	 * own comes. */
	bool answered = p->s.hs.answered, checked = p->s.hs.checked;

	if (handshake_init(&p->s.hs, p->t))
		return;
	p->s.hs.answered = answered;
	p->s.hs.checked = checked;
	p->asked = !handshake_start(&p->s.hs);
}

static void proc_free(struct proc *p)
{
	struct coverage *cov = p->s.cov;

	if (p->own_uft && p->s.uft)
		uftrace_discard(p->s.uft);
	session_free(&p->s);
	/* Its files may be held by the coverage only now. */
	if (cov)
		coverage_bound(cov);
	if (p->t == &p->own)
		target_free(&p->own);
	linkset_clear(&p->links);
	free(p->links.v);
	free(p->links.ids);
	free(p->cmdline);
	free(p);
}

/*
 * The QEMU the user named ends (or we stop): did its handshake come,
 * with what the files need?  Without it no file of the run is written.
 */
static void root_check(struct engine *e, struct session *s)
{
	int err = e->err;

	if (!err && !s->hs.answered) {
		pr_err("QEMU (pid %d) did not answer the attach request before %s", e->root.pid,
		       target_alive(&e->root) ? "we stopped" : "it exited");
		err = -ESRCH;
	}
	if (!err && !s->hs.checked) {
		s->hs.checked = true;
		err = session_check_handshake(s, engine_wants_code(e->o));
	}
	if (err) {
		e->err = err;
		e->nameless = true;
	}
}

/* --keep-exited: P's marker, as P names it (QEMU makes it by an absolute
 * path, in QEMU's view). */
static void keep_marker(struct engine *e, struct proc *p, struct kept *k)
{
	if (p->s.marker_path[0] == '/')
		retention_add(&e->ret, k, &p->t->view, p->s.marker_path, false);
}

/* The jitdump of process P, complete (or dropped, when it has none). */
static void end_jitdump(struct engine *e, struct proc *p, bool named, bool root, struct kept *k)
{
	struct session *s = &p->s;
	int err;

	/* (A refused marker has had its warning.) */
	if (!named || s->marker_refused) {
		jitdump_discard(s->jd);
		s->jd = NULL;
		return;
	}
	err = jitdump_close(s->jd, &s->bytes);
	s->jd = NULL;
	if (!err) {
		e->jitdumps++;
		if (root)
			e->root_marker = xstrdup(s->marker_path);
		pr_dbg("pid %d: wrote %s", p->t->pid, s->marker_path);
		if (k)
			keep_marker(e, p, k);
		return;
	}
	/* A fork's child that never got a marker of its own has none. */
	if (!root)
		return;
	if (err == -ENOENT)
		pr_err("QEMU (pid %d) never reported a jitdump marker", p->t->pid);
	else
		pr_err("writing the jitdump: %s", strerror(-err));
	e->err = e->err ? e->err : err;
}

/*
 * perf looks in a containerized process's own /tmp, for the pid it has
 * there, before the host's /tmp/perf-PID.map: write that one too, inside
 * the container's root (a link planted there is replaced, never followed).
 */
static void container_perfmap(struct engine *e, struct proc *p, struct kept *k)
{
	const struct proc_view *v = &p->t->view;
	int dir = view_open_dir(v, "/tmp");
	uint64_t bytes = 0;
	char name[64];

	if (dir < 0) {
		pr_warn("pid %d: cannot open its /tmp: %s; perf reads /tmp/perf-%d.map", p->t->pid,
			strerror(-dir), p->t->pid);
		return;
	}
	snprintf(name, sizeof(name), "perf-%d.map", v->nspid);
	if (!perfmap_write(&p->s.jm.code, dir, name, p->t->uid, p->t->gid, &bytes)) {
		pr_dbg("pid %d: wrote its /tmp/%s", p->t->pid, name);
		if (k)
			retention_add_at(&e->ret, k, dir, name, false);
	}
	close(dir);
}

/*
 * Process P's program has ended (WHY: exit, exec), or we stop: complete
 * its files and forget it.  GONE: the process is, and our links into it
 * can go (not after an exec: they hold for its next program).
 */
static void proc_end(struct engine *e, struct proc **pp, const char *why, bool gone)
{
	struct proc *p = *pp;
	struct session *s = &p->s;
	const char *exe = s->jm.exe_path ? s->jm.exe_path : p->t->exe;
	bool root = p->t == &e->root, named;
	struct kept *k = NULL;

	if (root)
		root_check(e, s);
	if (s->smp) {
		profiler_end(&e->prof, s->smp, &s->jm);
		s->smp = NULL;
	}
	named = !e->nameless && session_named(s, engine_wants_code(e->o));
	if (!named && !e->nameless) {
		pr_dbg("pid %d (%s): no complete handshake, no files", p->t->pid, why);
		e->unnamed++;
	}
	if (named && e->ret.keep.on)
		k = retention_begin(&e->ret, p->t->pid, p->start, mono_ns());
	if (named && e->o->perfmap) {
		char path[64];

		snprintf(path, sizeof(path), "/tmp/perf-%d.map", p->t->pid);
		if (p->t->view.foreign)
			container_perfmap(e, p, k);
		if (!perfmap_write(&s->jm.code, AT_FDCWD, path, p->t->uid, p->t->gid, &s->bytes)) {
			e->maps++;
			if (k)
				retention_add(&e->ret, k, NULL, path, false);
			if (root)
				e->root_map = xstrdup(path);
			pr_dbg("pid %d (%s): wrote %s", p->t->pid, why, path);
		} else if (root && !e->err) {
			e->err = -EIO;
		}
	}
	if (s->jd)
		end_jitdump(e, p, named, root, k);
	if (s->uft) {
		uftrace_end(s->uft, p->t->pid, &s->jm.guest, exe);
		if (p->own_uft) {
			char *dir = xstrdup(uftrace_dir(s->uft));

			if (named &&
			    !uftrace_close(s->uft, exe, p->cmdline ? p->cmdline : "", &s->bytes)) {
				e->uftraces++;
				if (k)
					retention_add(&e->ret, k, NULL, dir, true);
			} else if (!named) {
				uftrace_discard(s->uft);
			}
			free(dir);
		}
		s->uft = NULL;
	}
	if (k)
		retention_end(&e->ret, k);
	if (root) {
		e->root_ended = true;
		e->root_exe = xstrdup(exe);
		e->root_cmdline = p->cmdline;
		p->cmdline = NULL;
	}
	e->tbs += s->jm.tbs;
	e->flushes += s->jm.flushes;
	e->tbs_early += s->jm.tbs_early;
	e->tbs_held += s->jm.tbs_held;
	e->tbs_cached += s->jm.tbs_cached;
	e->tbs_incomplete += s->jm.tbs_incomplete;
	e->calls_waits += s->calls_waits;
	e->bytes += s->bytes;
	/* The last of a tree, its root: the run ends, and its links go with
	 * the engine's once the files are written (stop()), for releasing
	 * them forks the detach helper, whose copy of our memory every page
	 * we write afterwards would fault on (a sixth of W1's end, counted). */
	if (gone && p->links.n && root && e->nprocs == 1) {
		for (size_t i = 0; i < p->links.n; i++)
			linkset_add(&e->links, p->links.v[i]);
		p->links.n = 0;
	} else if (gone && p->links.n) {
		probes_release(&e->probes, e->profiling ? e->prof.sm : NULL, &p->links);
	}
	*pp = p->next;
	e->nprocs--;
	proc_free(p);
}

/* Thread TID of PID forked CHILD at TS. */
static void on_fork(struct engine *e, pid_t pid, uint32_t tid, pid_t child, uint64_t ts)
{
	struct proc *parent = procs_find(e, pid), *c;

	/* A process we know no QEMU of (a tree's native programs): its
	 * child is followed still, and attached if it runs a QEMU. */
	if (!parent)
		return;
	if (procs_find(e, child))
		proc_end(e, slot(e, child), "pid reused", true);
	c = procs_new(e, child, NULL, false);
	session_fork(&c->s, &parent->s);
	e->forks++;
	if (e->uft)
		uftrace_fork(e->uft, pid, tid, child, ts);
	else if (c->s.uft)
		uftrace_begin(c->s.uft, child, ts);
	if (e->tree) {
		/* It waits for us (qemu:jit_fork_wait) until we ask. */
		if (scope_attach(e, c, parent->bin)) {
			proc_end(e, slot(e, child), "gone", true);
			return;
		}
		procs_ask(c);
		pr_dbg("pid %d: forked by %d, attached %.1f ms after the fork", child, pid,
		       (mono_ns() - ts) / 1e6);
	} else if (e->o->jitdump) {
		/* perf honours only a marker the child mapped itself: ask it
		 * for a handshake, which makes one (and flushes). */
		procs_ask(c);
	}
}

/* PID runs another program from TS on. */
static void on_exec(struct engine *e, pid_t pid, uint64_t ts)
{
	struct proc **pp = slot(e, pid), *p;
	struct linkset links = {0};
	const struct binary *had = NULL, *bin;
	uint64_t attached_ns = 0;

	if (*pp) {
		links = (*pp)->links;
		(*pp)->links = (struct linkset){0};
		had = (*pp)->bin;
		attached_ns = (*pp)->attached_ns;
		proc_end(e, pp, "exec", false);
	}
	/* -a: the new program's QEMU, if any, reports itself. */
	if (!e->tree)
		return;
	bin = scope_binary(e, NULL, pid);
	if (!bin) {
		/* Not a QEMU of ours: it stays in the tree, with no link. */
		if (links.n)
			probes_release(&e->probes, e->profiling ? e->prof.sm : NULL, &links);
		free(links.v);
		free(links.ids);
		return;
	}
	p = procs_new(e, pid, NULL, false);
	p->links = links;
	p->attached_ns = attached_ns;
	if (e->uft)
		uftrace_begin(e->uft, pid, ts);
	if (bin != had) {
		/* Our links into it are for another binary: it runs already. */
		if (scope_attach(e, p, bin)) {
			proc_end(e, slot(e, pid), "gone", true);
			return;
		}
		procs_ask(p);
		pr_dbg("pid %d: exec'd %s, attached %.1f ms after the exec", pid, bin->path,
		       (mono_ns() - ts) / 1e6);
		return;
	}
	p->bin = bin;
	/*
	 * Our links held through the exec, so it reports from its start; but
	 * not if it exec'd before we had attached to it (a child that did not
	 * wait for us), and one that inherited QEMU_JIT_ATTACH_WAIT with its
	 * own pid waits for a request.
	 */
	if (ts < attached_ns || (pid == e->root.pid && e->root.launched))
		procs_ask(p);
}

int procs_event(void *ctx, void *data, size_t size)
{
	struct engine *e = ctx;
	const struct qj_hdr *h = data;
	const struct qj_fork *f = data;
	struct proc **pp;

	if (size < sizeof(*h))
		return 0;
	if (h->ts > e->ring_ts)
		e->ring_ts = h->ts;
	switch (h->type) {
	case QJ_EV_FORK:
		if (size >= sizeof(*f))
			on_fork(e, h->pid, h->tid, f->child, h->ts);
		return 0;
	case QJ_EV_EXEC:
		on_exec(e, h->pid, h->ts);
		return 0;
	case QJ_EV_EXIT:
		if (h->pid == (uint32_t)e->root.pid)
			e->root.ended = true;
		pp = slot(e, h->pid);
		if (*pp)
			proc_end(e, pp, "exit", true);
		return 0;
	}
	/* (A QEMU our pid namespace cannot see: -a in a container.) */
	if (!h->pid)
		return 0;
	pp = slot(e, h->pid);
	if (!*pp) {
		/* -a: a QEMU that started after us; its early handshake comes
		 * first.  A tree knows its processes. */
		if (e->tree)
			return 0;
		procs_new(e, h->pid, NULL, false);
		if ((*pp)->s.uft)
			uftrace_begin((*pp)->s.uft, h->pid, h->ts);
	}
	session_event(&(*pp)->s, data, size);
	return 0;
}

void procs_tick(struct engine *e, uint64_t now, bool reap)
{
	for (size_t b = 0; b < PROC_BUCKETS; b++) {
		struct proc **pp = &e->procs[b];

		while (*pp) {
			struct proc *p = *pp;

			if (p->asked && !p->given_up && p->t != &e->root &&
			    handshake_poll(&p->s.hs, now)) {
				p->given_up = true;
				pr_warn("QEMU (pid %d) did not answer our attach requests",
					p->t->pid);
			}
			if (p->s.smp)
				profiler_resolve(p->s.smp, &p->s.jm, e->heard_ns);
			session_calls_read(&p->s);
			/* Its exit record was lost (counted): end it all the same. */
			if (reap && !proc_running(p->t->pid)) {
				if (!p->gone_ns) {
					p->gone_ns = now;
				} else if (now - p->gone_ns >= GONE_NS) {
					proc_end(e, pp, "gone", true);
					continue;
				}
			}
			pp = &p->next;
		}
	}
}

void procs_end_all(struct engine *e, const char *why)
{
	for (size_t b = 0; b < PROC_BUCKETS; b++)
		while (e->procs[b])
			proc_end(e, &e->procs[b], why, false);
}

void procs_free_all(struct engine *e)
{
	for (size_t b = 0; b < PROC_BUCKETS; b++)
		while (e->procs[b]) {
			struct proc *p = e->procs[b];

			e->procs[b] = p->next;
			proc_free(p);
		}
	e->nprocs = 0;
}

/* Ask every QEMU that counts for its counts so far; how many were asked. */
size_t procs_request_counts(struct engine *e)
{
	size_t asked = 0;

	for (size_t b = 0; b < PROC_BUCKETS; b++)
		for (struct proc *p = e->procs[b]; p; p = p->next)
			if (p->s.cnt && tb_counts_request(p->s.cnt, p->s.mem_fd))
				asked++;
	return asked;
}

/*
 * Before we leave QEMUs that run on: their counts so far, which their
 * watcher threads hand over at their next poll (100 ms), up to 500 ms.
 */
void procs_last_counts(struct engine *e)
{
	uint64_t deadline = mono_ns() + 500000000ull;
	bool waiting = procs_request_counts(e) > 0;

	while (waiting && mono_ns() < deadline) {
		/* (Records wake us only in bulk: read what is there.) */
		usleep(10000);
		ring_buffer__consume(e->rb);
		waiting = false;
		for (size_t b = 0; b < PROC_BUCKETS; b++)
			for (struct proc *p = e->procs[b]; p; p = p->next)
				waiting |= p->s.cnt && p->s.cnt->answered < p->s.cnt->requested;
	}
	if (waiting)
		pr_warn("QEMU did not hand over its last counts: they are those of up to a second "
			"before");
}
