// SPDX-License-Identifier: GPL-2.0-or-later
#include "perfmap.h"
#include "util.h"

#include <inttypes.h>
#include <string.h>

int perfmap_write(struct codemap *m, const char *path, uid_t uid, gid_t gid, uint64_t *bytes)
{
	struct safe_file sf;
	size_t n = codemap_live(m);
	int err;

	err = safe_file_create(&sf, path, 0644, uid, gid);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		const struct code_range *r = &m->v[i];
		/* perf drops names under 3 characters, and the last byte of
		 * every line, newline or not. */
		int len = fprintf(sf.f, "%" PRIx64 " %" PRIx64 " %s%s\n", r->host, r->size, r->name,
				  strlen(r->name) < 3 ? "___" : "");

		if (len > 0)
			*bytes += len;
	}
	return safe_file_commit(&sf);
}
