/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What an ELF file read is (elffile.c opens it, symbols.c reads its symbols) and the cache that
 * holds the files read (elfcache.c): for naming/ only.
 */
#ifndef QJ_ELFFILE_H
#define QJ_ELFFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <elfutils/libdwfl.h>

#include "naming/symbols.h"

struct elf_file {
	char *path;
	int fd; /* what was read: the file, or a private copy of it */
	/* The file read: a file rewritten in place, or a new one that got
	 * the inode of a deleted one (configure's conftest), is read again. */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	unsigned int refs;   /* holders; 0: idle, kept for the next process */
	uint64_t idle_since; /* idle_clock when it became idle */
	/* Symbols, read on first use (with_syms()). */
	bool syms_read;
	struct sym *syms;
	size_t nsyms;
	char *names;  /* one block holding every name */
	char **shown; /* per symbol: its demangled name, once asked for */
	struct load_seg *segs;
	size_t nsegs;
	uint64_t lo, hi;
	/* Source lines, opened on first use: from .debug_line of the file or
	 * of its debug file (dbg_fd), else from libdw. */
	int dbg_fd; /* the debug file, while its symbols or lines are wanted */
	char *dbg_path;
	bool dbg_syms, dbg_lines; /* what the debug file holds for us */
	pid_t pid;		  /* the process whose file it was, for warnings */
	Elf *lines_elf;
	struct line_table *lines;
	bool lines_tried, lines_libdw;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	bool dwfl_tried;
	uint16_t machine;
	unsigned char build_id[64];
	size_t build_id_len;
	struct elf_file *next, **pprev;
};

/* Does ADDR (a link address) lie in an executable segment of SEGS? */
static inline bool segs_in_code(const struct load_seg *segs, size_t n, uint64_t addr)
{
	for (size_t i = 0; i < n; i++)
		if (segs[i].exec && addr >= segs[i].vaddr && addr - segs[i].vaddr < segs[i].memsz)
			return true;
	return false;
}

/* The file of ST in the cache, with one more holder, or NULL.  A file
 * rewritten since it was read is not (and goes once nothing holds it). */
struct elf_file *elf_cache_find(const struct stat *st);
/* E, just read from the file of ST, is in the cache with one holder: the
 * caller.  Returns E. */
struct elf_file *elf_cache_add(struct elf_file *e, const struct stat *st);
void elf_file_free(struct elf_file *e);
struct proc_view;
/* One warning about PATH, a file of V's. */
void elf_file_warn(const struct proc_view *v, const char *path, const char *what);
/* Has ELF a .symtab?  (A file without one takes its debug file's.) */
bool elf_has_symtab(Elf *elf);

#endif
