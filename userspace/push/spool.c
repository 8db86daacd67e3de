// SPDX-License-Identifier: GPL-2.0-or-later
#include "push/spool.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * A spooled part of an interval: FROM-UNTIL-PART.pb.gz, unix seconds,
 * zero-padded so that names sort as times do (FROM-UNTIL.pb.gz, a whole
 * interval, from before intervals had parts, is read too).
 */
#define SPOOL_FMT      "%012lld-%012lld-%03u.pb.gz"
#define SPOOL_NAME     SPOOL_NAME_MAX
#define SPOOL_NAME_OLD 31
#define SPOOL_PARTS    1000
/*
 * A part's bounds: Pyroscope refuses a profile of more than 16 000
 * samples (pkg/validation/limits.go, max_profile_stacktrace_samples;
 * --push-max-samples) or 4 MiB before compression
 * (max_profile_size_bytes), and its rate limiter never lets through more
 * than its burst, 2 MiB, at once (ingestion_burst_size_mb; the profile's
 * size and its labels').
 */
#define PART_MAX_BYTES (1u << 20)

bool spool_name(const char *s, long long *from, long long *until)
{
	size_t len = strlen(s);
	unsigned int part;
	int n = 0;

	if (len == SPOOL_NAME)
		return sscanf(s, "%12lld-%12lld-%3u.pb.gz%n", from, until, &part, &n) == 3 &&
		       n == SPOOL_NAME;
	return len == SPOOL_NAME_OLD && sscanf(s, "%12lld-%12lld.pb.gz%n", from, until, &n) == 2 &&
	       n == SPOOL_NAME_OLD;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **spool_list(int dirfd, size_t *n)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	char **v = NULL;
	size_t cap = 0;
	struct dirent *de;
	long long a, b;

	*n = 0;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((de = readdir(d)))
		if (spool_name(de->d_name, &a, &b)) {
			grow(&v, &cap, *n + 1, sizeof(*v));
			v[(*n)++] = xstrdup(de->d_name);
		}
	closedir(d);
	sort_array(v, *n, sizeof(*v), cmp_names);
	return v;
}

void spool_list_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/*
 * Spool stacks [FIRST, FIRST + N) of PROF as parts *PART on: halves of
 * them, and halves again, until each fits the servers' limits.
 */
struct parts {
	int dirfd;
	unsigned int max_samples;
	time_t from, until;
	int64_t time_nanos; /* the parts of an interval are of one time */
	unsigned int next;
};

static int spool_parts(struct parts *p, const struct profile *prof, size_t first, size_t n)
{
	struct profile view = *prof;
	size_t raw = 0, len = 0;
	struct pprof_opts o = {.cgroup_root = true, .raw_len = &raw, .time_nanos = p->time_nanos};
	char name[SPOOL_NAME + 1], *buf = NULL;
	struct safe_file sf;
	FILE *m;
	int err;

	view.v = prof->v + first;
	view.n = n;
	m = open_memstream(&buf, &len);
	if (!m)
		return -errno;
	err = pprof_write_opts(&view, &o, m);
	if (fclose(m) && !err)
		err = -EIO;
	if (!err && n > 1 && (n > p->max_samples || raw > PART_MAX_BYTES)) {
		free(buf);
		err = spool_parts(p, prof, first, n / 2);
		if (!err)
			err = spool_parts(p, prof, first + n / 2, n - n / 2);
		return err;
	}
	if (!err && p->next >= SPOOL_PARTS)
		err = -E2BIG;
	if (!err) {
		snprintf(name, sizeof(name), SPOOL_FMT, (long long)p->from, (long long)p->until,
			 p->next++);
		err = safe_file_create_at(&sf, p->dirfd, name, 0600, (uid_t)-1, (gid_t)-1);
	}
	if (!err) {
		if (fwrite(buf, 1, len, sf.f) != len) {
			safe_file_abort(&sf);
			err = -EIO;
		} else {
			err = safe_file_commit(&sf);
		}
	}
	free(buf);
	return err;
}

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

/* Stacks by the string labels of their samples: QEMU, guest, command. */
static int cmp_labels(const void *a, const void *b)
{
	const struct stack *x = *(struct stack *const *)a, *y = *(struct stack *const *)b;
	const char *dx = strrchr(x->root, '-'), *dy = strrchr(y->root, '-');
	size_t nx = dx ? (size_t)(dx - x->root) : strlen(x->root);
	size_t ny = dy ? (size_t)(dy - y->root) : strlen(y->root);
	int c = cmp_str(x->labels.qemu, y->labels.qemu);

	if (!c)
		c = cmp_str(x->labels.arch, y->labels.arch);
	if (!c)
		c = strncmp(x->root, y->root, nx < ny ? nx : ny);
	return c ? c : (nx > ny) - (nx < ny);
}

int spool_interval(int dirfd, const struct profile *prof, time_t from, time_t until,
		   unsigned int max_samples, bool by_labels)
{
	struct parts parts = {dirfd, max_samples, from, until, profile_time_nanos(prof), 0};
	bool group = by_labels && prof->n;
	struct profile sorted = *prof;
	size_t a = 0, b;
	int err;

	if (group) {
		sorted.v = xmalloc(prof->n * sizeof(*sorted.v));
		memcpy(sorted.v, prof->v, prof->n * sizeof(*sorted.v));
		sort_array(sorted.v, prof->n, sizeof(*sorted.v), cmp_labels);
	}
	do {
		b = group ? a + 1 : prof->n;
		while (group && b < prof->n && !cmp_labels(&sorted.v[a], &sorted.v[b]))
			b++;
		err = spool_parts(&parts, &sorted, a, b - a);
		a = b;
	} while (!err && a < prof->n);
	if (group)
		free(sorted.v);
	return err;
}
