/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a run follows, behind one interface: a tree (the QEMU the user
 * named, launched or running, and every process forked from it:
 * scope-tree.c) or the host (-a: every process of every QEMU binary with
 * our probes: scope-host.c).  The engine and the process table call the
 * run's scope where the two differ; scope.c holds what they share, the
 * QEMU binaries known.
 */
#ifndef QJ_SCOPE_H
#define QJ_SCOPE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "engine/probes.h"

struct engine;
struct proc;

/* What a pid ran before its exec, for what it runs next. */
struct exec_before {
	struct linkset links; /* our links into it, which an exec keeps */
	const struct binary *bin;
	uint64_t attached_ns;
	uint64_t follows_ns;
	const char *interp; /* what execve ran, as it named it; NULL: unknown */
	const char *args;   /* its command line, spaces between; NULL: unknown */
};

struct scope {
	const char *name;
	/* BPF follows the forks of the processes followed (a tree). */
	bool follows_forks;
	/* Probes of both linux-user and system QEMUs, whatever runs first. */
	bool every_kind;
	/* The vCPU threads the sampler follows at once. */
	unsigned int vcpus;
	/* Records of a process not followed yet: take it in (a QEMU that
	 * started after us). */
	bool adopts;
	/* Before the BPF programs load: what to follow; *BIN, the binary
	 * they are loaded for, if there is one. */
	int (*find)(struct engine *e, const struct binary **bin);
	/* The guest frame chains the sampler walks (QJ_WALK_*). */
	unsigned int (*walkers)(const struct engine *e);
	/* Every probe in place; the QEMUs asked for their handshakes. */
	int (*attach)(struct engine *e, const struct binary *bin);
	/* Sleep until FD (the ring) is readable, or TIMEOUT_MS. */
	void (*wait)(struct engine *e, int fd, int timeout_ms);
	/* Each turn of the loop: an error ends the run. */
	int (*check)(struct engine *e);
	/* Is anything left to follow? */
	bool (*following)(struct engine *e);
	/* CHILD, just forked by PARENT at TS, is followed. */
	void (*forked)(struct engine *e, struct proc *parent, struct proc *child, uint64_t ts);
	/* PID exec'd at TS; BEFORE: what it ran (its files are complete). */
	void (*execd)(struct engine *e, pid_t pid, struct exec_before *before, uint64_t ts);
	/* We stopped following processes that run on (-d, Ctrl-C), at
	 * DETACHED_NS, and have read the last of their records. */
	void (*detached)(struct engine *e, uint64_t detached_ns);
};

extern const struct scope scope_tree, scope_host;

/*
 * scope.c: the binary PATH runs (or, if PATH is NULL, process PID runs),
 * if it is a QEMU with our probes; NULL if not (*ERR, if ERR, says why).
 */
const struct binary *scope_binary(struct engine *e, const char *path, pid_t pid, int *err);
/* What /proc/PID/exe resolves to, into EXE; false if gone or deleted. */
bool scope_exe_of(pid_t pid, char *exe, size_t size);
/* The binary known by the device and inode of ST, or NULL. */
const struct binary *scope_known(struct engine *e, const struct stat *st);
/*
 * The binaries to watch before any process runs them: those --qemu names
 * (-errno, said, for one that is no QEMU of ours nor a stock one) and, if
 * BINFMT, the emulator of each enabled binfmt_misc entry, the QEMU every
 * foreign executable will start.
 */
int scope_watch(struct engine *e, bool binfmt);
/*
 * B is a stock QEMU (the degraded mode): what the run asks for that it
 * cannot give is refused (-ENOTSUP, said), and what it cannot do is said
 * once a run.
 */
int scope_stock_check(struct engine *e, const struct binary *b);
/*
 * The sampler's probes in binary B (at PATH) for PID (-1: every process
 * of it) into LS, when it samples: where each vCPU thread's registers are
 * as it enters the execution loop, and, where B has the probe, every
 * vCPU's at each handshake, which --stacks needs (B without it is
 * refused).  0 or -errno, said.
 */
int scope_attach_vcpus(struct engine *e, const struct binary *b, const char *path, pid_t pid,
		       struct linkset *ls);
/* Drop LINKS, our links into a process (it runs no QEMU of ours now). */
void scope_drop_links(struct engine *e, struct linkset *links);

#endif
