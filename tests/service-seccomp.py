#!/usr/bin/python3
"""Run a command under the system call filter a systemd unit asks for, as
systemd 252 builds it (src/shared/seccomp-util.c), for tests/privilege.bats:
systemd cannot run as PID 1 on the test machines.

  SystemCallFilter=      allow lists (@groups expanded by systemd-analyze
                         syscall-filter) and ~deny lists, in order
  SystemCallErrorNumber= what a call outside them returns (else SIGSYS)
  SystemCallArchitectures=native
  RestrictAddressFamilies=  socket() of another family: EAFNOSUPPORT
  MemoryDenyWriteExecute=yes  mmap() writable and executable, mprotect()
                         and pkey_mprotect() to executable: EPERM
  UMask=

Usage: service-seccomp.py UNIT -- COMMAND [ARGS...]
Run as root, it reads UNIT and loads the filter; COMMAND (setpriv) then
takes the unit's user and capabilities under it, as systemd's own
exec steps do.
"""
import errno
import os
import socket
import subprocess
import sys

import seccomp

unit, cmd = sys.argv[1], sys.argv[sys.argv.index('--') + 1:]
keys = {}
for line in open(unit):
    line = line.strip()
    if '=' in line and not line.startswith('#'):
        k, v = line.split('=', 1)
        keys.setdefault(k, []).append(v)


def expand(names, seen=None):
    """@group -> its calls, as systemd-analyze lists them."""
    out = set()
    for n in names:
        if not n.startswith('@'):
            out.add(n)
            continue
        lines = subprocess.run(['systemd-analyze', 'syscall-filter', n], capture_output=True,
                               text=True).stdout.split('\n')
        sub = [w for x in lines[1:] for w in x.split() if not w.startswith('#')]
        out |= expand(sub)
    return out


allow, deny = set(), set()
for v in keys.get('SystemCallFilter', []):
    if v.startswith('~'):
        calls = expand(v[1:].split())
        deny |= calls
        allow -= calls
    else:
        allow |= expand(v.split())
        deny -= allow
err = keys.get('SystemCallErrorNumber', [None])[-1]
default = seccomp.ERRNO(getattr(errno, err)) if err else seccomp.KILL_PROCESS
f = seccomp.SyscallFilter(defaction=default)
families = keys.get('RestrictAddressFamilies', [''])[-1].split()
mdwx = keys.get('MemoryDenyWriteExecute', ['no'])[-1] == 'yes'
special = {'socket', 'mmap', 'mprotect', 'pkey_mprotect'}
for call in sorted(allow - special):
    try:
        f.add_rule(seccomp.ALLOW, call)
    except (RuntimeError, ValueError):
        pass        # not a call of this architecture
if 'socket' in allow:
    if families:
        for fam in families:
            f.add_rule(seccomp.ALLOW, 'socket', seccomp.Arg(0, seccomp.EQ, getattr(socket, fam)))
    else:
        f.add_rule(seccomp.ALLOW, 'socket')
W, X = 0x2, 0x4
for call in ('mmap', 'mprotect', 'pkey_mprotect'):
    if call not in allow:
        continue
    if not mdwx:
        f.add_rule(seccomp.ALLOW, call)
    elif call == 'mmap':
        f.add_rule(seccomp.ALLOW, call, seccomp.Arg(2, seccomp.MASKED_EQ, W | X, 0))
        f.add_rule(seccomp.ALLOW, call, seccomp.Arg(2, seccomp.MASKED_EQ, W | X, W))
        f.add_rule(seccomp.ALLOW, call, seccomp.Arg(2, seccomp.MASKED_EQ, W | X, X))
    else:
        f.add_rule(seccomp.ALLOW, call, seccomp.Arg(2, seccomp.MASKED_EQ, X, 0))
if 'UMask' in keys:
    os.umask(int(keys['UMask'][-1], 8))
f.load()
os.execvp(cmd[0], cmd)
