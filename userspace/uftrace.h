/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Writer of uftrace data directories (formats.md §3) from QEMU's guest call
 * and return events: one task per guest thread, ENTRY and EXIT records
 * nested by a shadow stack per thread, symbols of the guest images in the
 * old .sym format that uftrace 0.13 reads.
 */
#ifndef QJ_UFTRACE_H
#define QJ_UFTRACE_H

#include <stdint.h>
#include <sys/types.h>

#include "guest.h"

struct uftrace;

/* NULL, with the reason printed, when DIR cannot be used. */
struct uftrace *uftrace_open(const char *dir);
/* N events of thread TID; LOST: events of TID lost so far. */
void uftrace_events(struct uftrace *u, uint32_t tid, const void *events, uint32_t n, uint64_t lost);
/* Thread TID lost LOST events in all: mark what is not marked yet at its end. */
void uftrace_lost_at_end(struct uftrace *u, uint32_t tid, uint64_t lost);
/* Write info, task.txt, the map and symbols; 0 or -errno. */
int uftrace_close(struct uftrace *u, pid_t pid, struct guest *g, const char *exename,
		  const char *cmdline, uint64_t *bytes);
uint64_t uftrace_records(const struct uftrace *u);
/* Remove what was written so far: DIR is left as uftrace_open() found it. */
void uftrace_discard(struct uftrace *u);

#endif
