// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * PLT entries as symbols, NAME@plt, as binutils and perf name them: each
 * entry jumps through a GOT slot (x86-64 jmp *disp(%rip), AArch64 adrp and
 * ldr of x17), and the relocation of that slot names the function
 * (JUMP_SLOT, GLOB_DAT), or, in an IPLT, points at the ifunc resolver,
 * whose symbol names it (IRELATIVE).
 */
#include "naming/pltsyms.h"
#include "util/util.h"

#include <elf.h>
#include <gelf.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct slot {
	uint64_t addr; /* of the GOT slot */
	const char *name;
};

struct slots {
	struct slot *v;
	size_t n, cap;
};

static int cmp_slot(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * The functions of SYMTAB by address, to name an ifunc by its resolver's
 * address: the STT_GNU_IFUNC symbol there first, which is the name
 * callers use (strlen), not the resolver's own (strlen_ifunc).
 */
struct fsym {
	uint64_t addr;
	int rank; /* global ifunc 0, local ifunc 1, function 2 */
	const char *name;
};

static int cmp_fsym(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->rank - y->rank;
}

static struct fsym *read_fsyms(Elf *elf, Elf_Scn *symtab, size_t *n)
{
	Elf_Data *data = symtab ? elf_getdata(symtab, NULL) : NULL;
	struct fsym *v = NULL;
	size_t cap = 0;
	GElf_Shdr sh;
	GElf_Sym s;

	*n = 0;
	if (!data || !gelf_getshdr(symtab, &sh) || !sh.sh_entsize)
		return NULL;
	for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
		const char *name;
		int rank;

		if (!gelf_getsym(data, i, &s))
			continue;
		if (GELF_ST_TYPE(s.st_info) == STT_GNU_IFUNC)
			rank = GELF_ST_BIND(s.st_info) == STB_LOCAL;
		else if (GELF_ST_TYPE(s.st_info) == STT_FUNC)
			rank = 2;
		else
			continue;
		name = elf_strptr(elf, sh.sh_link, s.st_name);
		if (!name || !*name)
			continue;
		grow(&v, &cap, *n + 1, sizeof(*v));
		v[(*n)++] = (struct fsym){s.st_value, rank, name};
	}
	sort_by_key(v, *n, sizeof(*v), offsetof(struct fsym, addr), cmp_fsym);
	return v;
}

/* The best name of the function at ADDR in V (sorted), or NULL. */
static const char *fsym_at(const struct fsym *v, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].addr == addr ? v[lo].name : NULL;
}

enum { SLOT_OTHER, SLOT_SYMBOL, SLOT_IFUNC };

/* What a relocation of TYPE puts in a GOT slot: a symbol's address, an
 * ifunc's (whose resolver the addend is), or something else. */
static int reloc_kind(uint16_t machine, uint32_t type)
{
	if (machine == EM_X86_64)
		return type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT ? SLOT_SYMBOL
		       : type == R_X86_64_IRELATIVE			       ? SLOT_IFUNC
									       : SLOT_OTHER;
	return type == R_AARCH64_JUMP_SLOT || type == R_AARCH64_GLOB_DAT ? SLOT_SYMBOL
	       : type == R_AARCH64_IRELATIVE				 ? SLOT_IFUNC
									 : SLOT_OTHER;
}

/* The functions by address, read when an IRELATIVE slot first needs them. */
struct ifuncs {
	Elf_Scn *symtab;
	bool read;
	struct fsym *v;
	size_t n;
};

/* The GOT slots that relocation section SCN names. */
static void add_slots(struct slots *t, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
		      struct ifuncs *fs, uint16_t machine)
{
	Elf_Scn *link = sh->sh_link ? elf_getscn(elf, sh->sh_link) : NULL;
	Elf_Data *data = elf_getdata(scn, NULL), *syms = link ? elf_getdata(link, NULL) : NULL;
	GElf_Shdr lsh;

	if (!data || !sh->sh_entsize || (link && !gelf_getshdr(link, &lsh)))
		return;
	for (size_t i = 0; i < sh->sh_size / sh->sh_entsize; i++) {
		const char *name = NULL;
		GElf_Rela r;
		GElf_Sym s;

		if (!gelf_getrela(data, i, &r))
			continue;
		switch (reloc_kind(machine, GELF_R_TYPE(r.r_info))) {
		case SLOT_SYMBOL:
			if (syms && gelf_getsym(syms, GELF_R_SYM(r.r_info), &s))
				name = elf_strptr(elf, lsh.sh_link, s.st_name);
			break;
		case SLOT_IFUNC:
			if (!fs->read) {
				fs->read = true;
				fs->v = read_fsyms(elf, fs->symtab, &fs->n);
			}
			name = fsym_at(fs->v, fs->n, r.r_addend);
			break;
		}
		if (!name || !*name)
			continue;
		grow(&t->v, &t->cap, t->n + 1, sizeof(*t->v));
		t->v[t->n++] = (struct slot){r.r_offset, name};
	}
}

static uint32_t le32(const unsigned char *b)
{
	return b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24;
}

/*
 * Does the code at byte I of B (N bytes from address A) load the address
 * of a PLT entry's jump from a GOT slot?  The slot, and where the entry
 * starts.  x86-64: jmp *disp(%rip).  AArch64: adrp x16, page; ldr x17,
 * [x16, #off] (after bti c).
 */
static bool plt_slot(uint16_t machine, const unsigned char *b, size_t n, size_t i, uint64_t a,
		     uint64_t ent, uint64_t *slot, uint64_t *entry)
{
	uint32_t w0, w1;

	if (machine == EM_X86_64) {
		if (i + 6 > n || b[i] != 0xff || b[i + 1] != 0x25)
			return false;
		*slot = a + i + 6 + (int64_t)(int32_t)le32(b + i + 2);
		*entry = a + i - i % ent;
		return true;
	}
	if (i % 4 || i + 8 > n)
		return false;
	w0 = le32(b + i);
	w1 = le32(b + i + 4);
	if ((w0 & 0x9f00001f) != 0x90000010 || (w1 & 0xffc003ff) != 0xf9400211)
		return false;
	*slot = ((a + i) & ~(uint64_t)0xfff) +
		(uint64_t)((int64_t)((uint64_t)((w0 >> 5 & 0x7ffff) << 2 | (w0 >> 29 & 3)) << 43) >>
			   31) +
		(w1 >> 10 & 0xfff) * 8;
	*entry = a + i - (i >= 4 && le32(b + i - 4) == 0xd503245f ? 4 : 0);
	return true;
}

/* Call FN for each entry of PLT section SCN whose GOT slot T names. */
static void scan_plt(uint16_t machine, Elf_Scn *scn, const GElf_Shdr *sh, const struct slots *t,
		     plt_sym_fn *fn, void *arg)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	uint64_t ent = sh->sh_entsize ? sh->sh_entsize : 16, last = UINT64_MAX;

	if (!data || !data->d_buf)
		return;
	for (size_t i = 0; i < data->d_size; i++) {
		struct slot key, *s;
		uint64_t entry;
		char name[256];

		if (!plt_slot(machine, data->d_buf, data->d_size, i, sh->sh_addr, ent, &key.addr,
			      &entry) ||
		    entry == last)
			continue;
		s = bsearch(&key, t->v, t->n, sizeof(*t->v), cmp_slot);
		if (!s || snprintf(name, sizeof(name), "%s@plt", s->name) >= (int)sizeof(name))
			continue;
		fn(arg, name, entry, ent);
		last = entry;
	}
}

void elf_plt_syms(Elf *elf, plt_sym_fn *fn, void *arg)
{
	Elf_Scn *scn = NULL;
	struct ifuncs fs = {0};
	struct slots t = {0};
	size_t shstrndx;
	GElf_Ehdr eh;
	GElf_Shdr sh;

	if (!gelf_getehdr(elf, &eh) || (eh.e_machine != EM_X86_64 && eh.e_machine != EM_AARCH64) ||
	    elf_getshdrstrndx(elf, &shstrndx))
		return;
	/* Ifuncs by name: .symtab, else .dynsym (a stripped libc's). */
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) &&
		    (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !fs.symtab)))
			fs.symtab = scn;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_RELA)
			add_slots(&t, elf, scn, &sh, &fs, eh.e_machine);
	free(fs.v);
	if (!t.n)
		return;
	sort_by_key(t.v, t.n, sizeof(*t.v), offsetof(struct slot, addr), cmp_slot);
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR) ||
		    sh.sh_type != SHT_PROGBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".plt") || !strcmp(name, ".plt.sec") ||
			     !strcmp(name, ".plt.got") || !strcmp(name, ".iplt")))
			scan_plt(eh.e_machine, scn, &sh, &t, fn, arg);
	}
	free(t.v);
}
