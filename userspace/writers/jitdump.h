/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Writer of perf's jitdump format (formats.md §2) into the marker file that
 * QEMU created and mapped: header, then DEBUG_INFO + CODE_LOAD per range.
 * Records that arrive before QEMU reported the marker are kept in memory
 * and written after the header.
 */
#ifndef QJ_JITDUMP_H
#define QJ_JITDUMP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct jd_line {
	uint64_t addr;
	int line;
	const char *file;
};

struct jitdump;

/* FOREIGN: QEMU runs in another mount namespace (a container). */
struct jitdump *jitdump_new(pid_t pid, uid_t uid, uint32_t elf_mach, bool foreign);
/*
 * Open the marker QEMU mapped at ADDR, which it names PATH: the mapped
 * file itself, never what PATH names in our namespace.
 */
int jitdump_open(struct jitdump *j, const char *path, uint64_t addr);
bool jitdump_is_open(const struct jitdump *j);
const char *jitdump_path(const struct jitdump *j);
void jitdump_load(struct jitdump *j, uint64_t ts, uint32_t tid, uint64_t addr, const uint8_t *code,
		  uint64_t size, const char *name, const struct jd_line *lines, size_t nlines);
/* Complete the file; returns 0 or -errno; adds what it wrote to *bytes. */
int jitdump_close(struct jitdump *j, uint64_t *bytes);
/* Drop what was written: the marker is left empty, as QEMU made it. */
void jitdump_discard(struct jitdump *j);

#endif
