#!/usr/bin/python3
"""Check --stacks' JSON against what the guest said of itself.

usage: stacks-check.py STACKS.json GUEST-OUTPUT GUEST-ELF THREAD=SYSCALL/WCHAN[/FUNC[:LINE]]...

GUEST-OUTPUT has the lines tests/guests/hang.c prints: "NAME #N 0xADDR",
its thread NAME's call stack from glibc's backtrace(), from the function
that called it on.  For each THREAD named: the dump has it, blocked in the
guest's system call SYSCALL with the host kernel waiting in a function
whose name holds WCHAN (empty: running); a frame in FUNC (at source line
LINE); and, where the guest's backtrace() gave its callers (glibc's
needs the CFI that Debian's riscv64 and armhf static libc lack), its
frames end with the functions of that backtrace, the return addresses of
its callers equal.  Function names are the guest ELF's, as nm lists them.
"""
import bisect
import json
import subprocess
import sys


def symbols(elf):
    """Sorted (address, names) of ELF's functions."""
    out = subprocess.run(["nm", "-n", elf], capture_output=True, text=True, check=True).stdout
    by = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "tTwW":
            by.setdefault(int(f[0], 16), set()).add(f[2])
    addrs = sorted(by)
    return addrs, [by[a] for a in addrs]


def names_at(syms, pc):
    addrs, names = syms
    i = bisect.bisect_right(addrs, pc) - 1
    return names[i] if i >= 0 else set()


def main():
    dump, guest_out, elf = sys.argv[1:4]
    want = dict(a.split("=", 1) for a in sys.argv[4:])
    syms = symbols(elf)
    traces = {}
    for line in open(guest_out):
        f = line.split()
        if len(f) == 3 and f[1].startswith("#"):
            traces.setdefault(f[0], []).append(int(f[2], 16))
    procs = json.load(open(dump))["processes"]
    assert len(procs) == 1, f"{len(procs)} processes"
    threads = {t["name"]: t for t in procs[0]["threads"]}
    errors = []
    for name, spec in want.items():
        syscall, wchan, func = (spec.split("/", 2) + [""])[:3]
        t = threads.get(name)
        if not t:
            errors.append(f"{name}: not in the dump ({sorted(threads)})")
            continue
        got = t.get("syscall", {}).get("name", "")
        if got != syscall:
            errors.append(f"{name}: in system call '{got}', not '{syscall}'")
        if wchan and wchan not in t["wchan"]:
            errors.append(f"{name}: the kernel waits in '{t['wchan']}', not '{wchan}'")
        if not wchan and not t["running"]:
            errors.append(f"{name}: not running ({t['state']}, {t['wchan']})")
        frames = t["frames"]
        if func:
            fn, _, line = func.partition(":")
            if not any(f["function"] == fn and (not line or f["line"] == int(line))
                       for f in frames):
                errors.append(f"{name}: no frame in {func}: "
                              f"{[(f['function'], f['line']) for f in frames]}")
        bt = traces.get(name, [])
        if not bt:
            continue
        first = names_at(syms, bt[0] - 1)
        k = next((i for i, f in enumerate(frames) if f["function"] in first), None)
        if k is None:
            errors.append(f"{name}: no frame in {first}: {[f['function'] for f in frames]}")
            continue
        tail = frames[k:]
        if len(tail) != len(bt):
            errors.append(f"{name}: {len(tail)} frames from {tail[0]['function']}, "
                          f"backtrace() has {len(bt)}")
        for f, pc in zip(tail, bt):
            if f["function"] not in names_at(syms, pc - 1):
                errors.append(f"{name}: {f['function']} where backtrace() has "
                              f"{names_at(syms, pc - 1)} (0x{pc:x})")
        for f, pc in zip(tail[1:], bt[1:]):
            if f["pc"] != pc:
                errors.append(f"{name}: return address 0x{f['pc']:x}, backtrace() 0x{pc:x}")
    for e in errors:
        print(e)
    sys.exit(1 if errors else 0)


main()
