/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --push: each interval's profile goes to a fleet store, Grafana
 * Pyroscope or Parca, through the API --push-api names (push/request.h).
 * Intervals wait in a spool directory, one file per part, and a sender
 * thread sends them oldest first, so a server that is down delays them, in
 * order, and a tool that stops leaves them for the next run.  What the
 * server calls invalid is dropped, counted, with its words; everything
 * else is tried again with backoff (honouring Retry-After) until the
 * interval is older than the server takes (--push-max-age); a spool that
 * is full drops its oldest, counted and said.  An interval larger than
 * the servers' default limits is cut into parts that each fit.
 */
#ifndef QJ_PUSH_H
#define QJ_PUSH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "profiler/profile.h"
#include "push/request.h"

struct push_opts {
	const char *url;       /* --push: the server's base URL */
	enum push_api api;     /* --push-api */
	const char *app;       /* --push-app: the service's name */
	const char *tenant;    /* --push-tenant: X-Scope-OrgID, or NULL */
	const char *auth_file; /* --push-auth: "Bearer TOKEN" or "USER:PASSWORD" */
	const char *spool;     /* --push-spool: DIR */
	unsigned int spool_max;
	unsigned int max_age;	  /* --push-max-age: seconds */
	unsigned int max_samples; /* --push-max-samples: stacks in a part */
	bool wall;		  /* --off-cpu: wall-clock profiles */
};

/* Defaults: Pyroscope's pkg/validation/limits.go, reject-older-than and
 * max_profile_stacktrace_samples. */
#define PUSH_MAX_AGE_DEFAULT	 3600
#define PUSH_MAX_SAMPLES_DEFAULT 16000

struct pusher;

/* Check the options and files; NULL with the reason printed. */
struct pusher *push_open(const struct push_opts *o);
/* Start sending (a thread); -errno with the reason printed. */
int push_start(struct pusher *p);
/* Spool PROF, the interval [FROM, UNTIL) (wall clock); the sender takes it. */
int push_interval(struct pusher *p, const struct profile *prof, time_t from, time_t until);
/* Send what the spool holds for up to TIMEOUT_MS more, stop the sender,
 * and say what was sent, what waits and what was dropped. */
void push_close(struct pusher *p, unsigned int timeout_ms);

#endif
