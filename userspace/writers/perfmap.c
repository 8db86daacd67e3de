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
	/* A few hundred thousand lines: format by hand, not with printf. */
	for (size_t i = 0; i < n; i++) {
		const struct code_range *r = &m->v[i];
		size_t len = strlen(r->name);
		char *p = head;

		p = put_hex(p, r->host);
		*p++ = ' ';
		p = put_hex(p, r->size);
		*p++ = ' ';
		fwrite_unlocked(head, 1, p - head, sf.f);
		fwrite_unlocked(r->name, 1, len, sf.f);
		/* perf drops names under 3 characters, and the last byte of
		 * every line, newline or not. */
		if (len < 3)
			fwrite_unlocked("___", 1, 3, sf.f);
		fputc_unlocked('\n', sf.f);
		*bytes += (p - head) + len + (len < 3 ? 3 : 0) + 1;
	}
	return safe_file_commit(&sf);
}
