// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * -a: every QEMU with the probes on this host.
 *
 * The USDT programs are attached to each QEMU binary for every process
 * (pid -1), so the kernel raises their semaphores in every process that
 * maps the binary, now or later.  A QEMU that runs already is asked for a
 * handshake, as with -p; one that starts later finds its probes enabled
 * before any guest code runs and reports everything at once (the early
 * handshake, no flush).  Records carry their process: each process has its
 * own session (docs/design.md).  BPF reports what becomes of the traced
 * processes, in order with their records: a fork (the child starts with a
 * copy of its parent's code map, as it inherits the code cache), an exec
 * and an exit, which complete the process's files and free its state.
 */
#include "host.h"
#include "detach.h"
#include "jitdump.h"
#include "perfmap.h"
#include "session.h"
#include "target.h"
#include "uftrace.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "qemu-jitbpf.h"
#include "qemu-jitbpf.skel.h"

#define PROC_BUCKETS 1024

struct proc {
	struct target t;
	struct session s;
	char *cmdline; /* for uftrace, read while it runs */
	bool asked;    /* it predates us: we asked for its handshake */
	bool given_up; /* and it never answered */
	struct proc *next;
};

struct binary {
	char *path;
	dev_t dev;
	ino_t ino;
};

struct host {
	const struct host_opts *o;
	struct qemu_jitbpf_bpf *skel;
	struct profiler prof;
	bool profiling;
	struct proc *procs[PROC_BUCKETS];
	size_t nprocs;
	struct binary *bins;
	size_t nbins, bins_cap;
	struct bpf_link **links;
	size_t nlinks, links_cap;
	uint64_t attached_ns;
	/* What happened, for the summary. */
	uint64_t seen, forks, tbs, flushes, bytes, maps, jitdumps, uftraces, nameless;
};

static struct proc **slot(struct host *h, pid_t pid)
{
	struct proc **pp = &h->procs[(unsigned)pid % PROC_BUCKETS];

	while (*pp && (*pp)->t.pid != pid)
		pp = &(*pp)->next;
	return pp;
}

/*
 * uftrace data of PID: DIR/PID, or after an exec of that pid, DIR/PID.1,
 * DIR/PID.2 and so on.
 */
static struct uftrace *open_uftrace(const char *dir, pid_t pid)
{
	struct uftrace *u;
	char *path = xasprintf("%s/%d", dir, pid);

	for (int i = 1; !access(path, F_OK); i++) {
		free(path);
		path = xasprintf("%s/%d.%d", dir, pid, i);
	}
	u = uftrace_open(path);
	free(path);
	return u;
}

/* A process we learn of; ASK: it predates us, ask for its handshake. */
static struct proc *proc_new(struct host *h, pid_t pid, bool ask)
{
	struct proc *p = xcalloc(1, sizeof(*p));

	target_observe(&p->t, pid);
	session_init(&p->s, &p->t, false, h->o->jitdump,
		     h->o->uftrace ? open_uftrace(h->o->uftrace, pid) : NULL);
	if (h->o->uftrace)
		p->cmdline = target_cmdline(&p->t);
	p->s.hs.pid = pid;
	p->s.hs.attached_ns = h->attached_ns;
	if (ask && !handshake_init(&p->s.hs, &p->t) && !handshake_start(&p->s.hs))
		p->asked = true;
	if (h->profiling)
		profiler_add_session(&h->prof, &p->s);
	*slot(h, pid) = p;
	h->nprocs++;
	h->seen++;
	pr_dbg("pid %d: %s%s", pid, p->t.exe[0] ? p->t.exe : "(gone)",
	       ask ? ", running before us" : "");
	return p;
}

static void proc_free(struct proc *p)
{
	if (p->s.jd)
		jitdump_discard(p->s.jd);
	if (p->s.uft)
		uftrace_discard(p->s.uft);
	session_free(&p->s);
	target_free(&p->t);
	free(p->cmdline);
	free(p);
}

/* PID exited or exec'd (or we stop): complete its files, free its state. */
static void proc_end(struct host *h, struct proc **pp, const char *why)
{
	struct proc *p = *pp;
	struct session *s = &p->s;
	bool named = s->hs.answered && s->layout_known && s->guest.nimgs;
	char path[64];

	if (h->profiling)
		profiler_end_session(&h->prof, s);
	if (!named) {
		pr_dbg("pid %d (%s): no complete handshake, no files", p->t.pid, why);
		h->nameless++;
		if (s->jd)
			jitdump_discard(s->jd);
		if (s->uft)
			uftrace_discard(s->uft);
		s->jd = NULL;
		s->uft = NULL;
	}
	if (named && h->o->perfmap) {
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", p->t.pid);
		if (!perfmap_write(&s->code, path, p->t.uid, p->t.gid, &s->bytes)) {
			h->maps++;
			pr_dbg("pid %d (%s): wrote %s", p->t.pid, why, path);
		}
	}
	if (s->jd) {
		/* A fork's child that never got its own marker has none. */
		if (s->marker_path && !jitdump_close(s->jd, &s->bytes))
			h->jitdumps++;
		else
			jitdump_discard(s->jd);
		s->jd = NULL;
	}
	if (s->uft) {
		if (!uftrace_close(s->uft, p->t.pid, &s->guest,
				   s->exe_path ? s->exe_path : p->t.exe,
				   p->cmdline ? p->cmdline : "", &s->bytes))
			h->uftraces++;
		s->uft = NULL;
	}
	h->tbs += s->tbs;
	h->flushes += s->flushes;
	h->bytes += s->bytes;
	*pp = p->next;
	h->nprocs--;
	proc_free(p);
}

static void on_fork(struct host *h, const struct qj_fork *r)
{
	struct proc **pp = slot(h, r->hdr.pid), *c;

	if (!*pp)
		return;
	if (*slot(h, r->child))
		proc_end(h, slot(h, r->child), "pid reused");
	c = proc_new(h, r->child, false);
	session_fork(&c->s, &(*pp)->s);
	h->forks++;
	/* perf honours only a marker the child mapped itself: ask it for a
	 * handshake, which makes one (and flushes its code cache). */
	if (h->o->jitdump && !handshake_init(&c->s.hs, &c->t) && !handshake_start(&c->s.hs))
		c->asked = true;
}

/* ring_buffer_sample_fn: each record to the session of its process. */
static int host_event(void *ctx, void *data, size_t size)
{
	struct host *h = ctx;
	const struct qj_hdr *hd = data;
	struct proc **pp;

	if (size < sizeof(*hd))
		return 0;
	switch (hd->type) {
	case QJ_EV_FORK:
		if (size >= sizeof(struct qj_fork))
			on_fork(h, data);
		return 0;
	case QJ_EV_EXEC:
	case QJ_EV_EXIT:
		pp = slot(h, hd->pid);
		if (*pp)
			proc_end(h, pp, hd->type == QJ_EV_EXEC ? "exec" : "exit");
		return 0;
	}
	pp = slot(h, hd->pid);
	/* A QEMU that started after us: its early handshake comes first. */
	if (!*pp)
		proc_new(h, hd->pid, false);
	session_event(&(*pp)->s, data, size);
	if (hd->type == QJ_EV_PROLOGUE && h->profiling)
		samples_prepare(&(*pp)->s);
	return 0;
}

static bool known_binary(struct host *h, const struct stat *st)
{
	for (size_t i = 0; i < h->nbins; i++)
		if (h->bins[i].dev == st->st_dev && h->bins[i].ino == st->st_ino)
			return true;
	return false;
}

/* Watch BINARY if it has our probes; -errno (quietly) if not. */
static int add_binary(struct host *h, const char *binary)
{
	struct stat st;

	if (stat(binary, &st))
		return -errno;
	if (known_binary(h, &st))
		return 0;
	if (!elf_has_usdt(binary, "qemu", "tb_gen_code_batch") ||
	    !elf_has_usdt(binary, "qemu", "jit_attach_request"))
		return -ENOTSUP;
	grow(&h->bins, &h->bins_cap, h->nbins + 1, sizeof(*h->bins));
	h->bins[h->nbins++] = (struct binary){xstrdup(binary), st.st_dev, st.st_ino};
	pr_dbg("watching %s", binary);
	return 0;
}

/*
 * Each process of this host: FN(h, pid, exe), where exe is what
 * /proc/PID/exe resolves to (not ours, not deleted).
 */
static void each_process(struct host *h, void (*fn)(struct host *h, pid_t pid, const char *exe))
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t self = getpid();

	if (!d)
		return;
	while ((e = readdir(d))) {
		char link[64], exe[PATH_MAX];
		pid_t pid = atoi(e->d_name);
		ssize_t n;

		if (pid <= 0 || pid == self)
			continue;
		snprintf(link, sizeof(link), "/proc/%d/exe", pid);
		n = readlink(link, exe, sizeof(exe) - 1);
		if (n <= 0)
			continue;
		exe[n] = 0;
		if (strstr(exe, " (deleted)"))
			continue;
		fn(h, pid, exe);
	}
	closedir(d);
}

static void find_binary(struct host *h, pid_t pid, const char *exe)
{
	(void)pid;
	add_binary(h, exe);
}

static void find_qemu(struct host *h, pid_t pid, const char *exe)
{
	struct stat st;

	if (!stat(exe, &st) && known_binary(h, &st) && !*slot(h, pid))
		proc_new(h, pid, true);
}

static int add_link(struct host *h, struct bpf_link *l, const char *what, const char *binary)
{
	if (!l) {
		int err = -errno;

		pr_err("cannot attach to qemu:%s in %s: %s", what, binary, strerror(-err));
		return err;
	}
	grow(&h->links, &h->links_cap, h->nlinks + 1, sizeof(*h->links));
	h->links[h->nlinks++] = l;
	return 0;
}

/*
 * Every process of BINARY, now and later: each program loaded is named
 * after its probe; jit_attach comes last, as attaching it starts the
 * handshake of a QEMU that runs already.
 */
static int attach_binary(struct host *h, const char *binary)
{
	struct bpf_program *prog;
	int err;

	if (h->profiling) {
		err = profiler_attach(&h->prof, -1, binary);
		if (err)
			return err;
	}
	bpf_object__for_each_program(prog, h->skel->obj)
	{
		const char *name = bpf_program__name(prog);

		if (!bpf_program__autoload(prog) ||
		    strcmp(bpf_program__section_name(prog), "usdt") ||
		    prog == h->skel->progs.jit_attach)
			continue;
		/* Guest images come from linux-user's probes or from the
		 * system emulator's: each binary has one kind. */
		if ((prog == h->skel->progs.linux_user_elf_image ||
		     prog == h->skel->progs.linux_user_guest_base ||
		     prog == h->skel->progs.loader_elf_image ||
		     prog == h->skel->progs.jit_guest_ram) &&
		    !elf_has_usdt(binary, "qemu", name))
			continue;
		err = add_link(h, bpf_program__attach_usdt(prog, -1, binary, "qemu", name, NULL),
			       name, binary);
		if (err)
			return err;
	}
	return add_link(h,
			bpf_program__attach_usdt(h->skel->progs.jit_attach, -1, binary, "qemu",
						 "jit_attach", NULL),
			"jit_attach", binary);
}

static int load(struct host *h)
{
	struct qemu_jitbpf_bpf *skel = qemu_jitbpf_bpf__open();
	size_t ring = h->o->ringbuf_mb << 20;
	int err;

	if (!skel) {
		err = -errno;
		pr_err("cannot open the BPF programs: %s", strerror(-err));
		return err;
	}
	h->skel = skel;
	bpf_program__set_autoload(skel->progs.jitdump_marker, h->o->jitdump);
	bpf_program__set_autoload(skel->progs.jit_calls, h->o->uftrace != NULL);
	err = bpf_map__set_max_entries(skel->maps.events, ring);
	skel->rodata->wake_bytes = QJ_WAKE_BYTES(ring);
	if (!err)
		err = qemu_jitbpf_bpf__load(skel);
	if (err) {
		pr_err("cannot load the BPF programs: %s", strerror(-err));
		return err;
	}
	if (h->o->prof) {
		err = profiler_open(&h->prof, h->o->prof, bpf_map__fd(skel->maps.events),
				    bpf_map__fd(skel->maps.procs));
		if (err)
			return err;
		h->profiling = true;
	}
	return 0;
}

/* Follow the processes: fork, exec and exit come from BPF. */
static int attach_tasks(struct host *h)
{
	struct bpf_program *progs[] = {h->skel->progs.qemu_fork, h->skel->progs.qemu_exec,
				       h->skel->progs.qemu_exit};

	for (size_t i = 0; i < sizeof(progs) / sizeof(*progs); i++) {
		struct bpf_link *l = bpf_program__attach(progs[i]);

		if (!l) {
			int err = -errno;

			pr_err("cannot attach %s: %s", bpf_program__name(progs[i]), strerror(-err));
			return err;
		}
		grow(&h->links, &h->links_cap, h->nlinks + 1, sizeof(*h->links));
		h->links[h->nlinks++] = l;
	}
	return 0;
}

static void tick(struct host *h, uint64_t now)
{
	for (size_t b = 0; b < PROC_BUCKETS; b++) {
		for (struct proc *p = h->procs[b]; p; p = p->next) {
			if (p->asked && !p->given_up && handshake_poll(&p->s.hs, now)) {
				p->given_up = true;
				pr_warn("QEMU (pid %d) did not answer our attach requests",
					p->t.pid);
			}
			if (h->profiling)
				profiler_resolve(&p->s, now);
		}
	}
}

/*
 * Drop every link, releasing them in parallel (detach.c): with several
 * binaries, one after the other would take a grace period each.
 */
static void stop(struct host *h)
{
	int progs[32], nprogs, *fds, n;

	if (!h->skel)
		return;
	nprogs = detach_prog_fds(h->skel->obj, h->profiling ? h->prof.sm : NULL, progs, 32);
	n = detach_collect(progs, nprogs, &fds);
	for (size_t i = 0; i < h->nlinks; i++)
		bpf_link__destroy(h->links[i]);
	h->nlinks = 0;
	if (h->profiling)
		sampler_stop(h->prof.sm);
	detach_close(fds, n);
	free(fds);
}

int host_run(const struct host_opts *o, volatile sig_atomic_t *exiting)
{
	struct host h = {.o = o};
	struct ring_buffer *rb = NULL;
	uint64_t start;
	bool busy = false;
	int err = 0;

	for (int i = 0; i < o->nqemus && !err; i++) {
		err = add_binary(&h, o->qemus[i]);
		if (err)
			pr_err("%s: %s", o->qemus[i],
			       err == -ENOTSUP
				       ? "not a QEMU with the qemu-jitbpf probes (make qemu)"
				       : strerror(-err));
	}
	if (err)
		goto out;
	each_process(&h, find_binary);
	if (!h.nbins) {
		pr_err("no QEMU with the qemu-jitbpf probes runs here; name the binaries to "
		       "watch with --qemu PATH");
		err = -ENOENT;
		goto out;
	}
	err = load(&h);
	if (err)
		goto out;
	rb = ring_buffer__new(bpf_map__fd(h.skel->maps.events), host_event, &h, NULL);
	if (!rb) {
		err = -errno;
		pr_err("cannot create the ring buffer: %s", strerror(-err));
		goto out;
	}
	err = attach_tasks(&h);
	for (size_t i = 0; i < h.nbins && !err; i++)
		err = attach_binary(&h, h.bins[i].path);
	if (!err && h.profiling)
		err = profiler_start(&h.prof);
	if (err)
		goto out;
	h.attached_ns = mono_ns();
	/* The QEMUs that predate us: ask each for its handshake. */
	each_process(&h, find_qemu);
	pr_dbg("attached to %zu binaries, %zu QEMU processes running", h.nbins, h.nprocs);

	start = mono_ns();
	while (!*exiting) {
		struct pollfd pfd = {ring_buffer__epoll_fd(rb), POLLIN, 0};

		poll(&pfd, 1, busy ? 0 : QJ_IDLE_MS);
		err = ring_buffer__consume_n(rb, QJ_CONSUME_MAX);
		busy = err >= QJ_CONSUME_MAX;
		if (err < 0 && err != -EINTR) {
			pr_err("reading the ring buffer: %s", strerror(-err));
			goto out;
		}
		err = 0;
		tick(&h, mono_ns());
		if (h.profiling && profiler_interval(&h.prof, mono_ns(), &h.bytes))
			pr_warn("could not write an interval's profile");
		if (o->duration && mono_ns() - start >= o->duration * 1e9)
			break;
	}
	stop(&h);
	ring_buffer__consume(rb);
	for (size_t b = 0; b < PROC_BUCKETS; b++)
		while (h.procs[b])
			proc_end(&h, &h.procs[b], "still running");
	if (h.profiling) {
		err = profiler_finish(&h.prof, true, &h.bytes);
		fprintf(stderr,
			"qemu-jitbpf: %" PRIu64 " samples at %u Hz, %" PRIu64 " samples lost\n",
			profiler_samples(&h.prof), o->prof->freq, profiler_lost(&h.prof));
	}
	fprintf(stderr,
		"qemu-jitbpf: %" PRIu64 " QEMU processes (%" PRIu64 " forked), %" PRIu64
		" perf maps, %" PRIu64 " jitdumps, %" PRIu64 " uftrace, %" PRIu64
		" without a handshake; %" PRIu64 " TBs, %" PRIu64 " flushes, %" PRIu64
		" bytes written, %" PRIu64 " events lost\n",
		h.seen, h.forks, h.maps, h.jitdumps, h.uftraces, h.nameless, h.tbs, h.flushes,
		h.bytes,
		(uint64_t)(h.skel->bss->counters[QJ_LOST_RECORDS] +
			   h.skel->bss->counters[QJ_LOST_CALLS]));
	for (int i = 0; h.profiling && i < o->prof->nfiles; i++)
		fprintf(stderr, "qemu-jitbpf: profile: %s\n", o->prof->files[i]);
out:
	stop(&h);
	ring_buffer__free(rb);
	for (size_t b = 0; b < PROC_BUCKETS; b++)
		while (h.procs[b]) {
			struct proc *p = h.procs[b];

			h.procs[b] = p->next;
			proc_free(p);
		}
	if (h.profiling)
		profiler_free(&h.prof);
	qemu_jitbpf_bpf__destroy(h.skel);
	for (size_t i = 0; i < h.nbins; i++)
		free(h.bins[i].path);
	free(h.bins);
	free(h.links);
	return err;
}
