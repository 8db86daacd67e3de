/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The command line: every option declared once, in one table
 * (options.c), from which come argp's options and --help, the checks of
 * each value, the rules between options, the keys of a --config file and
 * what the man page must list (tests/tool.bats compares the two).
 */
#ifndef QJ_OPTIONS_H
#define QJ_OPTIONS_H

#include <stdbool.h>

#include "engine/engine.h"

/* Parse ARGV into *O, with the defaults that depend on other options;
 * false after a usage error (said, exit status 2). */
bool options_parse(struct engine_opts *o, int argc, char **argv);
/* Is NAME a long option a --config file may set? */
bool options_config_key(const char *name);
void options_free(struct engine_opts *o);

#endif
