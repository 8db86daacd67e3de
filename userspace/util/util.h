/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Logging, allocation and file helpers shared by every part of the tool. */
#ifndef QJ_UTIL_H
#define QJ_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>

extern int verbose;

#define pr_err(fmt, ...)  fprintf(stderr, "qemu-jitbpf: " fmt "\n", ##__VA_ARGS__)
#define pr_warn(fmt, ...) fprintf(stderr, "qemu-jitbpf: warning: " fmt "\n", ##__VA_ARGS__)
#define pr_dbg(fmt, ...)                                                          \
	do {                                                                      \
		if (verbose)                                                      \
			fprintf(stderr, "qemu-jitbpf: " fmt "\n", ##__VA_ARGS__); \
	} while (0)

/* S as a JSON string, quotes included (NULL: ""). */
void json_put_string(FILE *f, const char *s);
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* A stream writing into memory (open_memstream()), *BUF freed by the caller. */
FILE *xopen_memstream(char **buf, size_t *len);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Replace the control characters of S (LEN bytes) with '?': names and
 * paths come from guests and their files, and a newline or a carriage
 * return in one would end or forge a line of a perf map, a uftrace
 * symbol file or info.
 */
void text_clean(char *s, size_t len);
/* The NUL-separated arguments in S (LEN bytes, S[LEN] writable) as one
 * line, spaces between, as ps shows /proc/PID/cmdline. */
void args_line(char *s, size_t len);
/* Is C one of those control characters? */
static inline bool text_ctl(char c)
{
	return (unsigned char)c < 0x20 || c == 0x7f;
}
/* A copy of S, cleaned. */
char *xstrdup_clean(const char *s);
/* The last component of PATH (PATH itself without a slash). */
const char *path_base(const char *path);
/* The length of S before SUFFIX, when S ends with SUFFIX after at least
 * one character of its own; 0 when it does not. */
size_t before_suffix(const char *s, const char *suffix);
/*
 * The guest architecture a QEMU binary's name says (qemu-aarch64,
 * qemu-system-riscv64, qemu-arm-static: "aarch64", "riscv64", "arm"), its
 * length in *LEN; NULL when the name is not a QEMU's.
 */
const char *qemu_arch(const char *path, size_t *len);

/* qsort() for any N: qsort of no elements from a NULL array is undefined. */
static inline void sort_array(void *base, size_t n, size_t size,
			      int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

/*
 * The same for an array ordered first by the u64 at KEY_OFF, ascending:
 * CMP must order so, and is asked only between elements of equal keys
 * (NULL: they keep their order).
 * A radix sort: a symbol table's 8 000 entries in 0.2 ms, not qsort's 1.
 */
void sort_by_key(void *base, size_t n, size_t size, size_t key_off,
		 int (*cmp)(const void *, const void *));

/* Grow *array (of *cap elements of size elsize) to hold at least need. */
void grow(void *array, size_t *cap, size_t need, size_t elsize);

/* FNV-1a over N bytes at P, on from H (FNV_START for a new hash). */
#define FNV_START 0xcbf29ce484222325ull
static inline uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

struct stat;
/* What identifies a file's contents as they are: its device, inode, size
 * and modification time (ns), in ID (cache keys). */
void stat_id(const struct stat *st, uint64_t id[4]);

/* CLOCK_MONOTONIC in ns, the clock of perf -k 1, jitdump and uftrace. */
uint64_t mono_ns(void);
/* CLOCK_REALTIME MS from now, for pthread's timed waits. */
struct timespec realtime_in_ms(uint64_t ms);

/*
 * Create PATH for writing without ever following a link planted in a shared
 * directory: a new file is made next to it with O_EXCL and renamed over
 * PATH when complete (safe_file_commit).  The file gets MODE and, when
 * owner is not (uid_t)-1, that owner.
 */
struct safe_file {
	int dirfd; /* PATH and TMP are relative to it */
	char *path;
	char *tmp;
	FILE *f;
	char *buf; /* F's buffer, safe_file_buffer() */
	uid_t uid;
	gid_t gid;
	mode_t mode;
};
int safe_file_create(struct safe_file *sf, const char *path, mode_t mode, uid_t uid, gid_t gid);
/* The same for NAME in directory DIRFD (another namespace's /tmp). */
int safe_file_create_at(struct safe_file *sf, int dirfd, const char *name, mode_t mode, uid_t uid,
			gid_t gid);
/* Write through a buffer of SIZE bytes: setvbuf(f, NULL, ...) keeps glibc's
 * 4 KiB (it ignores the size), a write() per 4 KiB. */
void safe_file_buffer(struct safe_file *sf, size_t size);
int safe_file_commit(struct safe_file *sf);
void safe_file_abort(struct safe_file *sf);

/*
 * In an array of N elements of ELSIZE bytes sorted by the u64 at KEY_OFF,
 * how many have a key <= KEY (the index of the first greater one).
 */
size_t count_le(const void *base, size_t n, size_t elsize, size_t key_off, uint64_t key);

/* V in decimal (with a '-' when NEG), or in hex: printf's %d, %lu and %lx
 * for files of a hundred thousand lines, at a fifth of their cost. */
void fput_dec(FILE *f, uint64_t v, bool neg);
/* The same at P (21 bytes at most); past it. */
char *sput_dec(char *p, uint64_t v, bool neg);
void fput_hex(FILE *f, uint64_t v);
static inline char *sput_int(char *p, int v)
{
	return sput_dec(p, v < 0 ? -(uint64_t)v : (uint64_t)v, v < 0);
}

static inline void fput_int(FILE *f, int v)
{
	char b[21];

	fwrite_unlocked(b, 1, (size_t)(sput_int(b, v) - b), f);
}

/* S as XML text or an attribute's value: its five special characters
 * escaped (the SVG flame graph, Cobertura). */
void put_xml(FILE *f, const char *s);

/* One line of /proc/PID/maps. */
struct map_entry {
	uint64_t start, end, offset;
	dev_t dev;
	ino_t ino;
	const char *path; /* "" for anonymous mappings */
};

/*
 * Call FN on each mapping of process PID until it returns true: then 0.
 * -ENOENT when none did, -ESRCH when PID has no mappings (it has exited).
 */
int maps_find(pid_t pid, bool (*fn)(const struct map_entry *m, void *ctx), void *ctx);

/* Write all of buf; false on error. */
bool write_all(int fd, const void *buf, size_t len);

/*
 * All of PATH, NUL-terminated, its length in *LEN; NULL if unreadable.
 * CAP is a first guess at the size: keep it near the truth for sysctls,
 * as the kernel allocates and zeroes a buffer as large as the read asks.
 */
char *read_all(const char *path, size_t *len, size_t cap);

/*
 * What is read once per boot (kernel symbols, the kernel's structure
 * layout) is kept in CACHE_DIR, a tmpfs directory of root's, or the
 * service's own (its unit's RuntimeDirectory=).
 */
#define CACHE_DIR "/run/qemu-jitbpf"
/* This boot's id, or NULL (free it). */
char *boot_id(void);
/* Is PATH a cache file we may trust: root's or our own user's, mode 0600,
 * in a directory of root's or ours that nobody else may write? */
bool cache_trusted(const char *path);
/* Start writing cache file PATH (safe_file_commit() completes it). */
int cache_create(struct safe_file *sf, const char *path);

#endif
