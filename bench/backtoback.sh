#!/bin/bash
# Attach and detach cost of runs back to back, with no pause, as a CI
# script that wraps every test binary in qemu-jitbpf makes them (QEMU 10.2.2):
#
# 1. RUNS launched runs of a short guest (tests/guests/hot.c, ~30 ms),
#    `qemu-jitbpf --perfmap -- QEMU guest`, one right after the other, and
#    as many plain runs beside them: per-run medians, and the first 10 runs
#    against the last 10.  Then RUNS/4 more runs, timed no more, while the
#    most qemu-jitbpf processes alive at once are counted (sampled every
#    5 ms; the running tool counts as one).  The sampling itself costs a
#    2-core machine ~2 ms a run, so it is kept out of the timed runs.
# 2. W1 (python3 imports) `--perfmap --jitdump` against plain, ROUNDS
#    interleaved pairs with no pause between runs.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/bench/lib.sh"
RUNS=${RUNS:-100}
ROUNDS=${ROUNDS:-10}
GUEST_ROUNDS=${GUEST_ROUNDS:-500}
PAT=$TOP/build/qemu-10.2.2/bin/qemu-x86_64
TOOL=$TOP/build/bin/qemu-jitbpf
G=$TOP/build/guests/x86_64/hot

need "make qemu tool guests" "$PAT" "$TOOL" "$G"
need_rounds
need_root

work=$(mktemp -d)
mon=
trap 'kill $mon 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"

# Seconds a command takes, whole.
timed() {
	local t0=$EPOCHREALTIME
	"$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
	echo "$EPOCHREALTIME - $t0" | bc -l
}

settle
tool_runs=() plain_runs=()
for ((i = 0; i < RUNS; i++)); do
	tool_runs+=("$(timed "$TOOL" --perfmap -- "$PAT" "$G" "$GUEST_ROUNDS")")
	rm -f "$(sed -nE 's/^qemu-jitbpf: perf map: (.*)$/\1/p' "$work/err")"
done
for ((i = 0; i < RUNS; i++)); do
	plain_runs+=("$(timed "$PAT" "$G" "$GUEST_ROUNDS")")
done

# Most processes named qemu-jitbpf alive at once, until killed.
(
	most=0
	while :; do
		n=$(pgrep -cx qemu-jitbpf || true)
		[ "$n" -le "$most" ] || { most=$n; echo "$most" >"$work/most"; }
		sleep 0.005
	done
) &
mon=$!
for ((i = 0; i < (RUNS + 3) / 4; i++)); do
	timed "$TOOL" --perfmap -- "$PAT" "$G" "$GUEST_ROUNDS" >/dev/null
	rm -f "$(sed -nE 's/^qemu-jitbpf: perf map: (.*)$/\1/p' "$work/err")"
done
kill $mon
wait $mon 2>/dev/null || true

tool_med=$(median_of "${tool_runs[*]}")
plain_med=$(median_of "${plain_runs[*]}")
first=$(median_of "${tool_runs[*]:0:10}")
last=$(median_of "${tool_runs[*]: -10}")
echo "$RUNS launched runs back to back, QEMU 10.2.2, hot $GUEST_ROUNDS (x86_64)"
printf 'plain QEMU           median %6.1f ms per run\n' "$(echo "$plain_med * 1000" | bc -l)"
printf 'qemu-jitbpf --perfmap median %6.1f ms per run: %+.1f ms\n' \
	"$(echo "$tool_med * 1000" | bc -l)" "$(echo "($tool_med - $plain_med) * 1000" | bc -l)"
printf '  first 10 runs median %6.1f ms, last 10 %6.1f ms\n' \
	"$(echo "$first * 1000" | bc -l)" "$(echo "$last * 1000" | bc -l)"
echo "  most qemu-jitbpf processes alive at once in $(((RUNS + 3) / 4)) more runs: $(cat "$work/most" 2>/dev/null || echo 0) (the running tool included)"

# 2. W1 pairs, no pause.
declare -a pw tw
for ((i = 0; i < ROUNDS; i++)); do
	tw+=("$(timed "$TOOL" --perfmap --jitdump -o "$work" -- "$PAT" /usr/bin/python3 -c "$W1")")
	rm -f "$(sed -nE 's/^qemu-jitbpf: perf map: (.*)$/\1/p' "$work/err")" "$work"/jit-*.dump
	pw+=("$(timed "$PAT" /usr/bin/python3 -c "$W1")")
done
paired=$(paste <(printf '%s\n' "${tw[@]}") <(printf '%s\n' "${pw[@]}") | awk '{ print $1 / $2 }' | median)
printf 'W1, %d pairs, no pause: plain %.3f s, qemu-jitbpf --perfmap --jitdump %.3f s, ratio %.3f (per pair %.3f)\n' \
	"$ROUNDS" "$(median_of "${pw[*]}")" "$(median_of "${tw[*]}")" \
	"$(echo "$(median_of "${tw[*]}") / $(median_of "${pw[*]}")" | bc -l)" "$paired"
