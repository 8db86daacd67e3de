// SPDX-License-Identifier: GPL-2.0-or-later
#include "coverage/listcache.h"
#include "coverage/listing.h"
#include "util/u64map.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* "QJLIST" and the format's version. */
static const char magic[8] = {'Q', 'J', 'L', 'I', 'S', 'T', 0, 1};

struct listcache {
	int dirfd;
	uint64_t tool[4]; /* this binary: device, inode, size, mtime */
	uint64_t hits, stored;
};

/* A file's header; then its sources, functions, lines, ranges and strings. */
struct head {
	char magic[8];
	uint64_t tool[4];
	struct listing_key key;
	uint64_t nsrcs, nfns, nlines, nranges, nstrs;
};

struct disk_src {
	uint32_t path, fns, nfns, lines, nlines;
};

struct disk_fn {
	uint32_t name;
	int32_t line;
	uint32_t first, n;
};

struct disk_line {
	int32_t line;
	uint32_t first, n;
};

struct listcache *listcache_open(const char *dir, const char **why)
{
	struct listcache *lc;
	struct stat st;
	int fd;

	if (!*dir) {
		*why = "no directory";
		return NULL;
	}
	/* (A missing parent, ~/.cache, is made too.) */
	for (char *p = xstrdup(dir), *s = p + 1;; s++) {
		if (*s == '/' || !*s) {
			char c = *s;

			*s = '\0';
			if (mkdir(p, 0700) && errno != EEXIST) {
				*why = strerror(errno);
				free(p);
				return NULL;
			}
			*s = c;
		}
		if (!*s) {
			free(p);
			break;
		}
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		*why = strerror(errno);
		return NULL;
	}
	if (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		*why = "not a directory of this user's own that only it can write";
		return NULL;
	}
	lc = xcalloc(1, sizeof(*lc));
	lc->dirfd = fd;
	if (!stat("/proc/self/exe", &st))
		stat_id(&st, lc->tool);
	return lc;
}

char *listcache_dir(const char *dir)
{
	const char *d = getenv("CACHE_DIRECTORY"), *home = getenv("HOME");

	if (dir)
		return xstrdup(dir);
	/* (systemd gives one per CacheDirectory=, separated by colons.) */
	if (d && *d == '/')
		return xasprintf("%.*s", (int)strcspn(d, ":"), d);
	if ((d = getenv("XDG_CACHE_HOME")) && *d == '/')
		return xasprintf("%s/qemu-jitbpf/listings", d);
	if (home && *home == '/')
		return xasprintf("%s/.cache/qemu-jitbpf/listings", home);
	return NULL;
}

int listcache_check(const char *dir)
{
	const char *why;
	struct listcache *lc = listcache_open(dir, &why);

	if (!lc) {
		pr_err("--cache-dir %s: %s", dir, why);
		return -EINVAL;
	}
	listcache_free(lc);
	return 0;
}

static void name_of(const struct listcache *lc, const struct listing_key *k, char name[32])
{
	uint64_t h = fnv1a(lc->tool, sizeof(lc->tool), FNV_START);

	snprintf(name, 32, "%016" PRIx64 ".listing", fnv1a(k, sizeof(*k), h));
}

/* Is [first, first + n) within [0, total)? */
static bool span_ok(uint64_t first, uint64_t n, uint64_t total)
{
	return first <= total && n <= total - first;
}

bool listcache_parse(const struct listcache *lc, const struct listing_key *k, const char *b,
		     size_t n, struct listing *ls)
{
	struct head h;
	const char *ds, *df, *dl, *dr, *strs;

	if (n < sizeof(h))
		return false;
	memcpy(&h, b, sizeof(h));
	if (memcmp(h.magic, magic, sizeof(magic)) || memcmp(h.tool, lc->tool, sizeof(h.tool)) ||
	    memcmp(&h.key, k, sizeof(*k)))
		return false;
	if (h.nsrcs > UINT32_MAX || h.nfns > UINT32_MAX || h.nlines > UINT32_MAX ||
	    h.nranges > UINT32_MAX || h.nstrs > UINT32_MAX || !h.nstrs)
		return false;
	ds = b + sizeof(h);
	df = ds + h.nsrcs * sizeof(struct disk_src);
	dl = df + h.nfns * sizeof(struct disk_fn);
	dr = dl + h.nlines * sizeof(struct disk_line);
	strs = dr + h.nranges * sizeof(struct listing_range);
	if ((size_t)(strs - b) + h.nstrs != n || strs[h.nstrs - 1])
		return false;
	memset(ls, 0, sizeof(*ls));
	ls->blob = xmalloc(h.nstrs);
	memcpy(ls->blob, strs, h.nstrs);
	ls->srcs = xmalloc((h.nsrcs + 1) * sizeof(*ls->srcs));
	ls->fns = xmalloc((h.nfns + 1) * sizeof(*ls->fns));
	ls->lines = xmalloc((h.nlines + 1) * sizeof(*ls->lines));
	ls->ranges = xmalloc((h.nranges + 1) * sizeof(*ls->ranges));
	memcpy(ls->ranges, dr, h.nranges * sizeof(*ls->ranges));
	ls->nranges = h.nranges;
	for (; ls->nsrcs < h.nsrcs; ls->nsrcs++) {
		struct disk_src s;

		memcpy(&s, ds + ls->nsrcs * sizeof(s), sizeof(s));
		if (s.path >= h.nstrs || !span_ok(s.fns, s.nfns, h.nfns) ||
		    !span_ok(s.lines, s.nlines, h.nlines))
			goto bad;
		ls->srcs[ls->nsrcs] =
			(struct listing_src){ls->blob + s.path, s.fns, s.nfns, s.lines, s.nlines};
	}
	for (; ls->nfns < h.nfns; ls->nfns++) {
		struct disk_fn f;

		memcpy(&f, df + ls->nfns * sizeof(f), sizeof(f));
		if (f.name >= h.nstrs || !span_ok(f.first, f.n, h.nranges))
			goto bad;
		ls->fns[ls->nfns] = (struct listing_fn){ls->blob + f.name, f.line, f.first, f.n};
	}
	for (; ls->nlines < h.nlines; ls->nlines++) {
		struct disk_line l;

		memcpy(&l, dl + ls->nlines * sizeof(l), sizeof(l));
		if (!span_ok(l.first, l.n, h.nranges))
			goto bad;
		ls->lines[ls->nlines] = (struct listing_line){l.line, l.first, l.n};
	}
	return true;
bad:
	listing_free(ls);
	return false;
}

bool listcache_load(struct listcache *lc, const struct listing_key *k, struct listing *ls)
{
	char name[32], *b;
	struct stat st;
	bool ok = false;
	int fd;

	name_of(lc, k, name);
	fd = openat(lc->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_size > 0 &&
	    st.st_size < (1 << 30)) {
		size_t n = (size_t)st.st_size, got = 0;
		ssize_t r;

		b = xmalloc(n);
		while (got < n && (r = read(fd, b + got, n - got)) > 0)
			got += (size_t)r;
		ok = got == n && listcache_parse(lc, k, b, n, ls);
		free(b);
	}
	if (ok) {
		futimens(fd, NULL); /* used: the last to go */
		__atomic_add_fetch(&lc->hits, 1, __ATOMIC_RELAXED);
	}
	close(fd);
	return ok;
}

/* The offset of S in the strings, added if new. */
static uint32_t str_off(struct u64map *offs, char **strs, size_t *n, size_t *cap, const char *s)
{
	uint64_t *off = u64map_at(offs, (uintptr_t)s);

	if (!*off) {
		size_t len = strlen(s) + 1;

		grow(strs, cap, *n + len, 1);
		memcpy(*strs + *n, s, len);
		*off = *n + 1;
		*n += len;
	}
	return (uint32_t)(*off - 1);
}

struct entry {
	char name[32];
	uint64_t size, used;
};

static int entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	return (x->used > y->used) - (x->used < y->used);
}

/* Beyond LISTCACHE_BYTES, the least recently used listings go, down to 3/4. */
static void evict(struct listcache *lc)
{
	int fd = dup(lc->dirfd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct entry *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		struct stat st;
		uint64_t id[4];

		if (len < 24 || memcmp(de->d_name + 16, ".listing", 8) ||
		    fstatat(lc->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		/* A tool killed while it wrote one left its .tmp- file. */
		if (len != 24) {
			if (st.st_mtim.tv_sec + 3600 < time(NULL))
				unlinkat(lc->dirfd, de->d_name, 0);
			continue;
		}
		grow(&v, &cap, n + 1, sizeof(*v));
		memcpy(v[n].name, de->d_name, len + 1);
		stat_id(&st, id);
		v[n].size = id[2];
		v[n].used = id[3];
		total += v[n++].size;
	}
	closedir(d);
	if (total > LISTCACHE_BYTES) {
		sort_array(v, n, sizeof(*v), entry_cmp);
		for (size_t i = 0; i < n && total > LISTCACHE_BYTES / 4 * 3; i++)
			if (!unlinkat(lc->dirfd, v[i].name, 0))
				total -= v[i].size;
	}
	free(v);
}

void listcache_store(struct listcache *lc, const struct listing_key *k, const struct listing *ls)
{
	struct head h = {.tool = {0}};
	struct u64map offs = {0};
	char name[32], *strs = NULL;
	size_t nstrs = 0, cap = 0;
	struct disk_src *ds = xmalloc((ls->nsrcs + 1) * sizeof(*ds));
	struct disk_fn *df = xmalloc((ls->nfns + 1) * sizeof(*df));
	struct disk_line *dl = xmalloc((ls->nlines + 1) * sizeof(*dl));
	struct safe_file sf;
	int err;

	for (size_t i = 0; i < ls->nsrcs; i++) {
		const struct listing_src *s = &ls->srcs[i];

		ds[i] = (struct disk_src){str_off(&offs, &strs, &nstrs, &cap, s->path), s->fns,
					  s->nfns, s->lines, s->nlines};
	}
	for (size_t i = 0; i < ls->nfns; i++) {
		const struct listing_fn *f = &ls->fns[i];

		df[i] = (struct disk_fn){str_off(&offs, &strs, &nstrs, &cap, f->name), f->line,
					 f->first, f->n};
	}
	for (size_t i = 0; i < ls->nlines; i++)
		dl[i] = (struct disk_line){ls->lines[i].line, ls->lines[i].first, ls->lines[i].n};
	str_off(&offs, &strs, &nstrs, &cap, ""); /* (never none) */
	u64map_free(&offs);
	memcpy(h.magic, magic, sizeof(magic));
	memcpy(h.tool, lc->tool, sizeof(h.tool));
	h.key = *k;
	h.nsrcs = ls->nsrcs;
	h.nfns = ls->nfns;
	h.nlines = ls->nlines;
	h.nranges = ls->nranges;
	h.nstrs = nstrs;
	name_of(lc, k, name);
	err = safe_file_create_at(&sf, lc->dirfd, name, 0600, (uid_t)-1, (gid_t)-1);
	if (!err) {
		safe_file_buffer(&sf, 64 << 10);
		fwrite(&h, sizeof(h), 1, sf.f);
		fwrite(ds, sizeof(*ds), ls->nsrcs, sf.f);
		fwrite(df, sizeof(*df), ls->nfns, sf.f);
		fwrite(dl, sizeof(*dl), ls->nlines, sf.f);
		fwrite(ls->ranges, sizeof(*ls->ranges), ls->nranges, sf.f);
		fwrite(strs, 1, nstrs, sf.f);
		err = safe_file_commit(&sf);
	}
	if (err)
		pr_dbg("coverage: listing cache: %s not written: %s", name, strerror(-err));
	else
		__atomic_add_fetch(&lc->stored, 1, __ATOMIC_RELAXED);
	free(ds);
	free(df);
	free(dl);
	free(strs);
	if (!err)
		evict(lc);
}

void listcache_stats(const struct listcache *lc, uint64_t *hits, uint64_t *stored)
{
	*hits = lc ? __atomic_load_n(&lc->hits, __ATOMIC_RELAXED) : 0;
	*stored = lc ? __atomic_load_n(&lc->stored, __ATOMIC_RELAXED) : 0;
}

void listcache_free(struct listcache *lc)
{
	if (!lc)
		return;
	close(lc->dirfd);
	free(lc);
}
