// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/keep.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One item of a spec: an age (with a unit) or a count. */
static bool keep_item(const char *s, size_t len, struct keep *k, bool *had_age, bool *had_count)
{
	static const struct {
		char unit;
		uint64_t s;
	} units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};
	char buf[32], *end;
	unsigned long long v;

	if (!len || len >= sizeof(buf) || *s < '0' || *s > '9')
		return false;
	memcpy(buf, s, len);
	buf[len] = 0;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || !v)
		return false;
	if (!*end) {
		if (*had_count || v > 100000000)
			return false;
		*had_count = true;
		k->count = v;
		return true;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (end[0] == units[i].unit && !end[1]) {
			/* At most ten years. */
			if (*had_age || v * units[i].s > 3650ull * 86400)
				return false;
			*had_age = true;
			k->age_ns = v * units[i].s * 1000000000ull;
			return true;
		}
	return false;
}

bool keep_parse(const char *spec, struct keep *k)
{
	struct keep n = {.on = true};
	bool had_age = false, had_count = false;
	const char *comma;

	if (!strcmp(spec, "all")) {
		*k = (struct keep){0};
		return true;
	}
	comma = strchr(spec, ',');
	if (!keep_item(spec, comma ? (size_t)(comma - spec) : strlen(spec), &n, &had_age,
		       &had_count))
		return false;
	if (comma && (strchr(comma + 1, ',') ||
		      !keep_item(comma + 1, strlen(comma + 1), &n, &had_age, &had_count)))
		return false;
	*k = n;
	return true;
}

/* An age as the user would write it: 90s, 10m, 36h, 7d. */
static void age_str(uint64_t ns, char *buf, size_t len)
{
	uint64_t s = ns / 1000000000ull;

	if (s % 86400 == 0)
		snprintf(buf, len, "%llud", (unsigned long long)(s / 86400));
	else if (s % 3600 == 0)
		snprintf(buf, len, "%lluh", (unsigned long long)(s / 3600));
	else if (s % 60 == 0)
		snprintf(buf, len, "%llum", (unsigned long long)(s / 60));
	else
		snprintf(buf, len, "%llus", (unsigned long long)s);
}

const char *keep_str(const struct keep *k, char *buf, size_t len)
{
	char age[32];

	if (!k->on) {
		snprintf(buf, len, "all");
		return buf;
	}
	age_str(k->age_ns, age, sizeof(age));
	if (k->age_ns && k->count)
		snprintf(buf, len, "%s,%zu", age, k->count);
	else if (k->age_ns)
		snprintf(buf, len, "%s", age);
	else
		snprintf(buf, len, "%zu", k->count);
	return buf;
}

/* FILE with STAMP before its suffix: p.pb.gz -> p.STAMP.pb.gz. */
static char *stamped(const char *file, const char *stamp)
{
	const char *base = path_base(file), *dot;
	size_t len = before_suffix(file, ".pb.gz");

	if (len)
		dot = file + len;
	else if ((dot = strrchr(base, '.')) == base)
		dot = NULL;
	if (!dot)
		return xasprintf("%s.%s", file, stamp);
	return xasprintf("%.*s.%s%s", (int)(dot - file), file, stamp, dot);
}

#define STAMP_FMT "%Y%m%dT%H%M%SZ"
#define STAMP_LEN 16

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* NAME is PREFIX, a stamp, then SUFFIX: its time, else -1. */
static time_t stamp_of(const char *name, const char *prefix, const char *suffix)
{
	size_t n = strlen(name), np = strlen(prefix), ns = strlen(suffix);
	struct tm tm = {0};
	char stamp[STAMP_LEN + 1];
	const char *end;

	if (n != np + STAMP_LEN + ns || strncmp(name, prefix, np) || strcmp(name + n - ns, suffix))
		return -1;
	memcpy(stamp, name + np, STAMP_LEN);
	stamp[STAMP_LEN] = 0;
	end = strptime(stamp, STAMP_FMT, &tm);
	return end && !*end ? timegm(&tm) : -1;
}

size_t keep_prune_intervals(const char *file, const struct keep *k, time_t now, const char *why)
{
	size_t removed = 0;
	char *pattern = stamped(file, "\x01"), *mark = strchr(pattern, 1);
	const char *prefix = path_base(pattern), *suffix = mark + 1;
	char *dirpath = prefix > pattern ? strndup(pattern, prefix - pattern) : xstrdup("./");
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int fd;

	*mark = 0;
	d = dirpath ? opendir(dirpath) : NULL;
	fd = d ? dirfd(d) : -1;
	while (d && (de = readdir(d)))
		if (stamp_of(de->d_name, prefix, suffix) >= 0) {
			grow(&names, &cap, n + 1, sizeof(*names));
			names[n++] = xstrdup(de->d_name);
		}
	sort_array(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		time_t t = stamp_of(names[i], prefix, suffix);
		/* (Never the newest: the file just written.) */
		bool over = k->count && n - i > k->count && i + 1 < n;
		bool old = k->age_ns && t + (time_t)(k->age_ns / 1000000000ull) < now && i + 1 < n;

		if ((over || old) && !unlinkat(fd, names[i], 0)) {
			pr_dbg("removed %s%s (%s)", dirpath, names[i], why);
			removed++;
		}
		free(names[i]);
	}
	free(names);
	if (d)
		closedir(d);
	free(dirpath);
	free(pattern);
	return removed;
}

char *keep_interval_name(const char *file, time_t start)
{
	char stamp[32];
	struct tm tm;

	gmtime_r(&start, &tm);
	strftime(stamp, sizeof(stamp), STAMP_FMT, &tm);
	return stamped(file, stamp);
}
