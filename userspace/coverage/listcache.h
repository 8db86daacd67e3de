/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Listings kept on disk (--cache-dir): reading an ELF file's lines and
 * declarations costs the tool's second core ~0.3 s of CPU for glibc with
 * libc6-dbg, beside a guest that runs for about as long; a test suite or
 * a build farm runs the same libraries again and again.  A listing is
 * kept under a key that changes with anything it was read from: the
 * file, the file its line table is in (a debug file installed later is
 * another key), its symbols, and this tool's binary.  The files are
 * written whole and renamed into place (tools running side by side), and
 * the least recently used go beyond LISTCACHE_BYTES.  A file that is not
 * what its name says (cut short, damaged, another key) is read as a miss.
 */
#ifndef QJ_LISTCACHE_H
#define QJ_LISTCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct listing;

#define LISTCACHE_BYTES (256ull << 20)

/* What a listing was read from (listing.c fills it in). */
struct listing_key {
	uint64_t v[16];
};

struct listcache;

/*
 * The cache in DIR, made (mode 0700) if missing; NULL, with *WHY set,
 * when it cannot be used: not a directory, not the user's own, or
 * writable by others (whoever could write a listing would choose what a
 * tracefile says).
 */
struct listcache *listcache_open(const char *dir, const char **why);
/*
 * The directory: DIR (--cache-dir) if not NULL, else a service's
 * CACHE_DIRECTORY (systemd's CacheDirectory=), else the XDG place under
 * $XDG_CACHE_HOME or ~/.cache; NULL with no home (to free()).
 */
char *listcache_dir(const char *dir);
/* Can DIR be used?  If not, a one-line error and -EINVAL. */
int listcache_check(const char *dir);
/* K's listing into LS (as listing.c builds it); false if none is kept. */
bool listcache_load(struct listcache *lc, const struct listing_key *k, struct listing *ls);
void listcache_store(struct listcache *lc, const struct listing_key *k, const struct listing *ls);
/* What listcache_load() does with a file's N bytes B once read (the
 * fuzzer's entry): false for a file that is not K's or not sound. */
bool listcache_parse(const struct listcache *lc, const struct listing_key *k, const char *b,
		     size_t n, struct listing *ls);
/* Listings read from the cache, and stored into it, so far. */
void listcache_stats(const struct listcache *lc, uint64_t *hits, uint64_t *stored);
void listcache_free(struct listcache *lc);

#endif
