/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ELF notes: finding a note by owner and type (build ids), and the
 * stapsdt notes of USDT probes: which probes a binary has, and where a
 * probe's semaphore lies in the file.
 */
#ifndef QJ_ELFNOTES_H
#define QJ_ELFNOTES_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Call FN on the descriptor of each note of TYPE whose owner is NAME, until
 * FN returns true; true if one did.
 */
bool elf_find_note(Elf *elf, const char *name, uint32_t type,
		   bool (*fn)(const void *desc, size_t size, void *ctx), void *ctx);

/* Has BINARY the PROVIDER:NAME USDT probe? */
bool elf_has_usdt(const char *binary, const char *provider, const char *name);
/* File offset of the semaphore of PROVIDER:NAME in BINARY, or -ENOENT. */
int elf_usdt_semaphore(const char *binary, const char *provider, const char *name,
		       uint64_t *file_off);

#endif
