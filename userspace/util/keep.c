// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/keep.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
