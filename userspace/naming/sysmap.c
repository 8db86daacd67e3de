// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A System.map or kallsyms text file (--guest-symbols) as a file of
 * symbols: its code symbols (t, T, w, W), no DWARF.
 */
#include "naming/symbols.h"
#include "naming/elffile.h"
#include "naming/symtable.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/*
 * One "ADDRESS TYPE NAME [MODULE]" line of a System.map or kallsyms file:
 * add it if it is code (t, T, w, W); false if it is not such a line.
 */
static bool map_line(struct sym_builder *b, const char *line)
{
	const char *p = line, *name;
	uint64_t addr;
	char *end;
	int type;

	errno = 0;
	addr = strtoull(p, &end, 16);
	if (errno || end == p || *end != ' ')
		return false;
	p = end + 1;
	type = *p;
	if (!type || p[1] != ' ')
		return false;
	name = p + 2;
	/* A copy taken through a serial console has CRLF line ends. */
	if (!*name || strchr(" \t\r\n", *name))
		return false;
	if (strchr("tTwW", type) && addr)
		sym_builder_add(b, name, strcspn(name, " \t\r\n"),
				(struct raw_sym){.addr = addr,
						 .rank = type == 'T'   ? 0
							 : type == 'W' ? 1
								       : 2});
	return true;
}

struct elf_file *symbol_map_get(const char *path, char *why, size_t len)
{
	struct sym_builder b = {0};
	struct elf_file *e;
	size_t cap = 0, lineno = 0;
	char *line = NULL;
	bool bad = false;
	struct stat st;
	FILE *f;

	if (stat(path, &st)) {
		snprintf(why, len, "%s", strerror(errno));
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, len, "not a regular file");
		return NULL;
	}
	e = elf_cache_find(&st);
	if (e)
		return e;
	f = fopen(path, "re");
	if (!f) {
		snprintf(why, len, "%s", strerror(errno));
		return NULL;
	}
	while (getline(&line, &cap, f) > 0) {
		lineno++;
		if (!map_line(&b, line)) {
			snprintf(why, len, "line %zu is not a System.map or kallsyms line", lineno);
			bad = true;
			break;
		}
	}
	free(line);
	fclose(f);
	if (bad || !b.n) {
		if (!bad)
			snprintf(why, len, "%s",
				 lineno ? "no code symbols (types t, T, w, W)" : "empty");
		free(b.v);
		free(b.names);
		return NULL;
	}
	e = xcalloc(1, sizeof(*e));
	e->path = xstrdup(path);
	e->fd = -1;
	e->dbg_fd = -1;
	e->dwfl_tried = true; /* no DWARF: names only */
	e->lines_tried = true;
	e->syms_read = true;
	e->syms = sym_builder_finish(&b, &e->nsyms, &e->names);
	e->lo = e->syms[0].addr;
	e->hi = e->syms[e->nsyms - 1].addr + e->syms[e->nsyms - 1].size;
	if (e->hi < e->lo)
		e->hi = UINT64_MAX; /* it runs to the end of the address space */
	pr_dbg("%s: %zu functions", path, e->nsyms);
	return elf_cache_add(e, &st);
}
