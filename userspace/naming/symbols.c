// SPDX-License-Identifier: GPL-2.0-or-later
#include "naming/symbols.h"
#include "naming/elffile.h"
#include "naming/symtable.h"
#include "naming/pltsyms.h"
#include "naming/cfisyms.h"
#include "naming/debuginfo.h"
#include "naming/demangle.h"
#include "naming/lines.h"
#include "util/procfile.h"
#include "util/util.h"

#include <dwarf.h>
#include <errno.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Files others can change are read from a private copy of at most this. */
#define ELF_COPY_MAX (1ull << 30)

/* End address of section NDX, or 0 when unknown. */
static uint64_t section_end(Elf *elf, size_t ndx)
{
	Elf_Scn *scn = elf_getscn(elf, ndx);
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh))
		return 0;
	return sh.sh_addr + sh.sh_size;
}

static bool in_code(Elf *elf, size_t ndx)
{
	Elf_Scn *scn = elf_getscn(elf, ndx);
	GElf_Shdr sh;

	return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR);
}

static void add_syms(struct sym_builder *b, Elf *elf, Elf_Scn *scn, GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	GElf_Ehdr eh;
	uint64_t addr_mask = ~(uint64_t)0;
	size_t count;

	if (!data || !sh->sh_entsize || data->d_size < sh->sh_size) {
		b->broken = "its symbol table lies outside the file";
		return;
	}
	/* Arm: bit 0 of a function's address says it is Thumb code. */
	if (gelf_getehdr(elf, &eh) && eh.e_machine == EM_ARM)
		addr_mask = ~(uint64_t)1;
	count = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < count; i++) {
		GElf_Sym s;
		const char *name;
		int type;

		if (!gelf_getsym(data, i, &s))
			continue;
		type = GELF_ST_TYPE(s.st_info);
		if (!s.st_value || s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE)
			continue;
		/* Functions, and labels in code that stand for them (glibc's
		 * __wrap_main), but not ARM's $x/$d mapping symbols. */
		if (type != STT_FUNC && type != STT_GNU_IFUNC &&
		    (type != STT_NOTYPE || !in_code(elf, s.st_shndx)))
			continue;
		name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (!name)
			b->broken = "its symbols' names lie outside their string table";
		if (!name || !*name || name[0] == '$')
			continue;
		sym_builder_add(
			b, name, strlen(name),
			(struct raw_sym){
				.addr = type == STT_FUNC ? s.st_value & addr_mask : s.st_value,
				.size = s.st_size,
				.limit = section_end(elf, s.st_shndx),
				.rank = GELF_ST_BIND(s.st_info) == STB_GLOBAL ? 0
					: GELF_ST_BIND(s.st_info) == STB_WEAK ? 1
									      : 2,
			});
	}
}

/* Functions of a stripped file, named FILE+0xADDR. */
struct unnamed_fns {
	struct sym_builder *b;
	const char *file;
};

static void add_unnamed_fn(void *arg, uint64_t start, uint64_t size)
{
	struct unnamed_fns *u = arg;
	char name[PATH_MAX + 32];
	int len = snprintf(name, sizeof(name), "%s+0x%" PRIx64, u->file, start);

	if (len > 0 && (size_t)len < sizeof(name))
		sym_builder_add(
			u->b, name, (size_t)len,
			(struct raw_sym){
				.addr = start, .size = size, .limit = start + size, .rank = 3});
}

static void add_plt_sym(void *arg, const char *name, uint64_t addr, uint64_t size)
{
	sym_builder_add(
		arg, name, strlen(name),
		(struct raw_sym){.addr = addr, .size = size, .limit = addr + size, .rank = 3});
}

/* Has ELF a .symtab?  (A file without one takes its debug file's.) */
static bool has_symtab(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			return true;
	return false;
}

/* Read the function symbols of one ELF; returns true if it had .symtab. */
static bool read_syms(struct sym_builder *b, Elf *elf)
{
	Elf_Scn *scn = NULL, *dynsym = NULL;
	bool symtab = false;
	GElf_Shdr sh, dsh;
	GElf_Ehdr eh;
	size_t size = 0;

	elf_rawfile(elf, &size);
	if (gelf_getehdr(elf, &eh) && eh.e_shoff &&
	    (eh.e_shoff > size || eh.e_shnum * (uint64_t)eh.e_shentsize > size - eh.e_shoff))
		b->broken = "its section headers lie outside the file (cut short?)";
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			add_syms(b, elf, scn, &sh);
			symtab = true;
		} else if (sh.sh_type == SHT_DYNSYM) {
			dynsym = scn;
			dsh = sh;
		}
	}
	if (dynsym)
		add_syms(b, elf, dynsym, &dsh);
	return symtab;
}

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

static bool copy_build_id(const void *desc, size_t size, void *ctx)
{
	struct elf_file *e = ctx;

	if (!size || size > sizeof(e->build_id))
		return false;
	memcpy(e->build_id, desc, size);
	e->build_id_len = size;
	return true;
}

/* One line about PATH, a file of V's. */
static void warn_file(const struct proc_view *v, const char *path, const char *what)
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
		warn_file(v, path,
			  copy == -EFBIG ? "over 1 GiB, not read from a file others can change"
					 : strerror(-copy));
	return copy;
}

/* Debug file DBG, as V sees it, opened to be read: -1 if it cannot be. */
static int open_debug(const char *dbg, const struct proc_view *v)
{
	int dfd = view_open(v, dbg, O_RDONLY);

	if (dfd < 0) {
		warn_file(v, dbg, dfd == -EINVAL ? "not a regular file, not read" : strerror(-dfd));
		return -1;
	}
	return safe_fd(dfd, dbg, v);
}

/* Add the symbols of E's debug file. */
static void read_debug_syms(struct sym_builder *b, const struct elf_file *e)
{
	bool read = false;
	Elf *delf = elf_begin(e->dbg_fd, ELF_C_READ_MMAP, NULL);

	if (delf) {
		read = elf_kind(delf) == ELF_K_ELF && read_syms(b, delf);
		elf_end(delf);
	}
	if (!read)
		warn_file(&(struct proc_view){.pid = e->pid}, e->dbg_path,
			  "not a whole ELF file, no symbols read");
	else
		pr_dbg("%s: symbols from %s", e->path, e->dbg_path);
}

/*
 * Read E's symbols, on first use: a process maps tens of libraries, and a
 * profile or a code map names code in few of them.
 */
static void read_symbols(struct elf_file *e)
{
	struct sym_builder b = {0};
	Elf *elf;

	e->syms_read = true;
	elf = elf_begin(e->fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return;
	read_syms(&b, elf);
	if (e->dbg_syms)
		read_debug_syms(&b, e);
	if (!b.n) {
		struct unnamed_fns u = {&b, path_base(e->path)};
		size_t n = cfi_functions(elf, add_unnamed_fn, &u);

		pr_dbg("%s: stripped, %zu functions from its unwind tables", e->path, n);
	}
	elf_plt_syms(elf, add_plt_sym, &b);
	elf_end(elf);
	/* Once per file, as files are read once. */
	if (b.broken) {
		char why[160];

		snprintf(why, sizeof(why), "%s; %s", b.broken,
			 b.n ? "named from what could be read" : "its code goes unnamed");
		warn_file(&(struct proc_view){.pid = e->pid}, e->path, why);
	}
	e->syms = sym_builder_finish(&b, &e->nsyms, &e->names);
	pr_dbg("%s: %zu functions", e->path, e->nsyms);
	if (e->dbg_fd >= 0 && !e->dbg_lines) {
		close(e->dbg_fd);
		e->dbg_fd = -1;
	}
}

static inline struct elf_file *with_syms(const struct elf_file *ce)
{
	struct elf_file *e = (struct elf_file *)ce; /* made by load(), never const */

	if (!e->syms_read)
		read_symbols(e);
	return e;
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
		bool syms = has_symtab(elf), lines = line_table_present(elf);
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
	const struct load_seg *found = NULL;

	for (size_t i = 0; i < e->nsegs; i++) {
		const struct load_seg *s = &e->segs[i];
		uint64_t start = s->offset & ~0xfffull;

		/* From the page it starts in to its end (which may not wrap). */
		if (off < start ||
		    (off > s->offset && off - s->offset >= (s->filesz ? s->filesz : 1)))
			continue;
		if (s->exec)
			return s;
		if (!found)
			found = s;
	}
	return found;
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

const struct sym *elf_file_sym_until(const struct elf_file *ce, uint64_t addr, uint64_t *until)
{
	const struct elf_file *e = with_syms(ce);
	size_t lo = count_le(e->syms, e->nsyms, sizeof(*e->syms), offsetof(struct sym, addr), addr);
	/* The answer changes where the next symbol starts, or this one ends. */
	uint64_t next = lo < e->nsyms ? e->syms[lo].addr : UINT64_MAX;
	const struct sym *s = lo ? &e->syms[lo - 1] : NULL;

	if (s && addr - s->addr < s->size) {
		uint64_t left = s->size - (addr - s->addr);

		*until = left < next - addr ? addr + left : next;
		return s;
	}
	*until = next;
	return NULL;
}

const char *elf_file_sym_name(struct elf_file *e, const struct sym *s)
{
	size_t i = (size_t)(s - e->syms);

	/* C names, the most, cost a glance at their first two bytes. */
	if (s->name[0] != '_' || i >= e->nsyms)
		return s->name;
	if (!e->shown)
		e->shown = xcalloc(e->nsyms, sizeof(*e->shown));
	if (!e->shown[i]) {
		e->shown[i] = demangle(s->name);
		if (!e->shown[i])
			e->shown[i] = (char *)s->name;
	}
	return e->shown[i];
}

size_t elf_file_nsyms(const struct elf_file *e)
{
	return with_syms(e)->nsyms;
}

const struct sym *elf_file_sym_at(const struct elf_file *e, size_t i)
{
	return &with_syms(e)->syms[i];
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
