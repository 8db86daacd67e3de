// SPDX-License-Identifier: GPL-2.0-or-later
#include "push/request.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.pb-c.h"

static const char *const api_names[] = {
	[PUSH_PYROSCOPE] = "pyroscope",
	[PUSH_PYROSCOPE_INGEST] = "pyroscope-ingest",
	[PUSH_PARCA] = "parca",
};

bool push_api_parse(const char *s, enum push_api *api)
{
	for (size_t i = 0; i < sizeof(api_names) / sizeof(api_names[0]); i++)
		if (!strcmp(s, api_names[i])) {
			*api = (enum push_api)i;
			return true;
		}
	return false;
}

const char *push_api_name(enum push_api api)
{
	return api_names[api];
}

/*
 * grafana/pyroscope api/model/labelset/validate.go (3fe6a457),
 * ValidateServiceName: a letter, digit, '_', '.', '-' or '/', each; and
 * validate.go's ValidateLabels: a value of at most 2048 bytes.  Parca
 * takes any value.
 */
bool push_app_valid(const char *name, char *why, size_t len)
{
	size_t n = strlen(name);

	if (!n) {
		snprintf(why, len, "empty");
		return false;
	}
	if (n > 2048) {
		snprintf(why, len, "longer than 2048 bytes");
		return false;
	}
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("_.-/", *p))) {
			snprintf(why, len, "'%c' is not allowed: letters, digits and _ . - / only",
				 *p);
			return false;
		}
	return true;
}

/* Label NAME=VALUE as message FIELD of B: {string name = 1; string value = 2}. */
static void label(struct pbuf *b, unsigned int field, const char *name, const char *value)
{
	struct pbuf l = {0};

	pb_string(&l, 1, name);
	pb_string(&l, 2, value);
	pb_message(b, field, &l);
	pb_free(&l);
}

/*
 * grafana/pyroscope api/push/v1/push.proto (3fe6a457): PushRequest
 * {repeated RawProfileSeries series = 1}; RawProfileSeries {repeated
 * LabelPair labels = 1; repeated RawSample samples = 2}; RawSample {bytes
 * raw_profile = 1}.  __name__ is required (pkg/validation/validate.go).
 */
static void pyroscope_body(struct pbuf *b, const struct push_series *s, const uint8_t *profile,
			   size_t len)
{
	struct pbuf series = {0}, sample = {0};

	label(&series, 1, "__name__", s->name);
	label(&series, 1, "service_name", s->app);
	label(&series, 1, "host", s->host);
	pb_bytes(&sample, 1, profile, len);
	pb_message(&series, 2, &sample);
	pb_message(b, 1, &series);
	pb_free(&sample);
	pb_free(&series);
}

/*
 * parca-dev/parca proto/parca/profilestore/v1alpha1/profilestore.proto
 * (3b5647cd): WriteRawRequest {repeated RawProfileSeries series = 2};
 * RawProfileSeries {LabelSet labels = 1; repeated RawSample samples = 2};
 * LabelSet {repeated Label labels = 1}; RawSample {bytes raw_profile = 1}.
 * In a gRPC-Web frame: a flags byte (0, a message) and its length, big-
 * endian.
 */
/* PROFILE (gzipped, LEN bytes) unpacked, or NULL. */
static Perftools__Profiles__Profile *unpack(const uint8_t *profile, size_t len)
{
	Perftools__Profiles__Profile *p = NULL;
	z_stream z = {0};
	size_t cap = len * 4 + 4096, n = 0;
	uint8_t *raw = xmalloc(cap);
	int ret = Z_OK;

	z.next_in = (uint8_t *)profile;
	z.avail_in = (uInt)len;
	if (inflateInit2(&z, 15 + 32) != Z_OK) {
		free(raw);
		return NULL;
	}
	while (ret == Z_OK) {
		if (n == cap)
			raw = xrealloc(raw, cap *= 2);
		z.next_out = raw + n;
		z.avail_out = (uInt)(cap - n);
		ret = inflate(&z, Z_NO_FLUSH);
		n = cap - z.avail_out;
	}
	inflateEnd(&z);
	if (ret == Z_STREAM_END)
		p = perftools__profiles__profile__unpack(NULL, n, raw);
	free(raw);
	return p;
}

/*
 * Parca keeps no sample labels (pkg/normalizer/normalizer.go: their keys
 * become columns, their values are never written): a part's samples share
 * their string labels (push.c groups them so), and those go with the
 * series.
 */
static void sample_labels(struct pbuf *set, const uint8_t *profile, size_t len)
{
	Perftools__Profiles__Profile *p = unpack(profile, len);

	if (!p)
		return;
	if (p->n_sample)
		for (size_t i = 0; i < p->sample[0]->n_label; i++) {
			const Perftools__Profiles__Label *l = p->sample[0]->label[i];

			if (l->str > 0 && (size_t)l->str < p->n_string_table && l->key > 0 &&
			    (size_t)l->key < p->n_string_table)
				label(set, 1, p->string_table[l->key], p->string_table[l->str]);
		}
	perftools__profiles__profile__free_unpacked(p, NULL);
}

static void parca_body(struct pbuf *b, const struct push_series *s, const uint8_t *profile,
		       size_t len)
{
	struct pbuf req = {0}, series = {0}, set = {0}, sample = {0};
	uint8_t frame[5] = {0};

	label(&set, 1, "__name__", s->name);
	label(&set, 1, "job", s->app);
	label(&set, 1, "node", s->host);
	sample_labels(&set, profile, len);
	pb_message(&series, 1, &set);
	pb_bytes(&sample, 1, profile, len);
	pb_message(&series, 2, &sample);
	pb_message(&req, 2, &series);
	for (int i = 0; i < 4; i++)
		frame[1 + i] = (uint8_t)(req.len >> (24 - 8 * i));
	grow(&b->p, &b->cap, sizeof(frame) + req.len, 1);
	memcpy(b->p, frame, sizeof(frame));
	memcpy(b->p + sizeof(frame), req.p, req.len);
	b->len = sizeof(frame) + req.len;
	pb_free(&req);
	pb_free(&series);
	pb_free(&set);
	pb_free(&sample);
}

void push_request_make(struct push_request *r, enum push_api api, const char *base,
		       const struct push_series *s, long long from, long long until,
		       const uint8_t *profile, size_t len, char *(*escape)(const char *s))
{
	char *name, *esc;

	memset(r, 0, sizeof(*r));
	switch (api) {
	case PUSH_PYROSCOPE:
		r->url = xasprintf("%s/push.v1.PusherService/Push", base);
		r->content_type = "application/proto";
		r->header = "Connect-Protocol-Version: 1";
		pyroscope_body(&r->body, s, profile, len);
		break;
	case PUSH_PYROSCOPE_INGEST:
		/* Values end at ',' or '}' (labelset.Parse): a host name has
		 * neither. */
		name = xasprintf("%s{host=%s}", s->app, s->host);
		esc = escape(name);
		r->url = xasprintf("%s/ingest?name=%s&from=%lld&until=%lld&format=pprof"
				   "&spyName=qemu-jitbpf",
				   base, esc, from, until);
		free(esc);
		free(name);
		r->content_type = "application/octet-stream";
		r->body_is_profile = true;
		break;
	case PUSH_PARCA:
		r->url = xasprintf("%s/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw",
				   base);
		r->content_type = "application/grpc-web+proto";
		r->header = "X-Grpc-Web: 1";
		parca_body(&r->body, s, profile, len);
		break;
	}
}

void push_request_free(struct push_request *r)
{
	free(r->url);
	pb_free(&r->body);
}

/* The string value of "KEY" in JSON object BODY, into OUT; false if none. */
static bool json_string(const uint8_t *body, size_t len, const char *key, char *out, size_t outlen)
{
	char pat[32];
	const char *s = (const char *)body, *end = s + len, *p;
	size_t n = 0;

	snprintf(pat, sizeof(pat), "\"%s\"", key);
	p = memmem(s, len, pat, strlen(pat));
	if (!p)
		return false;
	p += strlen(pat);
	while (p < end && (*p == ' ' || *p == ':'))
		p++;
	if (p >= end || *p++ != '"')
		return false;
	for (; p < end && *p != '"' && n + 1 < outlen; p++) {
		if (*p == '\\' && p + 1 < end)
			p++;
		out[n++] = *p;
	}
	out[n] = 0;
	return true;
}

/*
 * gRPC-Web's trailers come last in the body, as a frame whose flags have
 * the high bit: "grpc-status: N\r\ngrpc-message: TEXT\r\n".
 */
static int grpc_trailer(const uint8_t *body, size_t len, char *msg, size_t msglen)
{
	size_t i = 0;

	while (i + 5 <= len) {
		size_t n = (size_t)body[i + 1] << 24 | (size_t)body[i + 2] << 16 |
			   (size_t)body[i + 3] << 8 | body[i + 4];
		const char *t = (const char *)body + i + 5, *p;
		char buf[512], *save = NULL;
		int st = -1;

		if (i + 5 + n > len)
			break;
		if (body[i] & 0x80) {
			snprintf(buf, sizeof(buf), "%.*s",
				 (int)(n < sizeof(buf) ? n : sizeof(buf) - 1), t);
			for (p = strtok_r(buf, "\r\n", &save); p;
			     p = strtok_r(NULL, "\r\n", &save)) {
				if (!strncasecmp(p, "grpc-status:", 12))
					st = atoi(p + 12);
				else if (!strncasecmp(p, "grpc-message:", 13))
					snprintf(msg, msglen, "%s", p + 13 + (p[13] == ' '));
			}
			return st;
		}
		i += 5 + n;
	}
	return -1;
}

/* gRPC's codes (google.golang.org/grpc/codes). */
enum {
	GRPC_OK = 0,
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_FAILED_PRECONDITION = 9,
	GRPC_OUT_OF_RANGE = 11,
};

enum push_verdict push_answer(enum push_api api, long status, int grpc_hdr, const char *grpc_msg,
			      const uint8_t *body, size_t len, char *why, size_t whylen)
{
	char code[64] = "", msg[384] = "";
	int st;

	if (api == PUSH_PARCA) {
		/* A gRPC-Web answer is HTTP 200, the call's own status in
		 * its headers (an answer of trailers only) or its trailer
		 * frame. */
		snprintf(msg, sizeof(msg), "%s", grpc_msg ? grpc_msg : "");
		st = grpc_hdr >= 0 ? grpc_hdr : grpc_trailer(body, len, msg, sizeof(msg));
		if (status == 200 && st == GRPC_OK)
			return PUSH_TAKEN;
		if (status != 200 || st < 0) {
			snprintf(why, whylen, "HTTP %ld, no gRPC status", status);
			return PUSH_RETRY;
		}
		snprintf(why, whylen, "gRPC status %d: %s", st, msg);
		return st == GRPC_INVALID_ARGUMENT || st == GRPC_FAILED_PRECONDITION ||
				       st == GRPC_OUT_OF_RANGE
			       ? PUSH_REFUSED
			       : PUSH_RETRY;
	}
	if (status >= 200 && status < 300)
		return PUSH_TAKEN;
	/* Connect's errors, and /ingest's: {"code": "...", "message": "..."}. */
	json_string(body, len, "code", code, sizeof(code));
	if (!json_string(body, len, "message", msg, sizeof(msg)))
		snprintf(msg, sizeof(msg), "%.*s", (int)(len < 200 ? len : 200),
			 (const char *)body);
	text_clean(msg, strlen(msg));
	snprintf(why, whylen, "HTTP %ld%s%s%s%s", status, code[0] ? " " : "", code,
		 msg[0] ? ": " : "", msg);
	/*
	 * What the server calls invalid is never taken: connect's
	 * invalid_argument, failed_precondition and out_of_range (HTTP 400,
	 * connect-go's protocol_connect.go), and /ingest's 400 (a bad name)
	 * and 422 (a body it cannot decode or validate; ingest_handler.go).
	 * Everything else may pass later (408, 429, 5xx as Alloy's
	 * pyroscope.write retries them; 401, 403, 404, 415 until the
	 * configuration is mended), until the interval is too old.
	 */
	return status == 400 || (api == PUSH_PYROSCOPE_INGEST && status == 422) ? PUSH_REFUSED
										: PUSH_RETRY;
}
