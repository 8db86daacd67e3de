#!/bin/bash
# What --stacks costs a running QEMU, and how long it takes: a guest of 64
# threads (tests/guests/progress.c: 62 blocked on a condition variable, one
# counting as fast as it can, the main thread printing the count every
# 10 ms) under QEMU 10.2.2 (x86_64), dumped ROUNDS times, one dump every
# GAP seconds (0: back to back), while the guest runs.
#
#   - the wall time of each `qemu-jitbpf -p PID --stacks` (goal: < 1 s);
#   - the guest's progress: its count's rate in each 10 ms window, against
#     the median rate of the windows with no dump under way; the pause is
#     the time the counting thread lost, summed over the windows while a
#     dump runs and 200 ms after (the code cache flush of the handshake is
#     paid by translating again), per dump; and the longest stretch in
#     which it counted less than a tenth of its rate (a pause, where the
#     rest is the CPU the tool takes on a small host).
#
#   ROUNDS=10 GAP=1 bench/stacks.sh          (root)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-10}
GAP=${GAP:-1}
THREADS=${THREADS:-64}
Q=$TOP/build/qemu-10.2.2/bin/qemu-x86_64
G=$TOP/build/guests/x86_64/progress
TOOL=$TOP/build/bin/qemu-jitbpf
[ -x "$Q" ] && [ -x "$G" ] && [ -x "$TOOL" ] || {
	echo "stacks.sh: build first (make qemu guests tool)" >&2
	exit 1
}
W=$(mktemp -d)
trap 'kill "$QP" 2>/dev/null; rm -rf "$W"' EXIT

secs=$(awk -v r="$ROUNDS" -v g="$GAP" 'BEGIN { print 3 + r * (g + 1.5) }')
"$Q" "$G" "$THREADS" "$secs" >"$W/progress" &
QP=$!
sleep 2
# CLOCK_MONOTONIC, the guest's clock.
mono() { /usr/bin/python3 -c 'import time; print(time.monotonic_ns())'; }
for i in $(seq "$ROUNDS"); do
	s=$(mono)
	"$TOOL" -p "$QP" --stacks="$W/s.json"
	e=$(mono)
	n=$(/usr/bin/python3 -c "import json, sys; print(len(json.load(open(sys.argv[1]))['processes'][0]['threads']))" "$W/s.json")
	echo "$s $e $n" >>"$W/dumps"
	sleep "$GAP"
done
wait "$QP" || true
/usr/bin/python3 - "$W/progress" "$W/dumps" "$THREADS" <<'PY'
import statistics, sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
dumps = [tuple(map(int, l.split())) for l in open(sys.argv[2])]
win = [(t0, t1, (c1 - c0) / ((t1 - t0) / 1e9)) for (t0, c0), (t1, c1) in zip(rows, rows[1:])]
busy = lambda t0, t1: any(t1 > s and t0 < e + 200e6 for s, e, _ in dumps)
assert any(busy(t0, t1) for t0, t1, _ in win), "no window of the guest's during a dump" 
quiet = [r for t0, t1, r in win if not busy(t0, t1)]
rate = statistics.median(quiet)
walls = sorted((e - s) / 1e6 for s, e, _ in dumps)
lost = []
for s, e, _ in dumps:
    ns = sum(max(0.0, (t1 - t0) * (1 - r / rate)) for t0, t1, r in win
             if t1 > s and t0 < e + 200e6)
    lost.append(ns / 1e6)
lost.sort()
# The longest stretch of windows in which it counted less than a tenth of
# its rate: a pause, as opposed to a slower rate while the tool takes a
# CPU from it (2 CPUs here, the guest's two busy threads and the tool).
stall = run = 0
for t0, t1, r in win:
    run = run + (t1 - t0) if r < rate / 10 else 0
    stall = max(stall, run)
print(f"guest threads dumped: {sorted(set(n for _, _, n in dumps))} of {sys.argv[3]}")
print(f"--stacks wall: median {statistics.median(walls):.0f} ms, max {walls[-1]:.0f} ms (goal < 1000 ms)")
print(f"counting thread: {rate / 1e6:.1f} M/s with no dump; time lost per dump: "
      f"median {statistics.median(lost):.1f} ms, max {lost[-1]:.1f} ms; "
      f"longest stall (under a tenth of its rate) {stall / 1e6:.0f} ms")
PY
