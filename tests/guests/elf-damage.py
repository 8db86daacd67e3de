#!/usr/bin/env python3
"""Damage a 64-bit little-endian ELF file for tests/hostile.bats.

elf-damage.py MODE IN OUT
  symtab    .symtab's size and offset point past the end of the file
  strtab    .strtab shrinks to one byte: every symbol's name is out of it
  tail      the file ends with its last PT_LOAD segment: section headers,
            symbols and DWARF are cut off, as a truncation leaves it
"""
import os
import struct
import sys


def sections(b):
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    strtab_off, = struct.unpack_from("<Q", b, shoff + shstrndx * shentsize + 0x18)
    for i in range(shnum):
        h = shoff + i * shentsize
        name_off, = struct.unpack_from("<I", b, h)
        end = b.index(b"\0", strtab_off + name_off)
        yield b[strtab_off + name_off:end].decode(), h


def main():
    mode, src, dst = sys.argv[1:4]
    b = bytearray(open(src, "rb").read())
    if mode == "tail":
        phoff, = struct.unpack_from("<Q", b, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", b, 0x36)
        end = 0
        for i in range(phnum):
            p = phoff + i * phentsize
            ptype, = struct.unpack_from("<I", b, p)
            off, = struct.unpack_from("<Q", b, p + 8)
            filesz, = struct.unpack_from("<Q", b, p + 0x20)
            if ptype == 1:
                end = max(end, off + filesz)
        b = b[:end]
    else:
        want = ".symtab" if mode == "symtab" else ".strtab"
        for name, h in sections(b):
            if name == want:
                if mode == "symtab":
                    struct.pack_into("<QQ", b, h + 0x18, len(b) - 8, 1 << 40)
                else:
                    struct.pack_into("<Q", b, h + 0x20, 1)
                break
        else:
            sys.exit("no %s in %s" % (want, src))
    open(dst, "wb").write(b)
    os.chmod(dst, 0o755)


main()
