// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qemu-jitbpf: name the code QEMU's TCG JIT generates, for perf.
 *
 * main() reads and checks the options and hands them to the engine
 * (engine/engine.c), which attaches BPF programs to the USDT probes of a
 * patched QEMU (a running one, or one it launches, and the processes it
 * forks; or every QEMU of the host), follows every translated block,
 * names the guest code with the guest's own ELF files and writes perf
 * maps, jitdumps, uftrace data and profiles.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/detach.h"
#include "engine/engine.h"
#include "engine/privileges.h"
#include "engine/target.h"
#include "coverage/coverage.h"
#include "coverage/listcache.h"
#include "naming/demangle.h"
#include "naming/guest.h"
#include "util/config.h"
#include "util/keep.h"
#include "util/util.h"

/* What the command line says; main() checks it and hands it to the engine. */
static struct engine_opts env = {
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
	"uftrace filters:   [-F FUNC]... [-N FUNC]... [-D DEPTH] [-t TIME]\n"
	"\n"
	"Needs a QEMU built with the qemu-jitbpf probes (make qemu). With -p or a\n"
	"command, follows that QEMU and every process it forks, and what those\n"
	"exec (a command that is no QEMU, such as unshare into a container, is\n"
	"followed to the QEMUs it runs). Runs until Ctrl-C, the end of -d, or the\n"
	"end of those processes, then completes its files.\n"
	"\n"
	"EXAMPLES:\n"
	"    qemu-jitbpf -p 1234                 # /tmp/perf-1234.map at exit\n"
	"    qemu-jitbpf -p 1234 --jitdump -d 30 # jit-1234.dump for perf inject -j\n"
	"    qemu-jitbpf --jitdump -o out -- qemu-aarch64 ./prog  # from the first TB\n"
	"    qemu-jitbpf --uftrace -- qemu-x86_64 ./prog && uftrace replay  # calls\n"
	"    qemu-jitbpf --uftrace -- qemu-aarch64 ./busybox sh build.sh  # the tree\n"
	"    qemu-jitbpf --uftrace -F main -D 3 -t 1us -- qemu-x86_64 ./prog  # less\n"
	"    qemu-jitbpf --perfmap -- unshare -mpf chroot rootfs /bin/sh build.sh\n"
	"    qemu-jitbpf -p 1234 --profile -d 10  # profile-1234.folded, guest stacks\n"
	"    qemu-jitbpf --profile=p.svg --profile=p.pb.gz -- qemu-aarch64 ./prog\n"
	"    qemu-jitbpf -p 1234 --top             # live, like perf top\n"
	"    qemu-jitbpf -a --qemu /usr/bin/qemu-aarch64 --profile=all.svg  # all\n"
	"    perf record -k 1 -e cpu-clock -p 1234 -- sleep 10\n"
	"    perf inject -j -i perf.data -o perf.jit.data\n"
	"    perf report -i perf.jit.data\n";

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
	OPT_NO_DEMANGLE,
	OPT_COVERAGE,
	OPT_COVERAGE_PREFIX,
	OPT_CACHE_DIR,
	OPT_NO_CACHE,
	OPT_COVERAGE_COUNTS,
	OPT_FILTER,
	OPT_KEEP_EXITED,
	OPT_KEEP_PROFILES,
	OPT_CONFIG,
	OPT_PUSH,
	OPT_PUSH_APP,
	OPT_PUSH_TENANT,
	OPT_PUSH_AUTH,
	OPT_PUSH_SPOOL,
	OPT_PUSH_SPOOL_MAX,
	OPT_PUSH_API,
	OPT_PUSH_MAX_AGE,
	OPT_PUSH_MAX_SAMPLES,
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
	{"coverage", OPT_COVERAGE, "FILE", OPTION_ARG_OPTIONAL,
	 "Coverage of the guest code that ran, of every process, into FILE: .info lcov "
	 "tracefile, .xml Cobertura (default coverage.info); NAME.drcov: drcov, a "
	 "NAME.PID.drcov per process; .csv: hot blocks (--coverage-counts); repeatable",
	 0},
	{"coverage-counts", OPT_COVERAGE_COUNTS, NULL, 0,
	 "Count every block's executions (QEMU 10.2.2's jit_counts): lines and functions "
	 "with how often they ran",
	 0},
	{"coverage-prefix", OPT_COVERAGE_PREFIX, "OLD=NEW", 0,
	 "Coverage files name the sources under OLD (as DWARF has them) under NEW; repeatable", 0},
	{"cache-dir", OPT_CACHE_DIR, "DIR", 0,
	 "Keep what --coverage read of guest files in DIR (~/.cache/qemu-jitbpf/listings)", 0},
	{"no-cache", OPT_NO_CACHE, NULL, 0, "Read guest files' lines anew each run", 0},
	{"top", OPT_TOP, NULL, 0, "Show the hottest guest functions live, like perf top (q quits)",
	 0},
	{"freq", 'F', "HZ", 0,
	 "Samples per second and CPU (default 99); -F with a name is --filter, as in uftrace", 0},
	{"interval", OPT_INTERVAL, "SECONDS", 0,
	 "Continuous profiling: every SECONDS, write the profile so far to files named "
	 "after each --profile FILE with the interval's start time in them, and start again; "
	 "each --coverage FILE too, with all that ran since the start",
	 0},
	{"keep-profiles", OPT_KEEP_PROFILES, "COUNT|AGE", 0,
	 "With --interval, keep at most COUNT files or AGE (30m, 12h, 7d; both: 7d,1000) of "
	 "each --profile, oldest removed first; 'all' keeps every one (default 7d,1000)",
	 0},
	{"keep-exited", OPT_KEEP_EXITED, "AGE|COUNT", 0,
	 "Remove the perf maps, jitdumps and -a's uftrace data of processes that exited AGE "
	 "ago (10m, 1h), or beyond COUNT processes (both: 10m,1000); never while the process "
	 "or its pid lives. 'all' keeps them (the default, but 10m,1000 with -a)",
	 0},
	{"push", OPT_PUSH, "URL", 0,
	 "With --interval, send each interval's profile to a Grafana Pyroscope or Parca "
	 "server at URL; intervals wait in --push-spool while it is down",
	 0},
	{"push-api", OPT_PUSH_API, "API", 0,
	 "--push: pyroscope (its connect API, the default), pyroscope-ingest (POST "
	 "/ingest, for servers before 1.0) or parca (WriteRaw, gRPC-Web)",
	 0},
	{"push-app", OPT_PUSH_APP, "NAME", 0,
	 "--push: the service's name, letters, digits and _.-/ (default qemu-jitbpf)", 0},
	{"push-tenant", OPT_PUSH_TENANT, "ID", 0,
	 "--push: X-Scope-OrgID, for a multi-tenant server", 0},
	{"push-auth", OPT_PUSH_AUTH, "FILE", 0,
	 "--push: 'Bearer TOKEN' or 'USER:PASSWORD' (basic) from FILE, mode 0600", 0},
	{"push-spool", OPT_PUSH_SPOOL, "DIR", 0,
	 "--push: where intervals wait to be sent (default push-spool in -o DIR or here)", 0},
	{"push-spool-max", OPT_PUSH_SPOOL_MAX, "N", 0,
	 "--push: parts of intervals the spool holds; beyond, the oldest is dropped, counted "
	 "(default 1440)",
	 0},
	{"push-max-age", OPT_PUSH_MAX_AGE, "AGE", 0,
	 "--push: drop, counted, what waited longer than the server takes (default 1h, "
	 "Pyroscope's reject-older-than)",
	 0},
	{"push-max-samples", OPT_PUSH_MAX_SAMPLES, "N", 0,
	 "--push: send an interval of more stacks in parts of N (default 16000, Pyroscope's "
	 "max_profile_stacktrace_samples)",
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
	{"filter", OPT_FILTER, "FUNC", 0,
	 "--uftrace: record only FUNC and what it calls (a name, or a regex); repeatable", 0},
	{"notrace", 'N', "FUNC", 0, "--uftrace: record neither FUNC nor what it calls; repeatable",
	 0},
	{"depth", 'D', "DEPTH", 0,
	 "--uftrace: record DEPTH levels of calls (from an -F function, if any)", 0},
	{"time-filter", 't', "TIME", 0,
	 "--uftrace: record only functions that run TIME or longer (e.g. 1us, 2ms)", 0},
	{"no-demangle", OPT_NO_DEMANGLE, NULL, 0,
	 "Keep C++ and Rust names mangled in perf maps, jitdumps and profiles", 0},
	{"ringbuf-mb", OPT_RINGBUF, "MB", 0,
	 "Ring buffer MiB, a power of 2 (default 8; 16 with --uftrace; 32 with -a)", 0},
	{"config", OPT_CONFIG, "FILE", 0,
	 "Read options from FILE first, one long option a line without its dashes "
	 "(interval=60); SIGHUP completes every file and starts again with FILE re-read",
	 0},
	{"verbose", 'v', NULL, 0, "Say what is going on", 0},
	{NULL, 'h', NULL, OPTION_HIDDEN, "Show this help", 0},
	{},
};

static bool keep_exited_set, keep_profiles_set, push_more, no_cache;

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	char *end, why[160];

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
	case OPT_KEEP_EXITED:
	case OPT_KEEP_PROFILES:
		if (!keep_parse(arg, key == OPT_KEEP_EXITED ? &env.keep_exited : &env.prof.keep))
			argp_error(state,
				   "invalid limit '%s' (a count, an age such as 10m, 12h or 7d, "
				   "both as 7d,1000, or 'all')",
				   arg);
		if (key == OPT_KEEP_EXITED)
			keep_exited_set = true;
		else
			keep_profiles_set = true;
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
	case OPT_COVERAGE:
		if (!arg)
			arg = "coverage.info";
		if (coverage_format(arg) == COV_BAD)
			argp_error(state,
				   "--coverage: '%s' is not .info (lcov), .xml (Cobertura), .drcov "
				   "or .csv (hot blocks)",
				   arg);
		env.cov.files = xrealloc(env.cov.files, (env.cov.nfiles + 1) * sizeof(char *));
		env.cov.files[env.cov.nfiles++] = arg;
		break;
	case OPT_COVERAGE_COUNTS:
		env.cov.counts = true;
		break;
	case OPT_CACHE_DIR:
		env.cov.cache_dir = arg;
		break;
	case OPT_NO_CACHE:
		no_cache = true;
		break;
	case OPT_COVERAGE_PREFIX: {
		char *eq = strchr(arg, '=');

		if (!eq || eq == arg)
			argp_error(state, "--coverage-prefix: '%s' is not OLD=NEW", arg);
		*eq = 0;
		env.cov.px = xrealloc(env.cov.px, (env.cov.npx + 1) * sizeof(*env.cov.px));
		env.cov.px[env.cov.npx++] = (struct cov_prefix){arg, eq + 1};
		break;
	}
	case 'F':
		/* perf's -F HZ, or uftrace's -F FUNC: no function name is a
		 * number. */
		if (*arg < '0' || *arg > '9')
			return parse_arg(OPT_FILTER, arg, state);
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
	case OPT_FILTER:
	case 'N':
		if (callfilter_add(&env.ufilter, arg, key == 'N', why, sizeof(why)))
			argp_error(state, "invalid function '%s': %s", arg, why);
		break;
	case 'D':
		errno = 0;
		env.ufilter.depth = strtoul(arg, &end, 10);
		if (errno || *end || !env.ufilter.depth || env.ufilter.depth > 1024)
			argp_error(state, "invalid depth '%s' (1 to 1024)", arg);
		break;
	case 't':
		if (!callfilter_parse_time(arg, &env.ufilter.time_ns) || !env.ufilter.time_ns)
			argp_error(state, "invalid time '%s' (e.g. 500ns, 1us, 2.5ms, 1s)", arg);
		break;
	case OPT_PUSH:
		env.push.url = arg;
		env.profile = true;
		break;
	case OPT_PUSH_APP:
		if (!push_app_valid(arg, why, sizeof(why)))
			argp_error(state, "invalid service name '%s': %s", arg, why);
		env.push.app = arg;
		push_more = true;
		break;
	case OPT_PUSH_TENANT:
		env.push.tenant = arg;
		push_more = true;
		break;
	case OPT_PUSH_AUTH:
		env.push.auth_file = arg;
		push_more = true;
		break;
	case OPT_PUSH_SPOOL:
		env.push.spool = arg;
		push_more = true;
		break;
	case OPT_PUSH_SPOOL_MAX:
		errno = 0;
		env.push.spool_max = strtoul(arg, &end, 10);
		if (errno || *end || !env.push.spool_max || env.push.spool_max > 1000000)
			argp_error(state, "invalid spool size '%s' (1 to 1000000 parts)", arg);
		push_more = true;
		break;
	case OPT_PUSH_MAX_SAMPLES:
		errno = 0;
		env.push.max_samples = strtoul(arg, &end, 10);
		if (errno || *end || !env.push.max_samples || env.push.max_samples > 1000000)
			argp_error(state, "invalid number of stacks '%s' (1 to 1000000)", arg);
		push_more = true;
		break;
	case OPT_PUSH_API:
		if (!push_api_parse(arg, &env.push.api))
			argp_error(state, "invalid API '%s' (pyroscope, pyroscope-ingest or parca)",
				   arg);
		push_more = true;
		break;
	case OPT_PUSH_MAX_AGE: {
		struct keep k;

		if (!keep_parse(arg, &k) || k.count || k.age_ns < 60000000000ull)
			argp_error(state, "invalid age '%s' (a minute or more: 30m, 1h)", arg);
		env.push.max_age = (unsigned int)(k.age_ns / 1000000000ull);
		push_more = true;
		break;
	}
	case OPT_CONFIG:
		/* Read before parsing (config_cmdline()). */
		break;
	case OPT_NO_DEMANGLE:
		demangle_enable(false);
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
		else if (env.prof.interval && !env.profile_out && !env.push.url && !env.cov.nfiles)
			argp_error(state, "--interval goes with --profile, --coverage or --push");
		else if (env.push.url && !env.prof.interval)
			argp_error(state,
				   "--push sends each --interval's profile: give --interval");
		else if (push_more && !env.push.url)
			argp_error(state, "--push-api, --push-app, --push-tenant, --push-auth, "
					  "--push-spool* and --push-max-age go with --push");
		else if (env.push.url && env.top)
			argp_error(state, "--push and --top: one or the other");
		else if (keep_profiles_set && !env.prof.interval)
			argp_error(state, "--keep-profiles goes with --interval");
		else if (env.prof.keep.age_ns &&
			 env.prof.keep.age_ns < env.prof.interval * 1000000000ull)
			argp_error(state, "--keep-profiles: an age under the --interval would "
					  "keep no profile");
		else if (env.nqemus && !env.all)
			argp_error(state, "--qemu goes with -a");
		else if (!env.uftrace &&
			 (env.ufilter.npats || env.ufilter.depth || env.ufilter.time_ns))
			argp_error(state, "-F FUNC, -N, -D and -t go with --uftrace");
		else if (env.cov.npx && !env.cov.nfiles)
			argp_error(state, "--coverage-prefix goes with --coverage");
		else if (env.cov.counts && !env.cov.nfiles)
			argp_error(state, "--coverage-counts goes with --coverage");
		else if (no_cache && env.cov.cache_dir)
			argp_error(state, "--cache-dir and --no-cache: one or the other");
		else if (!env.all && !env.pid == !env.cmd)
			argp_error(state, "give either -p PID, -a or -- QEMU-COMMAND");
		if (env.push.url && !env.push.app)
			env.push.app = "qemu-jitbpf";
		if (env.push.url && !env.push.spool_max)
			env.push.spool_max = 1440;
		if (env.push.url && !env.push.max_age)
			env.push.max_age = PUSH_MAX_AGE_DEFAULT;
		if (env.push.url && !env.push.max_samples)
			env.push.max_samples = PUSH_MAX_SAMPLES_DEFAULT;
		/* A host's QEMUs come and go for weeks; rotated profiles too. */
		if (!keep_exited_set && env.all)
			keep_parse("10m,1000", &env.keep_exited);
		if (!keep_profiles_set && env.prof.interval)
			keep_parse("7d,1000", &env.prof.keep);
		/* A hot-block table is counts. */
		for (int i = 0; i < env.cov.nfiles; i++)
			env.cov.counts |= coverage_format(env.cov.files[i]) == COV_HOT;
		env.cov.interval = env.prof.interval;
		env.cov.keep = env.prof.keep;
		/* Creating the ring costs ~0.3 ms per MiB at start-up.  -a
		 * gets more: a host starts QEMUs together, and each one's
		 * first TBs come at once (bench/soak.sh MODE=churn lost
		 * events with 8). */
		if (!env.ringbuf_mb)
			env.ringbuf_mb = env.all ? 32 : env.uftrace ? 16 : 8;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static volatile sig_atomic_t exiting, reload;

static void sig_handler(int sig)
{
	if (sig == SIGHUP)
		reload = 1;
	exiting = 1;
}

/* Can the profiles be written?  Said before anything runs, not after. */
static int check_paths(const char *what, const char **files, int n)
{
	for (int i = 0; i < n; i++) {
		char *dir = xstrdup(files[i]), *slash = strrchr(dir, '/');
		int err;

		if (slash)
			*slash = 0;
		/* As the tool will write: its effective ids and capabilities. */
		err = faccessat(AT_FDCWD, slash ? (*dir ? dir : "/") : ".", W_OK | X_OK, AT_EACCESS)
			      ? -errno
			      : 0;
		if (err)
			pr_err("cannot write the %s %s: %s", what, files[i], strerror(-err));
		free(dir);
		if (err)
			return err;
	}
	return 0;
}

static int check_outdir(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		pr_err("output directory %s does not exist", dir);
		return -ENOENT;
	}
	if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS)) {
		pr_err("output directory %s is not writable", dir);
		return -EACCES;
	}
	return 0;
}

/* Bad input is an error before any QEMU starts, with one line. */
static int check_input(void)
{
	struct privilege_needs needs = {
		.ptrace = env.pid || env.all,
		.perfmap = env.perfmap,
		.jitdump = env.jitdump,
		.remove = env.keep_exited.on,
	};

	if (env.outdir && check_outdir(env.outdir))
		return -EINVAL;
	if (env.top && !isatty(STDOUT_FILENO)) {
		pr_err("--top needs a terminal on standard output");
		return -EINVAL;
	}
	if (check_paths("profile", env.prof.files, env.prof.nfiles) ||
	    check_paths("coverage", env.cov.files, env.cov.nfiles))
		return -EINVAL;
	if (env.cov.cache_dir && listcache_check(env.cov.cache_dir))
		return -EINVAL;
	for (int i = 0; i < env.nguest_elves; i++)
		if (guest_check_spec(env.guest_elves[i], false))
			return -EINVAL;
	for (int i = 0; i < env.nguest_syms; i++)
		if (guest_check_spec(env.guest_syms[i], true))
			return -EINVAL;
	return check_privileges(&needs);
}

int main(int argc, char **argv)
{
	static const struct argp argp = {
		.options = opts,
		.parser = parse_arg,
		.doc = doc,
	};
	char *outdir = NULL, *spool = NULL, *cache, **orig = argv;
	struct config_cmdline cfg = {0};
	int code;

	if (detach_helper_asked(argc, argv))
		return detach_helper_main(argv);
	/* A usage error exits 2, argp's own too (the unit restarts on no 2). */
	argp_err_exit_status = 2;
	if (!config_cmdline(&cfg, &argc, &argv))
		return 2;
	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, NULL))
		return 2;
	if (!env.perfmap && !env.jitdump && !env.uftrace && !env.profile && !env.cov.nfiles)
		env.perfmap = true;
	elf_version(EV_CURRENT);
	if (check_input())
		return 1;
	env.cov.cache_dir = cache = no_cache ? NULL : listcache_dir(env.cov.cache_dir);
	if (env.outdir)
		env.outdir = outdir = realpath(env.outdir, NULL);
	if (env.push.url && !env.push.spool)
		env.push.spool = spool = xasprintf("%s%spush-spool", env.outdir ? env.outdir : "",
						   env.outdir ? "/" : "");
	signal(SIGINT, sig_handler);
	signal(SIGTERM, sig_handler);
	/* A hang-up completes the files too; with --config it reloads. */
	signal(SIGHUP, sig_handler);
	code = engine_run(&env, &exiting);
	if (reload && !code && config_path(argc, argv)) {
		/* A service's reload: every file is complete; the same command,
		 * which reads the configuration again. */
		pr_err("SIGHUP: files complete; starting again with %s", config_path(argc, argv));
		execv("/proc/self/exe", orig);
		pr_err("cannot start again: %s", strerror(errno));
		return 1;
	}
	/* The ELF/DWARF cache and the interned names stay reachable from
	 * globals: freeing libdw's line tables takes longer than exiting. */
	free(env.qemus);
	free(env.guest_elves);
	free(env.guest_syms);
	free(env.prof.files);
	free(env.cov.files);
	free(env.cov.px);
	callfilter_free(&env.ufilter);
	free(outdir);
	free(spool);
	free(cache);
	config_free(&cfg);
	return code;
}
