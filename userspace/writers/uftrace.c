// SPDX-License-Identifier: GPL-2.0-or-later
#include "writers/uftrace.h"
#include "writers/callfilter.h"
#include "util/util.h"
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

/* A guest function entered and not left yet. */
struct frame {
	uint64_t addr;
	uint64_t sp;
	uint64_t ts;	 /* of its entry */
	uint32_t level;	 /* for -D: from the top, or from the outermost -F function */
	uint16_t rdepth; /* the depth of its records: recorded frames below it */
	uint8_t flags;	 /* FR_* */
};
#define FR_IN	   1 /* inside an -F function, or no -F */
#define FR_NOTRACE 2 /* inside an -N function */
#define FR_REC	   4 /* recorded */
#define FR_WRITTEN 8 /* its entry is written (-t holds entries back) */

#define OUTBUF (1 << 20)

struct uthread {
	uint32_t tid;
	pid_t pid;
	int fd;	       /* <tid>.dat, from its first record on */
	uint64_t *out; /* records not yet written, OUTBUF bytes */
	size_t nout;   /* u64 words in out */
	struct frame *stack;
	size_t depth, cap;
	size_t written;	   /* frames below this have their entries written */
	uint64_t first_ts; /* of its first record */
	uint64_t last_ts;  /* of its latest record */
	uint64_t records;
};

/* A program a process runs: from its start, or from an exec. */
struct usession {
	pid_t pid;
	uint64_t sid;
	uint64_t ts; /* SESS: no later than its first record */
	char *exename;
	bool ended; /* map and symbols written */
};

struct ufork {
	pid_t pid, child;
	uint64_t ts;
};

struct uftrace {
	char *dir;
	bool created; /* by uftrace_open(): discard removes it */
	bool moved;   /* earlier data went to DIR.old: discard brings it back */
	struct uthread *threads;
	size_t nthreads, cap;
	size_t last; /* index of the last thread used */
	struct usession *sess;
	size_t nsess, sess_cap;
	struct ufork *forks;
	size_t nforks, forks_cap;
	char **syms; /* basenames whose .sym is written */
	size_t nsyms, syms_cap;
	uint64_t records;
	uint64_t bytes;
	uint64_t first_ts;
	uint64_t last_ts;
	uint64_t start_ns; /* CLOCK_REALTIME at open, for record_date */
	int err;
	const struct callfilter *filter; /* NULL: record everything */
	/* CALLFILTER_* of guest functions, by address (open addressing;
	 * key 0 is free), for the filters by name. */
	uint64_t *vkeys;
	uint8_t *vvals;
	size_t vn, vcap;
};

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
	if (access(dir, W_OK)) {
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

/* The running session of PID (the last one begun), or NULL. */
static struct usession *session_of(struct uftrace *u, pid_t pid)
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
	if (u->vn) {
		memset(u->vkeys, 0, u->vcap * sizeof(*u->vkeys));
		u->vn = 0;
	}
}

static struct uthread *thread_of(struct uftrace *u, uint32_t tid, pid_t pid)
{
	struct uthread *t;

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
	t->pid = pid;
	t->fd = -1;
	u->last = u->nthreads++;
	return t;
}

void uftrace_fork(struct uftrace *u, pid_t pid, uint32_t tid, pid_t child, uint64_t ts)
{
	struct uthread *t = thread_of(u, tid, pid), *c;
	struct frame *stack = NULL;
	size_t depth = t->depth, cap = 0;

	/* thread_of() may move T: copy its stack first. */
	if (depth) {
		grow(&stack, &cap, depth, sizeof(*stack));
		memcpy(stack, t->stack, depth * sizeof(*stack));
	}
	c = thread_of(u, child, child);
	free(c->stack);
	c->stack = stack;
	c->depth = depth;
	c->cap = cap;
	grow(&u->forks, &u->forks_cap, u->nforks + 1, sizeof(*u->forks));
	u->forks[u->nforks++] = (struct ufork){pid, child, ts};
}

static void flush_thread(struct uftrace *u, struct uthread *t)
{
	if (t->nout && t->fd < 0 && !u->err) {
		char *path = xasprintf("%s/%u.dat", u->dir, t->tid);

		t->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (t->fd < 0) {
			pr_err("cannot create %s: %s", path, strerror(errno));
			u->err = -errno;
		}
		free(path);
	}
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
	if (!t->out)
		t->out = xmalloc(OUTBUF);
	if (t->nout * 8 + 16 > OUTBUF)
		flush_thread(u, t);
	t->out[t->nout++] = ts;
	t->out[t->nout++] = type | REC_MAGIC << 3 | (uint64_t)depth << 6 | (addr & ADDR_MASK) << 16;
	if (!t->records++)
		t->first_ts = ts;
	t->last_ts = ts;
	if (!u->first_ts || ts < u->first_ts)
		u->first_ts = ts;
	if (ts > u->last_ts)
		u->last_ts = ts;
	u->records++;
}

/* Entries the time filter held back, of frames still open: they come
 * before any record that follows them. */
static void put_pending(struct uftrace *u, struct uthread *t)
{
	for (; t->written < t->depth; t->written++) {
		struct frame *f = &t->stack[t->written];

		if ((f->flags & (FR_REC | FR_WRITTEN)) == FR_REC) {
			put(u, t, f->ts, REC_ENTRY, f->rdepth, f->addr);
			f->flags |= FR_WRITTEN;
		}
	}
}

/* CALLFILTER_* of the guest function at ADDR, looked up once. */
static unsigned int verdict(struct uftrace *u, struct guest *g, uint64_t addr)
{
	struct guest_loc loc = {0};
	const char *raw = NULL;
	size_t k;

	if (u->vn * 2 >= u->vcap) {
		uint64_t *keys = u->vkeys;
		uint8_t *vals = u->vvals;
		size_t cap = u->vcap;

		u->vcap = cap ? cap * 2 : 1024;
		u->vkeys = xcalloc(u->vcap, sizeof(*u->vkeys));
		u->vvals = xcalloc(u->vcap, sizeof(*u->vvals));
		u->vn = 0;
		for (size_t i = 0; i < cap; i++)
			if (keys[i]) {
				for (k = (keys[i] * 0x9e3779b97f4a7c15ull) & (u->vcap - 1);
				     u->vkeys[k]; k = (k + 1) & (u->vcap - 1))
					;
				u->vkeys[k] = keys[i];
				u->vvals[k] = vals[i];
				u->vn++;
			}
		free(keys);
		free(vals);
	}
	for (k = ((addr | 1) * 0x9e3779b97f4a7c15ull) & (u->vcap - 1); u->vkeys[k];
	     k = (k + 1) & (u->vcap - 1))
		if (u->vkeys[k] == (addr | 1))
			return u->vvals[k];
	if (g) {
		guest_lookup(g, addr, &loc);
		raw = loc.raw;
	}
	u->vkeys[k] = addr | 1;
	u->vvals[k] = callfilter_match(u->filter, raw, loc.name);
	u->vn++;
	return u->vvals[k];
}

/* A call of ADDR at TS, SP: a frame, recorded as the filters say. */
static void enter(struct uftrace *u, struct uthread *t, struct guest *g, uint64_t addr, uint64_t sp,
		  uint64_t ts)
{
	const struct callfilter *f = u->filter;
	const struct frame *p = t->depth ? &t->stack[t->depth - 1] : NULL;
	struct frame fr = {.addr = addr, .sp = sp, .ts = ts};
	unsigned int v = callfilter_by_name(f) ? verdict(u, g, addr) : 0;

	fr.rdepth = p ? p->rdepth + !!(p->flags & FR_REC) : 0;
	fr.flags = p ? p->flags & (FR_IN | FR_NOTRACE) : (f && f->any_in ? 0 : FR_IN);
	fr.level = (fr.flags & FR_IN) && p ? p->level + 1 : 1;
	/* Each -F function starts -D's count again, as in uftrace. */
	if (v & CALLFILTER_IN) {
		fr.flags |= FR_IN;
		fr.level = 1;
	}
	if (v & CALLFILTER_NOTRACE)
		fr.flags |= FR_NOTRACE;
	if ((fr.flags & (FR_IN | FR_NOTRACE)) == FR_IN && (!f || !f->depth || fr.level <= f->depth))
		fr.flags |= FR_REC;
	if ((fr.flags & FR_REC) && !(f && f->time_ns)) {
		put_pending(u, t);
		put(u, t, ts, REC_ENTRY, fr.rdepth, addr);
		fr.flags |= FR_WRITTEN;
	}
	grow(&t->stack, &t->cap, t->depth + 1, sizeof(*t->stack));
	t->stack[t->depth++] = fr;
}

/* The innermost frame is left at TS. */
static void leave(struct uftrace *u, struct uthread *t, uint64_t ts)
{
	struct frame *fr = &t->stack[t->depth - 1];

	if (fr->flags & FR_REC) {
		if (fr->flags & FR_WRITTEN || ts - fr->ts >= u->filter->time_ns) {
			put_pending(u, t);
			put(u, t, ts, REC_EXIT, fr->rdepth, fr->addr);
		}
	}
	t->depth--;
	if (t->written > t->depth)
		t->written = t->depth;
}

/* The record depth of what happens now, in the innermost frame. */
static size_t depth_now(const struct uthread *t)
{
	const struct frame *p = t->depth ? &t->stack[t->depth - 1] : NULL;

	return p ? p->rdepth + !!(p->flags & FR_REC) : 0;
}

/* Frames deeper than SP (AT_SP: or at it) are dead: their functions were
 * left without a return we saw (longjmp, exceptions, a gap).  End them
 * at TS. */
static inline void unwind_below(struct uftrace *u, struct uthread *t, uint64_t sp, bool at_sp,
				uint64_t ts)
{
	while (t->depth &&
	       (t->stack[t->depth - 1].sp < sp || (at_sp && t->stack[t->depth - 1].sp == sp)))
		leave(u, t, ts);
}

void uftrace_events(struct uftrace *u, pid_t pid, uint32_t tid, const void *events, uint32_t n,
		    uint64_t lost, struct guest *g)
{
	struct uthread *t = thread_of(u, tid, pid);
	const struct call_event *ev = events;
	struct usession *s;

	if (!n) {
		uftrace_lost_at_end(u, tid, lost);
		return;
	}
	/* A session begins no later than its first record. */
	s = session_of(u, pid);
	if (s && ev[0].ts <= s->ts)
		s->ts = ev[0].ts - 1;
	/* A gap: say so where it is, as uftrace does. */
	if (lost) {
		put_pending(u, t);
		put(u, t, ev[0].ts, REC_LOST, depth_now(t), lost);
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t addr = QJ_CALL_ADDR(ev[i].addr), sp = ev[i].sp;

		switch (QJ_CALL_KIND(ev[i].addr)) {
		case EV_CALL:
			/* A function that calls has a stack pointer below the
			 * one of its own call: a call at that of an open frame
			 * comes from its caller, after a longjmp out of it. */
			unwind_below(u, t, sp, true, ev[i].ts);
			enter(u, t, g, addr, sp, ev[i].ts);
			break;
		case EV_RET:
			/* A return matches the call made with the same SP; one
			 * that matches nothing left a function entered before
			 * tracing began, or was a jump in disguise. */
			unwind_below(u, t, sp, false, ev[i].ts);
			if (t->depth && t->stack[t->depth - 1].sp == sp)
				leave(u, t, ev[i].ts);
			break;
		}
	}
}

bool uftrace_lost_at_end(struct uftrace *u, uint32_t tid, uint64_t lost)
{
	struct uthread *t = NULL;

	for (size_t i = 0; i < u->nthreads && !t; i++)
		if (u->threads[i].tid == tid)
			t = &u->threads[i];
	if (!t || !t->records || !lost)
		return false;
	put_pending(u, t);
	put(u, t, t->last_ts, REC_LOST, depth_now(t), lost);
	return true;
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
	struct usession *s = session_of(u, pid);
	char *name;
	FILE *f;

	/* The calls still open in its threads end with the program, unseen. */
	for (size_t i = 0; i < u->nthreads; i++)
		if (u->threads[i].pid == pid)
			u->threads[i].depth = 0;
	if (!s)
		return;
	s->ended = true;
	s->exename = xstrdup(exename);
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
	char date[64];

	if (!f)
		return;
	fwrite(&h, sizeof(h), 1, f);
	fprintf(f, "exename:%s\n", exename);
	fprintf(f, "cmdline:%s\n", cmdline);
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

static const struct uthread *find_thread(const struct uftrace *u, uint32_t tid)
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
		const struct uthread *t = find_thread(u, s->pid);

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
	qsort(v, n, sizeof(*v), cmp_line);
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
	free(u->vkeys);
	free(u->vvals);
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
		flush_thread(u, &u->threads[i]);
		if (u->threads[i].fd >= 0 && close(u->threads[i].fd) && !u->err)
			u->err = -errno;
		u->threads[i].fd = -1;
		ntids += u->threads[i].records > 0;
	}
	qsort(u->threads, u->nthreads, sizeof(*u->threads), cmp_tid);
	write_info(u, exename, cmdline, ntids);
	write_tasks(u);
	*bytes += u->bytes;
	err = u->err;
	free_all(u);
	return err;
}
