// SPDX-License-Identifier: GPL-2.0-or-later
#include "naming/ksyms.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * /proc/kallsyms has ~120 k text symbols, and reading it costs the kernel
 * ~45 ms: more than a short profile's whole budget.  The text symbols are
 * read once per boot and kept in /run/qemu-jitbpf (root's), keyed by the
 * boot id and /proc/modules; later runs map that file (4.5 MB, of which a
 * lookup touches a few pages).  An address outside the kernel's text and
 * its modules is first looked up among the host's BPF programs, which the
 * caller lists (the kernel frames a sampled QEMU thread is most often in
 * when it is in neither: the uprobe handlers of this tool, of another
 * attached to the same QEMU, or of an earlier run whose links are still
 * being closed), and only then is /proc/kallsyms read afresh, once per run
 * (trampolines, programs loaded later, which come and go).
 */
#define MAGIC "QJKSYMS1"

struct cache_hdr {
	char magic[8];
	uint64_t count;
	uint64_t names_len;
	uint64_t stext, etext;
};

struct range {
	uint64_t lo, hi;
};

/* The table: addrs sorted, the name of addrs[i] at blob + offs[i]. */
static const uint64_t *addrs;
static const uint32_t *offs;
static const char *blob;
static size_t count, blob_len;
static bool owned; /* addrs and offs malloc'd, not in the cache's mapping */
/* What names point into: every blob read or mapped stays, as names are handed out. */
static char **blobs;
static size_t nblobs, blobs_cap;
static struct range *trusted; /* kernel text and modules */
static size_t ntrusted;
static bool loaded, fresh;

/* Ranges the caller knows of (its BPF programs), asked for when first needed. */
struct extra {
	uint64_t lo, hi;
	char *name;
};
static struct extra *extras;
static size_t nextras, extras_cap;
static void (*extras_fill)(void *ctx);
static void *extras_ctx;
static bool extras_asked;

static void keep(char *buf)
{
	grow(&blobs, &blobs_cap, nblobs + 1, sizeof(*blobs));
	blobs[nblobs++] = buf;
}

static uint64_t hex(const char **p)
{
	uint64_t v = 0;

	for (;; (*p)++) {
		char c = **p;

		if (c >= '0' && c <= '9')
			v = v << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint64_t)(c - 'a' + 10);
		else
			return v;
	}
}

struct pair {
	uint64_t addr;
	uint32_t off;
};

/* By address, then in /proc/kallsyms's order. */
static int cmp_pair(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Where symbols are stable for the boot: [_stext, _etext) and modules. */
static void read_trusted(uint64_t stext, uint64_t etext)
{
	size_t len, cap = 0;
	char *mods = read_all("/proc/modules", &len, 1 << 16), *line, *save = NULL;

	free(trusted);
	trusted = NULL;
	ntrusted = 0;
	grow(&trusted, &cap, 1, sizeof(*trusted));
	trusted[ntrusted++] = (struct range){stext, etext};
	for (line = mods ? strtok_r(mods, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long size, addr;

		/* name size refs deps state address */
		if (sscanf(line, "%*s %llu %*s %*s %*s %llx", &size, &addr) == 2 && addr) {
			grow(&trusted, &cap, ntrusted + 1, sizeof(*trusted));
			trusted[ntrusted++] = (struct range){addr, addr + size};
		}
	}
	free(mods);
}

static void set_table(const uint64_t *a, const uint32_t *o, size_t n, const char *b, size_t blen,
		      bool malloced)
{
	if (owned) {
		free((void *)addrs);
		free((void *)offs);
	}
	addrs = a;
	offs = o;
	count = n;
	blob = b;
	blob_len = blen;
	owned = malloced;
}

static char *cache_path(void)
{
	size_t len;
	char *boot = boot_id(), *mods, *path;
	uint64_t h = FNV_START;

	if (!boot)
		return NULL;
	mods = read_all("/proc/modules", &len, 1 << 16);
	if (mods)
		h = fnv1a(mods, len, h);
	path = xasprintf(CACHE_DIR "/kallsyms-%s-%016llx", boot, (unsigned long long)h);
	free(boot);
	free(mods);
	return path;
}

/* HDR, then the addresses, then the names' offsets, then the names. */
static void write_cache(const char *path, const struct pair *v, size_t n, const char *text,
			uint64_t stext, uint64_t etext)
{
	struct cache_hdr h = {MAGIC, n, 0, stext, etext};
	struct safe_file sf;
	uint32_t off = 0;

	for (size_t i = 0; i < n; i++)
		h.names_len += strlen(text + v[i].off) + 1;
	if (h.names_len > UINT32_MAX || cache_create(&sf, path))
		return;
	fwrite(&h, sizeof(h), 1, sf.f);
	for (size_t i = 0; i < n; i++)
		fwrite(&v[i].addr, sizeof(v[i].addr), 1, sf.f);
	for (size_t i = 0; i < n; i++) {
		fwrite(&off, sizeof(off), 1, sf.f);
		off += strlen(text + v[i].off) + 1;
	}
	for (size_t i = 0; i < n; i++)
		fwrite(text + v[i].off, strlen(text + v[i].off) + 1, 1, sf.f);
	safe_file_commit(&sf);
}

/*
 * Map the cache: nothing is copied, and a lookup reads the pages it
 * touches.  Offsets are checked when a name is looked up.
 */
static bool load_cache(const char *path)
{
	struct cache_hdr h;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *map;
	size_t len, n;

	if (fd < 0 || fstat(fd, &st) || !cache_trusted(path) || (size_t)st.st_size < sizeof(h) ||
	    pread(fd, &h, sizeof(h), 0) != sizeof(h)) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	len = st.st_size;
	n = h.count;
	if (memcmp(h.magic, MAGIC, 8) || n > len / 12 || h.names_len > UINT32_MAX ||
	    len != sizeof(h) + n * 12 + h.names_len) {
		close(fd);
		return false;
	}
	map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return false;
	if (h.names_len && map[len - 1]) {
		munmap(map, len);
		return false;
	}
	keep(map);
	set_table((const uint64_t *)(map + sizeof(h)), (const uint32_t *)(map + sizeof(h) + n * 8),
		  n, map + sizeof(h) + n * 12, h.names_len, false);
	read_trusted(h.stext, h.etext);
	return true;
}

/* Read /proc/kallsyms; its text symbols go to the cache at PATH. */
static void load_fresh(const char *path)
{
	size_t len, n = 0, cap = 0;
	uint64_t stext = 0, etext = 0, *a;
	uint32_t *o;
	struct pair *v = NULL;
	char *text = read_all("/proc/kallsyms", &len, 1 << 22), *p, *end;

	fresh = true;
	if (!text)
		return;
	if (len > UINT32_MAX) {
		free(text);
		return;
	}
	for (p = text, end = text + len; p < end;) {
		char *nl = memchr(p, '\n', end - p), *name;
		const char *q = p;
		uint64_t addr;

		if (!nl)
			nl = end;
		*nl = 0;
		/* ADDR TYPE NAME[\t[MODULE]] */
		addr = hex(&q);
		if (addr && q[0] == ' ' && (q[1] == 't' || q[1] == 'T') && q[2] == ' ') {
			name = (char *)q + 3;
			name[strcspn(name, "\t")] = 0;
			grow(&v, &cap, n + 1, sizeof(*v));
			v[n++] = (struct pair){addr, (uint32_t)(name - text)};
			if (!strcmp(name, "_stext"))
				stext = addr;
			else if (!strcmp(name, "_etext"))
				etext = addr;
		}
		p = nl + 1;
	}
	sort_by_key(v, n, sizeof(*v), offsetof(struct pair, addr), cmp_pair);
	a = xmalloc((n ? n : 1) * sizeof(*a));
	o = xmalloc((n ? n : 1) * sizeof(*o));
	for (size_t i = 0; i < n; i++) {
		a[i] = v[i].addr;
		o[i] = v[i].off;
	}
	keep(text);
	set_table(a, o, n, text, len, true);
	if (!n)
		pr_dbg("no kernel symbols in /proc/kallsyms (kptr_restrict?)");
	else if (path && stext && etext)
		write_cache(path, v, n, text, stext, etext);
	read_trusted(stext, etext);
	free(v);
}

static void load(void)
{
	char *path = cache_path();

	loaded = true;
	if (!path || !load_cache(path))
		load_fresh(path);
	free(path);
}

static bool is_trusted(uint64_t addr)
{
	for (size_t i = 0; i < ntrusted; i++)
		if (addr >= trusted[i].lo && addr < trusted[i].hi)
			return true;
	return false;
}

void ksym_extras(void (*fill)(void *ctx), void *ctx)
{
	extras_fill = fill;
	extras_ctx = ctx;
	extras_asked = false;
}

void ksym_add(uint64_t addr, uint64_t len, const char *name)
{
	grow(&extras, &extras_cap, nextras + 1, sizeof(*extras));
	extras[nextras++] = (struct extra){addr, addr + len, xstrdup(name)};
}

static const char *extra_name(uint64_t addr)
{
	if (!extras_asked && extras_fill) {
		extras_asked = true;
		extras_fill(extras_ctx);
	}
	for (size_t i = 0; i < nextras; i++)
		if (addr >= extras[i].lo && addr < extras[i].hi)
			return extras[i].name;
	return NULL;
}

const char *ksym_name(uint64_t addr)
{
	size_t i;

	if (!loaded)
		load();
	if (!fresh && !is_trusted(addr)) {
		const char *name = extra_name(addr);

		if (name)
			return name;
		pr_dbg("kernel address %#" PRIx64
		       " is outside the cached text: reading /proc/kallsyms",
		       addr);
		load_fresh(NULL);
	}
	i = count_le(addrs, count, sizeof(*addrs), 0, addr);
	return i && offs[i - 1] < blob_len ? blob + offs[i - 1] : NULL;
}
