// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/util.h"
#include "util/u64map.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

int verbose;

static void oom(void)
{
	pr_err("out of memory");
	abort();
}

FILE *xopen_memstream(char **buf, size_t *len)
{
	FILE *f = open_memstream(buf, len);

	if (!f)
		oom();
	return f;
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		oom();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		oom();
	return p;
}

const char *qemu_arch(const char *path, size_t *len)
{
	const char *base = path_base(path), *arch;

	if (!strncmp(base, "qemu-system-", 12))
		arch = base + 12;
	else if (!strncmp(base, "qemu-", 5))
		arch = base + 5;
	else
		return NULL;
	*len = before_suffix(arch, "-static");
	if (!*len)
		*len = strlen(arch);
	return *len ? arch : NULL;
}

size_t before_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n > m && !strcmp(s + n - m, suffix) ? n - m : 0;
}

void text_clean(char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (text_ctl(s[i]))
			s[i] = '?';
}

char *xstrdup_clean(const char *s)
{
	char *c = xstrdup(s);

	text_clean(c, strlen(c));
	return c;
}

const char *path_base(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom();
	return s;
}

void grow(void *array, size_t *cap, size_t need, size_t elsize)
{
	void **a = array;
	size_t n = *cap ? *cap : 16;

	if (need <= *cap)
		return;
	while (n < need)
		n *= 2;
	*a = xrealloc(*a, n * elsize);
	*cap = n;
}

uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

struct timespec realtime_in_ms(uint64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

int safe_file_create_at(struct safe_file *sf, int dirfd, const char *name, mode_t mode, uid_t uid,
			gid_t gid)
{
	int fd = -1;

	memset(sf, 0, sizeof(*sf));
	sf->dirfd = dirfd;
	sf->path = xstrdup(name);
	sf->mode = mode;
	sf->uid = uid;
	sf->gid = gid;
	/* O_CREAT|O_EXCL|O_NOFOLLOW: never through a link, never a file
	 * someone else made. */
	for (int tries = 0; fd < 0 && tries < 100; tries++) {
		uint64_t r = mono_ns() * 0x9e3779b97f4a7c15ull ^ ((uint64_t)getpid() << 32) ^ tries;

		free(sf->tmp);
		sf->tmp = xasprintf("%s.tmp-%06x", name, (unsigned int)(r & 0xffffff));
		fd = openat(dirfd, sf->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		int err = -errno;

		pr_err("cannot create a file next to %s: %s", name, strerror(errno));
		free(sf->path);
		free(sf->tmp);
		return err;
	}
	sf->f = fdopen(fd, "w");
	if (!sf->f) {
		close(fd);
		unlinkat(dirfd, sf->tmp, 0);
		free(sf->path);
		free(sf->tmp);
		return -ENOMEM;
	}
	return 0;
}

int safe_file_create(struct safe_file *sf, const char *path, mode_t mode, uid_t uid, gid_t gid)
{
	return safe_file_create_at(sf, AT_FDCWD, path, mode, uid, gid);
}

void safe_file_buffer(struct safe_file *sf, size_t size)
{
	free(sf->buf);
	sf->buf = xmalloc(size);
	setvbuf(sf->f, sf->buf, _IOFBF, size);
}

/*
 * Put TMP in PATH's place in DIRFD, atomically: a reader sees the old file
 * or the new one.  An existing PATH is exchanged with TMP, then removed:
 * ext4 writes a file renamed over another out at once (auto_da_alloc),
 * 0.1-0.7 ms of the end of a run, and a file exchanged later, like any
 * file nobody syncs.  Never through a link at PATH (it is replaced), never
 * a directory's place.  0 or -errno.
 */
static int replace(int dirfd, const char *tmp, const char *path)
{
	if (!renameat2(dirfd, tmp, dirfd, path, RENAME_EXCHANGE)) {
		if (!unlinkat(dirfd, tmp, 0))
			return 0;
		/* PATH was a directory: give it its place back. */
		renameat2(dirfd, tmp, dirfd, path, RENAME_EXCHANGE);
		return -EISDIR;
	}
	/* No PATH yet, or a file system that cannot exchange. */
	return renameat(dirfd, tmp, dirfd, path) ? -errno : 0;
}

int safe_file_commit(struct safe_file *sf)
{
	int fd = fileno(sf->f);
	int err = 0;

	if (fchmod(fd, sf->mode) || (sf->uid != (uid_t)-1 && fchown(fd, sf->uid, sf->gid)))
		err = -errno;
	if (fflush(sf->f) || ferror(sf->f))
		err = err ? err : -EIO;
	if (fclose(sf->f) && !err)
		err = -errno;
	free(sf->buf);
	if (!err)
		err = replace(sf->dirfd, sf->tmp, sf->path);
	if (err) {
		pr_err("cannot write %s: %s", sf->path, strerror(-err));
		unlinkat(sf->dirfd, sf->tmp, 0);
	}
	free(sf->path);
	free(sf->tmp);
	return err;
}

void safe_file_abort(struct safe_file *sf)
{
	fclose(sf->f);
	free(sf->buf);
	unlinkat(sf->dirfd, sf->tmp, 0);
	free(sf->path);
	free(sf->tmp);
}

struct tie_ctx {
	const char *base;
	size_t size;
	int (*cmp)(const void *, const void *);
};

/* (A key and its element's index.) */
static int cmp_tie(const void *a, const void *b, void *arg)
{
	const struct u64map_ent *x = a, *y = b;
	const struct tie_ctx *t = arg;

	return t->cmp(t->base + x->val * t->size, t->base + y->val * t->size);
}

void sort_by_key(void *base, size_t n, size_t size, size_t key_off,
		 int (*cmp)(const void *, const void *))
{
	struct tie_ctx t = {base, size, cmp};
	struct u64map_ent *a;
	char *out;

	if (n < 64 && cmp) {
		sort_array(base, n, size, cmp);
		return;
	}
	if (n < 2)
		return;
	a = xmalloc(n * sizeof(*a));
	for (size_t i = 0; i < n; i++) {
		memcpy(&a[i].slot, t.base + i * size + key_off, sizeof(a[i].slot));
		a[i].val = i;
	}
	u64map_sort(a, n);
	/* Equal keys: CMP decides, or they stay in order. */
	for (size_t i = 0, j; cmp && i < n; i = j) {
		for (j = i + 1; j < n && a[j].slot == a[i].slot; j++)
			;
		if (j - i > 1)
			qsort_r(a + i, j - i, sizeof(*a), cmp_tie, &t);
	}
	out = xmalloc(n * size);
	for (size_t i = 0; i < n; i++)
		memcpy(out + i * size, t.base + a[i].val * size, size);
	memcpy(base, out, n * size);
	free(out);
	free(a);
}

size_t count_le(const void *base, size_t n, size_t elsize, size_t key_off, uint64_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		uint64_t k;

		memcpy(&k, (const char *)base + mid * elsize + key_off, sizeof(k));
		if (k <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		p += n;
		len -= n;
	}
	return true;
}

int maps_find(pid_t pid, bool (*fn)(const struct map_entry *m, void *ctx), void *ctx)
{
	char *path = xasprintf("/proc/%d/maps", pid), *line = NULL;
	size_t cap = 0;
	int err = -ESRCH;
	FILE *f = fopen(path, "re");

	free(path);
	if (!f)
		return -ESRCH;
	while (err && getline(&line, &cap, f) > 0) {
		unsigned long long start, end, off, ino;
		unsigned int maj, min;
		struct map_entry m;
		int n = 0;

		err = -ENOENT; /* PID has mappings */
		if (sscanf(line, "%llx-%llx %*s %llx %x:%x %llu %n", &start, &end, &off, &maj, &min,
			   &ino, &n) < 6 ||
		    !n)
			continue;
		line[strcspn(line, "\n")] = 0;
		m = (struct map_entry){start, end, off, makedev(maj, min), ino, line + n};
		if (fn(&m, ctx))
			err = 0;
	}
	free(line);
	fclose(f);
	return err;
}

/*
 * CAP is a first guess at the size.  Keep it near the truth for sysctls:
 * the kernel allocates and zeroes a buffer as large as the read asked.
 */
char *read_all(const char *path, size_t *len, size_t cap)
{
	size_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf;
	ssize_t r;

	if (fd < 0)
		return NULL;
	/* A regular file says its size; /proc files say 0. */
	if (!fstat(fd, &st) && st.st_size > 0)
		cap = st.st_size + 4097;
	buf = xmalloc(cap);
	while ((r = read(fd, buf + n, cap - n - 1)) > 0) {
		n += r;
		if (cap - n < 4096)
			buf = xrealloc(buf, cap *= 2);
	}
	close(fd);
	buf[n] = 0;
	*len = n;
	return buf;
}

char *boot_id(void)
{
	size_t len;
	char *boot = read_all("/proc/sys/kernel/random/boot_id", &len, 64);

	if (boot)
		boot[strcspn(boot, "\n")] = 0;
	return boot;
}

static bool ours(const struct stat *st, mode_t others)
{
	return (st->st_uid == 0 || st->st_uid == geteuid()) && !(st->st_mode & others);
}

bool cache_trusted(const char *path)
{
	struct stat st, dir;

	/* Root's file or our own, in such a directory: a service's user
	 * trusts what it wrote, root nobody's but root's. */
	return !stat(path, &st) && !stat(CACHE_DIR, &dir) && ours(&st, 077) && ours(&dir, 022) &&
	       (st.st_uid == dir.st_uid || dir.st_uid == 0);
}

int cache_create(struct safe_file *sf, const char *path)
{
	if (mkdir(CACHE_DIR, 0700) && errno != EEXIST)
		return -errno;
	return safe_file_create(sf, path, 0600, (uid_t)-1, (gid_t)-1);
}

void stat_id(const struct stat *st, uint64_t id[4])
{
	id[0] = st->st_dev;
	id[1] = st->st_ino;
	id[2] = (uint64_t)st->st_size;
	id[3] = (uint64_t)st->st_mtim.tv_sec * 1000000000ull + (uint64_t)st->st_mtim.tv_nsec;
}

char *sput_dec(char *p, uint64_t v, bool neg)
{
	char b[20], *d = b + sizeof(b);

	do
		*--d = (char)('0' + v % 10);
	while (v /= 10);
	if (neg)
		*p++ = '-';
	memcpy(p, d, (size_t)(b + sizeof(b) - d));
	return p + (b + sizeof(b) - d);
}

void fput_dec(FILE *f, uint64_t v, bool neg)
{
	char b[21];

	fwrite_unlocked(b, 1, (size_t)(sput_dec(b, v, neg) - b), f);
}

void fput_hex(FILE *f, uint64_t v)
{
	char b[16], *p = b + sizeof(b);

	do
		*--p = "0123456789abcdef"[v & 15];
	while (v >>= 4);
	fwrite_unlocked(p, 1, (size_t)(b + sizeof(b) - p), f);
}

void put_xml(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

void args_line(char *s, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++)
		if (!s[i])
			s[i] = ' ';
	s[len] = 0;
}

void json_put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}
