/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Readers of the option values that need more than a range (values.c),
 * for the table of options.c.
 */
#ifndef QJ_VALUES_H
#define QJ_VALUES_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/engine.h"

/* Reads ARG into O; false with the error said in WHY. */
typedef bool opt_fn(struct engine_opts *o, char *arg, char *why, size_t len);

opt_fn read_profile;
opt_fn read_coverage;
opt_fn read_coverage_prefix;
opt_fn read_keep_exited;
opt_fn read_keep_profiles;
opt_fn read_call_graph;
opt_fn read_ringbuf;
opt_fn read_in;
opt_fn read_notrace;
opt_fn read_time_filter;
opt_fn read_push;
opt_fn read_push_app;
opt_fn read_push_api;
opt_fn read_push_max_age;
opt_fn read_report;
opt_fn read_timeline;
opt_fn read_stacks;
opt_fn read_top;
opt_fn read_perfmap_insn;
opt_fn read_no_demangle;
opt_fn read_no_cache;
opt_fn read_verbose;
/* --no-cache was given (the listing cache is off). */
bool options_no_cache(void);

#endif
