/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Symbols of ELF files, by link address: sorted tables built once per file
 * from .symtab (or .dynsym), with separate debug files found by build-id
 * or .gnu_debuglink; source lines through libdwfl.  Files are cached by
 * device and inode, so an image mapped into several processes or seen
 * again after a flush is read once, and two containers' files at one path
 * each get their own names.
 */
#ifndef QJ_SYMBOLS_H
#define QJ_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sym {
	uint64_t addr; /* link address */
	uint64_t size;
	const char *name;
};

struct load_seg {
	uint64_t vaddr;
	uint64_t memsz;
	uint64_t offset;
	uint64_t filesz;
	bool exec; /* PF_X */
};

struct elf_file;
typedef struct Elf Elf;

struct proc_view;
/*
 * The ELF file open at FD (taken), which process view V names PATH; NULL
 * when it is not a readable ELF file (reason logged with -v).  A file that
 * others can change is read from a private copy.  The caller holds the
 * file (and the names of its symbols) until it puts it: it may then be
 * freed, after more distinct files came and went than the cache keeps.
 */
struct elf_file *elf_file_open(int fd, const char *path, const struct proc_view *v);
/* The same for PATH in the tool's own view (options, the host's files). */
struct elf_file *elf_file_get(const char *path);
/*
 * The code symbols of a System.map or /proc/kallsyms copy, as a file
 * with names only (no segments, lines or CFI); its range runs from the
 * first symbol to the end of the last.  NULL for a file that is not one,
 * with the reason in WHY (LEN bytes).
 */
struct elf_file *symbol_map_get(const char *path, char *why, size_t len);
/* One more holder of E (returned); E may be NULL. */
struct elf_file *elf_file_ref(struct elf_file *e);
/* A holder lets E go; E may be NULL. */
void elf_file_put(struct elf_file *e);
/* How many hold E. */
unsigned int elf_file_holders(const struct elf_file *e);
/* What the cache did, for -v and the soak benchmark. */
struct elf_cache_stats {
	uint64_t loaded; /* files read */
	uint64_t freed;	 /* freed: to make room, or rewritten since */
	size_t files;	 /* in memory now */
	size_t idle;	 /* of them, held by nothing */
};
struct elf_cache_stats elf_cache_stats(void);
/*
 * Free every file read so far.  Only when nothing holds one: tests and
 * the fuzz targets, between inputs.
 */
void elf_files_forget(void);
const char *elf_file_path(const struct elf_file *e);
/* What was read, for libdw (dup it); -1 for a symbol map. */
int elf_file_fd(const struct elf_file *e);
/* Lowest and highest (exclusive) link address of PT_LOAD segments. */
void elf_file_range(const struct elf_file *e, uint64_t *lo, uint64_t *hi);
/* Is link address ADDR in an executable segment of E? */
bool elf_file_in_code(const struct elf_file *e, uint64_t addr);
/*
 * The PT_LOAD segment that maps file offset OFF, or NULL.  Of two that
 * share the page, the one that starts in it (a mapping at that offset is
 * its own: a data segment after read-only data); of two that both start
 * there (lld's default layout), or neither, the executable one: what a
 * guest maps to run.
 */
const struct load_seg *elf_file_seg_at_offset(const struct elf_file *e, uint64_t off);
/* Up to LEN bytes of the file's image at link address ADDR, as loaded;
 * how many were read (0 outside the file's bytes, or for a symbol map). */
size_t elf_file_read(const struct elf_file *e, uint64_t addr, void *buf, size_t len);
/* The symbol at ADDR, and *UNTIL: every address from ADDR up to it has that
 * answer. */
const struct sym *elf_file_sym_until(const struct elf_file *e, uint64_t addr, uint64_t *until);
static inline const struct sym *elf_file_sym(const struct elf_file *e, uint64_t addr)
{
	uint64_t until;

	return elf_file_sym_until(e, addr, &until);
}
/* The name of S, a symbol of E, as people read it: demangled (demangle.h). */
const char *elf_file_sym_name(struct elf_file *e, const struct sym *s);
size_t elf_file_nsyms(const struct elf_file *e);
/* The I-th function, by address. */
const struct sym *elf_file_sym_at(const struct elf_file *e, size_t i);
/* libdwfl's module of the file, opened on first use; NULL if it cannot be. */
typedef struct Dwfl_Module Dwfl_Module;
Dwfl_Module *elf_file_dwfl(struct elf_file *e);
/* Source file and line of ADDR; false when unknown. */
bool elf_file_line(struct elf_file *e, uint64_t addr, const char **file, int *line);
/* A statement row of a line table (lines.h; linesrc.h reads an ELF
 * file's). */
#ifndef QJ_LINE_FN
#define QJ_LINE_FN
typedef void (*line_fn)(void *ctx, uint64_t lo, uint64_t hi, const char *file, int line);
#endif

/* e_machine of the file. */
uint16_t elf_file_machine(const struct elf_file *e);
/* Its GNU build id, or 0 bytes. */
size_t elf_file_build_id(const struct elf_file *e, const unsigned char **id);

/*
 * How to find the caller of code at link address ADDR, from the file's
 * CFI (cfirules.c): the frame's CFA as a DWARF register plus an offset, and where the
 * return address (DWARF register RA_REG) is.
 */
struct frame_rule {
	int cfa_reg; /* -1: not a register plus an offset */
	int64_t cfa_off;
	enum { RA_UNKNOWN, RA_IN_REG, RA_AT_CFA } ra;
	int64_t ra_off; /* RA_AT_CFA: at CFA + ra_off */
};
bool elf_file_frame_rule(struct elf_file *e, uint64_t addr, int ra_reg, struct frame_rule *r);

#endif
