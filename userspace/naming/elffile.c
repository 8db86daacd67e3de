// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The ELF file object: a guest's or QEMU's file opened once (or a private
 * copy of one others can change), its loadable segments, its build id,
 * its separate debug file found while the process is there, and reads of
 * its bytes by link address.  Its symbols (symbols.c) and source lines
 * (elflines.c) are read on first use.
 */
#include "naming/elffile.h"
#include "naming/debuginfo.h"
#include "naming/elfnotes.h"
#include "naming/lines.h"
#include "util/procfile.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Files others can change are read from a private copy of at most this. */
#define ELF_COPY_MAX (1ull << 30)

static void read_segs(struct elf_file *e, Elf *elf)
{
	size_t phnum;

	e->lo = UINT64_MAX;
	if (elf_getphdrnum(elf, &phnum))
		return;
	e->segs = xcalloc(phnum, sizeof(*e->segs));
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		e->segs[e->nsegs++] = (struct load_seg){ph.p_vaddr, ph.p_memsz, ph.p_offset,
							ph.p_filesz, (ph.p_flags & PF_X) != 0};
		if (ph.p_vaddr < e->lo)
			e->lo = ph.p_vaddr;
		if (ph.p_vaddr + ph.p_memsz > e->hi)
			e->hi = ph.p_vaddr + ph.p_memsz;
	}
	if (e->lo == UINT64_MAX)
		e->lo = 0;
}

static bool copy_build_id(const void *desc, size_t size, void *ctx)
{
	struct elf_file *e = ctx;

	if (!size || size > sizeof(e->build_id))
		return false;
	memcpy(e->build_id, desc, size);
	e->build_id_len = size;
	return true;
}

void elf_file_warn(const struct proc_view *v, const char *path, const char *what)
{
	if (v->pid)
		pr_warn("pid %d: %s: %s", v->pid, path, what);
	else
		pr_warn("%s: %s", path, what);
}

/*
 * FD, or a private copy of it when someone else could change the file
 * while we read it (a truncated mapping would kill us with SIGBUS); -1
 * for a file too large to copy.  Takes FD.
 */
static int safe_fd(int fd, const char *path, const struct proc_view *v)
{
	int copy;

	if (!file_changeable(fd, v->foreign))
		return fd;
	copy = file_snapshot(fd, "qemu-jitbpf-elf", ELF_COPY_MAX);
	if (copy < 0)
		elf_file_warn(v, path,
			      copy == -EFBIG ? "over 1 GiB, not read from a file others can change"
					     : strerror(-copy));
	return copy;
}

/* Debug file DBG, as V sees it, opened to be read: -1 if it cannot be. */
static int open_debug(const char *dbg, const struct proc_view *v)
{
	int dfd = view_open(v, dbg, O_RDONLY);

	if (dfd < 0) {
		elf_file_warn(v, dbg,
			      dfd == -EINVAL ? "not a regular file, not read" : strerror(-dfd));
		return -1;
	}
	return safe_fd(dfd, dbg, v);
}

static struct elf_file *load(int fd, const char *path, const struct proc_view *v)
{
	struct elf_file *e;
	Elf *elf;

	fd = safe_fd(fd, path, v);
	if (fd < 0)
		return NULL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		pr_dbg("%s is not an ELF file", path);
		if (elf)
			elf_end(elf);
		close(fd);
		return NULL;
	}
	e = xcalloc(1, sizeof(*e));
	e->path = xstrdup(path);
	e->fd = fd;
	read_segs(e, elf);
	{
		GElf_Ehdr eh;

		if (gelf_getehdr(elf, &eh))
			e->machine = eh.e_machine;
	}
	elf_find_note(elf, "GNU", NT_GNU_BUILD_ID, copy_build_id, e);
	e->dbg_fd = -1;
	e->pid = v->pid;
	{
		/* The debug file is found and opened now, while the process
		 * (and its root) is there; what is read from it, later. */
		bool syms = elf_has_symtab(elf), lines = line_table_present(elf);
		char *dbg = syms && lines ? NULL : find_debug_file(elf, path, v);
		int dfd = dbg ? open_debug(dbg, v) : -1;

		if (dfd >= 0 && (!syms || !lines)) {
			e->dbg_fd = dfd;
			e->dbg_path = dbg;
			e->dbg_syms = !syms;
			e->dbg_lines = !lines;
		} else {
			if (dfd >= 0)
				close(dfd);
			free(dbg);
		}
	}
	elf_end(elf);
	return e;
}

struct elf_file *elf_file_open(int fd, const char *path, const struct proc_view *v)
{
	struct elf_file *e;
	struct stat st;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return NULL;
	}
	e = elf_cache_find(&st);
	if (e) {
		close(fd);
		return e;
	}
	e = load(fd, path, v);
	return e ? elf_cache_add(e, &st) : NULL;
}

struct elf_file *elf_file_get(const char *path)
{
	struct proc_view own = {.root_fd = -1};
	int fd = view_open(&own, path, O_RDONLY);

	if (fd < 0)
		pr_dbg("cannot open %s: %s", path, strerror(-fd));
	return elf_file_open(fd, path, &own);
}

const char *elf_file_path(const struct elf_file *e)
{
	return e->path;
}

int elf_file_fd(const struct elf_file *e)
{
	return e->fd;
}

void elf_file_range(const struct elf_file *e, uint64_t *lo, uint64_t *hi)
{
	*lo = e->lo;
	*hi = e->hi;
}

bool elf_file_in_code(const struct elf_file *e, uint64_t addr)
{
	return segs_in_code(e->segs, e->nsegs, addr);
}

const struct load_seg *elf_file_seg_at_offset(const struct elf_file *e, uint64_t off)
{
	const struct load_seg *found = NULL, *exec = NULL, *starts = NULL;

	for (size_t i = 0; i < e->nsegs; i++) {
		const struct load_seg *s = &e->segs[i];
		uint64_t start = s->offset & ~0xfffull;

		/* From the page it starts in to its end (which may not wrap). */
		if (off < start ||
		    (off > s->offset && off - s->offset >= (s->filesz ? s->filesz : 1)))
			continue;
		/* A mapping at the page a segment starts in is that segment's,
		 * even where the one before ends in the same page (a data
		 * segment after read-only data). */
		if (start == off && (!starts || (s->exec && !starts->exec)))
			starts = s;
		if (s->exec && !exec)
			exec = s;
		if (!found)
			found = s;
	}
	return starts ? starts : exec ? exec : found;
}

size_t elf_file_read(const struct elf_file *e, uint64_t addr, void *buf, size_t len)
{
	for (size_t i = 0; e->fd >= 0 && i < e->nsegs; i++) {
		const struct load_seg *s = &e->segs[i];
		ssize_t n;

		if (addr < s->vaddr || addr >= s->vaddr + s->filesz)
			continue;
		if (len > s->vaddr + s->filesz - addr)
			len = s->vaddr + s->filesz - addr;
		n = pread(e->fd, buf, len, s->offset + (addr - s->vaddr));
		return n > 0 ? (size_t)n : 0;
	}
	return 0;
}

uint16_t elf_file_machine(const struct elf_file *e)
{
	return e->machine;
}

size_t elf_file_build_id(const struct elf_file *e, const unsigned char **id)
{
	*id = e->build_id;
	return e->build_id_len;
}
