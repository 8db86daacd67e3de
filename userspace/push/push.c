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
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * A spooled part of an interval: FROM-UNTIL-PART.pb.gz, unix seconds,
 * zero-padded so that names sort as times do (FROM-UNTIL.pb.gz, a whole
 * interval, from before intervals had parts, is read too).
 */
#define SPOOL_FMT      "%012lld-%012lld-%03u.pb.gz"
#define SPOOL_NAME     35 /* its length */
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
	char sending[SPOOL_NAME + 1];
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

/* Whether S is a spooled part's name, and of which interval. */
static bool spool_name(const char *s, long long *from, long long *until)
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

/* The spool's parts, oldest first; *N of them (free each, and it). */
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

static char *escape(const char *s)
{
	char *e = lc.easy_escape(NULL, s, 0), *r = xstrdup(e ? e : "");

	lc.free(e);
	return r;
}

struct pusher *push_open(const struct push_opts *o)
{
	struct pusher *p = xcalloc(1, sizeof(*p));
	char host[256] = "", why[128];
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
	if (!push_app_valid(o->app, why, sizeof(why))) {
		pr_err("--push-app '%s': %s", o->app, why);
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
	struct push_series series = {p->o.app, p->host};
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
		char why[512], name[SPOOL_NAME + 1];
		enum push_verdict v;
		uint64_t wait;
		long asked;
		size_t n;
		char **list;

		if (p->stopping && now_ms() >= p->deadline_ms)
			break;
		pthread_mutex_unlock(&p->lock);
		list = spool_list(p, &n);
		pthread_mutex_lock(&p->lock);
		if (n && expire(p, list, n)) {
			free_list(list, n);
			continue;
		}
		if (!n) {
			free_list(list, n);
			if (p->stopping)
				break;
			nap(p, 1000);
			continue;
		}
		snprintf(name, sizeof(name), "%s", list[0]);
		free_list(list, n);
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

/*
 * Spool stacks [FIRST, FIRST + N) of PROF as parts *PART on: halves of
 * them, and halves again, until each fits the servers' limits.
 */
static int spool_parts(struct pusher *p, const struct profile *prof, size_t first, size_t n,
		       time_t from, time_t until, int64_t time_nanos, unsigned int *part)
{
	struct profile view = *prof;
	size_t raw = 0, len = 0;
	struct pprof_opts o = {.cgroup_root = true, .raw_len = &raw, .time_nanos = time_nanos};
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
	if (!err && n > 1 && (n > p->o.max_samples || raw > PART_MAX_BYTES)) {
		free(buf);
		err = spool_parts(p, prof, first, n / 2, from, until, time_nanos, part);
		if (!err)
			err = spool_parts(p, prof, first + n / 2, n - n / 2, from, until,
					  time_nanos, part);
		return err;
	}
	if (!err && *part >= SPOOL_PARTS)
		err = -E2BIG;
	if (!err) {
		snprintf(name, sizeof(name), SPOOL_FMT, (long long)from, (long long)until,
			 (*part)++);
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

int push_interval(struct pusher *p, const struct profile *prof, time_t from, time_t until)
{
	/* Parca makes series of a request's labels only: a part for each
	 * set of sample labels, which the request names. */
	bool group = p->o.api == PUSH_PARCA && prof->n;
	struct profile sorted = *prof;
	/* The parts of an interval are of one time. */
	int64_t t = profile_time_nanos(prof);
	unsigned int parts = 0;
	size_t n, a = 0, b;
	size_t total;
	char **v;
	int err = 0;

	if (group) {
		sorted.v = xmalloc(prof->n * sizeof(*sorted.v));
		memcpy(sorted.v, prof->v, prof->n * sizeof(*sorted.v));
		sort_array(sorted.v, prof->n, sizeof(*sorted.v), cmp_labels);
	}
	do {
		b = group ? a + 1 : prof->n;
		while (group && b < prof->n && !cmp_labels(&sorted.v[a], &sorted.v[b]))
			b++;
		err = spool_parts(p, &sorted, a, b - a, from, until, t, &parts);
		a = b;
	} while (!err && a < prof->n);
	if (group)
		free(sorted.v);
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
			pr_warn("push: the spool holds %u parts: dropped %s (%" PRIu64
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
