/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A stock QEMU's guest_base (the degraded mode): it reports none, so it is
 * inferred from where QEMU mapped the guest's files, as /proc/PID/maps
 * shows them at guest_base + guest address.
 */
#ifndef QJ_GUESTBASE_H
#define QJ_GUESTBASE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * From the mappings alone: a guest program of fixed addresses (ET_EXEC)
 * mapped from its start says where its first segment's address is.
 * QEMU_DEV, QEMU_INO: QEMU's own binary, no guest's.  True with *BASE.
 */
bool guestbase_from_maps(pid_t pid, dev_t qemu_dev, ino_t qemu_ino, uint64_t *base);
/*
 * From a mapping QEMU made for the guest (qemu:target_mmap): file FD's
 * bytes at OFFSET mapped at guest address START; the host mapping of the
 * same file (or, once FD is closed, of a file) at that offset whose
 * address differs by a whole page, the identity first.  True with *BASE.
 */
bool guestbase_from_mmap(pid_t pid, dev_t qemu_dev, ino_t qemu_ino, uint64_t start, uint64_t offset,
			 int fd, uint64_t *base);
/*
 * From a TB: its guest pc PC, where the identity map (guest_base 0, which
 * QEMU tries first) puts it in a guest file.  True with *BASE 0.
 */
bool guestbase_identity(pid_t pid, dev_t qemu_dev, ino_t qemu_ino, uint64_t pc, uint64_t *base);

#endif
