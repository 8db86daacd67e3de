#!/bin/bash
# Find the tests that fail now and then, before CI does: run the suite (or
# the files given) N times, each pass with a CPU hog holding one core and
# with cold caches (the page cache and the kernel's dentries and inodes
# dropped, the tool's per-boot cache of kernel layouts and names removed;
# tests/run.sh gives every pass an empty listing cache), and print how
# often each test failed.  Exit 0 only when no test failed in any pass.
# Each pass's TAP output, with every failure's diagnostics, is kept in
# build/stress/passN.tap.
#
#   tests/stress.sh [-n PASSES] [FILE.bats...]      (make check-stress)
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
passes=3
if [ "${1:-}" = -n ]; then
	passes=${2:?stress: -n takes a number}
	shift 2
fi
case $passes in '' | *[!0-9]* | 0) echo "stress: invalid number of passes '$passes'" >&2; exit 2 ;; esac
if [ "$(id -u)" != 0 ]; then
	echo "stress: needs root (BPF, and dropping the caches)" >&2
	exit 1
fi
[ $# -gt 0 ] || set -- "$TOP"/tests/*.bats "$TOP"/build/tests/*.bats

out=$TOP/build/stress
rm -rf "$out"
mkdir -p "$out"
hog=
stop_hog() {
	[ -z "$hog" ] || kill "$hog" 2>/dev/null
	wait "$hog" 2>/dev/null
	hog=
}
trap stop_hog EXIT
trap 'exit 130' INT TERM

for pass in $(seq "$passes"); do
	sync
	echo 3 >/proc/sys/vm/drop_caches
	rm -rf /run/qemu-jitbpf
	# One core's worth of work that never yields on its own.
	bash -c 'while :; do :; done' &
	hog=$!
	start=$(date +%s)
	TEST_SUMMARY= "$TOP/tests/run.sh" "$@" >"$out/pass$pass.tap" 2>&1
	stop_hog
	echo "stress: pass $pass of $passes: $(tail -n 1 "$out/pass$pass.tap") in $(($(date +%s) - start)) s" >&2
done

# Each test's failures over the passes, most first (each pass's TAP, not
# the failures tests/run.sh repeats after it).
for f in "$out"/pass*.tap; do sed '/^failed:$/,$d' "$f"; done |
	sed -nE 's/^(ok|not ok) [0-9]+ (.*)$/\1\t\2/p' |
	sed -E 's/ # skip.*$//; s/ in [0-9]+ms$//' |
	awk -F '\t' -v n="$passes" '
		{ runs[$2]++; if ($1 == "not ok") bad[$2]++ }
		END {
			for (t in runs) if (bad[t]) { printf "%d of %d\t%s\n", bad[t], n, t; f++ }
			printf "stress: %d tests, %d failed at least once in %d passes (logs in %s)\n",
				length(runs), f, n, dir > "/dev/stderr"
		}' dir="$out" >"$out/failures"
sort -rn "$out/failures"
[ ! -s "$out/failures" ]
