#!/bin/bash
# What --off-cpu costs the host: a guest whose threads switch off and on
# their CPUs about 10 000 times a second (tests/guests/waits.c, THREADS
# threads sleeping SLEEP_US at a time with no work between) runs under
# QEMU 10.2.2 (x86_64), and the tool attaches to it ROUNDS pairs of times
# for SECONDS each, in turn (ABAB...) with --profile alone and with
# --off-cpu --profile, at the default 99 Hz.  For each run:
#
#   - the QEMU's context switches per second (every thread's, voluntary
#     and not, from /proc);
#   - the whole host's busy CPU over the run (/proc/stat), as a share of
#     all its CPUs: what the BPF programs cost wherever they run (in
#     QEMU's threads, in others switching, in idle), the tool's own work
#     and everything else;
#   - the tool's own CPU (its rusage);
#   - its BPF programs' run time (kernel.bpf_stats_enabled, read from
#     the fdinfo of its program fds half a second before the run ends),
#     wherever they ran.
#
# The cost of --off-cpu (goal: at most 1 % of the host's CPU) is measured
# twice: as what it adds to the tool's CPU and its programs' run time
# (exact, per pair), and as what it adds to the host's busy share (all
# of it, but noisy: the guest's own CPU varies from run to run), each the
# median over the pairs, with the spread.  GAP seconds pass between runs (0: back
# to back); HOG=1 keeps one CPU busy with a shell loop meanwhile.
#
#   ROUNDS=10 SECONDS_EACH=4 bench/offcpu.sh          (root)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-10}
SECONDS_EACH=${SECONDS_EACH:-4}
THREADS=${THREADS:-2}
SLEEP_US=${SLEEP_US:-40}
GAP=${GAP:-1}
HOG=${HOG:-0}
Q=$TOP/build/qemu-10.2.2/bin/qemu-x86_64
G=$TOP/build/guests/x86_64/waits
TOOL=$TOP/build/bin/qemu-jitbpf
. "$TOP/bench/lib.sh"
need "make qemu guests tool" "$Q" "$G" "$TOOL"
need_root
need_rounds
W=$(mktemp -d)
HP=
STATS=$(sysctl -n kernel.bpf_stats_enabled)
trap 'kill "$QP" $HP 2>/dev/null; sysctl -q kernel.bpf_stats_enabled="$STATS"; rm -rf "$W"' EXIT
sysctl -q kernel.bpf_stats_enabled=1

secs=$(awk -v r="$ROUNDS" -v s="$SECONDS_EACH" -v g="$GAP" 'BEGIN { print 10 + 2 * r * (s + g + 1) }')
"$Q" "$G" "$secs" "$SLEEP_US" 0 "$THREADS" >/dev/null &
QP=$!
if [ "$HOG" = 1 ]; then
	sh -c 'while :; do :; done' &
	HP=$!
fi
sleep 2
/usr/bin/python3 - "$TOOL" "$QP" "$ROUNDS" "$SECONDS_EACH" "$GAP" "$W" <<'PY'
import glob, os, resource, statistics, subprocess, sys, time
tool, qp, rounds, secs, gap, w = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5]), sys.argv[6]
ncpu = os.cpu_count()

def busy():
    f = open('/proc/stat').readline().split()[1:]
    v = list(map(int, f))
    return sum(v) - v[3] - v[4], sum(v)  # all but idle and iowait

def switches():
    n = 0
    for st in glob.glob(f'/proc/{qp}/task/*/status'):
        try:
            for l in open(st):
                if 'ctxt_switches' in l:
                    n += int(l.split()[1])
        except OSError:
            pass
    return n

def bpf_ns(pid):
    """Run time of PID's BPF programs so far, ns: each once, by id."""
    runs = {}
    for fd in glob.glob(f'/proc/{pid}/fd/*'):
        try:
            if os.readlink(fd) != 'anon_inode:bpf-prog':
                continue
            info = dict(l.split(':', 1) for l in open(f'/proc/{pid}/fdinfo/{os.path.basename(fd)}') if ':' in l)
            runs[int(info['prog_id'])] = int(info.get('run_time_ns', '0'))
        except (OSError, KeyError, ValueError):
            pass
    return sum(runs.values())

def run(off):
    args = [tool, '-p', qp, '-d', secs, f'--profile={w}/p.folded'] + (['--off-cpu'] if off else [])
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    b0, t0, s0, m0 = *busy(), switches(), time.monotonic()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(float(secs) - 0.5)
    prog_ns, prog_at = bpf_ns(p.pid), time.monotonic()
    if p.wait():
        sys.exit(f'{args}: failed')
    b1, t1, s1, m1 = *busy(), switches(), time.monotonic()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    tool_cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    return (100.0 * (b1 - b0) / (t1 - t0), (s1 - s0) / (m1 - m0), 100.0 * tool_cpu / (m1 - m0) / ncpu,
            100.0 * prog_ns / 1e9 / (prog_at - m0) / ncpu)

res = {False: [], True: []}
for i in range(rounds):
    for off in ((False, True) if i % 2 == 0 else (True, False)):
        res[off].append(run(off))
        time.sleep(gap)
deltas = [b[0] - a[0] for a, b in zip(res[False], res[True])]
direct = [(b[2] + b[3]) - (a[2] + a[3]) for a, b in zip(res[False], res[True])]
for off in (False, True):
    h = [r[0] for r in res[off]]
    print(f"{'--off-cpu --profile' if off else '--profile          '}: host busy median {statistics.median(h):.2f} % "
          f"(min {min(h):.2f}, max {max(h):.2f}) of {ncpu} CPUs; QEMU switches/s median "
          f"{statistics.median(r[1] for r in res[off]):.0f}; tool CPU median "
          f"{statistics.median(r[2] for r in res[off]):.3f} %, its BPF programs "
          f"{statistics.median(r[3] for r in res[off]):.3f} % of the host")
print(f"cost of --off-cpu, the tool and its programs: {statistics.median(direct):+.3f} % of the host's CPU "
      f"(median of {rounds} pairs; pairs from {min(direct):+.3f} to {max(direct):+.3f})")
print(f"cost of --off-cpu, the host's busy share: {statistics.median(deltas):+.2f} % "
      f"(pairs from {min(deltas):+.2f} to {max(deltas):+.2f})")
PY
