#!/bin/bash
# make demo: a guest has been running under QEMU for 2 seconds; attach
# qemu-jitbpf late, record with perf, and let perf name guest functions.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
V=${QEMU_VERSION:-10.2.2}
Q=$TOP/build/qemu-$V/bin/qemu-x86_64
G=$TOP/build/guests/x86_64/hot
TOOL=$TOP/build/bin/qemu-jitbpf

if [ "$(id -u)" != 0 ]; then
	echo "demo: needs root for BPF and perf (sudo make demo)" >&2
	exit 1
fi
dir=$(mktemp -d)
cd "$dir"
"$Q" "$G" 1000000 >/dev/null &
qemu=$!
trap 'kill $qemu 2>/dev/null; rm -rf "$dir"; rm -f /tmp/perf-$qemu.map' EXIT
echo "== $G runs under QEMU $V (pid $qemu); its hot_main takes ~3/4 of the time"
sleep 2
echo "== attaching: qemu-jitbpf -p $qemu --perfmap --jitdump"
"$TOOL" -p "$qemu" --perfmap --jitdump &
tool=$!
while [ ! -e "jit-$qemu.dump" ]; do sleep 0.1; done
echo "== perf record -k 1 -e cpu-clock -p $qemu -- sleep 2"
perf record -q -k 1 -e cpu-clock -p "$qemu" -o perf.data -- sleep 2 2>/dev/null
kill -INT "$tool"
wait "$tool"
echo "== perf report, with the perf map:"
perf report -i perf.data --stdio -q --sort dso,sym 2>/dev/null | head -n 4
echo "== perf inject -j; perf report, with the jitdump:"
DEBUGINFOD_URLS= perf inject -j -i perf.data -o perf.jit.data 2>/dev/null
perf report -i perf.jit.data --stdio -q --sort dso,sym 2>/dev/null | head -n 4
