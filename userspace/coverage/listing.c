// SPDX-License-Identifier: GPL-2.0-or-later
#include "coverage/listing.h"
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

struct listing_job {
	struct listing_job *next; /* while queued */
	struct lines_src *src;	  /* until read */
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

struct rows {
	struct row {
		const char *file; /* in the listing's files */
		int line;
		uint64_t lo, hi;
	} * v;
	size_t n, cap;
	struct strtab *files;
};

static void add_row(void *ctx, uint64_t lo, uint64_t hi, const char *file, int line)
{
	struct rows *r = ctx;

	grow(&r->v, &r->cap, r->n + 1, sizeof(*r->v));
	r->v[r->n++] = (struct row){strtab_add(r->files, file), line, lo, hi};
}

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	/* A file's rows together (files kept once: by pointer), by line,
	 * then by address. */
	if (x->file != y->file)
		return (uintptr_t)x->file < (uintptr_t)y->file ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* J's rows, one line each with its ranges (touching ones joined: a line
 * counts what its most run instruction did, wherever it lies), and its
 * declarations. */
static void read_listing(struct listing_job *j)
{
	struct listing *ls = &j->listing;
	struct rows r = {.files = &ls->files};
	size_t lcap = 0, rcap = 0;

	lines_src_each(j->src, add_row, &r);
	qsort(r.v, r.n, sizeof(*r.v), row_cmp);
	for (size_t i = 0; i < r.n; i++) {
		const struct row *w = &r.v[i];
		struct listing_line *l = ls->nlines ? &ls->lines[ls->nlines - 1] : NULL;
		struct listing_range *last = ls->nranges ? &ls->ranges[ls->nranges - 1] : NULL;

		if (!l || l->file != w->file || l->line != w->line) {
			grow(&ls->lines, &lcap, ls->nlines + 1, sizeof(*ls->lines));
			l = &ls->lines[ls->nlines++];
			*l = (struct listing_line){w->file, w->line, (uint32_t)ls->nranges, 0};
		} else if (last->hi >= w->lo) {
			if (w->hi > last->hi)
				last->hi = w->hi;
			continue;
		}
		grow(&ls->ranges, &rcap, ls->nranges + 1, sizeof(*ls->ranges));
		ls->ranges[ls->nranges++] = (struct listing_range){w->lo, w->hi};
		l->n++;
	}
	free(r.v);
	ls->decls = lines_src_decls(j->src, &ls->ndecls);
	lines_src_free(j->src);
	j->src = NULL;
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

struct listing_job *lister_request(struct lister **lp, const struct elf_file *e)
{
	struct lines_src *src = lines_src_new(e);
	struct listing_job *j, **p;

	if (!src)
		return NULL;
	if (!*lp && !(*lp = lister_start())) {
		lines_src_free(src);
		return NULL;
	}
	j = xcalloc(1, sizeof(*j));
	j->src = src;
	pthread_mutex_lock(&(*lp)->lock);
	for (p = &(*lp)->queue; *p; p = &(*p)->next)
		;
	*p = j;
	pthread_cond_signal(&(*lp)->work);
	pthread_mutex_unlock(&(*lp)->lock);
	return j;
}

struct listing_job *listing_read(const struct elf_file *e)
{
	struct lines_src *src = lines_src_new(e);
	struct listing_job *j;

	if (!src)
		return NULL;
	j = xcalloc(1, sizeof(*j));
	j->src = src;
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
	lines_src_free(j->src);
	free(j->listing.lines);
	free(j->listing.ranges);
	decls_free(j->listing.decls, j->listing.ndecls);
	strtab_free(&j->listing.files);
	free(j);
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
