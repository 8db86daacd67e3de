#!/usr/bin/env python3
"""Check the source lines of a jitdump against elfutils' eu-addr2line.

Usage: jitdump-lines.py JITDUMP PERFMAP ELF SYMFILE
       jitdump-lines.py --files JITDUMP


PERFMAP is the tool's --perfmap-insn map of the same run: it names each
guest instruction's host code "SYMBOL+0xOFF".  The jitdump's debug entries
give that host code a file and line.  eu-addr2line -e ELF is asked for each
SYMBOL+0xOFF whose SYMBOL is a function named once in SYMFILE (ELF, or its
debug file), not an IFUNC, and must give the same line and the same file (it may put the
compilation directory in front).  Host addresses that the run used twice
(code-cache flushes) are left out.  Prints "N checked, M differ" and fails
if any differ or none could be checked.  With --files, print the file of
each debug entry of JITDUMP instead."""
import collections
import struct
import subprocess
import sys


def debug_entries(path):
    """(host address, file, line) of each JIT_CODE_DEBUG_INFO entry."""
    data = open(path, "rb").read()
    pos = struct.unpack_from("<I", data, 8)[0]
    while pos + 16 <= len(data):
        rid, size = struct.unpack_from("<II", data, pos)
        if size < 16:
            sys.exit("%s: record of %d bytes at %d" % (path, size, pos))
        if rid == 2:  # JIT_CODE_DEBUG_INFO
            n = struct.unpack_from("<Q", data, pos + 24)[0]
            q = pos + 32
            for _ in range(n):
                addr, line = struct.unpack_from("<Qi", data, q)
                end = data.index(b"\0", q + 16)
                yield addr, data[q + 16:end].decode(), line
                q = end + 1
        pos += size


def jitdump_lines(path):
    seen = collections.Counter()
    lines = {}
    for addr, file, line in debug_entries(path):
        seen[addr] += 1
        lines[addr] = (file, line)
    return {a: v for a, v in lines.items() if seen[a] == 1}


def perfmap_names(path):
    seen = collections.Counter()
    names = {}
    for text in open(path):
        addr, _, name = text.rstrip("\n").split(" ", 2)
        addr = int(addr, 16)
        seen[addr] += 1
        names[addr] = name
    return {a: v for a, v in names.items() if seen[a] == 1}


def unique_functions(path):
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True,
                         text=True, check=True).stdout
    syms = [f for f in (l.split() for l in out.splitlines()) if len(f) == 3]
    count = collections.Counter(f[2] for f in syms if f[1] in "tTwW")
    # An IFUNC's name is its resolver's, and the tool may give it to the
    # code the resolver chose.
    ifuncs = {f[2] for f in syms if f[1] == "i"}
    return {name for name, n in count.items() if n == 1 and name not in ifuncs}


def main():
    if sys.argv[1] == "--files":
        for _, file, _ in debug_entries(sys.argv[2]):
            print(file)
        return
    jitdump, perfmap, elf, symfile = sys.argv[1:5]
    lines = jitdump_lines(jitdump)
    names = perfmap_names(perfmap)
    funcs = unique_functions(symfile)
    asked = {}
    for addr, name in names.items():
        sym, plus, off = name.rpartition("+0x")
        if plus and sym in funcs and addr in lines:
            asked[name] = lines[addr]
    if not asked:
        sys.exit("no instruction of a function of %s has a line" % elf)
    keys = sorted(asked)
    out = subprocess.run(["eu-addr2line", "-e", elf], input="\n".join(keys) + "\n",
                         capture_output=True, text=True).stdout.splitlines()
    if len(out) != len(keys):
        sys.exit("eu-addr2line answered %d of %d" % (len(out), len(keys)))
    differ = 0
    for key, answer in zip(keys, out):
        file, line = asked[key]
        parts = answer.split(":")
        ok = (len(parts) >= 2 and parts[1] == str(line)
              and (parts[0] == file or parts[0].endswith("/" + file)))
        if not ok:
            differ += 1
            if differ <= 5:
                print("%s: jitdump %s:%d, eu-addr2line %s" % (key, file, line, answer))
    print("%d checked, %d differ" % (len(keys), differ))
    sys.exit(1 if differ else 0)


main()
