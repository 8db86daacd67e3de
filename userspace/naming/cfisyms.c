// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Functions of a stripped ELF file, from its unwind tables: each FDE of
 * .eh_frame (and each entry of Arm's .ARM.exidx) starts a function.  A
 * distribution's static program (busybox-static) has no symbol left, but
 * keeps those tables for backtraces; with them samples add up per
 * function, named by file and address, as perf names code it cannot name
 * ("busybox+0x4a2b0").
 */
#include "naming/cfisyms.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <string.h>

/* A value of ENC's size at P (END bounds it) in the file's byte order. */
static bool read_encoded(const uint8_t *p, const uint8_t *end, uint8_t enc, bool msb, bool is64,
			 uint64_t *val, size_t *len)
{
	size_t n;
	uint64_t v = 0;
	bool is_signed = false;

	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
		n = is64 ? 8 : 4;
		break;
	case DW_EH_PE_udata2:
		n = 2;
		break;
	case DW_EH_PE_sdata2:
		n = 2;
		is_signed = true;
		break;
	case DW_EH_PE_udata4:
		n = 4;
		break;
	case DW_EH_PE_sdata4:
		n = 4;
		is_signed = true;
		break;
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		n = 8;
		break;
	default:
		return false; /* uleb128 and friends: not in FDE addresses */
	}
	if (end < p || (size_t)(end - p) < n)
		return false;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[msb ? i : n - 1 - i] << (8 * (n - 1 - i));
	if (is_signed && n < 8 && (v >> (8 * n - 1)))
		v |= ~0ull << (8 * n);
	*val = v;
	*len = n;
	return true;
}

/* The FDE pointer encoding a CIE's augmentation gives ("zR", "zPLR"). */
static int fde_encoding(const Dwarf_CIE *cie, bool msb, bool is64)
{
	const char *aug = cie->augmentation;
	const uint8_t *d = cie->augmentation_data, *end = d + cie->augmentation_data_size;

	if (!aug || aug[0] != 'z')
		return DW_EH_PE_absptr;
	for (const char *c = aug + 1; *c; c++) {
		uint64_t skip;
		size_t n;

		if (d >= end && (*c == 'R' || *c == 'P' || *c == 'L'))
			return -1;
		switch (*c) {
		case 'R':
			return *d;
		case 'P':
			if (!read_encoded(d + 1, end, *d, msb, is64, &skip, &n))
				return -1;
			d += 1 + n;
			break;
		case 'L':
			d++;
			break;
		default:
			break; /* 'S', 'B', 'G': no data */
		}
	}
	return DW_EH_PE_absptr;
}

/* Every FDE of the .eh_frame section SCN (header SH). */
static size_t eh_frame_functions(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, cfi_fn_cb cb,
				 void *arg)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	Dwarf_Off off = 0, next, cie_off = (Dwarf_Off)-1;
	Dwarf_CFI_Entry ent, cie;
	size_t found = 0;
	int enc = -1;
	bool msb, is64;

	if (!data || !data->d_buf || !ident)
		return 0;
	msb = ident[EI_DATA] == ELFDATA2MSB;
	is64 = ident[EI_CLASS] == ELFCLASS64;
	while (dwarf_next_cfi(ident, data, true, off, &next, &ent) == 0) {
		const uint8_t *p, *end;
		uint64_t start, size;
		size_t n, m;

		off = next;
		if (dwarf_cfi_cie_p(&ent))
			continue;
		/* The CIE's encoding, kept while FDEs share it. */
		if (ent.fde.CIE_pointer != cie_off) {
			Dwarf_Off cnext;

			cie_off = ent.fde.CIE_pointer;
			enc = dwarf_next_cfi(ident, data, true, cie_off, &cnext, &cie) == 0 &&
					      dwarf_cfi_cie_p(&cie)
				      ? fde_encoding(&cie.cie, msb, is64)
				      : -1;
		}
		if (enc < 0 || enc == DW_EH_PE_omit)
			continue;
		p = ent.fde.start;
		end = ent.fde.end;
		if (!read_encoded(p, end, enc, msb, is64, &start, &n) ||
		    !read_encoded(p + n, end, enc & 0x0f, msb, is64, &size, &m))
			continue;
		if ((enc & 0x70) == DW_EH_PE_pcrel)
			start += sh->sh_addr + (uint64_t)(p - (const uint8_t *)data->d_buf);
		else if ((enc & 0x70) != DW_EH_PE_absptr)
			continue;
		if (!is64)
			start &= 0xffffffff;
		if (start && size) {
			cb(arg, start, size);
			found++;
		}
	}
	return found;
}

/* Arm's index: {prel31 function start, unwind data} per function, sorted. */
static size_t exidx_functions(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, cfi_fn_cb cb, void *arg)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	size_t n, found = 0;
	uint64_t prev = 0;

	if (!data || !data->d_buf || !ident || ident[EI_DATA] != ELFDATA2LSB)
		return 0;
	n = data->d_size / 8;
	for (size_t i = 0; i <= n; i++) {
		uint64_t start = 0;

		if (i < n) {
			uint32_t w;

			memcpy(&w, (const uint8_t *)data->d_buf + 8 * i, 4);
			/* 31-bit signed offset from the word itself. */
			start = (sh->sh_addr + 8 * i +
				 (uint64_t)(int64_t)((int32_t)(w << 1) >> 1)) &
				0xffffffff;
		}
		if (prev && start > prev) {
			cb(arg, prev, start - prev);
			found++;
		}
		prev = i < n ? start : 0;
	}
	return found;
}

size_t cfi_functions(Elf *elf, cfi_fn_cb cb, void *arg)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, found = 0;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".eh_frame"))
			found += eh_frame_functions(elf, scn, &sh, cb, arg);
		else if (sh.sh_type == SHT_ARM_EXIDX)
			found += exidx_functions(elf, scn, &sh, cb, arg);
	}
	return found;
}
