#!/usr/bin/env python3
"""Requests to the push stand-ins, right and wrong, for tests/push.bats:
each prints the answer as "STATUS BODY" (for gRPC-Web, the trailer's
"grpc-status N MESSAGE").

  send.py profile [--age S] [--samples N] [--bytes N] > FILE.pb.gz
      a gzipped pprof of process_cpu, its time S seconds ago, N samples,
      a function name of N bytes
  send.py connect URL FILE [--label k=v]... [--no-name]
  send.py ingest URL FILE [--name N] [--multipart] [--no-format]
  send.py parca URL FILE [--label k=v]... [--no-name] [--raw]
"""
import gzip
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(num, v):
    if isinstance(v, int):
        return varint(num << 3) + varint(v)
    if isinstance(v, str):
        v = v.encode()
    return varint(num << 3 | 2) + varint(len(v)) + v


def profile(age, samples, name_bytes):
    strings = ['', 'samples', 'count', 'cpu', 'nanoseconds', 'f' * name_bytes, 'comm', 'prog']
    p = field(1, field(1, 1) + field(2, 2)) + field(1, field(1, 3) + field(2, 4))
    p += field(5, field(1, 1) + field(2, 5))             # Function 1
    for i in range(samples):
        p += field(4, field(1, i + 1) + field(4, field(1, 1)))   # Location i+1 -> f
        p += field(2, field(1, i + 1) + field(2, 1) + field(2, 10000000)
                   + field(3, field(1, 6) + field(2, 7)))
    for s in strings:
        p += field(6, s)
    p += field(9, time.time_ns() - int(age * 1e9)) + field(10, 10**9)
    p += field(11, field(1, 3) + field(2, 4)) + field(12, 10000000)
    return gzip.compress(p)


def post(url, body, ctype, headers=()):
    req = urllib.request.Request(url, data=body, method='POST')
    req.add_header('Content-Type', ctype)
    for k, v in headers:
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def opt(args, name, default=None):
    return args[args.index(name) + 1] if name in args else default


def labels(args, name_label):
    ls = [] if '--no-name' in args else [('__name__', 'process_cpu')]
    ls += [(name_label, 'test')]
    ls += [tuple(a.split('=', 1)) for i, a in enumerate(args) if i and args[i - 1] == '--label']
    return ls


def main(args):
    if args[0] == 'profile':
        sys.stdout.buffer.write(profile(float(opt(args, '--age', 0)), int(opt(args, '--samples', 3)),
                                        int(opt(args, '--bytes', 4))))
        return
    kind, url, data = args[0], args[1], open(args[2], 'rb').read()
    if kind == 'connect':
        series = b''.join(field(1, field(1, k) + field(2, v)) for k, v in labels(args, 'service_name'))
        body = field(1, series + field(2, field(1, data)))
        st, out, _ = post(url + '/push.v1.PusherService/Push', body, 'application/proto',
                          [('Connect-Protocol-Version', '1')])
    elif kind == 'ingest':
        q = f"name={urllib.request.quote(opt(args, '--name', 'app'))}&from=1&until=2"
        if '--no-format' not in args:
            q += '&format=pprof'
        if '--multipart' in args:
            b = 'qjboundary'
            body = (f'--{b}\r\nContent-Disposition: form-data; name="profile"; '
                    f'filename="profile.pb.gz"\r\nContent-Type: application/octet-stream\r\n\r\n'
                    ).encode() + data + f'\r\n--{b}--\r\n'.encode()
            ctype = f'multipart/form-data; boundary={b}'
        else:
            body, ctype = data, 'application/octet-stream'
        st, out, _ = post(url + '/ingest?' + q, body, ctype)
    else:
        set_ = b''.join(field(1, field(1, k) + field(2, v)) for k, v in labels(args, 'job'))
        raw = data if '--raw' not in args else b'\x1f\x8bnot gzip'
        msg = field(2, field(1, set_) + field(2, field(1, raw)))
        st, out, hdrs = post(url + '/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw',
                             b'\0' + len(msg).to_bytes(4, 'big') + msg, 'application/grpc-web+proto')
        if 'Grpc-Status' in hdrs:
            msg = urllib.parse.unquote(hdrs.get('Grpc-Message', ''))
            print(f"{st} grpc-status {hdrs['Grpc-Status']} {msg}")
            return
        i = 0
        while i + 5 <= len(out):
            n = int.from_bytes(out[i + 1:i + 5], 'big')
            if out[i] & 0x80:
                t = dict(map(str.strip, line.split(':', 1)) for line in out[i + 5:i + 5 + n].decode().split('\r\n') if line)
                print(f"{st} grpc-status {t.get('grpc-status')} {t.get('grpc-message', '')}")
                return
            i += 5 + n
        print(f'{st} no trailer')
        return
    print(st, out.decode(errors='replace'))


main(sys.argv[1:])
