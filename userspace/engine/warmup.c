// SPDX-License-Identifier: GPL-2.0-or-later
#include "engine/warmup.h"
#include "util/util.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include <fcntl.h>
#include <gelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/*
 * A multi-uprobe link (a trivial program on our entry point): its release
 * shares its RCU waits with our other links.  A perf-event uprobe, used
 * before, is released under the kernel's event_mutex, which the next
 * tool's own warm-up then waited for.
 */
static void *warm(void *arg)
{
	const struct bpf_insn ret0[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};
	LIBBPF_OPTS(bpf_prog_load_opts, popts, .expected_attach_type = BPF_TRACE_UPROBE_MULTI);
	LIBBPF_OPTS(bpf_link_create_opts, lopts);
	struct warmup *w = arg;
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	unsigned long off;
	long entry;
	int prog;

	if (n <= 0)
		return NULL;
	exe[n] = 0;
	entry = entry_offset(exe);
	if (entry < 0)
		return NULL;
	prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "qj_warmup", "GPL", ret0, 2, &popts);
	if (prog < 0)
		return NULL;
	off = entry;
	lopts.uprobe_multi.path = exe;
	lopts.uprobe_multi.offsets = &off;
	lopts.uprobe_multi.cnt = 1;
	lopts.uprobe_multi.pid = getpid();
	w->fd = bpf_link_create(prog, 0, BPF_TRACE_UPROBE_MULTI, &lopts);
	close(prog); /* the link holds it */
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
