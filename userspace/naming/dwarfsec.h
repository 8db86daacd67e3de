/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A debug section's bytes, read as they are, or inflated (SHF_COMPRESSED,
 * zlib) into a buffer of our own.  GNU's older .zdebug sections are
 * recognised, not read: libdw reads those.
 */
#ifndef QJ_DWARFSEC_H
#define QJ_DWARFSEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libelf.h>

/* No section of a file is inflated beyond this. */
#define DWARF_SECTION_MAX (1ull << 30)

/* A section's bytes: in libelf's buffer, or our own (OWN) once inflated. */
struct dwarf_sec {
	const uint8_t *p;
	size_t n;
	void *own;
	bool tried;
};

/* Section NAME of ELF, with data; NULL if none.  *GNU (if GNU is not
 * NULL): there is a .zdebug one instead. */
Elf_Scn *dwarf_find_section(Elf *elf, const char *name, bool *gnu);
/* Section NAME of ELF into OUT, inflated; false if none.  *GNU: .zdebug. */
bool dwarf_section(Elf *elf, const char *name, bool *gnu, struct dwarf_sec *out);

#endif
