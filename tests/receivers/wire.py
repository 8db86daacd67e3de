"""Protocol buffers' wire format and pprof's profile.proto, decoded as the
receivers' servers decode them: for the stand-ins of tests/push.bats.

Only what the servers' decisions need is decoded; a message that does not
decode raises DecodeError, as the servers' generated decoders fail.
"""
import gzip


class DecodeError(Exception):
    pass


def varint(b, i):
    v = shift = 0
    while True:
        if i >= len(b) or shift > 63:
            raise DecodeError('truncated varint')
        c = b[i]
        i += 1
        v |= (c & 0x7f) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def fields(b):
    """(field number, wire type, value) of each field of message B; a
    length-delimited value is bytes, a varint an int."""
    i, out = 0, []
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise DecodeError('illegal tag 0')
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            if i + 8 > len(b):
                raise DecodeError('truncated fixed64')
            v, i = int.from_bytes(b[i:i + 8], 'little'), i + 8
        elif wt == 2:
            n, i = varint(b, i)
            if i + n > len(b):
                raise DecodeError('truncated bytes')
            v, i = bytes(b[i:i + n]), i + n
        elif wt == 5:
            if i + 4 > len(b):
                raise DecodeError('truncated fixed32')
            v, i = int.from_bytes(b[i:i + 4], 'little'), i + 4
        else:
            raise DecodeError(f'proto: wrong wireType = {wt} for field {num}')
        out.append((num, wt, v))
    return out


def expect(wt, want, what):
    if wt != want:
        raise DecodeError(f'proto: wrong wireType = {wt} for field {what}')


def text(v, what):
    try:
        return v.decode('utf-8')
    except UnicodeDecodeError:
        raise DecodeError(f'{what}: invalid UTF-8')


def packed(wt, v):
    """A repeated varint field: packed (bytes) or one value."""
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def gunzip_maybe(b):
    """As pprof.RawFromBytes: gzip if it has gzip's header, else as is."""
    if b[:2] == b'\x1f\x8b':
        try:
            return gzip.decompress(b)
        except (OSError, EOFError) as e:
            raise DecodeError(f'gzip: {e}')
    return b


class Profile:
    """The parts of profile.proto the servers check."""

    def __init__(self, raw):
        self.raw = raw
        self.strings, self.samples, self.sample_types = [], [], []
        self.locations, self.functions = [], []
        self.time_nanos = self.duration_nanos = 0
        for num, wt, v in fields(raw):
            if num == 1:      # ValueType sample_type
                expect(wt, 2, 'SampleType')
                vt = {n: x for n, _, x in fields(v)}
                self.sample_types.append((vt.get(1, 0), vt.get(2, 0)))
            elif num == 2:    # Sample
                expect(wt, 2, 'Sample')
                s = {'locs': [], 'values': [], 'labels': []}
                for n, w, x in fields(v):
                    if n == 1:
                        s['locs'] += packed(w, x)
                    elif n == 2:
                        s['values'] += [y - (1 << 64) if y >> 63 else y for y in packed(w, x)]
                    elif n == 3:
                        expect(w, 2, 'Label')
                        lab = {m: y for m, _, y in fields(x)}
                        s['labels'].append((lab.get(1, 0), lab.get(2, 0), lab.get(3, 0)))
                self.samples.append(s)
            elif num == 4:    # Location
                expect(wt, 2, 'Location')
                self.locations.append({n: x for n, _, x in fields(v) if n == 1}.get(1, 0))
            elif num == 5:    # Function
                expect(wt, 2, 'Function')
                self.functions.append({n: x for n, _, x in fields(v) if n == 1}.get(1, 0))
            elif num == 6:    # string_table
                expect(wt, 2, 'StringTable')
                self.strings.append(text(v, 'string_table'))
            elif num == 9:
                self.time_nanos = v - (1 << 64) if v >> 63 else v
            elif num == 10:
                self.duration_nanos = v

    def string(self, i):
        if not 0 <= i < len(self.strings):
            raise DecodeError(f'string index {i} out of range')
        return self.strings[i]


def label_pairs(b, what):
    """LabelPair / Label {string name = 1; string value = 2}."""
    d = {}
    for num, wt, v in fields(b):
        if num in (1, 2):
            expect(wt, 2, what)
            d[num] = text(v, what)
    return d.get(1, ''), d.get(2, '')


def raw_series(req, field, label_set):
    """The RawProfileSeries of a push request, FIELD of it, as
    [(labels, raw profiles)]: Pyroscope's {repeated LabelPair labels = 1;
    repeated RawSample samples = 2}, or Parca's, whose labels are a
    LabelSet (LABEL_SET) {repeated Label labels = 1}; RawSample {bytes
    raw_profile = 1}."""
    out = []
    for num, wt, s in fields(req):
        if num != field:
            continue
        expect(wt, 2, 'Series')
        labels, samples = [], []
        for n, w, x in fields(s):
            if n == 1:
                expect(w, 2, 'Labels')
                pairs = [y for m, _, y in fields(x) if m == 1] if label_set else [x]
                labels += [label_pairs(y, 'Label') for y in pairs]
            elif n == 2:
                expect(w, 2, 'Samples')
                samples += [y for m, _, y in fields(x) if m == 1]
        out.append((labels, samples))
    return out
