// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * An ELF file's functions: its symbol tables (.symtab, else .dynsym), its
 * separate debug file's, its PLT entries, and for a stripped file the
 * functions its unwind tables start; read on first use, sorted, names
 * demangled when shown.
 */
#include "naming/symbols.h"
#include "naming/elffile.h"
#include "naming/symtable.h"
#include "naming/pltsyms.h"
#include "naming/cfisyms.h"
#include "naming/demangle.h"
#include "util/procfile.h"
#include "util/util.h"

#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
bool elf_has_symtab(Elf *elf)
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
		elf_file_warn(&(struct proc_view){.pid = e->pid}, e->dbg_path,
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
		elf_file_warn(&(struct proc_view){.pid = e->pid}, e->path, why);
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
