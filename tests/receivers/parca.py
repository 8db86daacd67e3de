#!/usr/bin/env python3
"""A stand-in for Parca's profile store, for tests/push.bats.

No Parca server runs here.  Every decision this receiver makes is ported
from Parca's own code, parca-dev/parca at
3b5647cd9e2a6527d9c31d7d68ccf6409a57ae00 (read 2026-11-28):

  pkg/server/server.go grpcHandlerFunc       a request whose Content-Type
      starts with application/grpc goes to gRPC-Web (improbable-eng's
      grpc-web v0.15.0, WrapServer) on the HTTP port; a call that
      succeeds answers HTTP 200, its message's frame and a trailer frame
      (flags 0x80: "grpc-status: 0\\r\\n"); one that fails, HTTP 200 with
      Grpc-Status and a percent-encoded Grpc-Message as headers and no
      body (grpc-go handler_server.go, grpc-web grpc_web_response.go)
  pkg/server/server.go                       grpc.MaxRecvMsgSize 64 MiB
      (debuginfo.MaxMsgSize): a larger message, ResourceExhausted (8)
  proto/parca/profilestore/v1alpha1/profilestore.proto  WriteRawRequest
      {repeated RawProfileSeries series = 2}, RawProfileSeries {LabelSet
      labels = 1; repeated RawSample samples = 2}, LabelSet {repeated
      Label labels = 1}, RawSample {bytes raw_profile = 1}
  pkg/normalizer/normalizer.go NormalizeWriteRawRequest  labels other
      than __name__ must be valid label names ([a-zA-Z_][a-zA-Z0-9_]*,
      model.LabelName.IsValid: prometheus/common's default UTF-8 scheme,
      any non-empty UTF-8) and not repeated, __name__ is required, all
      InvalidArgument (3); a raw_profile that starts 1f 8b is gunzipped, a
      failure a plain error (Unknown, 2); one that does not parse, or that
      ValidatePprofProfile refuses, InvalidArgument
  pkg/normalizer/validate.go ValidatePprofProfile  string_table[0] empty,
      ids sequential, indices within the tables, as many values as sample
      types
  pkg/profilestore/profilecolumnstore.go writeSeries  the profile type
      NAME:TYPE:UNIT:PERIOD_TYPE:PERIOD_UNIT must parse as a PromQL metric
      selector (a plain error: Unknown)
  The series is the request's labels only: the pprof's sample labels are
      not kept (normalizer.go: their keys become columns, their values are
      never written); nothing is refused for its age.

It keeps what it took as OUT/NNNN.pb.gz and a line in OUT/log:
"TIME_NANOS DURATION_NANOS SAMPLES parca - LABELS"; each refusal,
"STATUS MESSAGE" in OUT/refused.

Usage: parca.py PORT OUT   (listens on 127.0.0.1)
"""
import http.server
import os
import re
import sys
import threading
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wire  # noqa: E402

PORT, OUT = int(sys.argv[1]), sys.argv[2]
PATH = '/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw'
MAX_MSG = 64 << 20
METRIC = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*$')
OK, UNKNOWN, INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNIMPLEMENTED = 0, 2, 3, 8, 12
lock = threading.Lock()


class Refusal(Exception):
    def __init__(self, code, msg):
        super().__init__(msg)
        self.code, self.msg = code, msg


def validate(p):
    """validate.go ValidatePprofProfile (what our decoder keeps of it)."""
    if p.strings and p.strings[0] != '':
        raise Refusal(INVALID_ARGUMENT, 'invalid profile: first item in string table is '
                      f'expected to be empty string, but it is "{p.strings[0]}"')
    for i, x in enumerate(p.functions):
        if x != i + 1:
            raise Refusal(INVALID_ARGUMENT, 'invalid profile: function id is not sequential')
    for i, x in enumerate(p.locations):
        if x != i + 1:
            raise Refusal(INVALID_ARGUMENT, 'invalid profile: location id is not sequential')
    if not p.sample_types and p.samples:
        raise Refusal(INVALID_ARGUMENT, 'invalid profile: missing sample type information')
    for t, u in p.sample_types:
        if t >= len(p.strings) or u >= len(p.strings):
            raise Refusal(INVALID_ARGUMENT, 'invalid profile: sample type has invalid index')
    for s in p.samples:
        if len(s['values']) != len(p.sample_types):
            raise Refusal(INVALID_ARGUMENT, 'invalid profile: sample values and types differ')


def write_raw(req):
    series = wire.raw_series(req, 2, True)
    taken = []
    for labels, samples in series:
        ls, name = {}, ''
        for k, v in labels:
            if k == '__name__':
                name = v
                continue
            if not k:
                raise Refusal(INVALID_ARGUMENT, f'invalid label name: {k}')
            if k in ls:
                raise Refusal(INVALID_ARGUMENT, f'duplicate label name: {k}')
            ls[k] = v
        if not name:
            raise Refusal(INVALID_ARGUMENT, 'missing __name__ label')
        for raw in samples:
            if raw[:2] == b'\x1f\x8b':
                try:
                    raw = wire.gunzip_maybe(raw)
                except wire.DecodeError as e:
                    raise Refusal(UNKNOWN, f'decompressing profile: {e}')
            try:
                p = wire.Profile(raw)
            except wire.DecodeError as e:
                raise Refusal(INVALID_ARGUMENT, f'failed to parse profile: {e}')
            validate(p)
            for t, u in p.sample_types:
                ptype = f'{name}:{p.string(t)}:{p.string(u)}'
                if not METRIC.match(ptype):
                    raise Refusal(UNKNOWN, f'invalid profile type ({ptype})')
            taken.append((ls, name, p, raw))
    return taken


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def grpc_answer(self, code, msg):
        self.send_response(200)
        self.send_header('Content-Type', 'application/grpc-web+proto')
        if code != OK:
            with open(os.path.join(OUT, 'refused'), 'a') as f:
                f.write(f'{code} {msg}\n')
            self.send_header('Grpc-Status', str(code))
            self.send_header('Grpc-Message', urllib.parse.quote(msg, safe=' '))
            self.send_header('Content-Length', '0')
            self.end_headers()
            return
        trailer = b'grpc-status: 0\r\n'
        body = b'\x00\x00\x00\x00\x00' + b'\x80' + len(trailer).to_bytes(4, 'big') + trailer
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        n = int(self.headers.get('Content-Length', 0))
        data = self.rfile.read(n)
        if not self.headers.get('Content-Type', '').startswith('application/grpc'):
            self.send_response(404)
            self.send_header('Content-Length', '0')
            self.end_headers()
            return
        if self.path != PATH:
            return self.grpc_answer(UNIMPLEMENTED, f'unknown method {self.path}')
        if len(data) < 5 or data[0] & 1 or int.from_bytes(data[1:5], 'big') != len(data) - 5:
            return self.grpc_answer(INVALID_ARGUMENT, 'malformed gRPC-Web frame')
        if len(data) - 5 > MAX_MSG:
            return self.grpc_answer(RESOURCE_EXHAUSTED, 'grpc: received message larger than max')
        try:
            taken = write_raw(data[5:])
        except wire.DecodeError as e:
            return self.grpc_answer(INVALID_ARGUMENT, f'grpc: error unmarshalling request: {e}')
        except Refusal as r:
            return self.grpc_answer(r.code, r.msg)
        with lock:
            for ls, name, p, raw in taken:
                k = len([f for f in os.listdir(OUT) if f.endswith('.pb.gz')])
                with open(os.path.join(OUT, f'{k:04d}.pb.gz'), 'wb') as f:
                    f.write(wire.gzip.compress(raw))
                own = ','.join(f'{a}={b}' for a, b in sorted({**ls, '__name__': name}.items()))
                with open(os.path.join(OUT, 'log'), 'a') as f:
                    f.write(f'{p.time_nanos} {p.duration_nanos} {len(p.samples)} parca - {own}\n')
        self.grpc_answer(OK, '')

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(('127.0.0.1', PORT), Handler).serve_forever()
