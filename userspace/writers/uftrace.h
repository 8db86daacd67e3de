/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Writer of uftrace data directories (formats.md §3) from QEMU's guest call
 * and return events, laid out as native `uftrace record` lays out a process
 * tree: one task per guest thread, a session per program a process runs
 * (its start, then each exec), a FORK line per child, whose main thread
 * goes on with the call stack of the thread that forked it.  ENTRY and EXIT
 * records are nested by a shadow stack per thread; the symbols of the guest
 * images are written in the old .sym format that uftrace 0.13 reads.
 */
#ifndef QJ_UFTRACE_H
#define QJ_UFTRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "naming/guest.h"

struct uftrace;
struct callfilter;

/*
 * NULL, with the reason printed, when DIR cannot be used.  Earlier
 * uftrace data in DIR goes to DIR.old, as uftrace record does; a DIR
 * that holds anything else is refused.  FILTER (kept, may be NULL):
 * uftrace record's -F, -N, -D and -t (callfilter.h).
 */
struct uftrace *uftrace_open(const char *dir, const struct callfilter *filter);
/* Process PID starts a program at TS: when first seen, or after an exec. */
void uftrace_begin(struct uftrace *u, pid_t pid, uint64_t ts);
/* Thread TID of PID forked CHILD at TS; CHILD goes on with TID's calls. */
void uftrace_fork(struct uftrace *u, pid_t pid, uint32_t tid, pid_t child, uint64_t ts);
/* N events of thread TID of PID; LOST: events of TID lost just before.
 * G names the functions for the filters. */
void uftrace_events(struct uftrace *u, pid_t pid, uint32_t tid, const void *events, uint32_t n,
		    uint64_t lost, struct guest *g);
/*
 * Thread TID lost LOST events after its last record: mark them there.
 * False if TID has no record to mark them after.
 */
bool uftrace_lost_at_end(struct uftrace *u, uint32_t tid, uint64_t lost);
/*
 * PID's program ends (exit or exec): write its session's map and the
 * symbols of its images, G, now; EXENAME names it.  Its threads' calls
 * still open stay open, as uftrace record leaves them.
 */
void uftrace_end(struct uftrace *u, pid_t pid, struct guest *g, const char *exename);
/* Write info and task.txt (EXENAME and CMDLINE: the first program's); 0 or -errno. */
int uftrace_close(struct uftrace *u, const char *exename, const char *cmdline, uint64_t *bytes);
uint64_t uftrace_records(const struct uftrace *u);
const char *uftrace_dir(const struct uftrace *u);
/* Remove what was written so far: DIR is left as uftrace_open() found it. */
void uftrace_discard(struct uftrace *u);

#endif
