/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The guest's address space, as far as symbols go: which ELF image covers
 * a guest address, and with what load bias.  Images come from QEMU's
 * image probe (executable, interpreter; in system mode, ELF files QEMU
 * loads), from --guest-elf and --guest-symbols, and, for the
 * libraries the guest's own loader maps, from QEMU's /proc/PID/maps, where
 * they appear at guest_base + guest address.  Files are opened as QEMU
 * sees them (procfile.h): a mapped file through the mapping, else by its
 * path in QEMU's root.
 */
#ifndef QJ_GUEST_H
#define QJ_GUEST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "naming/symbols.h"
#include "util/procfile.h"

struct guest_image {
	uint64_t start, end;  /* guest addresses, end exclusive */
	uint64_t bias;	      /* guest address = link address + bias */
	struct elf_file *elf; /* NULL: not a readable ELF file; held */
	char *path;
	const char *base; /* the file's name in names of its code (in names) */
	bool user;	  /* from --guest-elf: wins over what QEMU reports */
};

struct guest_names;

struct guest {
	pid_t pid;	       /* QEMU process, 0 when there is none to read */
	struct proc_view view; /* its files as it sees them */
	uint64_t base;	       /* guest_base */
	bool base_known;
	struct guest_image *imgs; /* sorted by start, disjoint */
	size_t nimgs, cap;
	/* Images a new mapping replaced: code the code map names with them
	 * may still be live (a library unmapped). */
	struct guest_image *retired;
	size_t nretired, retired_cap;
	struct guest_names *names; /* base names, guest-0xPC: shared with forks */
	uint64_t *miss_pages;	   /* pages /proc/PID/maps did not cover */
	uint64_t *miss_time;
	size_t nmiss;
	unsigned long maps_scans;
	unsigned int version; /* changes whenever imgs does; no two guests' alike */
	/* guest_see(): addresses looked up already (open addressing), with
	 * a direct-mapped cache in front. */
	uint64_t *seen;
	size_t nseen, seen_cap;
	uint64_t recent[256];
};

/* What a guest address is. */
struct guest_loc {
	const char *name;   /* function, or NULL when unknown */
	const char *raw;    /* its name in the file (mangled), or NULL */
	uint64_t sym_start; /* guest address of the function */
	const struct guest_image *img;
	uint64_t link;	/* link address within img */
	uint64_t until; /* guest address: the same answer up to here (excluded) */
};

void guest_init(struct guest *g, pid_t pid);
void guest_free(struct guest *g);
void guest_set_base(struct guest *g, uint64_t base);
void guest_add_image(struct guest *g, const char *path, uint64_t bias, uint64_t start, uint64_t end,
		     bool user);
/* --guest-elf PATH[:BIAS]; -EINVAL with a message for bad input. */
int guest_add_elf_spec(struct guest *g, const char *spec);
/* --guest-symbols FILE[:BIAS], a System.map or kallsyms copy; the same. */
int guest_add_symbols_spec(struct guest *g, const char *spec);
/* Is SPEC (of --guest-symbols if MAP, else --guest-elf) good?  The file
 * stays loaded.  -EINVAL with a message if not. */
int guest_check_spec(const char *spec, bool map);
/*
 * System mode: an ELF file QEMU loaded into guest memory.  Its code runs
 * at its link addresses (QEMU never relocates it), which are what the
 * guest pcs of TBs are: virtual addresses.
 */
void guest_add_loaded(struct guest *g, const char *path);
void guest_lookup(struct guest *g, uint64_t pc, struct guest_loc *loc);
/* The same for PC after PREV's pc: PREV's answer while it holds (a TB's
 * next instruction, most often), without a search. */
void guest_lookup_next(struct guest *g, uint64_t pc, const struct guest_loc *prev,
		       struct guest_loc *loc);
/*
 * The name of PC that LOC describes: its function; in an image without a
 * function there (a stripped program), FILE+0xADDR with its link
 * address, as perf names what it cannot; else guest-0xPC.  It lives as
 * long as G (and the guests forked from it).
 */
const char *guest_loc_name(struct guest *g, const struct guest_loc *loc, uint64_t pc);
/* The same name, made in BUF (NAME_OFF_MAX bytes, codemap.h) when it is not
 * the function's. */
const char *guest_loc_text(const struct guest_loc *loc, uint64_t pc, char *buf);
/*
 * The function a call of ADDR runs: ADDR, or the function a thunk at ADDR
 * branches to (a function that is only a branch to the start of another,
 * such as glibc's __wrap_main, which runs main on AArch64 and s390x), up
 * to 4 such hops; LOC describes it.
 */
uint64_t guest_call_target(struct guest *g, uint64_t addr, struct guest_loc *loc);
/*
 * The guest mapped PATH's bytes at OFFSET to [START, END), guest
 * addresses (linux-user's linux_user_guest_mmap): add its image, unless
 * one is known there.
 */
void guest_add_mmap(struct guest *g, const char *path, uint64_t start, uint64_t end,
		    uint64_t offset);
/* Add the image of every ELF file mapping in the process's maps, now. */
void guest_add_mapped(struct guest *g);
/*
 * Make sure the image of ADDR is known by the time names are written:
 * libraries the guest maps itself are found in QEMU's /proc/PID/maps,
 * which is gone once QEMU exits.  Each address is looked up once.
 */
void guest_see_new(struct guest *g, uint64_t addr);
static inline void guest_see(struct guest *g, uint64_t addr)
{
	/* Most calls go where a recent one went. */
	if (g->recent[(addr >> 2) & 255] != (addr | 1))
		guest_see_new(g, addr);
}
/* DST, new, gets SRC's images and guest_base (a forked process, same files). */
void guest_copy(struct guest *dst, const struct guest *src);

#endif
