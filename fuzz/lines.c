// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A .debug_line section and its strings, as a guest's debug file could
 * hold them, read by the tool's own line-table reader (naming/lines.c)
 * and asked for the lines of addresses.  The input: a byte of flags
 * (bit 0: big-endian file; bit 1: .debug_line compressed with zlib, as
 * a linker's --compress-debug-sections does; bit 2: .debug_line marked
 * compressed, the rest of the input its header and stream), a 16-bit
 * little-endian size N, N bytes that are both .debug_line_str and
 * .debug_str, and the rest .debug_line.  The addresses asked: every
 * DW_LNE_set_address operand in it, a few bytes around each, and the
 * input's last bytes; then every statement row, as coverage walks them.
 */
#include "fuzz.h"
#include "naming/lines.h"

#include <dwarf.h>
#include <elf.h>
#include <gelf.h>
#include <zlib.h>

static const char shstr[] = "\0.shstrtab\0.debug_line\0.debug_line_str\0.debug_str";
enum { NAME_SHSTR = 1, NAME_LINE = 11, NAME_LINE_STR = 23, NAME_STR = 39 };

static void put16(uint8_t *p, uint16_t v, bool big)
{
	p[big ? 1 : 0] = v & 0xff;
	p[big ? 0 : 1] = v >> 8;
}

static void put32(uint8_t *p, uint32_t v, bool big)
{
	for (int i = 0; i < 4; i++)
		p[big ? 3 - i : i] = v >> (8 * i);
}

static void put64(uint8_t *p, uint64_t v, bool big)
{
	for (int i = 0; i < 8; i++)
		p[big ? 7 - i : i] = v >> (8 * i);
}

/* Section header I of the image at IMG + SHOFF. */
static void shdr(uint8_t *img, size_t shoff, int i, uint32_t name, uint32_t type, uint64_t flags,
		 uint64_t off, uint64_t size, bool big)
{
	uint8_t *s = img + shoff + (size_t)i * sizeof(Elf64_Shdr);

	put32(s + offsetof(Elf64_Shdr, sh_name), name, big);
	put32(s + offsetof(Elf64_Shdr, sh_type), type, big);
	put64(s + offsetof(Elf64_Shdr, sh_flags), flags, big);
	put64(s + offsetof(Elf64_Shdr, sh_offset), off, big);
	put64(s + offsetof(Elf64_Shdr, sh_size), size, big);
	put64(s + offsetof(Elf64_Shdr, sh_addralign), 1, big);
}

/* An ELF64 image of the sections: *SIZE bytes, to free. */
static uint8_t *image(const uint8_t *line, size_t nline, const uint8_t *str, size_t nstr, bool big,
		      bool compressed, size_t *size)
{
	size_t o_shstr = sizeof(Elf64_Ehdr), o_line = o_shstr + sizeof(shstr);
	size_t o_str = o_line + nline, shoff = (o_str + nstr + 7) & ~(size_t)7;
	uint8_t *img;

	*size = shoff + 5 * sizeof(Elf64_Shdr);
	img = calloc(1, *size);
	if (!img)
		abort();
	memcpy(img, ELFMAG, SELFMAG);
	img[EI_CLASS] = ELFCLASS64;
	img[EI_DATA] = big ? ELFDATA2MSB : ELFDATA2LSB;
	img[EI_VERSION] = EV_CURRENT;
	put16(img + offsetof(Elf64_Ehdr, e_type), ET_EXEC, big);
	put16(img + offsetof(Elf64_Ehdr, e_machine), EM_X86_64, big);
	put32(img + offsetof(Elf64_Ehdr, e_version), EV_CURRENT, big);
	put64(img + offsetof(Elf64_Ehdr, e_shoff), shoff, big);
	put16(img + offsetof(Elf64_Ehdr, e_ehsize), sizeof(Elf64_Ehdr), big);
	put16(img + offsetof(Elf64_Ehdr, e_shentsize), sizeof(Elf64_Shdr), big);
	put16(img + offsetof(Elf64_Ehdr, e_shnum), 5, big);
	put16(img + offsetof(Elf64_Ehdr, e_shstrndx), 1, big);
	memcpy(img + o_shstr, shstr, sizeof(shstr));
	memcpy(img + o_line, line, nline);
	memcpy(img + o_str, str, nstr);
	shdr(img, shoff, 1, NAME_SHSTR, SHT_STRTAB, 0, o_shstr, sizeof(shstr), big);
	shdr(img, shoff, 2, NAME_LINE, SHT_PROGBITS, compressed ? SHF_COMPRESSED : 0, o_line, nline,
	     big);
	shdr(img, shoff, 3, NAME_LINE_STR, SHT_PROGBITS, 0, o_str, nstr, big);
	shdr(img, shoff, 4, NAME_STR, SHT_PROGBITS, 0, o_str, nstr, big);
	return img;
}

/* A row coverage would list: a range of code, a named file, a line. */
static void check_row(void *ctx, uint64_t lo, uint64_t hi, const char *file, int line)
{
	(void)ctx;
	if (hi <= lo || line <= 0 || !strlen(file))
		abort();
}

static void ask(struct line_table *t, uint64_t addr)
{
	const char *file;
	int line;

	if (line_table_find(t, addr, &file, &line) && (line <= 0 || !strlen(file)))
		abort(); /* a line the caller would print as nothing */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data + size - (size < 24 ? size : 24), size < 24 ? size : 24};
	struct line_table *t;
	const uint8_t *line;
	size_t nstr, nline, isize;
	uint8_t *img;
	bool big;
	Elf *elf;

	if (size < 3)
		return 0;
	big = data[0] & 1;
	nstr = data[1] | (size_t)data[2] << 8;
	if (nstr > size - 3)
		nstr = size - 3;
	line = data + 3 + nstr;
	nline = size - 3 - nstr;
	if (data[0] & 2) {
		/* What a linker writes: a compression header, then zlib. */
		uLongf zlen = compressBound(nline);
		uint8_t *z = malloc(sizeof(Elf64_Chdr) + zlen);

		if (!z || compress2(z + sizeof(Elf64_Chdr), &zlen, line, nline, 1) != Z_OK)
			abort();
		memset(z, 0, sizeof(Elf64_Chdr));
		put32(z + offsetof(Elf64_Chdr, ch_type), ELFCOMPRESS_ZLIB, big);
		put64(z + offsetof(Elf64_Chdr, ch_size), nline, big);
		put64(z + offsetof(Elf64_Chdr, ch_addralign), 1, big);
		img = image(z, sizeof(Elf64_Chdr) + zlen, data + 3, nstr, big, true, &isize);
		free(z);
	} else {
		img = image(line, nline, data + 3, nstr, big, data[0] & 4, &isize);
	}
	elf = elf_memory((char *)img, isize);
	if (elf && line_table_open(elf, &t) == LINES_READ) {
		for (size_t i = 0; i + 11 <= nline; i++) {
			uint64_t a = 0;

			if (line[i] || line[i + 1] != 9 || line[i + 2] != DW_LNE_set_address)
				continue;
			for (int b = 0; b < 8; b++)
				a |= (uint64_t)line[i + 3 + b] << (8 * (big ? 7 - b : b));
			for (uint64_t d = 0; d < 16; d++)
				ask(t, a + d);
			ask(t, a - 1);
		}
		for (int i = 0; i < 3; i++)
			ask(t, fuzz_u64(&in));
		line_table_each(t, check_row, NULL);
		line_table_free(t);
	}
	if (elf)
		elf_end(elf);
	free(img);
	return 0;
}
