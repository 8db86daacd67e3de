#!/bin/bash
# Detached overhead of the probes: patched QEMU 10.2.2 vs the unpatched
# reference build (same source, same configuration), nobody attached.
#
#   W1  translation-heavy: python3 importing a few modules (qemu-build.md)
#   W2  call-heavy: a static fib(30) guest; one sample = RUNS_W2 runs,
#       as one run is only ~50 ms
#
# Samples are interleaved (ref, patched, ref, patched, ...) so that drift
# of the machine hits both alike; the figure is the median of ROUNDS, of
# wall-clock time and of CPU time (user + system of QEMU): on a virtual
# machine wall-clock medians still move by a few percent from run to run,
# CPU time much less.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/bench/lib.sh"
ROUNDS=${ROUNDS:-9}
RUNS_W2=${RUNS_W2:-10}
REF=$TOP/build/qemu-10.2.2-ref/bin/qemu-x86_64
PAT=$TOP/build/qemu-10.2.2/bin/qemu-x86_64
FIB=$TOP/build/guests/x86_64/fib

need "make qemu qemu-ref guests" "$REF" "$PAT" "$FIB"
need_rounds

# "wall cpu" seconds of one call of "$@" (with its children), output
# discarded; bash's time keyword measures to the millisecond.
seconds() {
	local TIMEFORMAT='%3R %3U %3S'

	{ time "$@" >/dev/null 2>&1; } 2>"$tmp"
	awk '{ printf "%s %.3f\n", $1, $2 + $3 }' "$tmp"
}

report() { # NAME REF-SAMPLES PATCHED-SAMPLES (pairs "wall cpu")
	local rw pw rc pc
	rw=$(median_of "$(tr ' ' '\n' <<<"$2" | cut -d: -f1)")
	pw=$(median_of "$(tr ' ' '\n' <<<"$3" | cut -d: -f1)")
	rc=$(median_of "$(tr ' ' '\n' <<<"$2" | cut -d: -f2)")
	pc=$(median_of "$(tr ' ' '\n' <<<"$3" | cut -d: -f2)")
	printf '%-32s wall: ref %7.4f s patched %7.4f s ratio %.4f | cpu: ref %7.3f s patched %7.3f s ratio %.4f\n' \
		"$1" "$rw" "$pw" "$(echo "$pw / $rw" | bc -l)" "$rc" "$pc" "$(echo "$pc / $rc" | bc -l)"
}

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# One sample of workload W on QEMU binary Q, as "wall:cpu".
seconds_of() { # W Q
	case $1 in
	w1) seconds "$2" /usr/bin/python3 -c "$W1" ;;
	w2) seconds "$BASH" -c 'for ((i = 0; i < $2; i++)); do "$0" "$1" 30; done' "$2" "$FIB" "$RUNS_W2" ;;
	esac | tr ' ' ':'
}

echo "detached overhead, QEMU 10.2.2, median of $ROUNDS interleaved samples"
for w in w1 w2; do
	seconds_of "$w" "$REF" >/dev/null # warm caches
	seconds_of "$w" "$PAT" >/dev/null
	ref="" pat=""
	for ((i = 0; i < ROUNDS; i++)); do
		if ((i % 2)); then
			pat+=" $(seconds_of "$w" "$PAT")"
			ref+=" $(seconds_of "$w" "$REF")"
		else
			ref+=" $(seconds_of "$w" "$REF")"
			pat+=" $(seconds_of "$w" "$PAT")"
		fi
	done
	case $w in
	w1) name="W1 python3 imports" ;;
	w2) name="W2 fib(30) static, x$RUNS_W2 runs" ;;
	esac
	report "$name" "$ref" "$pat"
done
