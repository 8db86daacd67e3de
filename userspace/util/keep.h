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
#include <time.h>

struct keep {
	bool on;	 /* anything is ever removed */
	uint64_t age_ns; /* 0: no age limit */
	size_t count;	 /* 0: no count limit */
};

/* Parse SPEC into *K; false (with *K untouched) if it is not one. */
bool keep_parse(const char *spec, struct keep *k);
/* "10m and 1000 files" for messages: at most LEN bytes into BUF. */
const char *keep_str(const struct keep *k, char *buf, size_t len);

/*
 * Files written every interval: FILE with the interval's start (UTC)
 * before its suffix, p.pb.gz -> p.20261126T153000Z.pb.gz (malloc'd).
 */
char *keep_interval_name(const char *file, time_t start);
/*
 * FILE's interval files (its stamped names in its directory, whichever
 * run of the tool wrote them) beyond K's count or older than its age,
 * oldest first, never the newest, are removed (said with WHY under -v):
 * how many.
 */
size_t keep_prune_intervals(const char *file, const struct keep *k, time_t now, const char *why);

#endif
