// SPDX-License-Identifier: GPL-2.0-or-later
#include "naming/debuginfo.h"
#include "naming/elfnotes.h"
#include "naming/symbols.h"
#include "util/procfile.h"
#include "util/util.h"

#include <gelf.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct debug_query {
	const struct proc_view *v;
	char *path;
};

/* Is there a debug file for this build-id?  Its path goes to the query. */
static bool debug_file_by_build_id(const void *desc, size_t size, void *ctx)
{
	struct debug_query *q = ctx;
	const unsigned char *id = desc;
	char hex[2 * 64 + 1], *cand;

	if (size < 2 || size > 64)
		return false;
	for (size_t i = 0; i < size; i++)
		sprintf(hex + 2 * i, "%02x", id[i]);
	cand = xasprintf("/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	if (!view_exists(q->v, cand)) {
		free(cand);
		return false;
	}
	q->path = cand;
	return true;
}

/*
 * Separate debug file of ELF at PATH, as V sees it, by build-id then
 * .gnu_debuglink.
 */
char *find_debug_file(Elf *elf, const char *path, const struct proc_view *v)
{
	struct debug_query q = {v, NULL};
	Elf_Scn *scn;
	GElf_Shdr sh;
	char *cand = NULL;

	if (elf_find_note(elf, "GNU", NT_GNU_BUILD_ID, debug_file_by_build_id, &q))
		return q.path;
	scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		size_t shstrndx;
		const char *name;
		Elf_Data *d;
		char *dir, *real;

		if (elf_getshdrstrndx(elf, &shstrndx) || !gelf_getshdr(scn, &sh))
			break;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".gnu_debuglink"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_size || !memchr(d->d_buf, 0, d->d_size))
			break;
		/* (Links in another root are resolved inside it, by the view.) */
		real = v->root_fd < 0 ? realpath(path, NULL) : xstrdup(path);
		if (!real)
			break;
		dir = dirname(real);
		const char *fmts[] = {"%s/%s", "%s/.debug/%s", "/usr/lib/debug%s/%s"};
		for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
			cand = xasprintf(fmts[i], dir, (char *)d->d_buf);
			if (strcmp(cand, path) && view_exists(v, cand)) {
				free(real);
				return cand;
			}
			free(cand);
		}
		free(real);
		break;
	}
	return NULL;
}
