// SPDX-License-Identifier: GPL-2.0-or-later
#include "engine/retention.h"
#include "util/procfile.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void retention_init(struct retention *r, const struct keep *k)
{
	memset(r, 0, sizeof(*r));
	r->keep = *k;
}

struct kept *retention_begin(struct retention *r, pid_t pid, uint64_t start, uint64_t now)
{
	struct kept *k;

	grow(&r->v, &r->cap, r->n + 1, sizeof(*r->v));
	k = &r->v[r->n++];
	*k = (struct kept){.pid = pid, .start = start, .ended_ns = now};
	return k;
}

/* The index of directory FD in R's table (a copy of FD held), or -1. */
static int dir_ref(struct retention *r, int fd)
{
	struct stat st;
	size_t i, free_slot = r->ndirs;

	if (fstat(fd, &st) || !S_ISDIR(st.st_mode))
		return -1;
	for (i = 0; i < r->ndirs; i++) {
		if (!r->dirs[i].refs) {
			free_slot = free_slot < r->ndirs ? free_slot : i;
		} else if (r->dirs[i].dev == st.st_dev && r->dirs[i].ino == st.st_ino) {
			r->dirs[i].refs++;
			return (int)i;
		}
	}
	fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (free_slot == r->ndirs)
		grow(&r->dirs, &r->dirs_cap, ++r->ndirs, sizeof(*r->dirs));
	r->dirs[free_slot] = (struct kept_dir){st.st_dev, st.st_ino, fd, 1};
	return (int)free_slot;
}

static void dir_unref(struct retention *r, int i)
{
	if (--r->dirs[i].refs)
		return;
	close(r->dirs[i].fd);
	r->dirs[i].fd = -1;
}

void retention_add_at(struct retention *r, struct kept *k, int dirfd, const char *name, bool tree)
{
	struct kept_file *f;
	struct stat st;
	int dir;

	if (k->nf == KEPT_FILES || strchr(name, '/') ||
	    fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) ||
	    (tree ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)))
		return;
	dir = dir_ref(r, dirfd);
	if (dir < 0)
		return;
	f = &k->f[k->nf++];
	*f = (struct kept_file){dir, xstrdup(name), st.st_dev, st.st_ino, tree};
}

void retention_add(struct retention *r, struct kept *k, const struct proc_view *v, const char *path,
		   bool tree)
{
	static const struct proc_view own = {.root_fd = -1};
	const char *base = path_base(path);
	char *dir = base > path ? strndup(path, base - path) : xstrdup(".");
	int fd = dir ? view_open_dir(v ? v : &own, dir) : -ENOMEM;

	if (fd >= 0) {
		retention_add_at(r, k, fd, base, tree);
		close(fd);
	}
	free(dir);
}

void retention_end(struct retention *r, struct kept *k)
{
	if (!k->nf && k == &r->v[r->n - 1])
		r->n--;
}

/* Remove the files of directory FD (not what is below them): uftrace data. */
static void remove_files(int fd)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;

	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (de->d_type != DT_DIR)
			unlinkat(fd, de->d_name, 0);
	closedir(d);
}

/* Remove F if its name is still the file that was written. */
static void remove_file(struct retention *r, const struct kept_file *f)
{
	int dir = r->dirs[f->dir].fd;
	struct stat st;

	if (fstatat(dir, f->name, &st, AT_SYMLINK_NOFOLLOW) || st.st_dev != f->dev ||
	    st.st_ino != f->ino) {
		r->gone++;
		return;
	}
	if (f->tree) {
		int fd = openat(dir, f->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		/* Still the very directory (not one swapped in meanwhile). */
		if (fd < 0)
			return;
		if (fstat(fd, &st) || st.st_dev != f->dev || st.st_ino != f->ino) {
			close(fd);
			return;
		}
		remove_files(fd);
		if (!unlinkat(dir, f->name, AT_REMOVEDIR))
			r->removed++;
		else
			pr_dbg("cannot remove %s: %s", f->name, strerror(errno));
		return;
	}
	if (!unlinkat(dir, f->name, 0))
		r->removed++;
	else
		pr_dbg("cannot remove %s: %s", f->name, strerror(errno));
}

static void kept_drop(struct retention *r, struct kept *k, bool remove)
{
	for (int i = 0; i < k->nf; i++) {
		if (remove)
			remove_file(r, &k->f[i]);
		dir_unref(r, k->f[i].dir);
		free(k->f[i].name);
	}
	k->nf = 0;
}

/* Does K's pid belong to its process still? */
static bool kept_alive(const struct kept *k)
{
	uint64_t start;
	char state;

	if (!proc_stat(k->pid, &state, &start) || state == 'Z' || state == 'X')
		return false;
	return !k->start || start == k->start;
}

/* Remove the entries that are marked (nf < 0), keeping the order. */
static void compact(struct retention *r)
{
	size_t j = 0;

	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].nf >= 0)
			r->v[j++] = r->v[i];
	r->n = j;
}

void retention_pid_reused(struct retention *r, pid_t pid, uint64_t start)
{
	bool any = false;

	if (!r->keep.on)
		return;
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].pid == pid && r->v[i].start != start) {
			kept_drop(r, &r->v[i], true);
			r->v[i].nf = -1;
			any = true;
		}
	if (any)
		compact(r);
}

void retention_tick(struct retention *r, uint64_t now)
{
	size_t over;
	bool any = false;

	if (!r->keep.on)
		return;
	over = r->keep.count && r->n > r->keep.count ? r->n - r->keep.count : 0;
	for (size_t i = 0; i < r->n; i++) {
		struct kept *k = &r->v[i];
		bool old = r->keep.age_ns && now - k->ended_ns >= r->keep.age_ns;

		if (i >= over && !old)
			break; /* the rest are newer */
		if (kept_alive(k))
			continue;
		kept_drop(r, k, true);
		k->nf = -1;
		any = true;
	}
	if (any)
		compact(r);
}

void retention_free(struct retention *r)
{
	for (size_t i = 0; i < r->n; i++)
		kept_drop(r, &r->v[i], false);
	free(r->v);
	free(r->dirs);
	memset(r, 0, sizeof(*r));
}
