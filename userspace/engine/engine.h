/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The engine: one run of the tool, whatever the mode.  It loads and
 * attaches the BPF programs, drains their ring buffer in one loop, hands
 * each record to the session of its process, follows processes as they
 * fork, exec and exit, and completes each one's files when it ends.
 *
 * What it follows is the scope: a process tree (the QEMU given with -p,
 * or the one launched, and every process forked from it, and what those
 * exec), each attached one by one; or every QEMU of the host (-a),
 * through each QEMU binary.
 */
#ifndef QJ_ENGINE_H
#define QJ_ENGINE_H

#include <signal.h>
#include <stdio.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/output.h"
#include "engine/probes.h"
#include "engine/retention.h"
#include "engine/session.h"
#include "engine/target.h"
#include "util/u64map.h"
#include "util/pidtab.h"
#include "coverage/coverage.h"
#include "profiler/profiler.h"
#include "report/report.h"
#include "push/push.h"
#include "writers/callfilter.h"
#include "writers/uftrace.h"

/* What to do, as the command line says it (main.c checks it). */
struct engine_opts {
	pid_t pid;	    /* -p */
	char **cmd;	    /* -- QEMU-COMMAND */
	bool all;	    /* -a */
	const char **qemus; /* -a: --qemu binaries to watch too */
	int nqemus;
	bool perfmap;
	bool perfmap_insn;
	bool jitdump;
	const char *uftrace;	   /* DIR */
	struct callfilter ufilter; /* -F FUNC, -N, -D, -t */
	const char *outdir;	   /* -o, resolved, or NULL */
	double duration;	   /* -d, 0 for none */
	char **guest_elves;
	int nguest_elves;
	char **guest_syms;
	int nguest_syms;
	unsigned long ringbuf_mb;
	struct keep keep_exited; /* --keep-exited */
	bool profile;		 /* sample, for --profile or --top */
	bool profile_out;	 /* --profile: write files */
	bool top;
	struct profiler_opts prof;
	struct push_opts push; /* --push, if push.url */
	struct coverage_opts cov;
	/* --report: FILEs (.json, else text); with none given, text on stderr. */
	const char **reports;
	int nreports;
	bool report;
	unsigned report_rows;	 /* ended processes' rows kept (0: the default) */
	const char *timeline;	 /* --timeline FILE */
	bool stacks;		 /* --stacks: each QEMU's guest threads, then stop */
	const char *stacks_file; /* NULL or "-": standard output */
};

/* Do the outputs need translated code (the prologue, TB reports)? */
static inline bool engine_wants_code(const struct engine_opts *o)
{
	return o->perfmap || o->jitdump || o->profile || o->cov.nfiles;
}

/*
 * Run until *EXITING, -d, or the end of what is followed; returns the
 * exit status: a launched QEMU's own when it failed, 1 for an error of
 * ours (printed), else 0.
 */
int engine_run(struct engine_opts *o, volatile sig_atomic_t *exiting);

/* The longest a QEMU's fork takes, from its fork_start() (where it
 * decides whether its child waits for us) to the fork event: its address
 * space is copied in between. */
#define FORK_SPAN_NS (20ull * 1000 * 1000)

/* A process followed: its QEMU, its session, and our links into it. */
struct proc {
	struct target own;
	struct target *t; /* &own, or the engine's root */
	struct session s;
	const struct binary *bin;
	struct linkset links; /* a tree: ours in this process */
	uint64_t attached_ns; /* when they were */
	uint64_t follows_ns;  /* a tree: its children wait for us from then on */
	bool unfollowed;      /* forked before its parent's children waited */
	char *cmdline;	      /* for uftrace, read while it runs */
	uint64_t start;	      /* its start time (proc_stat()) */
	bool own_uft;	      /* -a: its uftrace data are its own */
	bool asked;	      /* we asked for its handshake */
	bool known;	      /* a stock QEMU's guest_base is in the procs map */
	bool given_up;	      /* and it never answered */
	uint64_t gone_ns;     /* seen gone, its exit record not */
	/* Its exit or exec record: the CPU time of its threads by then, its
	 * start (CLOCK_MONOTONIC); cpu_ns 0: none came. */
	uint64_t cpu_ns, start_ns, end_ns;
	uint64_t cpu_base_ns;	       /* the CPU time when this program began (exec) */
	struct report_proc *row;       /* --report: its row */
	bool row_ended;		       /* (complete but for its last samples) */
	bool after_exec;	       /* its program came by an exec */
	bool stacked;		       /* --stacks: its threads are written */
	uint64_t named_ns;	       /* --stacks: when its handshake came */
	struct thread_sample *sampled; /* --stacks: its running threads' */
	int nsampled;
	struct pidtab_node node; /* in the engine's table, by its pid */
};

static inline struct proc *proc_of(struct pidtab_node *n)
{
	return n ? (struct proc *)((char *)n - offsetof(struct proc, node)) : NULL;
}

struct engine {
	struct engine_opts *o;
	volatile sig_atomic_t *exiting;
	const struct scope *scope; /* a tree, or every QEMU of the host */
	struct warmup *warm;	   /* a tree: the first uprobe, paid early */
	struct probes probes;
	struct ring_buffer *rb;
	struct profiler prof;
	bool profiling;
	struct pusher *pusher; /* --push */
	struct linkset links;  /* tracepoints; -a: every binary's probes */
	struct binary **bins;  /* the QEMU binaries seen */
	size_t nbins, bins_cap;
	/* Emulators binfmt_misc opened (flag F), held open: the paths of
	 * their binaries are /proc/self/fd/N (binfmt.h). */
	int *emulator_fds;
	size_t nemulator_fds, emulator_fds_cap;
	struct pidtab procs; /* the processes followed */
	/* -a: an exec whose new program is taken in when it reports: when,
	 * and the process's CPU then (its new program's start), by pid. */
	struct u64map exec_ts, exec_cpu;
	/* The outputs asked for, in order, NULL-terminated (output.h). */
	const struct output *outputs[8];
	long long uft_records; /* a tree's uftrace records, -1 without */
	struct report report;  /* --report: a row per program run */
	uint64_t report_at;    /* --interval: when it was last written */
	struct target root;    /* a tree: the QEMU the user named */
	bool root_ended;       /* its files are complete */
	struct uftrace *uft;   /* a tree: one data directory for all */
	struct retention ret;  /* --keep-exited */
	struct coverage *cov;  /* --coverage: what ran, of every process */
	char *root_map;	       /* what the summary names */
	char *root_marker;
	char *root_exe;
	char *root_cmdline;
	uint64_t attached_ns; /* all our probes attached, for handshakes */
	uint64_t ring_ts;     /* the newest record read from the ring */
	uint64_t heard_ns;    /* what we have read of the ring covers until */
	int err;	      /* the first error of the run */
	bool done;	      /* an output has all it wants: stop */
	FILE *stacks_out;     /* --stacks */
	unsigned stacks_dumped;
	bool nameless;	  /* the root never answered: no files */
	bool stock_noted; /* what a stock QEMU cannot do was said */
	/* What happened, for the summary. */
	uint64_t seen, forks, tbs, flushes, bytes, maps, jitdumps, uftraces, unnamed;
	uint64_t unfollowed; /* forked while we attached, gone before we could */
	uint64_t tbs_early, tbs_kept, tbs_held, tbs_cached, tbs_incomplete;
	uint64_t calls_waits; /* QEMU waited for us to read its calls */
};

/* The outputs E's options ask for, begun (output.h): 0 or -errno, said. */
int engine_begin_outputs(struct engine *e);
/* Each output of E asked for, in order. */
#define for_each_output(e, out) for (const struct output *const *out = (e)->outputs; *out; out++)

/* summary.c: what the run did, at its end; -p on a terminal: what came
 * so far, once a second. */
void engine_summary(struct engine *e);
void engine_status_line(struct engine *e);

/*
 * A stock QEMU's TB that no later translation of its thread finished is
 * read from its process after this long (probes_stock_sweep()).
 */
#define QJ_STOCK_SWEEP_NS (200ull * 1000 * 1000)

/* Why a process ends that runs on: we stop following it. */
#define PROC_RUNNING "still running"

/* procs.c: the processes followed. */
struct proc *procs_find(struct engine *e, pid_t pid);
/*
 * A process to follow: T (the root's target) or, if NULL, what /proc says
 * of PID.  ASK: ask it for its handshake.
 */
struct proc *procs_new(struct engine *e, pid_t pid, struct target *t, bool ask);
/*
 * The guest's command line in a linux-user QEMU's CMDLINE: from the guest
 * program on, past QEMU's options; ARGV0: QEMU was started by binfmt_misc
 * with flag P (it has the program's path, then the guest's own argv[0],
 * where the guest's command line starts).  SYSTEM: a system emulator's,
 * which is all its own.
 */
char *proc_command(const char *cmdline, bool argv0, bool system);
/* Was PID started by binfmt_misc with flag P (AT_FLAGS_PRESERVE_ARGV0)? */
bool proc_preserves_argv0(pid_t pid);
/* Ask P for its handshake (a child that waits after its fork: FORKED). */
void procs_ask(struct proc *p, bool forked);
/* P's records begin at TS; forked by PARENT's thread TID, if PARENT. */
void procs_begin(struct engine *e, struct proc *p, const struct proc *parent, uint32_t tid,
		 uint64_t ts);
/* A ring buffer record: to the session of its process (ring_buffer_sample_fn). */
int procs_event(void *ctx, void *data, size_t size);
/* A stock QEMU's TB, read by probes_stock_sweep(): as if from the ring. */
void procs_block(void *ctx, const struct qj_block *r);
/*
 * Each process: its handshake; the samples old enough to name; and, if
 * REAP (the ring is drained), whether it is gone without a word.
 */
void procs_tick(struct engine *e, uint64_t now, bool reap);
/* P's program has ended (WHY: exit, exec), or we stop: complete its
 * files and forget it.  GONE: so is the process, and our links into it. */
void procs_end(struct engine *e, struct proc *p, const char *why, bool gone);
/* Complete the files of every process, and forget them. */
void procs_end_all(struct engine *e, const char *why);
/* Ask every QEMU that counts (--coverage-counts) for its counts so far;
 * how many were asked. */
size_t procs_request_counts(struct engine *e);
/* The same before we leave QEMUs that run on: wait for their answers. */
void procs_last_counts(struct engine *e);
/* Forget every process without writing anything (an error). */
void procs_free_all(struct engine *e);

#endif
