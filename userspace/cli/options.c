// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Every option of the command line, declared once: its names, argument,
 * help, how its value is read and checked, where it goes in struct
 * engine_opts, and which options it needs or excludes.  argp's options,
 * the --config file's keys and the usage errors all come from the table.
 */
#include "cli/options.h"
#include "cli/values.h"
#include "coverage/coverage.h"
#include "util/keep.h"
#include "util/util.h"

#include <argp.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "version.h"

const char *argp_program_version = "qemu-jitbpf " QJ_VERSION;
/* The project's issue tracker. */
const char *argp_program_bug_address = "<" QJ_BUG_URL ">";
static const char doc[] =
	"Name the code QEMU's JIT generates, so that perf can profile emulated programs.\n"
	"\n"
	"USAGE: qemu-jitbpf -p PID | -a [--qemu PATH]... | [-o DIR] -- QEMU-COMMAND\n"
	"  what to write:   [--perfmap] [--jitdump] [--uftrace[=DIR]]\n"
	"                   [--profile[=FILE]]... [--off-cpu] [--top]\n"
	"                   [--report[=FILE]]... [--timeline=FILE]\n"
	"                   [--coverage[=FILE]]... [--coverage-counts]\n"
	"                   [--stacks[=FILE]] [--push=URL --interval=SECONDS]\n"
	"  how:             [-F HZ] [--call-graph=fp|dwarf[,BYTES]] [-d SECONDS]\n"
	"                   [--interval=SECONDS] [--config=FILE] [-v]\n"
	"  uftrace filters: [-F FUNC]... [-N FUNC]... [-D DEPTH] [-t TIME]\n"
	"  a VM's guest:    [--guest-elf PATH[:BIAS]]...\n"
	"                   [--guest-symbols FILE[:BIAS]]...\n"
	"\n"
	"Needs a QEMU built with the qemu-jitbpf probes (make qemu). With -p or a\n"
	"command, follows that QEMU and every process it forks, and what those\n"
	"exec (a command that is no QEMU, such as make, a shell or unshare into a\n"
	"container, is followed to the QEMUs it runs); -a follows every QEMU of\n"
	"the host. Runs until Ctrl-C, the end of -d, or the end of those\n"
	"processes, then completes its files.\n"
	"\n"
	"EXAMPLES:\n"
	"    qemu-jitbpf -p 1234                 # /tmp/perf-1234.map at exit\n"
	"    qemu-jitbpf -p 1234 --jitdump -d 30 # jit-1234.dump for perf inject -j\n"
	"    qemu-jitbpf --jitdump -o out -- qemu-aarch64 ./prog  # from the first TB\n"
	"    qemu-jitbpf --uftrace -- qemu-x86_64 ./prog && uftrace replay  # calls\n"
	"    qemu-jitbpf --uftrace -F main -D 3 -t 1us -- qemu-x86_64 ./prog  # less\n"
	"    qemu-jitbpf --report -- make  # what each emulated command cost, and why\n"
	"    qemu-jitbpf --profile=p.svg --profile=p.pb.gz -- qemu-aarch64 ./prog\n"
	"    qemu-jitbpf -p 1234 --profile --off-cpu -d 10  # where the time waits too\n"
	"    qemu-jitbpf -p 1234 --stacks      # every guest thread's stack, now\n"
	"    qemu-jitbpf -p 1234 --top         # live, like perf top\n"
	"    qemu-jitbpf --coverage=cov.info -- qemu-aarch64 ./tests  # for genhtml\n"
	"    qemu-jitbpf -a --report=build.json  # every QEMU of a container build\n"
	"    qemu-jitbpf -a --interval=60 --push=http://pyroscope:4040  # a fleet\n"
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
	OPT_REPORT,
	OPT_REPORT_ROWS,
	OPT_TIMELINE,
	OPT_PROFILE_CHAIN,
	OPT_STACKS,
	OPT_OFF_CPU,
};

/* How an option's argument is read. */
enum opt_kind {
	K_NONE, /* read elsewhere (--config), or by hand (-h) */
	K_FLAG, /* sets a bool */
	K_STR,	/* keeps its argument (or DEF when it has none) */
	K_UINT, /* a whole number from MIN to MAX */
	K_SECS, /* a positive number of seconds, fractions too */
	K_LIST, /* appends its argument to an array; repeatable */
	K_FN,	/* FN reads it */
};

struct opt {
	const char *name; /* the long option, also its --config key */
	int key;	  /* its short letter, or OPT_* */
	const char *arg;  /* its argument's name; NULL for none */
	int flags;	  /* argp's OPTION_ARG_OPTIONAL, OPTION_HIDDEN */
	const char *help;
	enum opt_kind kind;
	size_t off, size;	 /* where it goes in struct engine_opts */
	size_t count_off;	 /* K_LIST: the int that counts the array */
	unsigned long min, max;	 /* K_UINT */
	const char *what, *unit; /* "invalid WHAT 'ARG' (UNIT)" */
	const char *def;	 /* K_STR: without an argument */
	opt_fn *fn;		 /* K_FN */
	int needs[4];		 /* one of these must be given with it */
	const char *needs_rule;	 /* said when none is; else "X goes with Y" */
	int excludes;		 /* may not be given with it */
	const char *excl_rule;	 /* said when it is; else "X and Y: one or the other" */
	bool no_config;		 /* not a key of a --config file */
};

#define AT(field) \
	.off = offsetof(struct engine_opts, field), .size = sizeof(((struct engine_opts *)0)->field)
#define LIST(field, count)                                          \
	.kind = K_LIST, .off = offsetof(struct engine_opts, field), \
	.count_off = offsetof(struct engine_opts, count)

#define PUSH_RULE                                                                                 \
	.needs = {OPT_PUSH}, .needs_rule = "--push-api, --push-app, --push-tenant, --push-auth, " \
					   "--push-spool* and --push-max-age go with --push"
#define UFTRACE_RULE \
	.needs = {OPT_UFTRACE}, .needs_rule = "-F FUNC, -N, -D and -t go with --uftrace"
#define ONE_QEMU_RULE                                                                           \
	.excludes = 'a', .excl_rule = "--top, --perfmap-insn, --guest-elf and --guest-symbols " \
				      "follow one QEMU: use -p with them, not -a"

static const struct opt table[] = {
	/* What to follow. */
	{"pid", 'p', "PID", 0, "Attach to the running QEMU process PID", K_UINT, AT(pid), .min = 1,
	 .max = 0x7fffffff, .what = "PID", .excludes = 'a',
	 .excl_rule = "-a traces every QEMU: no -p PID or QEMU-COMMAND with it"},
	{"all", 'a', NULL, 0,
	 "Every QEMU with the probes on this host, running or started later, forked or exec'd; "
	 "runs until Ctrl-C or -d",
	 K_FLAG, AT(all)},
	{"qemu", OPT_QEMU, "PATH", 0,
	 "Watch this QEMU binary too before any process runs it (-a, or the QEMUs a command "
	 "runs: a stock one is then seen from its first block); repeatable",
	 LIST(qemus, nqemus)},
	{"duration", 'd', "SECONDS", 0, "Stop after SECONDS", K_SECS, AT(duration),
	 .what = "duration"},
	/* What to write. */
	{"perfmap", OPT_PERFMAP, NULL, 0,
	 "Write /tmp/perf-PID.map: one line per run of host code of one guest function (default)",
	 K_FLAG, AT(perfmap)},
	{"perfmap-insn", OPT_PERFMAP_INSN, NULL, 0,
	 "Perf map with one line per guest instruction, sym+0xoff", K_FN, .fn = read_perfmap_insn,
	 ONE_QEMU_RULE},
	{"jitdump", OPT_JITDUMP, NULL, 0,
	 "Write a jitdump for perf inject -j into the marker QEMU maps", K_FLAG, AT(jitdump)},
	{"output", 'o', "DIR", 0,
	 "Directory of the jitdump of a QEMU this tool launches, and of the default profile "
	 "(default: current)",
	 K_STR, AT(outdir)},
	{"uftrace", OPT_UFTRACE, "DIR", OPTION_ARG_OPTIONAL,
	 "Record every guest call and return as uftrace data in DIR (default uftrace.data)", K_STR,
	 AT(uftrace), .def = "uftrace.data"},
	{"filter", OPT_FILTER, "FUNC", 0,
	 "--uftrace: record only FUNC and what it calls (a name, or a regex); repeatable", K_FN,
	 .fn = read_in, UFTRACE_RULE},
	{"notrace", 'N', "FUNC", 0, "--uftrace: record neither FUNC nor what it calls; repeatable",
	 K_FN, .fn = read_notrace, UFTRACE_RULE},
	{"depth", 'D', "DEPTH", 0,
	 "--uftrace: record DEPTH levels of calls (from an -F function, if any)", K_UINT,
	 AT(ufilter.depth), .min = 1, .max = 1024, .what = "depth", .unit = "1 to 1024",
	 UFTRACE_RULE},
	{"time-filter", 't', "TIME", 0,
	 "--uftrace: record only functions that run TIME or longer (e.g. 1us, 2ms)", K_FN,
	 .fn = read_time_filter, UFTRACE_RULE},
	{"no-demangle", OPT_NO_DEMANGLE, NULL, 0,
	 "Keep C++ and Rust names mangled in perf maps, jitdumps and profiles", K_FN,
	 .fn = read_no_demangle},
	/* Profiles. */
	{"profile", OPT_PROFILE, "FILE", OPTION_ARG_OPTIONAL,
	 "Sample the guest's call stacks into FILE: .pb.gz pprof, .svg flame graph, else folded "
	 "stacks (default profile-PID.folded); repeatable",
	 K_FN, .fn = read_profile},
	{"profile-chain", OPT_PROFILE_CHAIN, NULL, 0,
	 "Root each process's stacks under the emulated programs it descends from "
	 "(make-1;gcc-2;cc1-3;...), in flame graphs, folded stacks and pprof",
	 K_FLAG, AT(prof.chain), .needs = {OPT_PROFILE, OPT_PUSH},
	 .needs_rule = "--profile-chain goes with --profile or --push"},
	{"top", OPT_TOP, NULL, 0, "Show the hottest guest functions live, like perf top (q quits)",
	 K_FN, .fn = read_top, ONE_QEMU_RULE},
	{"freq", 'F', "HZ", 0,
	 "Samples per second and CPU (default 99); -F with a name is --filter, as in uftrace",
	 K_UINT, AT(prof.freq), .min = 1, .max = 10000, .what = "frequency",
	 .unit = "1 to 10000 Hz"},
	{"off-cpu", OPT_OFF_CPU, NULL, 0,
	 "Make --profile and --push wall-clock profiles: each guest thread's time off its CPU "
	 "too (blocked in a system call, waiting for a lock or a CPU), in ns, by guest stack and "
	 "why it waits",
	 K_FLAG, AT(prof.off_cpu), .needs = {OPT_PROFILE, OPT_PUSH},
	 .needs_rule = "--off-cpu goes with --profile or --push"},
	{"call-graph", OPT_CALL_GRAPH, "fp|dwarf[,BYTES]", 0,
	 "Guest stacks from the guest's frame pointers (default), or unwound with its CFI from "
	 "BYTES of stack per sample (default 8192)",
	 K_FN, .fn = read_call_graph},
	{"interval", OPT_INTERVAL, "SECONDS", 0,
	 "Continuous profiling: every SECONDS, write the profile so far to files named after each "
	 "--profile FILE with the interval's start time in them, and start again; each --coverage "
	 "FILE too, with all that ran since the start; each --report FILE with the rows so far",
	 K_UINT, AT(prof.interval), .min = 1, .max = 86400, .what = "interval",
	 .unit = "1 to 86400 seconds", .needs = {OPT_PROFILE, OPT_COVERAGE, OPT_PUSH, OPT_REPORT},
	 .needs_rule = "--interval goes with --profile, --coverage, --push or --report"},
	{"keep-profiles", OPT_KEEP_PROFILES, "COUNT|AGE", 0,
	 "With --interval, keep at most COUNT files or AGE (30m, 12h, 7d; both: 7d,1000) of each "
	 "--profile, oldest removed first; 'all' keeps every one (default 7d,1000)",
	 K_FN, .fn = read_keep_profiles, .needs = {OPT_INTERVAL}},
	{"report", OPT_REPORT, "FILE", OPTION_ARG_OPTIONAL,
	 "What each emulated command cost: its command line, parent, wall and CPU time, that CPU "
	 "split into the guest's code, translation, block lookup, helpers, the kernel and QEMU, "
	 "its code; by program and by subtree. Into FILE: .json, .md (Markdown for a CI job's "
	 "summary, under 1 MiB), else a table (default: the table on stderr at the end); "
	 "repeatable",
	 K_FN, .fn = read_report},
	{"report-rows", OPT_REPORT_ROWS, "N", 0,
	 "--report: keep the rows of at most N processes that have ended (default 4096); the "
	 "oldest beyond are counted in the totals by program and subtree only",
	 K_UINT, AT(report_rows), .min = 1, .max = 10000000, .what = "row count",
	 .unit = "1 to 10000000", .needs = {OPT_REPORT}},
	{"timeline", OPT_TIMELINE, "FILE", 0,
	 "The processes in time as a Chrome trace for Perfetto or chrome://tracing: a track per "
	 "process below its parent's, named by its command line, a slice per program it ran, "
	 "with the phases its samples show (translate, guest, lookup, helpers, kernel)",
	 K_FN, .fn = read_timeline},
	{"stacks", OPT_STACKS, "FILE", OPTION_ARG_OPTIONAL,
	 "Print every guest thread of the QEMU given with -p (of every QEMU with -a), now, and "
	 "exit: its call stack, and "
	 "whether it runs or which system call it is blocked in; JSON when FILE ends in .json. "
	 "QEMU is not stopped and no ptrace is used",
	 K_FN, .fn = read_stacks, .needs = {'p', 'a'},
	 .needs_rule = "--stacks goes with -p PID or -a"},
	/* Coverage. */
	{"coverage", OPT_COVERAGE, "FILE", OPTION_ARG_OPTIONAL,
	 "Coverage of the guest code that ran, of every process, into FILE: .info lcov tracefile, "
	 ".xml Cobertura (default coverage.info); NAME.drcov: drcov, a NAME.PID.drcov per process; "
	 ".csv: hot blocks (--coverage-counts); repeatable",
	 K_FN, .fn = read_coverage},
	{"coverage-counts", OPT_COVERAGE_COUNTS, NULL, 0,
	 "Count every block's executions (QEMU 10.2.2's jit_counts): lines and functions with how "
	 "often they ran",
	 K_FLAG, AT(cov.counts), .needs = {OPT_COVERAGE}},
	{"coverage-prefix", OPT_COVERAGE_PREFIX, "OLD=NEW", 0,
	 "Coverage files name the sources under OLD (as DWARF has them) under NEW; repeatable",
	 K_FN, .fn = read_coverage_prefix, .needs = {OPT_COVERAGE}},
	{"cache-dir", OPT_CACHE_DIR, "DIR", 0,
	 "Keep what --coverage read of guest files in DIR (~/.cache/qemu-jitbpf/listings)", K_STR,
	 AT(cov.cache_dir), .excludes = OPT_NO_CACHE},
	{"no-cache", OPT_NO_CACHE, NULL, 0, "Read guest files' lines anew each run", K_FN,
	 .fn = read_no_cache},
	/* A host for weeks. */
	{"keep-exited", OPT_KEEP_EXITED, "AGE|COUNT", 0,
	 "Remove the perf maps, jitdumps and -a's uftrace data of processes that exited AGE ago "
	 "(10m, 1h), or beyond COUNT processes (both: 10m,1000); never while the process or its "
	 "pid "
	 "lives. 'all' keeps them (the default, but 10m,1000 with -a)",
	 K_FN, .fn = read_keep_exited},
	{"push", OPT_PUSH, "URL", 0,
	 "With --interval, send each interval's profile to a Grafana Pyroscope or Parca server at "
	 "URL; intervals wait in --push-spool while it is down",
	 K_FN, .fn = read_push, .needs = {OPT_INTERVAL},
	 .needs_rule = "--push sends each --interval's profile: give --interval",
	 .excludes = OPT_TOP},
	{"push-api", OPT_PUSH_API, "API", 0,
	 "--push: pyroscope (its connect API, the default), pyroscope-ingest (POST /ingest, for "
	 "servers before 1.0) or parca (WriteRaw, gRPC-Web)",
	 K_FN, .fn = read_push_api, PUSH_RULE},
	{"push-app", OPT_PUSH_APP, "NAME", 0,
	 "--push: the service's name, letters, digits and _.-/ (default qemu-jitbpf)", K_FN,
	 .fn = read_push_app, PUSH_RULE},
	{"push-tenant", OPT_PUSH_TENANT, "ID", 0,
	 "--push: X-Scope-OrgID, for a multi-tenant server", K_STR, AT(push.tenant), PUSH_RULE},
	{"push-auth", OPT_PUSH_AUTH, "FILE", 0,
	 "--push: 'Bearer TOKEN' or 'USER:PASSWORD' (basic) from FILE, mode 0600", K_STR,
	 AT(push.auth_file), PUSH_RULE},
	{"push-spool", OPT_PUSH_SPOOL, "DIR", 0,
	 "--push: where intervals wait to be sent (default push-spool in -o DIR or here)", K_STR,
	 AT(push.spool), PUSH_RULE},
	{"push-spool-max", OPT_PUSH_SPOOL_MAX, "N", 0,
	 "--push: parts of intervals the spool holds; beyond, the oldest is dropped, counted "
	 "(default 1440)",
	 K_UINT, AT(push.spool_max), .min = 1, .max = 1000000, .what = "spool size",
	 .unit = "1 to 1000000 parts", PUSH_RULE},
	{"push-max-age", OPT_PUSH_MAX_AGE, "AGE", 0,
	 "--push: drop, counted, what waited longer than the server takes (default 1h, Pyroscope's "
	 "reject-older-than)",
	 K_FN, .fn = read_push_max_age, PUSH_RULE},
	{"push-max-samples", OPT_PUSH_MAX_SAMPLES, "N", 0,
	 "--push: send an interval of more stacks in parts of N (default 16000, Pyroscope's "
	 "max_profile_stacktrace_samples)",
	 K_UINT, AT(push.max_samples), .min = 1, .max = 1000000, .what = "number of stacks",
	 .unit = "1 to 1000000", PUSH_RULE},
	/* Naming. */
	{"guest-elf", OPT_GUEST_ELF, "PATH[:BIAS]", 0,
	 "Guest ELF image with its load bias (guest = link + BIAS); repeatable",
	 LIST(guest_elves, nguest_elves), ONE_QEMU_RULE},
	{"guest-symbols", OPT_GUEST_SYMBOLS, "FILE[:BIAS]", 0,
	 "Guest symbols from a System.map or /proc/kallsyms copy (guest = address + BIAS), e.g. a "
	 "VM's Linux kernel; repeatable",
	 LIST(guest_syms, nguest_syms), ONE_QEMU_RULE},
	/* The tool itself. */
	{"ringbuf-mb", OPT_RINGBUF, "MB", 0,
	 "Ring buffer MiB, a power of 2 (default 8; 16 with --uftrace; 32 with -a)", K_FN,
	 .fn = read_ringbuf},
	{"config", OPT_CONFIG, "FILE", 0,
	 "Read options from FILE first, one long option a line without its dashes (interval=60); "
	 "SIGHUP completes every file and starts again with FILE re-read",
	 K_NONE, .no_config = true},
	{"verbose", 'v', NULL, 0, "Say what is going on", K_FN, .fn = read_verbose},
	{NULL, 'h', NULL, OPTION_HIDDEN, "Show this help", K_NONE, .no_config = true},
};

#define NOPTS (sizeof(table) / sizeof(table[0]))

/* Which options were given, by their place in the table. */
static bool given[NOPTS];

static const struct opt *find_key(int key, size_t *at)
{
	for (size_t i = 0; i < NOPTS; i++)
		if (table[i].key == key) {
			if (at)
				*at = i;
			return &table[i];
		}
	return NULL;
}

static bool is_given(int key)
{
	size_t i;

	return find_key(key, &i) && given[i];
}

/* How messages name an option: -a for those with a letter, else --name. */
static const char *shown(const struct opt *d, char *buf, size_t len)
{
	if (d->key < 256)
		snprintf(buf, len, "-%c", d->key);
	else
		snprintf(buf, len, "--%s", d->name);
	return buf;
}

/* Read ARG of option D into O; false with WHY said. */
static bool read_value(const struct opt *d, struct engine_opts *o, char *arg, char *why, size_t len)
{
	char *p = (char *)o + d->off, *end;

	switch (d->kind) {
	case K_FLAG:
		*(bool *)p = true;
		return true;
	case K_STR:
		*(const char **)p = arg ? arg : d->def;
		return true;
	case K_LIST: {
		int *n = (int *)((char *)o + d->count_off);
		char ***v = (char ***)p;

		*v = xrealloc(*v, (*n + 1) * sizeof(char *));
		(*v)[(*n)++] = arg;
		return true;
	}
	case K_UINT: {
		unsigned long v;

		errno = 0;
		v = strtoul(arg, &end, 10);
		if (errno || *end || end == arg || *arg == '-' || v < d->min || v > d->max) {
			snprintf(why, len, "invalid %s '%s'%s%s%s", d->what, arg,
				 d->unit ? " (" : "", d->unit ? d->unit : "", d->unit ? ")" : "");
			return false;
		}
		if (d->size == sizeof(unsigned long))
			*(unsigned long *)p = v;
		else
			*(unsigned int *)p = (unsigned int)v;
		return true;
	}
	case K_SECS: {
		double v;

		errno = 0;
		v = strtod(arg, &end);
		if (errno || *end || end == arg || !(v > 0)) {
			snprintf(why, len, "invalid %s '%s'", d->what, arg);
			return false;
		}
		*(double *)p = v;
		return true;
	}
	case K_FN:
		return d->fn(o, arg, why, len);
	case K_NONE:
		break;
	}
	return true;
}

/* The rules between options; false with the first broken one said. */
static bool check_rules(char *why, size_t len)
{
	char a[48], b[48];

	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt *d = &table[i];
		bool met = !d->needs[0];

		if (!given[i])
			continue;
		for (size_t k = 0; k < 4 && d->needs[k]; k++)
			met |= is_given(d->needs[k]);
		if (!met) {
			if (d->needs_rule)
				snprintf(why, len, "%s", d->needs_rule);
			else
				snprintf(why, len, "%s goes with %s", shown(d, a, sizeof(a)),
					 shown(find_key(d->needs[0], NULL), b, sizeof(b)));
			return false;
		}
		if (d->excludes && is_given(d->excludes)) {
			if (d->excl_rule)
				snprintf(why, len, "%s", d->excl_rule);
			else
				snprintf(why, len, "%s and %s: one or the other",
					 shown(d, a, sizeof(a)),
					 shown(find_key(d->excludes, NULL), b, sizeof(b)));
			return false;
		}
	}
	return true;
}

/* What an option's default depends on: once every option is read. */
static void set_defaults(struct engine_opts *o)
{
	if (o->push.url && !o->push.app)
		o->push.app = "qemu-jitbpf";
	if (o->push.url && !o->push.spool_max)
		o->push.spool_max = 1440;
	if (o->push.url && !o->push.max_age)
		o->push.max_age = PUSH_MAX_AGE_DEFAULT;
	if (o->push.url && !o->push.max_samples)
		o->push.max_samples = PUSH_MAX_SAMPLES_DEFAULT;
	o->push.wall = o->prof.off_cpu;
	/* --stacks unwinds by CFI: the samples of running threads too. */
	if (o->stacks && !is_given(OPT_CALL_GRAPH))
		o->prof.stack_bytes = 16384;
	/* A host's QEMUs come and go for weeks; rotated profiles too. */
	if (!is_given(OPT_KEEP_EXITED) && o->all)
		keep_parse("10m,1000", &o->keep_exited);
	if (!is_given(OPT_KEEP_PROFILES) && o->prof.interval)
		keep_parse("7d,1000", &o->prof.keep);
	/* A hot-block table is counts. */
	for (int i = 0; i < o->cov.nfiles; i++)
		o->cov.counts |= coverage_format(o->cov.files[i]) == COV_HOT;
	o->cov.interval = o->prof.interval;
	o->cov.keep = o->prof.keep;
	/* Creating the ring costs ~0.3 ms per MiB at start-up.  -a gets
	 * more: a host starts QEMUs together, and each one's first TBs
	 * come at once (bench/soak.sh MODE=churn lost events with 8). */
	if (!o->ringbuf_mb)
		o->ringbuf_mb = o->all ? 32 : o->uftrace ? 16 : 8;
	/* Nothing asked: a perf map, as perf wants. */
	if (!o->perfmap && !o->jitdump && !o->uftrace && !o->profile && !o->cov.nfiles)
		o->perfmap = true;
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	struct engine_opts *o = state->input;
	const struct opt *d;
	char why[256];
	size_t i;

	switch (key) {
	case 'h':
		argp_state_help(state, stderr, ARGP_HELP_STD_HELP);
		return 0;
	case ARGP_KEY_ARG:
		/* Everything from here on is the QEMU command. */
		o->cmd = &state->argv[state->next - 1];
		state->next = state->argc;
		return 0;
	case ARGP_KEY_END:
		if (o->all && o->cmd)
			argp_error(state,
				   "-a traces every QEMU: no -p PID or QEMU-COMMAND with it");
		if (!check_rules(why, sizeof(why)))
			argp_error(state, "%s", why);
		if (o->prof.keep.age_ns && o->prof.keep.age_ns < o->prof.interval * 1000000000ull)
			argp_error(state, "--keep-profiles: an age under the --interval would keep "
					  "no profile");
		if (!o->all && !o->pid == !o->cmd)
			argp_error(state, "give either -p PID, -a or -- QEMU-COMMAND");
		set_defaults(o);
		return 0;
	case 'F':
		/* perf's -F HZ, or uftrace's -F FUNC: no function name is a
		 * number. */
		if (*arg < '0' || *arg > '9')
			key = OPT_FILTER;
		break;
	}
	d = find_key(key, &i);
	if (!d)
		return ARGP_ERR_UNKNOWN;
	given[i] = true;
	if (!read_value(d, o, arg, why, sizeof(why)))
		argp_error(state, "%s", why);
	return 0;
}

bool options_config_key(const char *name)
{
	for (size_t i = 0; i < NOPTS; i++)
		if (table[i].name && !strcmp(table[i].name, name))
			return !table[i].no_config;
	return false;
}

bool options_parse(struct engine_opts *o, int argc, char **argv)
{
	static struct argp_option argp_opts[NOPTS + 1];
	const struct argp argp = {
		.options = argp_opts,
		.parser = parse_arg,
		.doc = doc,
	};

	for (size_t i = 0; i < NOPTS; i++)
		argp_opts[i] = (struct argp_option){
			.name = table[i].name,
			.key = table[i].key,
			.arg = table[i].arg,
			.flags = table[i].flags,
			.doc = table[i].help,
		};
	o->prof.freq = 99;
	/* A usage error exits 2, argp's own too (the unit restarts on no 2). */
	argp_err_exit_status = 2;
	return !argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, o);
}

void options_free(struct engine_opts *o)
{
	free(o->qemus);
	free(o->guest_elves);
	free(o->guest_syms);
	free(o->prof.files);
	free(o->cov.files);
	free(o->cov.px);
	free(o->reports);
	callfilter_free(&o->ufilter);
}
