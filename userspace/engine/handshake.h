/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Our side of QEMU's late-attach handshake (docs/probes.md): once every
 * probe is attached, raise QEMU's request counter, the semaphore of
 * qemu:jit_attach_request, and wait for a jit_attach event whose poll came
 * after that; ask again if none comes, give up after a bounded time.
 */
#ifndef QJ_HANDSHAKE_H
#define QJ_HANDSHAKE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/target.h"

/* Ask again after, and give up after (ns). */
#define QJ_HANDSHAKE_RETRY_NS	(1000ull * 1000 * 1000)
#define QJ_HANDSHAKE_TIMEOUT_NS (5000ull * 1000 * 1000)

struct handshake {
	pid_t pid;
	uint64_t addr;	      /* of the request counter in QEMU */
	uint64_t attached_ns; /* all our probes were attached by then */
	uint64_t asked_ns;    /* last request */
	unsigned int asks;
	bool answered;
	bool checked;		 /* what the answer brought, by session_check_handshake() */
	unsigned int handshakes; /* jit_attach events seen, ours or not */
	/* A stock QEMU has no handshake: "answered" once its guest_base is
	 * known (session_stock_begin()), given up after the same time. */
	bool stock;
};

/* Find the request counter of QEMU T; -errno with the reason printed. */
int handshake_init(struct handshake *h, const struct target *t);
/*
 * Our probes are all attached: ask, adding STEP to the request counter: 2
 * for a child that waits after its fork, whose copy of the counter may
 * hold a request its parent was asked while it forked (QEMU waits for two
 * past its parent's value).  -errno with the reason printed.
 */
int handshake_start(struct handshake *h, uint16_t step);
/* A jit_attach event: QEMU saw a request at POLL_NS (CLOCK_MONOTONIC). */
void handshake_event(struct handshake *h, uint64_t poll_ns);
/* While unanswered: ask again when due; -ETIMEDOUT once it is too late. */
int handshake_poll(struct handshake *h, uint64_t now);

#endif
