#!/usr/bin/env python3
"""Print how many distinct colours a PNG has and the share of its pixels
that differ from its most common colour: a blank page has 1 and 0.0.
With R,G,B, print how many pixels have that colour instead.
Decodes 8-bit RGB/RGBA PNGs (what chromium writes) with zlib only."""
import struct
import sys
import zlib


def pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit("%s: not a PNG" % path)
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    if depth != 8 or ctype not in (2, 6):
        sys.exit("%s: colour type %d depth %d not handled" % (path, ctype, depth))
    bpp = 3 if ctype == 2 else 4
    raw, stride, prev, out = zlib.decompress(idat), w * bpp, None, []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        prev = prev or bytearray(stride)
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out.extend(bytes(line[i:i + 3]) for i in range(0, stride, bpp))
        prev = line
    return out


px = pixels(sys.argv[1])
if len(sys.argv) > 2:
    want = bytes(int(c) for c in sys.argv[2].split(","))
    print(sum(1 for p in px if p == want))
    sys.exit(0)
counts = {}
for p in px:
    counts[p] = counts.get(p, 0) + 1
top = max(counts.values())
print(len(counts), "%.3f" % (1 - top / len(px)))
