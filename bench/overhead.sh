#!/bin/bash
# Detached overhead of the probes: patched QEMU 10.2.2 vs the unpatched
# reference build (same source, same configuration), nobody attached.
#
#   W1  translation-heavy: python3 importing a few modules (qemu-build.md)
#   W2  call-heavy: a static fib(30) guest; one sample = RUNS_W2 runs,
#       as one run is only ~50 ms
#
# Samples are interleaved (ref, patched, ref, patched, ...) so that drift
# of the machine hits both alike; the figure is the median of ROUNDS.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-9}
RUNS_W2=${RUNS_W2:-10}
REF=$TOP/build/qemu-10.2.2-ref/bin/qemu-x86_64
PAT=$TOP/build/qemu-10.2.2/bin/qemu-x86_64
FIB=$TOP/build/guests/x86_64/fib

for b in "$REF" "$PAT" "$FIB"; do
	[ -x "$b" ] || { echo "bench: $b missing (make qemu qemu-ref guests)" >&2; exit 1; }
done
[ "$ROUNDS" -ge 5 ] || { echo "bench: ROUNDS must be >= 5" >&2; exit 1; }

w1() { "$1" /usr/bin/python3 -c "import json,decimal,email.parser,http.client; print(sum(range(10**6)))"; }
w2() { local i; for ((i = 0; i < RUNS_W2; i++)); do "$1" "$FIB" 30; done; }

# Seconds one call of "$@" takes, output discarded.
seconds() {
	local t0=$EPOCHREALTIME
	"$@" >/dev/null
	echo "$EPOCHREALTIME - $t0" | bc -l
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

report() { # NAME REF-SAMPLES PATCHED-SAMPLES
	local r p
	r=$(tr ' ' '\n' <<<"$2" | grep . | median)
	p=$(tr ' ' '\n' <<<"$3" | grep . | median)
	printf '%-40s ref %8.4f s  patched %8.4f s  ratio %.4f\n' "$1" "$r" "$p" \
		"$(echo "$p / $r" | bc -l)"
}

echo "detached overhead, QEMU 10.2.2, median of $ROUNDS interleaved samples"
for w in w1 w2; do
	"$w" "$REF" >/dev/null # warm caches
	"$w" "$PAT" >/dev/null
	ref="" pat=""
	for ((i = 0; i < ROUNDS; i++)); do
		if ((i % 2)); then
			pat+=" $(seconds "$w" "$PAT")"
			ref+=" $(seconds "$w" "$REF")"
		else
			ref+=" $(seconds "$w" "$REF")"
			pat+=" $(seconds "$w" "$PAT")"
		fi
	done
	case $w in
	w1) name="W1 python3 imports" ;;
	w2) name="W2 fib(30) static, x$RUNS_W2 runs" ;;
	esac
	report "$name" "$ref" "$pat"
done
