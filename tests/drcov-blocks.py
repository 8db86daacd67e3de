#!/usr/bin/python3
# Read a drcov file (version 2 or 3, module tables 2 to 5) as its readers
# do (DynamoRIO's drcovlib format; Lighthouse splits module rows on ", "
# and takes the last field as the path) and print each block:
#   PATH START SIZE
# START the block's address (the module's base plus the block's offset),
# in hex.  With ELF, print instead the functions (nm's, with sizes) that
# the blocks of ELF's module start in, as a disassembler that puts the
# module's base at the page of ELF's first PT_LOAD segment sees them.
# Bad input is an exception.
import struct
import subprocess
import sys

with open(sys.argv[1], "rb") as f:
    data = f.read()
pos = 0


def line():
    global pos
    end = data.index(b"\n", pos)
    text = data[pos:end].decode()
    pos = end + 1
    return text


version = int(line().split(":")[1])
assert version in (2, 3), version
assert line().startswith("DRCOV FLAVOR:")
head = line()
assert head.startswith("Module Table: version "), head
table, count = head.split(": ")[1].split(", ")
table, count = int(table.split(" ")[1]), int(count.split(" ")[1])
assert table in (2, 3, 4, 5), table
columns = line().split(": ")[1].split(", ")
base_col = columns.index("base" if "base" in columns else "start")
modules = {}
for _ in range(count):
    fields = line().split(", ")
    assert len(fields) == len(columns), fields
    modules[int(fields[0])] = (fields[-1], int(fields[base_col], 16))
head = line()
assert head.startswith("BB Table: ") and head.endswith(" bbs"), head
n = int(head.split(" ")[2])
assert len(data) - pos == 8 * n, (len(data) - pos, n)
blocks = [struct.unpack_from("<IHH", data, pos + 8 * i) for i in range(n)]
if len(sys.argv) < 3:
    for start, size, mod in blocks:
        path, base = modules[mod]
        print("%s %x %d" % (path, base + start, size))
    sys.exit(0)
elf = sys.argv[2]
phdrs = subprocess.run(["readelf", "-lW", elf], capture_output=True, text=True).stdout
lo = next(int(l.split()[2], 16) for l in phdrs.splitlines() if l.split()[:1] == ["LOAD"])
syms = []
for opts in (["-S"], ["-D", "-S"]):
    out = subprocess.run(["nm", "--defined-only"] + opts + [elf], capture_output=True, text=True)
    for l in out.stdout.splitlines():
        f = l.split()
        if len(f) == 4 and f[2] in "tTwWiu":
            syms.append((int(f[0], 16), int(f[1], 16), f[3].split("@")[0]))
    if syms:
        break
names = set()
for start, size, mod in blocks:
    path, base = modules[mod]
    if path != elf:
        continue
    link = start + (lo & ~0xFFF)
    names.update(name for a, s, name in syms if a <= link < a + s)
print("\n".join(sorted(names)))
