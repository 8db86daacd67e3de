/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * -a: every QEMU with the probes on this host, running now or started
 * later, forked or exec'd, each with its own files, and one profile.
 */
#ifndef QJ_HOST_H
#define QJ_HOST_H

#include <signal.h>
#include <stdbool.h>

#include "profiler.h"

struct host_opts {
	bool perfmap;
	bool jitdump;
	const char *uftrace;		  /* DIR: DIR/PID per process */
	const struct profiler_opts *prof; /* NULL: no --profile */
	const char **qemus;		  /* --qemu binaries to watch too */
	int nqemus;
	double duration; /* -d, 0 for none */
	unsigned long ringbuf_mb;
};

/* Run until *EXITING or -d; 0, or -errno with the reason printed. */
int host_run(const struct host_opts *o, volatile sig_atomic_t *exiting);

#endif
