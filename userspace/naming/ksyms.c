// SPDX-License-Identifier: GPL-2.0-or-later
#include "naming/ksyms.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * /proc/kallsyms has ~120 k text symbols, and reading it costs the kernel
 * ~45 ms: more than a short profile's whole budget.  The text symbols are
 * read once per boot and kept in /run/qemu-jitbpf (tmpfs, root's), keyed
 * by the boot id and /proc/modules; later runs load that in ~1 ms.  An
 * address outside the kernel's text and its modules (BPF programs,
 * trampolines, which come and go) reads /proc/kallsyms afresh.
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

static uint64_t *addrs; /* sorted */
static const char **names;
static size_t count;
/* What names point into: every one read stays, as names are handed out. */
static char **blobs;
static size_t nblobs, blobs_cap;
static struct range *trusted; /* kernel text and modules */
static size_t ntrusted;
static bool loaded, fresh;

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
	const char *name;
};

static int cmp_pair(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
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

static void set_table(struct pair *v, size_t n)
{
	addrs = xrealloc(addrs, (n ? n : 1) * sizeof(*addrs));
	names = xrealloc(names, (n ? n : 1) * sizeof(*names));
	for (size_t i = 0; i < n; i++) {
		addrs[i] = v[i].addr;
		names[i] = v[i].name;
	}
	count = n;
}

static char *cache_path(void)
{
	size_t len;
	char *boot = boot_id(), *mods, *path;
	uint64_t h = 0xcbf29ce484222325ull;

	if (!boot)
		return NULL;
	mods = read_all("/proc/modules", &len, 1 << 16);
	for (size_t i = 0; mods && i < len; i++)
		h = (h ^ (unsigned char)mods[i]) * 0x100000001b3ull;
	path = xasprintf(CACHE_DIR "/kallsyms-%s-%016llx", boot, (unsigned long long)h);
	free(boot);
	free(mods);
	return path;
}

static void write_cache(const char *path, const struct pair *v, size_t n, uint64_t stext,
			uint64_t etext)
{
	struct cache_hdr h = {MAGIC, n, 0, stext, etext};
	struct safe_file sf;
	uint32_t off = 0;

	for (size_t i = 0; i < n; i++)
		h.names_len += strlen(v[i].name) + 1;
	if (cache_create(&sf, path))
		return;
	fwrite(&h, sizeof(h), 1, sf.f);
	for (size_t i = 0; i < n; i++)
		fwrite(&v[i].addr, sizeof(v[i].addr), 1, sf.f);
	for (size_t i = 0; i < n; i++) {
		fwrite(&off, sizeof(off), 1, sf.f);
		off += strlen(v[i].name) + 1;
	}
	for (size_t i = 0; i < n; i++)
		fwrite(v[i].name, strlen(v[i].name) + 1, 1, sf.f);
	safe_file_commit(&sf);
}

static bool load_cache(const char *path)
{
	struct cache_hdr h;
	size_t len, n;
	char *buf = read_all(path, &len, 1 << 22);
	const uint32_t *offs;

	if (!buf || !cache_trusted(path) || len < sizeof(h))
		goto bad;
	memcpy(&h, buf, sizeof(h));
	n = h.count;
	if (memcmp(h.magic, MAGIC, 8) || n > len / 12 || len != sizeof(h) + n * 12 + h.names_len ||
	    (h.names_len && buf[len - 1]))
		goto bad;
	offs = (const uint32_t *)(buf + sizeof(h) + n * 8);
	addrs = xrealloc(addrs, (n ? n : 1) * sizeof(*addrs));
	names = xrealloc(names, (n ? n : 1) * sizeof(*names));
	memcpy(addrs, buf + sizeof(h), n * 8);
	for (size_t i = 0; i < n; i++) {
		if (offs[i] >= h.names_len || (i && addrs[i] < addrs[i - 1]))
			goto bad;
		names[i] = buf + sizeof(h) + n * 12 + offs[i];
	}
	count = n;
	keep(buf);
	read_trusted(h.stext, h.etext);
	return true;
bad:
	free(buf);
	count = 0;
	return false;
}

/* Read /proc/kallsyms; its text symbols go to the cache at PATH. */
static void load_fresh(const char *path)
{
	size_t len, n = 0, cap = 0;
	uint64_t stext = 0, etext = 0;
	struct pair *v = NULL;
	char *text = read_all("/proc/kallsyms", &len, 1 << 22), *p, *end;

	fresh = true;
	if (!text)
		return;
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
			v[n++] = (struct pair){addr, name};
			if (!strcmp(name, "_stext"))
				stext = addr;
			else if (!strcmp(name, "_etext"))
				etext = addr;
		}
		p = nl + 1;
	}
	sort_array(v, n, sizeof(*v), cmp_pair);
	set_table(v, n);
	keep(text);
	if (!n)
		pr_dbg("no kernel symbols in /proc/kallsyms (kptr_restrict?)");
	else if (path && stext && etext)
		write_cache(path, v, n, stext, etext);
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

const char *ksym_name(uint64_t addr)
{
	size_t i;

	if (!loaded)
		load();
	if (!fresh && !is_trusted(addr)) {
		pr_dbg("kernel address %#" PRIx64
		       " is outside the cached text: reading /proc/kallsyms",
		       addr);
		load_fresh(NULL);
	}
	i = count_le(addrs, count, sizeof(*addrs), 0, addr);
	return i ? names[i - 1] : NULL;
}
