// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The options whose values need more than a range (options.c's table
 * names them): each reads its argument into struct engine_opts, or says
 * in one line what is wrong with it.
 */
#include "cli/values.h"
#include "coverage/coverage.h"
#include "naming/demangle.h"
#include "push/request.h"
#include "util/keep.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool no_cache;

bool options_no_cache(void)
{
	return no_cache;
}

bool read_profile(struct engine_opts *o, char *arg, char *why, size_t len)
{
	(void)why, (void)len;
	o->profile = o->profile_out = true;
	if (arg) {
		o->prof.files = xrealloc(o->prof.files, (o->prof.nfiles + 1) * sizeof(char *));
		o->prof.files[o->prof.nfiles++] = arg;
	}
	return true;
}

bool read_coverage(struct engine_opts *o, char *arg, char *why, size_t len)
{
	if (!arg)
		arg = "coverage.info";
	if (coverage_format(arg) == COV_BAD) {
		snprintf(why, len,
			 "--coverage: '%s' is not .info (lcov), .xml (Cobertura), .drcov or .csv "
			 "(hot blocks)",
			 arg);
		return false;
	}
	o->cov.files = xrealloc(o->cov.files, (o->cov.nfiles + 1) * sizeof(char *));
	o->cov.files[o->cov.nfiles++] = arg;
	return true;
}

bool read_coverage_prefix(struct engine_opts *o, char *arg, char *why, size_t len)
{
	char *eq = strchr(arg, '=');

	if (!eq || eq == arg) {
		snprintf(why, len, "--coverage-prefix: '%s' is not OLD=NEW", arg);
		return false;
	}
	*eq = 0;
	o->cov.px = xrealloc(o->cov.px, (o->cov.npx + 1) * sizeof(*o->cov.px));
	o->cov.px[o->cov.npx++] = (struct cov_prefix){arg, eq + 1};
	return true;
}

static bool read_keep(struct keep *k, const char *arg, char *why, size_t len)
{
	if (keep_parse(arg, k))
		return true;
	snprintf(why, len,
		 "invalid limit '%s' (a count, an age such as 10m, 12h or 7d, both as 7d,1000, "
		 "or 'all')",
		 arg);
	return false;
}

bool read_keep_exited(struct engine_opts *o, char *arg, char *why, size_t len)
{
	return read_keep(&o->keep_exited, arg, why, len);
}

bool read_keep_profiles(struct engine_opts *o, char *arg, char *why, size_t len)
{
	return read_keep(&o->prof.keep, arg, why, len);
}

bool read_call_graph(struct engine_opts *o, char *arg, char *why, size_t len)
{
	char *end;

	if (!strcmp(arg, "fp")) {
		o->prof.stack_bytes = 0;
	} else if (!strcmp(arg, "dwarf")) {
		o->prof.stack_bytes = 8192;
	} else if (!strncmp(arg, "dwarf,", 6)) {
		errno = 0;
		o->prof.stack_bytes = strtoul(arg + 6, &end, 0);
		if (errno || *end || end == arg + 6 || o->prof.stack_bytes < 64 ||
		    o->prof.stack_bytes > QJ_STACK_MAX || o->prof.stack_bytes % 8) {
			snprintf(why, len,
				 "invalid stack size '%s' (64 to %d bytes, a multiple of 8)",
				 arg + 6, QJ_STACK_MAX);
			return false;
		}
	} else {
		snprintf(why, len, "invalid call graph '%s' (fp or dwarf[,BYTES])", arg);
		return false;
	}
	return true;
}

bool read_ringbuf(struct engine_opts *o, char *arg, char *why, size_t len)
{
	char *end;

	errno = 0;
	o->ringbuf_mb = strtoul(arg, &end, 10);
	if (errno || *end || !o->ringbuf_mb || o->ringbuf_mb > 4096 ||
	    (o->ringbuf_mb & (o->ringbuf_mb - 1))) {
		snprintf(why, len, "invalid ring buffer size '%s' (power of 2, MiB)", arg);
		return false;
	}
	return true;
}

static bool read_filter(struct engine_opts *o, char *arg, char *why, size_t len, bool notrace)
{
	char err[160];

	if (!callfilter_add(&o->ufilter, arg, notrace, err, sizeof(err)))
		return true;
	snprintf(why, len, "invalid function '%s': %s", arg, err);
	return false;
}

bool read_in(struct engine_opts *o, char *arg, char *why, size_t len)
{
	return read_filter(o, arg, why, len, false);
}

bool read_notrace(struct engine_opts *o, char *arg, char *why, size_t len)
{
	return read_filter(o, arg, why, len, true);
}

bool read_time_filter(struct engine_opts *o, char *arg, char *why, size_t len)
{
	if (callfilter_parse_time(arg, &o->ufilter.time_ns) && o->ufilter.time_ns)
		return true;
	snprintf(why, len, "invalid time '%s' (e.g. 500ns, 1us, 2.5ms, 1s)", arg);
	return false;
}

bool read_push(struct engine_opts *o, char *arg, char *why, size_t len)
{
	(void)why, (void)len;
	o->push.url = arg;
	o->profile = true;
	return true;
}

bool read_push_app(struct engine_opts *o, char *arg, char *why, size_t len)
{
	char err[160];

	if (!push_app_valid(arg, err, sizeof(err))) {
		snprintf(why, len, "invalid service name '%s': %s", arg, err);
		return false;
	}
	o->push.app = arg;
	return true;
}

bool read_push_api(struct engine_opts *o, char *arg, char *why, size_t len)
{
	if (push_api_parse(arg, &o->push.api))
		return true;
	snprintf(why, len, "invalid API '%s' (pyroscope, pyroscope-ingest or parca)", arg);
	return false;
}

bool read_push_max_age(struct engine_opts *o, char *arg, char *why, size_t len)
{
	struct keep k;

	if (!keep_parse(arg, &k) || k.count || k.age_ns < 60000000000ull) {
		snprintf(why, len, "invalid age '%s' (a minute or more: 30m, 1h)", arg);
		return false;
	}
	o->push.max_age = (unsigned int)(k.age_ns / 1000000000ull);
	return true;
}

bool read_report(struct engine_opts *o, char *arg, char *why, size_t len)
{
	(void)why, (void)len;
	/* Its CPU split comes from samples. */
	o->report = o->profile = true;
	o->reports = xrealloc(o->reports, (o->nreports + 1) * sizeof(char *));
	/* (Without FILE: "-", the table on stderr.) */
	o->reports[o->nreports++] = arg ? arg : "-";
	return true;
}

bool read_timeline(struct engine_opts *o, char *arg, char *why, size_t len)
{
	(void)why, (void)len;
	/* The report's rows, in time; its phases come from samples. */
	o->report = o->profile = true;
	o->timeline = arg;
	return true;
}

bool read_stacks(struct engine_opts *o, char *arg, char *why, size_t len)
{
	(void)why, (void)len;
	/* The sampler's BPF side knows where each vCPU's registers are. */
	o->stacks = o->profile = true;
	o->stacks_file = arg;
	return true;
}

bool read_top(struct engine_opts *o, char *arg, char *why, size_t len)
{
	(void)arg, (void)why, (void)len;
	o->profile = o->top = true;
	return true;
}

bool read_perfmap_insn(struct engine_opts *o, char *arg, char *why, size_t len)
{
	(void)arg, (void)why, (void)len;
	o->perfmap = o->perfmap_insn = true;
	return true;
}

bool read_no_demangle(struct engine_opts *o, char *arg, char *why, size_t len)
{
	(void)o, (void)arg, (void)why, (void)len;
	demangle_enable(false);
	return true;
}

bool read_no_cache(struct engine_opts *o, char *arg, char *why, size_t len)
{
	(void)o, (void)arg, (void)why, (void)len;
	no_cache = true;
	return true;
}

bool read_verbose(struct engine_opts *o, char *arg, char *why, size_t len)
{
	(void)o, (void)arg, (void)why, (void)len;
	verbose++;
	return true;
}
