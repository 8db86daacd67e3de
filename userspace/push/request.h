/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The requests of the fleet stores' ingest APIs, and what their answers
 * mean (docs/design/production.md, "Pushing profiles"):
 *
 *   pyroscope         Grafana Pyroscope's connect API (Alloy's
 *                     pyroscope.write): POST /push.v1.PusherService/Push,
 *                     a PushRequest in protobuf, the series' labels as
 *                     explicit pairs, errors as connect codes.
 *   pyroscope-ingest  Pyroscope's HTTP ingest API, for servers older than
 *                     the connect API: POST /ingest?name=APP{labels}&
 *                     from=&until=&format=pprof, the gzipped pprof as the
 *                     whole body (not a multipart form: with format=pprof
 *                     Pyroscope decodes the body itself).
 *   parca             Parca's ProfileStoreService/WriteRaw over gRPC-Web,
 *                     which Parca serves beside gRPC on its HTTP port.
 */
#ifndef QJ_PUSH_REQUEST_H
#define QJ_PUSH_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/pbwire.h"

enum push_api {
	PUSH_PYROSCOPE,
	PUSH_PYROSCOPE_INGEST,
	PUSH_PARCA,
};

/* The API named S; false if none is. */
bool push_api_parse(const char *s, enum push_api *api);
const char *push_api_name(enum push_api api);

/*
 * Whether NAME may be the service's name on every API: Pyroscope's
 * /ingest takes [A-Za-z0-9_.\-/] only, and a label value at most 2048
 * bytes; WHY says what is wrong.
 */
bool push_app_valid(const char *name, char *why, size_t len);

/* The series' own labels; the samples carry comm, qemu and arch. */
struct push_series {
	const char *app;  /* service_name (Pyroscope), job (Parca) */
	const char *host; /* host (Pyroscope), node (Parca) */
	/* __name__, the profile type: process_cpu, or wall for a wall-clock
	 * profile (Pyroscope's pkg/og/convert/pprof/profile.go metricName
	 * names those by the sample types the same way) */
	const char *name;
};

struct push_request {
	char *url; /* malloc'd */
	const char *content_type;
	const char *header; /* one more header, or NULL */
	struct pbuf body;
	bool body_is_profile; /* the body is PROFILE itself, not in BODY */
};

/*
 * The request that sends PROFILE (LEN bytes of gzipped pprof, the
 * interval [FROM, UNTIL) in unix seconds) to the server at BASE (no
 * trailing slash).  ESCAPE URL-escapes a string (malloc'd).
 */
void push_request_make(struct push_request *r, enum push_api api, const char *base,
		       const struct push_series *s, long long from, long long until,
		       const uint8_t *profile, size_t len, char *(*escape)(const char *s));
void push_request_free(struct push_request *r);

enum push_verdict {
	PUSH_TAKEN,   /* the server has it */
	PUSH_RETRY,   /* not now: try again later */
	PUSH_REFUSED, /* the server calls it invalid: never */
};

/*
 * What the answer means: the HTTP STATUS, the gRPC status from a
 * grpc-status header (GRPC_HDR, -1 if none) and the first LEN bytes of
 * the BODY.  WHY gets the server's own words.
 */
enum push_verdict push_answer(enum push_api api, long status, int grpc_hdr, const char *grpc_msg,
			      const uint8_t *body, size_t len, char *why, size_t whylen);

#endif
