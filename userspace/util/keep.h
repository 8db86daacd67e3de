/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * How long and how many of something to keep (--keep-exited,
 * --keep-profiles): "AGE[,COUNT]" or "COUNT[,AGE]", an age being a number
 * with s, m, h or d after it (10m, 7d) and a count a plain number (1000);
 * "all" keeps everything.  Whichever limit comes first applies.
 */
#ifndef QJ_KEEP_H
#define QJ_KEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct keep {
	bool on;	 /* anything is ever removed */
	uint64_t age_ns; /* 0: no age limit */
	size_t count;	 /* 0: no count limit */
};

/* Parse SPEC into *K; false (with *K untouched) if it is not one. */
bool keep_parse(const char *spec, struct keep *k);
/* "10m and 1000 files" for messages: at most LEN bytes into BUF. */
const char *keep_str(const struct keep *k, char *buf, size_t len);

#endif
