// SPDX-License-Identifier: GPL-2.0-or-later
#include "naming/guestbase.h"
#include "util/procfile.h"
#include "util/util.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct query {
	pid_t pid;
	dev_t qemu_dev;
	ino_t qemu_ino;
	uint64_t start, offset, pc; /* a guest mapping, or a guest pc */
	struct stat file;	    /* its file, if its fd was still open */
	bool file_known;
	uint64_t base;
	int found; /* candidates; the identity counts as all of them */
};

static bool is_qemu(const struct query *q, const struct map_entry *m)
{
	return m->dev == q->qemu_dev && m->ino == q->qemu_ino;
}

/*
 * The link address at file offset 0 of an ELF program of fixed addresses
 * open at FD (its first PT_LOAD maps the start of the file); false for
 * anything else.
 */
static bool exec_link_base(int fd, uint64_t *vaddr)
{
	unsigned char ident[EI_NIDENT];
	uint64_t phoff;
	unsigned int phnum, phentsize, type;
	bool is64;

	if (pread(fd, ident, sizeof(ident), 0) != sizeof(ident) || memcmp(ident, ELFMAG, SELFMAG) ||
	    ident[EI_DATA] != ELFDATA2LSB)
		return false;
	is64 = ident[EI_CLASS] == ELFCLASS64;
	if (is64) {
		Elf64_Ehdr h;

		if (pread(fd, &h, sizeof(h), 0) != sizeof(h))
			return false;
		type = h.e_type, phoff = h.e_phoff, phnum = h.e_phnum, phentsize = h.e_phentsize;
	} else {
		Elf32_Ehdr h;

		if (pread(fd, &h, sizeof(h), 0) != sizeof(h))
			return false;
		type = h.e_type, phoff = h.e_phoff, phnum = h.e_phnum, phentsize = h.e_phentsize;
	}
	if (type != ET_EXEC || phnum > 256 ||
	    phentsize != (is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)))
		return false;
	for (unsigned int i = 0; i < phnum; i++) {
		uint64_t p_type, p_offset, p_vaddr;

		if (is64) {
			Elf64_Phdr ph;

			if (pread(fd, &ph, sizeof(ph), phoff + i * sizeof(ph)) != sizeof(ph))
				return false;
			p_type = ph.p_type, p_offset = ph.p_offset, p_vaddr = ph.p_vaddr;
		} else {
			Elf32_Phdr ph;

			if (pread(fd, &ph, sizeof(ph), phoff + i * sizeof(ph)) != sizeof(ph))
				return false;
			p_type = ph.p_type, p_offset = ph.p_offset, p_vaddr = ph.p_vaddr;
		}
		if (p_type == PT_LOAD) {
			if (p_offset != 0)
				return false;
			*vaddr = p_vaddr;
			return true;
		}
	}
	return false;
}

static bool exec_mapping(const struct map_entry *m, void *ctx)
{
	struct query *q = ctx;
	uint64_t vaddr;
	int fd;

	if (m->path[0] != '/' || m->offset || is_qemu(q, m))
		return false;
	fd = mapped_open(q->pid, m->start, m->end, O_RDONLY);
	if (fd < 0)
		return false;
	if (exec_link_base(fd, &vaddr) && m->start >= vaddr) {
		q->base = m->start - vaddr;
		q->found = 1;
	}
	close(fd);
	return q->found;
}

bool guestbase_from_maps(pid_t pid, dev_t qemu_dev, ino_t qemu_ino, uint64_t *base)
{
	struct query q = {.pid = pid, .qemu_dev = qemu_dev, .qemu_ino = qemu_ino};

	maps_find(pid, exec_mapping, &q);
	if (q.found)
		*base = q.base;
	return q.found;
}

static bool same_offset(const struct map_entry *m, void *ctx)
{
	struct query *q = ctx;

	if (m->path[0] != '/' || m->offset != q->offset || ((m->start - q->start) & 0xfff) ||
	    is_qemu(q, m))
		return false;
	if (q->file_known && (m->dev != q->file.st_dev || m->ino != q->file.st_ino))
		return false;
	if (m->start == q->start) {
		/* The identity map: QEMU's first choice. */
		q->base = 0;
		q->found = 1;
		return true;
	}
	if (!q->found++)
		q->base = m->start - q->start;
	return false;
}

bool guestbase_from_mmap(pid_t pid, dev_t qemu_dev, ino_t qemu_ino, uint64_t start, uint64_t offset,
			 int fd, uint64_t *base)
{
	struct query q = {.pid = pid,
			  .qemu_dev = qemu_dev,
			  .qemu_ino = qemu_ino,
			  .start = start,
			  .offset = offset};
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	q.file_known = fd >= 0 && !stat(path, &q.file);
	maps_find(pid, same_offset, &q);
	if (q.found == 1)
		*base = q.base;
	return q.found == 1;
}

static bool holds_pc(const struct map_entry *m, void *ctx)
{
	struct query *q = ctx;

	if (q->pc < m->start || q->pc >= m->end)
		return false;
	q->found = m->path[0] == '/' && !is_qemu(q, m);
	return true;
}

bool guestbase_identity(pid_t pid, dev_t qemu_dev, ino_t qemu_ino, uint64_t pc, uint64_t *base)
{
	struct query q = {.pid = pid, .qemu_dev = qemu_dev, .qemu_ino = qemu_ino, .pc = pc};

	maps_find(pid, holds_pc, &q);
	if (q.found)
		*base = 0;
	return q.found;
}
