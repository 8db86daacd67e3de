// SPDX-License-Identifier: GPL-2.0-or-later
#include "coverage/listing.h"
#include "coverage/listcache.h"
#include "naming/decls.h"
#include "naming/linesrc.h"
#include "util/util.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum job_state {
	JOB_QUEUED,  /* in the lister's queue */
	JOB_READING, /* by the thread, or by a writer that would not wait */
	JOB_READ,
};

/* A function as the symbols name it: the first name of its entry. */
struct fn_sym {
	uint64_t addr;
	const char *name; /* in the job's names, then the listing's strs */
};

struct listing_job {
	struct listing_job *next; /* while queued */
	struct lines_src *src;	  /* until read */
	struct fn_sym *syms;	  /* until read */
	size_t nsyms;
	struct strtab names;
	struct listcache *cache;
	struct listing_key key; /* what the listing is read from */
	struct listing listing;
	enum job_state state;
};

struct lister {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	struct listing_job *queue;
	bool stop;
};

/* A statement row, a function's entry (NAME set), or the entry at the
 * line of its declaration. */
struct row {
	const char *file; /* in the listing's strs */
	const char *name;
	int line;
	uint64_t lo, hi;
};

struct rows {
	struct row *v;
	size_t n, cap;
	struct strtab *strs;
};

static void add(struct rows *r, const char *file, const char *name, int line, uint64_t lo,
		uint64_t hi)
{
	grow(&r->v, &r->cap, r->n + 1, sizeof(*r->v));
	r->v[r->n++] = (struct row){file, name, line, lo, hi};
}

static void add_row(void *ctx, uint64_t lo, uint64_t hi, const char *file, int line)
{
	struct rows *r = ctx;

	add(r, strtab_add(r->strs, file), NULL, line, lo, hi);
}

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int c;

	/* A file's rows together (files kept once: by pointer), its
	 * functions first, by name; then by line, then by address. */
	if (x->file != y->file)
		return (uintptr_t)x->file < (uintptr_t)y->file ? -1 : 1;
	if (!x->name != !y->name)
		return x->name ? -1 : 1;
	if (x->name != y->name && (c = strcmp(x->name, y->name)))
		return c;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* J's functions: at their declaration's line, with their entry there too
 * (where gcov puts it and its entry block), else at their entry's. */
static void add_functions(struct listing_job *j, struct rows *r, const struct decl *d, size_t nd)
{
	for (size_t i = 0; i < j->nsyms; i++) {
		const struct fn_sym *s = &j->syms[i];
		const char *file;
		const struct decl *dc = decls_find(d, nd, s->addr);
		int line;

		if (dc) {
			file = strtab_add(r->strs, dc->file);
			add(r, file, s->name, dc->line, s->addr, s->addr + 1);
			add(r, file, NULL, dc->line, s->addr, s->addr + 1);
		} else if (lines_src_line(j->src, s->addr, &file, &line)) {
			add(r, strtab_add(r->strs, file), s->name, line, s->addr, s->addr + 1);
		}
	}
}

static int src_cmp(const void *a, const void *b)
{
	const struct listing_src *x = a, *y = b;

	return strcmp(x->path, y->path);
}

/* ROWS, sorted, as L's files, functions, lines and ranges. */
static void build(struct listing *ls, const struct row *v, size_t n)
{
	size_t scap = 0, fcap = 0, lcap = 0, rcap = 0;

	for (size_t i = 0; i < n; i++) {
		const struct row *w = &v[i];
		struct listing_src *src = ls->nsrcs ? &ls->srcs[ls->nsrcs - 1] : NULL;
		struct listing_range *last = ls->nranges ? &ls->ranges[ls->nranges - 1] : NULL;
		uint32_t *nr;

		if (!src || src->path != w->file) {
			grow(&ls->srcs, &scap, ls->nsrcs + 1, sizeof(*ls->srcs));
			src = &ls->srcs[ls->nsrcs++];
			*src = (struct listing_src){w->file, (uint32_t)ls->nfns, 0,
						    (uint32_t)ls->nlines, 0};
			last = NULL;
		}
		if (w->name) {
			struct listing_fn *f = src->nfns ? &ls->fns[ls->nfns - 1] : NULL;

			if (!f || f->name != w->name || f->line != w->line) {
				grow(&ls->fns, &fcap, ls->nfns + 1, sizeof(*ls->fns));
				f = &ls->fns[ls->nfns++];
				*f = (struct listing_fn){w->name, w->line, (uint32_t)ls->nranges,
							 0};
				src->nfns++;
				last = NULL;
			}
			nr = &f->n;
		} else {
			struct listing_line *l = src->nlines ? &ls->lines[ls->nlines - 1] : NULL;

			if (!l || l->line != w->line) {
				grow(&ls->lines, &lcap, ls->nlines + 1, sizeof(*ls->lines));
				l = &ls->lines[ls->nlines++];
				*l = (struct listing_line){w->line, (uint32_t)ls->nranges, 0};
				src->nlines++;
				last = NULL;
			}
			nr = &l->n;
		}
		/* (Rows come by address within a line: touching ones join.) */
		if (last && *nr && last->hi >= w->lo) {
			if (w->hi > last->hi)
				last->hi = w->hi;
			continue;
		}
		grow(&ls->ranges, &rcap, ls->nranges + 1, sizeof(*ls->ranges));
		ls->ranges[ls->nranges++] = (struct listing_range){w->lo, w->hi};
		(*nr)++;
	}
	qsort(ls->srcs, ls->nsrcs, sizeof(*ls->srcs), src_cmp);
}

/* What reading J needed, let go once it is read. */
static void job_read_done(struct listing_job *j)
{
	lines_src_free(j->src);
	j->src = NULL;
	free(j->syms);
	j->syms = NULL;
	strtab_free(&j->names);
}

/* J's listing from its files: its rows and functions, sorted and grouped. */
static void build_listing(struct listing_job *j)
{
	struct listing *ls = &j->listing;
	struct rows r = {.strs = &ls->strs};
	size_t nd;
	struct decl *d;

	/* The functions' names (copied on the main thread) are the listing's. */
	strtab_swap(&ls->strs, &j->names);
	lines_src_each(j->src, add_row, &r);
	d = lines_src_decls(j->src, &nd);
	add_functions(j, &r, d, nd);
	decls_free(d, nd);
	job_read_done(j);
	qsort(r.v, r.n, sizeof(*r.v), row_cmp);
	build(ls, r.v, r.n);
	free(r.v);
}

/* J's listing, from the cache or from its files (then kept). */
static void read_listing(struct listing_job *j)
{
	if (j->cache && listcache_load(j->cache, &j->key, &j->listing)) {
		job_read_done(j);
		return;
	}
	build_listing(j);
	if (j->cache)
		listcache_store(j->cache, &j->key, &j->listing);
}

/* Read J, taken out of the queue, without holding L's lock (held on
 * entry and on return). */
static void read_unlocked(struct lister *l, struct listing_job *j)
{
	j->state = JOB_READING;
	pthread_mutex_unlock(&l->lock);
	read_listing(j);
	pthread_mutex_lock(&l->lock);
	j->state = JOB_READ;
	pthread_cond_broadcast(&l->done);
}

static void *lister_main(void *arg)
{
	struct lister *l = arg;

	pthread_mutex_lock(&l->lock);
	for (;;) {
		struct listing_job *j;

		while (!l->stop && !l->queue)
			pthread_cond_wait(&l->work, &l->lock);
		if (l->stop)
			break;
		j = l->queue;
		l->queue = j->next;
		read_unlocked(l, j);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

static struct lister *lister_start(void)
{
	struct lister *l = xcalloc(1, sizeof(*l));
	sigset_t all, old;
	int err;

	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->work, NULL);
	pthread_cond_init(&l->done, NULL);
	/* Signals are the main thread's (Ctrl-C, SIGTERM, SIGCHLD). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&l->thread, NULL, lister_main, l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		pr_dbg("coverage: no thread to read line tables (%s): read at the end",
		       strerror(err));
		pthread_cond_destroy(&l->done);
		pthread_cond_destroy(&l->work);
		pthread_mutex_destroy(&l->lock);
		free(l);
		return NULL;
	}
	return l;
}

/* A job for E, with what reading it needs of E (NULL: E is no file). */
static struct listing_job *job_new(struct elf_file *e, struct listcache *lc)
{
	struct lines_src *src = lines_src_new(e);
	struct listing_job *j;
	uint64_t prev = UINT64_MAX, h = FNV_START;
	const unsigned char *id;
	size_t cap = 0, n;

	if (!src)
		return NULL;
	j = xcalloc(1, sizeof(*j));
	j->src = src;
	j->cache = lc;
	for (size_t i = 0; i < elf_file_nsyms(e); i++) {
		const struct sym *s = elf_file_sym_at(e, i);
		const char *name;

		/* Aliases: the first name of an address. */
		if (s->addr == prev || !elf_file_in_code(e, s->addr))
			continue;
		prev = s->addr;
		if (!(name = elf_file_sym_name(e, s)))
			continue;
		grow(&j->syms, &cap, j->nsyms + 1, sizeof(*j->syms));
		j->syms[j->nsyms++] = (struct fn_sym){s->addr, strtab_add(&j->names, name)};
		h = fnv1a(name, strlen(name) + 1, h);
		h = fnv1a(&s->addr, sizeof(s->addr), h);
	}
	/* The key: the files read (and the build-id, should a file be
	 * rewritten with its size and time kept), and the functions. */
	lines_src_ids(src, j->key.v);
	j->key.v[8] = h;
	j->key.v[9] = j->nsyms;
	n = elf_file_build_id(e, &id);
	j->key.v[10] = fnv1a(id, n, FNV_START);
	return j;
}

void listing_free(struct listing *ls)
{
	free(ls->srcs);
	free(ls->fns);
	free(ls->lines);
	free(ls->ranges);
	strtab_free(&ls->strs);
	free(ls->blob);
	memset(ls, 0, sizeof(*ls));
}

static void job_free(struct listing_job *j)
{
	job_read_done(j);
	listing_free(&j->listing);
	free(j);
}

struct listing_job *lister_request(struct lister **lp, struct elf_file *e, struct listcache *lc)
{
	struct listing_job *j = job_new(e, lc), **p;

	if (!j)
		return NULL;
	if (!*lp && !(*lp = lister_start())) {
		job_free(j);
		return NULL;
	}
	pthread_mutex_lock(&(*lp)->lock);
	for (p = &(*lp)->queue; *p; p = &(*p)->next)
		;
	*p = j;
	pthread_cond_signal(&(*lp)->work);
	pthread_mutex_unlock(&(*lp)->lock);
	return j;
}

struct listing_job *listing_read(struct elf_file *e, struct listcache *lc)
{
	struct listing_job *j = job_new(e, lc);

	if (!j)
		return NULL;
	read_listing(j);
	j->state = JOB_READ;
	return j;
}

/* Take J out of the queue (under the lock); false if it was not there. */
static bool unqueue(struct lister *l, struct listing_job *j)
{
	for (struct listing_job **p = &l->queue; *p; p = &(*p)->next)
		if (*p == j) {
			*p = j->next;
			return true;
		}
	return false;
}

const struct listing *listing_wait(struct lister *l, struct listing_job *j)
{
	if (!j)
		return NULL;
	if (!l)
		return &j->listing; /* listing_read()'s */
	pthread_mutex_lock(&l->lock);
	/* Not begun: read it here rather than wait for the others. */
	if (j->state == JOB_QUEUED && unqueue(l, j))
		read_unlocked(l, j);
	while (j->state != JOB_READ)
		pthread_cond_wait(&l->done, &l->lock);
	pthread_mutex_unlock(&l->lock);
	return &j->listing;
}

void listing_job_free(struct lister *l, struct listing_job *j)
{
	if (!j)
		return;
	if (l) {
		pthread_mutex_lock(&l->lock);
		if (j->state == JOB_QUEUED && unqueue(l, j))
			j->state = JOB_READ; /* never read */
		while (j->state != JOB_READ)
			pthread_cond_wait(&l->done, &l->lock);
		pthread_mutex_unlock(&l->lock);
	}
	job_free(j);
}

void lister_free(struct lister *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	l->stop = true;
	pthread_cond_broadcast(&l->work);
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->thread, NULL);
	pthread_cond_destroy(&l->done);
	pthread_cond_destroy(&l->work);
	pthread_mutex_destroy(&l->lock);
	free(l);
}
