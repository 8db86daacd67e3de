// SPDX-License-Identifier: GPL-2.0-or-later
#include "writers/perfmap.h"
#include "util/util.h"

#include <stdio.h>
#include <string.h>

/* Lowercase hex of V, no leading zeros, at P; returns the end. */
static char *put_hex(char *p, uint64_t v)
{
	char tmp[16];
	int n = 0;

	do {
		tmp[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* NAME (LEN bytes) on one line: a control character, which a name from
 * a guest's file could hold, as '?' (symbol names and paths are
 * text_clean()ed as they are read; this is for any other name). */
static void put_name(const char *name, size_t len, FILE *f)
{
	for (;;) {
		size_t ok = 0;

		while (ok < len && !text_ctl(name[ok]))
			ok++;
		fwrite_unlocked(name, 1, ok, f);
		if (ok == len)
			return;
		fputc_unlocked('?', f);
		name += ok + 1;
		len -= ok + 1;
	}
}

int perfmap_write(struct codemap *m, int dirfd, const char *path, uid_t uid, gid_t gid,
		  uint64_t *bytes)
{
	struct safe_file sf;
	size_t n = codemap_live(m);
	char head[40];
	int err;

	err = safe_file_create_at(&sf, dirfd, path, 0644, uid, gid);
	if (err)
		return err;
	/* A few hundred thousand lines: format by hand, not with printf, and
	 * write them in large blocks. */
	safe_file_buffer(&sf, 256 << 10);
	for (size_t i = 0; i < n; i++) {
		const struct code_range *r = &m->v[i];
		size_t len = strlen(r->name);
		char *p = head;

		p = put_hex(p, r->host);
		*p++ = ' ';
		p = put_hex(p, r->size);
		*p++ = ' ';
		fwrite_unlocked(head, 1, p - head, sf.f);
		put_name(r->name, len, sf.f);
		if (r->plus_off) {
			char off[24] = "+0x";
			size_t k = put_hex(off + 3, r->off) - off;

			fwrite_unlocked(off, 1, k, sf.f);
			len += k;
		}
		/* perf drops names under 3 characters, and the last byte of
		 * every line, newline or not. */
		if (len < 3)
			fwrite_unlocked("___", 1, 3, sf.f);
		fputc_unlocked('\n', sf.f);
		*bytes += (p - head) + len + (len < 3 ? 3 : 0) + 1;
	}
	return safe_file_commit(&sf);
}
