/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --push: each interval's profile goes to Grafana Pyroscope's HTTP ingest
 * API as its own clients send it (POST /ingest?name=APP{labels}&from=&until=
 * &format=pprof, the pprof as the multipart field "profile").  Intervals
 * wait in a spool directory, one file each, and a sender thread sends them
 * oldest first, so a server that is down delays them, in order, and a tool
 * that stops leaves them for the next run; a spool that is full drops its
 * oldest, counted and said.
 */
#ifndef QJ_PUSH_H
#define QJ_PUSH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "profiler/profile.h"

struct push_opts {
	const char *url;       /* --push: the server's base URL */
	const char *app;       /* --push-app: the application name */
	const char *tenant;    /* --push-tenant: X-Scope-OrgID, or NULL */
	const char *auth_file; /* --push-auth: "Bearer TOKEN" or "USER:PASSWORD" */
	const char *spool;     /* --push-spool: DIR */
	unsigned int spool_max;
};

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
