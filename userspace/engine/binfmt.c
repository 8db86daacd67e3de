// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The emulator a binfmt_misc entry registered with flag F runs.  The kernel
 * opened it at registration, so its path may name nothing here (an
 * emulator image's, gone with its container, as docker/setup-qemu-action
 * leaves them) or another file (the host's own qemu-aarch64).  An
 * executable the entry matches, started traced, stops at its exec before
 * the emulator runs an instruction: its /proc/PID/exe is that emulator,
 * which is opened and kept, and the process killed.
 */
#include "engine/binfmt.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The largest offset and magic an entry may have (binfmt_misc's). */
#define MAGIC_MAX  128
#define OFFSET_MAX 4096

static int hex_bytes(const char *hex, unsigned char *out, size_t max)
{
	size_t n = 0;

	while (hex[0] && hex[1] && n < max) {
		unsigned int v;

		if (sscanf(hex, "%2x", &v) != 1)
			return -1;
		out[n++] = (unsigned char)v;
		hex += 2;
	}
	return hex[0] && hex[0] != '\n' ? -1 : (int)n;
}

int binfmt_entry_read(const char *path, struct binfmt_entry *b)
{
	char line[PATH_MAX + 32];
	FILE *f = fopen(path, "re");

	memset(b, 0, sizeof(*b));
	b->mask_len = -1;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strcmp(line, "enabled"))
			b->enabled = true;
		else if (!strncmp(line, "interpreter ", 12))
			snprintf(b->interpreter, sizeof(b->interpreter), "%.*s",
				 (int)sizeof(b->interpreter) - 1, line + 12);
		else if (!strncmp(line, "flags: ", 7))
			b->fix_binary = strchr(line + 7, 'F') != NULL;
		else if (!strncmp(line, "offset ", 7))
			b->offset = strtoul(line + 7, NULL, 10);
		else if (!strncmp(line, "magic ", 6))
			b->magic_len = hex_bytes(line + 6, b->magic, sizeof(b->magic));
		else if (!strncmp(line, "mask ", 5))
			b->mask_len = hex_bytes(line + 5, b->mask, sizeof(b->mask));
		else if (!strncmp(line, "extension ", 10))
			b->extension = true;
	}
	fclose(f);
	return 0;
}

/* An executable ENTRY matches, in memory: its magic at its offset. */
static int matching_file(const struct binfmt_entry *b)
{
	unsigned char buf[OFFSET_MAX + MAGIC_MAX] = {0};
	size_t len = b->offset + (size_t)b->magic_len;
	int fd;

	for (int i = 0; i < b->magic_len; i++)
		buf[b->offset + i] = b->magic[i] & (i < b->mask_len ? b->mask[i] : 0xff);
	/* (An ELF header's size at least: the kernel reads that much.) */
	if (len < 128)
		len = 128;
	/* Not close-on-exec: binfmt_misc refuses a file the interpreter could
	 * not reach. */
	fd = (int)syscall(SYS_memfd_create, "qemu-jitbpf-binfmt", 0);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, len) != (ssize_t)len) {
		int err = -errno;

		close(fd);
		return err ? err : -EIO;
	}
	return fd;
}

int binfmt_emulator_fd(const struct binfmt_entry *b)
{
	char exe[64];
	int file, status, fd, err = 0;
	pid_t pid;

	if (!b->enabled || b->extension || b->magic_len <= 0 || b->offset > OFFSET_MAX)
		return -ENOTSUP;
	file = matching_file(b);
	if (file < 0)
		return file;
	pid = fork();
	if (pid == 0) {
		char *argv[] = {"qemu-jitbpf-binfmt", NULL}, *envp[] = {NULL};

		/* Stopped at its exec, before the emulator runs. */
		if (!ptrace(PTRACE_TRACEME, 0, NULL, NULL))
			syscall(SYS_execveat, file, "", argv, envp, AT_EMPTY_PATH);
		_exit(127);
	}
	close(file);
	if (pid < 0)
		return -errno;
	if (waitpid(pid, &status, 0) != pid)
		err = -errno;
	else if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGTRAP)
		err = -ENOEXEC;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	fd = err ? -1 : open(exe, O_RDONLY | O_CLOEXEC);
	if (!err && fd < 0)
		err = -errno;
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return err ? err : fd;
}
