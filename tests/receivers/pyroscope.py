#!/usr/bin/env python3
"""A stand-in for Grafana Pyroscope's ingest endpoint, for tests/push.bats.

It checks each request as Pyroscope's ingest handler parses it
(pkg/ingestion: POST /ingest with the query name=APP{k=v,...}, from and
until in unix seconds, format=pprof, and the gzipped pprof as the
multipart form field "profile"), answers 200, or 400 for what the handler
would refuse, 401 without the expected Authorization, and keeps each
profile it took in OUT/NNNN-FROM-UNTIL.pb.gz with a line in OUT/log:
"FROM UNTIL NAME TENANT".

Usage: pyroscope-receiver.py PORT OUT [AUTHORIZATION]
Listens on 127.0.0.1 only.
"""
import email.parser
import gzip
import http.server
import os
import re
import sys
import urllib.parse

PORT, OUT = int(sys.argv[1]), sys.argv[2]
AUTH = sys.argv[3] if len(sys.argv) > 3 else None
NAME = re.compile(r'^[A-Za-z0-9_.\-]+(\{([A-Za-z0-9_.\-]+=[^,{}]*)(,[A-Za-z0-9_.\-]+=[^,{}]*)*\})?$')


class Ingest(http.server.BaseHTTPRequestHandler):
    def refuse(self, code, why):
        with open(os.path.join(OUT, 'refused'), 'a') as f:
            f.write(f'{code} {why}\n')
        self.send_response(code)
        self.end_headers()
        self.wfile.write(why.encode())

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path != '/ingest':
            return self.refuse(404, 'no such endpoint')
        if AUTH and self.headers.get('Authorization') != AUTH:
            return self.refuse(401, 'unauthorized')
        q = urllib.parse.parse_qs(url.query, strict_parsing=True)
        if any(len(v) != 1 for v in q.values()):
            return self.refuse(400, 'repeated parameter')
        q = {k: v[0] for k, v in q.items()}
        if not NAME.match(q.get('name', '')):
            return self.refuse(400, 'bad name ' + q.get('name', ''))
        try:
            start, end = int(q['from']), int(q['until'])
        except (KeyError, ValueError):
            return self.refuse(400, 'bad from/until')
        if start > end or q.get('format') != 'pprof':
            return self.refuse(400, 'bad range or format')
        ctype = self.headers.get('Content-Type', '')
        if not ctype.startswith('multipart/form-data'):
            return self.refuse(400, 'not multipart: ' + ctype)
        body = self.rfile.read(int(self.headers.get('Content-Length', 0)))
        msg = email.parser.BytesParser().parsebytes(
            b'Content-Type: ' + ctype.encode() + b'\r\n\r\n' + body)
        parts = {p.get_param('name', header='content-disposition'): p
                 for p in msg.get_payload()} if msg.is_multipart() else {}
        if 'profile' not in parts:
            return self.refuse(400, 'no profile field')
        data = parts['profile'].get_payload(decode=True)
        try:
            raw = gzip.decompress(data)
        except OSError:
            return self.refuse(400, 'profile is not gzip')
        if not raw:
            return self.refuse(400, 'empty profile')
        n = len([f for f in os.listdir(OUT) if f.endswith('.pb.gz')])
        with open(os.path.join(OUT, f'{n:04d}-{start}-{end}.pb.gz'), 'wb') as f:
            f.write(data)
        with open(os.path.join(OUT, 'log'), 'a') as f:
            f.write(f"{start} {end} {q['name']} {self.headers.get('X-Scope-OrgID', '-')}\n")
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.HTTPServer(('127.0.0.1', PORT), Ingest).serve_forever()
