// SPDX-License-Identifier: GPL-2.0-or-later
#include "warmup.h"
#include "util.h"

#include <fcntl.h>
#include <gelf.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct warmup {
	pthread_t thread;
	int fd;
};

/* File offset of the ELF entry point: code that runs once, at start. */
static long entry_offset(const char *path)
{
	long off = -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Ehdr eh;
	size_t n;

	if (elf && gelf_getehdr(elf, &eh) && !elf_getphdrnum(elf, &n)) {
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD &&
			    (ph.p_flags & PF_X) && eh.e_entry >= ph.p_vaddr &&
			    eh.e_entry < ph.p_vaddr + ph.p_filesz) {
				off = eh.e_entry - ph.p_vaddr + ph.p_offset;
				break;
			}
		}
	}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return off;
}

static int uprobe_pmu_type(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "re");
	int type = -1;

	if (f) {
		if (fscanf(f, "%d", &type) != 1)
			type = -1;
		fclose(f);
	}
	return type;
}

static void *warm(void *arg)
{
	struct warmup *w = arg;
	struct perf_event_attr attr;
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	long off;
	int type = uprobe_pmu_type();

	if (n <= 0 || type < 0)
		return NULL;
	exe[n] = 0;
	off = entry_offset(exe);
	if (off < 0)
		return NULL;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = type;
	attr.config1 = (uintptr_t)exe; /* path */
	attr.config2 = off;
	attr.disabled = 1;
	w->fd = syscall(SYS_perf_event_open, &attr, getpid(), -1, -1, PERF_FLAG_FD_CLOEXEC);
	return NULL;
}

struct warmup *warmup_start(void)
{
	struct warmup *w = xcalloc(1, sizeof(*w));

	w->fd = -1;
	if (pthread_create(&w->thread, NULL, warm, w)) {
		free(w);
		return NULL;
	}
	return w;
}

int warmup_finish(struct warmup *w)
{
	int fd;

	if (!w)
		return -1;
	pthread_join(w->thread, NULL);
	fd = w->fd;
	free(w);
	return fd;
}
