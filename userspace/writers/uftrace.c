// SPDX-License-Identifier: GPL-2.0-or-later
#include "writers/uftrace.h"
#include "writers/callfilter.h"
#include "writers/uftrace-records.h"
#include "naming/pltsyms.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum dir_kind {
	DIR_EMPTY,
	DIR_UFTRACE, /* flat, with an info file of uftrace's */
	DIR_OTHER,   /* anything else, or not a readable directory */
};

static enum dir_kind dir_kind(const char *path)
{
	char *info = xasprintf("%s/info", path), magic[8] = "";
	enum dir_kind kind = DIR_EMPTY;
	DIR *d = opendir(path);
	struct dirent *de;
	int fd;

	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (de->d_type == DT_DIR) {
			kind = DIR_OTHER;
			break;
		}
		kind = DIR_UFTRACE;
	}
	if (d)
		closedir(d);
	else
		kind = DIR_OTHER;
	fd = kind == DIR_UFTRACE ? open(info, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (kind == DIR_UFTRACE && (fd < 0 || read(fd, magic, sizeof(magic)) != sizeof(magic) ||
				    memcmp(magic, "Ftrace!", 8)))
		kind = DIR_OTHER;
	if (fd >= 0)
		close(fd);
	free(info);
	return kind;
}

/* Remove the flat directory PATH and its files; 0 or -errno. */
static int remove_flat(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char *f;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		f = xasprintf("%s/%s", path, de->d_name);
		unlink(f);
		free(f);
	}
	closedir(d);
	return rmdir(path) ? -errno : 0;
}

/* DIR holds earlier uftrace data: move it to DIR.old, as uftrace does. */
static int move_old(const char *dir)
{
	char *old = xasprintf("%s.old", dir);
	struct stat st;
	int err = 0;

	if (!lstat(old, &st)) {
		if (!S_ISDIR(st.st_mode) || dir_kind(old) == DIR_OTHER) {
			pr_err("%s holds earlier uftrace data and %s is not uftrace's to replace; "
			       "remove it or name another with --uftrace=DIR",
			       dir, old);
			err = -EEXIST;
		} else {
			err = remove_flat(old);
		}
	}
	if (!err && rename(dir, old))
		err = -errno;
	if (!err && mkdir(dir, 0755))
		err = -errno;
	if (err && err != -EEXIST)
		pr_err("cannot move %s to %s: %s", dir, old, strerror(-err));
	free(old);
	return err;
}

struct uftrace *uftrace_open(const char *dir, const struct callfilter *filter)
{
	bool created = !mkdir(dir, 0755), moved = false;
	struct uftrace *u;

	if (!created && errno != EEXIST) {
		pr_err("cannot create %s: %s", dir, strerror(errno));
		return NULL;
	}
	if (!created && dir_kind(dir) != DIR_EMPTY) {
		if (dir_kind(dir) != DIR_UFTRACE) {
			pr_err("%s exists and holds no uftrace data; remove it or name another "
			       "with "
			       "--uftrace=DIR",
			       dir);
			return NULL;
		}
		if (move_old(dir))
			return NULL;
		moved = true;
	}
	if (faccessat(AT_FDCWD, dir, W_OK, AT_EACCESS)) {
		pr_err("%s is not writable", dir);
		return NULL;
	}
	u = xcalloc(1, sizeof(*u));
	u->dir = xstrdup(dir);
	u->created = created || moved;
	u->moved = moved;
	u->start_ns = (uint64_t)time(NULL) * 1000000000ull;
	if (filter && (filter->npats || filter->depth || filter->time_ns))
		u->filter = filter;
	return u;
}

const char *uftrace_dir(const struct uftrace *u)
{
	return u->dir;
}

struct usession *uftrace_session_of(struct uftrace *u, pid_t pid)
{
	for (size_t i = u->nsess; i > 0; i--)
		if (u->sess[i - 1].pid == pid)
			return u->sess[i - 1].ended ? NULL : &u->sess[i - 1];
	return NULL;
}

void uftrace_begin(struct uftrace *u, pid_t pid, uint64_t ts)
{
	struct usession *s;
	uint64_t sid = ts;

	/* Unique, and 16 hex digits, as uftrace names sessions. */
	for (size_t i = 0; i < u->nsess; i++)
		if (u->sess[i].sid == sid) {
			sid++;
			i = -1;
		}
	grow(&u->sess, &u->sess_cap, u->nsess + 1, sizeof(*u->sess));
	s = &u->sess[u->nsess++];
	*s = (struct usession){.pid = pid, .sid = sid, .ts = ts};
	/* Another program: other functions at the addresses seen. */
	if (u->ncallees) {
		memset(u->callees, 0, u->callees_cap * sizeof(*u->callees));
		u->ncallees = 0;
	}
}

uint64_t uftrace_records(const struct uftrace *u)
{
	return u->records;
}

static FILE *create(struct uftrace *u, const char *name)
{
	char *path = xasprintf("%s/%s", u->dir, name);
	FILE *f = fopen(path, "we");

	if (!f) {
		pr_err("cannot create %s: %s", path, strerror(errno));
		if (!u->err)
			u->err = -errno;
	}
	free(path);
	return f;
}

static void finish(struct uftrace *u, FILE *f)
{
	if (!f)
		return;
	u->bytes += ftell(f) > 0 ? ftell(f) : 0;
	if ((fflush(f) || ferror(f) || fclose(f)) && !u->err)
		u->err = -EIO;
}

/* Old-format .sym of one image, addresses relative to START (formats.md §3.6). */
static void write_syms(struct uftrace *u, const struct guest_image *img, const char *name)
{
	char *file = xasprintf("%s.sym", name);
	FILE *f = create(u, file);
	uint64_t end = 0;
	size_t n = elf_file_nsyms(img->elf);

	free(file);
	if (!f)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct sym *s = elf_file_sym_at(img->elf, i);
		uint64_t a = s->addr + img->bias - img->start;
		size_t len = plt_func_len(s->name);

		if (s->addr + img->bias < img->start)
			continue;
		if (end && a > end)
			fprintf(f, "%016" PRIx64 " ? __func_end\n", end);
		/* A PLT entry is uftrace's 'P' symbol, named as the function. */
		if (len)
			fprintf(f, "%016" PRIx64 " P %.*s\n", a, (int)len, s->name);
		else
			fprintf(f, "%016" PRIx64 " T %s\n", a, s->name);
		end = a + s->size;
	}
	fprintf(f, "%016" PRIx64 " ? __sym_end\n", end);
	finish(u, f);
}

/* Is BASE.sym written already (for this or another session)? */
static bool syms_written(struct uftrace *u, const char *base)
{
	for (size_t i = 0; i < u->nsyms; i++)
		if (!strcmp(u->syms[i], base))
			return true;
	return false;
}

void uftrace_end(struct uftrace *u, pid_t pid, struct guest *g, const char *exename)
{
	struct usession *s = uftrace_session_of(u, pid);
	char *name;
	FILE *f;

	/* The calls still open in its threads end with the program, unseen. */
	for (size_t i = 0; i < u->nthreads; i++)
		if (u->threads[i].pid == pid)
			u->threads[i].depth = 0;
	if (!s)
		return;
	s->ended = true;
	s->exename = xstrdup_clean(exename);
	/* (task.txt quotes it) */
	for (char *c = s->exename; *c; c++)
		if (*c == '"')
			*c = '?';
	/* The map: [stack] high up, so every 48-bit address is a user one;
	 * then each guest image with symbols, under a distinct basename. */
	name = xasprintf("sid-%016" PRIx64 ".map", s->sid);
	f = create(u, name);
	free(name);
	if (!f)
		return;
	fprintf(f, "ffffffffffff-ffffffffffff rw-p 00000000 00:00 0 [stack]\n");
	for (size_t i = 0; i < g->nimgs; i++) {
		const struct guest_image *img = &g->imgs[i];
		char *copy = xstrdup(img->path), *base = basename(copy);

		if (img->elf && img->path[0] == '/') {
			fprintf(f, "%012" PRIx64 "-%012" PRIx64 " r-xp 00000000 00:00 0 %s\n",
				img->start & ADDR_MASK, img->end & ADDR_MASK, img->path);
			/* One .sym per basename: another file of that name is
			 * read by uftrace from its path. */
			if (!syms_written(u, base)) {
				write_syms(u, img, base);
				grow(&u->syms, &u->syms_cap, u->nsyms + 1, sizeof(*u->syms));
				u->syms[u->nsyms++] = xstrdup(base);
			}
		}
		free(copy);
	}
	finish(u, f);
}

static int cmp_tid(const void *a, const void *b)
{
	const struct uthread *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void write_info(struct uftrace *u, const char *exename, const char *cmdline, size_t ntids)
{
	/* feat: TASK_SESSION | SYM_REL_ADDR | MAX_STACK; info: EXE_NAME |
	 * CMDLINE | TASKINFO | RECORD_DATE, text lines in bit order. */
	struct {
		char magic[8];
		uint32_t version;
		uint16_t header_size;
		uint8_t endian, elf_class;
		uint64_t feat_mask, info_mask;
		uint16_t max_stack, unused1;
		uint32_t unused2;
	} h = {"Ftrace!", 4, 40, 1, 2, 0x62, 0x1 | 0x8 | 0x80 | 0x800, MAX_STACK, 0, 0};
	FILE *f = create(u, "info");
	time_t now = u->start_ns / 1000000000ull;
	const char *sep = "";
	char date[64], *exe, *cmd;

	if (!f)
		return;
	/* One line each: a guest's path or argument may hold a newline,
	 * which uftrace record turns into a space in the command line. */
	exe = xstrdup_clean(exename);
	cmd = xstrdup(cmdline);
	for (char *c = cmd; *c; c++)
		if (text_ctl(*c))
			*c = ' ';
	fwrite(&h, sizeof(h), 1, f);
	fprintf(f, "exename:%s\ncmdline:%s\n", exe, cmd);
	free(exe);
	free(cmd);
	fprintf(f, "taskinfo:lines=2\ntaskinfo:nr_tid=%zu\ntaskinfo:tids=", ntids);
	for (size_t i = 0; i < u->nthreads; i++)
		if (u->threads[i].records) {
			fprintf(f, "%s%u", sep, u->threads[i].tid);
			sep = ",";
		}
	strftime(date, sizeof(date), "%a %b %e %T %Y", localtime(&now));
	fprintf(f, "\nrecord_date:%s\nelapsed_time:%.9f sec\n", date,
		(u->last_ts - u->first_ts) / 1e9);
	finish(u, f);
}

/* A line of task.txt, kept to be sorted by time. */
struct task_line {
	uint64_t ts;
	size_t seq; /* lines of one time stay in order */
	char *text;
};

static int cmp_line(const void *a, const void *b)
{
	const struct task_line *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void add_line(struct task_line **v, size_t *n, size_t *cap, uint64_t ts, char *text)
{
	grow(v, cap, *n + 1, sizeof(**v));
	(*v)[*n] = (struct task_line){ts, *n, text};
	(*n)++;
}

#define TS_FMT	   "%" PRIu64 ".%09" PRIu64
#define TS_ARGS(t) (t) / 1000000000, (t) % 1000000000

struct uthread *uftrace_find_thread(struct uftrace *u, uint32_t tid)
{
	for (size_t i = 0; i < u->nthreads; i++)
		if (u->threads[i].tid == tid)
			return &u->threads[i];
	return NULL;
}

/*
 * task.txt, in time order as uftrace record writes it: a SESS per program
 * with a TASK for the process's first thread, a FORK per child (whose
 * first thread has no TASK until it runs another program), and a TASK
 * for every other thread before its first record.
 */
static void write_tasks(struct uftrace *u)
{
	struct task_line *v = NULL;
	size_t n = 0, cap = 0;
	FILE *f = create(u, "task.txt");

	if (!f)
		return;
	for (size_t i = 0; i < u->nsess; i++) {
		const struct usession *s = &u->sess[i];
		const struct uthread *t = uftrace_find_thread(u, s->pid);

		add_line(&v, &n, &cap, s->ts,
			 xasprintf("SESS timestamp=" TS_FMT " pid=%d sid=%016" PRIx64
				   " exename=\"%s\"",
				   TS_ARGS(s->ts), s->pid, s->sid, s->exename ? s->exename : ""));
		if (t && t->records)
			add_line(&v, &n, &cap, s->ts,
				 xasprintf("TASK timestamp=" TS_FMT " tid=%d pid=%d",
					   TS_ARGS(s->ts), s->pid, s->pid));
	}
	for (size_t i = 0; i < u->nforks; i++)
		add_line(&v, &n, &cap, u->forks[i].ts,
			 xasprintf("FORK timestamp=" TS_FMT " pid=%d ppid=%d",
				   TS_ARGS(u->forks[i].ts), u->forks[i].child, u->forks[i].pid));
	for (size_t i = 0; i < u->nthreads; i++) {
		const struct uthread *t = &u->threads[i];
		uint64_t ts;

		if ((pid_t)t->tid == t->pid || !t->records)
			continue; /* a process's first thread: above */
		ts = t->first_ts - 1;
		for (size_t k = 0; k < u->nsess; k++)
			if (u->sess[k].pid == t->pid && u->sess[k].ts <= t->first_ts &&
			    ts < u->sess[k].ts)
				ts = u->sess[k].ts;
		add_line(&v, &n, &cap, ts,
			 xasprintf("TASK timestamp=" TS_FMT " tid=%u pid=%d", TS_ARGS(ts), t->tid,
				   t->pid));
	}
	sort_array(v, n, sizeof(*v), cmp_line);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s\n", v[i].text);
		free(v[i].text);
	}
	free(v);
	finish(u, f);
}

static void free_all(struct uftrace *u)
{
	for (size_t i = 0; i < u->nthreads; i++) {
		free(u->threads[i].out);
		free(u->threads[i].stack);
	}
	for (size_t i = 0; i < u->nsess; i++)
		free(u->sess[i].exename);
	for (size_t i = 0; i < u->nsyms; i++)
		free(u->syms[i]);
	free(u->syms);
	free(u->sess);
	free(u->forks);
	free(u->threads);
	free(u->callees);
	free(u->dir);
	free(u);
}

void uftrace_discard(struct uftrace *u)
{
	for (size_t i = 0; i < u->nthreads; i++)
		if (u->threads[i].fd >= 0)
			close(u->threads[i].fd);
	if (u->created) {
		remove_flat(u->dir);
		if (u->moved) {
			char *old = xasprintf("%s.old", u->dir);

			rename(old, u->dir);
			free(old);
		}
	} else {
		for (size_t i = 0; i < u->nthreads; i++) {
			char *path = xasprintf("%s/%u.dat", u->dir, u->threads[i].tid);

			if (u->threads[i].fd >= 0)
				unlink(path);
			free(path);
		}
	}
	free_all(u);
}

int uftrace_close(struct uftrace *u, const char *exename, const char *cmdline, uint64_t *bytes)
{
	size_t ntids = 0;
	int err;

	for (size_t i = 0; i < u->nthreads; i++) {
		uftrace_flush_thread(u, &u->threads[i]);
		if (u->threads[i].fd >= 0 && close(u->threads[i].fd) && !u->err)
			u->err = -errno;
		u->threads[i].fd = -1;
		ntids += u->threads[i].records > 0;
	}
	sort_array(u->threads, u->nthreads, sizeof(*u->threads), cmp_tid);
	write_info(u, exename, cmdline, ntids);
	write_tasks(u);
	*bytes += u->bytes;
	err = u->err;
	free_all(u);
	return err;
}
