/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host code that is live in QEMU's code buffer, as named ranges.
 * A flush kills every range but the prologue's; a new range replaces any
 * older one it overlaps.  The perf map is written from this, so it
 * describes the code that is live when the tool stops.
 */
#ifndef QJ_CODEMAP_H
#define QJ_CODEMAP_H

#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>

struct code_range {
	uint64_t host;
	uint32_t size;	  /* a TB's code is < 64 KiB, and so is the prologue */
	bool tb_end;	  /* the last guest instruction of its TB */
	bool plus_off;	  /* named NAME+0xOFF */
	uint64_t seq;	  /* order of arrival: newer wins an overlap */
	const char *name; /* its guest's or ELF file's, or static; NULL when not kept */
	uint64_t guest;	  /* guest pc of the code, where kept */
	uint64_t off;
};

struct codemap {
	struct code_range *v;
	size_t n, cap;
	uint64_t seq;
	struct code_range prologue;
	bool live;	/* sorted and without overlaps since the last change */
	size_t checked; /* leading ranges known to be in order */
};

void codemap_add(struct codemap *m, uint64_t host, uint64_t size, const char *name);
/*
 * The same, named "NAME+0xOFF" (lowercase hex): made only when written
 * (perfmap_write()), not for each of the tens of thousands of TBs of a
 * stripped program.
 */
void codemap_add_off(struct codemap *m, uint64_t host, uint64_t size, const char *name,
		     uint64_t off);
/* The same, for the code of the guest instruction at GUEST. */
void codemap_add_insn(struct codemap *m, uint64_t host, uint64_t size, const char *name,
		      uint64_t guest, bool tb_end);
/* The live range that holds HOST, or NULL. */
const struct code_range *codemap_find(struct codemap *m, uint64_t host);
void codemap_flush(struct codemap *m);
void codemap_set_prologue(struct codemap *m, uint64_t host, uint64_t size);
/* Sort and drop what newer ranges overlap; returns the live ranges. */
size_t codemap_live(struct codemap *m);
void codemap_free(struct codemap *m);
/* DST becomes a copy of SRC (a forked QEMU's code cache). */
void codemap_copy(struct codemap *dst, const struct codemap *src);

/* "BASE+0xOFF" in BUF (BASE cut to NAME_OFF_MAX - 20 bytes), without printf. */
#define NAME_OFF_MAX 512
const char *name_off(char buf[NAME_OFF_MAX], const char *base, uint64_t off);

#endif
