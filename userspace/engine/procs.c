// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The processes followed, by pid.  BPF reports what becomes of them in
 * order with their records: a fork (the child starts as a copy of its
 * parent, as it inherits the code cache), an exec (the pid's program
 * ends: its files are completed, and what it runs next is a new session),
 * an exit.  One path, proc_end(), completes a process's files.
 */
#include "coverage/coverage.h"
#include "engine/engine.h"
#include "engine/scope.h"
#include "util/procfile.h"
#include "util/util.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <linux/binfmts.h>
#include <linux/types.h>
#include "qemu-jitbpf.h"

/* A process that is gone without an exit record (lost in a full ring)
 * is ended after this long. */
#define GONE_NS (1000ull * 1000 * 1000)

struct proc *procs_find(struct engine *e, pid_t pid)
{
	return proc_of(pidtab_find(&e->procs, pid));
}

struct proc *procs_new(struct engine *e, pid_t pid, struct target *t, bool ask)
{
	const struct engine_opts *o = e->o;
	struct proc *p = xcalloc(1, sizeof(*p));

	if (t) {
		p->t = t;
	} else {
		target_observe(&p->own, pid);
		p->t = &p->own;
	}
	session_init(&p->s, p->t, o->perfmap_insn, o->profile, o->jitdump, NULL,
		     e->cov && o->cov.counts);
	for_each_output(e, out) if ((*out)->proc_new)(*out)->proc_new(e, p);
	/* Only --keep-exited tells processes of one pid apart. */
	if (pid > 0 && e->ret.keep.on) {
		char state;

		if (proc_stat(pid, &state, &p->start))
			retention_pid_reused(&e->ret, pid, p->start);
	}
	if (o->uftrace || o->report)
		p->cmdline = target_cmdline(p->t);
	p->s.hs.pid = pid;
	p->s.hs.attached_ns = e->attached_ns;
	if (ask)
		procs_ask(p, false);
	p->node.pid = pid;
	pidtab_add(&e->procs, &p->node);
	e->seen++;
	pr_dbg("pid %d: %s", pid, p->t->exe[0] ? p->t->exe : "(gone)");
	return p;
}

void procs_ask(struct proc *p, bool forked)
{
	/* A forked child's names stand on its parent's handshake until its
	 * own comes. */
	bool answered = p->s.hs.answered, checked = p->s.hs.checked;
	int err = handshake_init(&p->s.hs, p->t);

	p->s.hs.answered = answered;
	p->s.hs.checked = checked;
	if (err)
		return;
	p->asked = !handshake_start(&p->s.hs, forked ? 2 : 1);
	if (p->s.hs.stock)
		session_stock_begin(&p->s);
}

void procs_begin(struct engine *e, struct proc *p, const struct proc *parent, uint32_t tid,
		 uint64_t ts)
{
	for_each_output(e, out) if ((*out)->proc_begin)(*out)->proc_begin(e, p, parent, tid, ts);
}

static void proc_free(struct engine *e, struct proc *p)
{
	struct coverage *cov = p->s.cov;

	for_each_output(e, out) if ((*out)->proc_free)(*out)->proc_free(e, p);
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

/* How a program's end is said in a sentence. */
static const char *end_said(const struct proc_end *pe)
{
	if (pe->running)
		return "the run ended";
	if (!strcmp(pe->why, "exit"))
		return "it exited";
	if (!strcmp(pe->why, "exec"))
		return "it exec'd";
	return "it was gone";
}

/*
 * Process P's program has ended (WHY: exit, exec), or we stop: complete
 * its files and forget it.  GONE: the process is, and our links into it
 * can go (not after an exec: they hold for its next program).
 */
void procs_end(struct engine *e, struct proc *p, const char *why, bool gone)
{
	struct session *s = &p->s;
	struct proc_end pe = {
		.p = p,
		.why = why,
		.running = !strcmp(why, PROC_RUNNING),
		.exe = s->jm.exe_path ? s->jm.exe_path : p->t->exe,
		.root = p->t == &e->root,
	};

	if (pe.root)
		root_check(e, s);
	pe.named = !e->nameless && session_named(s, engine_wants_code(e->o));
	if (!pe.named && !e->nameless && p->unfollowed && !s->early && !s->tbs_kept) {
		/* It ran before we followed it, and told us nothing. */
		pr_dbg("pid %d: forked while we attached to its parent, %s before we could "
		       "attach to it",
		       p->t->pid, end_said(&pe));
		e->unfollowed++;
	} else if (!pe.named && !e->nameless) {
		/* Its records are lost: say whose.  One that ended had told us
		 * all it ran, and the run fails; one we stop following while it
		 * runs (-d, Ctrl-C) was cut short by the user. */
		pr_warn("pid %d (%s): %s before its handshake: no files of it", p->t->pid,
			p->cmdline ? p->cmdline : p->t->exe, end_said(&pe));
		e->unnamed++;
		if (!pe.running)
			e->err = e->err ? e->err : -EPROTO;
	}
	if (pe.named && e->ret.keep.on)
		pe.k = retention_begin(&e->ret, p->t->pid, p->start, mono_ns());
	for_each_output(e, out) if ((*out)->proc_end)(*out)->proc_end(e, &pe);
	if (pe.k)
		retention_end(&e->ret, pe.k);
	if (pe.root) {
		e->root_ended = true;
		e->root_exe = xstrdup(pe.exe);
		e->root_cmdline = p->cmdline;
		p->cmdline = NULL;
	}
	e->tbs += s->jm.tbs;
	e->flushes += s->jm.flushes;
	e->tbs_early += s->jm.tbs_early;
	e->tbs_kept += s->tbs_kept;
	e->tbs_held += s->jm.tbs_held;
	e->tbs_cached += s->jm.tbs_cached;
	e->tbs_incomplete += s->jm.tbs_incomplete;
	e->calls_waits += s->calls_waits;
	e->bytes += s->bytes;
	/* The last of a tree, its root: the run ends, and its links go with
	 * the engine's once the files are written (stop()), for releasing
	 * them forks the detach helper, whose copy of our memory every page
	 * we write afterwards would fault on (a sixth of W1's end, counted). */
	if (gone && p->links.n && pe.root && e->procs.n == 1) {
		for (size_t i = 0; i < p->links.n; i++)
			linkset_add(&e->links, p->links.v[i]);
		p->links.n = 0;
	} else if (gone && p->links.n) {
		probes_release(&e->probes, e->profiling ? e->prof.sm : NULL, &p->links);
	}
	pidtab_remove(&e->procs, pidtab_slot(&e->procs, p->node.pid));
	proc_free(e, p);
}

/* Thread TID of PID forked CHILD at TS. */
static void on_fork(struct engine *e, pid_t pid, uint32_t tid, pid_t child, uint64_t ts)
{
	struct proc *parent = procs_find(e, pid), *c;

	/* A process we know no QEMU of (a tree's native programs): its
	 * child is followed still, and attached if it runs a QEMU. */
	if (!parent)
		return;
	if ((c = procs_find(e, child)))
		procs_end(e, c, "pid reused", true);
	c = procs_new(e, child, NULL, false);
	/* A copy of its parent until it execs, which it may have done by
	 * now (-a does not hold it): its command line is its parent's. */
	if (c->cmdline && parent->cmdline) {
		free(c->cmdline);
		c->cmdline = xstrdup(parent->cmdline);
	}
	session_fork(&c->s, &parent->s);
	/* (Forked while we attached to its parent: none of our probes was
	 * in it yet, nor will be until we attach to it.  QEMU decides at the
	 * start of its fork whether the child waits, and the fork is seen at
	 * its end, up to FORK_SPAN_NS later.) */
	c->unfollowed = parent->follows_ns && ts < parent->follows_ns + FORK_SPAN_NS;
	e->forks++;
	procs_begin(e, c, parent, tid, ts);
	e->scope->forked(e, parent, c, ts);
}

/* PID runs another program from TS on. */
static void on_exec(struct engine *e, pid_t pid, uint64_t ts, const struct qj_exec *xe)
{
	struct proc *p = procs_find(e, pid);
	struct exec_before before = {0};
	const struct qj_exit *x = xe ? &xe->x : NULL;
	char interp[QJ_PATH_MAX], args[QJ_ARGS_MAX + 1];

	if (xe && xe->interp[0]) {
		memcpy(interp, xe->interp, sizeof(interp));
		interp[sizeof(interp) - 1] = 0;
		before.interp = interp;
	}
	if (xe && xe->args_len) {
		size_t n = xe->args_len < QJ_ARGS_MAX ? xe->args_len : QJ_ARGS_MAX;

		/* As /proc/PID/cmdline is read, without the NULs at its end. */
		memcpy(args, xe->args, n);
		while (n && !args[n - 1])
			n--;
		args_line(args, n);
		text_clean(args, n);
		before.args = n ? args : NULL;
	}
	if (p) {
		if (x) {
			p->cpu_ns = x->cpu_ns;
			p->end_ns = ts;
		}
		before.links = p->links;
		p->links = (struct linkset){0};
		before.bin = p->bin;
		before.attached_ns = p->attached_ns;
		before.follows_ns = p->follows_ns;
		procs_end(e, p, "exec", false);
	}
	e->scope->execd(e, pid, &before, ts);
	/* What it runs now starts with the CPU it has used so far. */
	p = procs_find(e, pid);
	if (p && x)
		p->cpu_base_ns = x->cpu_ns;
	else if (x && e->scope->adopts) {
		/* -a: its QEMU, if it is one, is taken in when it reports. */
		*u64map_at(&e->exec_ts, (uint64_t)pid) = ts;
		*u64map_at(&e->exec_cpu, (uint64_t)pid) = x->cpu_ns;
	}
}

/* -a: execs whose program never reported (not a QEMU) are forgotten. */
static void forget_execs(struct engine *e, uint64_t now)
{
	for (size_t i = 0; i < e->exec_ts.cap; i++) {
		const struct u64map_ent *x = &e->exec_ts.e[i];
		uint64_t pid = x->slot - 1;

		if (!x->slot || now - x->val < 10 * GONE_NS)
			continue;
		u64map_take(&e->exec_ts, pid);
		u64map_take(&e->exec_cpu, pid);
		i--; /* (another entry may have moved here) */
	}
}

int procs_event(void *ctx, void *data, size_t size)
{
	struct engine *e = ctx;
	const struct qj_hdr *h = data;
	const struct qj_fork *f = data;
	struct proc *p;

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
		on_exec(e, h->pid, h->ts, size >= sizeof(struct qj_exec) ? data : NULL);
		return 0;
	case QJ_EV_EXIT:
		if (h->pid == (uint32_t)e->root.pid)
			e->root.ended = true;
		p = procs_find(e, h->pid);
		if (p && size >= sizeof(struct qj_exit)) {
			const struct qj_exit *x = data;

			p->cpu_ns = x->cpu_ns;
			p->start_ns = x->start_ns;
			p->end_ns = h->ts;
		}
		if (p)
			procs_end(e, p, "exit", true);
		return 0;
	}
	/* (A QEMU our pid namespace cannot see: -a in a container.) */
	if (!h->pid)
		return 0;
	p = procs_find(e, h->pid);
	if (!p) {
		/* -a: a QEMU that started after us; its early handshake comes
		 * first.  A tree knows its processes. */
		if (!e->scope->adopts)
			return 0;
		uint64_t exec_ts = u64map_take(&e->exec_ts, h->pid);

		p = procs_new(e, h->pid, NULL, false);
		if (exec_ts) {
			/* A program exec'd: from the exec on. */
			p->after_exec = true;
			p->cpu_base_ns = u64map_take(&e->exec_cpu, h->pid);
		}
		procs_begin(e, p, NULL, 0, exec_ts ? exec_ts : h->ts);
	}
	session_event(&p->s, data, size);
	if (p->t->stock && !p->known && p->s.jm.guest.base_known) {
		p->known = true;
		if (probes_known(&e->probes, h->pid, p->s.jm.guest.base))
			pr_dbg("pid %d: cannot follow its forks and exit: %s", h->pid,
			       strerror(errno));
	}
	return 0;
}

void procs_block(void *ctx, const struct qj_block *r)
{
	struct engine *e = ctx;
	struct proc *p = procs_find(e, r->hdr.pid);

	if (p)
		session_event(&p->s, r, sizeof(*r));
}

void procs_tick(struct engine *e, uint64_t now, bool reap)
{
	if (reap && e->exec_ts.n)
		forget_execs(e, now);
	for (size_t b = 0; b < PIDTAB_BUCKETS; b++) {
		struct pidtab_node **pp = &e->procs.b[b];

		while (*pp) {
			struct proc *p = proc_of(*pp);

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
					procs_end(e, p, "gone", true);
					continue;
				}
			}
			pp = &p->node.next;
		}
	}
}

void procs_end_all(struct engine *e, const char *why)
{
	for (size_t b = 0; b < PIDTAB_BUCKETS; b++)
		while (e->procs.b[b])
			procs_end(e, proc_of(e->procs.b[b]), why, false);
}

void procs_free_all(struct engine *e)
{
	u64map_free(&e->exec_ts);
	u64map_free(&e->exec_cpu);
	for (size_t b = 0; b < PIDTAB_BUCKETS; b++)
		while (e->procs.b[b])
			proc_free(e, proc_of(pidtab_remove(&e->procs, &e->procs.b[b])));
}

/* Ask every QEMU that counts for its counts so far; how many were asked. */
size_t procs_request_counts(struct engine *e)
{
	size_t asked = 0;

	pidtab_for_each(&e->procs, n)
	{
		struct proc *p = proc_of(n);

		if (p->s.cnt && tb_counts_request(p->s.cnt, p->s.mem_fd))
			asked++;
	}
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
		pidtab_for_each(&e->procs, n)
		{
			struct proc *p = proc_of(n);

			waiting |= p->s.cnt && p->s.cnt->answered < p->s.cnt->requested;
		}
	}
	if (waiting)
		pr_warn("QEMU did not hand over its last counts: they are those of up to a second "
			"before");
}

/*
 * QEMU's linux-user options that take an argument (linux-user/main.c's
 * arg_table: 10.2.2's, and 7.2's -p); the others take none.
 */
static bool qemu_option_takes_arg(const char *opt, size_t len)
{
	static const char with_arg[] =
		" g L s cpu E U 0 r B R t d dfilter D tb-size seed trace plugin p ";

	for (const char *at = with_arg; (at = strstr(at + 1, " ")) && at[1];)
		if (!strncmp(at + 1, opt, len) && at[1 + len] == ' ')
			return true;
	return false;
}

/* The word of LINE after the one at AT (words are split by spaces). */
static const char *next_word(const char *at)
{
	const char *sp = strchr(at, ' ');

	return sp ? sp + 1 : at + strlen(at);
}

/*
 * The guest's command line in QEMU's: from the guest program on, past
 * QEMU's own name and options, as QEMU's parse_args() reads them (-opt
 * or --opt, an argument for some, -- to end them).  QEMU started by
 * binfmt_misc with flag P has the program's path, then the guest's own
 * argv[0]: the guest's command line starts there.  A line of QEMU alone
 * (a process gone before it was read) stays as it is.
 */
char *proc_command(const char *cmdline, bool argv0, bool system)
{
	const char *at = system ? cmdline : next_word(cmdline);

	while (!system && *at == '-') {
		const char *opt = at + 1, *end = next_word(at);
		size_t len;

		at = end;
		if (*opt == '-')
			opt++;
		len = (size_t)(end - opt) - (*end ? 1 : 0);
		if (!len) /* "--" */
			break;
		if (qemu_option_takes_arg(opt, len))
			at = next_word(at);
	}
	if (argv0 && !system && *at)
		at = next_word(at);
	return xstrdup(*at ? at : cmdline);
}

/* Was PID started by binfmt_misc with flag P (AT_FLAGS_PRESERVE_ARGV0)? */
bool proc_preserves_argv0(pid_t pid)
{
	uint64_t flags;

	return proc_auxv(pid, AT_FLAGS, &flags) && (flags & AT_FLAGS_PRESERVE_ARGV0);
}
