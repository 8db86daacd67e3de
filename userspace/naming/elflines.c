// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * An ELF file's source lines: its DWARF 5 line table (lines.c), in the
 * file or its debug file, else libdw's (older DWARF), and the Dwfl that
 * libdw answers through.
 */
#include "naming/symbols.h"
#include "naming/elffile.h"
#include "naming/lines.h"
#include "naming/linesrc.h"
#include "util/util.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* A Dwfl of the file PATH open as FD (not taken), and its module in *MOD. */
static Dwfl *dwfl_open(const char *path, int fd, Dwfl_Module **mod)
{
	Dwfl *dwfl = dwfl_begin(&dwfl_callbacks);

	*mod = NULL;
	if (dwfl) {
		fd = fcntl(fd, F_DUPFD_CLOEXEC, 0); /* libdwfl closes it */
		*mod = fd < 0 ? NULL : dwfl_report_offline(dwfl, path, path, fd);
		dwfl_report_end(dwfl, NULL, NULL);
	}
	return dwfl;
}

Dwfl_Module *elf_file_dwfl(struct elf_file *e)
{
	if (!e->dwfl_tried) {
		e->dwfl_tried = true;
		e->dwfl = dwfl_open(e->path, e->fd, &e->mod);
	}
	return e->mod;
}

/* The line table of E, from the file itself or its debug file. */
static void open_lines(struct elf_file *e)
{
	int fd = e->dbg_fd >= 0 && e->dbg_lines ? e->dbg_fd : e->fd;

	e->lines_tried = true;
	/* Read, not mapped: only the sections asked for are read. */
	e->lines_elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ, NULL);
	if (!e->lines_elf)
		return;
	switch (line_table_open(e->lines_elf, &e->lines)) {
	case LINES_READ:
		return;
	case LINES_OTHER:
		pr_dbg("%s: line tables older than DWARF 5, read by libdw", e->path);
		e->lines_libdw = true;
		break;
	case LINES_NONE:
		break;
	}
	elf_end(e->lines_elf);
	e->lines_elf = NULL;
}

bool elf_file_line(struct elf_file *e, uint64_t addr, const char **file, int *line)
{
	Dwfl_Module *mod;
	Dwfl_Line *l;
	GElf_Addr bias;

	if (!e->lines_tried)
		open_lines(e);
	if (e->lines)
		return line_table_find(e->lines, addr, file, line);
	mod = e->lines_libdw ? elf_file_dwfl(e) : NULL;
	if (!mod || !dwfl_module_getelf(mod, &bias))
		return false;
	l = dwfl_module_getsrc(mod, addr + bias);
	if (!l)
		return false;
	*file = dwfl_lineinfo(l, NULL, line, NULL, NULL, NULL);
	return *file && *line > 0;
}

/* The statement rows of a line table only libdw reads (DWARF 2 to 4). */
static void libdw_lines_each(Dwfl_Module *mod, line_fn fn, void *ctx)
{
	char path[PATH_MAX];
	Dwarf_Addr bias;
	Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (dw && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Lines *ls;
		size_t n;

		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_getsrclines(&cu, &ls, &n) == 0) {
			Dwarf_Attribute at;
			const char *dir = dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &at));

			for (size_t i = 0; i + 1 < n; i++) {
				Dwarf_Line *l = dwarf_onesrcline(ls, i), *r;
				Dwarf_Addr lo, hi = 0;
				bool stmt = false, end = true;
				const char *file;
				int line;

				if (!l || dwarf_lineaddr(l, &lo) ||
				    dwarf_lineendsequence(l, &end) || end ||
				    dwarf_linebeginstatement(l, &stmt) || !stmt ||
				    dwarf_lineno(l, &line) || line <= 0 ||
				    !(file = dwarf_linesrc(l, NULL, NULL)))
					continue;
				/* To the next row at a higher address, as line_table_each(). */
				for (size_t j = i + 1; j < n && hi <= lo; j++)
					if (!(r = dwarf_onesrcline(ls, j)) ||
					    dwarf_lineaddr(r, &hi))
						break;
				if (hi <= lo)
					continue;
				/* Under the unit's directory, as lines.c names them. */
				if (file[0] != '/' && dir && dir[0] == '/') {
					snprintf(path, sizeof(path), "%s/%s", dir, file);
					file = path;
				}
				fn(ctx, lo, hi, file, line);
			}
		}
		off = next;
	}
}

struct lines_src {
	char *path;
	int fd, lines_fd; /* the file (for libdw), where its line table is */
	struct load_seg *segs;
	size_t nsegs;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	bool dwfl_tried;
	/* Its line table, as open_lines() opens it. */
	Elf *lines_elf;
	struct line_table *lines;
	bool lines_tried, lines_libdw;
	line_fn fn;
	void *ctx;
};

struct lines_src *lines_src_new(const struct elf_file *e)
{
	struct lines_src *s;

	if (e->fd < 0)
		return NULL;
	s = xcalloc(1, sizeof(*s));
	s->path = xstrdup(e->path);
	s->fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 0);
	/* As open_lines() chooses. */
	s->lines_fd = fcntl(e->dbg_fd >= 0 && e->dbg_lines ? e->dbg_fd : e->fd, F_DUPFD_CLOEXEC, 0);
	s->segs = xmalloc((e->nsegs ? e->nsegs : 1) * sizeof(*s->segs));
	memcpy(s->segs, e->segs, e->nsegs * sizeof(*s->segs));
	s->nsegs = e->nsegs;
	return s;
}

/* FD's device, inode, size and modification time in ID[0..4), or zeros. */
static void fd_id(int fd, uint64_t *id)
{
	struct stat st;

	memset(id, 0, 4 * sizeof(*id));
	if (fd >= 0 && !fstat(fd, &st))
		stat_id(&st, id);
}

void lines_src_ids(const struct lines_src *s, uint64_t id[8])
{
	fd_id(s->fd, id);
	fd_id(s->lines_fd, id + 4);
}

static Dwfl_Module *src_dwfl(struct lines_src *s)
{
	if (!s->dwfl_tried && s->fd >= 0) {
		s->dwfl_tried = true;
		s->dwfl = dwfl_open(s->path, s->fd, &s->mod);
	}
	return s->mod;
}

/* A row of code (elf_file_in_code()'s test, on the copy). */
static void src_row(void *ctx, uint64_t lo, uint64_t hi, const char *file, int line)
{
	struct lines_src *s = ctx;

	if (segs_in_code(s->segs, s->nsegs, lo))
		s->fn(s->ctx, lo, hi, file, line);
}

/* S's line table (open_lines()'s choice, on S's own handles). */
static void src_lines(struct lines_src *s)
{
	if (s->lines_tried)
		return;
	s->lines_tried = true;
	/* Read, not mapped, as open_lines() reads it. */
	if (s->lines_fd < 0 || !(s->lines_elf = elf_begin(s->lines_fd, ELF_C_READ, NULL)))
		return;
	switch (line_table_open(s->lines_elf, &s->lines)) {
	case LINES_READ:
		return;
	case LINES_OTHER:
		s->lines_libdw = true;
		break;
	case LINES_NONE:
		break;
	}
	elf_end(s->lines_elf);
	s->lines_elf = NULL;
}

void lines_src_each(struct lines_src *s, line_fn fn, void *ctx)
{
	Dwfl_Module *mod;

	src_lines(s);
	s->fn = fn;
	s->ctx = ctx;
	if (s->lines)
		line_table_each(s->lines, src_row, s);
	else if (s->lines_libdw && (mod = src_dwfl(s)))
		libdw_lines_each(mod, src_row, s);
}

bool lines_src_line(struct lines_src *s, uint64_t addr, const char **file, int *line)
{
	Dwfl_Module *mod;
	Dwfl_Line *l;
	GElf_Addr bias;

	src_lines(s);
	if (s->lines)
		return line_table_find(s->lines, addr, file, line);
	mod = s->lines_libdw ? src_dwfl(s) : NULL;
	if (!mod || !dwfl_module_getelf(mod, &bias) || !(l = dwfl_module_getsrc(mod, addr + bias)))
		return false;
	*file = dwfl_lineinfo(l, NULL, line, NULL, NULL, NULL);
	return *file && *line > 0;
}

struct decl *lines_src_decls(struct lines_src *s, size_t *n)
{
	return decls_read(src_dwfl(s), n);
}

void lines_src_free(struct lines_src *s)
{
	if (!s)
		return;
	line_table_free(s->lines);
	if (s->lines_elf)
		elf_end(s->lines_elf);
	if (s->dwfl)
		dwfl_end(s->dwfl);
	if (s->fd >= 0)
		close(s->fd);
	if (s->lines_fd >= 0)
		close(s->lines_fd);
	free(s->segs);
	free(s->path);
	free(s);
}
