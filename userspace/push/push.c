// SPDX-License-Identifier: GPL-2.0-or-later
#include "push/push.h"
#include "util/util.h"

#include <curl/curl.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A spooled interval: FROM-UNTIL.pb.gz, unix seconds, zero-padded so that
 * names sort as times do. */
#define SPOOL_FMT  "%012lld-%012lld.pb.gz"
#define SPOOL_NAME 31 /* its length */
/* Waits between tries while the server does not take them. */
#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 30000

struct pusher {
	struct push_opts o;
	char *url;    /* base URL, no trailing slash */
	char *name;   /* APP{host=HOST}, escaped for the query */
	char *bearer; /* or */
	char *userpwd;
	int dirfd;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping;
	uint64_t deadline_ms; /* when stopping: give up then */
	char sending[SPOOL_NAME + 1];
	uint64_t sent, dropped, rejected, failures;
	bool down; /* said so; said again when it is back */
	bool curl;
};

/*
 * libcurl, opened when --push is given: linked in, its 30 libraries (TLS,
 * Kerberos, LDAP...) would cost every start of the tool ~10 ms.
 */
static struct {
	CURLcode (*global_init)(long flags);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
	void (*easy_cleanup)(CURL *c);
	const char *(*easy_strerror)(CURLcode rc);
	char *(*easy_escape)(CURL *c, const char *s, int len);
	void (*free)(void *p);
	curl_mime *(*mime_init)(CURL *c);
	curl_mimepart *(*mime_addpart)(curl_mime *m);
	CURLcode (*mime_name)(curl_mimepart *part, const char *name);
	CURLcode (*mime_filename)(curl_mimepart *part, const char *name);
	CURLcode (*mime_type)(curl_mimepart *part, const char *type);
	CURLcode (*mime_filedata)(curl_mimepart *part, const char *path);
	void (*mime_free)(curl_mime *m);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
} lc;

static bool curl_load(void)
{
	static const struct {
		const char *name;
		size_t off;
	} fns[] = {
#define FN(f, name) {name, offsetof(__typeof__(lc), f)}
		FN(global_init, "curl_global_init"),
		FN(global_cleanup, "curl_global_cleanup"),
		FN(easy_init, "curl_easy_init"),
		FN(easy_setopt, "curl_easy_setopt"),
		FN(easy_perform, "curl_easy_perform"),
		FN(easy_getinfo, "curl_easy_getinfo"),
		FN(easy_cleanup, "curl_easy_cleanup"),
		FN(easy_strerror, "curl_easy_strerror"),
		FN(easy_escape, "curl_easy_escape"),
		FN(free, "curl_free"),
		FN(mime_init, "curl_mime_init"),
		FN(mime_addpart, "curl_mime_addpart"),
		FN(mime_name, "curl_mime_name"),
		FN(mime_filename, "curl_mime_filename"),
		FN(mime_type, "curl_mime_type"),
		FN(mime_filedata, "curl_mime_filedata"),
		FN(mime_free, "curl_mime_free"),
		FN(slist_append, "curl_slist_append"),
		FN(slist_free_all, "curl_slist_free_all"),
#undef FN
	};
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		pr_err("--push needs libcurl: %s", dlerror());
		return false;
	}
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		void *f = dlsym(h, fns[i].name);

		if (!f) {
			pr_err("--push: libcurl has no %s", fns[i].name);
			return false;
		}
		memcpy((char *)&lc + fns[i].off, &f, sizeof(f));
	}
	return true;
}

static uint64_t now_ms(void)
{
	return mono_ns() / 1000000;
}

static bool spool_name(const char *s, long long *from, long long *until)
{
	int n = 0;

	return strlen(s) == SPOOL_NAME &&
	       sscanf(s, "%12lld-%12lld.pb.gz%n", from, until, &n) == 2 && n == SPOOL_NAME;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The spool's intervals, oldest first; *N of them (free each, and it). */
static char **spool_list(struct pusher *p, size_t *n)
{
	int fd = openat(p->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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

static void free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static char *read_secret(const char *path)
{
	struct stat st;
	size_t len;
	char *s;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0) {
		pr_err("--push-auth %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		pr_err("--push-auth %s: not a regular file that only its owner can read (chmod "
		       "600)",
		       path);
		close(fd);
		return NULL;
	}
	close(fd);
	s = read_all(path, &len, 256);
	if (!s || !len) {
		pr_err("--push-auth %s: empty", path);
		free(s);
		return NULL;
	}
	s[strcspn(s, "\r\n")] = 0;
	return s;
}

struct pusher *push_open(const struct push_opts *o)
{
	struct pusher *p = xcalloc(1, sizeof(*p));
	char host[256] = "", *raw, *esc;
	size_t len = strlen(o->url);

	p->o = *o;
	p->dirfd = -1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	if (strncmp(o->url, "http://", 7) && strncmp(o->url, "https://", 8)) {
		pr_err("--push %s: not an http:// or https:// URL", o->url);
		goto fail;
	}
	while (len && o->url[len - 1] == '/')
		len--;
	p->url = strndup(o->url, len);
	if (o->auth_file) {
		char *secret = read_secret(o->auth_file);

		if (!secret)
			goto fail;
		if (!strncmp(secret, "Bearer ", 7)) {
			p->bearer = xstrdup(secret + 7);
			free(secret);
		} else if (strchr(secret, ':')) {
			p->userpwd = secret;
		} else {
			pr_err("--push-auth %s: neither 'Bearer TOKEN' nor 'USER:PASSWORD'",
			       o->auth_file);
			free(secret);
			goto fail;
		}
	}
	if (mkdir(o->spool, 0700) && errno != EEXIST) {
		pr_err("--push-spool %s: %s", o->spool, strerror(errno));
		goto fail;
	}
	p->dirfd = open(o->spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->dirfd < 0 || faccessat(p->dirfd, ".", W_OK | X_OK, AT_EACCESS)) {
		pr_err("--push-spool %s: not a writable directory", o->spool);
		goto fail;
	}
	if (!curl_load())
		goto fail;
	if (lc.global_init(CURL_GLOBAL_DEFAULT)) {
		pr_err("--push: cannot initialize libcurl");
		goto fail;
	}
	p->curl = true;
	gethostname(host, sizeof(host) - 1);
	text_clean(host, strlen(host));
	raw = xasprintf("%s{host=%s}", o->app, host[0] ? host : "unknown");
	esc = lc.easy_escape(NULL, raw, 0);
	free(raw);
	if (!esc)
		goto fail;
	p->name = xstrdup(esc);
	lc.free(esc);
	return p;
fail:
	push_close(p, 0);
	return NULL;
}

static size_t discard(void *buf, size_t size, size_t n, void *ctx)
{
	(void)buf;
	(void)ctx;
	return size * n;
}

/*
 * POST spooled interval NAME: 0 when the server took it, 1 when it refused
 * it for good (a 4xx but 408 and 429), -1 to try again later (WHY says).
 */
static int send_one(struct pusher *p, const char *name, char *why, size_t len)
{
	char url[1024], path[4096];
	long long from, until;
	curl_mimepart *part;
	struct curl_slist *hdrs = NULL;
	curl_mime *mime;
	long status = 0;
	CURLcode rc;
	CURL *c;

	spool_name(name, &from, &until);
	snprintf(url, sizeof(url), "%s/ingest?name=%s&from=%lld&until=%lld&format=pprof", p->url,
		 p->name, from, until);
	snprintf(path, sizeof(path), "%s/%s", p->o.spool, name);
	c = lc.easy_init();
	if (!c) {
		snprintf(why, len, "cannot make a request");
		return -1;
	}
	mime = lc.mime_init(c);
	part = lc.mime_addpart(mime);
	lc.mime_name(part, "profile");
	lc.mime_filename(part, "profile.pb.gz");
	lc.mime_type(part, "application/octet-stream");
	if (lc.mime_filedata(part, path) != CURLE_OK) {
		lc.mime_free(mime);
		lc.easy_cleanup(c);
		snprintf(why, len, "cannot read it");
		return 1;
	}
	if (p->o.tenant) {
		char *h = xasprintf("X-Scope-OrgID: %s", p->o.tenant);

		hdrs = lc.slist_append(hdrs, h);
		free(h);
	}
	lc.easy_setopt(c, CURLOPT_URL, url);
	lc.easy_setopt(c, CURLOPT_MIMEPOST, mime);
	lc.easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	lc.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	lc.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	lc.easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L);
	lc.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	lc.easy_setopt(c, CURLOPT_USERAGENT, "qemu-jitbpf");
	lc.easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	if (p->bearer) {
		lc.easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
		lc.easy_setopt(c, CURLOPT_XOAUTH2_BEARER, p->bearer);
	} else if (p->userpwd) {
		lc.easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
		lc.easy_setopt(c, CURLOPT_USERPWD, p->userpwd);
	}
	rc = lc.easy_perform(c);
	if (rc == CURLE_OK)
		lc.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	lc.slist_free_all(hdrs);
	lc.mime_free(mime);
	lc.easy_cleanup(c);
	if (rc != CURLE_OK) {
		snprintf(why, len, "%s", lc.easy_strerror(rc));
		return -1;
	}
	if (status >= 200 && status < 300)
		return 0;
	snprintf(why, len, "HTTP %ld", status);
	return status >= 400 && status < 500 && status != 408 && status != 429 ? 1 : -1;
}

/* Wait up to MS, less if woken; under the lock. */
static void nap(struct pusher *p, uint64_t ms)
{
	struct timespec ts = realtime_in_ms(ms);

	pthread_cond_timedwait(&p->wake, &p->lock, &ts);
}

static void *sender(void *arg)
{
	struct pusher *p = arg;
	uint64_t backoff = 0;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		char why[128], name[SPOOL_NAME + 1];
		size_t n;
		char **v;
		int r;

		if (p->stopping && now_ms() >= p->deadline_ms)
			break;
		pthread_mutex_unlock(&p->lock);
		v = spool_list(p, &n);
		pthread_mutex_lock(&p->lock);
		if (!n) {
			free_list(v, n);
			if (p->stopping)
				break;
			nap(p, 1000);
			continue;
		}
		snprintf(name, sizeof(name), "%s", v[0]);
		free_list(v, n);
		snprintf(p->sending, sizeof(p->sending), "%s", name);
		pthread_mutex_unlock(&p->lock);
		r = send_one(p, name, why, sizeof(why));
		if (r >= 0)
			unlinkat(p->dirfd, name, 0);
		pthread_mutex_lock(&p->lock);
		p->sending[0] = 0;
		if (r == 0) {
			p->sent++;
			backoff = 0;
			if (p->down)
				pr_warn("push: %s takes profiles again", p->url);
			p->down = false;
			continue;
		}
		if (r == 1) {
			p->rejected++;
			pr_warn("push: %s refused the interval %s (%s); dropped", p->url, name,
				why);
			continue;
		}
		p->failures++;
		if (!p->down)
			pr_warn("push: cannot send to %s (%s); intervals wait in %s", p->url, why,
				p->o.spool);
		p->down = true;
		backoff = backoff ? backoff * 2 : BACKOFF_MIN_MS;
		if (backoff > BACKOFF_MAX_MS)
			backoff = BACKOFF_MAX_MS;
		if (p->stopping && now_ms() + backoff >= p->deadline_ms)
			break;
		nap(p, backoff);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int push_start(struct pusher *p)
{
	int err = pthread_create(&p->thread, NULL, sender, p);

	if (err) {
		pr_err("push: cannot start the sender: %s", strerror(err));
		return -err;
	}
	p->started = true;
	return 0;
}

int push_interval(struct pusher *p, const struct profile *prof, time_t from, time_t until)
{
	char name[SPOOL_NAME + 1];
	struct safe_file sf;
	size_t n;
	size_t total;
	char **v;
	int err;

	snprintf(name, sizeof(name), SPOOL_FMT, (long long)from, (long long)until);
	err = safe_file_create_at(&sf, p->dirfd, name, 0600, (uid_t)-1, (gid_t)-1);
	if (err)
		return err;
	err = pprof_write(prof, sf.f);
	if (err) {
		safe_file_abort(&sf);
		return err;
	}
	err = safe_file_commit(&sf);
	if (err)
		return err;
	/* A full spool loses its oldest: the newest tell most. */
	v = spool_list(p, &n);
	total = n;
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; n > p->o.spool_max && i < total; i++) {
		if (!strcmp(v[i], p->sending))
			continue;
		if (!unlinkat(p->dirfd, v[i], 0)) {
			p->dropped++;
			pr_warn("push: the spool holds %u intervals: dropped %s (%" PRIu64
				" dropped so far)",
				p->o.spool_max, v[i], p->dropped);
		}
		n--;
	}
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	free_list(v, total);
	return 0;
}

void push_close(struct pusher *p, unsigned int timeout_ms)
{
	size_t left = 0;
	char **kept;

	if (!p)
		return;
	if (p->started) {
		pthread_mutex_lock(&p->lock);
		p->stopping = true;
		p->deadline_ms = now_ms() + timeout_ms;
		pthread_cond_signal(&p->wake);
		pthread_mutex_unlock(&p->lock);
		pthread_join(p->thread, NULL);
		kept = spool_list(p, &left);
		free_list(kept, left);
		fprintf(stderr,
			"qemu-jitbpf: push: %" PRIu64
			" intervals sent to %s, %zu waiting in %s, %" PRIu64
			" dropped (spool full), %" PRIu64 " refused\n",
			p->sent, p->url, left, p->o.spool, p->dropped, p->rejected);
	}
	if (p->curl)
		lc.global_cleanup();
	if (p->dirfd >= 0)
		close(p->dirfd);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->wake);
	free(p->url);
	free(p->name);
	free(p->bearer);
	free(p->userpwd);
	free(p);
}
