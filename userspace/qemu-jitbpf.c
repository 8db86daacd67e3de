// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qemu-jitbpf: name the code QEMU's TCG JIT generates, for perf.
 *
 * Attaches BPF programs to the USDT probes of a patched QEMU (a running
 * one, or one it launches), follows every translated block, symbolizes
 * the guest code with the guest's own ELF files and writes
 * /tmp/perf-PID.map and/or the jitdump QEMU mapped for perf inject.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "qemu-jitbpf.h"
#include "qemu-jitbpf.skel.h"
#include "sample.h"
#include "detach.h"
#include "host.h"
#include "perfmap.h"
#include "profiler.h"
#include "session.h"
#include "symbols.h"
#include "target.h"
#include "top.h"
#include "uftrace.h"
#include "util.h"
#include "warmup.h"

static struct env {
	pid_t pid;
	char **cmd;
	bool all; /* -a */
	const char **qemus;
	int nqemus;
	bool perfmap;
	bool perfmap_insn;
	bool jitdump;
	const char *uftrace;
	const char *outdir;
	double duration;
	char **guest_elves;
	int nguest_elves;
	char **guest_syms;
	int nguest_syms;
	unsigned long ringbuf_mb;
	bool profile;	  /* sample, for --profile or --top */
	bool profile_out; /* --profile: write files */
	bool top;
	struct profiler_opts prof;
} env = {
	.prof = {.freq = 99},
};

const char *argp_program_version = "qemu-jitbpf 0.1";
const char *argp_program_bug_address = "<qemu-jitbpf@localhost>";
static const char doc[] =
	"Name the code QEMU's JIT generates, so that perf can profile emulated programs.\n"
	"\n"
	"USAGE: qemu-jitbpf -p PID [--perfmap] [--jitdump] [--uftrace[=DIR]] [-o DIR]\n"
	"                   [--profile[=FILE]]... [-F HZ] [--interval=SECONDS]\n"
	"                   [--call-graph=fp|dwarf[,BYTES]] [--top] [-d SECONDS]\n"
	"                   [--guest-elf PATH[:BIAS]]... [-v]\n"
	"                   [--guest-symbols FILE[:BIAS]]...\n"
	"       qemu-jitbpf [OPTIONS] -- QEMU-COMMAND [ARGS...]\n"
	"       qemu-jitbpf -a [--qemu PATH]... [--perfmap] [--jitdump]\n"
	"                   [--uftrace[=DIR]] [--profile[=FILE]]...\n"
	"                   [--interval=SECONDS] [-d SECONDS]\n"
	"\n"
	"Needs a QEMU built with the qemu-jitbpf probes (make qemu). Runs until\n"
	"Ctrl-C, the end of -d, or QEMU's exit, then completes its files.\n"
	"\n"
	"EXAMPLES:\n"
	"    qemu-jitbpf -p 1234                 # /tmp/perf-1234.map at exit\n"
	"    qemu-jitbpf -p 1234 --jitdump -d 30 # jit-1234.dump for perf inject -j\n"
	"    qemu-jitbpf --jitdump -o out -- qemu-aarch64 ./prog  # from the first TB\n"
	"    qemu-jitbpf --uftrace -- qemu-x86_64 ./prog && uftrace replay  # calls\n"
	"    qemu-jitbpf -p 1234 --profile -d 10  # profile-1234.folded, guest stacks\n"
	"    qemu-jitbpf --profile=p.svg --profile=p.pb.gz -- qemu-aarch64 ./prog\n"
	"    qemu-jitbpf -p 1234 --top             # live, like perf top\n"
	"    qemu-jitbpf -a --qemu /usr/bin/qemu-aarch64 --profile=all.svg  # every QEMU\n"
	"    perf record -k 1 -e cpu-clock -p 1234 -- sleep 10\n"
	"    perf inject -j -i perf.data -o perf.jit.data && perf report -i perf.jit.data\n";

enum {
	OPT_PERFMAP = 1000,
	OPT_PERFMAP_INSN,
	OPT_JITDUMP,
	OPT_UFTRACE,
	OPT_GUEST_ELF,
	OPT_GUEST_SYMBOLS,
	OPT_RINGBUF,
	OPT_PROFILE,
	OPT_CALL_GRAPH,
	OPT_TOP,
	OPT_QEMU,
	OPT_INTERVAL,
};

static const struct argp_option opts[] = {
	{"pid", 'p', "PID", 0, "Attach to the running QEMU process PID", 0},
	{"all", 'a', NULL, 0,
	 "Every QEMU with the probes on this host, running or started later, forked "
	 "or exec'd; runs until Ctrl-C or -d",
	 0},
	{"qemu", OPT_QEMU, "PATH", 0,
	 "With -a, watch this QEMU binary too before any process runs it; repeatable", 0},
	{"perfmap", OPT_PERFMAP, NULL, 0,
	 "Write /tmp/perf-PID.map: one line per run of host code of one guest function (default)",
	 0},
	{"perfmap-insn", OPT_PERFMAP_INSN, NULL, 0,
	 "Perf map with one line per guest instruction, sym+0xoff", 0},
	{"jitdump", OPT_JITDUMP, NULL, 0,
	 "Write a jitdump for perf inject -j into the marker QEMU maps", 0},
	{"uftrace", OPT_UFTRACE, "DIR", OPTION_ARG_OPTIONAL,
	 "Record every guest call and return as uftrace data in DIR (default uftrace.data)", 0},
	{"profile", OPT_PROFILE, "FILE", OPTION_ARG_OPTIONAL,
	 "Sample the guest's call stacks into FILE: .pb.gz pprof, .svg flame graph, else "
	 "folded stacks (default profile-PID.folded); repeatable",
	 0},
	{"top", OPT_TOP, NULL, 0, "Show the hottest guest functions live, like perf top (q quits)",
	 0},
	{"freq", 'F', "HZ", 0, "Samples per second and CPU (default 99)", 0},
	{"interval", OPT_INTERVAL, "SECONDS", 0,
	 "Continuous profiling: every SECONDS, write the profile so far to files named "
	 "after each --profile FILE with the interval's start time in them, and start again",
	 0},
	{"call-graph", OPT_CALL_GRAPH, "fp|dwarf[,BYTES]", 0,
	 "Guest stacks from the guest's frame pointers (default), or unwound with its "
	 "CFI from BYTES of stack per sample (default 8192)",
	 0},
	{"output", 'o', "DIR", 0,
	 "Directory of the jitdump of a QEMU this tool launches, and of the default "
	 "profile (default: current)",
	 0},
	{"duration", 'd', "SECONDS", 0, "Stop after SECONDS", 0},
	{"guest-elf", OPT_GUEST_ELF, "PATH[:BIAS]", 0,
	 "Guest ELF image with its load bias (guest = link + BIAS); repeatable", 0},
	{"guest-symbols", OPT_GUEST_SYMBOLS, "FILE[:BIAS]", 0,
	 "Guest symbols from a System.map or /proc/kallsyms copy (guest = address + BIAS), "
	 "e.g. a VM's Linux kernel; repeatable",
	 0},
	{"ringbuf-mb", OPT_RINGBUF, "MB", 0,
	 "Ring buffer MiB, a power of 2 (default 8; 64 with --uftrace)", 0},
	{"verbose", 'v', NULL, 0, "Say what is going on", 0},
	{NULL, 'h', NULL, OPTION_HIDDEN, "Show this help", 0},
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	char *end;

	switch (key) {
	case 'p':
		errno = 0;
		env.pid = strtol(arg, &end, 10);
		if (errno || *end || env.pid <= 0)
			argp_error(state, "invalid PID '%s'", arg);
		break;
	case 'a':
		env.all = true;
		break;
	case OPT_INTERVAL:
		errno = 0;
		env.prof.interval = strtoul(arg, &end, 10);
		if (errno || *end || !env.prof.interval || env.prof.interval > 86400)
			argp_error(state, "invalid interval '%s' (1 to 86400 seconds)", arg);
		break;
	case OPT_QEMU:
		env.qemus = xrealloc(env.qemus, (env.nqemus + 1) * sizeof(char *));
		env.qemus[env.nqemus++] = arg;
		break;
	case OPT_PERFMAP:
		env.perfmap = true;
		break;
	case OPT_PERFMAP_INSN:
		env.perfmap = env.perfmap_insn = true;
		break;
	case OPT_JITDUMP:
		env.jitdump = true;
		break;
	case OPT_UFTRACE:
		env.uftrace = arg ? arg : "uftrace.data";
		break;
	case OPT_TOP:
		env.profile = env.top = true;
		break;
	case OPT_PROFILE:
		env.profile = env.profile_out = true;
		if (arg) {
			env.prof.files =
				xrealloc(env.prof.files, (env.prof.nfiles + 1) * sizeof(char *));
			env.prof.files[env.prof.nfiles++] = arg;
		}
		break;
	case 'F':
		errno = 0;
		env.prof.freq = strtoul(arg, &end, 10);
		if (errno || *end || !env.prof.freq || env.prof.freq > 10000)
			argp_error(state, "invalid frequency '%s' (1 to 10000 Hz)", arg);
		break;
	case OPT_CALL_GRAPH:
		if (!strcmp(arg, "fp")) {
			env.prof.stack_bytes = 0;
		} else if (!strcmp(arg, "dwarf")) {
			env.prof.stack_bytes = 8192;
		} else if (!strncmp(arg, "dwarf,", 6)) {
			errno = 0;
			env.prof.stack_bytes = strtoul(arg + 6, &end, 0);
			if (errno || *end || end == arg + 6 || env.prof.stack_bytes < 64 ||
			    env.prof.stack_bytes > QJ_STACK_MAX || env.prof.stack_bytes % 8)
				argp_error(
					state,
					"invalid stack size '%s' (64 to %d bytes, a multiple of 8)",
					arg + 6, QJ_STACK_MAX);
		} else {
			argp_error(state, "invalid call graph '%s' (fp or dwarf[,BYTES])", arg);
		}
		break;
	case 'o':
		env.outdir = arg;
		break;
	case 'd':
		errno = 0;
		env.duration = strtod(arg, &end);
		if (errno || *end || env.duration <= 0)
			argp_error(state, "invalid duration '%s'", arg);
		break;
	case OPT_GUEST_ELF:
		env.guest_elves =
			xrealloc(env.guest_elves, (env.nguest_elves + 1) * sizeof(char *));
		env.guest_elves[env.nguest_elves++] = arg;
		break;
	case OPT_GUEST_SYMBOLS:
		env.guest_syms = xrealloc(env.guest_syms, (env.nguest_syms + 1) * sizeof(char *));
		env.guest_syms[env.nguest_syms++] = arg;
		break;
	case OPT_RINGBUF:
		errno = 0;
		env.ringbuf_mb = strtoul(arg, &end, 10);
		if (errno || *end || !env.ringbuf_mb || env.ringbuf_mb > 4096 ||
		    (env.ringbuf_mb & (env.ringbuf_mb - 1)))
			argp_error(state, "invalid ring buffer size '%s' (power of 2, MiB)", arg);
		break;
	case 'v':
		verbose++;
		break;
	case 'h':
		argp_state_help(state, stderr, ARGP_HELP_STD_HELP);
		break;
	case ARGP_KEY_ARG:
		/* Everything from here on is the QEMU command. */
		env.cmd = &state->argv[state->next - 1];
		state->next = state->argc;
		break;
	case ARGP_KEY_END:
		if (env.all && (env.pid || env.cmd))
			argp_error(state,
				   "-a traces every QEMU: no -p PID or QEMU-COMMAND with it");
		else if (env.all &&
			 (env.top || env.perfmap_insn || env.nguest_elves || env.nguest_syms))
			argp_error(state, "--top, --perfmap-insn, --guest-elf and --guest-symbols "
					  "follow one QEMU: use -p with them, not -a");
		else if (env.prof.interval && !env.profile_out)
			argp_error(state, "--interval goes with --profile");
		else if (env.nqemus && !env.all)
			argp_error(state, "--qemu goes with -a");
		else if (!env.all && !env.pid == !env.cmd)
			argp_error(state, "give either -p PID, -a or -- QEMU-COMMAND");
		/* Creating the ring costs ~0.3 ms per MiB at start-up. */
		if (!env.ringbuf_mb)
			env.ringbuf_mb = env.uftrace ? 64 : 8;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static volatile sig_atomic_t exiting;
/* The uprobe warmup_start() opened; it goes with the links. */
static int warmup_fd = -1;
static struct profiler profiler;

static void sig_handler(int sig)
{
	(void)sig;
	exiting = 1;
}

static int libbpf_print_fn(enum libbpf_print_level level, const char *format, va_list args)
{
	if (level == LIBBPF_DEBUG && verbose < 2)
		return 0;
	if (level == LIBBPF_INFO && !verbose)
		return 0;
	return vfprintf(stderr, format, args);
}

/* Load, and so verify, only the programs this run attaches. */
static void choose_programs(struct qemu_jitbpf_bpf *skel, const struct target *t)
{
	bool code = env.perfmap || env.jitdump || env.profile;

	bpf_program__set_autoload(skel->progs.tcg_prologue, code);
	bpf_program__set_autoload(skel->progs.tb_flush, code);
	bpf_program__set_autoload(skel->progs.tb_gen_code_batch, code);
	bpf_program__set_autoload(skel->progs.jitdump_marker, env.jitdump);
	bpf_program__set_autoload(skel->progs.jit_calls, env.uftrace);
	/* Where guest images come from: linux-user's ELF loader, or the
	 * system emulator's (-kernel, -device loader). */
	bpf_program__set_autoload(skel->progs.linux_user_elf_image, !t->system);
	bpf_program__set_autoload(skel->progs.linux_user_guest_base, !t->system);
	bpf_program__set_autoload(skel->progs.loader_elf_image, t->system);
	bpf_program__set_autoload(skel->progs.jit_guest_ram, t->system && env.profile);
	/* One QEMU: its own fork, exec and exit do not matter (-a). */
	bpf_program__set_autoload(skel->progs.qemu_fork, false);
	bpf_program__set_autoload(skel->progs.qemu_exec, false);
	bpf_program__set_autoload(skel->progs.qemu_exit, false);
}

static int attach_probes(struct qemu_jitbpf_bpf *skel, struct target *t)
{
	struct {
		struct bpf_program *prog;
		struct bpf_link **link;
	} probes[] = {
		/* Each program is named after its probe.  jit_attach comes last:
		 * attaching it starts QEMU's handshake. */
		{skel->progs.linux_user_elf_image, &skel->links.linux_user_elf_image},
		{skel->progs.linux_user_guest_base, &skel->links.linux_user_guest_base},
		{skel->progs.loader_elf_image, &skel->links.loader_elf_image},
		{skel->progs.jit_guest_ram, &skel->links.jit_guest_ram},
		{skel->progs.tcg_prologue, &skel->links.tcg_prologue},
		{skel->progs.tb_flush, &skel->links.tb_flush},
		{skel->progs.tb_gen_code_batch, &skel->links.tb_gen_code_batch},
		{skel->progs.jitdump_marker, &skel->links.jitdump_marker},
		{skel->progs.jit_calls, &skel->links.jit_calls},
		{skel->progs.jit_attach, &skel->links.jit_attach},
	};

	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		const char *name = bpf_program__name(probes[i].prog);

		if (!bpf_program__autoload(probes[i].prog))
			continue;
		*probes[i].link = bpf_program__attach_usdt(probes[i].prog, t->pid, t->exe, "qemu",
							   name, NULL);
		if (!*probes[i].link) {
			int err = -errno;

			pr_err("cannot attach to qemu:%s in %s: %s", name, t->exe, strerror(-err));
			return err;
		}
	}
	return 0;
}

/*
 * Drop our links.  First take new fds for them (libbpf keeps the fds of
 * USDT links to itself) and the warm-up uprobe: libbpf's objects then go
 * at no cost, and what costs, the kernel's RCU waits, happens in parallel,
 * here or, once QEMU is gone, in the shared helper (detach.c).
 */
static void detach_all(struct qemu_jitbpf_bpf *skel, bool background)
{
	struct bpf_link **links = (struct bpf_link **)&skel->links;
	int progs[16], nprogs = detach_prog_fds(skel->obj, profiler.sm, progs, 16), *fds, n;

	n = detach_collect(progs, nprogs, &fds);
	if (warmup_fd >= 0) {
		fds = xrealloc(fds, (n + 1) * sizeof(*fds));
		fds[n++] = warmup_fd;
		warmup_fd = -1;
	}
	for (size_t i = 0; i < sizeof(skel->links) / sizeof(*links); i++) {
		bpf_link__destroy(links[i]);
		links[i] = NULL;
	}
	if (profiler.sm)
		sampler_stop(profiler.sm);
	if (background)
		detach_handoff(fds, n);
	else
		detach_close(fds, n);
	free(fds);
}

/* Call events lost at the end, after the last record of their thread. */
static void mark_lost_calls(struct qemu_jitbpf_bpf *skel, struct uftrace *uft)
{
	int fd = bpf_map__fd(skel->maps.calls_lost);
	__u32 key, next, *prev = NULL;
	__u64 lost;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (!bpf_map_lookup_elem(fd, &next, &lost))
			uftrace_lost_at_end(uft, next, lost);
		key = next;
		prev = &key;
	}
}

static uint64_t lost_events(struct qemu_jitbpf_bpf *skel)
{
	return skel->bss->counters[QJ_LOST_RECORDS] + skel->bss->counters[QJ_LOST_CALLS];
}

/* --top: read the keys, redraw every second; false once the user quits. */
static bool top_tick(pid_t pid, uint64_t now, uint64_t *last)
{
	struct top_info info = {pid, env.prof.freq, profiler_lost(&profiler)};
	int key;

	while ((key = top_key())) {
		if (key == 'q')
			return false;
		if (key == 'z')
			profile_reset(&profiler.prof);
	}
	if (now - *last >= 1000000000ull) {
		*last = now;
		top_render(&profiler.prof, &info);
	}
	return true;
}

/* -v: what each BPF program cost, in the kernel (bpf_enable_stats). */
static void report_bpf_time(struct qemu_jitbpf_bpf *skel)
{
	int fds[32], n = detach_prog_fds(skel->obj, profiler.sm, fds, 32);
	uint64_t ns = 0, runs = 0;

	for (int i = 0; i < n; i++) {
		struct bpf_prog_info info = {0};
		__u32 len = sizeof(info);

		if (bpf_prog_get_info_by_fd(fds[i], &info, &len) || !info.run_cnt)
			continue;
		pr_dbg("BPF program %s: %.3f ms in %llu runs", info.name, info.run_time_ns / 1e6,
		       (unsigned long long)info.run_cnt);
		ns += info.run_time_ns;
		runs += info.run_cnt;
	}
	pr_dbg("BPF programs: %.3f ms in %" PRIu64 " runs", ns / 1e6, runs);
}

/* -v: the tool's own cost (bench/profile.sh reads it). */
static void report_rusage(void)
{
	struct rusage ru;

	if (!getrusage(RUSAGE_SELF, &ru))
		pr_dbg("peak RSS %ld KiB, %.3f s of CPU", ru.ru_maxrss,
		       ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
			       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
}

/* Can the profiles be written?  Said before anything runs, not after. */
static int check_profile_paths(void)
{
	for (int i = 0; i < env.prof.nfiles; i++) {
		char *dir = xstrdup(env.prof.files[i]), *slash = strrchr(dir, '/');
		int err;

		if (slash)
			*slash = 0;
		err = access(slash ? (*dir ? dir : "/") : ".", W_OK | X_OK) ? -errno : 0;
		if (err)
			pr_err("cannot write the profile %s: %s", env.prof.files[i],
			       strerror(-err));
		free(dir);
		if (err)
			return err;
	}
	return 0;
}

/* --profile with no FILE: profile-PID.folded (-a: profile.folded) in -o DIR or here. */
static void default_profile(pid_t pid, const char *outdir)
{
	static char path[PATH_MAX];
	char name[64];

	if (env.prof.nfiles)
		return;
	if (pid)
		snprintf(name, sizeof(name), "profile-%d.folded", pid);
	else
		snprintf(name, sizeof(name), "profile.folded");
	snprintf(path, sizeof(path), "%s%s%s", outdir ? outdir : "", outdir ? "/" : "", name);
	env.prof.files = xrealloc(env.prof.files, sizeof(char *));
	env.prof.files[0] = path;
	env.prof.nfiles = 1;
}

static void status_line(struct session *s, struct qemu_jitbpf_bpf *skel, pid_t pid)
{
	fprintf(stderr,
		"\rqemu-jitbpf: pid %d: %" PRIu64 " TBs, %" PRIu64 " flushes, %" PRIu64 " lost  ",
		pid, s->tbs, s->flushes, lost_events(skel));
}

static int check_outdir(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		pr_err("output directory %s does not exist", dir);
		return -ENOENT;
	}
	if (access(dir, W_OK | X_OK)) {
		pr_err("output directory %s is not writable", dir);
		return -EACCES;
	}
	return 0;
}

/*
 * Has our handshake come, complete?  Ask again while it has not; fail
 * when it is too late or came without what the files need.
 */
static int check_handshake(struct session *s)
{
	int err;

	err = handshake_poll(&s->hs, mono_ns());
	if (err == -ETIMEDOUT)
		pr_err("QEMU (pid %d) did not answer %u attach requests in %.0f s", s->target->pid,
		       s->hs.asks, QJ_HANDSHAKE_TIMEOUT_NS / 1e9);
	if (!err && s->hs.answered && !s->hs.checked) {
		s->hs.checked = true;
		err = session_check_handshake(s, env.perfmap || env.jitdump || env.profile);
	}
	return err;
}

/* -a: every QEMU of the host (host.c). */
static int run_host(const char *outdir)
{
	struct host_opts o = {
		.perfmap = env.perfmap,
		.jitdump = env.jitdump,
		.uftrace = env.uftrace,
		.prof = env.profile ? &env.prof : NULL,
		.qemus = env.qemus,
		.nqemus = env.nqemus,
		.duration = env.duration,
		.ringbuf_mb = env.ringbuf_mb,
	};

	if (env.uftrace && mkdir(env.uftrace, 0755) && errno != EEXIST) {
		pr_err("cannot create %s: %s", env.uftrace, strerror(errno));
		return -errno;
	}

	if (env.profile)
		default_profile(0, outdir);
	signal(SIGINT, sig_handler);
	signal(SIGTERM, sig_handler);
	return host_run(&o, &exiting);
}

/*
 * A launched QEMU that failed makes us fail the same way, so that
 * `qemu-jitbpf -- qemu-x86_64 ./tests` in a script fails with the tests;
 * otherwise 1 on our own error.
 */
static int exit_code(struct target *t, int err)
{
	int code;

	target_alive(t); /* collect a launched QEMU that exited meanwhile */
	code = target_exit_code(t);
	if (code > 0)
		return code;
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct argp argp = {
		.options = opts,
		.parser = parse_arg,
		.doc = doc,
		.args_doc = NULL,
	};
	struct qemu_jitbpf_bpf *skel = NULL;
	struct ring_buffer *rb = NULL;
	struct target target;
	struct session s;
	struct uftrace *uft = NULL;
	struct warmup *warm = NULL;
	long long uft_records = -1;
	char *cmdline = NULL;
	bool session_started = false, tty = isatty(STDERR_FILENO), nameless = false;
	uint64_t start, last_status = 0, last_top = 0, lost;
	char *outdir = NULL, path[PATH_MAX];
	int err, stats_fd = -1;
	bool busy = false;

	uint64_t t0 = mono_ns();

	err = argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, NULL);
	if (err)
		return 2;
	if (!env.perfmap && !env.jitdump && !env.uftrace && !env.profile)
		env.perfmap = true;
	elf_version(EV_CURRENT);
	libbpf_set_print(libbpf_print_fn);

	if (env.outdir) {
		err = check_outdir(env.outdir);
		if (err)
			return 1;
		outdir = realpath(env.outdir, NULL);
	}
	if (env.top && !isatty(STDOUT_FILENO)) {
		pr_err("--top needs a terminal on standard output");
		return 1;
	}
	if (check_profile_paths())
		return 1;
	/* Bad guest files are an error before any QEMU starts. */
	for (int i = 0; i < env.nguest_elves; i++)
		if (guest_check_spec(env.guest_elves[i], false))
			return 1;
	for (int i = 0; i < env.nguest_syms; i++)
		if (guest_check_spec(env.guest_syms[i], true))
			return 1;
	err = check_privileges();
	if (err)
		return 1;
	if (env.all) {
		err = run_host(outdir);
		free(outdir);
		free(env.qemus);
		free(env.prof.files);
		return err ? 1 : 0;
	}
	if (env.uftrace) {
		uft = uftrace_open(env.uftrace);
		if (!uft) {
			free(outdir);
			return 1;
		}
	}

	/* -v says what the BPF programs cost: the kernel counts it meanwhile. */
	if (verbose)
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	warm = warmup_start();
	if (env.cmd)
		err = target_launch(&target, env.cmd, env.jitdump ? outdir : NULL);
	else
		err = target_attach(&target, env.pid);
	if (err) {
		if (env.cmd && err == -ECHILD)
			pr_err("%s did not start", env.cmd[0]);
		goto cleanup;
	}

	cmdline = target_cmdline(&target);
	session_init(&s, &target, env.perfmap_insn, env.jitdump, uft);
	session_started = true;
	err = handshake_init(&s.hs, &target);
	if (err)
		goto cleanup;
	for (int i = 0; i < env.nguest_elves; i++) {
		err = guest_add_elf_spec(&s.guest, env.guest_elves[i]);
		if (err)
			goto cleanup;
	}
	for (int i = 0; i < env.nguest_syms; i++) {
		err = guest_add_symbols_spec(&s.guest, env.guest_syms[i]);
		if (err)
			goto cleanup;
	}

	skel = qemu_jitbpf_bpf__open();
	if (!skel) {
		err = -errno;
		pr_err("cannot open the BPF programs: %s", strerror(-err));
		goto cleanup;
	}
	choose_programs(skel, &target);
	err = bpf_map__set_max_entries(skel->maps.events, env.ringbuf_mb << 20);
	skel->rodata->wake_bytes = QJ_WAKE_BYTES(env.ringbuf_mb << 20);
	if (!err)
		err = qemu_jitbpf_bpf__load(skel);
	if (err) {
		pr_err("cannot load the BPF programs: %s", strerror(-err));
		goto cleanup;
	}
	if (env.profile) {
		if (env.profile_out)
			default_profile(target.pid, outdir);
		err = profiler_open(&profiler, &env.prof, bpf_map__fd(skel->maps.events),
				    bpf_map__fd(skel->maps.procs));
		if (err)
			goto cleanup;
		profiler_add_session(&profiler, &s);
	}
	pr_dbg("BPF loaded after %.0f ms", (mono_ns() - t0) / 1e6);
	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), session_event, &s, NULL);
	if (!rb) {
		err = -errno;
		pr_err("cannot create the ring buffer: %s", strerror(-err));
		goto cleanup;
	}
	warmup_fd = warmup_finish(warm);
	warm = NULL;
	err = env.profile ? profiler_attach(&profiler, target.pid, target.exe) : 0;
	if (!err)
		err = attach_probes(skel, &target);
	if (!err)
		err = handshake_start(&s.hs);
	if (err)
		goto cleanup;
	target_resume(&target);
	pr_dbg("probes attached after %.0f ms", (mono_ns() - t0) / 1e6);

	signal(SIGINT, sig_handler);
	signal(SIGTERM, sig_handler);
	if (env.top)
		top_start();
	start = mono_ns();
	if (!env.cmd)
		pr_dbg("attached to %s (pid %d)", target.exe, target.pid);
	while (!exiting) {
		/*
		 * The BPF side wakes us only for the handshake and when the
		 * ring is a quarter full (qj_submit()): wait QJ_IDLE_MS, or
		 * until then or QEMU exits, then drain what is there, but a bounded
		 * number of records at a time: a guest that makes records faster
		 * than we read them (millions of calls a second) would keep an
		 * unbounded drain from ever returning.  It loses events instead,
		 * counted, and -d and Ctrl-C still stop us.  While the ring had
		 * more, no wait.
		 */
		target_wait(&target, ring_buffer__epoll_fd(rb), busy ? 0 : QJ_IDLE_MS);
		err = ring_buffer__consume_n(rb, QJ_CONSUME_MAX);
		busy = err >= QJ_CONSUME_MAX;
		if (err < 0 && err != -EINTR) {
			pr_err("reading the ring buffer: %s", strerror(-err));
			goto cleanup;
		}
		err = check_handshake(&s);
		if (!err && env.profile)
			err = profiler_tick(&profiler, &s, mono_ns());
		if (!err && env.prof.interval)
			err = profiler_interval(&profiler, mono_ns(), &s.bytes);
		if (err)
			goto stop;
		if (env.duration && mono_ns() - start >= env.duration * 1e9)
			break;
		if (!target_alive(&target))
			break;
		if (env.top && !top_tick(target.pid, mono_ns(), &last_top))
			break;
		if (tty && !env.cmd && !env.top && mono_ns() - last_status > 1000000000ull) {
			last_status = mono_ns();
			status_line(&s, skel, target.pid);
		}
	}
stop:
	top_stop();
	if (tty && last_status)
		fputc('\n', stderr);
	pr_dbg("stopping after %.0f ms", (mono_ns() - t0) / 1e6);
	if (target.exited && target.launched)
		pr_dbg("QEMU used %.3f s of CPU", target.cpu_s);

	/* Detach, so that nothing stays enabled in a running QEMU, then
	 * drain.  A QEMU that exited fires no probe any more. */
	if (!target.exited) {
		detach_all(skel, false);
		pr_dbg("detached after %.0f ms", (mono_ns() - t0) / 1e6);
	}
	ring_buffer__consume(rb);
	pr_dbg("drained after %.0f ms", (mono_ns() - t0) / 1e6);
	if (!err)
		err = check_handshake(&s);
	if (!err && !s.hs.answered) {
		pr_err("QEMU (pid %d) did not answer the attach request before %s", target.pid,
		       target.exited ? "it exited" : "we stopped");
		err = -ESRCH;
	}
	if (err) {
		/* Nothing would be named: write no file. */
		env.perfmap = env.jitdump = false;
		if (s.jd)
			jitdump_discard(s.jd);
		s.jd = NULL;
		if (uft)
			uftrace_discard(uft);
		uft = NULL;
		nameless = true;
	}

	if (env.perfmap) {
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", target.pid);
		err = perfmap_write(&s.code, path, target.uid, target.gid, &s.bytes);
		if (!err)
			pr_dbg("wrote %s", path);
	}
	if (env.jitdump) {
		int jerr = jitdump_close(s.jd, &s.bytes);

		s.jd = NULL;
		if (jerr == -ENOENT) {
			pr_err("QEMU (pid %d) never reported a jitdump marker", target.pid);
			err = err ? err : jerr;
		} else if (jerr) {
			pr_err("writing the jitdump: %s", strerror(-jerr));
			err = err ? err : jerr;
		} else {
			pr_dbg("wrote %s", s.marker_path);
		}
	}
	if (env.profile) {
		int perr;

		profiler_end_session(&profiler, &s);
		perr = profiler_finish(&profiler, !nameless, &s.bytes);

		err = err ? err : perr;
	}
	if (uft) {
		int uerr;

		/* A VM's tasks are vCPUs, not threads: its losses are marked
		 * where they show, and counted in the summary. */
		if (!target.system)
			mark_lost_calls(skel, uft);
		uft_records = uftrace_records(uft);
		uerr = uftrace_close(uft, target.pid, &s.guest,
				     s.exe_path ? s.exe_path : target.exe, cmdline, &s.bytes);
		uft = NULL;
		if (uerr) {
			pr_err("writing %s: %s", env.uftrace, strerror(-uerr));
			err = err ? err : uerr;
		}
	}
	pr_dbg("files written after %.0f ms", (mono_ns() - t0) / 1e6);
	if (stats_fd >= 0)
		report_bpf_time(skel);
	report_rusage();
	if (s.tbs_early)
		pr_dbg("%" PRIu64 " TB reports predate the handshake (QEMU translates "
		       "again what still runs)",
		       s.tbs_early);
	lost = lost_events(skel) + s.tbs_incomplete;
	if (env.profile)
		fprintf(stderr,
			"qemu-jitbpf: %" PRIu64 " samples at %u Hz, %" PRIu64 " samples lost\n",
			profiler_samples(&profiler), env.prof.freq, profiler_lost(&profiler));
	fprintf(stderr,
		"qemu-jitbpf: %" PRIu64 " TBs, %" PRIu64 " flushes, %" PRIu64
		" bytes written, %" PRIu64 " events lost%s\n",
		s.tbs, s.flushes, s.bytes, lost,
		nameless ? "; no files written: no complete handshake" : "");
	if (env.perfmap && !err)
		fprintf(stderr, "qemu-jitbpf: perf map: %s\n", path);
	if (s.marker_path && !nameless)
		fprintf(stderr, "qemu-jitbpf: jitdump: %s\n", s.marker_path);
	if (uft_records >= 0)
		fprintf(stderr, "qemu-jitbpf: uftrace: %s (%lld records)\n", env.uftrace,
			uft_records);
	for (int i = 0; env.profile && !nameless && i < env.prof.nfiles; i++)
		fprintf(stderr, "qemu-jitbpf: profile: %s\n", env.prof.files[i]);

	if (target.exited)
		detach_all(skel, true);

cleanup:
	top_stop();
	if (warm)
		warmup_fd = warmup_finish(warm);
	if (warmup_fd >= 0)
		close(warmup_fd);
	if (stats_fd >= 0)
		close(stats_fd);
	ring_buffer__free(rb);
	profiler_free(&profiler);
	qemu_jitbpf_bpf__destroy(skel);
	if (session_started) {
		/* Only errors come here: nothing half-written stays. */
		if (s.jd)
			jitdump_discard(s.jd);
		if (uft)
			uftrace_discard(uft);
		session_free(&s);
	}
	if (target.held)
		/* Never leave a QEMU we started stopped, or waiting for us. */
		target_kill(&target);
	target_free(&target);
	/*
	 * The ELF/DWARF cache and the interned names stay reachable from
	 * globals: freeing libdw's line tables takes longer than exiting.
	 */
	free(env.guest_elves);
	free(env.guest_syms);
	free(env.prof.files);
	free(outdir);
	free(cmdline);
	return exit_code(&target, err);
}
