// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * One run of the tool: start (launch or find the QEMU, load the BPF
 * object while QEMU initializes, attach), one loop that drains the ring
 * buffer and ticks the handshakes, the profiler and its intervals, and
 * stop (detach, drain, complete every process's files, the summary).
 */
#include "engine/engine.h"
#include "engine/scope.h"
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

/* --push: each interval written is spooled for the sender. */
static int push_cb(void *ctx, const struct profile *prof, time_t from, time_t until)
{
	return push_interval(ctx, prof, from, until);
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
		.linux_user = e->scope->every_kind || !system,
		.system = e->scope->every_kind || system,
		.tree = e->scope->follows_forks,
		/* Creating the ring costs ~0.3 ms per MiB at start-up. */
		.ring_bytes = o->ringbuf_mb << 20,
	};
	int err = kernel_layout(&po.layout);

	/* A tree may exec a stock QEMU at any time: its programs are ready. */
	po.stock = e->scope->follows_forks;
	for (size_t i = 0; i < e->nbins; i++)
		po.stock |= e->bins[i]->stock;
	if (!err)
		err = probes_load(&e->probes, &po);

	if (!err && o->profile) {
		struct profiler_opts prof = o->prof;

		/* --report and --timeline alone read only where each sample
		 * was, not its stack. */
		prof.stacks = o->profile_out || o->push.url || o->top || o->stacks;
		err = profiler_open(&e->prof, &prof, probes_ring_fd(&e->probes),
				    probes_procs_fd(&e->probes), &po.layout.pidns,
				    prof.stacks ? e->scope->walkers(e) : 0, e->scope->vcpus);
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

		e->scope->wait(e, fd, busy ? 0 : QJ_IDLE_MS);
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
		probes_stock_sweep(&e->probes, now, QJ_STOCK_SWEEP_NS, procs_block, e);
		procs_tick(e, now, reap);
		if (reap) {
			retention_tick(&e->ret, now);
			detach_reap();
		}
		err = e->scope->check ? e->scope->check(e) : 0;
		if (err)
			break;
		for_each_output(e, out) if ((*out)->tick)(*out)->tick(e, now, reap);
		if ((o->duration && now - start >= o->duration * 1e9) || !e->scope->following(e) ||
		    e->done)
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
	pidtab_for_each(&e->procs, n) linkset_clear(&proc_of(n)->links);
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
	bool running = e->scope->following(e);
	struct release rel = {0};
	uint64_t detached_ns;

	pr_dbg("stopping after %.0f ms", (mono_ns() - t0) / 1e6);
	if (running) {
		int *fds, n;

		if (e->cov && e->o->cov.counts)
			procs_last_counts(e);
		n = gather(e, warmup_fd, &fds);
		probes_drop(fds, n, false);
		pr_dbg("detached after %.0f ms", (mono_ns() - t0) / 1e6);
	}
	detached_ns = mono_ns();
	ring_buffer__consume(e->rb);
	pr_dbg("drained after %.0f ms", (mono_ns() - t0) / 1e6);
	if (running && e->scope->detached)
		e->scope->detached(e, detached_ns);
	if (!running)
		release_start(e, warmup_fd, &rel);
	procs_end_all(e, running ? PROC_RUNNING : "exit");
	for_each_output(e, out) if ((*out)->end)(*out)->end(e);
	/* What waits in the spool gets a few seconds; the rest waits for
	 * the next run. */
	push_close(e->pusher, 5000);
	e->pusher = NULL;
	pr_dbg("files written after %.0f ms", (mono_ns() - t0) / 1e6);
	if (verbose)
		probes_report_time(&e->probes, e->profiling ? e->prof.sm : NULL);
	/* --stacks alone says what it came for, as eu-stack does. */
	if (!e->o->stacks || verbose)
		engine_summary(e);
	if (rel.started)
		pthread_join(rel.thread, NULL);
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
	if (!target_alive(&e->root) && e->root.reaped)
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
	for_each_output(e, out) if ((*out)->free)(*out)->free(e);
	ring_buffer__free(e->rb);
	push_close(e->pusher, 0);
	probes_free(&e->probes);
	linkset_clear(&e->links);
	free(e->links.v);
	for (size_t i = 0; i < e->nbins; i++) {
		binary_free(e->bins[i]);
		free(e->bins[i]);
	}
	free(e->bins);
	for (size_t i = 0; i < e->nemulator_fds; i++)
		close(e->emulator_fds[i]);
	free(e->emulator_fds);
	target_free(&e->root);
	free(e->root_map);
	free(e->root_marker);
	free(e->root_exe);
	free(e->root_cmdline);
	retention_free(&e->ret);
}

/* What a run writes, in the order its hooks are called. */
static const struct output *const engine_outputs[] = {
	&output_report,	  &output_profile, &output_perfmap, &output_jitdump,
	&output_coverage, &output_uftrace, &output_stacks,
};

int engine_begin_outputs(struct engine *e)
{
	size_t n = 0;
	int err = 0;

	for (size_t i = 0; i < sizeof(engine_outputs) / sizeof(engine_outputs[0]); i++)
		if (engine_outputs[i]->wanted(e->o))
			e->outputs[n++] = engine_outputs[i];
	for_each_output(e, out) if (!err && (*out)->begin) err = (*out)->begin(e);
	return err;
}

int engine_run(struct engine_opts *o, volatile sig_atomic_t *exiting)
{
	struct engine e = {
		.o = o,
		.exiting = exiting,
		.scope = o->all ? &scope_host : &scope_tree,
		.uft_records = -1,
	};
	const struct binary *bin = NULL;
	int err, code, stats_fd = -1, warmup_fd = -1;
	uint64_t t0 = mono_ns();

	libbpf_set_print(libbpf_print_fn);
	retention_init(&e.ret, &o->keep_exited);
	err = engine_begin_outputs(&e);
	if (!err && o->push.url && !(e.pusher = push_open(&o->push)))
		err = -EINVAL;
	if (err)
		goto out;
	/* -v says what the BPF programs cost: the kernel counts it meanwhile. */
	if (verbose)
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	err = e.scope->find(&e, &bin);
	/* (-a's root is no process: pid 0.) */
	default_profile(o, e.root.pid);
	if (!err)
		err = load_beside(&e, bin && bin->system);
	warmup_fd = e.warm ? warmup_finish(e.warm) : -1;
	e.warm = NULL;
	if (err)
		goto out;
	pr_dbg("BPF loaded after %.0f ms", (mono_ns() - t0) / 1e6);
	err = e.scope->attach(&e, bin);
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
