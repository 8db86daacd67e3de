#!/usr/bin/env python3
"""A stand-in for Grafana Pyroscope's ingestion, for tests/push.bats.

No Pyroscope server runs here.  Every decision this receiver makes is
ported from Pyroscope's own code, grafana/pyroscope at
3fe6a457a32004efc46da819cbc114472d07415e (read 2026-11-28), with the
connect-go it pins (v1.19.2, 1c195ae986164a681af958e675dd283eed23e365):

  POST /push.v1.PusherService/Push (the connect API)
    api/push/v1/push.proto                    the messages
    connect-go protocol_connect.go            application/proto, the
        optional Connect-Protocol-Version (must be 1), errors as JSON
        {"code", "message"} with connectCodeToHTTP's status; 415 for a
        content type no protocol takes; 405 for another method
    pkg/distributor/distributor.go Push       a raw_profile that does not
        decode: unknown (500); over max_profile_size_bytes:
        invalid_argument; no profile: invalid_argument "no profiles
        received"
  POST /ingest (the HTTP API)
    pkg/ingester/pyroscope/ingest_handler.go  format=pprof takes the whole
        body as the pprof, whatever the content type (a multipart body then
        fails to decode: 422); without a format, multipart/form-data's
        "profile" file part; a bad name 400; any other failure 422,
        resource_exhausted 429; success 200 with no body
    api/model/labelset/labelset.go, validate.go  the name's grammar
    pkg/og/util/attime/attime.go             from/until never fail
    pkg/og/convert/pprof/profile.go           __name__ from the sample
        types (process_cpu), service_name from the name, labels from the
        name but those starting with __
  Both, distributor.go pushSeries, in its order:
    service_name defaults to unknown_service
    the rate limiter: ingestion_rate_mb 4 per second, burst 2 MiB, counted
        as the profile's size plus its labels' (a request beyond the burst
        never passes): resource_exhausted
    pkg/validation/validate.go ValidateProfile: the ingestion window
        (reject-older-than 1h, reject-newer-than 10m, against time_nanos),
        16 000 samples, 100 labels per sample, malformed profiles
    pkg/pprof/pprof.go Normalize: numeric sample labels dropped
    pkg/model/pprofsplit: samples grouped by their string labels, which
        join the series' labels (the series' own win)
    validate.go ValidateLabels: at most 30 labels, __name__ required,
        names up to 1024 bytes, values up to 2048, no duplicates
    pkg/ingester/limiter.go: 5 000 active series per tenant, a series
        active for 10 minutes (resource_exhausted)

Pyroscope itself checks no credentials; a gateway in front does.  Given
AUTHORIZATION, this receiver answers 401 to a request without that
Authorization header, as such a gateway would.

It keeps each profile it took as OUT/NNNN.pb.gz (as received) and a line
in OUT/log: "TIME_NANOS DURATION_NANOS SAMPLES API TENANT LABELS", LABELS
the series' own (name=value,... sorted); each series the split made, as a
line "TIME_NANOS LABELS" in OUT/series; each refusal, "STATUS MESSAGE" in
OUT/refused.

The environment may configure it as a server can be: MAX_SAMPLES, a
tenant's max_profile_stacktrace_samples; and BUSY=N:SECONDS puts a busy
gateway in front, which answers the first N requests 429 with
"Retry-After: SECONDS".  Each request's arrival (monotonic seconds) and
status go to OUT/arrivals.

Usage: pyroscope.py PORT OUT [AUTHORIZATION]   (listens on 127.0.0.1)
"""
import email.parser
import http.server
import json
import os
import re
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wire  # noqa: E402

OUT = AUTH = None

MiB = 1 << 20
# pkg/validation/limits.go defaults.
MAX_PROFILE_SIZE = 4 * MiB
MAX_SAMPLES = int(os.environ.get('MAX_SAMPLES', 16000))
MAX_SAMPLE_LABELS = 100
MAX_LABELS = 30
MAX_NAME_LEN, MAX_VALUE_LEN = 1024, 2048
REJECT_OLDER, REJECT_NEWER = 3600e9, 600e9
RATE, BURST = 4 * MiB, 2 * MiB
MAX_SERIES, SERIES_ACTIVE = 5000, 600

# connect-go protocol_connect.go connectCodeToHTTP.
HTTP_OF = {'canceled': 499, 'unknown': 500, 'invalid_argument': 400,
           'deadline_exceeded': 504, 'not_found': 404, 'already_exists': 409,
           'permission_denied': 403, 'resource_exhausted': 429,
           'failed_precondition': 400, 'aborted': 409, 'out_of_range': 400,
           'unimplemented': 501, 'internal': 500, 'unavailable': 503,
           'data_loss': 500, 'unauthenticated': 401}
# pkg/util/connectgrpc HTTPToCode, for /ingest's error bodies.
CODE_OF = {400: 'invalid_argument', 413: 'invalid_argument', 429: 'resource_exhausted',
           499: 'canceled', 502: 'unavailable', 503: 'unavailable', 504: 'deadline_exceeded'}

SERVICE_RUNE = re.compile(r'[A-Za-z0-9_.\-/]')
LABEL_NAME = re.compile(r'^[A-Za-z0-9_.]+$')

BUSY_N, _, BUSY_S = os.environ.get('BUSY', '0:0').partition(':')
busy = [int(BUSY_N), BUSY_S]

lock = threading.Lock()
tokens = {}        # tenant -> (tokens, at)
active = {}        # (tenant, labels) -> last seen


class Refusal(Exception):
    def __init__(self, code, msg):
        super().__init__(msg)
        self.code, self.msg = code, msg


def rate_limit(tenant, n):
    """x/time/rate's AllowN: never more than the burst at once."""
    now = time.monotonic()
    have, at = tokens.get(tenant, (BURST, now))
    have = min(BURST, have + (now - at) * RATE)
    if n > BURST or n > have:
        tokens[tenant] = (have, now)
        raise Refusal('resource_exhausted',
                      f'push rate limit ({RATE // MiB} MiB/s) exceeded while adding {n} bytes')
    tokens[tenant] = (have - n, now)


def validate_profile(p, labels):
    """validate.go ValidateProfile."""
    if not p.sample_types:
        raise Refusal('invalid_argument', 'malformed_profile: empty profile')
    now = time.time_ns()
    if p.time_nanos > 0 and not (now - REJECT_OLDER < p.time_nanos < now + REJECT_NEWER):
        raise Refusal('invalid_argument',
                      f"profile with labels '{labels}' is outside of ingestion window "
                      f"(profile timestamp: {p.time_nanos})")
    if len(p.samples) > MAX_SAMPLES:
        raise Refusal('invalid_argument',
                      f'profile has {len(p.samples)} samples, max {MAX_SAMPLES}')
    if not p.strings or p.strings[0] != '':
        raise Refusal('invalid_argument', 'malformed_profile: string 0 should be empty')
    for t, u in p.sample_types:
        if '-' in p.string(t) or '-' in p.string(u):
            raise Refusal('invalid_argument', 'malformed_profile: sample type contains -')
    if any(x == 0 for x in p.locations) or any(x == 0 for x in p.functions):
        raise Refusal('invalid_argument', 'malformed_profile: id 0')
    for s in p.samples:
        if len(s['labels']) > MAX_SAMPLE_LABELS:
            raise Refusal('invalid_argument', 'too many labels in a sample')
        if len(s['values']) != len(p.sample_types):
            raise Refusal('invalid_argument', 'malformed_profile: values and sample types')
        for k, v, _ in s['labels']:
            p.string(k)
            p.string(v)


def validate_labels(ls):
    """validate.go ValidateLabels (label sanitization off, the default)."""
    names = [n for n, _ in ls]
    if not ls:
        raise Refusal('invalid_argument', 'missing_labels')
    if len(ls) > MAX_LABELS:
        raise Refusal('invalid_argument', f"invalid labels '{ls}' with error: too many labels")
    if not dict(ls).get('__name__'):
        raise Refusal('invalid_argument', f"invalid labels '{ls}' with error: invalid metric name")
    if len(set(names)) != len(names):
        raise Refusal('invalid_argument', f"duplicate_label_names: {ls}")
    for n, v in ls:
        if not n or len(n) > MAX_NAME_LEN:
            raise Refusal('invalid_argument', f"label name '{n}' invalid or too long")
        if not v or len(v) > MAX_VALUE_LEN:
            raise Refusal('invalid_argument', f"label value of '{n}' empty or too long")


def split(p, series):
    """Normalize (numeric labels out) and pprofsplit: the series each
    group of samples makes, their string labels joining the series'."""
    own = dict(series)
    groups = set()
    for s in p.samples:
        extra = tuple(sorted((p.string(k), p.string(v)) for k, v, _ in s['labels']
                             if v and p.string(k) not in ('trace_id', 'span_id')))
        groups.add(extra)
    out = []
    for g in sorted(groups) or [()]:
        ls = dict(own)
        for k, v in g:
            ls.setdefault(k, v)
        out.append(sorted(ls.items()))
    return out


def series_limit(tenant, sets):
    """pkg/ingester/limiter.go: a series is active for 10 minutes."""
    now = time.monotonic()
    for k in [k for k, t in active.items() if now - t > SERIES_ACTIVE]:
        del active[k]
    new = [s for s in sets if (tenant, str(s)) not in active]
    if sum(1 for k in active if k[0] == tenant) + len(new) > MAX_SERIES:
        raise Refusal('resource_exhausted', 'per-user series limit of 5000 exceeded')
    for s in sets:
        active[(tenant, str(s))] = now


def take(api, tenant, series, raw_profile):
    """distributor.go pushSeries, in its order; the profile kept."""
    ls = list(series)
    if 'service_name' not in dict(ls):
        ls.append(('service_name', 'unknown_service'))
    raw = wire.gunzip_maybe(raw_profile)
    if len(raw) > MAX_PROFILE_SIZE:
        raise Refusal('invalid_argument',
                      f'uncompressed profile payload size exceeds limit of {MAX_PROFILE_SIZE} B')
    p = wire.Profile(raw)
    with lock:
        rate_limit(tenant, len(raw) + sum(len(n) + len(v) for n, v in ls))
    validate_profile(p, ls)
    sets = split(p, ls)
    for s in sets:
        validate_labels(s)
    with lock:
        series_limit(tenant, sets)
        n = len([f for f in os.listdir(OUT) if f.endswith('.pb.gz')])
        with open(os.path.join(OUT, f'{n:04d}.pb.gz'), 'wb') as f:
            f.write(raw_profile)
        own = ','.join(f'{k}={v}' for k, v in sorted(ls))
        with open(os.path.join(OUT, 'log'), 'a') as f:
            f.write(f'{p.time_nanos} {p.duration_nanos} {len(p.samples)} {api} {tenant} {own}\n')
        with open(os.path.join(OUT, 'series'), 'a') as f:
            for s in sets:
                f.write(f"{p.time_nanos} {','.join(f'{k}={v}' for k, v in s)}\n")


def parse_name(name):
    """labelset.Parse: APP{k=v,...}; keys [A-Za-z0-9_.]+, values to , or }."""
    app, _, rest = name.partition('{')
    app = app.strip()
    if not app:
        raise Refusal(400, 'name: service name is required')
    for c in app:
        if not SERVICE_RUNE.match(c):
            raise Refusal(400, f"name: invalid service name: {app}: character is not allowed: '{c}'")
    labels = {'__name__': app}
    if rest:
        body = rest.split('}', 1)[0]
        for pair in filter(None, body.split(',')):
            k, _, v = pair.partition('=')
            k = k.strip()
            if not k:
                raise Refusal(400, 'name: label name is required')
            if k != '__name__' and not LABEL_NAME.match(k):
                raise Refusal(400, f'name: invalid label name: {k}')
            labels[k] = v.strip()
    return labels


def metric_name(p):
    """profile.go metricName."""
    types = [p.string(t) for t, _ in p.sample_types]
    if 'wall' in types:
        return 'wall'
    for t in types:
        if 'cpu' in t:
            return 'process_cpu'
    return types[-1] if types else ''


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def answer(self, status, body=b'', ctype=None, why=None, headers=()):
        with open(os.path.join(OUT, 'arrivals'), 'a') as f:
            f.write(f'{time.monotonic():.3f} {status}\n')
        if why is not None:
            with open(os.path.join(OUT, 'refused'), 'a') as f:
                f.write(f'{status} {why}\n')
        self.send_response(status)
        if ctype:
            self.send_header('Content-Type', ctype)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def connect_error(self, code, msg):
        self.answer(HTTP_OF[code], json.dumps({'code': code, 'message': msg}).encode(),
                    'application/json', f'{code} {msg}')

    def http_error(self, status, msg):
        body = json.dumps({'code': CODE_OF.get(status, 'unknown'), 'message': msg}).encode()
        self.answer(status, body, 'application/json', msg)

    def body(self):
        return self.rfile.read(int(self.headers.get('Content-Length', 0)))

    def do_GET(self):
        self.answer(405, why='method not allowed')

    def do_POST(self):
        path = urllib.parse.urlsplit(self.path).path
        data = self.body()
        with lock:
            busy[0] -= 1
            if busy[0] >= 0:
                return self.answer(429, b'busy', 'text/plain', 'busy', [('Retry-After', busy[1])])
        if AUTH and self.headers.get('Authorization') != AUTH:
            return self.answer(401, b'no org id or credentials', why='unauthorized')
        tenant = self.headers.get('X-Scope-OrgID', 'anonymous')
        if path == '/push.v1.PusherService/Push':
            return self.push(tenant, data)
        if path in ('/ingest', '/pyroscope/ingest'):
            return self.ingest(tenant, data)
        self.answer(404, b'404 page not found\n', 'text/plain', 'no such endpoint ' + path)

    def push(self, tenant, data):
        ctype = self.headers.get('Content-Type', '').split(';')[0].strip()
        if ctype not in ('application/proto', 'application/json'):
            return self.answer(415, why='unsupported content type ' + ctype)
        if ctype == 'application/json':
            return self.connect_error('unimplemented', 'this stand-in decodes application/proto only')
        v = self.headers.get('Connect-Protocol-Version')
        if v is not None and v != '1':
            return self.connect_error('invalid_argument',
                                      f'connect-protocol-version must be "1": got "{v}"')
        if self.headers.get('Content-Encoding') == 'gzip':
            data = wire.gunzip_maybe(data)
        try:
            req = wire.raw_series(data, 1, False)
        except wire.DecodeError as e:
            return self.connect_error('invalid_argument', f'unmarshal message: {e}')
        if not any(samples for _, samples in req):
            return self.connect_error('invalid_argument', 'no profiles received')
        try:
            for labels, samples in req:
                for raw in samples:
                    take('push', tenant, labels, raw)
        except wire.DecodeError as e:
            return self.connect_error('unknown', str(e))
        except Refusal as r:
            return self.connect_error(r.code, r.msg)
        self.answer(200, b'', 'application/proto')

    def ingest(self, tenant, data):
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        q = {k: v[0] for k, v in q.items()}
        try:
            labels = parse_name(q.get('name', ''))
        except Refusal as r:
            return self.http_error(r.code, r.msg)
        ctype = self.headers.get('Content-Type', '')
        fmt = q.get('format', '')
        if fmt == 'pprof':
            profile = data
        elif fmt in ('trie', 'tree', 'lines', 'jfr', 'speedscope') or 'multipart/form-data' not in ctype:
            return self.http_error(422, f'this stand-in takes pprof only, not format "{fmt}"')
        else:
            msg = email.parser.BytesParser().parsebytes(
                b'Content-Type: ' + ctype.encode() + b'\r\n\r\n' + data)
            files = {p.get_param('name', header='content-disposition'): p
                     for p in (msg.get_payload() if msg.is_multipart() else [])
                     if p.get_param('filename', header='content-disposition')}
            if 'prev_profile' in files and files['prev_profile'].get_payload(decode=True):
                return self.http_error(422, 'unsupported client version')
            profile = files['profile'].get_payload(decode=True) if 'profile' in files else b''
            if not profile:
                return self.answer(200)   # "empty profile", logged, nothing stored
        try:
            p = wire.Profile(wire.gunzip_maybe(profile))
            series = [('__name__', metric_name(p)), ('__delta__', 'false'),
                      ('pyroscope_spy', q.get('spyName', 'unknown'))]
            series += [(k, v) for k, v in labels.items() if not k.startswith('__')]
            if 'service_name' not in labels:
                series.append(('service_name', labels['__name__']))
            take('ingest', tenant, series, profile)
        except wire.DecodeError as e:
            return self.http_error(422, str(e))
        except Refusal as r:
            return self.http_error(429 if r.code == 'resource_exhausted' else 422, r.msg)
        self.answer(200)

    def log_message(self, *args):
        pass


if __name__ == '__main__':
    OUT = sys.argv[2]
    AUTH = sys.argv[3] if len(sys.argv) > 3 else None
    http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), Handler).serve_forever()
