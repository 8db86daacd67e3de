/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --timeline: the report's processes in time, as a Chrome trace (the
 * Trace Event Format's JSON object form, which Perfetto and chrome://tracing
 * open).  A track per process, named by the command line of the program
 * it ran that used the most CPU, sorted right
 * below its parent's, with an arrow from the fork; on it a slice per
 * program it ran, and within that the phases its samples show (translate,
 * guest, lookup, helpers, kernel, qemu).
 */
#ifndef QJ_TIMELINE_H
#define QJ_TIMELINE_H

#include <stdio.h>

#include "report/report.h"

void timeline_write(const struct report *r, FILE *f);

#endif
