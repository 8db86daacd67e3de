// SPDX-License-Identifier: GPL-2.0-or-later
#include "naming/elfnotes.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool elf_find_note(Elf *elf, const char *name, uint32_t type,
		   bool (*fn)(const void *desc, size_t size, void *ctx), void *ctx)
{
	size_t namesz = strlen(name) + 1;
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		size_t off = 0, name_off, desc_off;
		Elf_Data *d;
		GElf_Shdr sh;
		GElf_Nhdr nh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)))
			if (nh.n_type == type && nh.n_namesz == namesz &&
			    !memcmp((char *)d->d_buf + name_off, name, namesz) &&
			    fn((char *)d->d_buf + desc_off, nh.n_descsz, ctx))
				return true;
	}
	return false;
}

struct usdt_query {
	const char *provider, *name;
	size_t addr_size;
	uint64_t base, sema; /* of the probe found */
};

static uint64_t note_addr(const void *p, size_t size)
{
	uint64_t v64;
	uint32_t v32;

	if (size == 4) {
		memcpy(&v32, p, 4);
		return v32;
	}
	memcpy(&v64, p, 8);
	return v64;
}

/*
 * stapsdt descriptor: pc, base, semaphore, then provider, name, args.  Its
 * provider and name (*PROV, *NAME), if both end inside it.
 */
static bool usdt_names(const void *desc, size_t size, size_t addr_size, const char **prov,
		       const char **name)
{
	const char *end = (const char *)desc + size;

	*prov = (const char *)desc + 3 * addr_size;
	if (size <= 3 * addr_size || !memchr(*prov, 0, end - *prov))
		return false;
	*name = *prov + strlen(*prov) + 1;
	return *name < end && memchr(*name, 0, end - *name);
}

static bool is_usdt(const void *desc, size_t size, void *ctx)
{
	struct usdt_query *q = ctx;
	const char *prov, *name;

	if (!usdt_names(desc, size, q->addr_size, &prov, &name) || strcmp(prov, q->provider) ||
	    strcmp(name, q->name))
		return false;
	q->base = note_addr((const char *)desc + q->addr_size, q->addr_size);
	q->sema = note_addr((const char *)desc + 2 * q->addr_size, q->addr_size);
	return true;
}

/* Find provider:name in the open ELF; Q gets what its note says. */
static bool find_usdt(Elf *elf, struct usdt_query *q)
{
	q->addr_size = gelf_getclass(elf) == ELFCLASS64 ? 8 : 4;
	return elf_find_note(elf, "stapsdt", 3, is_usdt, q);
}

/*
 * The probes of the last file asked about, read once: a launch asks about
 * a dozen probes of one QEMU (38 us each, to map and walk its notes).
 * "provider:name" strings, each ended by a 0.
 */
static struct {
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	char *names;
	size_t len;
} usdt_seen;

/* Each stapsdt note's "provider:name" onto usdt_seen.names. */
static bool add_usdt_name(const void *desc, size_t size, void *ctx)
{
	const char *prov, *name;
	size_t plen, nlen;

	if (!usdt_names(desc, size, *(size_t *)ctx, &prov, &name))
		return false;
	plen = strlen(prov);
	nlen = strlen(name);
	usdt_seen.names = xrealloc(usdt_seen.names, usdt_seen.len + plen + nlen + 2);
	memcpy(usdt_seen.names + usdt_seen.len, prov, plen);
	usdt_seen.names[usdt_seen.len + plen] = ':';
	memcpy(usdt_seen.names + usdt_seen.len + plen + 1, name, nlen + 1);
	usdt_seen.len += plen + nlen + 2;
	return false; /* every note */
}

bool elf_has_usdt(const char *binary, const char *provider, const char *name)
{
	size_t plen = strlen(provider), nlen = strlen(name);
	struct stat st;
	Elf *elf;
	int fd;

	fd = open(binary, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	if (!usdt_seen.names || st.st_dev != usdt_seen.dev || st.st_ino != usdt_seen.ino ||
	    st.st_mtim.tv_sec != usdt_seen.mtime.tv_sec ||
	    st.st_mtim.tv_nsec != usdt_seen.mtime.tv_nsec) {
		free(usdt_seen.names);
		usdt_seen.names = xstrdup("");
		usdt_seen.len = 1;
		usdt_seen.dev = st.st_dev;
		usdt_seen.ino = st.st_ino;
		usdt_seen.mtime = st.st_mtim;
		elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		if (elf) {
			size_t addr_size = gelf_getclass(elf) == ELFCLASS64 ? 8 : 4;

			elf_find_note(elf, "stapsdt", 3, add_usdt_name, &addr_size);
			elf_end(elf);
		}
	}
	close(fd);
	for (size_t i = 1; i < usdt_seen.len;) {
		const char *n = usdt_seen.names + i;
		size_t len = strlen(n);

		if (len == plen + 1 + nlen && !strncmp(n, provider, plen) && n[plen] == ':' &&
		    !strcmp(n + plen + 1, name))
			return true;
		i += len + 1;
	}
	return false;
}

/* Where a prelinked binary's .stapsdt.base moved to, as the note's base. */
static uint64_t stapsdt_base(Elf *elf, uint64_t note_base)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return note_base;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (gelf_getshdr(scn, &sh) && (n = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(n, ".stapsdt.base"))
			return sh.sh_addr;
	}
	return note_base;
}

int elf_usdt_semaphore(const char *binary, const char *provider, const char *name,
		       uint64_t *file_off)
{
	struct usdt_query q = {provider, name, 8, 0, 0};
	int err = -ENOENT, fd;
	size_t nphdr;
	Elf *elf;

	fd = open(binary, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && find_usdt(elf, &q) && q.sema && !elf_getphdrnum(elf, &nphdr)) {
		uint64_t sema = q.sema + stapsdt_base(elf, q.base) - q.base;

		/* Its address in the file, through the loadable segments. */
		for (size_t i = 0; i < nphdr; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD &&
			    sema >= ph.p_vaddr && sema + 2 <= ph.p_vaddr + ph.p_filesz) {
				*file_off = sema - ph.p_vaddr + ph.p_offset;
				err = 0;
				break;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}
