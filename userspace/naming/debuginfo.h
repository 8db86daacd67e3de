/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Where an ELF file's separate debug file is, as the process sees it. */
#ifndef QJ_DEBUGINFO_H
#define QJ_DEBUGINFO_H

typedef struct Elf Elf;
struct proc_view;

/*
 * The separate debug file of ELF (at PATH), as view V sees it: by build-id
 * under /usr/lib/debug/.build-id, then by .gnu_debuglink next to PATH, in
 * its .debug folder, or under /usr/lib/debug.  NULL if none (free it).
 */
char *find_debug_file(Elf *elf, const char *path, const struct proc_view *v);

#endif
