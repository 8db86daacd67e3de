/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The QEMU process to trace: an existing one (-p PID) or one we launch
 * (-- QEMU-COMMAND), stopped right after exec until the probes are
 * attached.  Each check fails with one line that says what to do.
 */
#ifndef QJ_TARGET_H
#define QJ_TARGET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/procfile.h"

struct target {
	pid_t pid;
	int pidfd;	       /* readable once QEMU has exited, or -1 */
	char exe[4096];	       /* the QEMU binary, as /proc/PID/exe resolves */
	struct proc_view view; /* QEMU's files, as QEMU sees them */
	uid_t uid;
	gid_t gid;
	uint16_t host_machine; /* e_machine of the QEMU binary */
	bool system;	       /* a system emulator (qemu-system-*), not linux-user */
	bool stock;	       /* no probes of ours: the degraded mode (probes.h) */
	bool launched;
	/* Launched, and no QEMU: a wrapper (unshare, a shell, make) whose
	 * process tree is followed to the QEMUs it runs. */
	bool native;
	bool stopped; /* launched, stopped at exec until target_resume() */
	bool held;    /* launched, kept from running guest code until then */
	bool exited;
	/* Its last thread has exited (the BPF side says so): it frees its
	 * memory, then it is reaped. */
	bool ended;
	bool reaped;	 /* launched, and its own exit (not ours) gave status */
	int status;	 /* wait status of a launched QEMU once reaped */
	double cpu_s;	 /* CPU time of a launched QEMU once exited, user + system */
	long maxrss_kib; /* and its peak RSS */
};

int target_attach(struct target *t, pid_t pid);
/*
 * -a: what /proc still says of PID (exe, owner), quietly; -errno once it
 * is gone, with T usable all the same (root's, exe unknown).
 */
int target_observe(struct target *t, pid_t pid);
/* What a launched QEMU does while we attach. */
enum target_hold {
	HOLD_NONE,    /* wait for our probes after its initialization */
	HOLD_REPORTS, /* run on and hold its reports until we listen */
	HOLD_CALLS,   /* the same, with calls and returns reported from the start */
};
/*
 * Start ARGV stopped after exec; JITDUMP_DIR, when set, for QEMU.  A QEMU
 * that cannot HOLD waits instead.  COUNTS: it counts its blocks' executions
 * from the first on (--coverage-counts).
 */
int target_launch(struct target *t, char **argv, const char *jitdump_dir, enum target_hold hold,
		  bool counts);
/* Let a launched QEMU run guest code (once the probes are attached). */
void target_resume(struct target *t);
/* Kill a launched QEMU we cannot trace (its status is then not ours). */
void target_kill(struct target *t);
bool target_alive(struct target *t);
/* Wait until a launched QEMU that has ended is reaped (its status, its CPU). */
void target_reap(struct target *t);
/* Sleep up to TIMEOUT_MS, less if QEMU exits or FD (if >= 0) is readable. */
void target_wait(struct target *t, int fd, int timeout_ms);
/*
 * What a launched QEMU's exit means for ours, as with strace or time: its
 * exit status, or 128 + the signal that killed it; -1 if it has not ended
 * on its own (attached, still running, or killed by us).
 */
int target_exit_code(const struct target *t);
void target_free(struct target *t);
/* QEMU's command line, arguments separated by spaces. */
char *target_cmdline(const struct target *t);

#endif
