// SPDX-License-Identifier: GPL-2.0-or-later
#include "push/push.h"
#include "push/spool.h"
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
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* Waits between tries while the server does not take them, as Alloy's
 * pyroscope.write (write.go: min_backoff_period, max_backoff_period). */
#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 300000
/* What of an answer's body is kept for its message. */
#define ANSWER_MAX 4096

struct pusher {
	struct push_opts o;
	char *url;    /* base URL, no trailing slash */
	char *host;   /* this host's name */
	char *bearer; /* or */
	char *userpwd;
	int dirfd;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping;
	uint64_t deadline_ms; /* when stopping: give up then */
	char sending[SPOOL_NAME_MAX + 1];
	uint64_t sent, dropped, rejected, expired, failures;
	bool down; /* said so; said again when it is back */
	bool curl;
	unsigned int seed; /* the backoff's jitter */
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
		FN(global_init, "curl_global_init"),   FN(global_cleanup, "curl_global_cleanup"),
		FN(easy_init, "curl_easy_init"),       FN(easy_setopt, "curl_easy_setopt"),
		FN(easy_perform, "curl_easy_perform"), FN(easy_getinfo, "curl_easy_getinfo"),
		FN(easy_cleanup, "curl_easy_cleanup"), FN(easy_strerror, "curl_easy_strerror"),
		FN(easy_escape, "curl_easy_escape"),   FN(free, "curl_free"),
		FN(slist_append, "curl_slist_append"), FN(slist_free_all, "curl_slist_free_all"),
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

static char *escape(const char *s)
{
	char *e = lc.easy_escape(NULL, s, 0), *r = xstrdup(e ? e : "");

	lc.free(e);
	return r;
}

struct pusher *push_open(const struct push_opts *o)
{
	struct pusher *p = xcalloc(1, sizeof(*p));
	char host[256] = "";
	size_t len = strlen(o->url);

	p->o = *o;
	p->dirfd = -1;
	p->seed = (unsigned int)(mono_ns() ^ (uint64_t)getpid());
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
		/* A bare name is a credential systemd passes the service
		 * (LoadCredential=), in its CREDENTIALS_DIRECTORY. */
		const char *creds = getenv("CREDENTIALS_DIRECTORY");
		char *path = !strchr(o->auth_file, '/') && creds
				     ? xasprintf("%s/%s", creds, o->auth_file)
				     : xstrdup(o->auth_file);
		char *secret = read_secret(path);

		free(path);

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
	/* A label's value: never empty, never ',' or '}' (/ingest's name). */
	host[strcspn(host, ",{}")] = 0;
	p->host = xstrdup(host[0] ? host : "unknown");
	return p;
fail:
	push_close(p, 0);
	return NULL;
}

/* An answer: its body's start, and what its headers say. */
struct answer {
	uint8_t body[ANSWER_MAX];
	size_t len;
	long retry_after_ms; /* -1: not said */
	int grpc_status;     /* -1: none */
	char grpc_message[256];
};

static size_t on_body(void *buf, size_t size, size_t n, void *ctx)
{
	struct answer *a = ctx;
	size_t len = size * n, take = len < ANSWER_MAX - a->len ? len : ANSWER_MAX - a->len;

	memcpy(a->body + a->len, buf, take);
	a->len += take;
	return len;
}

/* Retry-After: delay-seconds, or an HTTP-date (RFC 9110, 10.2.3). */
static long retry_after_ms(const char *v)
{
	struct tm tm = {0};
	char *end;
	long s = strtol(v, &end, 10);
	time_t t;

	if (end != v && (!*end || *end == '\r' || *end == '\n'))
		return s < 0 ? 0 : s * 1000;
	if (!strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm))
		return -1;
	t = timegm(&tm) - time(NULL);
	return t < 0 ? 0 : (long)t * 1000;
}

/* gRPC's Grpc-Message header is percent-encoded (its HTTP/2 spec). */
static void percent_decode(char *out, size_t len, const char *s)
{
	size_t n = 0;

	for (; *s && n + 1 < len; s++) {
		unsigned int c;

		if (*s == '%' && sscanf(s + 1, "%2x", &c) == 1 && s[1] && s[2]) {
			out[n++] = (char)c;
			s += 2;
		} else {
			out[n++] = *s;
		}
	}
	out[n] = 0;
	text_clean(out, n);
}

static size_t on_header(char *buf, size_t size, size_t n, void *ctx)
{
	struct answer *a = ctx;
	size_t len = size * n;
	char line[512];

	snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) ? len : sizeof(line) - 1),
		 buf);
	line[strcspn(line, "\r\n")] = 0;
	if (!strncasecmp(line, "Retry-After:", 12))
		a->retry_after_ms = retry_after_ms(line + 12 + strspn(line + 12, " \t"));
	else if (!strncasecmp(line, "grpc-status:", 12))
		a->grpc_status = atoi(line + 12);
	else if (!strncasecmp(line, "grpc-message:", 13))
		percent_decode(a->grpc_message, sizeof(a->grpc_message),
			       line + 13 + strspn(line + 13, " \t"));
	return len;
}

/*
 * Send spooled part NAME.  WHY says why it was not taken; *WAIT_MS, what
 * the server asked us to wait (Retry-After), or -1.
 */
static enum push_verdict send_one(struct pusher *p, const char *name, char *why, size_t len,
				  long *wait_ms)
{
	struct push_series series = {p->o.app, p->host, p->o.wall ? "wall" : "process_cpu"};
	struct answer *a = xcalloc(1, sizeof(*a));
	struct push_request r;
	char path[4096], ctype[128];
	long long from, until;
	struct curl_slist *hdrs = NULL;
	enum push_verdict v;
	long status = 0;
	uint8_t *profile;
	size_t plen;
	CURLcode rc;
	CURL *c;

	*wait_ms = -1;
	a->retry_after_ms = -1;
	a->grpc_status = -1;
	spool_name(name, &from, &until);
	snprintf(path, sizeof(path), "%s/%s", p->o.spool, name);
	profile = (uint8_t *)read_all(path, &plen, 1 << 16);
	if (!profile) {
		snprintf(why, len, "cannot read it: %s", strerror(errno));
		free(a);
		return PUSH_REFUSED;
	}
	push_request_make(&r, p->o.api, p->url, &series, from, until, profile, plen, escape);
	c = lc.easy_init();
	if (!c) {
		snprintf(why, len, "cannot make a request");
		push_request_free(&r);
		free(profile);
		free(a);
		return PUSH_RETRY;
	}
	snprintf(ctype, sizeof(ctype), "Content-Type: %s", r.content_type);
	hdrs = lc.slist_append(hdrs, ctype);
	if (r.header)
		hdrs = lc.slist_append(hdrs, r.header);
	if (p->o.tenant) {
		char *h = xasprintf("X-Scope-OrgID: %s", p->o.tenant);

		hdrs = lc.slist_append(hdrs, h);
		free(h);
	}
	lc.easy_setopt(c, CURLOPT_URL, r.url);
	lc.easy_setopt(c, CURLOPT_POST, 1L);
	lc.easy_setopt(c, CURLOPT_POSTFIELDS, r.body_is_profile ? profile : r.body.p);
	lc.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
		       (curl_off_t)(r.body_is_profile ? plen : r.body.len));
	lc.easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	lc.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	lc.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	lc.easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L);
	lc.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	lc.easy_setopt(c, CURLOPT_USERAGENT, "qemu-jitbpf");
	lc.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	lc.easy_setopt(c, CURLOPT_WRITEDATA, a);
	lc.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	lc.easy_setopt(c, CURLOPT_HEADERDATA, a);
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
	lc.easy_cleanup(c);
	if (rc != CURLE_OK) {
		snprintf(why, len, "%s", lc.easy_strerror(rc));
		v = PUSH_RETRY;
	} else {
		v = push_answer(p->o.api, status, a->grpc_status, a->grpc_message, a->body, a->len,
				why, len);
		*wait_ms = a->retry_after_ms;
	}
	push_request_free(&r);
	free(profile);
	free(a);
	return v;
}

/* Wait up to MS, less if woken; under the lock. */
static void nap(struct pusher *p, uint64_t ms)
{
	struct timespec ts = realtime_in_ms(ms);

	pthread_cond_timedwait(&p->wake, &p->lock, &ts);
}

/*
 * Drop the parts of V (N, oldest first) that the server would refuse as
 * too old: it takes a profile only while its time is less than max_age
 * ago (Pyroscope: validate.go, reject-older-than), and the time of a
 * part is at or after its FROM; a minute in sixty is kept for the
 * transfer and the clocks.  How many it dropped; under the lock.
 */
static size_t expire(struct pusher *p, char **v, size_t n)
{
	long long from, until, oldest = (long long)time(NULL) - p->o.max_age + p->o.max_age / 60;
	size_t i, gone = 0;

	for (i = 0; i < n; i++) {
		if (!spool_name(v[i], &from, &until) || from > oldest)
			break;
		if (!strcmp(v[i], p->sending) || unlinkat(p->dirfd, v[i], 0))
			continue;
		gone++;
	}
	if (gone) {
		p->expired += gone;
		pr_warn("push: dropped %zu intervals' parts older than %us, which %s would refuse "
			"(%" PRIu64 " so far)",
			gone, p->o.max_age, p->url, p->expired);
	}
	return gone;
}

static void *sender(void *arg)
{
	struct pusher *p = arg;
	uint64_t backoff = 0;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		char why[512], name[SPOOL_NAME_MAX + 1];
		enum push_verdict v;
		uint64_t wait;
		long asked;
		size_t n;
		char **list;

		if (p->stopping && now_ms() >= p->deadline_ms)
			break;
		pthread_mutex_unlock(&p->lock);
		list = spool_list(p->dirfd, &n);
		pthread_mutex_lock(&p->lock);
		if (n && expire(p, list, n)) {
			spool_list_free(list, n);
			continue;
		}
		if (!n) {
			spool_list_free(list, n);
			if (p->stopping)
				break;
			nap(p, 1000);
			continue;
		}
		snprintf(name, sizeof(name), "%s", list[0]);
		spool_list_free(list, n);
		snprintf(p->sending, sizeof(p->sending), "%s", name);
		pthread_mutex_unlock(&p->lock);
		v = send_one(p, name, why, sizeof(why), &asked);
		if (v != PUSH_RETRY)
			unlinkat(p->dirfd, name, 0);
		pthread_mutex_lock(&p->lock);
		p->sending[0] = 0;
		if (v == PUSH_TAKEN) {
			p->sent++;
			backoff = 0;
			if (p->down)
				pr_warn("push: %s takes profiles again", p->url);
			p->down = false;
			continue;
		}
		if (v == PUSH_REFUSED) {
			p->rejected++;
			pr_warn("push: %s refused %s (%s); dropped (%" PRIu64 " so far)", p->url,
				name, why, p->rejected);
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
		/* A quarter either way, so that a fleet's agents do not all
		 * come back at once; at least what the server asked. */
		wait = backoff * 3 / 4 + (uint64_t)rand_r(&p->seed) % (backoff / 2 + 1);
		if (asked >= 0 && (uint64_t)asked > wait)
			wait = (uint64_t)asked;
		if (p->stopping && now_ms() + wait >= p->deadline_ms)
			break;
		nap(p, wait);
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
	size_t n;
	size_t total;
	char **v;
	/* Parca makes series of a request's labels only: a part for each
	 * set of sample labels, which the request names. */
	int err = spool_interval(p->dirfd, prof, from, until, p->o.max_samples,
				 p->o.api == PUSH_PARCA);

	if (err)
		return err;
	/* A full spool loses its oldest: the newest tell most. */
	v = spool_list(p->dirfd, &n);
	total = n;
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; n > p->o.spool_max && i < total; i++) {
		if (!strcmp(v[i], p->sending))
			continue;
		if (!unlinkat(p->dirfd, v[i], 0)) {
			p->dropped++;
			pr_warn("push: the spool holds %u parts: dropped %s (%" PRIu64
				" dropped so far)",
				p->o.spool_max, v[i], p->dropped);
		}
		n--;
	}
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	spool_list_free(v, total);
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
		kept = spool_list(p->dirfd, &left);
		spool_list_free(kept, left);
		fprintf(stderr,
			"qemu-jitbpf: push: %" PRIu64
			" parts sent to %s, %zu waiting in %s, %" PRIu64
			" dropped (spool full), %" PRIu64 " too old, %" PRIu64 " refused\n",
			p->sent, p->url, left, p->o.spool, p->dropped, p->expired, p->rejected);
	}
	if (p->curl)
		lc.global_cleanup();
	if (p->dirfd >= 0)
		close(p->dirfd);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->wake);
	free(p->url);
	free(p->host);
	free(p->bearer);
	free(p->userpwd);
	free(p);
}
