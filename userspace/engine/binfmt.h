/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * binfmt_misc's entries: what each says, and the emulator one registered
 * with flag F runs (binfmt.c).
 */
#ifndef QJ_BINFMT_H
#define QJ_BINFMT_H

#include <limits.h>
#include <stdbool.h>

struct binfmt_entry {
	bool enabled;
	bool fix_binary; /* F: the kernel opened the emulator at registration */
	bool extension;	 /* matched by a name's extension, not a magic */
	char interpreter[PATH_MAX];
	unsigned long offset;
	unsigned char magic[128], mask[128];
	int magic_len, mask_len; /* -1: none, or not read */
};

/* The entry at PATH (/proc/sys/fs/binfmt_misc/NAME): 0 or -errno. */
int binfmt_entry_read(const char *path, struct binfmt_entry *b);

/*
 * The emulator that entry B (enabled, with a magic) runs, opened
 * read-only, close-on-exec: an fd, or -errno.  It starts an executable
 * B matches, traced, and kills it at its exec, before the emulator runs.
 */
int binfmt_emulator_fd(const struct binfmt_entry *b);

#endif
