// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The ring buffer's records, any type, any size, in any order, as the
 * BPF programs would hand them over: to one QEMU's session (session.c),
 * with jitdump, uftrace and the profiler's samples wanted, or through the
 * engine's dispatch (procs.c) that follows processes as they fork, exec
 * and exit, with every QEMU of the host (-a) or one tree.  The QEMU is
 * this process: what the tool reads of its memory and maps is ours.
 *
 * The input: a byte of options (OPT_*), a byte of more (MORE_*), then
 * records, each a 16-bit length (little-endian; REC_PAD set: zeroes fill
 * it up to its type's structure) and its bytes.  A record of type TICK is
 * the engine's tick at hdr.ts: samples old enough named, processes gone
 * reaped.  What a record may not do here: name files outside our
 * directory (image paths have it put before them), have a jitdump marker
 * other than ours written (marker records name ours), or touch another
 * process (pids are ours or ones that cannot exist).  A marker below
 * 4096, or a prologue below 64 KiB, is at that offset in ours (the
 * marker's mapping, a code buffer): the fuzzer cannot know where we are.
 * The perf map and jitdump of a session must then read back as their
 * formats say.
 */
#include "fuzz.h"
#include "outputs.h"
#include "engine/engine.h"
#include "engine/scope.h"
#include "engine/session.h"
#include "naming/symbols.h"
#include "profiler/profile.h"
#include "profiler/samples.h"
#include "profiler/unwind.h"
#include "util/util.h"
#include "writers/callfilter.h"
#include "writers/perfmap.h"
#include "writers/uftrace.h"

#include <dirent.h>
#include <errno.h>
#include <elf.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>

enum {
	OPT_PROCS = 1,	  /* through procs_event() */
	OPT_TREE = 2,	  /* with OPT_PROCS: a tree, not -a */
	OPT_SYSTEM = 4,	  /* a system emulator */
	OPT_INSN = 8,	  /* --perfmap-insn */
	OPT_PROFILE = 16, /* keep instructions; samples (not with OPT_PROCS) */
	OPT_JITDUMP = 32,
	OPT_UFTRACE = 64,
	OPT_FILTER = 128, /* uftrace's -F, -N, -D (MORE_TIME: -t) */
	MORE_DWARF = 1,	  /* --call-graph=dwarf */
	MORE_TIME = 2,
	MORE_PERFMAP = 4,
	MORE_COUNTS = 8, /* --coverage --coverage-counts */
	REC_PAD = 0x8000,
	REC_LEN = 0x7fff,
	TICK = 64,
};

/* Above any pid_max (PID_MAX_LIMIT is 2^22): no process has these. */
#define NO_PID (4 * 1024 * 1024 + 1)

static char dir[64], marker[128], udir[128], uall[128];
static void *marker_map;
static struct target self;
static struct callfilter filter, time_filter;
static FILE *devnull;
static uint8_t code_buffer[1 << 17];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rm_tree(const char *path)
{
	nftw(path, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void cleanup(void)
{
	rm_tree(dir);
}

/* The guest ELF files of the elf target's corpus, as DIR/e/NAME. */
static void copy_guests(void)
{
	char src[PATH_MAX + 32], dst[256], *slash;
	ssize_t n = readlink("/proc/self/exe", src, PATH_MAX);
	struct dirent *de;
	DIR *d;

	snprintf(dst, sizeof(dst), "%s/e", dir);
	mkdir(dst, 0700);
	src[n > 0 ? n : 0] = 0;
	/* The tree's, three levels above build/fuzz/bin/session, or here. */
	for (int i = 0; i < 4 && (slash = strrchr(src, '/')); i++)
		*slash = 0;
	strcat(src, "/fuzz/corpus/elf");
	d = opendir(src);
	if (!d)
		d = opendir("fuzz/corpus/elf");
	while (d && (de = readdir(d))) {
		char buf[1 << 16];
		int in, out;

		if (de->d_name[0] == '.')
			continue;
		snprintf(dst, sizeof(dst), "%s/e/%s", dir, de->d_name);
		in = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC);
		out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
			if (write(out, buf, n) != n)
				break;
		if (in >= 0)
			close(in);
		if (out >= 0)
			close(out);
	}
	if (d)
		closedir(d);
}

/* What a crash (no atexit) left in TMP, of runs that have ended. */
static void remove_stale(const char *tmp)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(tmp);

	while (d && (de = readdir(d))) {
		int pid, end = 0;

		if (sscanf(de->d_name, "qj-fuzz-session.%d%n", &pid, &end) == 1 &&
		    !de->d_name[end] && pid > 0 && kill(pid, 0) && errno == ESRCH) {
			snprintf(path, sizeof(path), "%s/%s", tmp, de->d_name);
			rm_tree(path);
		}
	}
	if (d)
		closedir(d);
}

static void setup(void)
{
	/* tmpfs if there is one: ext4 makes each file created cost. */
	const char *tmp = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";
	char why[128];
	int fd;

	remove_stale(tmp);
	snprintf(dir, sizeof(dir), "%s/qj-fuzz-session.%d", tmp, getpid());
	if (mkdir(dir, 0700))
		abort();
	atexit(cleanup);
	copy_guests();
	/* QEMU's jitdump marker, mapped as QEMU maps it. */
	snprintf(marker, sizeof(marker), "%s/jit-%d.dump", dir, getpid());
	fd = open(marker, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	marker_map = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (fd < 0 || marker_map == MAP_FAILED)
		abort();
	close(fd);
	snprintf(udir, sizeof(udir), "%s/u", dir);
	snprintf(uall, sizeof(uall), "%s/all", dir);
	if (target_observe(&self, getpid()))
		abort();
	self.exited = false;
	if (callfilter_add(&filter, "main", false, why, sizeof(why)) ||
	    callfilter_add(&filter, "^_?_?libc|fib[0-9]*", false, why, sizeof(why)) ||
	    callfilter_add(&filter, "leaf", true, why, sizeof(why)))
		abort();
	filter.depth = 3;
	time_filter.time_ns = 100;
	devnull = fopen("/dev/null", "we");
	for (size_t i = 0; i < sizeof(code_buffer); i++)
		code_buffer[i] = (uint8_t)(i * 7);
}

static pid_t pid_of(uint32_t v)
{
	return v & 3 ? NO_PID + (pid_t)(v & 3) - 1 : self.pid;
}

/* Its type's structure, for REC_PAD. */
static size_t type_size(uint32_t type)
{
	switch (type) {
	case QJ_EV_TBS:
		return sizeof(struct qj_tbs);
	case QJ_EV_PROLOGUE:
		return sizeof(struct qj_prologue);
	case QJ_EV_ATTACH:
		return sizeof(struct qj_attach);
	case QJ_EV_MARKER:
		return sizeof(struct qj_marker);
	case QJ_EV_IMAGE:
	case QJ_EV_LOADED_ELF:
	case QJ_EV_MMAP:
		return sizeof(struct qj_image);
	case QJ_EV_GUEST_BASE:
		return sizeof(struct qj_guest_base);
	case QJ_EV_CALLS:
		return sizeof(struct qj_calls);
	case QJ_EV_SAMPLE:
		return sizeof(struct qj_sample);
	case QJ_EV_WAIT_END:
		return sizeof(struct qj_wait_end);
	case QJ_EV_FORK:
		return sizeof(struct qj_fork);
	case QJ_EV_CALLS_LOST:
		return sizeof(struct qj_calls_lost);
	}
	return sizeof(struct qj_hdr);
}

/* A path QEMU reports, as one in our directory: no way out of it. */
static void confine(char *path)
{
	char buf[QJ_PATH_MAX];
	size_t n = strnlen(path, QJ_PATH_MAX);

	if (path[0] != '/')
		return;
	for (size_t i = 0; i + 1 < n; i++)
		if (path[i] == '.' && path[i + 1] == '.')
			path[i] = '_';
	snprintf(buf, sizeof(buf), "%s%.*s", dir, (int)n, path);
	memcpy(path, buf, QJ_PATH_MAX);
}

/* What the record may not do here (see the top). */
static void tame(uint8_t *r, size_t size)
{
	struct qj_hdr *h = (struct qj_hdr *)r;

	if (size < sizeof(*h))
		return;
	h->pid = (uint32_t)pid_of(h->pid);
	switch (h->type) {
	case QJ_EV_PROLOGUE:
		if (size >= sizeof(struct qj_prologue) && ((struct qj_prologue *)r)->host < 65536)
			((struct qj_prologue *)r)->host += (uintptr_t)code_buffer;
		break;
	case QJ_EV_IMAGE:
	case QJ_EV_LOADED_ELF:
	case QJ_EV_MMAP:
		if (size >= sizeof(struct qj_image))
			confine(((struct qj_image *)r)->path);
		break;
	case QJ_EV_MARKER:
		if (size >= sizeof(struct qj_marker)) {
			struct qj_marker *m = (struct qj_marker *)r;

			if (m->path[0]) {
				memset(m->path, 0, sizeof(m->path));
				strcpy(m->path, marker);
			}
			if (m->addr < 4096)
				m->addr += (uintptr_t)marker_map;
		}
		break;
	case QJ_EV_FORK:
		/* A new process: never the one that forks (the kernel's pids). */
		if (size >= sizeof(struct qj_fork)) {
			struct qj_fork *f = (struct qj_fork *)r;
			pid_t child = pid_of(f->child);

			f->child =
				(uint32_t)(child == (pid_t)h->pid ? pid_of(f->child + 1) : child);
		}
		break;
	}
}

/* The next record, in a buffer of its own (ASan sees past its end). */
static uint8_t *next_record(struct fuzz_in *in, size_t *size)
{
	uint16_t word;
	size_t len, full;
	uint32_t type = 0;
	uint8_t *r;

	if (in->left < 2)
		return NULL;
	memcpy(&word, in->p, 2);
	in->p += 2;
	in->left -= 2;
	len = word & REC_LEN;
	if (len > in->left)
		len = in->left;
	memcpy(&type, in->p, len < 4 ? len : 4);
	full = len;
	if ((word & REC_PAD) && type_size(type) > full)
		full = type_size(type);
	r = calloc(1, full ? full : 1);
	memcpy(r, in->p, len);
	in->p += len;
	in->left -= len;
	*size = full;
	tame(r, full);
	return r;
}

static bool is_tick(const uint8_t *r, size_t size)
{
	return size >= sizeof(struct qj_hdr) && ((const struct qj_hdr *)r)->type == TICK;
}

/* One QEMU's session, fed directly. */
static void run_session(struct fuzz_in *in, uint8_t opt, uint8_t more)
{
	/* As the engine has it: the files that name code need the prologue. */
	bool need_prologue = (more & MORE_PERFMAP) || (opt & (OPT_JITDUMP | OPT_PROFILE)), named;
	struct uftrace *u = NULL;
	struct coverage *cov;
	struct profile prof;
	struct session s;
	uint64_t bytes = 0;
	const char *exe;
	uint8_t *r;
	size_t size;

	if (opt & OPT_UFTRACE) {
		u = uftrace_open(udir, opt & OPT_FILTER
					       ? (more & MORE_TIME ? &time_filter : &filter)
					       : NULL);
		if (u)
			uftrace_begin(u, self.pid, 1);
	}
	session_init(&s, &self, opt & OPT_INSN, opt & OPT_PROFILE, opt & OPT_JITDUMP, u,
		     more & MORE_COUNTS);
	if (more & MORE_COUNTS) {
		s.cov = xcalloc(1, sizeof(*s.cov));
		s.cov->counts = s.cov->hot_wanted = true;
	}
	if (opt & OPT_PROFILE) {
		profile_init(&prof, 99);
		s.smp = xcalloc(1, sizeof(*s.smp));
		/*
		 * Of a QEMU whose maps are gone: ours would have every library
		 * of ours loaded (tens of ms) as a prologue comes.
		 */
		samples_init(s.smp, &prof, NO_PID, more & MORE_DWARF);
		profile_see_process(&prof, self.pid);
	}
	while ((r = next_record(in, &size))) {
		if (is_tick(r, size)) {
			if (s.smp)
				samples_resolve(s.smp, &s.jm, ((struct qj_hdr *)r)->ts,
						1000ull * 1000 * 1000);
		} else if (size >= sizeof(struct qj_hdr)) {
			session_event(&s, r, size);
		}
		free(r);
	}
	/* What the engine does as the process ends. */
	if (s.smp) {
		samples_resolve(s.smp, &s.jm, 0, 0);
		samples_free(s.smp);
		free(s.smp);
		s.smp = NULL;
		folded_write(&prof, devnull);
		profile_free(&prof);
	}
	if (s.hs.answered)
		session_check_handshake(&s, need_prologue);
	named = session_named(&s, need_prologue);
	exe = s.jm.exe_path ? s.jm.exe_path : self.exe;
	if (named && (more & MORE_PERFMAP)) {
		int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		char path[128];

		if (!perfmap_write(&s.jm.code, dfd, "perf.map", (uid_t)-1, (gid_t)-1, &bytes)) {
			snprintf(path, sizeof(path), "%s/perf.map", dir);
			fuzz_check_perfmap(path, codemap_live(&s.jm.code));
			unlink(path);
		}
		close(dfd);
	}
	if (s.jd && named) {
		bool open = jitdump_is_open(s.jd);

		if (!jitdump_close(s.jd, &bytes) && open)
			if (fuzz_check_jitdump(marker) < 40)
				abort(); /* closed without its header */
		s.jd = NULL;
	}
	if (u) {
		uftrace_end(u, self.pid, &s.jm.guest, exe);
		if (named)
			uftrace_close(u, exe, "qemu-x86_64 guest\n", &bytes);
		else
			uftrace_discard(u);
	}
	cov = s.cov;
	session_free(&s);
	if (cov) {
		coverage_free(cov);
		free(cov);
	}
}

/*
 * The engine's dispatch: -a, or a tree whose first QEMU is this one.  (No
 * perf maps: they would be /tmp/perf-PID.map; run_session() writes one.)
 */
static void run_procs(struct fuzz_in *in, uint8_t opt, uint8_t more)
{
	struct engine_opts o = {
		.all = !(opt & OPT_TREE),
		.perfmap_insn = opt & OPT_INSN,
		.jitdump = opt & OPT_JITDUMP,
		.uftrace = opt & OPT_UFTRACE ? (opt & OPT_TREE ? udir : uall) : NULL,
		.profile = opt & OPT_PROFILE,
	};
	struct engine e = {
		.o = &o,
		.scope = opt & OPT_TREE ? &scope_tree : &scope_host,
		.uft_records = -1,
	};
	bool tree = opt & OPT_TREE;
	uint64_t bytes = 0;
	uint8_t *r;
	size_t size;

	if (opt & OPT_FILTER)
		o.ufilter = more & MORE_TIME ? time_filter : filter;
	/* A tree's uftrace directory, or -a's directory of them. */
	engine_begin_outputs(&e);
	if (tree) {
		e.root = self;
		procs_begin(&e, procs_new(&e, self.pid, &e.root, false), NULL, 0, 1);
	}
	while ((r = next_record(in, &size))) {
		const struct qj_hdr *h = (const struct qj_hdr *)r;

		if (is_tick(r, size))
			procs_tick(&e, h->ts, h->tid & 1);
		/* A tree attaches to a child (BPF): not here. */
		else if (!(tree && size >= sizeof(*h) && h->type == QJ_EV_FORK))
			procs_event(&e, r, size);
		free(r);
	}
	procs_end_all(&e, "still running");
	if (e.uft && e.nameless)
		uftrace_discard(e.uft);
	else if (e.uft)
		uftrace_close(e.uft, e.root_exe ? e.root_exe : self.exe,
			      e.root_cmdline ? e.root_cmdline : self.exe, &bytes);
	e.uft = NULL;
	procs_free_all(&e);
	for (size_t i = 0; i < e.nbins; i++) {
		binary_free(e.bins[i]);
		free(e.bins[i]);
	}
	free(e.bins);
	free(e.root_map);
	free(e.root_marker);
	free(e.root_exe);
	free(e.root_cmdline);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data, size};
	uint8_t opt, more;

	if (!dir[0])
		setup();
	if (size < 2)
		return 0;
	opt = data[0];
	more = data[1];
	in.p += 2;
	in.left -= 2;
	self.system = opt & OPT_SYSTEM;
	if (opt & OPT_PROCS)
		run_procs(&in, opt, more);
	else
		run_session(&in, opt, more);
	/* Nothing of one input is left for the next. */
	rm_tree(udir);
	rm_tree(uall);
	/* A jitdump written: QEMU's marker is empty again, as it made it. */
	if (truncate(marker, 0))
		abort();
	unwind_free();
	elf_files_forget();
	return 0;
}
