/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --config FILE: a service's options, one long option a line without its
 * dashes ("name" or "name = value"; "# comment" and blank lines), put on
 * the command line before its own, so that they parse as the command
 * line's and the command line's come last.
 */
#ifndef QJ_CONFIG_H
#define QJ_CONFIG_H

#include <stdbool.h>

/* The command line it makes: its own strings are V[1] to V[N - 1]. */
struct config_cmdline {
	char **v;
	int n;
};

/* --config FILE in ARGV (before a QEMU command), or NULL. */
const char *config_path(int argc, char **argv);
/*
 * *ARGC and *ARGV with FILE's options first; unchanged without --config.
 * False (said) if FILE cannot be read, is not that, or sets a name that
 * KNOWN does not know.
 */
bool config_cmdline(struct config_cmdline *c, int *argc, char ***argv,
		    bool (*known)(const char *name));
void config_free(struct config_cmdline *c);

#endif
