// SPDX-License-Identifier: GPL-2.0-or-later
#include "uftrace.h"
#include "util.h"
#include <linux/types.h>
#include "qemu-jitbpf.h"

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

/* QEMU's JitCallEvent (accel/tcg/jit-calls.c). */
struct call_event {
	uint64_t ts;
	uint64_t addr; /* kind << 62 | address */
	uint64_t sp;
};
#define EV_CALL 1
#define EV_RET	2

/* uftrace's record: type in bits 0-1, magic 5 in 3-5, depth 6-15, addr 16-63. */
#define REC_ENTRY 0
#define REC_EXIT  1
#define REC_LOST  2
#define REC_MAGIC 5
#define MAX_STACK 1024
#define ADDR_MASK UINT64_C(0xffffffffffff)

struct frame {
	uint64_t addr;
	uint64_t sp;
};

#define OUTBUF (1 << 20)

struct uthread {
	uint32_t tid;
	int fd;
	uint64_t *out; /* records not yet written, OUTBUF bytes */
	size_t nout;   /* u64 words in out */
	struct frame *stack;
	size_t depth, cap;
	uint64_t lost;	   /* events lost so far, as last reported */
	uint64_t first_ts; /* of its first record */
	uint64_t records;
};

struct uftrace {
	char *dir;
	bool created; /* by uftrace_open(): discard removes it */
	pid_t pid;
	struct uthread *threads;
	size_t nthreads, cap;
	size_t last; /* index of the last thread used */
	uint64_t records;
	uint64_t bytes;
	uint64_t first_ts;
	uint64_t last_ts;
	uint64_t start_ns; /* CLOCK_REALTIME at open, for record_date */
	int err;
};

struct uftrace *uftrace_open(const char *dir)
{
	struct uftrace *u;
	struct dirent *de;
	DIR *d;

	bool created = !mkdir(dir, 0755);

	if (!created && errno != EEXIST) {
		pr_err("cannot create %s: %s", dir, strerror(errno));
		return NULL;
	}
	d = opendir(dir);
	if (!d) {
		pr_err("cannot open %s: %s", dir, strerror(errno));
		return NULL;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			closedir(d);
			pr_err("%s exists and is not empty; remove it or name another with "
			       "--uftrace=DIR",
			       dir);
			return NULL;
		}
	closedir(d);
	if (access(dir, W_OK)) {
		pr_err("%s is not writable", dir);
		return NULL;
	}
	u = xcalloc(1, sizeof(*u));
	u->dir = xstrdup(dir);
	u->created = created;
	u->start_ns = (uint64_t)time(NULL) * 1000000000ull;
	return u;
}

static struct uthread *thread_of(struct uftrace *u, uint32_t tid)
{
	struct uthread *t;
	char *path;

	if (u->nthreads && u->threads[u->last].tid == tid)
		return &u->threads[u->last];
	for (size_t i = 0; i < u->nthreads; i++)
		if (u->threads[i].tid == tid) {
			u->last = i;
			return &u->threads[i];
		}
	grow(&u->threads, &u->cap, u->nthreads + 1, sizeof(*u->threads));
	t = &u->threads[u->nthreads];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	path = xasprintf("%s/%u.dat", u->dir, tid);
	t->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (t->fd < 0) {
		pr_err("cannot create %s: %s", path, strerror(errno));
		u->err = -errno;
	}
	t->out = xmalloc(OUTBUF);
	free(path);
	u->last = u->nthreads++;
	return t;
}

static void flush_thread(struct uftrace *u, struct uthread *t)
{
	if (t->nout && t->fd >= 0 && !write_all(t->fd, t->out, t->nout * 8) && !u->err)
		u->err = -errno;
	u->bytes += t->nout * 8;
	t->nout = 0;
}

static inline void put(struct uftrace *u, struct uthread *t, uint64_t ts, int type, size_t depth,
		       uint64_t addr)
{
	if (depth >= MAX_STACK)
		return; /* uftrace drops what is deeper than max_stack */
	if (t->nout * 8 + 16 > OUTBUF)
		flush_thread(u, t);
	t->out[t->nout++] = ts;
	t->out[t->nout++] = type | REC_MAGIC << 3 | (uint64_t)depth << 6 | (addr & ADDR_MASK) << 16;
	if (!t->records++)
		t->first_ts = ts;
	if (!u->first_ts || ts < u->first_ts)
		u->first_ts = ts;
	if (ts > u->last_ts)
		u->last_ts = ts;
	u->records++;
}

/* Frames deeper than SP are dead: their functions were left without a
 * return we saw (longjmp, exceptions, a gap).  End them at TS. */
static inline void unwind_below(struct uftrace *u, struct uthread *t, uint64_t sp, uint64_t ts)
{
	while (t->depth && t->stack[t->depth - 1].sp < sp) {
		t->depth--;
		put(u, t, ts, REC_EXIT, t->depth, t->stack[t->depth].addr);
	}
}

void uftrace_events(struct uftrace *u, uint32_t tid, const void *events, uint32_t n, uint64_t lost)
{
	struct uthread *t = thread_of(u, tid);
	const struct call_event *ev = events;

	if (n && lost > t->lost) {
		/* A gap: say so where it is, as uftrace does. */
		put(u, t, ev[0].ts, REC_LOST, t->depth, lost - t->lost);
		t->lost = lost;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t addr = QJ_CALL_ADDR(ev[i].addr), sp = ev[i].sp;

		switch (QJ_CALL_KIND(ev[i].addr)) {
		case EV_CALL:
			unwind_below(u, t, sp, ev[i].ts);
			grow(&t->stack, &t->cap, t->depth + 1, sizeof(*t->stack));
			t->stack[t->depth] = (struct frame){addr, sp};
			put(u, t, ev[i].ts, REC_ENTRY, t->depth, addr);
			t->depth++;
			break;
		case EV_RET:
			/* A return matches the call made with the same SP; one
			 * that matches nothing left a function entered before
			 * tracing began, or was a jump in disguise. */
			unwind_below(u, t, sp, ev[i].ts);
			if (t->depth && t->stack[t->depth - 1].sp == sp) {
				t->depth--;
				put(u, t, ev[i].ts, REC_EXIT, t->depth, t->stack[t->depth].addr);
			}
			break;
		}
	}
}

void uftrace_lost_at_end(struct uftrace *u, uint32_t tid, uint64_t lost)
{
	struct uthread *t = thread_of(u, tid);

	if (lost > t->lost) {
		put(u, t, u->last_ts, REC_LOST, t->depth, lost - t->lost);
		t->lost = lost;
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

static int cmp_tid(const void *a, const void *b)
{
	const struct uthread *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void write_info(struct uftrace *u, const char *exename, const char *cmdline)
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
	char date[64];

	if (!f)
		return;
	fwrite(&h, sizeof(h), 1, f);
	fprintf(f, "exename:%s\n", exename);
	fprintf(f, "cmdline:%s\n", cmdline);
	fprintf(f, "taskinfo:lines=2\ntaskinfo:nr_tid=%zu\ntaskinfo:tids=", u->nthreads);
	for (size_t i = 0; i < u->nthreads; i++)
		fprintf(f, "%s%u", i ? "," : "", u->threads[i].tid);
	strftime(date, sizeof(date), "%a %b %e %T %Y", localtime(&now));
	fprintf(f, "\nrecord_date:%s\nelapsed_time:%.9f sec\n", date,
		(u->last_ts - u->first_ts) / 1e9);
	finish(u, f);
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

		if (s->addr + img->bias < img->start)
			continue;
		if (end && a > end)
			fprintf(f, "%016" PRIx64 " ? __func_end\n", end);
		fprintf(f, "%016" PRIx64 " T %s\n", a, s->name);
		end = a + s->size;
	}
	fprintf(f, "%016" PRIx64 " ? __sym_end\n", end);
	finish(u, f);
}

void uftrace_discard(struct uftrace *u)
{
	for (size_t i = 0; i < u->nthreads; i++) {
		char *path = xasprintf("%s/%u.dat", u->dir, u->threads[i].tid);

		if (u->threads[i].fd >= 0) {
			close(u->threads[i].fd);
			unlink(path);
		}
		free(path);
		free(u->threads[i].out);
		free(u->threads[i].stack);
	}
	if (u->created)
		rmdir(u->dir);
	free(u->threads);
	free(u->dir);
	free(u);
}

int uftrace_close(struct uftrace *u, pid_t pid, struct guest *g, const char *exename,
		  const char *cmdline, uint64_t *bytes)
{
	uint64_t sid = u->first_ts;
	uint64_t ts = u->first_ts ? u->first_ts - 1 : 0;
	char *name;
	FILE *f;
	int err;

	u->pid = pid;
	for (size_t i = 0; i < u->nthreads; i++) {
		flush_thread(u, &u->threads[i]);
		if (u->threads[i].fd >= 0 && close(u->threads[i].fd) && !u->err)
			u->err = -errno;
		free(u->threads[i].out);
	}
	qsort(u->threads, u->nthreads, sizeof(*u->threads), cmp_tid);
	write_info(u, exename, cmdline);

	/* One session, before the first record, and a task per thread. */
	f = create(u, "task.txt");
	if (f) {
		fprintf(f,
			"SESS timestamp=%" PRIu64 ".%09" PRIu64 " pid=%d sid=%016" PRIx64
			" exename=\"%s\"\n",
			ts / 1000000000, ts % 1000000000, u->pid, sid, exename);
		for (size_t i = 0; i < u->nthreads; i++) {
			uint64_t t = u->threads[i].records ? u->threads[i].first_ts - 1 : ts;

			fprintf(f, "TASK timestamp=%" PRIu64 ".%09" PRIu64 " tid=%u pid=%d\n",
				t / 1000000000, t % 1000000000, u->threads[i].tid, u->pid);
		}
		finish(u, f);
	}

	/* The map: [stack] high up, so every 48-bit address is a user one;
	 * then each guest image with symbols, under a distinct basename. */
	name = xasprintf("sid-%016" PRIx64 ".map", sid);
	f = create(u, name);
	free(name);
	if (f) {
		char **seen = xcalloc(g->nimgs + 1, sizeof(*seen));
		size_t nseen = 0;

		fprintf(f, "ffffffffffff-ffffffffffff rw-p 00000000 00:00 0 [stack]\n");
		for (size_t i = 0; i < g->nimgs; i++) {
			const struct guest_image *img = &g->imgs[i];
			char *copy = xstrdup(img->path), *base = basename(copy);
			bool dup = false;

			for (size_t k = 0; k < nseen; k++)
				dup |= !strcmp(seen[k], base);
			if (!img->elf || dup || img->path[0] != '/') {
				free(copy);
				continue;
			}
			fprintf(f, "%012" PRIx64 "-%012" PRIx64 " r-xp 00000000 00:00 0 %s\n",
				img->start & ADDR_MASK, img->end & ADDR_MASK, img->path);
			write_syms(u, img, base);
			seen[nseen++] = xstrdup(base);
			free(copy);
		}
		for (size_t k = 0; k < nseen; k++)
			free(seen[k]);
		free(seen);
		finish(u, f);
	}

	*bytes += u->bytes;
	err = u->err;
	for (size_t i = 0; i < u->nthreads; i++)
		free(u->threads[i].stack);
	free(u->threads);
	free(u->dir);
	free(u);
	return err;
}
