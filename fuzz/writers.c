// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The writers on extreme values: perf map lines of code ranges at the ends
 * of the address space, of sizes 0 and 2^64-1, named by up to 64 KiB of
 * any bytes; jitdump records of such names and of code sizes from 0 up;
 * uftrace info, task and symbol files for programs with such names and
 * command lines.  Each file written must then read back as its format
 * says: a perf map line per live range, jitdump records that add up to
 * the file, one line per field of uftrace's info.
 */
#include "fuzz.h"
#include "outputs.h"
#include "naming/codemap.h"
#include "naming/guest.h"
#include "util/strtab.h"
#include "writers/jitdump.h"
#include "writers/perfmap.h"
#include "writers/uftrace.h"

#include <elf.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>

static char dir[64];

/* A name from the input: its length (up to 64 KiB), then a byte it
 * repeats, with the input's next bytes over its start. */
static char *name_of(struct fuzz_in *in)
{
	size_t len = fuzz_u64(in) & 0x1ffff, i;
	char fill = (char)fuzz_u64(in);
	char *s;

	if (len > 65536)
		len = len & 7;
	s = malloc(len + 1);
	memset(s, fill ? fill : 'x', len);
	for (i = 0; i < len && i < in->left && i < 16; i++)
		s[i] = in->p[i] ? (char)in->p[i] : '0';
	s[len] = 0;
	return s;
}

/* The code map's names live as long as their table (a guest's). */
static struct strtab names;

/* A name for the code map: one of a few, of lengths 0 to 64 KiB, of
 * letters or of line ends. */
static const char *kept_name(struct fuzz_in *in)
{
	static const size_t lens[] = {0, 1, 2, 3, 4095, 65536};
	static const char fills[] = {'a', '\n', '\r', 0x7f};
	uint64_t x = fuzz_u64(in);
	char *s;
	const char *kept;
	size_t len = lens[x % 6];

	s = malloc(len + 1);
	memset(s, fills[(x / 6) % 4], len);
	s[len] = 0;
	kept = strtab_add(&names, s);
	free(s);
	return kept;
}

static uint64_t extreme(struct fuzz_in *in)
{
	static const uint64_t v[] = {
		0,	    1,	       UINT64_MAX, UINT64_MAX - 1, 1ull << 63, (1ull << 63) - 1,
		UINT32_MAX, 1ull << 32};
	uint64_t x = fuzz_u64(in);

	return x & 1 ? v[(x >> 1) % (sizeof(v) / sizeof(v[0]))] : x >> 1;
}

static void check_info(const char *path)
{
	FILE *f = fopen(path, "re");
	char line[1 << 17];
	int fields = 0;

	if (!f)
		abort();
	fseek(f, 40, SEEK_SET);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "exename:", 8) || !strncmp(line, "cmdline:", 8))
			fields++;
		else if (!strchr(line, ':'))
			abort(); /* a line of a field a newline split */
	fclose(f);
	if (fields != 2)
		abort();
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	return ftw->level ? remove(path) : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data, size};
	struct codemap m = {0};
	char path[128], marker[128];
	struct jitdump *j;
	struct uftrace *u;
	struct guest g;
	uint64_t bytes = 0;
	void *map;
	int fd;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/qj-fuzz-writers.%d", getpid());
		if (mkdir(dir, 0700))
			abort();
	}
	/* QEMU's jitdump marker, mapped as QEMU maps it. */
	snprintf(marker, sizeof(marker), "%s/jit-%d.dump", dir, getpid());
	fd = open(marker, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	map = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	j = jitdump_new(getpid(), getuid(), EM_X86_64, false);
	for (int i = 0; in.left && i < 64; i++) {
		uint8_t op = (uint8_t)fuzz_u64(&in);
		uint64_t host = extreme(&in), len = extreme(&in);
		char *name = name_of(&in);

		switch (op % 4) {
		case 0:
			codemap_add(&m, host, len, kept_name(&in));
			break;
		case 1:
			codemap_flush(&m);
			break;
		case 2: {
			/* Code bytes the input has; none if it has none. */
			uint64_t ts = extreme(&in), n = len < in.left ? len : in.left;

			jitdump_load(j, ts, (uint32_t)len, host, in.p, n, name, NULL, 0);
			break;
		}
		case 3:
			if (map != MAP_FAILED && !jitdump_is_open(j))
				jitdump_open(j, marker, (uint64_t)map);
			break;
		}
		free(name);
	}
	snprintf(path, sizeof(path), "perf-%d.map", getpid());
	{
		int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		size_t live = codemap_live(&m);

		if (!perfmap_write(&m, dfd, path, (uid_t)-1, (gid_t)-1, &bytes)) {
			snprintf(path, sizeof(path), "%s/perf-%d.map", dir, getpid());
			fuzz_check_perfmap(path, live);
		}
		close(dfd);
	}
	codemap_free(&m);
	strtab_free(&names);
	if (jitdump_is_open(j)) {
		jitdump_close(j, &bytes);
		fuzz_check_jitdump(marker);
	} else {
		jitdump_discard(j);
	}
	if (map != MAP_FAILED)
		munmap(map, 4096);
	/* uftrace: a program named and run with any bytes. */
	snprintf(path, sizeof(path), "%s/uftrace.data", dir);
	u = uftrace_open(path, NULL);
	if (u) {
		char *exe = name_of(&in), *cmd = name_of(&in);

		guest_init(&g, 0);
		uftrace_begin(u, getpid(), 1);
		uftrace_end(u, getpid(), &g, exe);
		if (!uftrace_close(u, exe, cmd, &bytes)) {
			snprintf(path, sizeof(path), "%s/uftrace.data/info", dir);
			check_info(path);
		}
		guest_free(&g);
		free(exe);
		free(cmd);
	}
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	return 0;
}
