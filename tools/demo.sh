#!/bin/bash
# make demo: a guest has been running under QEMU for 2 seconds; attach
# qemu-jitbpf late, record with perf, and let perf name guest functions,
# through the perf map and through the jitdump.
#
#   tools/demo.sh            (as root, after make tool qemu guests; make demo does all)
#
# Every step is checked: a step that fails stops the demo with a message
# and a non-zero exit.  The files stay in $DEMO_DIR (default build/demo).
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
V=${QEMU_VERSION:-10.2.2}
Q=$TOP/build/qemu-$V/bin/qemu-x86_64
G=$TOP/build/guests/x86_64/hot
TOOL=$TOP/build/bin/qemu-jitbpf
DIR=${DEMO_DIR:-$TOP/build/demo}
HOT=hot_main

die() {
	echo "demo: FAILED: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || die "needs root for BPF and perf (sudo make demo)"
for f in "$Q" "$G" "$TOOL"; do
	[ -x "$f" ] || die "$f is not built (make demo builds it)"
done
command -v perf >/dev/null || die "perf is not installed (make deps)"

rm -rf "$DIR"
mkdir -p "$DIR"
cd "$DIR"
qemu= tool=
cleanup() {
	[ -z "$tool" ] || kill -INT "$tool" 2>/dev/null || true
	[ -z "$qemu" ] || kill "$qemu" 2>/dev/null || true
	wait 2>/dev/null || true
}
trap cleanup EXIT

# Long enough for any machine: the demo kills it when done.
"$Q" "$G" 100000000 >/dev/null &
qemu=$!
echo "== $G runs under QEMU $V (pid $qemu); its $HOT takes ~3/4 of the time"
sleep 2
kill -0 "$qemu" 2>/dev/null || die "QEMU (pid $qemu) exited early"

echo "== attaching late: qemu-jitbpf -p $qemu --perfmap --jitdump"
"$TOOL" -p "$qemu" --perfmap --jitdump 2>tool.err &
tool=$!
for _ in $(seq 100); do
	[ -e "jit-$qemu.dump" ] && break
	kill -0 "$tool" 2>/dev/null || break
	sleep 0.1
done
if [ ! -e "jit-$qemu.dump" ]; then
	cat tool.err >&2
	kill -0 "$tool" 2>/dev/null || { st=0; wait "$tool" || st=$?; tool=
		die "qemu-jitbpf exited with status $st before it attached"; }
	die "qemu-jitbpf did not attach within 10 s"
fi

echo "== perf record -k 1 -e cpu-clock -p $qemu -- sleep 2"
perf record -q -k 1 -e cpu-clock -p "$qemu" -o perf.data -- sleep 2 >perf-record.log 2>&1 ||
	{ cat perf-record.log >&2; die "perf record failed"; }

if ! kill -INT "$tool" 2>/dev/null; then
	cat tool.err >&2
	st=0
	wait "$tool" || st=$?
	tool=
	die "qemu-jitbpf exited (status $st) while perf recorded"
fi
st=0
wait "$tool" || st=$?
tool=
cat tool.err
[ "$st" = 0 ] || die "qemu-jitbpf exited with status $st"
kill "$qemu"
wait "$qemu" 2>/dev/null || true
qemu_pid=$qemu
qemu=

# The hottest JIT symbol of a report, and the report's first lines.
report() { # PERF_DATA OUT
	perf report -i "$1" --stdio -q --sort dso,sym >"$2" 2>"$2.log" ||
		{ cat "$2.log" >&2; die "perf report -i $1 failed"; }
	sed -n '1,4p' "$2"
	grep -qE "\[\.\] $HOT\$" <(sed -n '1p' "$2") ||
		die "perf report -i $1 does not show $HOT first"
}

echo "== perf report, with the perf map /tmp/perf-$qemu_pid.map:"
report perf.data report-perfmap.txt

echo "== perf inject -j; perf report, with the jitdump $DIR/jit-$qemu_pid.dump:"
DEBUGINFOD_URLS= perf inject -j -i perf.data -o perf.jit.data >inject.log 2>&1 ||
	{ cat inject.log >&2; die "perf inject -j failed"; }
report perf.jit.data report-jitdump.txt

echo "demo: OK: perf named the guest's $HOT, attached 2 s late, through the perf map" \
	"(/tmp/perf-$qemu_pid.map) and the jitdump (perf inject -j); files in $DIR"
