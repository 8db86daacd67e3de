// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * One run of the tool: start (launch or find the QEMU, load the BPF
 * object while QEMU initializes, attach), one loop that drains the ring
 * buffer and ticks the handshakes, the profiler and its intervals, and
 * stop (detach, drain, complete every process's files, the summary).
 */
#include "engine/engine.h"
#include "engine/detach.h"
#include "engine/privileges.h"
#include "engine/warmup.h"
#include "naming/ksyms.h"
#include "profiler/top.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <linux/types.h>
#include "qemu-jitbpf.h"
#include "sample.h"

static int libbpf_print_fn(enum libbpf_print_level level, const char *format, va_list args)
{
	if (level == LIBBPF_DEBUG && verbose < 2)
		return 0;
	if (level == LIBBPF_INFO && !verbose)
		return 0;
	return vfprintf(stderr, format, args);
}

/* --profile with no FILE: profile-PID.folded (-a: profile.folded) in -o DIR or here. */
static void default_profile(struct engine_opts *o, pid_t pid)
{
	static char path[PATH_MAX];
	char name[64];

	if (o->prof.nfiles || !o->profile_out)
		return;
	if (pid)
		snprintf(name, sizeof(name), "profile-%d.folded", pid);
	else
		snprintf(name, sizeof(name), "profile.folded");
	snprintf(path, sizeof(path), "%s%s%s", o->outdir ? o->outdir : "", o->outdir ? "/" : "",
		 name);
	o->prof.files = xrealloc(o->prof.files, sizeof(char *));
	o->prof.files[0] = path;
	o->prof.nfiles = 1;
}

/* A tree: the QEMU the user named, launched or running, and its session. */
static int find_root(struct engine *e, const struct binary **bin)
{
	const struct engine_opts *o = e->o;
	/*
	 * A QEMU that can hold its reports runs the guest while we attach
	 * (with calls instrumented from its first block when we want them),
	 * unless we sample: the sampler needs to know where every vCPU's
	 * registers are from the start.
	 */
	enum target_hold hold = o->profile ? HOLD_NONE : HOLD_REPORTS;
	struct proc *p;
	int err;

	if (hold && o->uftrace)
		hold = HOLD_CALLS;
	if (o->cmd)
		err = target_launch(&e->root, o->cmd, o->jitdump ? o->outdir : NULL, hold,
				    o->cov.counts);
	else
		err = target_attach(&e->root, o->pid);
	if (err) {
		if (o->cmd && err == -ECHILD)
			pr_err("%s did not start", o->cmd[0]);
		return err;
	}
	if (e->root.native) {
		if (o->nguest_elves || o->nguest_syms) {
			pr_err("%s is not a QEMU: --guest-elf and --guest-symbols name one QEMU's "
			       "guest",
			       e->root.exe);
			return -EINVAL;
		}
		pr_dbg("%s is not a QEMU: following the QEMUs it runs", e->root.exe);
		return 0;
	}
	p = procs_new(e, e->root.pid, &e->root, false);
	if (p->s.uft)
		uftrace_begin(p->s.uft, e->root.pid, mono_ns());
	err = handshake_init(&p->s.hs, &e->root);
	for (int i = 0; !err && i < o->nguest_elves; i++)
		err = guest_add_elf_spec(&p->s.jm.guest, o->guest_elves[i]);
	for (int i = 0; !err && i < o->nguest_syms; i++)
		err = guest_add_symbols_spec(&p->s.jm.guest, o->guest_syms[i]);
	if (err)
		return err;
	*bin = scope_binary(e, e->root.exe, e->root.pid);
	return *bin ? 0 : -ENOTSUP;
}

/* --push: each interval written is spooled for the sender. */
static int push_cb(void *ctx, const struct profile *prof, time_t from, time_t until)
{
	return push_interval(ctx, prof, from, until);
}

/*
 * The guest frame chains to walk: those of the QEMUs known now (-a's
 * binaries, a tree's first QEMU), all if a tree starts with a command
 * that is no QEMU or a binary's name does not say.
 */
static unsigned int walkers(const struct engine *e)
{
	unsigned int w = 0;

	if (e->tree)
		return e->root.native ? QJ_WALK_ALL : sampler_walkers(e->root.exe);
	for (size_t i = 0; i < e->nbins; i++)
		w |= e->bins[i]->via_proc ? QJ_WALK_ALL : sampler_walkers(e->bins[i]->path);
	return w ? w : QJ_WALK_ALL;
}

/* ksym_extras' FILL: the kernel frames of BPF programs, ours first. */
static void name_progs(void *ctx)
{
	struct engine *e = ctx;

	probes_name_progs(&e->probes, e->prof.sm);
}

static int load(struct engine *e, bool system)
{
	const struct engine_opts *o = e->o;
	struct probe_opts po = {
		.code = engine_wants_code(o),
		.jitdump = o->jitdump,
		.calls = o->uftrace != NULL,
		.counts = o->cov.counts,
		.profile = o->profile,
		/* -a: QEMUs of every kind; a tree: the kind of its first. */
		.linux_user = !e->tree || !system,
		.system = !e->tree || system,
		.tree = e->tree,
		/* Creating the ring costs ~0.3 ms per MiB at start-up. */
		.ring_bytes = o->ringbuf_mb << 20,
	};
	int err = kernel_layout(&po.layout);

	if (!err)
		err = probes_load(&e->probes, &po);

	if (!err && o->profile) {
		err = profiler_open(&e->prof, &o->prof, probes_ring_fd(&e->probes),
				    probes_procs_fd(&e->probes), &po.layout.pidns, walkers(e),
				    /* vCPU threads at once: a tree's few, a host's many */
				    e->tree ? 1024 : 16384);
		e->profiling = !err;
		if (e->profiling)
			ksym_extras(name_progs, e);
		if (e->pusher) {
			e->prof.on_interval = push_cb;
			e->prof.on_interval_ctx = e->pusher;
		}
	}
	if (err)
		return err;
	e->rb = ring_buffer__new(probes_ring_fd(&e->probes), procs_event, e, NULL);
	if (!e->rb) {
		err = -errno;
		pr_err("cannot create the ring buffer: %s", strerror(-err));
	}
	return err;
}

/*
 * A launched QEMU starts while we load our programs: 5-15 ms of CPU, most
 * of it in the kernel's verifier, where nothing preempts us until the next
 * tick (4 ms here).  On a CPU QEMU wanted, that stalled QEMU for a tick in
 * half the runs on two CPUs.  So we load in a thread that only takes CPUs
 * nobody else wants (SCHED_IDLE), raised to a normal thread after
 * QJ_IDLE_LOAD_MS if a busy host has none to spare.  Raising it needs
 * CAP_SYS_NICE; without, we load as before.
 */
#define QJ_IDLE_LOAD_MS 20

struct idle_load {
	struct engine *e;
	bool system;
	int err;
};

static void *idle_load_main(void *arg)
{
	struct idle_load *l = arg;
	struct sched_param none = {0};

	sched_setscheduler(0, SCHED_IDLE, &none);
	l->err = load(l->e, l->system);
	return NULL;
}

static int load_beside(struct engine *e, bool system)
{
	struct idle_load l = {e, system, 0};
	struct sched_param none = {0};
	struct timespec until;
	pthread_t th;

	if (!e->root.launched || !may_raise_priority() ||
	    pthread_create(&th, NULL, idle_load_main, &l))
		return load(e, system);
	until = realtime_in_ms(QJ_IDLE_LOAD_MS);
	if (pthread_timedjoin_np(th, NULL, &until)) {
		pthread_setschedparam(th, SCHED_OTHER, &none);
		pthread_join(th, NULL);
	}
	return l.err;
}

/* A tree: follow its first process, attach to it, ask for its handshake. */
static int attach_tree(struct engine *e, const struct binary *bin)
{
	struct proc *root = procs_find(e, e->root.pid);
	int err = probes_follow(&e->probes, e->root.pid);

	/* A command that is no QEMU: followed, and attached to nothing yet. */
	if (!err && e->root.native) {
		err = probes_attach_tasks(&e->probes, &e->links);
		if (!err && e->profiling)
			err = profiler_start(&e->prof);
		if (!err) {
			e->attached_ns = mono_ns();
			target_resume(&e->root);
		}
		return err;
	}

	/* It came before the profiler did. */
	if (e->profiling)
		root->s.smp = profiler_follow(&e->prof, e->root.pid);

	if (!err)
		err = probes_attach_tasks(&e->probes, &e->links);
	if (!err)
		err = scope_attach(e, root, bin);
	if (!err && e->profiling)
		err = profiler_start(&e->prof);
	if (!err)
		err = handshake_start(&root->s.hs);
	if (err)
		return err;
	e->attached_ns = root->s.hs.attached_ns;
	target_resume(&e->root);
	pr_dbg("attached to %s (pid %d)", e->root.exe, e->root.pid);
	return 0;
}

/* -a: every binary, for every process; the QEMUs that run are asked. */
static int attach_host(struct engine *e)
{
	int err = probes_attach_tasks(&e->probes, &e->links);

	if (!err)
		err = scope_host_attach(e);
	if (!err && e->profiling)
		err = profiler_start(&e->prof);
	if (err)
		return err;
	e->attached_ns = mono_ns();
	scope_host_running(e);
	return 0;
}

/* A tree: has the handshake of its first QEMU come, complete?  Ask again
 * while it has not; an error when it is too late or came incomplete. */
static int check_root(struct engine *e)
{
	struct proc *p = procs_find(e, e->root.pid);
	struct session *s;
	int err;

	if (!p || p->t != &e->root)
		return 0;
	s = &p->s;
	err = handshake_poll(&s->hs, mono_ns());
	if (err == -ETIMEDOUT)
		pr_err("QEMU (pid %d) did not answer %u attach requests in %.0f s", e->root.pid,
		       s->hs.asks, QJ_HANDSHAKE_TIMEOUT_NS / 1e9);
	if (!err && s->hs.answered && !s->hs.checked) {
		s->hs.checked = true;
		err = session_check_handshake(s, engine_wants_code(e->o));
	}
	return err;
}

/* --top: read the keys, redraw every second; false once the user quits. */
static bool top_tick(struct engine *e, uint64_t now, uint64_t *last)
{
	struct top_info info = {e->root.pid, e->o->prof.freq, profiler_lost(&e->prof)};
	int key;

	while ((key = top_key())) {
		if (key == 'q')
			return false;
		if (key == 'z')
			profile_reset(&e->prof.prof);
	}
	if (now - *last >= 1000000000ull) {
		*last = now;
		top_render(&e->prof.prof, &info);
	}
	return true;
}

/* Is there anything left to follow? */
static bool following(struct engine *e)
{
	if (!e->tree)
		return true;
	/* A QEMU whose last thread has exited has told us all: the end of
	 * the run overlaps with the kernel freeing its memory (a few ms),
	 * and its status is collected last (exit_code()). */
	return (!e->root.ended && target_alive(&e->root)) || e->nprocs;
}

/*
 * Until Ctrl-C, -d, or the end of the tree.  The BPF side wakes us only
 * for what we act on at once (handshakes, a tree's forks and execs) and
 * when the ring is a quarter full (qj_submit()): otherwise wait
 * QJ_IDLE_MS, then drain what is there, but a bounded number of records
 * at a time: a guest that makes records faster than we read them
 * (millions of calls a second) would keep an unbounded drain from ever
 * returning.  It loses events instead, counted, and -d and Ctrl-C still
 * stop us (a QEMU that knows how waits for us instead: procs_tick() tells
 * it how far we have read its calls).  While the ring had more, no wait.
 */
static int loop(struct engine *e)
{
	const struct engine_opts *o = e->o;
	uint64_t start = mono_ns(), last_status = 0, last_top = 0, last_reap = start;
	bool busy = false, tty = isatty(STDERR_FILENO) && o->pid && !o->top;
	int err = 0, fd = ring_buffer__epoll_fd(e->rb);

	if (o->top)
		top_start();
	while (!*e->exiting) {
		uint64_t now;
		bool reap;

		if (e->tree) {
			target_wait(&e->root, fd, busy ? 0 : QJ_IDLE_MS);
		} else {
			struct pollfd pfd = {fd, POLLIN, 0};

			poll(&pfd, 1, busy ? 0 : QJ_IDLE_MS);
		}
		err = ring_buffer__consume_n(e->rb, QJ_CONSUME_MAX);
		busy = err >= QJ_CONSUME_MAX;
		if (err < 0 && err != -EINTR) {
			pr_err("reading the ring buffer: %s", strerror(-err));
			break;
		}
		now = mono_ns();
		/* A sample waits for TB reports behind it in the ring: while
		 * we lag, time is what we have read, not the clock. */
		e->heard_ns = busy && e->ring_ts < now ? e->ring_ts : now;
		reap = !busy && now - last_reap >= 1000000000ull;
		if (reap)
			last_reap = now;
		procs_tick(e, now, reap);
		if (reap) {
			retention_tick(&e->ret, now);
			detach_reap();
		}
		err = e->tree ? check_root(e) : 0;
		if (err)
			break;
		if (e->cov && coverage_tick(e->cov, &o->cov, e->heard_ns))
			e->err = e->err ? e->err : -EIO;
		/* --interval: each file has the counts of a second before. */
		if (reap && e->cov && o->cov.counts && o->cov.interval)
			procs_request_counts(e);
		if (e->profiling && profiler_interval(&e->prof, e->heard_ns, &e->bytes)) {
			pr_warn("could not write an interval's profile");
			e->err = e->err ? e->err : -EIO;
		}
		if ((o->duration && now - start >= o->duration * 1e9) || !following(e))
			break;
		if (o->top && !top_tick(e, now, &last_top))
			break;
		if (tty && now - last_status > 1000000000ull) {
			last_status = now;
			engine_status_line(e);
		}
	}
	top_stop();
	if (last_status)
		fputc('\n', stderr);
	return err < 0 ? err : 0;
}

/* Call events lost at the end, after the last record of their thread. */
static bool mark_lost(void *ctx, uint32_t tid, uint64_t lost)
{
	return uftrace_lost_at_end(ctx, tid, lost);
}

/* A tree's uftrace data, complete (or dropped with the rest). */
static long long close_uftrace(struct engine *e)
{
	long long records = uftrace_records(e->uft);
	int err;

	/* A VM's tasks are vCPUs, not threads: its losses are marked where
	 * they show, and counted in the summary. */
	if (!e->root.system)
		probes_each_calls_lost(&e->probes, mark_lost, e->uft);
	err = uftrace_close(e->uft, e->root_exe ? e->root_exe : e->root.exe,
			    e->root_cmdline ? e->root_cmdline : e->root.exe, &e->bytes);
	e->uft = NULL;
	if (err) {
		pr_err("writing %s: %s", e->o->uftrace, strerror(-err));
		e->err = e->err ? e->err : err;
		return -1;
	}
	e->uftraces++;
	return records;
}

/* Our links, every set's, as fds of our own in *FDS, to drop; the count. */
static int gather(struct engine *e, int *warmup_fd, int **fds)
{
	int n = probes_collect(&e->probes, e->profiling ? e->prof.sm : NULL, fds);

	if (*warmup_fd >= 0) {
		*fds = xrealloc(*fds, (n + 1) * sizeof(**fds));
		(*fds)[n++] = *warmup_fd;
		*warmup_fd = -1;
	}
	linkset_clear(&e->links);
	for (size_t b = 0; b < PROC_BUCKETS; b++)
		for (struct proc *p = e->procs[b]; p; p = p->next)
			linkset_clear(&p->links);
	if (e->profiling)
		sampler_stop(e->prof.sm);
	return n;
}

/*
 * Our links, once a run's QEMUs have all ended: a thread hands them to
 * the detach helper (starting it, 0.3-0.5 ms) while the files are written.
 * (The ring is freed last: unmapping it would hold up the writers'
 * allocations.)
 */
struct release {
	pthread_t thread;
	bool started;
	int *fds, n;
};

static void *release_main(void *arg)
{
	struct release *r = arg;

	probes_drop(r->fds, r->n, true);
	return NULL;
}

static void release_start(struct engine *e, int *warmup_fd, struct release *r)
{
	r->n = gather(e, warmup_fd, &r->fds);
	r->started = !pthread_create(&r->thread, NULL, release_main, r);
	if (!r->started)
		release_main(r);
}

/*
 * Detach first, so that nothing stays enabled in a QEMU that runs on,
 * then drain; with nothing left running, drain, then write while a thread
 * hands our links to the detach helper (the kernel's waits are its).
 */
static void stop(struct engine *e, int *warmup_fd, uint64_t t0)
{
	bool running = !e->tree || following(e);
	struct release rel = {0};
	long long uft_records = -1;

	pr_dbg("stopping after %.0f ms", (mono_ns() - t0) / 1e6);
	if (running) {
		int *fds, n;

		if (e->cov && e->o->cov.counts)
			procs_last_counts(e);
		n = gather(e, warmup_fd, &fds);
		probes_drop(fds, n, false);
		pr_dbg("detached after %.0f ms", (mono_ns() - t0) / 1e6);
	}
	ring_buffer__consume(e->rb);
	pr_dbg("drained after %.0f ms", (mono_ns() - t0) / 1e6);
	if (!running)
		release_start(e, warmup_fd, &rel);
	procs_end_all(e, running ? "still running" : "exit");
	if (e->profiling) {
		int err = profiler_finish(&e->prof, !e->nameless, &e->bytes);

		e->err = e->err ? e->err : err;
	}
	if (e->cov && !e->nameless) {
		int err = coverage_finish(e->cov, &e->o->cov);

		e->err = e->err ? e->err : err;
	}
	/* What waits in the spool gets a few seconds; the rest waits for
	 * the next run. */
	push_close(e->pusher, 5000);
	e->pusher = NULL;
	if (e->uft && e->nameless) {
		uftrace_discard(e->uft);
		e->uft = NULL;
	} else if (e->uft) {
		uft_records = close_uftrace(e);
	}
	pr_dbg("files written after %.0f ms", (mono_ns() - t0) / 1e6);
	if (verbose)
		probes_report_time(&e->probes, e->profiling ? e->prof.sm : NULL);
	engine_summary(e, uft_records);
	if (rel.started)
		pthread_join(rel.thread, NULL);
}

static int open_uftrace(struct engine *e)
{
	const char *dir = e->o->uftrace;

	if (e->tree) {
		e->uft = uftrace_open(dir, &e->o->ufilter);
		return e->uft ? 0 : -EINVAL;
	}
	/* -a: one directory per process in DIR. */
	if (mkdir(dir, 0755) && errno != EEXIST) {
		pr_err("cannot create %s: %s", dir, strerror(errno));
		return -errno;
	}
	return 0;
}

/*
 * What a launched QEMU's exit means for ours, as with strace or time:
 * its status when it failed; otherwise 1 on our own error.
 */
static int exit_code(struct engine *e, int err)
{
	int code;

	/* Collect a launched QEMU that has ended, or that exited meanwhile. */
	target_reap(&e->root);
	if (!target_alive(&e->root) && e->tree && e->root.reaped)
		pr_dbg("%s used %.3f s of CPU, peak RSS %ld KiB",
		       e->root.native ? "the command" : "QEMU", e->root.cpu_s, e->root.maxrss_kib);
	code = target_exit_code(&e->root);
	if (code > 0)
		return code;
	return err ? 1 : 0;
}

static void free_all(struct engine *e)
{
	procs_free_all(e);
	if (e->uft)
		uftrace_discard(e->uft);
	ring_buffer__free(e->rb);
	if (e->profiling)
		profiler_free(&e->prof);
	if (e->cov) {
		coverage_free(e->cov);
		free(e->cov);
	}
	push_close(e->pusher, 0);
	probes_free(&e->probes);
	linkset_clear(&e->links);
	free(e->links.v);
	for (size_t i = 0; i < e->nbins; i++) {
		binary_free(e->bins[i]);
		free(e->bins[i]);
	}
	free(e->bins);
	target_free(&e->root);
	free(e->root_map);
	free(e->root_marker);
	free(e->root_exe);
	free(e->root_cmdline);
	retention_free(&e->ret);
}

int engine_run(struct engine_opts *o, volatile sig_atomic_t *exiting)
{
	struct engine e = {.o = o, .exiting = exiting, .tree = !o->all};
	const struct binary *bin = NULL;
	struct warmup *warm = NULL;
	int err, code, stats_fd = -1, warmup_fd = -1;
	uint64_t t0 = mono_ns();

	libbpf_set_print(libbpf_print_fn);
	retention_init(&e.ret, &o->keep_exited);
	if (o->cov.nfiles) {
		e.cov = xcalloc(1, sizeof(*e.cov));
		e.cov->counts = o->cov.counts;
		for (int i = 0; i < o->cov.nfiles; i++) {
			enum cov_format f = coverage_format(o->cov.files[i]);

			e.cov->hot_wanted |= f == COV_HOT;
			e.cov->lines_wanted |= f == COV_LCOV || f == COV_COBERTURA;
		}
		coverage_start(e.cov, &o->cov, t0);
	}
	if (o->push.url && !(e.pusher = push_open(&o->push))) {
		err = -EINVAL;
		goto out;
	}
	err = o->uftrace ? open_uftrace(&e) : 0;
	if (err)
		goto out;
	/* -v says what the BPF programs cost: the kernel counts it meanwhile. */
	if (verbose)
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (e.tree) {
		/* The first uprobe's grace period, paid while QEMU starts. */
		warm = warmup_start();
		err = find_root(&e, &bin);
	} else {
		err = scope_host(&e);
	}
	default_profile(o, e.tree ? e.root.pid : 0);
	if (!err)
		err = load_beside(&e, bin && bin->system);
	warmup_fd = warm ? warmup_finish(warm) : -1;
	if (err)
		goto out;
	pr_dbg("BPF loaded after %.0f ms", (mono_ns() - t0) / 1e6);
	err = e.tree ? attach_tree(&e, bin) : attach_host(&e);
	if (!err && e.pusher)
		err = push_start(e.pusher);
	if (err)
		goto out;
	pr_dbg("probes attached after %.0f ms", (mono_ns() - t0) / 1e6);
	err = loop(&e);
	if (err) {
		e.err = err;
		e.nameless = true;
	}
	stop(&e, &warmup_fd, t0);
	err = e.err;
out:
	top_stop();
	if (warmup_fd >= 0)
		close(warmup_fd);
	if (stats_fd >= 0)
		close(stats_fd);
	if (e.root.held)
		/* Never leave a QEMU we started stopped, or waiting for us. */
		target_kill(&e.root);
	code = exit_code(&e, err);
	free_all(&e);
	return code;
}
