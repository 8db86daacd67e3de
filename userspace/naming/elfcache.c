// SPDX-License-Identifier: GPL-2.0-or-later
#include "naming/elffile.h"
#include "naming/lines.h"

#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The cache: files some process's images hold, and up to
 * IDLE_MAX that nothing holds any more, for the next run of the same
 * program; beyond that, the one idle longest is freed.  A farm runs a few
 * dozen programs again and again, and new ones (configure's conftests)
 * once each.  What is left at exit stays (freeing libdw state would only
 * slow the exit down).
 */
#define IDLE_MAX 64
static struct elf_file *files;
static size_t nidle;
static uint64_t idle_clock;
static struct elf_cache_stats stats;

static void set_identity(struct elf_file *e, const struct stat *st)
{
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->size = st->st_size;
	e->mtime = st->st_mtim;
}

void elf_file_free(struct elf_file *e)
{
	if (e->dwfl)
		dwfl_end(e->dwfl);
	line_table_free(e->lines);
	if (e->lines_elf)
		elf_end(e->lines_elf);
	if (e->dbg_fd >= 0)
		close(e->dbg_fd);
	if (e->fd >= 0)
		close(e->fd);
	for (size_t i = 0; e->shown && i < e->nsyms; i++)
		if (e->shown[i] != e->syms[i].name)
			free(e->shown[i]);
	free(e->shown);
	free(e->syms);
	free(e->names);
	free(e->segs);
	free(e->path);
	free(e->dbg_path);
	free(e);
}

static void unlink_file(struct elf_file *e)
{
	*e->pprev = e->next;
	if (e->next)
		e->next->pprev = e->pprev;
}

/* E, which nothing holds, goes. */
static void free_idle(struct elf_file *e)
{
	nidle--;
	stats.files--;
	stats.freed++;
	unlink_file(e);
	elf_file_free(e);
}

struct elf_file *elf_cache_add(struct elf_file *e, const struct stat *st)
{
	set_identity(e, st);
	e->next = files;
	if (files)
		files->pprev = &e->next;
	e->pprev = &files;
	files = e;
	e->refs = 1;
	stats.loaded++;
	stats.files++;
	return e;
}

struct elf_file *elf_cache_find(const struct stat *st)
{
	for (struct elf_file *e = files; e; e = e->next)
		if (e->dev == st->st_dev && e->ino == st->st_ino) {
			if (e->size != st->st_size || e->mtime.tv_sec != st->st_mtim.tv_sec ||
			    e->mtime.tv_nsec != st->st_mtim.tv_nsec) {
				/* Another file now: the old one goes once
				 * nothing holds it. */
				if (!e->refs) {
					free_idle(e);
				} else {
					e->dev = 0;
					e->ino = 0;
				}
				return NULL;
			}
			return elf_file_ref(e);
		}
	return NULL;
}

struct elf_file *elf_file_ref(struct elf_file *e)
{
	if (e && !e->refs++)
		nidle--;
	return e;
}

unsigned int elf_file_holders(const struct elf_file *e)
{
	return e->refs;
}

void elf_file_put(struct elf_file *e)
{
	struct elf_file *oldest = NULL;

	if (!e || --e->refs)
		return;
	e->idle_since = ++idle_clock;
	if (++nidle <= IDLE_MAX)
		return;
	for (struct elf_file *f = files; f; f = f->next)
		if (!f->refs && (!oldest || f->idle_since < oldest->idle_since))
			oldest = f;
	free_idle(oldest);
}

struct elf_cache_stats elf_cache_stats(void)
{
	struct elf_cache_stats s = stats;

	s.idle = nidle;
	return s;
}

void elf_files_forget(void)
{
	while (files) {
		struct elf_file *e = files;

		unlink_file(e);
		elf_file_free(e);
	}
	nidle = 0;
	memset(&stats, 0, sizeof(stats));
}
