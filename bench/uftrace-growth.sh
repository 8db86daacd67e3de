#!/bin/bash
# How --uftrace's cost grows with the trace: static fib(N) on QEMU 10.2.2
# x86_64 for N in SIZES (default 28 30 32 34: 0.8 M to 37 M records),
# plain and under `qemu-jitbpf --uftrace`, interleaved round by round
# (each size's two runs back to back, the sizes in turn), the data
# directory reused as a user reuses uftrace.data (the tool moves the last
# one to .old).  Per size: the medians of the wall times, the median of
# the ratios within rounds, and what each record costs: the wall time
# added over plain, QEMU's CPU and the tool's, per record.  HOG=1 keeps
# one CPU busy with a shell loop meanwhile.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/bench/lib.sh"
ROUNDS=${ROUNDS:-10}
SIZES=${SIZES:-28 30 32 34}
HOG=${HOG:-0}
Q=$TOP/build/qemu-10.2.2/bin/qemu-x86_64
TOOL=$TOP/build/bin/qemu-jitbpf
FIB=$TOP/build/guests/x86_64/fib

need "make qemu tool guests" "$Q" "$TOOL" "$FIB"
need_rounds
need_root

work=$(mktemp -d)
HP=
trap 'kill $HP 2>/dev/null; rm -rf "$work"' EXIT
if [ "$HOG" = 1 ]; then
	sh -c 'while :; do :; done' &
	HP=$!
fi

# One run: "WALL" (plain) or "WALL RECORDS TOOL_CPU QEMU_CPU" (tool).
run_one() { # MODE N
	local t0 t1
	settle
	t0=$EPOCHREALTIME
	if [ "$1" = plain ]; then
		"$Q" "$FIB" "$2" >/dev/null
	else
		"$TOOL" -v --uftrace="$work/u$2" -- "$Q" "$FIB" "$2" >/dev/null 2>"$work/err"
	fi
	t1=$EPOCHREALTIME
	if [ "$1" = plain ]; then
		echo "$t1 - $t0" | bc -l
		return
	fi
	grep -q ' 0 events lost' "$work/err" || { cat "$work/err" >&2; exit 1; }
	echo "$(echo "$t1 - $t0" | bc -l)" \
		"$(sed -nE 's/^qemu-jitbpf: uftrace: .* \(([0-9]+) records\)$/\1/p' "$work/err")" \
		"$(sed -nE 's/^qemu-jitbpf: peak RSS .*, ([0-9.]+) s of CPU$/\1/p' "$work/err")" \
		"$(sed -nE 's/^qemu-jitbpf: QEMU used ([0-9.]+) s of CPU.*/\1/p' "$work/err")"
}

for n in $SIZES; do run_one tool "$n" >/dev/null; done # warm caches, make the .old
for ((i = 0; i < ROUNDS; i++)); do
	for n in $SIZES; do
		if ((i % 2)); then
			t=$(run_one tool "$n")
			p=$(run_one plain "$n")
		else
			p=$(run_one plain "$n")
			t=$(run_one tool "$n")
		fi
		echo "$n $p $t" >>"$work/rows"
	done
done

echo "--uftrace on fib(N), QEMU 10.2.2 x86_64, medians of $ROUNDS interleaved rounds (HOG=$HOG)"
printf '%4s %10s %8s %8s %11s %14s %15s %15s\n' N records plain tool "tool/plain" \
	"added/record" "QEMU CPU/rec" "tool CPU/rec"
for n in $SIZES; do
	awk -v n="$n" '$1 == n' "$work/rows" >"$work/r$n"
	rec=$(awk '{ print $4 }' "$work/r$n" | median)
	plain=$(awk '{ print $2 }' "$work/r$n" | median)
	tool=$(awk '{ print $3 }' "$work/r$n" | median)
	ratio=$(awk '{ print $3 / $2 }' "$work/r$n" | median)
	added=$(awk '{ print ($3 - $2) / $4 * 1e9 }' "$work/r$n" | median)
	qcpu=$(awk '{ print $6 / $4 * 1e9 }' "$work/r$n" | median)
	tcpu=$(awk '{ print $5 / $4 * 1e9 }' "$work/r$n" | median)
	printf '%4s %10s %7.3fs %7.3fs %10.2fx %11.1f ns %12.1f ns %12.1f ns\n' "$n" "$rec" \
		"$plain" "$tool" "$ratio" "$added" "$qcpu" "$tcpu"
done
