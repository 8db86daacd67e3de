#!/usr/bin/env python3
"""How many series a build farm's day of --push makes in Pyroscope.

A model of the day, not a measurement: HOSTS hosts each run the service
(-a --interval=60 --push), so each sends one profile a minute.  PROCS
QEMU processes run that day, in CONTAINERS CI jobs of one guest
architecture each, every process a command of a build (COMMANDS), 1 to 60
s long.  Each profile's samples carry the labels the tool gives them
(comm, command, qemu, arch as strings; pid and tid as numbers; the cgroup as the
root frame, not a label) and the series' own (__name__, service_name,
host).  Pyroscope makes the series with its own code, ported in
tests/receivers/pyroscope.py (pprofsplit: numeric labels dropped, each set
of string labels a series), and counts a series active for 10 minutes
(pkg/ingester/limiter.go) against 5 000 per tenant.  For comparison, the
same day with the pid and the cgroup as string labels.

Usage: fleet-series.py [HOSTS PROCS CONTAINERS]
"""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests',
                                'receivers'))
import pyroscope  # noqa: E402

HOSTS, PROCS, CONTAINERS = (int(x) for x in (sys.argv[1:] or [10, 100000, 1000]))
DAY, WINDOW = 86400, 600
ARCHES = ['aarch64', 'riscv64', 'arm', 's390x', 'ppc64le']
# What a Debian package build runs: its shells, make, the compiler driver
# and its passes, binutils, the coreutils a Makefile calls, the packaging.
COMMANDS = ('sh bash make gcc cc1 cc1plus g++ as ld collect2 ar ranlib strip objcopy '
            'cp mv rm mkdir ln install chmod sed grep awk cat tr sort find xargs '
            'python3 perl dpkg-buildpacka dpkg-source dpkg-gencontro dpkg-deb dh_auto_build '
            'dh_install dh_strip pkg-config libtool autoconf').split()


class FakeProfile:
    """What split() reads of a profile: its samples' labels."""

    def __init__(self, samples):
        self.strings = ['']
        index = {}
        self.samples = []
        for labels in samples:
            out = []
            for k, v, num in labels:
                for x in (k, v):
                    if x not in index:
                        index[x] = len(self.strings)
                        self.strings.append(x)
                out.append((index[k], index[v] if v else 0, num))
            self.samples.append({'labels': out})

    def string(self, i):
        return self.strings[i]


def day(pid_and_cgroup):
    rnd = random.Random(1)
    jobs = []
    for j in range(CONTAINERS):
        start = rnd.uniform(0, DAY - 1800)
        jobs.append((rnd.randrange(HOSTS), rnd.choice(ARCHES), f'/system.slice/ci-job-{j}.scope',
                     start, start + rnd.uniform(300, 1800)))
    # Each minute of each host: the processes that ran in it.
    minutes = {}
    for pid in range(PROCS):
        host, arch, cg, a, b = rnd.choice(jobs)
        t = rnd.uniform(a, b)
        comm = rnd.choice(COMMANDS)
        for m in range(int(t // 60), int((t + rnd.uniform(1, 60)) // 60) + 1):
            # (command: the guest program, as comm is for a QEMU that
            # binfmt_misc started.)
            labels = [('comm', comm, 0), ('command', comm, 0),
                      ('qemu', f'qemu-{arch}-static', 0), ('arch', arch, 0),
                      ('pid', '', 1000 + pid), ('tid', '', 1000 + pid)]
            if pid_and_cgroup:
                labels += [('pid', str(1000 + pid), 0), ('cgroup', cg, 0)]
                labels = [x for x in labels if x[1]]
            minutes.setdefault((host, m), []).append(labels)
    last = {}
    peak = 0
    for (host, m) in sorted(minutes, key=lambda k: (k[1], k[0])):
        series = [('__name__', 'process_cpu'), ('service_name', 'qemu-jitbpf'),
                  ('host', f'builder-{host:02d}')]
        for s in pyroscope.split(FakeProfile(minutes[(host, m)]), series):
            last[str(s)] = m * 60
        now = m * 60
        peak = max(peak, sum(1 for t in last.values() if now - t < WINDOW))
    return peak, len(last)


print(f'# {HOSTS} hosts, {PROCS} QEMU processes in {CONTAINERS} containers, a day')
for what, flag in (('comm, command, qemu, arch (as pushed)', False), ('and pid, cgroup as strings', True)):
    peak, total = day(flag)
    print(f'{what:32s} active series at most {peak:7d}  series in the day {total:8d}')
