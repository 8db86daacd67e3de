#!/bin/bash
# make demo: attach late to a compute-bound guest that has been running
# for 3 seconds, and watch QEMU report the code it runs.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
V=${QEMU_VERSION:-10.2.2}
Q=$TOP/build/qemu-$V/bin/qemu-x86_64
G=$TOP/build/guests/x86_64/spin

if [ "$(id -u)" != 0 ]; then
	echo "demo: needs root for BPF (sudo make demo)" >&2
	exit 1
fi
"$Q" "$G" 2000000 >/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
echo "== guest $G running under $Q as pid $pid; attaching in 3 s"
sleep 3
lo=$(nm "$G" | awk '$3 == "spin_round" { print $1 }')
echo "== spin_round is at 0x$lo; events for 2 s:"
"$TOP/tools/qemu-jit-events" -p "$pid" -d 2 2> >(grep -v RLIMIT >&2) |
	awk -v lo=$((16#$lo)) '
	/ tb / { n++; split($3, a, "="); pc = strtonum(a[2])
		if (pc >= lo && pc < lo + 128) { print $0 "   <- spin_round" }
		else if (n <= 5) print; next }
	{ print }
	END { print "== " n " TBs reported after attaching" }'
